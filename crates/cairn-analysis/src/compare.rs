//! A variant against the baseline at one matrix point: both summaries, the ratio of medians
//! with its bootstrap CI, the Mann–Whitney test, a verdict, and how many passes the observed
//! noise would need to resolve a difference of a given size.
//!
//! # The verdict rule
//!
//! Two pieces of evidence are combined: the two-sided Mann–Whitney p-value (`p`) and the
//! bootstrap 95% CI of the ratio of medians (`CI`). With α = [`Criteria::alpha`] and the
//! equivalence band ±δ = [`Criteria::equivalence`]:
//!
//! 1. **Inconclusive — too few passes** when the rank test cannot reach α at all with these
//!    sample sizes (and ties): its smallest attainable p, `min_p`, is ≥ α. 3 vs 3 gives
//!    `min_p` = 0.1, so three passes per variant are never enough, however far apart the
//!    values; 4 vs 4 (0.029) is the least for α = 0.05. Saying "no difference" here would
//!    pretend a power the test does not have.
//! 2. **Faster / slower** (higher / lower for a figure that is neither better nor worse)
//!    when `p < α` *and* the CI excludes 1 on the side the ranks point to. "Faster" is the
//!    figure's better direction: a ratio above 1 for throughput, below 1 for a time.
//! 3. **Inconclusive — the evidence disagrees** when only one of the two says there is a
//!    shift (p < α but the CI holds 1, or the reverse; typical of skewed samples with
//!    outliers).
//! 4. **No significant difference** when `p ≥ α` and the whole CI lies inside
//!    `[1 - δ, 1 + δ]`: the data rule out any difference of δ or more. This is an
//!    equivalence statement, so it needs a narrow CI, not merely a large p.
//! 5. **Inconclusive — a difference is not ruled out** otherwise: `p ≥ α` but the CI reaches
//!    beyond the band, so a difference of δ or more may be hidden in the noise.
//!
//! # Paired within blocks
//!
//! [`compare_paired`] compares a variant with the baseline *of the same block* (the same
//! node and pass: measured side by side, under the same conditions): the evidence is the
//! Wilcoxon signed-rank test of the pairs' log ratios and the median of the within-block
//! ratios with a bootstrap CI over the pairs; the rules above apply unchanged. What a block
//! shares (a node that is faster, a pass hit by drift) cancels in each ratio instead of
//! widening both samples. The signed-rank test needs six pairs to reach 0.05 (`min_p` =
//! 2/2^n), so fewer are *too few passes*, as ever.
//!
//! # Passes needed
//!
//! [`passes_needed`] estimates how many passes per variant would resolve a difference `d`
//! at the noise observed: the smallest n such that both
//! - the rank test can reach α at n vs n ([`crate::rank_test::min_passes_for`]), and
//! - the ratio's CI half-width on the log scale, approximated as
//!   `t(0.975, 2n-2) · √(π/2) · cv · √(2/n)`, is at most `ln(1 + d)`. Here `cv` is the two
//!   samples' pooled coefficient of variation, `√(π/2)` is the large-sample cost of using
//!   medians rather than means (for normal noise), and `√(2/n)` combines the two sides'
//!   errors. It is an estimate from the noise seen so far, for planning, not a guarantee.

use std::fmt;

use cairn_defs::figures::Direction;
use serde::{Deserialize, Serialize};

use crate::bootstrap::{median_ratio_at, paired_median_ratio_at, BootstrapSettings, RatioEstimate};
use crate::rank_test::{mann_whitney, min_passes_for, signed_rank, MannWhitney, SignedRank};
use crate::summary::{summarize, t_quantile, Summary};
use crate::StatsError;

/// The largest number of passes [`passes_needed`] reports; beyond it, "more than this".
pub const PASSES_ESTIMATE_LIMIT: usize = 1000;

/// What a comparison asks of the data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    /// The significance level of the rank test (default 0.05).
    pub alpha: f64,
    /// Half-width δ of the equivalence band around a ratio of 1: "no significant difference"
    /// needs the whole CI inside `[1 - δ, 1 + δ]` (default 0.05).
    pub equivalence: f64,
    /// The relative difference whose passes-needed estimate the comparison reports; `None`:
    /// the equivalence band's δ.
    pub resolve: Option<f64>,
    pub bootstrap: BootstrapSettings,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria {
            alpha: 0.05,
            equivalence: 0.05,
            resolve: None,
            bootstrap: BootstrapSettings::default(),
        }
    }
}

impl Criteria {
    /// The coverage of the ratio's CI: 1 − α, so that the CI and the rank test decide at the
    /// same level (95% at the default α; more at a sequential design's early looks).
    pub fn level(&self) -> f64 {
        if self.alpha == 0.05 {
            // the literal, so that results computed before levels followed α keep their bits
            crate::summary::CONFIDENCE
        } else {
            1.0 - self.alpha
        }
    }

    fn check(&self) -> Result<(), StatsError> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(StatsError::Setting(format!(
                "alpha must lie between 0 and 0.5, not {}",
                self.alpha
            )));
        }
        if !(self.equivalence > 0.0 && self.equivalence < 1.0) {
            return Err(StatsError::Setting(format!(
                "the equivalence band must lie between 0 and 1 (e.g. 0.05 for ±5%), not {}",
                self.equivalence
            )));
        }
        match self.resolve {
            Some(d) if !(d > 0.0 && d.is_finite()) => Err(StatsError::Setting(format!(
                "the difference to resolve must be above 0 (e.g. 0.1 for 10%), not {d}"
            ))),
            _ => Ok(()),
        }
    }
}

/// The verdict of one comparison (see the module docs for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better than the baseline in the figure's direction, significantly.
    Faster,
    /// Worse than the baseline in the figure's direction, significantly.
    Slower,
    /// Significantly higher, for a figure that is neither better nor worse.
    Higher,
    /// Significantly lower, for a figure that is neither better nor worse.
    Lower,
    /// No difference of the equivalence band's size or more.
    NoSignificantDifference,
    /// The data cannot tell; the reason says why.
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Higher => "higher",
            Verdict::Lower => "lower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// Why a verdict was reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Reason {
    /// Rule 1: the rank test cannot reach α with these sample sizes.
    TooFewPasses { min_p: f64, alpha: f64 },
    /// Rule 2: the rank test and the CI agree on a shift.
    Shifted { p: f64, alpha: f64 },
    /// Rule 3: one of the rank test and the CI sees a shift, the other does not.
    EvidenceDisagrees { p: f64, alpha: f64 },
    /// Rule 4: the CI lies inside the equivalence band.
    WithinBand { band: f64 },
    /// Rule 5: not significant, but the CI reaches beyond the equivalence band.
    BandNotRuledOut { p: f64, band: f64 },
    /// Before the rules: the two samples were measured on more than one class of machine
    /// (a fleet's nodes differ), so a difference could be the machines'.
    MixedMachines { classes: usize },
    /// Before the rules: the two samples were measured in more than one campaign (machine
    /// instances or boots, or for records made before campaigns were recorded, days), so a
    /// difference could be the moment's or the instance's.
    MixedCampaigns { campaigns: usize },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Reason::TooFewPasses { min_p, alpha } => write!(
                f,
                "too few passes: the smallest p-value the rank test can give with these samples is {min_p:.3}, not below α = {}",
                alpha_shown(alpha)
            ),
            Reason::Shifted { p, alpha } => write!(
                f,
                "the rank test (p {}, below α = {}) and the ratio's CI agree",
                p_text(p),
                alpha_shown(alpha)
            ),
            Reason::EvidenceDisagrees { p, alpha } => write!(
                f,
                "the rank test (p {}, α = {}) and the ratio's CI disagree about a difference",
                p_text(p),
                alpha_shown(alpha)
            ),
            Reason::WithinBand { band } => write!(
                f,
                "the ratio's CI lies within ±{}%",
                percent(band)
            ),
            Reason::BandNotRuledOut { p, band } => write!(
                f,
                "not significant (p {}), but the ratio's CI reaches beyond ±{}%: a difference that large is not ruled out",
                p_text(p),
                percent(band)
            ),
            Reason::MixedMachines { classes } => write!(
                f,
                "measured on {classes} classes of machine: a difference could be the machines'; measure on one class, or pivot by `node`"
            ),
            Reason::MixedCampaigns { campaigns } => write!(
                f,
                "its sides were measured in {campaigns} campaigns (machine instances, boots or days), not together: a difference could be the moment's; measure both in one run"
            ),
        }
    }
}

/// α as the verdicts print it: as written for a plain level (`0.05`), three significant
/// digits for a sequential look's nominal level.
pub(crate) fn alpha_shown(alpha: f64) -> String {
    if alpha == 0.05 {
        "0.05".to_string()
    } else {
        crate::sequential::alpha_text(alpha)
    }
}

/// A p-value as a reader should see it, with its relation: `< 0.001` below that (three
/// decimals would print a misleading `0.000`), else `= 0.012`.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("= {p:.3}")
    }
}

/// A relative size as people write it: 0.05 -> "5", 0.025 -> "2.5".
pub(crate) fn percent(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// How many passes per variant would resolve a difference of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassesNeeded {
    /// The relative difference to resolve (0.1 = 10%).
    pub difference: f64,
    /// The pooled coefficient of variation the estimate rests on; `None` when a side has
    /// fewer than two values (no noise can be estimated).
    pub pooled_cv: Option<f64>,
    /// Passes per variant; `None` when no estimate is possible (no `pooled_cv`) or it is
    /// above [`PASSES_ESTIMATE_LIMIT`].
    pub per_variant: Option<usize>,
    /// Set for a claim: `difference` is then the distance between the estimate and the
    /// claimed bound, and the passes are those that would decide the claim (see
    /// [`passes_to_decide`]); `false` for a table's difference from none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub to_bound: bool,
}

impl fmt::Display for PassesNeeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = percent(self.difference);
        if self.to_bound {
            return match (self.per_variant, self.pooled_cv) {
                _ if self.difference <= 0.0 => write!(
                    f,
                    "no number of passes can be said to decide it: the estimate lies on the claimed bound"
                ),
                (Some(n), Some(cv)) => write!(
                    f,
                    "about {n} passes per variant would decide it at the observed noise (CV {}%): the estimate lies {size}% from the claimed bound",
                    percent(cv)
                ),
                (None, Some(cv)) => write!(
                    f,
                    "more than {PASSES_ESTIMATE_LIMIT} passes per variant would be needed to decide it at the observed noise (CV {}%): the estimate lies {size}% from the claimed bound",
                    percent(cv)
                ),
                _ => write!(
                    f,
                    "the noise cannot be estimated from fewer than two passes per variant"
                ),
            };
        }
        match (self.per_variant, self.pooled_cv) {
            (Some(n), Some(cv)) => write!(
                f,
                "about {n} passes per variant would resolve a {size}% difference at the observed noise (CV {}%)",
                percent(cv)
            ),
            (None, Some(cv)) => write!(
                f,
                "more than {PASSES_ESTIMATE_LIMIT} passes per variant would be needed to resolve a {size}% difference at the observed noise (CV {}%)",
                percent(cv)
            ),
            _ => write!(
                f,
                "the noise cannot be estimated from fewer than two passes per variant"
            ),
        }
    }
}

/// One variant compared with the baseline, for one figure at one matrix point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Which way the figure gets better.
    pub direction: Direction,
    pub criteria: Criteria,
    pub baseline: Summary,
    pub variant: Summary,
    /// median(variant) / median(baseline) with its bootstrap CI.
    pub ratio: RatioEstimate,
    pub test: MannWhitney,
    pub verdict: Verdict,
    pub reason: Reason,
    /// Passes per variant to resolve [`Criteria::resolve`] (or the equivalence band); for a
    /// paired comparison the unpaired estimate, which pairing can only lower.
    pub passes_needed: PassesNeeded,
    /// Set when the comparison was paired within blocks ([`compare_paired`]): `ratio` is
    /// then the median of within-block ratios, and the verdict rests on this test; `test`
    /// stays the unpaired one, for reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    /// Set when it was made at a look of a sequential design (`until="decided"`): its α is
    /// that look's nominal level ([`crate::sequential`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look: Option<crate::sequential::Look>,
}

/// The evidence of a comparison paired within blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// What a block is (e.g. "node and pass").
    pub blocks: String,
    /// How many pairs (blocks with both the variant and the baseline).
    pub pairs: usize,
    /// The signed-rank test of the pairs' log ratios.
    pub test: SignedRank,
}

impl Comparison {
    /// The comparison of samples measured on `classes` (> 1) classes of machine: whatever
    /// the rules found, the data cannot tell the variant from the machine.
    pub fn mixed_machines(mut self, classes: usize) -> Comparison {
        self.verdict = Verdict::Inconclusive;
        self.reason = Reason::MixedMachines { classes };
        self
    }

    /// The comparison of samples measured in `campaigns` (> 1) campaigns: measurements are
    /// observations of one machine at one moment, and these were not made together.
    pub fn mixed_campaigns(mut self, campaigns: usize) -> Comparison {
        self.verdict = Verdict::Inconclusive;
        self.reason = Reason::MixedCampaigns { campaigns };
        self
    }
}

/// Compares `variant` with `baseline` (both samples of one figure at one matrix point, in
/// pass order; positive values).
pub fn compare(
    baseline: &[f64],
    variant: &[f64],
    direction: Direction,
    criteria: &Criteria,
) -> Result<Comparison, StatsError> {
    criteria.check()?;
    let ratio = median_ratio_at(baseline, variant, criteria.bootstrap, criteria.level())?;
    let test = mann_whitney(baseline, variant)?;
    let baseline = summarize(baseline, "baseline")?;
    let variant = summarize(variant, "variant")?;
    let evidence = Evidence {
        p: test.p_value,
        min_p: test.min_p,
        ranks_say_higher: test.says_higher(),
    };
    let (verdict, reason) = decide(&evidence, &ratio, direction, criteria);
    let passes_needed = passes_needed(
        &baseline,
        &variant,
        criteria.resolve.unwrap_or(criteria.equivalence),
        criteria.alpha,
    );
    Ok(Comparison {
        direction,
        criteria: *criteria,
        baseline,
        variant,
        ratio,
        test,
        verdict,
        reason,
        passes_needed,
        paired: None,
        look: None,
    })
}

/// Compares a variant with the baseline pair by pair: each `(baseline, variant)` of `pairs`
/// was measured in one block (see the module docs). Positive values.
pub fn compare_paired(
    pairs: &[(f64, f64)],
    blocks: &str,
    direction: Direction,
    criteria: &Criteria,
) -> Result<Comparison, StatsError> {
    criteria.check()?;
    let baseline: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let variant: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let unpaired = compare(&baseline, &variant, direction, criteria)?;
    let ratio = paired_median_ratio_at(pairs, criteria.bootstrap, criteria.level())?;
    let logs: Vec<f64> = pairs.iter().map(|(b, v)| v.ln() - b.ln()).collect();
    let test = signed_rank(&logs)?;
    let evidence = Evidence {
        p: test.p_value,
        min_p: test.min_p,
        ranks_say_higher: test.says_higher(),
    };
    let (verdict, reason) = decide(&evidence, &ratio, direction, criteria);
    Ok(Comparison {
        ratio,
        verdict,
        reason,
        paired: Some(Paired {
            blocks: blocks.to_string(),
            pairs: pairs.len(),
            test,
        }),
        ..unpaired
    })
}

/// What a rank test says, for [`decide`]: its p-value, the smallest p it could give, and
/// which way its ranks point.
struct Evidence {
    p: f64,
    min_p: f64,
    ranks_say_higher: bool,
}

/// The verdict rule of the module docs.
fn decide(
    test: &Evidence,
    ratio: &RatioEstimate,
    direction: Direction,
    criteria: &Criteria,
) -> (Verdict, Reason) {
    let alpha = criteria.alpha;
    let p = test.p;
    if test.min_p >= alpha {
        return (
            Verdict::Inconclusive,
            Reason::TooFewPasses {
                min_p: test.min_p,
                alpha,
            },
        );
    }
    let ranks_say_higher = test.ranks_say_higher;
    let significant = p < alpha;
    let ci_above = ratio.ci.low > 1.0;
    let ci_below = ratio.ci.high < 1.0;
    let ci_shifted = ci_above || ci_below;
    if significant && ci_shifted && ci_above == ranks_say_higher {
        let verdict = match (direction, ci_above) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Faster
            }
            (Direction::HigherIsBetter, false) | (Direction::LowerIsBetter, true) => {
                Verdict::Slower
            }
            (Direction::Neither, true) => Verdict::Higher,
            (Direction::Neither, false) => Verdict::Lower,
        };
        return (verdict, Reason::Shifted { p, alpha });
    }
    if significant || ci_shifted {
        return (
            Verdict::Inconclusive,
            Reason::EvidenceDisagrees { p, alpha },
        );
    }
    let band = criteria.equivalence;
    if ratio.ci.low >= 1.0 - band && ratio.ci.high <= 1.0 + band {
        (
            Verdict::NoSignificantDifference,
            Reason::WithinBand { band },
        )
    } else {
        (Verdict::Inconclusive, Reason::BandNotRuledOut { p, band })
    }
}

/// How many passes per variant would resolve a relative `difference` at the noise the two
/// summaries show, for a rank test at `alpha` (see the module docs for the estimate).
pub fn passes_needed(
    baseline: &Summary,
    variant: &Summary,
    difference: f64,
    alpha: f64,
) -> PassesNeeded {
    let pooled_cv = pooled_cv(baseline, variant);
    let per_variant = pooled_cv.and_then(|cv| {
        let target = difference.ln_1p();
        let median_cost = (std::f64::consts::PI / 2.0).sqrt();
        let rank_minimum = min_passes_for(alpha).max(2);
        (rank_minimum..=PASSES_ESTIMATE_LIMIT).find(|&n| {
            let n = n as f64;
            t_quantile(2.0 * n - 2.0) * median_cost * cv * (2.0 / n).sqrt() <= target
        })
    });
    PassesNeeded {
        difference,
        pooled_cv,
        per_variant,
        to_bound: false,
    }
}

/// Passes per variant that would decide a claim whose bound is `threshold` (a speed-up, e.g.
/// 1.2 for "faster by 20%") when the estimate is `speedup`: the sample size at which a CI of
/// the observed noise would no longer reach from the estimate to the bound, i.e. the
/// difference to resolve is their distance, |speedup / threshold − 1|, not the claim's size.
/// An estimate on the bound cannot be decided by any number of passes (`per_variant` is
/// `None`, `difference` 0).
pub fn passes_to_decide(
    baseline: &Summary,
    variant: &Summary,
    speedup: f64,
    threshold: f64,
    alpha: f64,
) -> PassesNeeded {
    let distance = (speedup / threshold - 1.0).abs();
    let mut p = if distance > 1e-9 {
        passes_needed(baseline, variant, distance, alpha)
    } else {
        PassesNeeded {
            difference: 0.0,
            pooled_cv: pooled_cv(baseline, variant),
            per_variant: None,
            to_bound: true,
        }
    };
    p.to_bound = true;
    p
}

/// The coefficients of variation of both sides pooled by their degrees of freedom.
fn pooled_cv(baseline: &Summary, variant: &Summary) -> Option<f64> {
    let (cv_b, cv_v) = (baseline.cv?, variant.cv?);
    let (df_b, df_v) = ((baseline.n - 1) as f64, (variant.n - 1) as f64);
    Some(((cv_b * cv_b * df_b + cv_v * cv_v * df_v) / (df_b + df_v)).sqrt())
}
