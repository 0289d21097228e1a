//! The rule for conditional passes (`passes min max until-ci`): a pass beyond its block's
//! `min` runs while its point's 95% CI half-width of `metric`, relative to the mean, is above
//! `until-ci`, up to `max` — `cairn_analysis::adaptive::next_passes` on the passes so far.

use cairn_analysis::adaptive::{next_passes, Action, PassRule};
use cairn_engine::adaptive::Decision;
use cairn_graph::Step;

/// The precision rule of `passes min max until-ci`.
pub struct CiRule;

impl cairn_engine::adaptive::PassRule for CiRule {
    fn decide(&self, step: &Step, earlier: &[f64]) -> Decision {
        let rule = step
            .adaptive
            .as_ref()
            .expect("the engine asks only about conditional passes");
        let pass_rule = PassRule {
            min: rule.min as usize,
            max: rule.max as usize,
            until_ci: rule.until_ci,
        };
        let (needed, passes, ci_half_width, why) =
            match next_passes(&pass_rule, [(rule.point.as_str(), earlier)]) {
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
            needed,
            why,
        }
    }
}
