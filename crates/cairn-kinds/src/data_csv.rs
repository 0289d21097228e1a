//! `data.csv` and its data dictionary: one row per measured trial — who, where and when it
//! was measured, its matrix point and every figure — in the one layout `cairn report` writes
//! beside a report and `cairn results --csv` prints.
//!
//! The columns are one list ([`columns`]): each knows its name, its unit, its meaning and
//! how to read its value from a trial, so the CSV and the dictionary (`data-dictionary.md`)
//! are written from the same code and cannot drift apart. Figures take their units and
//! meanings from the vocabulary ([`cairn_defs::figures`]).
//!
//! Numbers are written without float noise ([`number`]): whole numbers as integers, others
//! rounded to [`SIGNIFICANT_DIGITS`] significant digits and printed in the shortest decimal
//! form that reads back as that value (`1.9752590000000003` → `1.97526`, `8.0` → `8`). No
//! figure a driver measures is more precise than that; the records keep every bit.

use std::collections::BTreeSet;

use cairn_defs::figures;
use serde_json::Value;

use crate::trial_points::TrialPoint;

/// The file the dictionary is written to, beside `data.csv`.
pub const DATA_DICTIONARY_MD: &str = "data-dictionary.md";

/// Significant digits a non-integral number keeps in the data files.
pub const SIGNIFICANT_DIGITS: usize = 6;

/// `v` as the data files write it: see the module docs. Not-a-number and infinities as
/// Rust spells them (`NaN`, `inf`), which pandas and R read.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    // integers below 2^53 are exact in an f64: counts keep every digit
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        return format!("{v:.0}");
    }
    let rounded: f64 = format!("{v:.*e}", SIGNIFICANT_DIGITS - 1)
        .parse()
        .expect("a formatted float parses");
    // Display is the shortest form that reads back as `rounded`, never in exponent form
    format!("{rounded}")
}

/// A JSON value as the data files write it: numbers through [`number`], strings bare,
/// booleans and the rest as JSON, null empty.
pub fn value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), number),
        other => other.to_string(),
    }
}

/// One column of `data.csv`.
pub struct Column {
    pub name: String,
    /// The unit of its values (empty where it has none).
    pub unit: String,
    /// What it holds, in a sentence.
    pub meaning: String,
    read: Box<dyn Fn(&TrialPoint) -> String>,
}

impl Column {
    fn new(
        name: impl Into<String>,
        unit: &str,
        meaning: impl Into<String>,
        read: impl Fn(&TrialPoint) -> String + 'static,
    ) -> Self {
        Column {
            name: name.into(),
            unit: unit.to_string(),
            meaning: meaning.into(),
            read: Box::new(read),
        }
    }

    /// The column's value for `trial` (empty when the trial has none).
    pub fn of(&self, trial: &TrialPoint) -> String {
        (self.read)(trial)
    }
}

/// A string the trial's verified variant (`extra.variant`) holds at `pointer`.
fn variant_text(t: &TrialPoint, pointer: &str) -> String {
    t.variant
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The columns of `data.csv` for `trials`: the trial's identity, its matrix point (every
/// parameter any trial has, in name order), how and where it was measured, then every figure
/// any trial has (in the vocabulary's order; names outside it last, in name order).
pub fn columns(trials: &[TrialPoint]) -> Vec<Column> {
    let mut cols = vec![
        Column::new(
            "study",
            "",
            "the study that measured the trial (another study's name for a trials block declared `measured-by` it)",
            |t| t.measured.study.clone(),
        ),
        Column::new(
            "address",
            "",
            "the trial's step address: `trial/<trials>/<server>[<point>]#<pass>`",
            |t| t.address.clone(),
        ),
        Column::new(
            "key",
            "",
            "the trial record's key, its first 12 hex digits as the report prints it (the join key of series.csv)",
            |t| short_key(&t.key).to_string(),
        ),
        Column::new("trials", "", "the plan's trials block", |t| t.trials.clone()),
        Column::new("server", "", "the server (variant) measured", |t| {
            t.server.clone()
        }),
    ];
    let params: BTreeSet<&str> = trials
        .iter()
        .flat_map(|t| t.params.keys().map(String::as_str))
        .collect();
    for p in params {
        let name = p.to_string();
        cols.push(Column::new(
            p,
            param_unit(p),
            format!("the workload parameter `{p}` at the trial's matrix point, as the plan set it"),
            move |t| t.params.get(&name).map(value).unwrap_or_default(),
        ));
    }
    cols.extend([
        Column::new(
            "pass",
            "",
            "the pass (repetition) of its point, from 1",
            |t| t.pass.to_string(),
        ),
        Column::new(
            "block",
            "",
            "the block a paired comparison pairs within: the node it ran on (`local` for the machine cairn ran on) and its pass, `<node>/<pass>`",
            TrialPoint::block,
        ),
        Column::new(
            "run_order",
            "",
            "its place in the seeded order of the run that measured it (1 ran first); empty for a record made before the order was recorded",
            |t| t.measured.run_order.map(|o| o.to_string()).unwrap_or_default(),
        ),
        Column::new(
            "campaign",
            "",
            "the campaign it was measured in: the study, the run and the machine's boot (or the day); comparisons decide only between passes of one campaign",
            |t| t.campaign.clone(),
        ),
        Column::new(
            "started",
            "UTC, RFC 3339",
            "when the trial began (its server's start)",
            |t| t.measured.started.clone(),
        ),
        Column::new(
            "finished",
            "UTC, RFC 3339",
            "when the trial ended (its server stopped)",
            |t| t.measured.finished.clone(),
        ),
        Column::new(
            "server_version",
            "",
            "the server's version as the running server reported it",
            |t| variant_text(t, "/checks/version"),
        ),
        Column::new(
            "allocator",
            "",
            "the memory allocator the server ran with, verified in its memory map before measuring (a trial whose allocator is not mapped fails)",
            |t| variant_text(t, "/allocator"),
        ),
        Column::new(
            "machine_class",
            "",
            "the class of machine it was measured on (its fingerprint: CPU model, cores, threads, memory, kernel, container runtime)",
            |t| {
                if t.fingerprint.is_null() {
                    String::new()
                } else {
                    cairn_report::machine::machine_line(&t.fingerprint)
                }
            },
        ),
        Column::new(
            "machine_class_id",
            "",
            "the class's short id, as `cairn machine` prints it and `--measured-on` takes it",
            |t| {
                serde_json::from_value(t.fingerprint.clone())
                    .map(|f| cairn_graph::fingerprint::class_id(&f))
                    .unwrap_or_default()
            },
        ),
    ]);
    for name in figure_names(trials) {
        let (unit, meaning) = match figures::lookup(&name) {
            Some(f) => (
                match f.unit {
                    figures::Unit::Count => "count",
                    u => u.symbol(),
                },
                f.summary.to_string(),
            ),
            None => (
                "",
                "a figure outside cairn's vocabulary, as its driver named it".into(),
            ),
        };
        let read = name.clone();
        cols.push(Column::new(name, unit, meaning, move |t| {
            t.figures.get_named(&read).map(number).unwrap_or_default()
        }));
    }
    cols
}

/// The unit of a workload parameter: durations are seconds (the plan's `"2m"` is 120), a
/// fixed rate is events per second.
fn param_unit(name: &str) -> &'static str {
    if cairn_plan::is_duration_param(name) {
        "s"
    } else if name == "rate" {
        "1/s"
    } else {
        ""
    }
}

/// Every figure name some trial has, the vocabulary's first in its order, then the rest.
fn figure_names(trials: &[TrialPoint]) -> Vec<String> {
    let present: BTreeSet<&str> = trials.iter().flat_map(|t| t.figures.names()).collect();
    let mut out: Vec<String> = figures::ALL
        .iter()
        .filter(|f| present.contains(f.name))
        .map(|f| f.name.to_string())
        .collect();
    let outside: Vec<String> = present
        .iter()
        .filter(|n| figures::ALL.iter().all(|f| f.name != **n))
        .map(|n| n.to_string())
        .collect();
    out.extend(outside);
    out
}

/// A record key as the report prints it: its first 12 hex digits.
pub fn short_key(key: &str) -> &str {
    &key[..12.min(key.len())]
}

/// `data.csv`: a header of [`columns`], then one row per trial in `trials`' order.
pub fn data_csv(trials: &[TrialPoint]) -> String {
    let cols = columns(trials);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(cols.iter().map(|c| &c.name))
        .expect("writes to memory");
    for t in trials {
        w.write_record(cols.iter().map(|c| c.of(t)))
            .expect("writes to memory");
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 fields")
}

/// `data-dictionary.md`: every column of `data.csv` for `trials` with its unit and meaning,
/// and how numbers are written.
pub fn data_dictionary(trials: &[TrialPoint]) -> String {
    let mut out = String::from(
        "# data.csv: the columns\n\nOne row per measured trial (a pass the adaptive rule did not need was not measured and has no row). ",
    );
    out.push_str(&format!(
        "Numbers: whole numbers as integers; others rounded to {SIGNIFICANT_DIGITS} significant digits, in the shortest decimal form (the records keep every digit). An empty cell: the trial has no such value.\n\n"
    ));
    out.push_str("| column | unit | meaning |\n|---|---|---|\n");
    let cell = |s: &str| s.replace('|', "\\|");
    for c in columns(trials) {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            cell(&c.name),
            cell(&c.unit),
            cell(&c.meaning)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trial_points::Measured;
    use cairn_defs::figures::Figures;
    use serde_json::json;

    #[test]
    fn numbers_carry_no_float_noise() {
        assert_eq!(number(1.9752590000000003), "1.97526");
        assert_eq!(number(8.0), "8");
        assert_eq!(number(85552.0), "85552");
        assert_eq!(number(10693.35846532557), "10693.4");
        assert_eq!(number(4.2130499619999995), "4.21305");
        assert_eq!(number(0.000012345678), "0.0000123457");
        assert_eq!(number(-2.5), "-2.5");
        assert_eq!(number(123456789.5), "123457000");
        assert_eq!(value(&json!(8.0)), "8");
        assert_eq!(value(&json!("uniform")), "uniform");
        assert_eq!(value(&json!(true)), "true");
    }

    fn trial(pass: u32, params: Value, figures: Value) -> TrialPoint {
        TrialPoint {
            key: format!("{pass}abcdef0123456789abcdef"),
            address: format!("trial/ro/system[threads=4]#{pass}"),
            trials: "ro".into(),
            server: "system".into(),
            pass,
            params: serde_json::from_value(params).unwrap(),
            figures: Figures::from_map(serde_json::from_value(figures).unwrap()),
            variant: json!({"allocator": "system", "checks": {"version": "10.11.18-MariaDB"}}),
            fingerprint: json!({"cpu_model": "X", "cores": 2, "threads": 2, "memory_gib": 24,
                "kernel": "6.1", "runtime": "docker 20.10"}),
            campaign: "quickstart, run-1 on boot 47503d73".into(),
            measured: Measured {
                study: "quickstart".into(),
                started: "2026-12-05T09:01:27.820Z".into(),
                finished: "2026-12-05T09:01:39.240Z".into(),
                run_order: Some(3),
            },
            ..Default::default()
        }
    }

    #[test]
    fn one_row_per_trial_with_its_facts_and_every_figure() {
        let trials = [
            trial(
                1,
                json!({"threads": 4, "duration": 8.0}),
                json!({"tps": 1.9752590000000003, "errors": 0.0, "p95_ms": 2.5}),
            ),
            trial(
                2,
                json!({"threads": 4, "duration": 8.0}),
                json!({"tps": 3.0}),
            ),
        ];
        let csv = data_csv(&trials);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "study,address,key,trials,server,duration,threads,pass,block,run_order,campaign,started,finished,server_version,allocator,machine_class,machine_class_id,tps,latency_p95_ms,errors"
        );
        assert_eq!(
            lines[1],
            "quickstart,trial/ro/system[threads=4]#1,1abcdef01234,ro,system,8,4,1,local/1,3,\"quickstart, run-1 on boot 47503d73\",2026-12-05T09:01:27.820Z,2026-12-05T09:01:39.240Z,10.11.18-MariaDB,system,\"X, 2 cores / 2 threads, 24.0 GiB, kernel 6.1, docker 20.10\",056f08ec49f3,1.97526,2.5,0"
        );
        assert!(
            lines[2].ends_with(",3,,"),
            "absent figures are empty: {}",
            lines[2]
        );
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn the_dictionary_lists_every_column_with_its_unit() {
        let trials = [trial(
            1,
            json!({"threads": 4, "warmup": 2.0}),
            json!({"tps": 1.0, "latency_p95_ms": 2.0, "queries": 5.0}),
        )];
        let dictionary = data_dictionary(&trials);
        let header = data_csv(&trials).lines().next().unwrap().to_string();
        for name in header.split(',') {
            assert!(
                dictionary.contains(&format!("| `{name}` |")),
                "`{name}` is not in the dictionary"
            );
        }
        assert!(dictionary.contains("| `tps` | 1/s |"), "{dictionary}");
        assert!(dictionary.contains("| `latency_p95_ms` | ms |"));
        assert!(dictionary.contains("| `queries` | count |"));
        assert!(dictionary.contains("| `warmup` | s |"));
        assert!(dictionary.contains("| `started` | UTC, RFC 3339 |"));
    }
}
