//! The time budget as people see it: the line `cairn plan` ends with, and the per-step
//! estimates the progress bar of `cairn run` counts its ETA down from
//! (`cairn_engine::budget` computes them).

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_engine::budget::{estimate, human, recorded_durations};
use cairn_engine::{RunOptions, Status, StepStatus};
use cairn_graph::StepGraph;
use cairn_store::Store;

/// `estimated wall time: ~4m 10s (8 steps from recorded times, 4 from declared durations);
/// up to ~6m 30s if every conditional pass runs` — `None` when nothing that will run has an
/// estimate of a second or more (a plan of quick commands, or everything cached).
pub fn plan_line(graph: &StepGraph, statuses: &[StepStatus], store: &Store) -> Option<String> {
    let will_run: Vec<bool> = statuses
        .iter()
        .map(|s| matches!(s.status, Status::Run | Status::Pending))
        .collect();
    let recorded = recorded_durations(store, &graph.study);
    let b = estimate(graph, &will_run, |s| recorded.get(&s.address).copied());
    // trials that end on a count and never ran take an unknown time, not none
    let counted = (b.counted > 0).then(|| {
        format!(
            "no estimate: ends on a count for {} trial(s) (scale, rounds) none of whose passes ran here yet",
            b.counted
        )
    });
    if b.at_most() < Duration::from_secs(1) {
        return counted.map(|c| format!("estimated wall time: {c}"));
    }
    let mut sources = vec![format!("{} from recorded times", b.recorded)];
    sources.push(format!("{} from declared durations", b.declared));
    if b.unknown > b.counted {
        sources.push(format!("{} without an estimate", b.unknown - b.counted));
    }
    sources.extend(counted);
    let mut line = format!(
        "estimated wall time: ~{} ({})",
        human(b.certain),
        sources.join(", ")
    );
    if b.conditional > Duration::ZERO {
        line.push_str(&format!(
            "; up to ~{} if every conditional pass runs",
            human(b.at_most())
        ));
    }
    Some(line)
}

/// The estimate of every selected step by address (cached ones are taken off as they are
/// served): what the progress bar's ETA counts down.
pub fn per_step(graph: &StepGraph, store: &Store, opts: &RunOptions) -> BTreeMap<String, Duration> {
    let selected = cairn_engine::run::selection(graph, &opts.only);
    let recorded = recorded_durations(store, &graph.study);
    estimate(graph, &selected, |s| recorded.get(&s.address).copied()).per_step
}
