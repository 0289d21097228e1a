//! The rules for conditional passes (a pass beyond its block's `min`):
//! - `passes min max until-ci`: it runs while its point's 95% CI half-width of `metric`,
//!   relative to the mean, is above `until-ci` — `cairn_analysis::adaptive::next_passes` on
//!   the point's passes so far ([`CiRule`]);
//! - `passes min max until="decided"`: it runs while a question the plan's tables and claims
//!   ask at its matrix point is undecided at this look of the sequential design
//!   (`cairn_analysis::sequential`; [`crate::decided_rule`]).
//!
//! [`PassRules`] is the registry's rule: it hands each pass to the one its block asked for.

use cairn_analysis::adaptive::{next_passes, Action, PassRule};
use cairn_engine::adaptive::{earlier_passes, recorded_metric, Decision};
use cairn_engine::Env;
use cairn_graph::{Step, StepGraph, StepId};

/// The registry's pass rule: the block's own (`until-ci` or `until="decided"`).
#[derive(Default)]
pub struct PassRules {
    decided: crate::decided_rule::DecidedRule,
}

impl cairn_engine::adaptive::PassRule for PassRules {
    fn decide(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        step: &Step,
        record_key: &dyn Fn(StepId) -> Option<String>,
    ) -> Decision {
        if step.adaptive.as_ref().is_some_and(|a| a.until_decided) {
            self.decided.decide(env, graph, step, record_key)
        } else {
            CiRule.decide(env, graph, step, record_key)
        }
    }
}

/// The precision rule of `passes min max until-ci`.
pub struct CiRule;

impl cairn_engine::adaptive::PassRule for CiRule {
    fn decide(
        &self,
        env: &Env<'_>,
        graph: &StepGraph,
        step: &Step,
        record_key: &dyn Fn(StepId) -> Option<String>,
    ) -> Decision {
        let rule = step
            .adaptive
            .as_ref()
            .expect("the engine asks only about conditional passes");
        let earlier: Vec<f64> = earlier_passes(graph, step)
            .filter_map(|s| record_key(s.id))
            .filter_map(|key| recorded_metric(env.store, &key, &rule.metric))
            .collect();
        let pass_rule = PassRule {
            min: rule.min as usize,
            max: rule.max as usize,
            until_ci: rule.until_ci,
        };
        let (needed, passes, ci_half_width, why) =
            match next_passes(&pass_rule, [(rule.point.as_str(), &earlier[..])]) {
                Ok(d) => {
                    let d = &d[0];
                    (
                        d.action == Action::AnotherPass,
                        d.passes,
                        d.ci_half_width,
                        d.why.to_string(),
                    )
                }
                // a bad rule or a non-finite figure: measure rather than guess
                Err(e) => (
                    true,
                    earlier.len(),
                    None,
                    format!("no decision possible ({e})"),
                ),
            };
        Decision {
            step: step.address.clone(),
            point: rule.point.clone(),
            pass: step.pass,
            metric: rule.metric.clone(),
            passes,
            ci_half_width,
            until_ci: rule.until_ci,
            look: None,
            needed,
            why,
        }
    }
}
