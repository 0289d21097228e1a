//! Trends of an effect along an ordered factor: whether a variant's gain over its baseline
//! grows (or shrinks) from one point to another ("the gain grows past 24 cores"), as the
//! ratio of the two effects with a seeded bootstrap CI, and a verdict holds / fails /
//! inconclusive.
//!
//! # The rule
//!
//! `g₁`, `g₂` are the effects (ratios of medians, variant / baseline) at the low and the
//! high point, each measured together within its point; `R = g₂ / g₁`. Its CI is the
//! percentile interval of the elementwise ratio of the two effects' bootstrap draws (the
//! points resampled apart, as [`crate::replication`] resamples two campaigns). For a claim
//! that the gain **grows**:
//!
//! 1. **inconclusive — too few passes** when a sample has fewer passes than the rank test
//!    needs to reach α at all (4 per side at α = 0.05): no effect is decided from fewer;
//! 2. **holds** when the whole CI of `R` lies above 1;
//! 3. **fails** when the whole CI lies below 1 (the gain shrinks);
//! 4. **inconclusive** otherwise: the CI holds 1, so the data cannot tell a growing gain
//!    from a steady one.
//!
//! **Shrinks** is the mirror: holds below 1, fails above. A flat gain never holds nor fails
//! however many passes: the claim is about a change, and "no change" is not one.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{check_resamples, estimate, BootstrapSettings, RatioEstimate};
use crate::claim::ClaimVerdict;
use crate::compare::Criteria;
use crate::replication::{reproduced_seed, Effect};
use crate::StatsError;

/// Which way a trend claim says the gain moves from the low point to the high one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrendDirection {
    Grows,
    Shrinks,
}

impl std::fmt::Display for TrendDirection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TrendDirection::Grows => "grows",
            TrendDirection::Shrinks => "shrinks",
        })
    }
}

/// Why a trend got its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum TrendReason {
    /// Rule 1: a sample has `passes`, fewer than the `needed` the rank test needs.
    TooFewPasses { passes: usize, needed: usize },
    /// Rule 2: the whole CI of `R` is on the claimed side of 1.
    Supported,
    /// Rule 3: the whole CI of `R` is on the other side of 1.
    Contradicted,
    /// Rule 4: the CI of `R` holds 1.
    HoldsOne,
}

impl std::fmt::Display for TrendReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TrendReason::TooFewPasses { passes, needed } => write!(
                f,
                "too few passes: {passes} where an effect needs at least {needed} per side to be decided"
            ),
            TrendReason::Supported => f.write_str("the whole CI of the change lies on the claimed side of 1"),
            TrendReason::Contradicted => {
                f.write_str("the whole CI of the change lies on the other side of 1")
            }
            TrendReason::HoldsOne => f.write_str(
                "the CI of the change holds 1: a steady gain is not ruled out",
            ),
        }
    }
}

/// A trend checked: each point's effect with its CI, their ratio (high / low) with its CI,
/// and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendCheck {
    pub direction: TrendDirection,
    /// The effect (variant / baseline) at the low point and at the high point.
    pub from: RatioEstimate,
    pub to: RatioEstimate,
    /// `to / from`, with the CI of the two points' resamples.
    pub change: RatioEstimate,
    pub verdict: ClaimVerdict,
    pub reason: TrendReason,
}

/// Checks that the effect at `to` is larger (`Grows`) or smaller (`Shrinks`) than at `from`,
/// under `criteria` (its α, bootstrap resamples and seed; coverage [`Criteria::level`]).
pub fn check_trend(
    from: Effect<'_>,
    to: Effect<'_>,
    direction: TrendDirection,
    criteria: &Criteria,
) -> Result<TrendCheck, StatsError> {
    check_resamples(criteria.bootstrap)?;
    let level = criteria.level();
    let (a, draws_a) = from.draws(criteria.bootstrap)?;
    let to_settings = BootstrapSettings {
        seed: reproduced_seed(criteria.bootstrap.seed),
        ..criteria.bootstrap
    };
    let (b, draws_b) = to.draws(to_settings)?;
    let draws: Vec<f64> = draws_b.iter().zip(&draws_a).map(|(b, a)| b / a).collect();
    let change = estimate(b / a, draws, criteria.bootstrap, level);
    let from_estimate = estimate(a, draws_a, criteria.bootstrap, level);
    let to_estimate = estimate(b, draws_b, to_settings, level);
    let short = [from, to]
        .iter()
        .map(|e| (e.passes(), e.passes_needed(criteria.alpha)))
        .find(|(passes, needed)| passes < needed);
    let (above, below) = (change.ci.low > 1.0, change.ci.high < 1.0);
    let (supported, contradicted) = match direction {
        TrendDirection::Grows => (above, below),
        TrendDirection::Shrinks => (below, above),
    };
    let (verdict, reason) = if let Some((passes, needed)) = short {
        (
            ClaimVerdict::Inconclusive,
            TrendReason::TooFewPasses { passes, needed },
        )
    } else if supported {
        (ClaimVerdict::Holds, TrendReason::Supported)
    } else if contradicted {
        (ClaimVerdict::Fails, TrendReason::Contradicted)
    } else {
        (ClaimVerdict::Inconclusive, TrendReason::HoldsOne)
    };
    Ok(TrendCheck {
        direction,
        from: from_estimate,
        to: to_estimate,
        change,
        verdict,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `centre`, spread ±`spread` (relative), deterministic.
    fn sample(centre: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| centre * (1.0 + spread * (2.0 * i as f64 / (n - 1) as f64 - 1.0)))
            .collect()
    }

    fn trend(
        (b1, v1): (f64, f64),
        (b2, v2): (f64, f64),
        spread: f64,
        n: usize,
        direction: TrendDirection,
    ) -> TrendCheck {
        let (base1, var1) = (sample(b1, spread, n), sample(v1, spread, n));
        let (base2, var2) = (sample(b2, spread, n), sample(v2, spread, n));
        check_trend(
            Effect::Unpaired {
                baseline: &base1,
                variant: &var1,
            },
            Effect::Unpaired {
                baseline: &base2,
                variant: &var2,
            },
            direction,
            &Criteria::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_gain_from_4_to_21_percent_grows() {
        let t = trend(
            (1000.0, 1040.0),
            (3000.0, 3630.0),
            0.01,
            6,
            TrendDirection::Grows,
        );
        assert_eq!(t.verdict, ClaimVerdict::Holds, "{t:?}");
        assert!((t.from.ratio - 1.04).abs() < 1e-9 && (t.to.ratio - 1.21).abs() < 1e-9);
        assert!((t.change.ratio - 1.21 / 1.04).abs() < 1e-9);
        assert!(t.change.ci.low > 1.0 && t.from.ci.contains(1.04));
    }

    #[test]
    fn a_shrinking_gain_fails_a_claim_that_it_grows_and_holds_one_that_it_shrinks() {
        let grows = trend(
            (1000.0, 1300.0),
            (3000.0, 3150.0),
            0.01,
            6,
            TrendDirection::Grows,
        );
        assert_eq!(grows.verdict, ClaimVerdict::Fails, "{grows:?}");
        assert_eq!(grows.reason, TrendReason::Contradicted);
        let shrinks = trend(
            (1000.0, 1300.0),
            (3000.0, 3150.0),
            0.01,
            6,
            TrendDirection::Shrinks,
        );
        assert_eq!(shrinks.verdict, ClaimVerdict::Holds, "{shrinks:?}");
    }

    #[test]
    fn a_steady_gain_or_noise_is_inconclusive() {
        let steady = trend(
            (1000.0, 1100.0),
            (3000.0, 3300.0),
            0.02,
            8,
            TrendDirection::Grows,
        );
        assert_eq!(steady.verdict, ClaimVerdict::Inconclusive, "{steady:?}");
        assert_eq!(steady.reason, TrendReason::HoldsOne);
        // a real change, drowned in ±30% noise
        let noisy = trend(
            (1000.0, 1040.0),
            (3000.0, 3630.0),
            0.3,
            6,
            TrendDirection::Grows,
        );
        assert_eq!(noisy.verdict, ClaimVerdict::Inconclusive, "{noisy:?}");
    }

    #[test]
    fn three_passes_never_decide_a_trend() {
        let t = trend(
            (1000.0, 1000.0),
            (1000.0, 2000.0),
            0.01,
            3,
            TrendDirection::Grows,
        );
        assert_eq!(t.verdict, ClaimVerdict::Inconclusive);
        assert_eq!(
            t.reason,
            TrendReason::TooFewPasses {
                passes: 3,
                needed: 4
            }
        );
    }

    #[test]
    fn the_check_is_seeded() {
        let one = trend(
            (1000.0, 1040.0),
            (3000.0, 3630.0),
            0.05,
            6,
            TrendDirection::Grows,
        );
        let two = trend(
            (1000.0, 1040.0),
            (3000.0, 3630.0),
            0.05,
            6,
            TrendDirection::Grows,
        );
        assert_eq!(one, two);
    }
}
