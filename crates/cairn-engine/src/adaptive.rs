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
use crate::Env;

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
    /// Under `until="decided"`: the look of the sequential design the decision was made at
    /// ("look 3 of 9 (6 passes per side, nominal α 0.0027)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub look: Option<String>,
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

/// The rule that decides whether a conditional pass runs: given the pass and, for any
/// earlier step, the key of its record (`None` for one not measured, not needed or not
/// finished), its decision. A precision rule reads the point's own earlier passes; a rule
/// aimed at the plan's questions reads every trial its tables and claims compare.
pub trait PassRule: Send + Sync {
    fn decide(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        step: &Step,
        record_key: &dyn Fn(StepId) -> Option<String>,
    ) -> Decision;
}

/// Decides whether the conditional pass `step` runs, from the records of the steps finished
/// in `done`, by the registry's rule. `None` when `step` is not conditional (or there is no
/// rule: every pass runs).
pub fn decide(
    env: &Env<'_>,
    graph: &StepGraph,
    step: &Step,
    done: &[Option<Arc<Done>>],
) -> Option<Decision> {
    decide_with(env, graph, step, |id| {
        done[id]
            .as_deref()
            .filter(|d| !d.is_not_needed())
            .map(|d| d.key.clone())
    })
}

/// [`decide`] with the earlier steps' record keys from `record_key` (`None` for one not
/// measured): the run asks its finished steps, `cairn plan` the records its statuses found.
pub fn decide_with(
    env: &Env<'_>,
    graph: &StepGraph,
    step: &Step,
    record_key: impl Fn(StepId) -> Option<String>,
) -> Option<Decision> {
    if !step.is_conditional() {
        return None;
    }
    Some(env.kinds.pass_rule()?.decide(env, graph, step, &record_key))
}

/// The passes of `step`'s point before it.
pub fn earlier_passes<'g>(graph: &'g StepGraph, step: &'g Step) -> impl Iterator<Item = &'g Step> {
    let point = step.adaptive.as_ref().map(|a| a.point.as_str());
    graph.steps.iter().filter(move |s| {
        s.pass < step.pass && s.adaptive.as_ref().map(|a| a.point.as_str()) == point
    })
}

/// The `metric` figure of the trial record under `key`, if it has one.
pub fn recorded_metric(store: &Store, key: &str, metric: &str) -> Option<f64> {
    let record = store.get_record(key).ok()??;
    let figures: Figures = serde_json::from_value(record.extra.get("figures")?.clone()).ok()?;
    figures.get_named(metric)
}
