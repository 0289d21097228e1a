//! `cairn history PLAN`: every earlier result of each table cell on this machine's class.
//! The store keeps every result a study's trials ever had. A cell is a trial point of the
//! plan (its address without the pass), whatever its definition was: after a release the
//! same point has another key — the archive served other packages under the same recipe
//! (the same *definition key*), or the plan bumped the image (another definition key).
//! A record belongs to a point by content, not by the study that made it: its key is the
//! point's current key, or its definition key is the point's (another plan with the same
//! trials — `release.kdl` shares the quickstart's — made it); or, by name, the plan's own
//! study recorded it at that point under an earlier definition.
//! Records of one point measured on this fingerprint are grouped into result sets by their
//! definition (server and workload) and what they ran on (their inputs' output digests:
//! image and dataset),
//! dated by their last finish, labelled with the server version the trial verified, and
//! each set is compared with the one before it.
//!
//! The rule for "beyond the noise": a change is flagged when `cairn_analysis::compare` of
//! the two sets (the earlier one the baseline) gives a significant verdict — the rank test
//! below α = 0.05 *and* the 95% bootstrap CI of the ratio of medians excluding 1, in the
//! same direction. Both must agree because either alone is fooled by a few noisy passes; it
//! is the rule of the study's own tables, so history and report never disagree. With too
//! few passes (3 vs 3 cannot reach p < 0.05) the change is "inconclusive", never flagged.
//!
//! `--fail-on slower` (`faster`, `change`) makes it a regression check, like `asv
//! continuous`: the exit code is 1 when the newest result set of any cell is flagged that
//! way against the one before it, and the cells are named on stderr.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use cairn_analysis::{Criteria, Verdict};
use cairn_graph::{StepGraph, StepKind};
use cairn_kinds::trial_points::point_of;
use cairn_store::Record;
use serde_json::{json, Value};

use crate::args::{Cli, FailOn};
use crate::context::{self, Exit};
use crate::{FAILED, OK};

/// One result set of one cell.
struct Set {
    finished: String,
    version: String,
    values: Vec<f64>,
}

fn figure(r: &Record, name: &str) -> Option<f64> {
    r.extra.get("figures")?.get(name)?.as_f64()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The plan's trial points, and how a record is known to be one of them.
struct PlanPoints {
    names: BTreeSet<String>,
    /// A trial's current key here → its point.
    by_key: HashMap<String, String>,
    /// A trial's definition key → its point.
    by_definition: HashMap<String, String>,
}

impl PlanPoints {
    fn new(graph: &StepGraph, statuses: &[cairn_engine::StepStatus]) -> PlanPoints {
        let mut points = PlanPoints {
            names: BTreeSet::new(),
            by_key: HashMap::new(),
            by_definition: HashMap::new(),
        };
        for s in graph.steps.iter().filter(|s| s.kind == StepKind::TRIAL) {
            let point = point_of(&s.address).to_string();
            if let Some(k) = &statuses[s.id].key {
                points.by_key.insert(k.clone(), point.clone());
            }
            if !s.definition_key.is_empty() {
                points
                    .by_definition
                    .insert(s.definition_key.clone(), point.clone());
            }
            points.names.insert(point);
        }
        points
    }

    /// The point of the plan (of `study`) that record `r` is a result of, if any: by its
    /// key, by its definition key, else by its study and address.
    fn of(&self, study: &str, r: &Record) -> Option<String> {
        if let Some(p) = self.by_key.get(&r.key) {
            return Some(p.clone());
        }
        if let Some(p) = self.by_definition.get(&r.definition_key) {
            return Some(p.clone());
        }
        let point = point_of(&r.address);
        (r.study == study && self.names.contains(point)).then(|| point.to_string())
    }
}

/// Whether `verdict` is a change `fail_on` fails on.
fn fails(fail_on: FailOn, verdict: Verdict) -> bool {
    let slower = matches!(verdict, Verdict::Slower | Verdict::Lower);
    let faster = matches!(verdict, Verdict::Faster | Verdict::Higher);
    match fail_on {
        FailOn::Slower => slower,
        FailOn::Faster => faster,
        FailOn::Change => slower || faster,
    }
}

pub fn history(cli: &Cli, path: &Path, metric: &str, fail_on: Option<FailOn>) -> Result<i32, Exit> {
    let cache = context::cache_dir(cli.cache.as_deref());
    let (_plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(cache);
    let class = machine.fingerprint(&graph);
    let fp = serde_json::to_value(&class).expect("serialises");
    let points = PlanPoints::new(
        &graph,
        &cairn_engine::statuses(&graph, &machine.env(&graph, &store, &class), &[], false),
    );
    let keys = store.record_keys().map_err(context::fail(crate::FAILED))?;
    // the plan's trials measured here, by point (address without the pass)
    let mut by_point: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for r in store.get_records(&keys).into_iter().flatten().flatten() {
        if r.kind != "trial" || r.fingerprint.as_ref() != Some(&fp) {
            continue;
        }
        if let Some(point) = points.of(&graph.study, &r) {
            by_point.entry(point).or_default().push(r);
        }
    }
    // point → result set (its definition and inputs) → set
    let mut cells: BTreeMap<String, BTreeMap<String, Set>> = BTreeMap::new();
    for point in &points.names {
        for r in by_point.get(point).into_iter().flatten() {
            let Some(v) = figure(r, metric) else { continue };
            // a set: one definition (server and workload: the pass is not in it) on one
            // set of inputs
            let inputs = format!(
                "{} {}",
                serde_json::to_string(&r.definition).expect("serialises"),
                serde_json::to_string(&r.inputs).expect("serialises")
            );
            let version = r
                .extra
                .get("variant")
                .and_then(|v| {
                    v.get("checks")
                        .and_then(|c| c.get("version"))
                        .or(v.get("version"))
                })
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let set = cells
                .entry(point.clone())
                .or_default()
                .entry(inputs)
                .or_insert(Set {
                    finished: String::new(),
                    version,
                    values: Vec::new(),
                });
            set.values.push(v);
            if r.finished > set.finished {
                set.finished = r.finished.clone();
            }
        }
    }
    let direction = cairn_defs::figures::lookup(metric)
        .map_or(cairn_defs::figures::Direction::Neither, |f| f.direction);
    let mut out = Vec::new();
    // the cells whose newest result set is flagged the way `fail_on` fails on
    let mut failing: Vec<String> = Vec::new();
    for (point, sets) in cells {
        let mut sets: Vec<Set> = sets.into_values().collect();
        sets.sort_by(|a, b| a.finished.cmp(&b.finished));
        let mut prev: Option<&Set> = None;
        let mut rows = Vec::new();
        let newest = sets.len().saturating_sub(1);
        for (i, s) in sets.iter().enumerate() {
            let change = prev.map(|p| {
                match cairn_analysis::compare(&p.values, &s.values, direction, &Criteria::default())
                {
                    Ok(c) => {
                        let flagged = !matches!(
                            c.verdict,
                            Verdict::Inconclusive | Verdict::NoSignificantDifference
                        );
                        if i == newest && fail_on.is_some_and(|f| fails(f, c.verdict)) {
                            failing.push(format!(
                                "{point}: {} ({metric} ratio {:.3} [{:.3}, {:.3}])",
                                c.verdict, c.ratio.ratio, c.ratio.ci.low, c.ratio.ci.high
                            ));
                        }
                        json!({"ratio": c.ratio.ratio, "ci": [c.ratio.ci.low, c.ratio.ci.high],
                               "verdict": c.verdict.to_string(), "beyond_noise": flagged})
                    }
                    Err(e) => {
                        json!({"verdict": format!("cannot compare: {e}"), "beyond_noise": false})
                    }
                }
            });
            rows.push(json!({"finished": s.finished, "server_version": s.version,
                             "n": s.values.len(), "median": median(&s.values), "change": change}));
            prev = Some(s);
        }
        out.push(json!({"point": point, "metric": metric, "results": rows}));
    }
    let code = if failing.is_empty() { OK } else { FAILED };
    for f in &failing {
        eprintln!("history: the newest result of {f} against the one before it");
    }
    if cli.json {
        for o in &out {
            println!("{o}");
        }
        return Ok(code);
    }
    if out.is_empty() {
        println!(
            "no results of {}'s trials on this machine's class ({}) yet",
            graph.study,
            cairn_graph::fingerprint::class_id(&class)
        );
    }
    for o in &out {
        println!("{} ({metric}):", o["point"].as_str().unwrap_or(""));
        for r in o["results"].as_array().into_iter().flatten() {
            let change = match r["change"].as_object() {
                None => String::new(),
                Some(c) => {
                    let ratio = c
                        .get("ratio")
                        .and_then(Value::as_f64)
                        .map_or(String::new(), |x| {
                            format!(
                                "ratio {x:.3} [{:.3}, {:.3}] ",
                                c["ci"][0].as_f64().unwrap_or(f64::NAN),
                                c["ci"][1].as_f64().unwrap_or(f64::NAN)
                            )
                        });
                    let flag = if c["beyond_noise"] == true {
                        "  ← beyond the noise"
                    } else {
                        ""
                    };
                    format!(
                        "  vs the previous: {ratio}{}{flag}",
                        c["verdict"].as_str().unwrap_or("")
                    )
                }
            };
            println!(
                "  {}  {}  median {:.2} of {}{change}",
                r["finished"].as_str().unwrap_or(""),
                r["server_version"].as_str().unwrap_or(""),
                r["median"].as_f64().unwrap_or(f64::NAN),
                r["n"]
            );
        }
    }
    println!("a change is flagged when the rank test (p < 0.05) and the 95% CI of the ratio of medians agree it is not 1 (the tables' rule)");
    Ok(code)
}
