//! A trials block's `tie "threads" to="cpus" times=2`: of the block's points (its workload's
//! matrix times its factors) only those where one axis's value is a whole multiple of
//! another's are measured — a client count tied to the server's CPUs instead of crossed with
//! them. The graph drops the other points before anything is keyed, so a block without a
//! tie resolves as before.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnostics::{did_you_mean, problem, Reporter};
use crate::model::{Plan, Sp, Trials, Value};

/// `tie "axis" to="other" times=N`: `axis = N × other` at every point measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tie {
    /// The axis whose value follows (`threads`).
    pub axis: Sp<String>,
    /// The axis it follows (`cpus`).
    pub to: Sp<String>,
    /// The multiple (`times=2`: two client threads per CPU); 1 when not given.
    pub times: i64,
}

impl Tie {
    /// Whether `point` is one this tie keeps: both values whole numbers, `axis = times × to`.
    pub fn keeps(&self, point: &BTreeMap<String, Value>) -> bool {
        match (point.get(&self.axis.value), point.get(&self.to.value)) {
            (Some(Value::Int(a)), Some(Value::Int(b))) => *a == self.times * b,
            _ => false,
        }
    }
}

/// Whether block `t` measures `point`: every tie of the block keeps it.
pub fn keeps(t: &Trials, point: &BTreeMap<String, Value>) -> bool {
    t.ties.iter().all(|tie| tie.keeps(point))
}

/// Refuses, at its place, a tie that names no axis of its block, ties an axis to itself or
/// twice, ties values that are not whole numbers, or leaves a value of either axis without a
/// partner (that value would silently never be measured).
pub(crate) fn check(plan: &Plan, r: &mut Reporter) {
    for t in plan.trials.iter().filter(|t| !t.ties.is_empty()) {
        let axes = t.axes(plan);
        let names: Vec<&str> = axes.iter().map(|(n, _)| *n).collect();
        let values_of = |name: &Sp<String>, r: &mut Reporter| -> Option<Vec<Sp<Value>>> {
            let found = axes.iter().find(|(n, _)| *n == name.value).map(|(_, v)| v);
            if found.is_none() {
                r.push(
                    problem(
                        "unknown_reference",
                        format!(
                            "trials `{}`: `tie` names `{}`, which is not a parameter of its trials",
                            t.name.value, name.value
                        ),
                    )
                    .label(name.loc, "not a parameter here")
                    .help_opt(did_you_mean(&name.value, names.iter().copied()))
                    .help(format!("its trials' parameters: {}", names.join(", "))),
                );
            }
            found.cloned()
        };
        for (i, tie) in t.ties.iter().enumerate() {
            if tie.axis.value == tie.to.value {
                r.push(
                    problem(
                        "invalid",
                        format!("`tie` ties `{}` to itself", tie.axis.value),
                    )
                    .label(tie.to.loc, "the same axis")
                    .help("tie one axis to another: `tie \"threads\" to=\"cpus\"`"),
                );
                continue;
            }
            if let Some(first) = t.ties[..i].iter().find(|f| f.axis.value == tie.axis.value) {
                r.push(
                    problem("duplicate", format!("`{}` is tied twice", tie.axis.value))
                        .label(tie.axis.loc, "tied again here")
                        .label(first.axis.loc, "first tied here"),
                );
                continue;
            }
            let (Some(a), Some(b)) = (values_of(&tie.axis, r), values_of(&tie.to, r)) else {
                continue;
            };
            let whole = |vs: &[Sp<Value>], name: &str, r: &mut Reporter| {
                let bad: Vec<&Sp<Value>> = vs
                    .iter()
                    .filter(|v| !matches!(v.value, Value::Int(_)))
                    .collect();
                for v in &bad {
                    r.push(
                        problem(
                            "wrong_type",
                            format!(
                                "`tie` compares whole numbers; `{name}` = {} is not one",
                                v.value
                            ),
                        )
                        .label(v.loc, "not a whole number"),
                    );
                }
                bad.is_empty()
            };
            if !(whole(&a, &tie.axis.value, r) & whole(&b, &tie.to.value, r)) {
                continue;
            }
            let int = |v: &Sp<Value>| match v.value {
                Value::Int(i) => i,
                _ => unreachable!("checked above"),
            };
            for v in &a {
                if !b.iter().any(|w| int(v) == tie.times * int(w)) {
                    r.push(unpartnered(tie, &tie.axis.value, v, &tie.to.value));
                }
            }
            for w in &b {
                if !a.iter().any(|v| int(v) == tie.times * int(w)) {
                    r.push(unpartnered(tie, &tie.to.value, w, &tie.axis.value));
                }
            }
        }
    }
}

fn unpartnered(tie: &Tie, name: &str, v: &Sp<Value>, other: &str) -> crate::diagnostics::P {
    let rule = if tie.times == 1 {
        format!("{} = {}", tie.axis.value, tie.to.value)
    } else {
        format!("{} = {} × {}", tie.axis.value, tie.times, tie.to.value)
    };
    problem(
        "invalid",
        format!(
            "`{name}` = {} has no value of `{other}` it is tied to ({rule}): it would never be measured",
            v.value
        ),
    )
    .label(v.loc, "never measured under the tie")
    .label(tie.axis.loc, "tied here")
    .help(format!("list values that pair up under {rule}, or drop this one"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Loc, SourceId};

    fn sp(s: &str) -> Sp<String> {
        Sp::new(
            s.to_string(),
            Loc {
                source: SourceId(0),
                span: (0, 0).into(),
            },
        )
    }

    #[test]
    fn a_tie_keeps_the_points_where_one_axis_is_a_multiple_of_the_other() {
        let tie = Tie {
            axis: sp("threads"),
            to: sp("cpus"),
            times: 2,
        };
        let point = |threads: i64, cpus: Value| {
            BTreeMap::from([
                ("threads".to_string(), Value::Int(threads)),
                ("cpus".to_string(), cpus),
            ])
        };
        assert!(tie.keeps(&point(4, Value::Int(2))));
        assert!(!tie.keeps(&point(2, Value::Int(2))));
        assert!(!tie.keeps(&point(4, Value::String("cores".into()))));
    }
}
