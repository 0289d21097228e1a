//! The `cpus` factor of a trials block (`cpus 1 2 cores="0,2"`) as the rest of the plan
//! sees it: a parameter of the block's trials named [`FACTOR`] (addresses, tables, `where`,
//! `x=`, claims), never the workload's; and the whole-plan rule that a server measured
//! under the factor has no fixed cpuset of its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnostics::{problem, Reporter};
use crate::model::{Plan, Trials, Value};

/// The parameter name the factor's values have in a trial's point (`trial/t/s[cpus=2]`).
pub const FACTOR: &str = "cpus";

/// The property of a block's `cpus` that says where its clients run (`cpus 1 2
/// clients="with-server"`); never the name of a set of CPUs.
pub const CLIENTS: &str = "clients";

/// Where a block's clients run under the `cpus` factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientCpus {
    /// `clients="rest"` (the default): on the CPUs the server does not get; only when none
    /// are left do they share the server's.
    Rest,
    /// `clients="with-server"`: on the server's own CPUs, the whole benchmark on N CPUs (as a
    /// machine with CPUs switched off, or hyper-threading off, runs it).
    WithServer,
}

impl ClientCpus {
    /// Every value, as a plan writes it.
    pub const WORDS: &'static [&'static str] = &["rest", "with-server"];

    /// The value a plan writes as `word`, if any.
    pub fn from_word(word: &str) -> Option<ClientCpus> {
        match word {
            "rest" => Some(ClientCpus::Rest),
            "with-server" => Some(ClientCpus::WithServer),
            _ => None,
        }
    }
}

/// One value of the factor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuChoice {
    /// `cpus 2`: that many of the measuring machine's CPUs (the first ones).
    Count(u32),
    /// `cpus cores="0,2"`: exactly these CPUs (a cpuset), under a name: the trial's point
    /// and tables show the name (a cpuset's commas would split an address), its key holds
    /// the CPUs.
    Set { name: String, cpus: String },
}

impl CpuChoice {
    /// Its value as a parameter of the trial: the count, or the set's name.
    pub fn value(&self) -> Value {
        match self {
            CpuChoice::Count(n) => Value::Int(i64::from(*n)),
            CpuChoice::Set { name, .. } => Value::String(name.clone()),
        }
    }
}

/// Whether block `t`'s clients run on its server's CPUs (`clients="with-server"`).
pub fn clients_with_server(t: &Trials) -> bool {
    t.cpus_clients
        .as_ref()
        .is_some_and(|c| c.value == ClientCpus::WithServer)
}

/// The factor's values as plan values, in the order the block lists them; empty when the
/// block has no `cpus`.
pub fn values(t: &Trials) -> Vec<Value> {
    t.cpus.iter().map(|c| c.value.value()).collect()
}

/// Every point of `workload_points` once per value of the factor (the factor varies fastest,
/// so one workload point's counts are neighbours); the points unchanged without the factor.
pub fn with_factor(
    t: &Trials,
    workload_points: Vec<BTreeMap<String, Value>>,
) -> Vec<BTreeMap<String, Value>> {
    let choices = values(t);
    if choices.is_empty() {
        return workload_points;
    }
    workload_points
        .into_iter()
        .flat_map(|p| {
            choices.iter().map(move |c| {
                let mut q = p.clone();
                q.insert(FACTOR.to_string(), c.clone());
                q
            })
        })
        .collect()
}

/// The factor's value block `t` measures at a trial's point, with its place in the plan.
pub fn choice_at<'t>(
    t: &'t Trials,
    point: &BTreeMap<String, Value>,
) -> Option<&'t crate::model::Sp<CpuChoice>> {
    let v = point.get(FACTOR)?;
    t.cpus.iter().find(|c| &c.value.value() == v)
}

/// A server measured under the factor gets its cpuset from the factor: a fixed `cpus "0-1"`
/// of its own would contradict it. Refused at the server's `cpus`, after `extends` merged
/// parents (so an inherited one is refused too).
pub(crate) fn check(plan: &Plan, r: &mut Reporter) {
    for t in plan.trials.iter().filter(|t| !t.cpus.is_empty()) {
        for name in &t.servers {
            let Some(server) = plan.servers.iter().find(|s| s.name.value == name.value) else {
                continue;
            };
            let Some(set) = &server.cpus else { continue };
            let p = problem(
                "conflict",
                format!(
                    "server `{}` has its own cpuset `{}`, and trials `{}` chooses its CPUs (`cpus`)",
                    name.value, set.value, t.name.value
                ),
            )
            .label(set.loc, "a fixed cpuset")
            .label(t.cpus[0].loc, "the trials' `cpus` factor")
            .help("drop the server's `cpus` (the factor chooses its CPUs), or the trials' `cpus`");
            r.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "a" { image "i" }
workload "w" { sysbench "oltp_read_only"; threads 1 8 }
"#;

    fn parse(rest: &str) -> Result<Plan, String> {
        crate::parse_str("x.kdl", &format!("{HEAD}{rest}")).map_err(|e| crate::render(&e))
    }

    #[test]
    fn counts_parse_in_order_and_the_plan_without_them_has_none() {
        let plan = parse(r#"trials "t" { servers "a"; workload "w"; cpus 2 1 }"#).unwrap();
        let t = &plan.trials[0];
        assert_eq!(values(t), vec![Value::Int(2), Value::Int(1)]);
        let plan = parse(r#"trials "t" { servers "a"; workload "w" }"#).unwrap();
        assert!(plan.trials[0].cpus.is_empty());
        // a block without the factor serialises as before (the parse cache's form)
        let json = serde_json::to_value(&plan.trials[0]).unwrap();
        assert!(json.get("cpus").is_none());
    }

    #[test]
    fn clients_with_the_server_is_a_setting_not_a_set() {
        let plan =
            parse(r#"trials "t" { servers "a"; workload "w"; cpus 1 2 clients="with-server" }"#)
                .unwrap();
        let t = &plan.trials[0];
        assert_eq!(values(t), vec![Value::Int(1), Value::Int(2)]);
        assert!(clients_with_server(t));
        let plan =
            parse(r#"trials "t" { servers "a"; workload "w"; cpus 1 clients="rest" }"#).unwrap();
        assert!(!clients_with_server(&plan.trials[0]));
        // without the setting a block serialises as before (the parse cache's form)
        let plan = parse(r#"trials "t" { servers "a"; workload "w"; cpus 1 }"#).unwrap();
        let json = serde_json::to_value(&plan.trials[0]).unwrap();
        assert!(json.get("cpus_clients").is_none());
    }

    #[test]
    fn every_word_the_reference_lists_reads_as_a_placement() {
        for word in ClientCpus::WORDS {
            assert!(ClientCpus::from_word(word).is_some(), "{word}");
        }
    }

    #[test]
    fn bad_counts_are_refused_at_their_value() {
        for (bad, says) in [
            ("cpus 0", "at least 1"),
            ("cpus 1 1", "lists 1 twice"),
            ("cpus \"0-1\"", "name the set: `cpus cores=\"0-1\"`"),
            ("cpus a=\"0,1\" b=\"0,1\"", "lists the set \"0,1\" twice"),
            ("cpus a=\"first\"", "not a cpuset"),
            ("cpus \"2\"=\"0\"", "reads as a number"),
            ("cpus \"a,b\"=\"0\"", "cannot name a set of CPUs"),
            ("cpus 100000", "too large"),
            ("cpus", "at least one number"),
            (
                "cpus 1 clients=\"0\"",
                "`clients` says where the clients run",
            ),
            ("cpus clients=\"with-server\"", "at least one number"),
        ] {
            let e = parse(&format!(
                r#"trials "t" {{ servers "a"; workload "w"; {bad} }}"#
            ))
            .expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_servers_bare_number_is_ambiguous_and_a_cpuset_string_is_not() {
        let text = r#"server "b" { image "i"; cpus 2 }"#;
        let e = parse(text).expect_err("a bare number");
        assert!(e.contains("ambiguous"), "{e}");
        assert!(e.contains("cpus \"2\""), "{e}");
        let plan = parse(r#"server "b" { image "i"; cpus "0-1" }"#).unwrap();
        let b = plan.servers.iter().find(|s| s.name.value == "b").unwrap();
        assert_eq!(b.cpus.as_ref().unwrap().value, "0-1");
    }

    #[test]
    fn a_server_with_its_own_cpuset_is_refused_under_the_factor_also_inherited() {
        let e = parse(
            r#"server "p" { image "i"; cpus "0" }
server "c" { extends "p" }
trials "t" { servers "c"; workload "w"; cpus 1 }"#,
        )
        .expect_err("a cpuset under the factor");
        assert!(e.contains("has its own cpuset"), "{e}");
    }

    #[test]
    fn the_factor_multiplies_points_fastest_and_is_a_parameter_to_select() {
        let plan = parse(
            r#"trials "t" { servers "a"; workload "w"; cpus 1 2 }
analysis "x" { where cpus=2; table metric="tps" }
analysis "y" { where threads=8; scaling metric="tps" x="cpus" }"#,
        )
        .unwrap();
        let t = &plan.trials[0];
        let p = |threads: i64| BTreeMap::from([("threads".to_string(), Value::Int(threads))]);
        let points = with_factor(t, vec![p(1), p(8)]);
        let shown: Vec<(Option<Value>, i64)> = points
            .iter()
            .map(|q| {
                (
                    choice_at(t, q).map(|c| c.value.value()),
                    match q["threads"] {
                        Value::Int(n) => n,
                        _ => 0,
                    },
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (Some(Value::Int(1)), 1),
                (Some(Value::Int(2)), 1),
                (Some(Value::Int(1)), 8),
                (Some(Value::Int(2)), 8)
            ]
        );
        // no factor: the points as they were
        let plain = parse(r#"trials "t" { servers "a"; workload "w" }"#).unwrap();
        assert_eq!(with_factor(&plain.trials[0], vec![p(1)]), vec![p(1)]);
        // a count the block does not measure selects nothing: refused
        let e = parse(
            r#"trials "t" { servers "a"; workload "w"; cpus 1 2 }
analysis "x" { where cpus=4; table metric="tps" }"#,
        )
        .expect_err("no trial at cpus=4");
        assert!(e.contains("cpus = 4"), "{e}");
    }

    #[test]
    fn named_sets_are_values_by_name_beside_the_counts() {
        let plan = parse(
            r#"trials "t" { servers "a"; workload "w"; cpus 1 siblings="0-1" cores="0,2" }
analysis "x" { where cpus="cores"; table metric="tps" }"#,
        )
        .unwrap();
        let t = &plan.trials[0];
        assert_eq!(
            values(t),
            [
                Value::Int(1),
                Value::String("siblings".into()),
                Value::String("cores".into())
            ]
        );
        let at = BTreeMap::from([(FACTOR.to_string(), Value::String("cores".into()))]);
        assert_eq!(
            choice_at(t, &at).unwrap().value,
            CpuChoice::Set {
                name: "cores".into(),
                cpus: "0,2".into()
            }
        );
    }

    #[test]
    fn the_factor_counts_in_the_expansion_limit() {
        let plan = parse(r#"trials "t" { servers "a"; workload "w"; cpus 1 2 3 }"#).unwrap();
        let e = crate::limits::trials_expansion(&plan.trials[0], Some(&plan.workloads[0]));
        assert_eq!(e.steps, 6);
        assert!(e.breakdown().contains("3 CPU counts"), "{}", e.breakdown());
    }
}
