//! The one error type of the crate: what was wrong with the numbers or the settings handed in.

use thiserror::Error;

/// Why a statistic could not be computed. Every variant names the cause, so the step that
/// called can point at the trial or the plan value behind it.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// A sample with no values: nothing was measured.
    #[error("the {what} sample has no values")]
    Empty { what: &'static str },
    /// NaN or an infinity in a sample: a driver reported something that is not a measurement.
    #[error("the {what} sample holds {value}, which is not a finite number (value #{index})")]
    NotFinite {
        what: &'static str,
        index: usize,
        value: f64,
    },
    /// A ratio of medians needs positive values on both sides (a figure like `errors` that can
    /// be zero has no ratio).
    #[error(
        "the {what} sample holds {value} (value #{index}): a ratio of medians needs values above zero"
    )]
    NotPositive {
        what: &'static str,
        index: usize,
        value: f64,
    },
    /// The figure is neither better higher nor lower (a setting), so "faster" means nothing.
    #[error("the figure has no better direction (it is a setting), so a claim of faster or slower cannot be checked")]
    NoDirection,
    /// A setting out of its range, e.g. `alpha` outside (0, 1) or `max` below `min`.
    #[error("{0}")]
    Setting(String),
}
