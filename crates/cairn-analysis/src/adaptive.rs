//! The adaptive-passes rule (`passes min=3 max=12 until-ci="2%"`) as a pure function: given
//! every matrix point's sample so far, which points need another pass, and why.
//!
//! # The rule
//!
//! For each point, with n passes so far:
//! 1. n < `min`: **another pass** (below the minimum);
//! 2. n ≥ `max`: **stop** (the maximum is reached; if the CI is still wider than the target
//!    the point is *noisy* — the report flags it, never hides it);
//! 3. no `until_ci` target: **stop** (a fixed number of passes: `min`);
//! 4. the relative CI half-width is above `until_ci`, or cannot be estimated yet: **another
//!    pass**; else **stop** (target met).
//!
//! The width watched is the Student t 95% CI of the mean relative to the mean,
//! `t(0.975, n-1) · s / (√n · |mean|)`. It exists from two passes on and shrinks smoothly as
//! passes are added, which a stopping rule needs; the distribution-free median CI would not
//! exist below six passes and moves in jumps between order statistics. Every decision
//! carries the half-width at that moment, so the engine can record why each pass ran.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sample::{check, mean};
use crate::summary::mean_half_width;
use crate::StatsError;

/// The plan's `passes min=… max=… until-ci=…`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassRule {
    pub min: usize,
    pub max: usize,
    /// Target relative CI half-width (0.02 = 2%); `None`: stop at `min`.
    pub until_ci: Option<f64>,
}

impl PassRule {
    /// Refuses a rule that cannot be followed (the plan's validation should have said so at
    /// the value's place; this is the last guard).
    pub fn check(&self) -> Result<(), StatsError> {
        if self.min == 0 {
            return Err(StatsError::Setting("passes: min must be at least 1".into()));
        }
        if self.max < self.min {
            return Err(StatsError::Setting(format!(
                "passes: max ({}) is below min ({})",
                self.max, self.min
            )));
        }
        match self.until_ci {
            Some(target) if !(target > 0.0 && target < 1.0) => Err(StatsError::Setting(format!(
                "passes: until-ci must lie between 0 and 100%, not {target}"
            ))),
            _ => Ok(()),
        }
    }
}

/// What to do with one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    AnotherPass,
    Stop,
}

/// Why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// Fewer passes than `min`.
    BelowMin,
    /// The CI half-width is above the target.
    AboveTarget,
    /// The CI half-width cannot be estimated yet (one pass, or a zero mean with spread).
    NoEstimate,
    /// The CI half-width is at or below the target.
    TargetMet,
    /// `max` passes ran and the target was not met: the point is noisy.
    ReachedMaxNoisy,
    /// `max` passes ran and the target is met (or there is none).
    ReachedMax,
    /// No target: the point stops at `min`.
    NoTarget,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Why::BelowMin => "fewer passes than min",
            Why::AboveTarget => "CI half-width above the target",
            Why::NoEstimate => "CI half-width not yet estimable",
            Why::TargetMet => "CI half-width within the target",
            Why::ReachedMaxNoisy => "max passes reached with the CI still above the target (noisy)",
            Why::ReachedMax => "max passes reached",
            Why::NoTarget => "no CI target: min passes",
        })
    }
}

/// The decision for one point, with what it was based on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassDecision<P> {
    pub point: P,
    /// Passes measured so far.
    pub passes: usize,
    /// The relative CI half-width of the mean at this moment; `None` when it cannot be
    /// estimated (fewer than two passes, or a zero mean with spread).
    pub ci_half_width: Option<f64>,
    pub action: Action,
    pub why: Why,
}

/// Decides, for every point, whether it needs another pass. `points` pairs each point's
/// identity (whatever the engine uses) with its sample so far; decisions come back in the
/// same order. A point with no passes yet is below any `min`.
pub fn next_passes<'a, P, I>(rule: &PassRule, points: I) -> Result<Vec<PassDecision<P>>, StatsError>
where
    I: IntoIterator<Item = (P, &'a [f64])>,
{
    rule.check()?;
    points
        .into_iter()
        .map(|(point, sample)| {
            let passes = sample.len();
            let ci_half_width = if passes == 0 {
                None
            } else {
                check(sample, "point")?;
                relative_half_width(sample)
            };
            let (action, why) = decide(rule, passes, ci_half_width);
            Ok(PassDecision {
                point,
                passes,
                ci_half_width,
                action,
                why,
            })
        })
        .collect()
}

fn decide(rule: &PassRule, passes: usize, ci_half_width: Option<f64>) -> (Action, Why) {
    let met = match (rule.until_ci, ci_half_width) {
        (Some(target), Some(width)) => Some(width <= target),
        (Some(_), None) => Some(false),
        (None, _) => None,
    };
    if passes < rule.min {
        (Action::AnotherPass, Why::BelowMin)
    } else if passes >= rule.max {
        let why = if met == Some(false) {
            Why::ReachedMaxNoisy
        } else {
            Why::ReachedMax
        };
        (Action::Stop, why)
    } else {
        match met {
            None => (Action::Stop, Why::NoTarget),
            Some(true) => (Action::Stop, Why::TargetMet),
            Some(false) if ci_half_width.is_none() => (Action::AnotherPass, Why::NoEstimate),
            Some(false) => (Action::AnotherPass, Why::AboveTarget),
        }
    }
}

/// `t(0.975, n-1) · s / (√n · |mean|)`; 0 for identical values, `None` for one value or a
/// zero mean with spread.
fn relative_half_width(sample: &[f64]) -> Option<f64> {
    let half_width = mean_half_width(sample)?;
    if half_width == 0.0 {
        return Some(0.0);
    }
    let mean = mean(sample).abs();
    (mean > 0.0).then(|| half_width / mean)
}
