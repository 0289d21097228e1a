//! `series.csv`: the per-second samples of every trial in long format (one row per trial,
//! interval and figure), for pandas and R — `key, address, trials, server, pass,
//! <parameters…>, second, in_warmup, figure, value`; `key` is the trial's short key as
//! `data.csv` has it (join the two on it), numbers are written as there
//! ([`crate::data_csv::number`]).
//!
//! The samples are the drivers' report intervals (`series` in a trial's `metrics.json`, one
//! second unless `report-interval` says otherwise; `second` is the interval's start, from the
//! start of the run, warmup included; `in_warmup` flags it — the workload's own `warmup`
//! parameter keeps its column): events, queries, errors and reconnects
//! per interval, written as rates (`tps`, `qps`, `errors_per_s`, `reconnects_per_s`) and the
//! backlog of a fixed-rate run. Warmup intervals are kept, flagged. Drivers that record no
//! intervals (super-smack, sql-bench) contribute no rows.

use std::collections::{BTreeMap, BTreeSet};

use cairn_graph::Step;
use cairn_store::Store;
use serde::Deserialize;

use crate::data_csv::{number, short_key, value};
use crate::trial_points::TrialPoint;
use crate::trial_step::METRICS;
use cairn_engine::execute::{read_json, Done};

/// The part of a trial's `metrics.json` the series needs (every interval driver writes it).
#[derive(Debug, Deserialize)]
struct Recorded {
    #[serde(default)]
    report_interval_s: f64,
    #[serde(default)]
    series: Vec<cairn_workload::metrics::Interval>,
}

/// The samples of trials by record key: the interval's width (seconds) and the intervals.
pub type Samples = BTreeMap<String, (f64, Vec<cairn_workload::metrics::Interval>)>;

/// The intervals of every trial among `step`'s inputs that recorded any, by record key.
pub fn read(store: &Store, step: &Step, inputs: &[&Done]) -> Samples {
    let mut out = BTreeMap::new();
    for (input, done) in step.inputs.iter().zip(inputs) {
        if !input.mount.starts_with("trial/") || !done.outputs.contains_key(METRICS) {
            continue;
        }
        // a driver whose metrics have no series (or another shape) has no samples to give
        if let Ok(r) = read_json::<Recorded>(store, &done.outputs, METRICS) {
            if !r.series.is_empty() && r.report_interval_s > 0.0 {
                out.insert(done.key.clone(), (r.report_interval_s, r.series));
            }
        }
    }
    out
}

/// The CSV, trials in `trials`' order, intervals in time order.
pub fn render(trials: &[TrialPoint], series: &Samples) -> String {
    let params: BTreeSet<&str> = trials
        .iter()
        .flat_map(|t| t.params.keys().map(String::as_str))
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["key", "address", "trials", "server", "pass"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| p.to_string()));
    header.extend(["second", "in_warmup", "figure", "value"].map(String::from));
    w.write_record(&header).expect("writes to memory");
    for t in trials {
        let Some((width, intervals)) = series.get(&t.key) else {
            continue;
        };
        let mut fixed = vec![
            short_key(&t.key).to_string(),
            t.address.clone(),
            t.trials.clone(),
            t.server.clone(),
            t.pass.to_string(),
        ];
        fixed.extend(
            params
                .iter()
                .map(|p| t.params.get(*p).map_or(String::new(), value)),
        );
        for iv in intervals {
            let rates = [
                ("tps", iv.events as f64 / width),
                ("qps", iv.queries as f64 / width),
                ("errors_per_s", iv.errors as f64 / width),
                ("reconnects_per_s", iv.reconnects as f64 / width),
                ("backlog", iv.backlog as f64),
            ];
            for (figure, value) in rates {
                let mut line = fixed.clone();
                line.push(number(iv.start_s));
                line.push(iv.warmup.to_string());
                line.push(figure.to_string());
                line.push(number(value));
                w.write_record(&line).expect("writes to memory");
            }
        }
    }
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("UTF-8 fields")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_workload::metrics::Interval;
    use serde_json::json;

    fn trial(key: &str, warmup_param: f64) -> TrialPoint {
        TrialPoint {
            key: key.into(),
            address: format!("trial/r/system[threads=2]#{key}"),
            trials: "r".into(),
            server: "system".into(),
            pass: 1,
            params: BTreeMap::from([
                ("threads".to_string(), json!(2)),
                ("warmup".to_string(), json!(warmup_param)),
            ]),
            figures: Default::default(),
            ..Default::default()
        }
    }

    #[test]
    fn one_row_per_interval_and_figure_rates_per_second() {
        let intervals = vec![
            Interval {
                start_s: 0.0,
                warmup: true,
                events: 50,
                queries: 500,
                ..Default::default()
            },
            Interval {
                start_s: 0.5,
                warmup: false,
                events: 60,
                queries: 600,
                errors: 1,
                ..Default::default()
            },
        ];
        let series = BTreeMap::from([("k1".to_string(), (0.5, intervals))]);
        // k2 recorded no intervals (a driver without them): no rows
        let csv = render(&[trial("k1", 1.0), trial("k2", 1.0)], &series);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "key,address,trials,server,pass,threads,warmup,second,in_warmup,figure,value"
        );
        assert_eq!(lines.len(), 1 + 2 * 5);
        assert!(lines.contains(&"k1,trial/r/system[threads=2]#k1,r,system,1,2,1,0,true,tps,100"));
        assert!(
            lines.contains(&"k1,trial/r/system[threads=2]#k1,r,system,1,2,1,0.5,false,qps,1200")
        );
        assert!(lines
            .contains(&"k1,trial/r/system[threads=2]#k1,r,system,1,2,1,0.5,false,errors_per_s,2"));
        assert!(!csv.contains("k2"));
    }
}
