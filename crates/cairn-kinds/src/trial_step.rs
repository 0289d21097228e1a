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
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_exec::measure_lock::MeasureLock;
use cairn_exec::runtime::NativeClient;
use cairn_graph::Step;
use cairn_store::BlobRef;
use cairn_workload::server::{connection_tls, global_status, global_variables};
use cairn_workload::{Dataset, Outcome, RunContext, Target, Workload, WorkloadDef};
use serde_json::{json, Map, Value};

use crate::dataset_step::{self, image_of, input, DatasetOutput};
use crate::image_step::ImageOutput;
use crate::server_run::{LiveServer, ServerDef, StartRequest, Verification};
use crate::trial_efficiency::{WindowEnd, WindowMeter};
use crate::trial_watchdog::{check_window, Watchdog, STATUS_TIMEOUT};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{read_json, Built, Done};
use cairn_engine::Env;

mod lifecycle;

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
    // the block's `cpus` factor: the server's cpuset, on this machine
    let mut sdef = crate::trial_cpus::pin_server(step, sdef)?;
    let protocol = crate::server_run::protocol_of(&sdef)?;
    // waits asked of a MariaDB or MySQL server: its performance schema on, wait instruments
    // timed (unless the plan set them itself): their cost is part of what a profiled trial is
    if crate::trial_profile::asked(&step.definition).waits
        && protocol == cairn_workload::conn::Protocol::Mysql
    {
        for (name, value) in cairn_workload::waits::MYSQL_OPTIONS {
            sdef.options
                .entry((*name).to_string())
                .or_insert_with(|| json!(value));
        }
    }
    let wdef = workload_def(step).map_err(cairn_workload::Error::Invalid)?;
    let ds = dataset.map(Dataset::from_def).transpose()?;
    // the pass index seeds the workload's generators: passes differ, re-runs repeat
    let workload = Workload::from_def(&wdef, ds.as_ref(), u64::from(step.pass))?;
    workload.supports(protocol)?;
    if workload.runs_external_tool() {
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
fn client_record(sdef: &ServerDef, placed: Option<&NativeClient>, external: bool) -> Value {
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
    let setup = TrialSetup::read(ctx, step, inputs)?;
    // nothing else measures on this machine from the server's start to its stop
    let slot = MeasureLock::acquire(crate::host(ctx).cancel()).map_err(|e| {
        if ctx.is_cancelled() {
            StepError::cancelled()
        } else {
            failed(e)
        }
    })?;
    // set after the machine is this trial's, restored after its server stops (on every path)
    let host_settings = crate::trial_host::apply(ctx, step, &setup.sdef)?;
    let mut server = TrialServer::start(ctx, step, &setup)?;
    let status_target = server.status_target();
    let settled = lifecycle::settle(ctx, step, &mut server, &status_target)?;
    let before = server.read_before(&status_target, setup.dataset.is_none())?;
    if ctx.is_cancelled() {
        return Err(StepError::cancelled());
    }
    let (measured, runs) =
        lifecycle::run_workloads(ctx, step, &setup, &mut server, &status_target, &before)?;
    let log = server.live.log();
    let restore = server.live.restore();
    let t_stop = Instant::now();
    // the datadir is a throwaway copy of the snapshot: no clean shutdown to wait for
    server
        .live
        .discard()
        .map_err(|e| failed(format!("stopping the server: {e}")))?;
    let stop_ms = ms(t_stop);
    let host_record = host_settings.restore()?;

    let mut server_json = server_output(
        &server.verification,
        &server.database,
        &measured.deltas,
        &measured.efficiency,
        setup.image.as_ref(),
        before.tls.as_ref(),
    );
    let cpus = server
        .pinned
        .as_ref()
        .map(|p| p.record(setup.is_external()));
    if let Some(cpus) = &cpus {
        server_json["cpus"] = cpus.clone();
    }
    let mut outputs = store_outputs(ctx, &measured.outcome, &server_json, &before.variables, log)?;
    let mut extra = record_extra(
        step,
        &setup,
        &server.verification,
        server.placed.as_ref(),
        &measured.outcome,
        measured.efficiency,
    );
    lifecycle::record(ctx, settled, &runs, &mut extra, &mut outputs)?;
    if let Some(profile) = measured.profile {
        crate::trial_profile::record(ctx, profile, &mut extra, &mut outputs)?;
    }
    if let Some(waits) = measured.waits {
        crate::trial_profile::record_waits(ctx, waits, &mut extra, &mut outputs)?;
    }
    if let Some(h) = host_record {
        extra.insert("host_settings".into(), h);
    }
    if let Some(cpus) = cpus {
        extra.insert("cpus".into(), cpus);
    }
    // the trial's time spent measuring (warmup and measured window, as the driver timed
    // them) against everything around it (restore, start, checks, status reads, stop)
    let measuring_ms = measured.measuring_ms;
    let total_ms = ms(t0);
    extra.insert(
        "timings".into(),
        json!({
            "ready_ms": server.verification.ready_ms,
            "start_ms": server.start_ms,
            "restore": restore,
            "stop_ms": stop_ms,
            "workload_ms": measured.workload_ms,
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

/// What a trial measures with, read from its inputs and checked before it takes the
/// machine: a trial that cannot run fails without waiting for the measurement slot.
struct TrialSetup {
    image: Option<ImageOutput>,
    dataset: Option<DatasetOutput>,
    sdef: ServerDef,
    workload: Workload,
    /// The plan's workload `timeout`, if it sets one.
    timeout: Option<Duration>,
    /// The dataset's snapshot in this machine's cache: the server starts from a copy of it.
    snapshot: Option<PathBuf>,
    /// Where the server and clients run under the block's `cpus` factor, if it has one.
    placement: Option<cairn_exec::cpu_sets::Placement>,
    /// The profiles the trial records (its block's `profile`, or its server's).
    profiles: cairn_defs::ProfilesAsked,
}

impl TrialSetup {
    /// Read the trial's image and dataset from its inputs and check its server and workload.
    fn read(ctx: &Env<'_>, step: &Step, inputs: &[&Done]) -> Result<TrialSetup, StepError> {
        let image = image_of(ctx, step, inputs)?;
        let dataset: Option<DatasetOutput> = input(step, inputs, "dataset")
            .map(|d| read_json(ctx.store, &d.outputs, dataset_step::OUTPUT))
            .transpose()
            .map_err(|e| failed(format!("reading the dataset's output: {e}")))?;
        let (sdef, workload) =
            check(step, dataset.as_ref().map(|d| &d.definition)).map_err(failed)?;
        // a trial without a dataset starts the image's server first here
        dataset_step::options_taken(ctx, step, inputs, &sdef, image.as_ref())?;
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
        let placement = crate::trial_cpus::placement(step).map_err(failed)?;
        Ok(TrialSetup {
            profiles: crate::trial_profile::asked(&step.definition),
            image,
            dataset,
            sdef,
            workload,
            timeout,
            snapshot,
            placement,
        })
    }

    /// Whether an external tool runs the workload (in its own place, not cairn's threads).
    fn is_external(&self) -> bool {
        self.workload.runs_external_tool()
    }
}

/// The trial's server, started and verified, and where the plan puts its clients.
struct TrialServer {
    live: LiveServer,
    /// Milliseconds from asking for the server until it answered.
    start_ms: f64,
    verification: Verification,
    /// The plan's `client` (and `link`); `None` leaves each driver at its own place.
    placed: Option<NativeClient>,
    /// The dataset's database, or `cairn` for a trial without a dataset.
    database: String,
    /// Where the server and its clients run under the `cpus` factor, the server's read back.
    pinned: Option<crate::trial_cpus::Pinned>,
}

impl TrialServer {
    /// Start the plan's server (from the dataset's snapshot, if any), verify it is the
    /// variant the plan names, and put the clients where the plan says.
    fn start(ctx: &Env<'_>, step: &Step, setup: &TrialSetup) -> Result<TrialServer, StepError> {
        let t_start = Instant::now();
        let mut live = LiveServer::start(
            &crate::host(ctx).runtimes,
            &StartRequest {
                def: &setup.sdef,
                image: setup.image.as_ref(),
                run_id: ctx.run_id,
                step_id: &step.address,
                snapshot: setup.snapshot.as_deref(),
                ready_timeout: dataset_step::READY_TIMEOUT,
                // the trial's server is the plan's, without the load's settings
                extra_options: Vec::new(),
            },
        )
        .map_err(failed)?;
        let start_ms = ms(t_start);
        let verification = live.verify().map_err(failed)?;
        let placed = live.place_clients(&setup.sdef).map_err(failed)?;
        let pinned = pin_clients(&mut live, setup)?;
        let database = setup
            .dataset
            .as_ref()
            .map_or("cairn".to_string(), |d| d.database.clone());
        Ok(TrialServer {
            live,
            start_ms,
            verification,
            placed,
            database,
            pinned,
        })
    }

    /// Where cairn reads the server's status and variables. Those reads take milliseconds:
    /// a server that does not answer them within STATUS_TIMEOUT has stalled.
    fn status_target(&self) -> Target {
        let mut target = self.live.target(&self.database);
        target.io_timeout = Some(STATUS_TIMEOUT);
        target
    }

    /// Where the workload's clients connect, from the plan's client place if it names one;
    /// no answer may take longer than `io_timeout`.
    fn workload_target(&self, io_timeout: Duration) -> Target {
        let mut target = match &self.placed {
            Some(p) => crate::server_run::target_of(
                p.endpoint.clone(),
                &self.database,
                self.live.protocol(),
            ),
            None => self.live.target(&self.database),
        };
        target.io_timeout = Some(io_timeout);
        target
    }

    /// The readings before the workload (the database made first for a trial without a
    /// dataset).
    fn read_before(
        &mut self,
        status_target: &Target,
        create_database: bool,
    ) -> Result<BeforeWorkload, StepError> {
        if create_database {
            status_target
                .ensure_database()
                .map_err(|e| self.stalled("while creating the database", &e))?;
        }
        let variables = global_variables(status_target)
            .map_err(|e| self.stalled("before the workload (SHOW GLOBAL VARIABLES)", &e))?;
        let tls = connection_tls(status_target)
            .map_err(|e| self.stalled("before the workload (reading the connection's TLS)", &e))?;
        let status = global_status(status_target)
            .map_err(|e| self.stalled("before the workload (SHOW GLOBAL STATUS)", &e))?;
        Ok(BeforeWorkload {
            variables,
            tls,
            status,
        })
    }

    /// The error of a status read that failed in `phase`: the server stalled, died, or
    /// failed, with its log's tail.
    fn stalled(&mut self, phase: &str, e: &cairn_workload::Error) -> StepError {
        let why = if e.is_no_answer() {
            format!(
                "the server stalled: it gave no answer {phase} within {} s",
                STATUS_TIMEOUT.as_secs()
            )
        } else if !self.live.is_running() {
            format!("the server died {phase}")
        } else {
            format!("the server failed {phase}")
        };
        failed(format!("{why}: {e}{}", self.log_tail_section()))
    }

    /// The last lines of the server's log, as the closing section of an error message:
    /// what the server said is most often why it failed.
    fn log_tail_section(&self) -> String {
        format!(
            "\n--- last lines of the server log ---\n{}",
            self.live.log_tail()
        )
    }
}

/// What the server says before the workload, read outside the measured window.
struct BeforeWorkload {
    /// `SHOW GLOBAL VARIABLES`.
    variables: BTreeMap<String, String>,
    /// The server's view of a TLS connection of cairn's client; read before the status so
    /// that it counts in no delta.
    tls: Option<BTreeMap<String, String>>,
    /// `SHOW GLOBAL STATUS`, the window's first reading.
    status: BTreeMap<String, String>,
}

/// A workload that ran to its end, and the window's meter, stopped as it returned.
struct Measured {
    outcome: Outcome,
    warmup: Duration,
    /// Milliseconds the workload ran, as cairn timed it.
    run_ms: f64,
    window_end: WindowEnd,
}

/// Run the workload under the watchdog, metered from the status reading `before`; a run
/// that failed, was stopped, or overran its declared window is an error.
fn run_workload(
    ctx: &Env<'_>,
    setup: &TrialSetup,
    workload: &Workload,
    server: &mut TrialServer,
    status_target: &Target,
    before: &BTreeMap<String, String>,
) -> Result<Measured, StepError> {
    let warmup = workload.declared_run().map_or(Duration::ZERO, |(w, _)| w);
    let meter = WindowMeter::start(
        server.live.resource_probe(),
        before,
        warmup,
        status_target,
        setup.profiles,
        setup.is_external(),
    );
    let t_run = Instant::now();
    let watchdog = Watchdog::start(workload, setup.timeout);
    let target = server.workload_target(watchdog.io_timeout);
    // the drivers ask this between events (a read that waits is ended by the io timeout):
    // Ctrl-C, or a run past the watchdog's deadline
    let stop = || ctx.is_cancelled() || watchdog.expired();
    let tools = server
        .live
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
    // the native driver's threads start inside the namespace of the declared path, and on
    // the clients' CPUs of the `cpus` factor
    let netns = server.placed.as_ref().and_then(|p| p.netns.as_deref());
    let in_place = || match netns {
        Some(netns) if !setup.is_external() => cairn_exec::netpath::run_in_netns(netns, run),
        _ => Ok(run()),
    };
    let client_cpus = server.pinned.as_ref().and_then(|p| p.clients_cpus());
    let outcome = match client_cpus {
        Some(cpus) if !setup.is_external() => {
            let cpus = cpus.to_vec();
            let (outcome, ran_on) =
                cairn_exec::cpu_sets::run_pinned(&cpus, in_place).map_err(failed)?;
            if let Some(p) = server.pinned.as_mut() {
                p.clients_ran_on(ran_on);
            }
            outcome.map_err(failed)?
        }
        _ => in_place().map_err(failed)?,
    };
    let run_ms = t_run.elapsed().as_secs_f64() * 1e3;
    let window_end = meter.stop();
    let outcome = outcome.map_err(|e| workload_failure(ctx, server, &watchdog, e))?;
    if let Some(window) = watchdog.window {
        let measured = outcome.figures.get(&cairn_defs::figures::SECONDS);
        check_window(window, measured.unwrap_or(f64::NAN))
            .map_err(|e| failed(format!("{e}{}", server.log_tail_section())))?;
    }
    Ok(Measured {
        outcome,
        warmup,
        run_ms,
        window_end,
    })
}

/// The error of a workload that did not finish: cancelled, stopped by the watchdog, or
/// failed (the server died, stalled, or the driver failed).
fn workload_failure(
    ctx: &Env<'_>,
    server: &mut TrialServer,
    watchdog: &Watchdog,
    e: cairn_workload::Error,
) -> StepError {
    match e {
        cairn_workload::Error::Stopped if ctx.is_cancelled() => StepError::cancelled(),
        // the deadline passed: the server stalled, or answers too slowly for the bound
        cairn_workload::Error::Stopped => failed(format!(
            "the workload did not finish in time: the watchdog stopped it after {:.1} s ({}); the server stalled, or the run needs a longer `timeout`{}",
            watchdog.elapsed_s(),
            watchdog.describe(),
            server.log_tail_section()
        )),
        e => {
            let why = if !server.live.is_running() {
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
            failed(format!("{why}{}", server.log_tail_section()))
        }
    }
}

/// Under the `cpus` factor: the server's affinity read back (a server not on the CPUs asked
/// fails the trial) and the external tools pinned to the clients' CPUs, if there are any.
fn pin_clients(
    live: &mut LiveServer,
    setup: &TrialSetup,
) -> Result<Option<crate::trial_cpus::Pinned>, StepError> {
    let Some(placement) = setup.placement.clone() else {
        return Ok(None);
    };
    let pinned = crate::trial_cpus::Pinned::verify(placement, live).map_err(failed)?;
    if let (Some(cpus), true) = (pinned.clients_cpus(), setup.is_external()) {
        live.pin_tools(&cairn_exec::cpu_sets::format_list(cpus))
            .map_err(failed)?;
    }
    Ok(Some(pinned))
}

/// The image a trial's server ran, for its record.
fn image_record(image: &ImageOutput) -> Value {
    json!({"reference": image.reference, "image_id": image.manifest.image_id})
}

/// `server.json`: the verified variant, the status deltas over the run, the efficiency
/// readings, the database, the image and (if it was read) the connection's TLS.
fn server_output(
    verification: &Verification,
    database: &str,
    deltas: &BTreeMap<String, f64>,
    efficiency: &Value,
    image: Option<&ImageOutput>,
    tls: Option<&BTreeMap<String, String>>,
) -> Value {
    let mut out = json!({
        "verification": verification,
        "status_deltas": deltas,
        "efficiency": efficiency,
        "database": database,
        "image": image.map(image_record),
    });
    if let Some(tls) = tls {
        out["tls"] = json!(tls);
    }
    out
}

/// Store the trial's outputs as blobs, by output name.
fn store_outputs(
    ctx: &Env<'_>,
    outcome: &Outcome,
    server: &Value,
    variables: &BTreeMap<String, String>,
    log: String,
) -> Result<BTreeMap<String, BlobRef>, StepError> {
    let figures = json!({"headline": outcome.headline, "figures": outcome.figures});
    let put = |bytes: Vec<u8>, name: &str| {
        ctx.store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {name}: {e}")))
    };
    let json_bytes = |v: &Value| serde_json::to_vec_pretty(v).expect("serialises");
    Ok(BTreeMap::from([
        (FIGURES.to_string(), put(json_bytes(&figures), FIGURES)?),
        (
            METRICS.to_string(),
            put(json_bytes(&outcome.detail), METRICS)?,
        ),
        (SERVER.to_string(), put(json_bytes(server), SERVER)?),
        (
            VARIABLES.to_string(),
            put(
                serde_json::to_vec_pretty(variables).expect("serialises"),
                VARIABLES,
            )?,
        ),
        (SERVER_LOG.to_string(), put(log.into_bytes(), SERVER_LOG)?),
    ]))
}

/// The record's `extra` but its timings: what `cairn results` reads without the outputs.
fn record_extra(
    step: &Step,
    setup: &TrialSetup,
    verification: &Verification,
    placed: Option<&NativeClient>,
    outcome: &Outcome,
    efficiency: Value,
) -> Map<String, Value> {
    let mut extra = Map::new();
    extra.insert("headline".into(), json!(outcome.headline));
    extra.insert("figures".into(), json!(outcome.figures));
    extra.insert("params".into(), json!(step.params));
    extra.insert("variant".into(), json!(verification));
    extra.insert("efficiency".into(), efficiency);
    extra.insert(
        "client".into(),
        client_record(&setup.sdef, placed, setup.is_external()),
    );
    if let Some(i) = &setup.image {
        extra.insert("image".into(), image_record(i));
    }
    extra
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
            .map_err(crate::check_error)?;
        crate::trial_host::check(step)
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

    fn campaign(&self, record: &cairn_store::Record) -> Option<String> {
        Some(crate::trial_points::campaign_of(record))
    }

    fn campaign_now(&self, env: &Env<'_>) -> Option<String> {
        Some(crate::trial_points::campaign_now(env.study, env.run_id))
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        _key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        // a block declared `measured-by` another study reuses that study's measurements and
        // never makes one in its name (that would change the other study's results)
        let def = step.trial_def().map_err(StepError::permanent)?;
        if def.study != env.study {
            return Err(StepError::permanent(format!(
                "its trials block is declared `measured-by \"{}\"`, and that study has no usable measurement of this trial on this machine's class (or it must be measured together with the rest of its point): run that study here first, or drop `measured-by` to measure it in this one",
                def.study
            )));
        }
        perform(env, step, inputs)
    }
}
