//! Claim checks: a published finding ("64-bit selects are faster by at least 10%") stated as
//! a direction and a minimum size, checked against a [`Comparison`].
//!
//! Sizes are read in the figure's better direction, as a *speed-up*: `s = ratio` for a figure
//! where higher is better (throughput), `s = 1 / ratio` where lower is better (times), so
//! "faster by 10%" means `s ≥ 1.10` — a throughput 10% above the baseline's, or a time of at
//! most baseline / 1.10 — and "slower by 10%" means `s ≤ 0.90`.
//!
//! # The rule
//!
//! With the speed-up's 95% CI `[lo, hi]` and the claim's threshold `T` (1 + size for
//! faster, 1 - size for slower):
//! - **inconclusive** whenever the rank test cannot reach α with these passes (3 vs 3): a
//!   CI from three values is too fragile to carry a verdict either way;
//! - a claim of a shift of any size (size 0, no band: "pg is ahead") asks exactly what the
//!   comparison answers (its rank test at α and its CI agreeing, as a table's): it **holds**
//!   when the comparison finds the claimed shift and **fails** when it finds the opposite
//!   one, at the comparison's error rate, and is **inconclusive** with the comparison's own
//!   reason (its p) otherwise. The noise guard below is for sizes the rank test does not test;
//! - **inconclusive** whenever the data is too noisy for the claim's size: fewer passes per
//!   variant than [`passes_needed`] estimates for resolving that size at the observed noise.
//!   A small-sample bootstrap CI is too narrow about as often as it is wide, so on noisy data
//!   it would now and then clear (or miss) the threshold by chance; this gate keeps noisy
//!   data out of "holds" and "fails" alike — unless the rank test says so: given the
//!   samples ([`check_claim_on`]), the claim **holds** when the whole CI supports it and the
//!   Mann–Whitney test of the variant's speed against the baseline's times each edge finds
//!   it above the near edge (and below a band's far one) at α, and **fails** when the whole
//!   CI contradicts it and the test finds it beyond the edge it missed (said as the ratio
//!   of medians: for a time, the speed-up's edge turned back into seconds' ratio). The rank test needs
//!   no estimate of the noise and keeps its error rate with few passes, so a speed-up far
//!   outside the claim (×1.6 against a claimed 10–15%) is decided on five passes, while one
//!   near an edge is not;
//! - **holds** only if the whole CI supports the claim (`lo ≥ T` for faster, `hi ≤ T` for
//!   slower) *and* the comparison's verdict is the claimed direction (significant);
//! - **fails** if the whole CI contradicts it (`hi < T` for faster, `lo > T` for slower);
//! - **inconclusive** otherwise: the CI straddles the threshold, or it clears it while the
//!   rank test does not see a shift. Noisy data lands here, never in "holds".
//!
//! A **band** (`at_most` set: "about 50% faster", 40% to 60%) claims `s` in `[T, L]` with
//! `L` = 1 + at_most (1 - at_most for slower, the band then `[L, T]`): it holds when the
//! whole CI lies inside the band (and the shift is significant), fails when the whole CI
//! lies outside it (either side), and is inconclusive otherwise. Its noise guard asks for
//! the passes that resolve the band's half-width.
//!
//! **The same** ([`ClaimDirection::Same`], a published "about the same") is a band around no
//! difference, `[1 - at_least, 1 + at_most]`: it holds when the whole CI lies inside it, and
//! needs no significant shift (it claims none): the rank tests against both edges are the
//! two one-sided tests of equivalence. It fails when the whole CI lies outside, and is
//! inconclusive otherwise, behind the same gates (too few passes, too noisy for the band).

use std::fmt;

use cairn_defs::figures::Direction;
use serde::{Deserialize, Serialize};

use crate::compare::{
    passes_needed, passes_to_decide, percent, Comparison, PassesNeeded, Reason, Verdict,
};
use crate::rank_test::mann_whitney;
use crate::summary::Interval;
use crate::StatsError;

/// Which way the claim says the variant differs from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimDirection {
    Faster,
    Slower,
    /// Neither faster nor slower beyond a band: `at_least` slower to `at_most` faster.
    Same,
}

/// A claim: "the variant is `direction` than the baseline by at least `at_least`" — or, with
/// `at_most`, a band: "by between `at_least` and `at_most`" (a published "about 50% faster").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub direction: ClaimDirection,
    /// The minimum relative size (0.10 = 10%; 0 = any difference in that direction).
    pub at_least: f64,
    /// The maximum relative size of a band; `None` for an open "at least".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
}

impl Claim {
    /// "faster by at least `at_least`" (no upper bound).
    pub fn at_least(direction: ClaimDirection, at_least: f64) -> Claim {
        Claim {
            direction,
            at_least,
            at_most: None,
        }
    }

    /// "the same, from `slower` slower to `faster` faster" (both fractions of the speed-up).
    pub fn same(slower: f64, faster: f64) -> Claim {
        Claim {
            direction: ClaimDirection::Same,
            at_least: slower,
            at_most: Some(faster),
        }
    }

    /// The speed-up the claim's far bound stands at, for a band: 1 + at_most (faster, and
    /// the same's upper edge) or 1 - at_most (slower).
    fn limit(&self) -> Option<f64> {
        self.at_most.map(|m| match self.direction {
            ClaimDirection::Faster | ClaimDirection::Same => 1.0 + m,
            ClaimDirection::Slower => 1.0 - m,
        })
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.direction {
            ClaimDirection::Faster => "faster",
            ClaimDirection::Slower => "slower",
            ClaimDirection::Same => {
                return write!(
                    f,
                    "the same, from {}% slower to {}% faster",
                    percent(self.at_least),
                    percent(self.at_most.unwrap_or(self.at_least))
                )
            }
        };
        if let Some(most) = self.at_most {
            write!(
                f,
                "{word} by {}% to {}%",
                percent(self.at_least),
                percent(most)
            )
        } else if self.at_least > 0.0 {
            write!(f, "{word} by at least {}%", percent(self.at_least))
        } else {
            f.write_str(word)
        }
    }
}

/// A claim's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimVerdict {
    Holds,
    Fails,
    Inconclusive,
}

impl fmt::Display for ClaimVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClaimVerdict::Holds => "holds",
            ClaimVerdict::Fails => "fails",
            ClaimVerdict::Inconclusive => "inconclusive",
        })
    }
}

/// Why a claim got its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum ClaimReason {
    /// The rank test cannot reach α with these passes.
    TooFewPasses { min_p: f64, alpha: f64 },
    /// Fewer passes per variant than the observed noise needs to resolve the claim's size.
    TooNoisy {
        passes: usize,
        needed: Option<usize>,
    },
    /// The whole CI supports the claim and the shift is significant.
    Supported,
    /// The whole CI contradicts the claim.
    Contradicted,
    /// Too few passes for the CI alone, but the whole CI supports the claim and the rank
    /// tests against its edges put the speed-up inside (the larger of their p-values).
    RanksInside { p: f64 },
    /// Too few passes for the CI alone, but the whole CI contradicts the claim and the rank
    /// test puts the ratio of medians beyond the claim's `edge` (as that ratio: for a time,
    /// the reciprocal of the speed-up's edge).
    RanksBeyond { edge: f64, p: f64 },
    /// The CI holds both sides of the threshold (or of a band's edge).
    Straddles,
    /// The CI clears the threshold, but the rank test does not confirm a shift.
    NotSignificant { verdict: Verdict },
    /// A claim of a shift of any size whose comparison found neither that shift nor the
    /// opposite one: the comparison's verdict and its reason (the rank test's p) say why.
    Undecided { verdict: Verdict, why: Reason },
    /// The comparison's samples were not measured together (more than one class of machine,
    /// or more than one campaign): its reason says which; nothing is decided.
    NotTogether { why: Reason },
}

impl fmt::Display for ClaimReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimReason::TooFewPasses { min_p, alpha } => write!(
                f,
                "too few passes: the smallest p-value the rank test can give is {min_p:.3}, not below α = {}",
                crate::compare::alpha_shown(*alpha)
            ),
            ClaimReason::TooNoisy { passes, needed } => match needed {
                Some(needed) => write!(
                    f,
                    "too noisy: {passes} passes per variant, the observed noise needs about {needed} to resolve the claimed size"
                ),
                None => write!(
                    f,
                    "too noisy: {passes} passes per variant cannot resolve the claimed size at the observed noise"
                ),
            },
            ClaimReason::Supported => f.write_str("the whole CI supports it"),
            ClaimReason::Contradicted => f.write_str("the whole CI contradicts it"),
            ClaimReason::RanksInside { p } => write!(
                f,
                "the whole CI supports it, and the rank tests against the claimed size agree (p {}); too few passes to size the CI alone",
                crate::compare::p_text(*p)
            ),
            ClaimReason::RanksBeyond { edge, p } => write!(
                f,
                "the whole CI contradicts it, and the rank test puts the ratio beyond ×{edge:.3} (p {}); too few passes to size the CI alone",
                crate::compare::p_text(*p)
            ),
            ClaimReason::Straddles => f.write_str("the CI holds both sides of the claimed size"),
            ClaimReason::NotSignificant { verdict } => write!(
                f,
                "the CI clears the claimed size but the comparison's verdict is {verdict}"
            ),
            ClaimReason::Undecided { verdict, why } => {
                write!(f, "the comparison finds {verdict}: {why}")
            }
            ClaimReason::NotTogether { why } => write!(f, "{why}"),
        }
    }
}

/// The outcome of checking a claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimCheck {
    pub claim: Claim,
    pub verdict: ClaimVerdict,
    pub reason: ClaimReason,
    /// median(variant) / median(baseline) and its CI, as measured.
    pub ratio: f64,
    pub ratio_ci: Interval,
    /// The ratio turned to the figure's better direction (see the module docs).
    pub speedup: f64,
    pub speedup_ci: Interval,
    /// The speed-up the claim needs: 1 + size (faster) or 1 - size (slower).
    pub threshold: f64,
    /// A band's far edge as a speed-up: 1 + at_most (faster) or 1 - at_most (slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    /// Passes per variant that would resolve the claim's size at the observed noise.
    pub passes_needed: PassesNeeded,
}

/// The samples a comparison was made of, in pass order (positive values).
#[derive(Debug, Clone, Copy)]
pub struct Samples<'a> {
    pub baseline: &'a [f64],
    pub variant: &'a [f64],
}

/// Checks `claim` against `comparison`. The figure must have a better direction.
///
/// Without the samples, too few passes for the claim's size leave it inconclusive; see
/// [`check_claim_on`].
pub fn check_claim(comparison: &Comparison, claim: Claim) -> Result<ClaimCheck, StatsError> {
    check(comparison, claim, None)
}

/// Checks `claim` against `comparison`, made of `samples`: where the passes are too few for
/// the CI alone to decide the claim's size, the rank test of the samples against the claim's
/// edges may (see the module docs).
pub fn check_claim_on(
    comparison: &Comparison,
    claim: Claim,
    samples: Samples<'_>,
) -> Result<ClaimCheck, StatsError> {
    check(comparison, claim, Some(samples))
}

/// What the rank tests against a claim's edges found, where they decide it.
enum EdgeTests {
    /// The speed-up lies significantly above the near edge and below the far one (if any);
    /// `p` is the larger of the tests' p-values.
    Inside { p: f64 },
    /// The speed-up lies significantly beyond `edge`, on the side away from the claim.
    Beyond { edge: f64, p: f64 },
}

/// The rank tests of the variant's speed against the baseline's scaled to each edge of the
/// claimed speed-ups `[low, high]` (`high` infinite, or `low` 0, for an open claim).
///
/// A speed-up beyond an edge `e` is a variant whose speed (the figure, or its reciprocal for
/// a time) tends to lie above (or below) the baseline's speed times `e`: the Mann–Whitney
/// test of those two samples, at α, says so with its own error rate, however few the passes
/// are — unlike a bootstrap CI of a few passes. `None` when the tests decide nothing.
fn edge_tests(
    samples: Samples<'_>,
    direction: Direction,
    low: f64,
    high: f64,
    alpha: f64,
) -> Result<Option<EdgeTests>, StatsError> {
    let speed = |x: &f64| match direction {
        Direction::LowerIsBetter => 1.0 / x,
        _ => *x,
    };
    let variant: Vec<f64> = samples.variant.iter().map(speed).collect();
    // the test against one edge, once: Some(p, whether the variant's speed lies above the
    // baseline's times `edge`) when it is significant; None for an open side's edge
    let test_at = |edge: f64| -> Result<Option<(f64, bool)>, StatsError> {
        if edge <= 0.0 || !edge.is_finite() {
            return Ok(None);
        }
        let scaled: Vec<f64> = samples.baseline.iter().map(|x| speed(x) * edge).collect();
        let test = mann_whitney(&scaled, &variant)?;
        Ok(Some((test.p_value, test.says_higher())).filter(|(p, _)| *p < alpha))
    };
    let (at_low, at_high) = (test_at(low)?, test_at(high)?);
    // an open side's edge is cleared by any speed-up
    let above_low = if low > 0.0 {
        at_low.filter(|&(_, higher)| higher).map(|(p, _)| p)
    } else {
        Some(0.0)
    };
    let below_high = if high.is_finite() {
        at_high.filter(|&(_, higher)| !higher).map(|(p, _)| p)
    } else {
        Some(0.0)
    };
    if let (Some(a), Some(b)) = (above_low, below_high) {
        return Ok(Some(EdgeTests::Inside { p: a.max(b) }));
    }
    if let Some((p, false)) = at_low {
        return Ok(Some(EdgeTests::Beyond { edge: low, p }));
    }
    if let Some((p, true)) = at_high {
        return Ok(Some(EdgeTests::Beyond { edge: high, p }));
    }
    Ok(None)
}

fn check(
    comparison: &Comparison,
    claim: Claim,
    samples: Option<Samples<'_>>,
) -> Result<ClaimCheck, StatsError> {
    let size = claim.at_least;
    let same = claim.direction == ClaimDirection::Same;
    let size_ok = |size: f64| match claim.direction {
        ClaimDirection::Faster => size >= 0.0 && size.is_finite(),
        ClaimDirection::Slower => (0.0..1.0).contains(&size),
        ClaimDirection::Same => size > 0.0 && size < 1.0,
    };
    if !size_ok(size) {
        return Err(StatsError::Setting(format!(
            "a claim's size must be at least 0 (and below 1 for slower; above 0 for the same), e.g. 0.1 for 10%, not {size}"
        )));
    }
    if same {
        if !claim.at_most.is_some_and(|m| m > 0.0 && m.is_finite()) {
            return Err(StatsError::Setting(format!(
                "\"the same\" needs its band's faster edge above 0, not {:?}",
                claim.at_most
            )));
        }
    } else if let Some(most) = claim.at_most {
        if !size_ok(most) || most <= size {
            return Err(StatsError::Setting(format!(
                "a band's far edge must be beyond its near one ({size}) and a valid size, not {most}"
            )));
        }
    }
    let ratio = comparison.ratio.ratio;
    let ratio_ci = comparison.ratio.ci;
    let (speedup, speedup_ci) = match comparison.direction {
        Direction::HigherIsBetter => (ratio, ratio_ci),
        Direction::LowerIsBetter => (
            1.0 / ratio,
            Interval {
                low: 1.0 / ratio_ci.high,
                high: 1.0 / ratio_ci.low,
                level: ratio_ci.level,
            },
        ),
        Direction::Neither => return Err(StatsError::NoDirection),
    };
    // the comparison's verdict for the claimed shift, and for a shift against it
    // (the same claims no shift: the opposed verdicts are never claimed, see `supported`)
    let (threshold, claimed_verdict, opposed_verdict) = match claim.direction {
        ClaimDirection::Faster => (1.0 + size, Verdict::Faster, Verdict::Slower),
        ClaimDirection::Slower | ClaimDirection::Same => {
            (1.0 - size, Verdict::Slower, Verdict::Faster)
        }
    };
    // a claim of a shift of any size asks exactly what the comparison answers
    let any_shift = size == 0.0 && claim.at_most.is_none();
    let limit = claim.limit();
    // the claimed speed-ups as an interval [near, far] in increasing order
    let (band_low, band_high) = match claim.direction {
        ClaimDirection::Faster | ClaimDirection::Same => {
            (threshold, limit.unwrap_or(f64::INFINITY))
        }
        ClaimDirection::Slower => (limit.unwrap_or(0.0), threshold),
    };
    let supports = speedup_ci.low >= band_low && speedup_ci.high <= band_high;
    let contradicts = speedup_ci.high < band_low || speedup_ci.low > band_high;
    let alpha = comparison.criteria.alpha;
    let test = &comparison.test;
    // a band is resolved when the noise resolves its half-width: the CI must fit inside it
    let difference = match claim.at_most {
        Some(most) if same => (most + size) / 2.0,
        Some(most) => (most - size) / 2.0,
        None if size > 0.0 => size,
        None => comparison.criteria.equivalence,
    };
    // the guard: noisy data never decides a claim, whatever its CI happened to be
    let resolving = passes_needed(&comparison.baseline, &comparison.variant, difference, alpha);
    // what a reader is told: the passes that would decide this claim — enough to resolve
    // its size (the guard) and for a CI at the observed noise to clear the bound from the
    // estimate (their distance, not the claim's size from none)
    // a band's CI must clear both edges: the nearer one to the estimate is the harder
    let bound = match limit {
        Some(limit) if (speedup / limit).ln().abs() < (speedup / threshold).ln().abs() => limit,
        _ => threshold,
    };
    let mut deciding = passes_to_decide(
        &comparison.baseline,
        &comparison.variant,
        speedup,
        bound,
        alpha,
    );
    deciding.per_variant = deciding
        .per_variant
        .zip(resolving.per_variant)
        .map(|(a, b)| a.max(b));
    let passes = comparison.baseline.n.min(comparison.variant.n);
    let (verdict, reason) = if matches!(
        comparison.reason,
        Reason::MixedMachines { .. } | Reason::MixedCampaigns { .. }
    ) {
        (
            ClaimVerdict::Inconclusive,
            ClaimReason::NotTogether {
                why: comparison.reason,
            },
        )
    } else if test.min_p >= alpha {
        (
            ClaimVerdict::Inconclusive,
            ClaimReason::TooFewPasses {
                min_p: test.min_p,
                alpha,
            },
        )
    } else if any_shift && comparison.verdict == claimed_verdict {
        // decided on the same evidence, at the same error rate, as the table's comparison
        (ClaimVerdict::Holds, ClaimReason::Supported)
    } else if any_shift && comparison.verdict == opposed_verdict {
        (ClaimVerdict::Fails, ClaimReason::Contradicted)
    } else if any_shift {
        // its CI may exclude no change while the rank test stays above α: the comparison's
        // own reason (with its p) says so, not the size guard, which this claim has no size for
        (
            ClaimVerdict::Inconclusive,
            ClaimReason::Undecided {
                verdict: comparison.verdict,
                why: comparison.reason,
            },
        )
    } else if resolving.per_variant.is_none_or(|needed| passes < needed) {
        // too few passes for the CI alone; the rank test against the claim's edges may still
        // decide it, at its own error rate
        let ranks = samples
            .map(|s| edge_tests(s, comparison.direction, band_low, band_high, alpha))
            .transpose()?
            .flatten();
        match ranks {
            Some(EdgeTests::Inside { p }) if supports => {
                (ClaimVerdict::Holds, ClaimReason::RanksInside { p })
            }
            Some(EdgeTests::Beyond { edge, p }) if contradicts => {
                // said as the ratio of medians the reader sees beside it
                let edge = match comparison.direction {
                    Direction::LowerIsBetter => 1.0 / edge,
                    _ => edge,
                };
                (ClaimVerdict::Fails, ClaimReason::RanksBeyond { edge, p })
            }
            _ => (
                ClaimVerdict::Inconclusive,
                ClaimReason::TooNoisy {
                    passes,
                    needed: resolving.per_variant,
                },
            ),
        }
    } else if supports && (same || comparison.verdict == claimed_verdict) {
        // the same claims no shift: its CI inside the band is the whole of it
        (ClaimVerdict::Holds, ClaimReason::Supported)
    } else if supports {
        (
            ClaimVerdict::Inconclusive,
            ClaimReason::NotSignificant {
                verdict: comparison.verdict,
            },
        )
    } else if contradicts {
        (ClaimVerdict::Fails, ClaimReason::Contradicted)
    } else {
        (ClaimVerdict::Inconclusive, ClaimReason::Straddles)
    };
    Ok(ClaimCheck {
        claim,
        verdict,
        reason,
        ratio,
        ratio_ci,
        speedup,
        speedup_ci,
        threshold,
        limit,
        passes_needed: deciding,
    })
}
