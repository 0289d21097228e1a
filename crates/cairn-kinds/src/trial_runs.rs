//! Consecutive runs of a trial's workload on one server start (`runs N` of its trials
//! block): each run's figures, and the trial's figures over its runs.
//!
//! Runs of one start are not independent samples — they share the server's warm caches,
//! its allocator's state, whatever it did since it started — so the pass (the server start)
//! stays the unit: a trial's figures (`extra.figures`, what `cairn results`, claims, the
//! adaptive rule and `data.csv` read) are each figure's median over its runs, and every run
//! is kept under `extra.runs`. An analysis that names `run` reads the runs instead
//! ([`runs_of`]), one value per start in each cell.

use std::collections::BTreeMap;

use cairn_defs::figures::Figures;
use cairn_defs::lifecycle::RUN;
use cairn_graph::Step;
use cairn_workload::{Dataset, Outcome, Workload};
use serde_json::{json, Value};

use crate::trial_points::TrialPoint;

/// One run's output: `runs.json` holds every run's.
pub const RUNS_JSON: &str = "runs.json";

/// One finished run of the workload, read like a whole trial.
pub struct RunResult {
    pub outcome: Outcome,
    /// Status counters over the run.
    pub status_deltas: BTreeMap<String, f64>,
    /// The efficiency record of the run's window.
    pub efficiency: Value,
}

/// Runs of the workload per server start, from the trial's definition (1 without `runs`).
pub fn count(step: &Step) -> u32 {
    step.trial_def()
        .ok()
        .and_then(|d| d.lifecycle)
        .map_or(1, |l| l.run_count())
}

/// The seed of `run`'s workload: run 1 keeps the pass's (so a one-run trial is seeded as
/// it always was); later runs draw other rows, as a benchmark run again on a server does.
pub fn seed(pass: u32, run: u32) -> u64 {
    u64::from(pass) | (u64::from(run.saturating_sub(1)) << 32)
}

/// The workload of `run` (>1): the same definition, its own seed.
pub fn workload_of_run(
    step: &Step,
    dataset: Option<&cairn_workload::DatasetDef>,
    run: u32,
) -> Result<Workload, cairn_workload::Error> {
    let wdef = step
        .trial_def()
        .map_err(cairn_workload::Error::Invalid)?
        .workload;
    let ds = dataset.map(Dataset::from_def).transpose()?;
    Workload::from_def(&wdef, ds.as_ref(), seed(step.pass, run))
}

/// Each figure's median over the runs that recorded it.
pub fn median_figures<'a>(runs: impl IntoIterator<Item = &'a Figures>) -> Figures {
    let mut by_name: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in runs {
        for (name, v) in f.iter() {
            by_name.entry(name.to_string()).or_default().push(v);
        }
    }
    Figures::from_map(
        by_name
            .into_iter()
            .map(|(name, mut v)| {
                v.sort_by(f64::total_cmp);
                let mid = v.len() / 2;
                let m = if v.len() % 2 == 1 {
                    v[mid]
                } else {
                    (v[mid - 1] + v[mid]) / 2.0
                };
                (name, m)
            })
            .collect(),
    )
}

/// The trial of several runs as one: figures the median over the runs, the headline saying
/// so, the first run's detail (`metrics.json`: its series feed `series.csv`; every run's is
/// in [`RUNS_JSON`]), status deltas summed over the runs, the efficiency records by run.
pub fn combine(runs: &[RunResult]) -> (Outcome, BTreeMap<String, f64>, Value) {
    let figures = median_figures(runs.iter().map(|r| &r.outcome.figures));
    let headline = headline(runs);
    let mut deltas: BTreeMap<String, f64> = BTreeMap::new();
    for r in runs {
        for (k, v) in &r.status_deltas {
            *deltas.entry(k.clone()).or_default() += v;
        }
    }
    let efficiency = json!({"runs": runs.iter().map(|r| &r.efficiency).collect::<Vec<_>>()});
    let detail = runs
        .first()
        .map_or(Value::Null, |r| r.outcome.detail.clone());
    (
        Outcome {
            figures,
            headline,
            detail,
        },
        deltas,
        efficiency,
    )
}

/// `3 runs on one server start, figures their medians; run 1: …; run 2: …; run 3: …` — with
/// more than three runs, the first two and the last (a line, not a table).
fn headline(runs: &[RunResult]) -> String {
    let line = |i: usize| format!("run {}: {}", i + 1, runs[i].outcome.headline);
    let shown: Vec<String> = if runs.len() <= 3 {
        (0..runs.len()).map(line).collect()
    } else {
        vec![line(0), line(1), "…".into(), line(runs.len() - 1)]
    };
    format!(
        "{} runs on one server start, figures their medians; {}",
        runs.len(),
        shown.join("; ")
    )
}

/// The record's `extra.runs`: each run's number, headline and figures.
pub fn runs_record(runs: &[RunResult]) -> Value {
    json!(runs
        .iter()
        .enumerate()
        .map(|(i, r)| json!({
            "run": i + 1,
            "headline": r.outcome.headline,
            "figures": r.outcome.figures,
        }))
        .collect::<Vec<_>>())
}

/// `runs.json`: every run's figures, status deltas, efficiency and the driver's detail.
pub fn runs_output(runs: &[RunResult]) -> Value {
    json!(runs
        .iter()
        .enumerate()
        .map(|(i, r)| json!({
            "run": i + 1,
            "headline": r.outcome.headline,
            "figures": r.outcome.figures,
            "status_deltas": r.status_deltas,
            "efficiency": r.efficiency,
            "detail": r.outcome.detail,
        }))
        .collect::<Vec<_>>())
}

/// Each run's figures from a record's `extra.runs` (empty for a trial of one run).
pub fn recorded_runs(extra: &serde_json::Map<String, Value>) -> Vec<Figures> {
    extra
        .get("runs")
        .and_then(Value::as_array)
        .map(|runs| {
            runs.iter()
                .filter_map(|r| serde_json::from_value(r.get("figures")?.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether an analysis reads runs rather than server starts: it names `run` as a
/// dimension, in `where` or in an `exclude`.
pub fn reads_runs(def: &cairn_defs::AnalysisDef) -> bool {
    [def.rows(), def.columns(), def.x()].contains(&Some(RUN))
        || def.filter.contains_key(RUN)
        || def.exclude.iter().any(|cell| cell.contains_key(RUN))
}

/// The runs of `points` as points of their own, `run` (1-based) among their parameters — a
/// trial of one run is its run 1 — kept when they match the analysis's `where run=…` and
/// no `exclude` naming `run` (its other keys as the point's dimensions).
pub fn runs_of(points: &[TrialPoint], def: &cairn_defs::AnalysisDef) -> Vec<TrialPoint> {
    let mut out = Vec::new();
    for p in points {
        let figures: Vec<Figures> = if p.runs.is_empty() {
            vec![p.figures.clone()]
        } else {
            p.runs.clone()
        };
        for (i, f) in figures.into_iter().enumerate() {
            let mut q = p.clone();
            q.params.insert(RUN.to_string(), json!(i + 1));
            q.figures = f;
            q.runs = Vec::new();
            let matches = |cell: &cairn_defs::Props| {
                cell.iter().all(|(k, v)| {
                    q.dimension(k).as_deref()
                        == Some(crate::trial_points::display_value(v).as_str())
                })
            };
            let wanted = def.filter.get(RUN).is_none_or(|v| {
                matches(&cairn_defs::Props::from_iter([(
                    RUN.to_string(),
                    v.clone(),
                )]))
            });
            let excluded = def
                .exclude
                .iter()
                .any(|cell| cell.contains_key(RUN) && matches(cell));
            if wanted && !excluded {
                out.push(q);
            }
        }
    }
    out
}

/// Before anything runs: an analysis that reads runs gets `run` among the dimensions of
/// its trials (1..=the most runs of any of them); one whose trials each run once per server
/// start is refused at the property that names `run`.
pub fn check_run_dimension(
    graph: &cairn_graph::StepGraph,
    step: &Step,
    def: &cairn_defs::AnalysisDef,
    params: &mut BTreeMap<String, Vec<String>>,
) -> Result<(), cairn_engine::CheckError> {
    if !reads_runs(def) {
        return Ok(());
    }
    let most = step
        .inputs
        .iter()
        .map(|i| &graph.steps[i.from])
        .filter(|s| s.kind == cairn_graph::StepKind::TRIAL)
        .map(count)
        .max()
        .unwrap_or(1);
    if most < 2 {
        let prop = [
            ("rows", def.rows()),
            ("columns", def.columns()),
            ("x", def.x()),
        ]
        .into_iter()
        .find(|(_, d)| *d == Some(RUN))
        .map_or("kind", |(p, _)| p);
        return Err(cairn_engine::CheckError::new(
            "analysis",
            prop,
            "`run` is a dimension of trials whose block declares `runs N` (consecutive runs on one server start); these trials run once per start: add `runs 3` to their trials block",
        ));
    }
    let mut runs: Vec<String> = match def.filter.get(RUN) {
        Some(v) => vec![crate::trial_points::display_value(v)],
        None => (1..=most).map(|r| r.to_string()).collect(),
    };
    // an `exclude` of runs alone leaves those runs out of every cell
    for cell in def.exclude.iter().filter(|c| c.len() == 1) {
        if let Some(v) = cell.get(RUN) {
            runs.retain(|r| *r != crate::trial_points::display_value(v));
        }
    }
    params.insert(RUN.to_string(), runs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(tps: f64) -> Figures {
        Figures::from_map(BTreeMap::from([("tps".to_string(), tps)]))
    }

    #[test]
    fn a_trials_figures_are_the_median_of_its_runs() {
        let m = median_figures([&figures(100.0), &figures(300.0), &figures(120.0)]);
        assert_eq!(m.get_named("tps"), Some(120.0));
        let m = median_figures([&figures(100.0), &figures(200.0)]);
        assert_eq!(m.get_named("tps"), Some(150.0));
    }

    fn run(tps: f64) -> RunResult {
        RunResult {
            outcome: Outcome {
                figures: figures(tps),
                headline: format!("{tps} tps"),
                detail: json!({"tps": tps}),
            },
            status_deltas: BTreeMap::from([("Questions".to_string(), tps)]),
            efficiency: json!({"from": tps}),
        }
    }

    #[test]
    fn runs_combine_into_one_trial_and_keep_each_run() {
        let runs: Vec<RunResult> = [100.0, 300.0, 200.0].map(run).into();
        let (outcome, deltas, efficiency) = combine(&runs);
        assert_eq!(outcome.figures.get_named("tps"), Some(200.0));
        assert_eq!(
            outcome.headline,
            "3 runs on one server start, figures their medians; run 1: 100 tps; run 2: 300 tps; run 3: 200 tps"
        );
        // run 1's detail is metrics.json; status counters add up over the runs
        assert_eq!(outcome.detail, json!({"tps": 100.0}));
        assert_eq!(deltas["Questions"], 600.0);
        assert_eq!(efficiency["runs"][2]["from"], 200.0);
        let record = runs_record(&runs);
        assert_eq!(
            record[1],
            json!({"run": 2, "headline": "300 tps", "figures": {"tps": 300.0}})
        );
        assert_eq!(runs_output(&runs)[2]["detail"], json!({"tps": 200.0}));
        // a record's runs read back as each run's figures
        let extra = serde_json::Map::from_iter([("runs".to_string(), record)]);
        let read = recorded_runs(&extra);
        assert_eq!(read.len(), 3);
        assert_eq!(read[1].get_named("tps"), Some(300.0));
        let many: Vec<RunResult> = (1..=5).map(|i| run(f64::from(i))).collect();
        assert!(combine(&many)
            .0
            .headline
            .contains("run 2: 2 tps; …; run 5: 5 tps"));
    }

    #[test]
    fn run_one_keeps_the_passes_seed() {
        assert_eq!(seed(3, 1), 3);
        assert_ne!(seed(3, 2), seed(3, 1));
        assert_ne!(seed(3, 2), seed(4, 2));
    }

    fn def(v: Value) -> cairn_defs::AnalysisDef {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn an_analysis_of_runs_reads_each_run_as_a_point() {
        let p = TrialPoint {
            address: "trial/t/a#1".into(),
            server: "a".into(),
            pass: 1,
            figures: figures(200.0),
            runs: vec![figures(100.0), figures(200.0), figures(300.0)],
            ..TrialPoint::default()
        };
        let single = TrialPoint {
            figures: figures(50.0),
            ..p.clone()
        };
        let single = TrialPoint {
            runs: Vec::new(),
            ..single
        };
        let all = def(json!({"kind": "table", "props": {"columns": "run"}}));
        assert!(reads_runs(&all));
        let runs = runs_of(&[p.clone(), single], &all);
        let got: Vec<(String, f64)> = runs
            .iter()
            .map(|q| {
                (
                    q.dimension("run").unwrap(),
                    q.figures.get_named("tps").unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("1".into(), 100.0),
                ("2".into(), 200.0),
                ("3".into(), 300.0),
                ("1".into(), 50.0)
            ]
        );
        let first = def(json!({"kind": "table", "props": {}, "filter": {"run": 1}}));
        assert!(reads_runs(&first));
        let runs = runs_of(std::slice::from_ref(&p), &first);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].figures.get_named("tps"), Some(100.0));
        let not_first = def(json!({"kind": "table", "props": {}, "exclude": [{"run": 1}]}));
        assert_eq!(runs_of(std::slice::from_ref(&p), &not_first).len(), 2);
        assert!(!reads_runs(&def(
            json!({"kind": "table", "props": {"metric": "tps"}})
        )));
    }
}
