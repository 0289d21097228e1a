//! Whether an effect found in one campaign holds in another (a reproduction): the ratio of
//! the two effects with a seeded bootstrap CI, and a verdict *consistent*, *differs* or
//! *undecided*.
//!
//! An *effect* is a variant's ratio to its baseline, measured together in one campaign
//! (the ratio of medians, or the median of within-block ratios when paired: [`Effect`]).
//! Absolute figures differ between machines as a matter of course; an effect is what a
//! study claims, and it compares across campaigns because each side's ratio is taken within
//! its own campaign.
//!
//! # The rule
//!
//! `R` = reproduced effect / published effect. Its CI is the percentile interval of the
//! elementwise ratio of the two effects' bootstrap draws: each side is resampled as
//! [`crate::bootstrap`] resamples it (baseline and variant apart, or the pairs together),
//! the two campaigns independently of each other — the reproduced side's generator starts
//! from a seed derived from the published side's, so equal-sized samples never share their
//! resampling indices. With the equivalence band ±δ = [`Criteria::equivalence`]:
//!
//! 1. **Undecided — too few passes** when any of the samples has fewer passes than the
//!    comparison's test needs to reach α at all (4 per side unpaired, 6 pairs paired, at
//!    α = 0.05): the same floor below which [`crate::compare`] never decides.
//! 2. **Consistent** when the whole CI of `R` lies inside `[1 − δ, 1 + δ]`: the data rule out
//!    the effects differing by δ or more (an equivalence statement: it needs a narrow CI).
//! 3. **Differs** when the CI of `R` excludes 1 (and reaches beyond the band): the effect is
//!    larger or smaller here, by at least the CI's end nearest 1.
//! 4. **Undecided — too noisy** otherwise: the CI holds 1 but reaches beyond the band, so a
//!    difference of δ or more is not ruled out.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{
    check_resamples, estimate, median_ratio_draws, paired_median_ratio_draws, BootstrapSettings,
    RatioEstimate,
};
use crate::compare::Criteria;
use crate::rank_test::min_passes_for;
use crate::sample::check_positive;
use crate::StatsError;

/// One campaign's effect: a variant against its baseline, as that campaign measured them.
#[derive(Debug, Clone, Copy)]
pub enum Effect<'a> {
    /// Measured apart: the ratio of medians variant / baseline.
    Unpaired {
        baseline: &'a [f64],
        variant: &'a [f64],
    },
    /// `(baseline, variant)` of each block: the median of the within-block ratios.
    Paired(&'a [(f64, f64)]),
}

impl Effect<'_> {
    /// The fewest passes behind the effect (the smaller sample, or the pairs).
    pub(crate) fn passes(&self) -> usize {
        match self {
            Effect::Unpaired { baseline, variant } => baseline.len().min(variant.len()),
            Effect::Paired(pairs) => pairs.len(),
        }
    }

    /// The passes the effect's test needs to reach `alpha` at all.
    pub(crate) fn passes_needed(&self, alpha: f64) -> usize {
        match self {
            Effect::Unpaired { .. } => min_passes_for(alpha),
            // the signed-rank test's smallest two-sided p is 2 / 2ⁿ
            Effect::Paired(_) => (1..)
                .find(|&n| 2.0 / 2f64.powi(n as i32) < alpha)
                .expect("2 / 2ⁿ falls towards zero"),
        }
    }

    /// The effect and its bootstrap draws under `settings`.
    pub(crate) fn draws(&self, settings: BootstrapSettings) -> Result<(f64, Vec<f64>), StatsError> {
        match self {
            Effect::Unpaired { baseline, variant } => {
                check_positive(baseline, "baseline")?;
                check_positive(variant, "variant")?;
                Ok(median_ratio_draws(baseline, variant, settings))
            }
            Effect::Paired(pairs) => {
                let baseline: Vec<f64> = pairs.iter().map(|p| p.0).collect();
                let variant: Vec<f64> = pairs.iter().map(|p| p.1).collect();
                check_positive(&baseline, "baseline")?;
                check_positive(&variant, "variant")?;
                Ok(paired_median_ratio_draws(pairs, settings))
            }
        }
    }
}

/// The verdict on an effect's reproduction (see the module docs for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    Consistent,
    Differs,
    Undecided,
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Agreement::Consistent => "consistent",
            Agreement::Differs => "differs",
            Agreement::Undecided => "undecided",
        })
    }
}

/// Why an [`Agreement`] was reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum AgreementReason {
    /// Rule 1: a sample has `passes`, fewer than the `needed` its test needs.
    TooFewPasses { passes: usize, needed: usize },
    /// Rule 2: the CI of the ratio of the effects lies inside ±`band`.
    WithinBand { band: f64 },
    /// Rule 3: the CI of the ratio of the effects excludes 1.
    Excludes1,
    /// Rule 4: the CI holds 1 but reaches beyond ±`band`.
    BandNotRuledOut { band: f64 },
}

impl std::fmt::Display for AgreementReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            AgreementReason::TooFewPasses { passes, needed } => write!(
                f,
                "too few passes: {passes} where the comparison needs at least {needed} per side to decide anything"
            ),
            AgreementReason::WithinBand { band } => write!(
                f,
                "the CI of the ratio of the effects lies within ±{}%",
                band * 100.0
            ),
            AgreementReason::Excludes1 => {
                f.write_str("the CI of the ratio of the effects excludes 1")
            }
            AgreementReason::BandNotRuledOut { band } => write!(
                f,
                "too noisy: the CI of the ratio of the effects holds 1 but reaches beyond ±{}%, so a difference that large is not ruled out",
                band * 100.0
            ),
        }
    }
}

/// A published effect against its reproduction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replication {
    /// reproduced effect / published effect, with its bootstrap CI.
    pub ratio: RatioEstimate,
    pub agreement: Agreement,
    pub reason: AgreementReason,
}

/// The reproduced side's seed: derived from the published side's, so the two campaigns'
/// resamples are independent (as their measurements are).
pub(crate) fn reproduced_seed(seed: u64) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15
}

/// Compares the effect `published` with `reproduced` under `criteria` (its α, band,
/// bootstrap resamples and seed; the CI's coverage is [`Criteria::level`]).
pub fn replicate(
    published: Effect<'_>,
    reproduced: Effect<'_>,
    criteria: &Criteria,
) -> Result<Replication, StatsError> {
    check_resamples(criteria.bootstrap)?;
    let (a, draws_a) = published.draws(criteria.bootstrap)?;
    let (b, draws_b) = reproduced.draws(BootstrapSettings {
        seed: reproduced_seed(criteria.bootstrap.seed),
        ..criteria.bootstrap
    })?;
    let draws: Vec<f64> = draws_b.iter().zip(&draws_a).map(|(b, a)| b / a).collect();
    let ratio = estimate(b / a, draws, criteria.bootstrap, criteria.level());
    let band = criteria.equivalence;
    let short = [published, reproduced]
        .iter()
        .map(|e| (e.passes(), e.passes_needed(criteria.alpha)))
        .find(|(passes, needed)| passes < needed);
    let (agreement, reason) = if let Some((passes, needed)) = short {
        (
            Agreement::Undecided,
            AgreementReason::TooFewPasses { passes, needed },
        )
    } else if ratio.ci.low >= 1.0 - band && ratio.ci.high <= 1.0 + band {
        (Agreement::Consistent, AgreementReason::WithinBand { band })
    } else if !ratio.ci.contains(1.0) {
        (Agreement::Differs, AgreementReason::Excludes1)
    } else {
        (
            Agreement::Undecided,
            AgreementReason::BandNotRuledOut { band },
        )
    };
    Ok(Replication {
        ratio,
        agreement,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `centre`, spread ±`spread` (relative), deterministic.
    fn sample(centre: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let t = if n > 1 {
                    i as f64 / (n - 1) as f64
                } else {
                    0.5
                };
                centre * (1.0 + spread * (2.0 * t - 1.0))
            })
            .collect()
    }

    fn unpaired<'a>(baseline: &'a [f64], variant: &'a [f64]) -> Effect<'a> {
        Effect::Unpaired { baseline, variant }
    }

    #[test]
    fn the_same_effect_on_a_slower_machine_is_consistent() {
        // published: ×1.30 at ~1000 tps; here the machine is 30% slower, the effect the same
        let (base_a, var_a) = (sample(1000.0, 0.01, 8), sample(1300.0, 0.01, 8));
        let (base_b, var_b) = (sample(700.0, 0.01, 8), sample(910.0, 0.01, 8));
        let r = replicate(
            unpaired(&base_a, &var_a),
            unpaired(&base_b, &var_b),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(r.agreement, Agreement::Consistent, "{r:?}");
        assert!((r.ratio.ratio - 1.0).abs() < 1e-9);
        assert!(matches!(r.reason, AgreementReason::WithinBand { .. }));
    }

    #[test]
    fn an_effect_that_shrinks_differs() {
        // published ×1.30, here ×1.05
        let (base_a, var_a) = (sample(1000.0, 0.01, 8), sample(1300.0, 0.01, 8));
        let (base_b, var_b) = (sample(1000.0, 0.01, 8), sample(1050.0, 0.01, 8));
        let r = replicate(
            unpaired(&base_a, &var_a),
            unpaired(&base_b, &var_b),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(r.agreement, Agreement::Differs, "{r:?}");
        assert!(r.ratio.ci.high < 1.0, "smaller here: {r:?}");
        assert!((r.ratio.ratio - 1.05 / 1.3).abs() < 1e-9);
    }

    #[test]
    fn too_few_passes_are_undecided_however_far_apart() {
        let (base_a, var_a) = (sample(1000.0, 0.01, 3), sample(1300.0, 0.01, 3));
        let (base_b, var_b) = (sample(1000.0, 0.01, 3), sample(900.0, 0.01, 3));
        let r = replicate(
            unpaired(&base_a, &var_a),
            unpaired(&base_b, &var_b),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(r.agreement, Agreement::Undecided);
        assert_eq!(
            r.reason,
            AgreementReason::TooFewPasses {
                passes: 3,
                needed: 4
            }
        );
    }

    #[test]
    fn noisy_samples_are_undecided() {
        // the same effect, but ±30% noise: a difference of 5% is not ruled out
        let (base_a, var_a) = (sample(1000.0, 0.3, 6), sample(1300.0, 0.3, 6));
        let (base_b, var_b) = (sample(700.0, 0.3, 6), sample(910.0, 0.3, 6));
        let r = replicate(
            unpaired(&base_a, &var_a),
            unpaired(&base_b, &var_b),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(r.agreement, Agreement::Undecided, "{r:?}");
        assert!(matches!(r.reason, AgreementReason::BandNotRuledOut { .. }));
        assert!(r.ratio.ci.contains(1.0));
    }

    #[test]
    fn paired_effects_need_six_pairs() {
        let pairs_a: Vec<(f64, f64)> = sample(1000.0, 0.01, 5)
            .into_iter()
            .map(|b| (b, b * 1.3))
            .collect();
        let r = replicate(
            Effect::Paired(&pairs_a),
            Effect::Paired(&pairs_a),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(
            r.reason,
            AgreementReason::TooFewPasses {
                passes: 5,
                needed: 6
            }
        );
        let pairs_b: Vec<(f64, f64)> = sample(700.0, 0.02, 6)
            .into_iter()
            .map(|b| (b, b * 1.3))
            .collect();
        let pairs_a: Vec<(f64, f64)> = sample(1000.0, 0.01, 6)
            .into_iter()
            .map(|b| (b, b * 1.3))
            .collect();
        let r = replicate(
            Effect::Paired(&pairs_a),
            Effect::Paired(&pairs_b),
            &Criteria::default(),
        )
        .unwrap();
        assert_eq!(r.agreement, Agreement::Consistent, "{r:?}");
    }

    #[test]
    fn the_result_is_seeded_and_the_campaigns_resample_apart() {
        let (base, var) = (sample(1000.0, 0.05, 6), sample(1300.0, 0.05, 6));
        let c = Criteria::default();
        let one = replicate(unpaired(&base, &var), unpaired(&base, &var), &c).unwrap();
        let two = replicate(unpaired(&base, &var), unpaired(&base, &var), &c).unwrap();
        assert_eq!(one, two);
        // identical samples on both sides: with shared indices every draw would be exactly 1
        assert!(one.ratio.ci.low < 1.0 && one.ratio.ci.high > 1.0, "{one:?}");
    }

    #[test]
    fn values_must_be_positive() {
        let r = replicate(
            unpaired(&[0.0, 1.0], &[1.0, 2.0]),
            unpaired(&[1.0, 1.0], &[1.0, 2.0]),
            &Criteria::default(),
        );
        assert!(matches!(r, Err(StatsError::NotPositive { .. })));
    }
}
