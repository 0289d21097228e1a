//! Adaptive passes at run time: when a conditional pass (one beyond its block's `min`) comes
//! up in the seeded order, the passes of its point measured so far decide, through the
//! registry's [`PassRule`] (`cairn-kinds` gives the statistics of `cairn-analysis`), whether
//! it runs or is *not needed*.
//!
//! The order runs pass by pass (a block: one pass of every variant at every point), so when
//! pass p of a point is due, every earlier pass of every point has run, been served from the
//! store, or was itself not needed. A pass that is not needed is neither failed nor recorded:
//! its dependents see it as an input with no outputs ([`Done::not_needed`]), so an analysis
//! reads the passes that exist and its key changes exactly when that set does.

use std::sync::Arc;

use cairn_defs::figures::Figures;
use cairn_graph::{Step, StepGraph, StepId};
use cairn_store::Store;
use serde::Serialize;

use crate::execute::Done;

/// The output digest of a pass that was not needed: dependents' keys carry it in that
/// input's place, so the same set of measured passes gives the same key.
pub const NOT_NEEDED_DIGEST: &str = "not-needed";

/// One decision, as recorded (run summary, the pass's record `extra.adaptive`, events).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The pass decided on.
    pub step: String,
    /// The point: the variant at its matrix point.
    pub point: String,
    pub pass: u32,
    pub metric: String,
    /// Passes of the point measured so far (with the metric).
    pub passes: usize,
    /// Relative 95% CI half-width of the metric's mean at this moment, if estimable.
    pub ci_half_width: Option<f64>,
    pub until_ci: Option<f64>,
    /// Whether the pass runs.
    pub needed: bool,
    /// Why, in words (`cairn_analysis::adaptive::Why`).
    pub why: String,
}

impl Decision {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a decision serialises")
    }
}

/// The rule that decides whether a conditional pass runs: given the pass and the `metric`
/// of each earlier pass of its point (`None` for one not measured), its decision.
pub trait PassRule: Send + Sync {
    fn decide(&self, step: &Step, earlier: &[f64]) -> Decision;
}

/// Decides whether the conditional pass `step` runs, from the records of its point's
/// earlier passes in `done`, by the registry's rule. `None` when `step` is not conditional
/// (or there is no rule: every pass runs).
pub fn decide(
    store: &Store,
    rule: Option<&dyn PassRule>,
    graph: &StepGraph,
    step: &Step,
    done: &[Option<Arc<Done>>],
) -> Option<Decision> {
    let metric = &step.adaptive.as_ref()?.metric;
    decide_with(rule, graph, step, |id| {
        done[id]
            .as_deref()
            .and_then(|d| metric_of(store, d, metric))
    })
}

/// [`decide`] with the earlier passes' figures from `metric_of_pass` (a step id → its
/// `metric`, `None` for a pass not measured): the run asks its finished steps, `cairn plan`
/// the records its statuses found.
pub fn decide_with(
    rule: Option<&dyn PassRule>,
    graph: &StepGraph,
    step: &Step,
    metric_of_pass: impl Fn(StepId) -> Option<f64>,
) -> Option<Decision> {
    if !step.is_conditional() {
        return None;
    }
    let sample: Vec<f64> = earlier_passes(graph, step)
        .filter_map(|s| metric_of_pass(s.id))
        .collect();
    Some(rule?.decide(step, &sample))
}

/// The passes of `step`'s point before it.
pub fn earlier_passes<'g>(graph: &'g StepGraph, step: &'g Step) -> impl Iterator<Item = &'g Step> {
    let point = step.adaptive.as_ref().map(|a| a.point.as_str());
    graph.steps.iter().filter(move |s| {
        s.pass < step.pass && s.adaptive.as_ref().map(|a| a.point.as_str()) == point
    })
}

/// The `metric` figure of a finished trial, from its record; `None` for a pass that was
/// not needed, a record gone, or a trial without that figure.
fn metric_of(store: &Store, done: &Done, metric: &str) -> Option<f64> {
    if done.is_not_needed() {
        return None;
    }
    recorded_metric(store, &done.key, metric)
}

/// The `metric` figure of the trial record under `key`, if it has one.
pub fn recorded_metric(store: &Store, key: &str, metric: &str) -> Option<f64> {
    let record = store.get_record(key).ok()??;
    let figures: Figures = serde_json::from_value(record.extra.get("figures")?.clone()).ok()?;
    figures.get_named(metric)
}
