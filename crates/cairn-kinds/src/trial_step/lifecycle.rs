//! A trial's server lifecycle around its workload: the settle window after the server's
//! start ([`crate::trial_settle`]) and the consecutive runs on it ([`crate::trial_runs`]),
//! and what the record keeps of them. A trial of one run and no settle records exactly what
//! it always did.

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_engine::error::{failed, StepError};
use cairn_engine::Env;
use cairn_graph::Step;
use cairn_store::BlobRef;
use cairn_workload::server::status_deltas;
use cairn_workload::{Outcome, Target};
use serde_json::{Map, Value};

use super::{measuring_ms, run_workload, BeforeWorkload, TrialServer, TrialSetup};
use crate::trial_runs;

/// The settle window of a trial whose block declares `settle`: the server idle, read at
/// both ends (its record, `extra.settle`); `None` without one.
pub(super) fn settle(
    ctx: &Env<'_>,
    step: &Step,
    server: &mut TrialServer,
    status_target: &Target,
) -> Result<Option<Value>, StepError> {
    let Some(seconds) = step
        .trial_def()
        .ok()
        .and_then(|d| d.lifecycle)
        .and_then(|l| l.settle_s)
    else {
        return Ok(None);
    };
    let window = Duration::from_secs_f64(seconds);
    let cancelled = || ctx.is_cancelled();
    let settled = crate::trial_settle::settle(
        window,
        server.live.resource_probe(),
        status_target,
        &cancelled,
    )
    .map_err(|e| server.stalled("while it settled (SHOW GLOBAL STATUS)", &e))?;
    if ctx.is_cancelled() {
        return Err(StepError::cancelled());
    }
    if !server.live.is_running() {
        return Err(failed(format!(
            "the server died while it settled{}",
            server.log_tail_section()
        )));
    }
    Ok(Some(settled.record(window)))
}

/// The trial's workload over all its runs: its outcome (one run's, or the runs' combined:
/// [`trial_runs::combine`]), the status deltas and efficiency record, and every run.
pub(super) struct AllRuns {
    pub(super) outcome: Outcome,
    pub(super) deltas: BTreeMap<String, f64>,
    pub(super) efficiency: Value,
    /// Warmups and measured windows of every run.
    pub(super) measuring_ms: f64,
    /// Milliseconds the workload ran, all runs.
    pub(super) workload_ms: f64,
    /// The runs' on-CPU stacks merged (or why there are none), when the block asks for a
    /// profile.
    pub(super) profile: Option<Result<cairn_analysis::profile::Profile, String>>,
    /// The runs' waits summed (or why there are none), when the block asks for them.
    pub(super) waits: Option<Result<crate::trial_profile::MergedWaits, String>>,
}

/// Run the workload `runs` times back to back on the one server (once without `runs`),
/// each run metered from the status reading that ended the one before.
pub(super) fn run_workloads(
    ctx: &Env<'_>,
    step: &Step,
    setup: &TrialSetup,
    server: &mut TrialServer,
    status_target: &Target,
    before: &BeforeWorkload,
) -> Result<(AllRuns, Vec<trial_runs::RunResult>), StepError> {
    let count = trial_runs::count(step);
    let mut runs = Vec::new();
    let mut profiles = Vec::new();
    let mut waits = Vec::new();
    let mut status_before = before.status.clone();
    let (mut measuring, mut workload_ms) = (0.0, 0.0);
    for run in 1..=count {
        if ctx.is_cancelled() {
            return Err(StepError::cancelled());
        }
        let later;
        let workload = if run == 1 {
            &setup.workload
        } else {
            later = trial_runs::workload_of_run(
                step,
                setup.dataset.as_ref().map(|d| &d.definition),
                run,
            )
            .map_err(failed)?;
            &later
        };
        let mut measured =
            run_workload(ctx, setup, workload, server, status_target, &status_before)?;
        let (after, after_read) = measured
            .window_end
            .status_after()
            .map_err(|e| server.stalled("after the workload (SHOW GLOBAL STATUS)", &e))?;
        profiles.push(measured.window_end.take_profile());
        waits.push(measured.window_end.take_waits());
        let deltas = status_deltas(&status_before, &after);
        let efficiency =
            measured
                .window_end
                .record(&after, after_read, &mut measured.outcome.figures);
        measuring += measuring_ms(measured.warmup, &measured.outcome.figures, measured.run_ms);
        workload_ms += measured.run_ms;
        status_before = after;
        runs.push(trial_runs::RunResult {
            outcome: measured.outcome,
            status_deltas: deltas,
            efficiency,
        });
    }
    let (outcome, deltas, efficiency) = if runs.len() == 1 {
        let only = runs.pop().expect("one run");
        (only.outcome, only.status_deltas, only.efficiency)
    } else {
        trial_runs::combine(&runs)
    };
    Ok((
        AllRuns {
            outcome,
            deltas,
            efficiency,
            measuring_ms: measuring,
            workload_ms,
            profile: setup
                .profiles
                .cpu
                .then(|| crate::trial_profile::merge(profiles)),
            waits: setup
                .profiles
                .waits
                .then(|| crate::trial_profile::merge_waits(waits)),
        },
        runs,
    ))
}

/// Keep the settle window's reading (`extra.settle`) and, for several runs, each run's
/// figures (`extra.runs`) and everything of them (`runs.json`).
pub(super) fn record(
    ctx: &Env<'_>,
    settled: Option<Value>,
    runs: &[trial_runs::RunResult],
    extra: &mut Map<String, Value>,
    outputs: &mut BTreeMap<String, BlobRef>,
) -> Result<(), StepError> {
    if let Some(settled) = settled {
        extra.insert("settle".into(), settled);
    }
    if runs.len() > 1 {
        extra.insert("runs".into(), trial_runs::runs_record(runs));
        let bytes = serde_json::to_vec_pretty(&trial_runs::runs_output(runs)).expect("serialises");
        let blob = ctx
            .store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {}: {e}", trial_runs::RUNS_JSON)))?;
        outputs.insert(trial_runs::RUNS_JSON.to_string(), blob);
    }
    Ok(())
}
