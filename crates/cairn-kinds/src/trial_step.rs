//! Trial steps, one measurement each: start the server from the dataset's snapshot, verify it is the variant the plan names, run the workload between two `SHOW GLOBAL STATUS` readings, stop the server — and keep everything it said.
//!
//! Outputs: `figures.json` (headline and flat figures), `metrics.json` (the driver's full
//! measurements: series, histograms, …), `server.json` (the verified variant, status deltas,
//! start time, [efficiency](crate::trial_efficiency) readings), `variables.json` (`SHOW GLOBAL VARIABLES`) and `server.log`. The record's
//! `extra` repeats the headline, the figures and the variant, so `cairn results` reads
//! records only. A server that dies or hangs fails the trial with its log tail; the server
//! is removed on every path, also on Ctrl-C. Every phase is bounded by the
//! [watchdog](crate::trial_watchdog), and a measured window that overran its declared
//! duration fails the trial: a stalled server is never recorded as a measurement.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cairn_graph::Step;
use cairn_workload::server::{connection_tls, global_status, global_variables, status_deltas};
use cairn_workload::{Dataset, RunContext, Workload, WorkloadDef};
use serde_json::{json, Map, Value};

use crate::dataset_step::{self, image_of, input, DatasetOutput};
use crate::server_run::{LiveServer, ServerDef, StartRequest};
use crate::trial_efficiency::WindowMeter;
use crate::trial_watchdog::{check_window, Watchdog, STATUS_TIMEOUT};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{read_json, Built, Done};
use cairn_engine::Env;

/// Outputs of a trial.
pub const FIGURES: &str = "figures.json";
pub const METRICS: &str = "metrics.json";
pub const SERVER: &str = "server.json";
pub const VARIABLES: &str = "variables.json";
pub const SERVER_LOG: &str = "server.log";

/// The workload of a trial's definition (one matrix point).
pub fn workload_def(step: &Step) -> Result<WorkloadDef, String> {
    step.trial_def().map(|d| d.workload)
}

/// Check a trial before anything runs (bad parameters are bad input): its server
/// ([`dataset_step::checked_server`]) and its workload against its dataset's definition.
/// `cairn check` (through [`TrialKind`]'s `check`) and [`perform`] both go through here, so
/// nothing `perform` would refuse before measuring passes `check`. The error names the
/// parameter or option where it can (`Error::Param`), for a diagnostic.
pub fn check(
    step: &Step,
    dataset: Option<&cairn_workload::DatasetDef>,
) -> Result<(ServerDef, Workload), cairn_workload::Error> {
    let sdef = dataset_step::checked_server(step)?;
    let wdef = workload_def(step).map_err(cairn_workload::Error::Invalid)?;
    let ds = dataset.map(Dataset::from_def).transpose()?;
    // the pass index seeds the workload's generators: passes differ, re-runs repeat
    let workload = Workload::from_def(&wdef, ds.as_ref(), u64::from(step.pass))?;
    workload.supports(crate::server_run::protocol_of(&sdef)?)?;
    if matches!(workload, Workload::ExternalSysbench(_)) {
        let runtime = cairn_exec::runtime::Runtimes::registered()
            .get(sdef.executor_or_default())
            .map_err(cairn_workload::Error::Invalid)?;
        runtime
            .runs_tools()
            .map_err(|why| cairn_workload::Error::Param {
                what: "driver",
                name: "tool".into(),
                message: format!("the {} executor: {why}", runtime.name()),
            })?;
    }
    Ok((sdef, workload))
}

/// Where a trial's clients ran, for its record: the declared path (`null` when the plan
/// named none), the link, and the place of the driver that ran (native or external).
fn client_record(
    sdef: &ServerDef,
    placed: Option<&cairn_exec::runtime::NativeClient>,
    external: bool,
) -> Value {
    let place = match (placed, external) {
        (Some(p), false) => p.native.clone(),
        (Some(p), true) => p.external.clone(),
        (None, false) => "cairn's threads on the host (no `client` declared)".into(),
        (None, true) => "another container on the run network (no `client` declared)".into(),
    };
    json!({
        "path": sdef.client,
        "link": sdef.link,
        "driver": if external { "external" } else { "native" },
        "place": place,
    })
}

/// Measure one trial.
pub fn perform(ctx: &Env<'_>, step: &Step, inputs: &[&Done]) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let image = image_of(ctx, step, inputs)?;
    let dataset: Option<DatasetOutput> = input(step, inputs, "dataset")
        .map(|d| read_json(ctx.store, &d.outputs, dataset_step::OUTPUT))
        .transpose()
        .map_err(|e| failed(format!("reading the dataset's output: {e}")))?;
    let (sdef, workload) = check(step, dataset.as_ref().map(|d| &d.definition)).map_err(failed)?;
    let wdef = workload_def(step).map_err(failed)?;
    let timeout = cairn_workload::workload::timeout_of(&wdef).map_err(failed)?;
    let snapshot = dataset
        .as_ref()
        .map(|d| crate::host(ctx).cache_root.as_path().join(&d.snapshot));
    if let Some(s) = &snapshot {
        if !s.exists() {
            return Err(failed(format!(
                "the dataset snapshot {} is gone from this machine's cache; run again to rebuild it",
                s.display()
            )));
        }
    }

    // nothing else measures on this machine from the server's start to its stop
    let slot =
        cairn_exec::measure_lock::MeasureLock::acquire(crate::host(ctx).cancel()).map_err(|e| {
            if ctx.is_cancelled() {
                StepError::cancelled()
            } else {
                failed(e)
            }
        })?;
    let t_start = Instant::now();
    let mut live = LiveServer::start(
        &crate::host(ctx).runtimes,
        &StartRequest {
            def: &sdef,
            image: image.as_ref(),
            run_id: ctx.run_id,
            step_id: &step.address,
            snapshot: snapshot.as_deref(),
            ready_timeout: dataset_step::READY_TIMEOUT,
            // the trial's server is the plan's, without the load's settings
            extra_options: Vec::new(),
        },
    )
    .map_err(failed)?;
    let start_ms = ms(t_start);
    let verification = live.verify().map_err(failed)?;
    // where the clients run: the plan's `client` (and `link`), else each driver's own place
    let placed = live.place_clients(&sdef).map_err(failed)?;
    let external = matches!(workload, Workload::ExternalSysbench(_));
    let client = client_record(&sdef, placed.as_ref(), external);
    let database = dataset
        .as_ref()
        .map_or("cairn".to_string(), |d| d.database.clone());
    let log_tail = |live: &LiveServer| {
        format!(
            "\n--- last lines of the server log ---\n{}",
            live.log_tail()
        )
    };
    // the status reads around the workload take milliseconds: a server that does not
    // answer them within STATUS_TIMEOUT has stalled
    let mut status_target = live.target(&database);
    status_target.io_timeout = Some(STATUS_TIMEOUT);
    let stalled = |live: &mut LiveServer, phase: &str, e: &cairn_workload::Error| {
        let why = if e.is_no_answer() {
            format!(
                "the server stalled: it gave no answer {phase} within {} s",
                STATUS_TIMEOUT.as_secs()
            )
        } else if !live.is_running() {
            format!("the server died {phase}")
        } else {
            format!("the server failed {phase}")
        };
        failed(format!("{why}: {e}{}", log_tail(live)))
    };
    if dataset.is_none() {
        status_target
            .ensure_database()
            .map_err(|e| stalled(&mut live, "while creating the database", &e))?;
    }
    let variables = global_variables(&status_target)
        .map_err(|e| stalled(&mut live, "before the workload (SHOW GLOBAL VARIABLES)", &e))?;
    // the server's view of a TLS connection of cairn's client (before the status reading,
    // so it counts in no delta)
    let tls = connection_tls(&status_target).map_err(|e| {
        stalled(
            &mut live,
            "before the workload (reading the connection's TLS)",
            &e,
        )
    })?;
    let before = global_status(&status_target)
        .map_err(|e| stalled(&mut live, "before the workload (SHOW GLOBAL STATUS)", &e))?;
    if ctx.is_cancelled() {
        return Err(StepError::cancelled());
    }
    let warmup = workload.declared_run().map_or(Duration::ZERO, |(w, _)| w);
    let meter = WindowMeter::start(live.resource_probe(), &before, warmup, &status_target);
    let t_run = Instant::now();
    let watchdog = Watchdog::start(&workload, timeout);
    let mut target = match &placed {
        Some(p) => crate::server_run::target_of(p.endpoint.clone(), &database, live.protocol()),
        None => live.target(&database),
    };
    target.io_timeout = Some(watchdog.io_timeout);
    // the drivers ask this between events (a read that waits is ended by the io timeout):
    // Ctrl-C, or a run past the watchdog's deadline
    let stop = || ctx.is_cancelled() || watchdog.expired();
    let tools = live
        .tool_runner()
        .map(|t| t.with_deadline(watchdog.deadline()));
    let run = || {
        workload.run(&RunContext {
            target: &target,
            stop: &stop,
            tools: tools
                .as_ref()
                .map(|t| t as &dyn cairn_workload::workload::ToolRunner),
        })
    };
    // the native driver's threads start inside the namespace of the declared path
    let outcome = match placed.as_ref().and_then(|p| p.netns.as_deref()) {
        Some(netns) if !external => {
            cairn_exec::netpath::run_in_netns(netns, run).map_err(failed)?
        }
        _ => run(),
    };
    let run_ms = t_run.elapsed().as_secs_f64() * 1e3;
    let mut window_end = meter.stop();
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(cairn_workload::Error::Stopped) if ctx.is_cancelled() => {
            return Err(StepError::cancelled())
        }
        Err(cairn_workload::Error::Stopped) => {
            // the deadline passed: the server stalled, or answers too slowly for the bound
            return Err(failed(format!(
                "the workload did not finish in time: the watchdog stopped it after {:.1} s ({}); the server stalled, or the run needs a longer `timeout`{}",
                watchdog.elapsed_s(),
                watchdog.describe(),
                log_tail(&live)
            )));
        }
        Err(e) => {
            let why = if !live.is_running() {
                format!("the server died during the workload: {e}")
            } else if e.is_no_answer() {
                format!(
                    "the server stalled: the workload waited {:.1} s for an answer and gave up, {:.1} s into a run of {}: {e}",
                    watchdog.io_timeout.as_secs_f64(),
                    watchdog.elapsed_s(),
                    watchdog.declared()
                )
            } else {
                format!(
                    "the workload failed after {:.1} s ({}): {e}",
                    watchdog.elapsed_s(),
                    watchdog.describe()
                )
            };
            return Err(failed(format!("{why}{}", log_tail(&live))));
        }
    };
    if let Some(window) = watchdog.window {
        let measured = outcome.figures.get(&cairn_defs::figures::SECONDS);
        check_window(window, measured.unwrap_or(f64::NAN))
            .map_err(|e| failed(format!("{e}{}", log_tail(&live))))?;
    }
    let (after, after_read) = window_end
        .status_after()
        .map_err(|e| stalled(&mut live, "after the workload (SHOW GLOBAL STATUS)", &e))?;
    let deltas = status_deltas(&before, &after);
    let efficiency = window_end.record(&after, after_read, &mut outcome.figures);
    let log = live.log();
    let restore = live.restore();
    let t_stop = Instant::now();
    // the datadir is a throwaway copy of the snapshot: no clean shutdown to wait for
    live.discard()
        .map_err(|e| failed(format!("stopping the server: {e}")))?;
    let stop_ms = ms(t_stop);

    let mut server = json!({
        "verification": verification,
        "status_deltas": deltas,
        "efficiency": efficiency,
        "database": database,
        "image": image.as_ref().map(|i| json!({"reference": i.reference, "image_id": i.manifest.image_id})),
    });
    if let Some(tls) = tls {
        server["tls"] = json!(tls);
    }
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
    extra.insert("efficiency".into(), efficiency);
    extra.insert("client".into(), client);
    if let Some(i) = &image {
        extra.insert(
            "image".into(),
            json!({"reference": i.reference, "image_id": i.manifest.image_id}),
        );
    }
    // the trial's time spent measuring (warmup and measured window, as the driver timed
    // them) against everything around it (restore, start, checks, status reads, stop)
    let measuring_ms = measuring_ms(warmup, &outcome.figures, run_ms);
    let total_ms = ms(t0);
    extra.insert(
        "timings".into(),
        json!({
            "ready_ms": verification.ready_ms,
            "start_ms": start_ms,
            "restore": restore,
            "stop_ms": stop_ms,
            "workload_ms": run_ms,
            "measuring_ms": measuring_ms,
            "setup_ms": total_ms - measuring_ms,
            "total_ms": total_ms,
            "waited_for_machine_ms": slot.waited.as_secs_f64() * 1e3,
        }),
    );
    Ok(Built {
        outputs,
        extra,
        measuring_time: Some(Duration::from_secs_f64(measuring_ms / 1e3)),
        ..Default::default()
    })
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Milliseconds a trial spent measuring: its declared warmup plus the measured window the
/// driver reports (`seconds`); a run without a measured window (a count of events, a tool's
/// whole run) measured for its whole workload time.
fn measuring_ms(warmup: Duration, figures: &cairn_defs::figures::Figures, run_ms: f64) -> f64 {
    match figures.get(&cairn_defs::figures::SECONDS) {
        Some(s) if s.is_finite() && s > 0.0 => (warmup.as_secs_f64() + s) * 1e3,
        _ => run_ms,
    }
}

/// The kind of trial steps: measurements, alone in the exclusive lane.
pub struct TrialKind;

impl cairn_engine::Kind for TrialKind {
    fn check(
        &self,
        graph: &cairn_graph::StepGraph,
        step: &Step,
    ) -> Result<(), cairn_engine::CheckError> {
        let dataset = step
            .inputs
            .iter()
            .find(|i| i.mount == "dataset")
            .map(|i| dataset_step::dataset_def(&graph.steps[i.from]))
            .transpose()
            .map_err(|e| crate::check_error(cairn_workload::Error::Invalid(e)))?;
        check(step, dataset.as_ref())
            .map(|_| ())
            .map_err(crate::check_error)
    }

    fn unavailable(&self, env: &Env<'_>, step: &Step) -> Option<String> {
        crate::requirements(step)
            .iter()
            .find_map(|need| need.unmet(crate::host(env)))
    }

    /// A trial recorded before the watchdog's overrun rule whose window overran is a stalled
    /// server, not a measurement: it runs again.
    fn accepts(
        &self,
        _env: &Env<'_>,
        record: &cairn_store::Record,
    ) -> Result<(), cairn_engine::Unusable> {
        let figures = record.extra.get("figures").unwrap_or(&Value::Null);
        match crate::trial_watchdog::recorded_overrun(&record.definition, figures) {
            None => Ok(()),
            Some(why) => Err(cairn_engine::Unusable {
                what: "stalled_measurement",
                why,
            }),
        }
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        perform(env, step, inputs)
    }
}
