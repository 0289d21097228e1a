//! The report's words for a trials block's server lifecycle (`settle`, `runs`): what each
//! server start did before and during its runs, and whether its settle windows were idle —
//! a busy one is said, not hidden.

use cairn_report::document::Inline;
use serde_json::Value;

use crate::trial_points::TrialPoint;

/// `Each server start: 60 s idle to settle (idle in 4 of 5 starts; not idle at …: …), then
/// 3 runs back to back; a cell reads the median of a start's runs unless its table pivots
/// by run.` — `None` for a block of one run per start without a settle window.
pub fn lifecycle_words(trials: &[&TrialPoint]) -> Option<Inline> {
    let lifecycle = trials.iter().find_map(|t| t.lifecycle.clone())?;
    let mut parts = Vec::new();
    if let Some(s) = lifecycle.settle_s {
        let windows: Vec<&TrialPoint> = trials
            .iter()
            .copied()
            .filter(|t| t.settle.is_object())
            .collect();
        let busy: Vec<&TrialPoint> = windows
            .iter()
            .copied()
            .filter(|t| t.settle["idle"] == Value::Bool(false))
            .collect();
        let mut words = format!(
            "{} s idle to settle (idle in {} of {} starts",
            cairn_defs::value_text(&serde_json::json!(s)).unwrap_or_else(|| s.to_string()),
            windows.len() - busy.len(),
            windows.len()
        );
        if let Some(first) = busy.first() {
            words.push_str(&format!(
                "; not idle at {}: {}",
                first.address,
                first.settle["not_idle"].as_str().unwrap_or("busy")
            ));
        }
        words.push(')');
        parts.push(words);
    }
    let runs = lifecycle.run_count();
    if runs > 1 {
        parts.push(format!(
            "{runs} runs back to back; a cell reads the median of a start's runs unless its table pivots by `run`"
        ));
    }
    Some(Inline::plain(format!(
        "Each server start: {}.",
        parts.join(", then ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_defs::LifecycleDef;
    use serde_json::json;

    fn trial(address: &str, settle: Value) -> TrialPoint {
        TrialPoint {
            address: address.into(),
            lifecycle: LifecycleDef::of(Some(60.0), 3),
            settle,
            ..TrialPoint::default()
        }
    }

    fn text(i: &Inline) -> String {
        i.0.iter()
            .map(|p| match p {
                cairn_report::document::Span::Text(t)
                | cairn_report::document::Span::Code(t)
                | cairn_report::document::Span::Strong(t) => t.as_str(),
            })
            .collect()
    }

    #[test]
    fn a_busy_settle_is_said_beside_the_runs() {
        let idle = trial("trial/t/a#1", json!({"idle": true}));
        let busy = trial(
            "trial/t/a#2",
            json!({"idle": false, "not_idle": "it used 12.0% of a CPU"}),
        );
        let words = text(&lifecycle_words(&[&idle, &busy]).unwrap());
        assert_eq!(
            words,
            "Each server start: 60 s idle to settle (idle in 1 of 2 starts; not idle at trial/t/a#2: it used 12.0% of a CPU), then 3 runs back to back; a cell reads the median of a start's runs unless its table pivots by `run`."
        );
        let plain = TrialPoint::default();
        assert!(lifecycle_words(&[&plain]).is_none());
    }
}
