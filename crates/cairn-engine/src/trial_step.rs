//! Trial steps, one measurement each: start the server from the dataset's snapshot, verify it is the variant the plan names, run the workload between two `SHOW GLOBAL STATUS` readings, stop the server — and keep everything it said.
//!
//! Outputs: `figures.json` (headline and flat figures), `metrics.json` (the driver's full
//! measurements: series, histograms, …), `server.json` (the verified variant, status deltas,
//! start time), `variables.json` (`SHOW GLOBAL VARIABLES`) and `server.log`. The record's
//! `extra` repeats the headline, the figures and the variant, so `cairn results` reads
//! records only. A server that dies or hangs fails the trial with its log tail; the server
//! is removed on every path, also on Ctrl-C.

use std::collections::BTreeMap;
use std::time::Instant;

use cairn_graph::Step;
use cairn_workload::server::{global_status, global_variables, status_deltas};
use cairn_workload::{Dataset, RunContext, Workload, WorkloadDef};
use serde_json::{json, Map, Value};

use crate::dataset_step::{self, image_of, input, server_def, DatasetOutput};
use crate::execute::{failed, read_json, Built, Done, StepContext, StepError};
use crate::server_run::{LiveServer, StartRequest};

/// Outputs of a trial.
pub const FIGURES: &str = "figures.json";
pub const METRICS: &str = "metrics.json";
pub const SERVER: &str = "server.json";
pub const VARIABLES: &str = "variables.json";
pub const SERVER_LOG: &str = "server.log";

/// The workload of a trial's definition (one matrix point).
pub fn workload_def(step: &Step) -> Result<WorkloadDef, String> {
    serde_json::from_value(step.definition["workload"].clone())
        .map_err(|e| format!("the workload definition: {e}"))
}

/// Check a trial's workload before anything runs (bad parameters are bad input).
/// The error names the parameter where it can (`Error::Param`), for a diagnostic.
pub fn check(
    step: &Step,
    dataset: Option<&cairn_workload::DatasetDef>,
) -> Result<(), cairn_workload::Error> {
    let wdef = workload_def(step).map_err(cairn_workload::Error::Invalid)?;
    let ds = dataset.map(Dataset::from_def).transpose()?;
    Workload::from_def(&wdef, ds.as_ref(), u64::from(step.pass)).map(|_| ())
}

/// Measure one trial.
pub fn perform(ctx: &StepContext<'_>, step: &Step, inputs: &[&Done]) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let sdef = server_def(step)?;
    let wdef = workload_def(step).map_err(failed)?;
    let image = image_of(ctx, step, inputs)?;
    let dataset: Option<DatasetOutput> = input(step, inputs, "dataset")
        .map(|d| read_json(ctx.store, &d.outputs, dataset_step::OUTPUT))
        .transpose()
        .map_err(|e| failed(format!("reading the dataset's output: {e}")))?;
    let ds = dataset
        .as_ref()
        .map(|d| Dataset::from_def(&d.definition))
        .transpose()
        .map_err(failed)?;
    // the pass index seeds the workload's generators: passes differ, re-runs repeat
    let workload = Workload::from_def(&wdef, ds.as_ref(), u64::from(step.pass)).map_err(failed)?;
    let snapshot = dataset.as_ref().map(|d| ctx.cache_root.join(&d.snapshot));
    if let Some(s) = &snapshot {
        if !s.exists() {
            return Err(failed(format!(
                "the dataset snapshot {} is gone from this machine's cache; run again to rebuild it",
                s.display()
            )));
        }
    }

    let mut live = LiveServer::start(&StartRequest {
        def: &sdef,
        image: image.as_ref(),
        run_id: ctx.run_id,
        step_id: &step.address,
        snapshot: snapshot.as_deref(),
        ready_timeout: dataset_step::READY_TIMEOUT,
    })
    .map_err(failed)?;
    let verification = live.verify().map_err(failed)?;
    let database = dataset
        .as_ref()
        .map_or("cairn".to_string(), |d| d.database.clone());
    let target = live.target(&database);
    if dataset.is_none() {
        target.ensure_database().map_err(failed)?;
    }
    let variables = global_variables(&target).map_err(failed)?;
    let before = global_status(&target).map_err(failed)?;
    if cairn_exec::cancel::is_cancelled() {
        return Err(StepError::Cancelled);
    }
    let t_run = Instant::now();
    let stop = || cairn_exec::cancel::is_cancelled();
    let tools = live.tool_runner();
    let outcome = workload.run(&RunContext {
        target: &target,
        stop: &stop,
        tools: tools
            .as_ref()
            .map(|t| t as &dyn cairn_workload::workload::ToolRunner),
    });
    let run_ms = t_run.elapsed().as_secs_f64() * 1e3;
    let outcome = match outcome {
        Ok(o) => o,
        Err(cairn_workload::Error::Stopped) => return Err(StepError::Cancelled),
        Err(e) => {
            let running = live.is_running();
            let why = if running {
                format!("the workload failed: {e}")
            } else {
                format!("the server died during the workload: {e}")
            };
            return Err(failed(format!(
                "{why}\n--- last lines of the server log ---\n{}",
                live.log_tail()
            )));
        }
    };
    let after = global_status(&target).map_err(|e| {
        failed(format!(
            "the server stopped answering after the workload: {e}\n--- last lines of the server log ---\n{}",
            live.log_tail()
        ))
    })?;
    let deltas = status_deltas(&before, &after);
    let log = live.log();
    live.stop()
        .map_err(|e| failed(format!("stopping the server: {e}")))?;

    let server = json!({
        "verification": verification,
        "status_deltas": deltas,
        "database": database,
        "image": image.as_ref().map(|i| json!({"reference": i.reference, "image_id": i.manifest.image_id})),
    });
    let figures = json!({"headline": outcome.headline, "figures": outcome.figures});
    let put = |bytes: Vec<u8>, name: &str| {
        ctx.store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {name}: {e}")))
    };
    let json_bytes = |v: &Value| serde_json::to_vec_pretty(v).expect("serialises");
    let outputs = BTreeMap::from([
        (FIGURES.to_string(), put(json_bytes(&figures), FIGURES)?),
        (
            METRICS.to_string(),
            put(json_bytes(&outcome.detail), METRICS)?,
        ),
        (SERVER.to_string(), put(json_bytes(&server), SERVER)?),
        (
            VARIABLES.to_string(),
            put(
                serde_json::to_vec_pretty(&variables).expect("serialises"),
                VARIABLES,
            )?,
        ),
        (SERVER_LOG.to_string(), put(log.into_bytes(), SERVER_LOG)?),
    ]);
    let mut extra = Map::new();
    extra.insert("headline".into(), json!(outcome.headline));
    extra.insert("figures".into(), json!(outcome.figures));
    extra.insert("params".into(), json!(step.params));
    extra.insert("variant".into(), json!(verification));
    if let Some(i) = &image {
        extra.insert(
            "image".into(),
            json!({"reference": i.reference, "image_id": i.manifest.image_id}),
        );
    }
    extra.insert(
        "timings".into(),
        json!({"ready_ms": verification.ready_ms, "workload_ms": run_ms, "total_ms": t0.elapsed().as_secs_f64() * 1e3}),
    );
    Ok(Built { outputs, extra })
}
