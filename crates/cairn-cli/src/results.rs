//! `cairn results PLAN`: every trial of a plan with its parameters and headline figures, as a table, CSV or JSON lines — read from the store's records, nothing runs.
//!
//! A trial's figures are shown when its record for the current key exists ("cached"). When
//! only an older record of the same address exists — another definition, or a measurement
//! made on another machine — it is shown as such (`outdated` / `other machine`), never
//! mixed in silently; trials never measured show `-`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cairn_engine::Status;
use cairn_graph::{StepGraph, StepKind};
use cairn_plan::Value as PlanValue;
use cairn_store::{Record, Store};
use serde_json::{json, Value};

use crate::args::Cli;
use crate::context::{self, Exit};
use crate::OK;

/// Figures shown in the table, in this order, when any trial has them (CSV/JSON have all).
const TABLE_FIGURES: &[&str] = &[
    "tps", "qps", "p95_ms", "p99_ms", "avg_ms", "max_ms", "total_s", "errors",
];

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
    /// The record's `extra.figures` (empty without a record).
    figures: BTreeMap<String, f64>,
}

/// The flat figures a trial record carries.
fn figures_of(record: Option<&Record>) -> BTreeMap<String, f64> {
    record
        .and_then(|r| r.extra.get("figures"))
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

fn rows<'a>(
    graph: &'a StepGraph,
    store: &Store,
    cache: &Path,
    fp: &cairn_graph::Fingerprint,
) -> Vec<Row<'a>> {
    let all = cairn_engine::statuses(graph, store, cache, fp, &[], false);
    let remembered = store.names(&graph.study).unwrap_or_default();
    let fp_json = serde_json::to_value(fp).expect("serialises");
    graph
        .order
        .iter()
        .map(|&id| &graph.steps[id])
        .filter(|s| s.kind == StepKind::Trial)
        .map(|s| {
            let st = &all[s.id];
            let current = match (&st.status, &st.key) {
                (Status::Cached, Some(k)) => store.get_record(k).ok().flatten(),
                _ => None,
            };
            let (state, record) = match current {
                Some(r) => ("cached", Some(r)),
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

fn number(name: &str, v: f64) -> String {
    if name == "errors" || name == "events" || name == "queries" {
        format!("{v:.0}")
    } else if name.ends_with("_ms") {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

pub fn results(cli: &Cli, path: &Path, csv: bool) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let store = context::open_store(&cli.results)?;
    let cache = context::cache_dir(cli.cache.as_deref());
    let fp = context::fingerprint(&graph);
    let rows = rows(&graph, &store, &cache, &fp);
    if cli.json {
        for r in &rows {
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
    let present: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| r.figures.keys().cloned())
        .collect();
    let figure_cols: Vec<&str> = TABLE_FIGURES
        .iter()
        .copied()
        .filter(|f| present.contains(*f))
        .collect();
    let mut header: Vec<String> = vec!["trials".into(), "server".into()];
    header.extend(axes.iter().cloned());
    header.push("pass".into());
    header.extend(figure_cols.iter().map(|s| s.to_string()));
    header.push("result".into());
    let mut table: Vec<Vec<String>> = vec![header];
    for r in &rows {
        let f = &r.figures;
        let mut line = vec![r.trials.to_string(), r.server.clone()];
        line.extend(
            axes.iter()
                .map(|a| r.params.get(a).map_or("-".into(), |v| v.to_string())),
        );
        line.push(r.pass.to_string());
        line.extend(
            figure_cols
                .iter()
                .map(|c| f.get(*c).map_or("-".into(), |v| number(c, *v))),
        );
        line.push(r.state.to_string());
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
                if i < 2 {
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
        "{measured} of {} trials measured for this definition on this machine",
        rows.len()
    );
    if rows.iter().any(|r| r.state == "other machine") {
        println!("`other machine`: figures measured elsewhere (another fingerprint); run the plan to measure here");
    }
    Ok(OK)
}

/// Every trial with every parameter and figure, as CSV.
fn to_csv(rows: &[Row<'_>]) -> String {
    let params: BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.params.keys().map(String::as_str))
        .collect();
    let figures: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| r.figures.keys().cloned())
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["address", "trials", "server", "pass", "state", "key"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| p.to_string()));
    header.extend(figures.iter().cloned());
    w.write_record(&header).expect("writes to memory");
    for r in rows {
        let f = &r.figures;
        let mut line = vec![
            r.address.to_string(),
            r.trials.to_string(),
            r.server.clone(),
            r.pass.to_string(),
            r.state.to_string(),
            r.record
                .as_ref()
                .map_or(String::new(), |rec| rec.key.clone()),
        ];
        line.extend(
            params
                .iter()
                .map(|p| r.params.get(*p).map_or(String::new(), |v| v.to_string())),
        );
        line.extend(
            figures
                .iter()
                .map(|k| f.get(k).map_or(String::new(), |v| v.to_string())),
        );
        w.write_record(&line).expect("writes to memory");
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 fields")
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
}
