//! The JSON lines `cairn --json` prints, and the event stream of `cairn --json run` with
//! look-ups by event kind and the final summary.

use std::collections::BTreeSet;

use serde_json::Value;

/// Every non-empty line of `s` parsed as JSON; panics naming the line that is not.
pub fn parse_json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

/// The event stream of one `cairn --json run`.
#[derive(Debug, Clone)]
pub struct Events(pub Vec<Value>);

impl Events {
    /// Addresses of every event of this kind (`step_finished`, `step_cached`, …).
    pub fn addresses(&self, event: &str) -> BTreeSet<String> {
        self.0
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| e["step"].as_str().expect("event has a step").to_string())
            .collect()
    }

    pub fn finished(&self) -> BTreeSet<String> {
        self.addresses("step_finished")
    }

    pub fn cached(&self) -> BTreeSet<String> {
        self.addresses("step_cached")
    }

    pub fn failed(&self) -> BTreeSet<String> {
        self.addresses("step_failed")
    }

    pub fn skipped(&self) -> BTreeSet<String> {
        self.addresses("step_skipped")
    }

    pub fn of(&self, event: &str) -> Vec<&Value> {
        self.0.iter().filter(|e| e["event"] == event).collect()
    }

    /// The `error` of the first `step_failed` event.
    #[track_caller]
    pub fn first_error(&self) -> String {
        let failed = self.of("step_failed");
        let first = failed
            .first()
            .unwrap_or_else(|| panic!("a step_failed event in {:?}", self.0));
        first["error"].as_str().unwrap_or_default().to_string()
    }

    /// The `summary` object of the final `run_finished` event.
    #[track_caller]
    /// The run summary: the engine's last event, `run_finished`; after it the CLI prints
    /// only the run's measuring share (`efficiency`, when something measured).
    pub fn summary(&self) -> &Value {
        let at = self
            .0
            .iter()
            .rposition(|e| e["event"] == "run_finished")
            .unwrap_or_else(|| panic!("no run_finished event: {:?}", self.0.last()));
        for after in &self.0[at + 1..] {
            assert_eq!(after["event"], "efficiency", "after run_finished: {after}");
        }
        &self.0[at]["summary"]
    }

    #[track_caller]
    pub fn count(&self, field: &str) -> u64 {
        self.summary()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("summary.{field} is a number: {}", self.summary()))
    }
}
