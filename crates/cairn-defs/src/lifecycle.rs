//! What a trial does on its one server start besides the workload: an idle settle window
//! after the server is ready, and how many runs of the workload go back to back on it.

use serde::{Deserialize, Serialize};

/// The pseudo-parameter naming one run of a trial with [`LifecycleDef::runs`] (1-based): a
/// dimension of the analyses, never a workload parameter.
pub const RUN: &str = "run";

/// A trial's server lifecycle (`settle`, `runs` of its trials block). Absent from a trial's
/// definition when the block declares neither, so every other trial keeps its key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LifecycleDef {
    /// Seconds the server sits idle after it is ready, before the first run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    /// Runs of the workload on the one server start (absent: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
}

impl LifecycleDef {
    /// The definition of `settle_s` seconds of settling (0: none) and `runs` runs; `None`
    /// when that is the default lifecycle (no settle, one run).
    pub fn of(settle_s: Option<f64>, runs: u32) -> Option<LifecycleDef> {
        let def = LifecycleDef {
            settle_s: settle_s.filter(|s| *s > 0.0),
            runs: (runs > 1).then_some(runs),
        };
        (def != LifecycleDef::default()).then_some(def)
    }

    /// Runs per server start (1 unless more are declared).
    pub fn run_count(&self) -> u32 {
        self.runs.unwrap_or(1).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_lifecycle_is_no_definition() {
        assert_eq!(LifecycleDef::of(None, 1), None);
        assert_eq!(LifecycleDef::of(Some(0.0), 1), None);
        let d = LifecycleDef::of(Some(60.0), 1).unwrap();
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            serde_json::json!({"settle_s": 60.0})
        );
        let d = LifecycleDef::of(None, 3).unwrap();
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            serde_json::json!({"runs": 3})
        );
        assert_eq!(d.run_count(), 3);
    }
}
