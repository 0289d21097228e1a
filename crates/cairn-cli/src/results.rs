//! `cairn results PLAN`: every trial of a plan with its parameters and headline figures, as a table, CSV or JSON lines — read from the store's records, nothing runs.
//!
//! A trial's figures are shown when its record for the current key exists ("cached"). When
//! only an older record of the same address exists — another definition, or a measurement
//! made on another machine — it is shown as such (`outdated` / `other machine`), never
//! mixed in silently; trials never measured show `-`.
//!
//! Figures are shown under the vocabulary's shared names (`cairn_defs::figures`): records
//! written before the names were shared are read through the aliases (`p95_ms` →
//! `latency_p95_ms`), the table's columns and their formatting come from the vocabulary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cairn_defs::figures::{self, Figures};
use cairn_engine::Status;
use cairn_graph::{StepGraph, StepKind};
use cairn_plan::Value as PlanValue;
use cairn_store::Record;
use serde_json::{json, Value};

use crate::args::Cli;
use crate::context::{self, Exit};
use crate::OK;

/// One row: a trial and what the store holds for it.
struct Row<'a> {
    address: &'a str,
    trials: &'a str,
    server: String,
    params: &'a BTreeMap<String, PlanValue>,
    pass: u32,
    /// `cached`, `outdated`, `other machine` or `-`.
    state: &'static str,
    record: Option<Record>,
    /// The record's `extra.figures` under the shared names (empty without a record).
    figures: Figures,
}

/// The flat figures a trial record carries, old names read as the shared ones.
fn figures_of(record: Option<&Record>) -> Figures {
    figures_in(record.and_then(|r| r.extra.get("figures")))
}

/// `extra.figures` (a `{name: number}` map) under the shared names; empty if absent or not
/// such a map.
fn figures_in(extra_figures: Option<&Value>) -> Figures {
    extra_figures
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default()
}

impl Row<'_> {
    fn headline(&self) -> Option<&str> {
        self.record
            .as_ref()
            .and_then(|r| r.extra.get("headline"))
            .and_then(Value::as_str)
    }
}

/// `trial/<trials>/<server>[a=1]#2` → `<server>`.
fn server_of(address: &str, trials: &str) -> String {
    let rest = address
        .strip_prefix(&format!("trial/{trials}/"))
        .unwrap_or(address);
    rest.split(['[', '#']).next().unwrap_or(rest).to_string()
}

fn rows<'a>(graph: &'a StepGraph, env: &cairn_engine::Env<'_>) -> Vec<Row<'a>> {
    let (store, fp) = (env.store, env.fingerprint);
    let all = cairn_engine::statuses(graph, env, &[], false);
    let remembered = store.names(&graph.study).unwrap_or_default();
    let fp_json = serde_json::to_value(fp).expect("serialises");
    graph
        .order
        .iter()
        .map(|&id| &graph.steps[id])
        .filter(|s| s.kind == StepKind::TRIAL)
        .map(|s| {
            let st = &all[s.id];
            let current = match (&st.status, &st.key) {
                (Status::Cached, Some(k)) => store.get_record(k).ok().flatten(),
                _ => None,
            };
            let (state, record) = match current {
                Some(r) => ("cached", Some(r)),
                // the rule did not need it: an earlier run's record of the address is no
                // result of this definition
                None if st.status == Status::NotNeeded => ("not needed", None),
                None => match remembered
                    .get(&s.address)
                    .and_then(|k| store.get_record(k).ok().flatten())
                {
                    Some(r) if r.fingerprint.as_ref() != Some(&fp_json) => {
                        ("other machine", Some(r))
                    }
                    Some(r) => ("outdated", Some(r)),
                    None => ("-", None),
                },
            };
            Row {
                address: &s.address,
                trials: &s.name,
                server: server_of(&s.address, &s.name),
                params: &s.params,
                pass: s.pass,
                state,
                figures: figures_of(record.as_ref()),
                record,
            }
        })
        .collect()
}

/// What the analyses would flag, by the same rules, in the first table figure (`tps` where
/// trials have it): each row that is an outlying pass of its point, and each point whose
/// passes drift in run order, with its trend. Rows of one point are its passes in order.
struct Flags {
    outlier: Vec<bool>,
    drifting: Vec<(String, cairn_analysis::drift::Trend)>,
}

fn flags(rows: &[Row<'_>], figure: Option<&'static figures::Figure>) -> Flags {
    let mut out = Flags {
        outlier: vec![false; rows.len()],
        drifting: Vec::new(),
    };
    let Some(figure) = figure else {
        return out;
    };
    let mut points: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let point = r.address.split('#').next().unwrap_or(r.address);
        points.entry(point.to_string()).or_default().push(i);
    }
    for (point, mut members) in points {
        members.sort_by_key(|&i| rows[i].pass);
        let measured: Vec<(usize, f64)> = members
            .iter()
            .filter_map(|&i| rows[i].figures.get(figure).map(|v| (i, v)))
            .collect();
        let values: Vec<f64> = measured.iter().map(|m| m.1).collect();
        for o in cairn_analysis::drift::outliers(&values) {
            out.outlier[measured[o].0] = true;
        }
        if let Some(trend) =
            cairn_analysis::drift::drift(&values, cairn_analysis::drift::DRIFT_ALPHA)
        {
            out.drifting.push((point, trend));
        }
    }
    out
}

/// Parameters whose value differs between trials (the study's axes), in name order.
fn axes(rows: &[Row<'_>]) -> Vec<String> {
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for r in rows {
        for (k, v) in r.params {
            values.entry(k).or_default().insert(v.to_string());
        }
    }
    values
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, _)| k.to_string())
        .collect()
}

/// The vocabulary's table columns that some row has, in the vocabulary's order (CSV and
/// JSON have every figure).
fn table_columns(rows: &[Row<'_>]) -> Vec<&'static figures::Figure> {
    figures::TABLE
        .iter()
        .copied()
        .filter(|f| rows.iter().any(|r| r.figures.contains(f)))
        .collect()
}

pub fn results(cli: &Cli, path: &Path, csv: bool) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let fp = machine.fingerprint(&graph);
    let rows = rows(&graph, &machine.env(&graph, &store, &fp));
    let figure_cols = table_columns(&rows);
    let flagged = flags(&rows, figure_cols.first().copied());
    if cli.json {
        for (i, r) in rows.iter().enumerate() {
            let variant = r.record.as_ref().and_then(|rec| rec.extra.get("variant"));
            println!(
                "{}",
                json!({
                    "address": r.address, "trials": r.trials, "server": r.server,
                    "params": r.params, "pass": r.pass, "state": r.state,
                    "key": r.record.as_ref().map(|rec| &rec.key),
                    "headline": r.headline(), "figures": r.figures,
                    "server_version": variant.and_then(|v| v["checks"]["version"].as_str()),
                    "word_size": variant.and_then(|v| v["checks"]["word_size"].as_u64()),
                    "allocator": variant.and_then(|v| v["allocator"].as_str()),
                    "client": r.record.as_ref().and_then(|rec| rec.extra.get("client")),
                    "cpus": r.record.as_ref().and_then(|rec| rec.extra.get("cpus")),
                    "outlier": flagged.outlier[i],
                })
            );
        }
        return Ok(OK);
    }
    let axes = axes(&rows);
    if csv {
        print!("{}", to_csv(&rows));
        return Ok(OK);
    }
    if rows.is_empty() {
        println!("{} has no trials", path.display());
        return Ok(OK);
    }
    // where the clients ran, when some trial's plan declared it
    let clients: Vec<Option<String>> = rows.iter().map(client_of).collect();
    let client_col = clients.iter().any(Option::is_some);
    // where a trial of the `cpus` factor ran, read back from its server
    let placed: Vec<Option<String>> = rows
        .iter()
        .map(|r| {
            crate::results_cpus::placed(r.record.as_ref().and_then(|rec| rec.extra.get("cpus")))
        })
        .collect();
    let placed_col = placed.iter().any(Option::is_some);
    let mut header: Vec<String> = vec!["trials".into(), "server".into()];
    if client_col {
        header.push("client".into());
    }
    if placed_col {
        header.push("ran on cpus".into());
    }
    header.extend(axes.iter().cloned());
    header.push("pass".into());
    header.extend(figure_cols.iter().map(|f| f.name.to_string()));
    header.push("result".into());
    let any_outlier = flagged.outlier.iter().any(|o| *o);
    if any_outlier {
        header.push("flag".into());
    }
    let mut table: Vec<Vec<String>> = vec![header];
    for (i, (r, client)) in rows.iter().zip(&clients).enumerate() {
        let f = &r.figures;
        let mut line = vec![r.trials.to_string(), r.server.clone()];
        if client_col {
            line.push(client.clone().unwrap_or_else(|| "-".into()));
        }
        if placed_col {
            line.push(placed[i].clone().unwrap_or_else(|| "-".into()));
        }
        line.extend(
            axes.iter()
                .map(|a| r.params.get(a).map_or("-".into(), |v| v.to_string())),
        );
        line.push(r.pass.to_string());
        line.extend(figure_cols.iter().map(|c| {
            f.get(c)
                .map_or("-".into(), |v| figures::format_number(c, v))
        }));
        line.push(r.state.to_string());
        if any_outlier {
            line.push(if flagged.outlier[i] { "outlier" } else { "" }.to_string());
        }
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in &table {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                // names left, numbers right
                if i < 2 + usize::from(client_col) + usize::from(placed_col) {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    let measured = rows.iter().filter(|r| r.state == "cached").count();
    println!(
        "{measured} of {} trials measured for this definition on this machine (class {})",
        rows.len(),
        cairn_graph::fingerprint::class_id(&fp)
    );
    if let (true, Some(figure)) = (any_outlier, figure_cols.first()) {
        println!(
            "`outlier`: the pass's {} lies far from its point's other passes (modified z-score above 3.5, as the analyses flag it); kept, never dropped",
            figure.name
        );
    }
    for (point, trend) in &flagged.drifting {
        println!(
            "drift: {point}: {} {} across its {} passes in run order (Mann–Kendall τ = {:.2}, p {}): the machine may have changed during the study; a paired table (`paired=#true`) compares within blocks",
            figure_cols.first().map_or("the figure", |f| f.name),
            if trend.falling() { "falls" } else { "rises" },
            trend.passes,
            trend.tau,
            cairn_analysis::compare::p_text(trend.p_value)
        );
    }
    if rows.iter().any(|r| r.state == "other machine") {
        let mut others: Vec<String> = rows
            .iter()
            .filter(|r| r.state == "other machine")
            .filter_map(|r| r.record.as_ref()?.fingerprint.clone())
            .filter_map(|v| serde_json::from_value::<cairn_graph::Fingerprint>(v).ok())
            .map(|c| cairn_graph::fingerprint::class_id(&c))
            .collect();
        others.sort();
        others.dedup();
        println!(
            "`other machine`: figures measured elsewhere (class {}); run the plan to measure here (`cairn report --measured-on ID` reads them)",
            others.join(", ")
        );
    }
    Ok(OK)
}

/// The client path a trial's record declares (`loopback`, `bridge`, `host`, with its link's
/// delay and rate), `None` if it declares none.
fn client_of(r: &Row<'_>) -> Option<String> {
    let client = r.record.as_ref()?.extra.get("client")?;
    let mut s = client["path"].as_str()?.to_string();
    for part in ["delay", "rate"] {
        if let Some(v) = client["link"][part].as_str() {
            s.push(' ');
            s.push_str(v);
        }
    }
    Some(s)
}

/// The trials measured for this definition on this machine (a current record), in the
/// layout of a report's `data.csv` (one function writes both). A trial without one — not
/// measured, outdated, measured elsewhere, or a pass the rule did not need — is no row;
/// how many were left out goes to stderr, so the CSV on stdout stays the data alone.
fn to_csv(rows: &[Row<'_>]) -> String {
    let points: Vec<_> = rows
        .iter()
        .filter(|r| r.state == "cached")
        .filter_map(|r| {
            let record = r.record.as_ref()?;
            Some(cairn_kinds::trial_points::point_of_record(
                record, r.address,
            ))
        })
        .collect();
    let left_out = rows
        .iter()
        .filter(|r| r.state != "cached" && r.state != "not needed")
        .count();
    if left_out > 0 {
        eprintln!(
            "{left_out} of {} trials have no record for this definition on this machine and are not in the CSV (see `cairn results` without --csv)",
            rows.len()
        );
    }
    cairn_kinds::data_csv::data_csv(&points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_addresses() {
        assert_eq!(server_of("trial/ro/system[threads=2]#3", "ro"), "system");
        assert_eq!(server_of("trial/ro/jemalloc#1", "ro"), "jemalloc");
        assert_eq!(server_of("trial/ro/x", "ro"), "x");
    }

    #[test]
    fn old_records_show_shared_names_in_vocabulary_order() {
        // what records held before the names were shared: OLTP and super-smack spellings
        let oltp = figures_in(Some(&json!({"tps": 10.0, "p95_ms": 2.5, "mean_ms": 1.0})));
        let smack = figures_in(Some(&json!({"qps": 50.0, "avg_ms": 0.5, "errors": 0.0})));
        assert_eq!(
            oltp.names().collect::<Vec<_>>(),
            ["latency_mean_ms", "latency_p95_ms", "tps"]
        );
        assert_eq!(smack.get(&figures::LATENCY_MEAN_MS), Some(0.5));
        assert!(figures_in(None).is_empty());
        assert!(figures_in(Some(&json!("not a map"))).is_empty());

        let params = BTreeMap::new();
        let row = |figures| Row {
            address: "trial/t/s",
            trials: "t",
            server: "s".into(),
            params: &params,
            pass: 1,
            state: "cached",
            record: None,
            figures,
        };
        let cols: Vec<&str> = table_columns(&[row(oltp), row(smack)])
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            cols,
            ["tps", "qps", "latency_p95_ms", "latency_mean_ms", "errors"]
        );
    }

    #[test]
    fn outlying_passes_and_drift_are_flagged_and_clean_passes_are_not() {
        let params = BTreeMap::new();
        let addresses: Vec<String> = (1..=7)
            .flat_map(|p| {
                [
                    format!("trial/t/a#{p}"),
                    format!("trial/t/b#{p}"),
                    format!("trial/t/c#{p}"),
                ]
            })
            .collect();
        // a: steady with one stall at pass 4; b: falls pass by pass; c: clean noise
        let value = |server: &str, pass: u32| match server {
            "a" if pass == 4 => 600.0,
            "a" => 1000.0 + f64::from(pass % 3),
            "b" => 1000.0 - 20.0 * f64::from(pass),
            _ => [1003.0, 997.0, 1001.0, 999.0, 1004.0, 996.0, 1000.0][pass as usize - 1],
        };
        let rows: Vec<Row<'_>> = addresses
            .iter()
            .map(|address| {
                let (point, pass) = address.split_once('#').unwrap();
                let pass: u32 = pass.parse().unwrap();
                let server = server_of(point, "t");
                Row {
                    address,
                    trials: "t",
                    figures: figures_in(Some(&json!({ "tps": value(&server, pass) }))),
                    server,
                    params: &params,
                    pass,
                    state: "cached",
                    record: None,
                }
            })
            .collect();
        let f = flags(&rows, table_columns(&rows).first().copied());
        let flagged: Vec<&str> = rows
            .iter()
            .zip(&f.outlier)
            .filter(|(_, o)| **o)
            .map(|(r, _)| r.address)
            .collect();
        assert_eq!(flagged, ["trial/t/a#4"]);
        let drifting: Vec<&str> = f.drifting.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(drifting, ["trial/t/b"]);
        assert!(f.drifting[0].1.falling());
    }
}
