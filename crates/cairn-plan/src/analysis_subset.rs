//! The subset of trials an analysis reads (`servers "a" "b"`, `where threads=8`, `exclude
//! threads=64 server="pg"`): which trials it keeps, and the check that every server,
//! parameter and value it names is one its trials have.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::{did_you_mean, problem, Reporter};
use crate::model::{Analysis, Plan, Sp, Value};

/// The pseudo-parameter of an `exclude` that names a server.
const SERVER: &str = "server";
/// The pseudo-parameter of a run of a trials block with `runs N` (1..=N).
const RUN: &str = cairn_defs::lifecycle::RUN;

impl Analysis {
    /// True when the analysis reads the trial of `server` at `params` (its point): the server
    /// is one of `servers` (when given), the point has every `where` value, and no `exclude`
    /// matches it. Values compare as written (`8` and `"8"` are the same point).
    pub fn reads(&self, server: &str, params: &BTreeMap<String, Value>) -> bool {
        // one trial holds every run of its server start: `where run=…` keeps it and
        // `exclude run=…` drops none of it (the analysis picks the runs it reads)
        let has_in = |key: &str, want: &Value, runs_match: bool| {
            if key == RUN {
                return runs_match;
            }
            if key == SERVER && !params.contains_key(SERVER) {
                return want.to_string() == server;
            }
            params
                .get(key)
                .is_some_and(|v| v.to_string() == want.to_string())
        };
        (self.servers.is_empty() || self.servers.iter().any(|s| s.value == server))
            && self.filter.iter().all(|(k, v)| has_in(k, &v.value, true))
            && !self
                .exclude
                .iter()
                .any(|cell| cell.iter().all(|(k, v)| has_in(k, &v.value, false)))
    }

    /// True when the analysis reads a subset of its trials rather than all of them.
    pub fn is_subset(&self) -> bool {
        !(self.servers.is_empty() && self.filter.is_empty() && self.exclude.is_empty())
    }
}

/// What the trials an analysis reads have: their servers and each parameter's values.
#[derive(Default)]
struct Dimensions {
    servers: BTreeSet<String>,
    /// In the order the workloads list them.
    params: BTreeMap<String, Vec<String>>,
}

fn dimensions(plan: &Plan, a: &Analysis) -> Dimensions {
    let mut d = Dimensions::default();
    let reads = |name: &str| a.trials.is_empty() || a.trials.iter().any(|t| t.value == name);
    for t in plan.trials.iter().filter(|t| reads(&t.name.value)) {
        d.servers.extend(t.servers.iter().map(|s| s.value.clone()));
        let runs = t.lifecycle.run_count();
        if runs > 1 {
            let values = d.params.entry(RUN.to_string()).or_default();
            for run in 1..=runs {
                if !values.contains(&run.to_string()) {
                    values.push(run.to_string());
                }
            }
        }
        for (name, vs) in t.axes(plan) {
            let values = d.params.entry(name.to_string()).or_default();
            for v in vs {
                let v = v.value.to_string();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
        }
    }
    d
}

/// Refuses, at its place, a server, parameter or value of an analysis's subset that none of
/// the trials it reads has: it would select nothing, or not what the plan means.
pub(crate) fn check(plan: &Plan, r: &mut Reporter) {
    for a in plan.analyses.iter().filter(|a| a.is_subset()) {
        let d = dimensions(plan, a);
        let name = &a.name.value;
        for s in &a.servers {
            check_server(name, &s.value, s.loc, &d, r);
        }
        for (k, v) in a.filter.iter().chain(a.exclude.iter().flatten()) {
            if k == SERVER && !d.params.contains_key(SERVER) {
                check_server(name, &v.value.to_string(), v.loc, &d, r);
            } else {
                check_param(name, k, v, &d, r);
            }
        }
    }
}

fn check_server(analysis: &str, server: &str, loc: crate::Loc, d: &Dimensions, r: &mut Reporter) {
    if d.servers.contains(server) {
        return;
    }
    let known: Vec<&str> = d.servers.iter().map(String::as_str).collect();
    r.push(
        problem(
            "unknown_reference",
            format!("analysis `{analysis}` reads no server `{server}`"),
        )
        .label(loc, "not a server of its trials")
        .help_opt(did_you_mean(server, known.iter().copied()))
        .help(format!("its trials measure {}", known.join(", "))),
    );
}

fn check_param(analysis: &str, key: &str, value: &Sp<Value>, d: &Dimensions, r: &mut Reporter) {
    let Some(values) = d.params.get(key) else {
        let mut known: Vec<&str> = d.params.keys().map(String::as_str).collect();
        known.push(SERVER);
        r.push(
            problem(
                "unknown_reference",
                format!("the trials of analysis `{analysis}` have no parameter `{key}`"),
            )
            .label(value.loc, "not a parameter of its trials")
            .help_opt(did_you_mean(key, known.iter().copied()))
            .help(format!("they have {}", known.join(", "))),
        );
        return;
    };
    let v = value.value.to_string();
    if values.contains(&v) {
        return;
    }
    let known: Vec<&str> = values.iter().map(String::as_str).collect();
    r.push(
        problem(
            "bad_value",
            format!("no trial of analysis `{analysis}` has {key} = {v}"),
        )
        .label(value.loc, "no trial at this value")
        .help(format!("its trials have {key} = {}", known.join(", "))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(body: &str) -> Analysis {
        let text = format!(
            r#"image "i" {{ debian suite="bookworm"; packages "mariadb-server" }}
server "a" {{ image "i" }}
server "b" {{ image "i" }}
workload "w" {{ sysbench "oltp_read_only"; threads 1 8 64 }}
trials "t" {{ servers "a" "b"; workload "w" }}
analysis "x" {{ {body}; table metric="tps" }}"#
        );
        let plan =
            crate::parse_str("x.kdl", &text).unwrap_or_else(|e| panic!("{}", crate::render(&e)));
        plan.analyses[0].clone()
    }

    fn at(threads: i64) -> BTreeMap<String, Value> {
        BTreeMap::from([("threads".to_string(), Value::Int(threads))])
    }

    #[test]
    fn keeps_the_servers_and_values_it_names_and_drops_excluded_cells() {
        let a = analysis(r#"servers "a""#);
        assert!(a.is_subset());
        assert!(a.reads("a", &at(1)) && !a.reads("b", &at(1)));
        let a = analysis("where threads=8");
        assert!(a.reads("b", &at(8)) && !a.reads("b", &at(64)));
        // a value written as a string is the same point
        assert!(analysis(r#"where threads="8""#).reads("a", &at(8)));
        let a = analysis(r#"exclude threads=64 server="b"; exclude threads=1"#);
        assert!(a.reads("a", &at(64)) && !a.reads("b", &at(64)));
        assert!(!a.reads("a", &at(1)) && a.reads("b", &at(8)));
    }

    #[test]
    fn an_analysis_without_a_subset_reads_every_trial() {
        let plan = crate::parse_str(
            "x.kdl",
            r#"workload "w" { sysbench "oltp_read_only"; threads 1 }
analysis "x" { table metric="tps" }"#,
        );
        let a = &plan.expect("parses").analyses[0];
        assert!(!a.is_subset() && a.reads("any", &at(1)));
    }
}
