//! `cairn report PLAN` and the end of `cairn run`: render the study's report from recorded
//! trials (never measuring), write it to `results/<study>/` (`report.md`, `report.html`,
//! `data.csv`, `series.csv`, `data.json`, the plots) with the plan it was made from in its
//! provenance, and show the study's main table and the claims' verdicts in the terminal.
//!
//! (`event_output.rs` beside this module is something else: the output of engine events.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_engine::execute::{read_json, Done};
use cairn_engine::{RunOptions, Status};
use cairn_graph::{Selector, Step, StepGraph, StepKind};
use cairn_kinds::analysis_step::TABLE_JSON;
use cairn_kinds::claim_step::CLAIM_JSON;
use cairn_kinds::report_step::{self, PlanSource};
use cairn_plan::Plan;
use cairn_report::claim::ClaimResult;
use cairn_report::table::{render_markdown, Table};
use cairn_store::{Record, Store};

use crate::args::Cli;
use crate::context::{self, Exit};
use crate::{event_output, BAD_INPUT, FAILED, INTERRUPTED, OK};

/// What each step handed on, by step id, where a run just served or ran it (a conditional
/// pass the adaptive rule did not need among them, with no record).
pub struct RunResults<'a>(&'a [Option<Arc<Done>>]);

impl RunResults<'_> {
    pub fn from_run(summary: &cairn_engine::RunSummary) -> RunResults<'_> {
        RunResults(&summary.done)
    }

    fn done(&self, step: usize) -> Option<&Done> {
        self.0.get(step)?.as_deref()
    }

    /// What `step`'s inputs handed on, in the order of its inputs; `None` unless all did.
    fn inputs(&self, step: &Step) -> Option<Vec<&Done>> {
        step.inputs.iter().map(|i| self.done(i.from)).collect()
    }
}

/// The record of `step` for its current key, if the store has it.
fn current_record(store: &Store, results: &RunResults, step: &Step) -> Option<Record> {
    let done = results.done(step.id).filter(|d| !d.is_not_needed())?;
    store.get_record(&done.key).ok().flatten()
}

/// blake3 over the plan's files (path and text, root first): what the report was made from.
pub fn plan_digest(plan: &Plan) -> String {
    let mut h = blake3::Hasher::new();
    for s in &plan.sources {
        h.update(s.path.to_string_lossy().as_bytes());
        h.update(&[0]);
        h.update(s.text.as_bytes());
        h.update(&[0]);
    }
    h.finalize().to_hex().to_string()
}

/// Where a report's files go: `results/<study>/`, or `results/<study>/<report>/` when the
/// study has several reports.
fn report_dir(results: &Path, graph: &StepGraph, step: &Step) -> PathBuf {
    let dir = results.join(&graph.study);
    if graph.count(StepKind::REPORT) > 1 {
        dir.join(&step.name)
    } else {
        dir
    }
}

/// Write `bytes` to `path` whole or not at all (a temporary file renamed over it).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("cairn-tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Write every finished report of the study to its directory: its outputs as recorded,
/// except report.md and report.html, rendered again from the report's document with the
/// plan it was made from first under its provenance (the report's key leaves the plan's text
/// out on purpose: comments do not re-render it). Returns the directories written, each with
/// the files written into it.
fn export(
    cli: &Cli,
    plan: &Plan,
    graph: &StepGraph,
    store: &Store,
    results: &RunResults,
) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let source = PlanSource {
        root: plan
            .sources
            .first()
            .map_or(String::new(), |s| s.path.display().to_string()),
        digest: plan_digest(plan),
    };
    let mut written = Vec::new();
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::REPORT) {
        let Some(record) = current_record(store, results, step) else {
            continue;
        };
        // a report with a result for its current key had every input in this run
        let inputs = results
            .inputs(step)
            .ok_or_else(|| format!("the inputs of {} are not all here", step.address))?;
        let report = report_step::exported(store, step, &inputs, &source)
            .map_err(|e| format!("rendering {}: {e}", step.address))?;
        let dir = report_dir(&cli.results, graph, step);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mut files = Vec::new();
        for (name, blob) in &record.outputs {
            let bytes = match name.as_str() {
                report_step::REPORT_MD => cairn_report::markdown::render(&report).into_bytes(),
                report_step::REPORT_HTML => cairn_report::html::render(&report).into_bytes(),
                _ => store
                    .read_blob(blob)
                    .map_err(|e| format!("reading {name} of {}: {e}", step.address))?,
            };
            let path = dir.join(name);
            write_atomically(&path, &bytes)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            files.push(name.clone());
        }
        written.push((dir, files));
    }
    Ok(written)
}

/// The study's main table: the first table of the first report, else the first analysis.
fn main_table(graph: &StepGraph) -> Option<&Step> {
    let from_report = graph
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::REPORT)
        .flat_map(|r| r.inputs.iter().map(|i| &graph.steps[i.from]))
        .find(|s| s.kind == StepKind::ANALYSIS);
    from_report.or_else(|| graph.steps.iter().find(|s| s.kind == StepKind::ANALYSIS))
}

/// The main table and every claim's verdict, as text for the terminal (empty when the study
/// has neither, or they have not run).
pub fn outcome_text(graph: &StepGraph, store: &Store, results: &RunResults) -> String {
    let mut out = String::new();
    if let Some(step) = main_table(graph) {
        if let Some(r) = current_record(store, results, step) {
            if let Ok(table) = read_json::<Table>(store, &r.outputs, TABLE_JSON) {
                out.push_str(&render_markdown(&step.name, &table));
            }
        }
    }
    let mut claims = String::new();
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::CLAIM) {
        let line = match current_record(store, results, step)
            .map(|r| read_json::<ClaimResult>(store, &r.outputs, CLAIM_JSON))
        {
            Some(Ok(c)) => cairn_report::claim::claim_line(&step.name, &c),
            _ => format!(
                "\"{}\": not checked (its trials did not all run)",
                step.name
            ),
        };
        claims.push_str(&format!("- {line}\n"));
    }
    if !claims.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("### Claims\n\n");
        out.push_str(&claims);
    }
    out
}

/// After `cairn run`: export the reports and show the outcome (not with `--json`, whose
/// stdout is the events), from the results the run served and made.
pub fn after_run(
    cli: &Cli,
    plan: &Plan,
    graph: &StepGraph,
    env: &cairn_engine::Env<'_>,
    summary: &cairn_engine::RunSummary,
) {
    let results = RunResults::from_run(summary);
    let dirs = export(cli, plan, graph, env.store, &results).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        Vec::new()
    });
    if cli.json {
        return;
    }
    let text = outcome_text(graph, env.store, &results);
    if !text.is_empty() {
        println!("\n{}", text.trim_end());
    }
    for (d, _) in dirs {
        println!("\nreport: {}", d.join(report_step::REPORT_MD).display());
    }
}

/// `cairn report PLAN`: render the reports from the recorded trials (analyses, claims and
/// reports run if stale; trials never do) and write them to `results/<study>/`.
pub fn report(cli: &Cli, path: &Path, measured_on: Option<&str>) -> Result<i32, Exit> {
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    crate::preflight::check(&plan, &graph)?;
    if graph.count(StepKind::REPORT) == 0 {
        eprintln!(
            "error: {} declares no report; add one, e.g. `report \"summary\" {{ analyses \"tps\" }}`",
            path.display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let machine = context::Machine::new(cache);
    let reading = crate::measured_on::reading_classes(&machine, &graph, &store, measured_on)?;
    let mut env = machine.env(&graph, &store, &reading.fingerprint);
    env.read_classes = Some(&reading.elsewhere);
    let only = vec![Selector::parse("kind:report").map_err(context::fail(BAD_INPUT))?];
    // a report never measures: every trial it reads must be recorded for this definition
    let selected = cairn_engine::run::selection(&graph, &only);
    let all = cairn_engine::statuses(&graph, &env, &[], false);
    let missing: Vec<&str> = graph
        .steps
        .iter()
        .filter(|s| {
            // a pass the adaptive rule does not need has no result, and needs none
            selected[s.id]
                && s.measure
                && !matches!(all[s.id].status, Status::Cached | Status::NotNeeded)
        })
        .map(|s| s.address.as_str())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "error: {} of the study's measurements have no result for their current definition on this machine (e.g. {}); run `cairn run {}` first",
            missing.len(),
            missing[0],
            path.display()
        );
        return Err(Exit(FAILED));
    }
    if let Err(e) = cairn_exec::command_runner::prepare_work_root(machine.host.work.root()) {
        eprintln!(
            "error: cannot create {}: {e}",
            machine.host.work.root().display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let opts = RunOptions {
        jobs: 1,
        keep_going: false,
        only,
        fresh: Vec::new(),
        seed: None,
        retries: cairn_engine::RetryPolicy::default(),
    };
    let mut reporter = event_output::pick_for_render(cli.json, cli.verbose);
    let summary = cairn_engine::run(&graph, &env, &opts, reporter.as_mut());
    if summary.cancelled {
        return Ok(INTERRUPTED);
    }
    if summary.failed > 0 {
        return Ok(FAILED);
    }
    let results = RunResults::from_run(&summary);
    let dirs = export(cli, &plan, &graph, &store, &results).map_err(context::fail(FAILED))?;
    if cli.json {
        for (d, _) in &dirs {
            println!(
                "{}",
                serde_json::json!({"report": d.join(report_step::REPORT_MD), "data_csv": d.join(report_step::DATA_CSV), "data_json": d.join(report_step::DATA_JSON)})
            );
        }
        return Ok(OK);
    }
    let text = outcome_text(&graph, &store, &results);
    if !text.is_empty() {
        println!("{}\n", text.trim_end());
    }
    for (d, files) in &dirs {
        // the plots last: what a person opens next
        let (plots, others): (Vec<&String>, Vec<&String>) =
            files.iter().partition(|f| f.starts_with("plot-"));
        println!(
            "wrote {}/: {}",
            d.display(),
            others
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for p in plots {
            println!("plot: {}", d.join(p).display());
        }
    }
    Ok(OK)
}
