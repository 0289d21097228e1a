//! A trials block's server lifecycle: what happens on each server start — an idle `settle`
//! window after the server is ready, and `runs N` consecutive runs of the workload on it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::Sp;

/// The longest `settle` a plan may ask for: the machine's measurement lock is held while a
/// server settles, so a mistyped hour must not hold every other study's trials.
pub const MAX_SETTLE: Duration = Duration::from_secs(3600);
/// The most consecutive runs per server start: each is recorded in the one trial's record.
pub const MAX_RUNS: u32 = 100;

/// `settle "60s"` and `runs 3` of a trials block. Both absent is today's lifecycle: the
/// workload starts as soon as the server is ready, once per start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Lifecycle {
    /// How long the server sits idle after it is ready and before the first run; `0s` is
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Sp<Duration>>,
    /// How many times the workload runs back to back on one server start (≥ 1; 1 is
    /// today's single run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Sp<u32>>,
}

impl Lifecycle {
    /// Nothing declared (or only what equals the default).
    pub fn is_default(&self) -> bool {
        self.settle_seconds().is_none() && self.run_count() == 1
    }

    /// The settle window in seconds, `None` when there is none (absent or `0s`).
    pub fn settle_seconds(&self) -> Option<f64> {
        self.settle
            .as_ref()
            .map(|s| s.value.as_secs_f64())
            .filter(|s| *s > 0.0)
    }

    /// Runs of the workload per server start (1 unless `runs` says more).
    pub fn run_count(&self) -> u32 {
        self.runs.as_ref().map_or(1, |r| r.value)
    }
}
