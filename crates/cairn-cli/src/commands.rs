//! One function per subcommand, each a thin call into the library crates.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_engine::{Reason, RunOptions, Status, StepStatus};
use cairn_exec::cancel::CancelToken;
use cairn_graph::{StepGraph, StepKind};
use serde_json::json;

use crate::args::{Cli, Command, Fleet, GraphFormat, OnArgs};
use crate::context::{self, Exit};
use crate::{event_output, BAD_INPUT, FAILED, INTERRUPTED, OK};

/// Commands that start servers, containers or runs of their own: a reader closing the pipe
/// must not end them before they stop what they started (they go quiet on a closed pipe
/// once that is done, [`quiet_on_closed_pipe`]).
fn holds_resources(command: &Command) -> bool {
    matches!(
        command,
        Command::Run { .. }
            | Command::Reproduce { .. }
            | Command::Worker { .. }
            | Command::Lock { .. }
            | Command::Bench { .. }
    )
}

/// From now on, a write to a closed pipe (`cairn results | head -1`) ends the process
/// quietly, as for any Unix tool, instead of failing the write (Rust ignores SIGPIPE, and
/// `println!` then panics).
pub(crate) fn quiet_on_closed_pipe() {
    // SAFETY: restoring a signal's default disposition; no handler code is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub fn dispatch(cli: Cli) -> i32 {
    context::set_plan_settings(cli.set.iter().cloned().collect());
    if !holds_resources(&cli.command) {
        quiet_on_closed_pipe();
    }
    let r = match &cli.command {
        Command::Check { plan } => check(&cli, plan),
        Command::Plan { plan, fresh, on } => plan_cmd(&cli, plan, fresh, on),
        Command::Lock { plan, mirror } => crate::lock_cmd::lock(&cli, plan, mirror.clone()),
        Command::Explain { plan, step } => explain(&cli, plan, step),
        Command::Run {
            plan,
            only,
            fresh,
            jobs,
            keep_going,
            seed,
            mirror,
            retries,
            retry_measurements,
            on,
            spool,
            node_retries,
        } => run(
            &cli,
            plan,
            RunArgs {
                only,
                fresh,
                jobs: *jobs,
                keep_going: *keep_going,
                seed: *seed,
                mirror: mirror.clone(),
                retries: cairn_engine::RetryPolicy {
                    builds: *retries,
                    measurements: *retry_measurements,
                },
                on: on.clone(),
                spool: spool.clone(),
                node_retries: *node_retries,
                ignore_lock: false,
            },
        ),
        Command::Worker { dir } => crate::fleet::worker(dir, std::time::SystemTime::now()),
        Command::Results { plan, csv } => crate::results::results(&cli, plan, *csv),
        Command::Report { plan, measured_on } => {
            crate::report_command::report(&cli, plan, measured_on.as_deref())
        }
        Command::Graph { plan, format } => graph(plan, *format),
        Command::Cat { plan, step, output } => cat(&cli, plan, step, output.as_deref()),
        Command::Profile {
            plan,
            cell,
            top,
            waits,
        } => {
            crate::profile_cmd::profile(&cli, plan, cell, *top, crate::profile_cmd::Of::new(*waits))
        }
        Command::DiffProfile {
            plan,
            a,
            b,
            top,
            waits,
        } => crate::profile_cmd::diff_profile(
            &cli,
            plan,
            a,
            b,
            *top,
            crate::profile_cmd::Of::new(*waits),
        ),
        Command::Fmt { plans, check } => fmt(plans, *check),
        Command::Verify {
            bundle: Some(b), ..
        } => crate::study_bundle::verify(&cli, b),
        Command::Verify { repair, .. } => verify(&cli, *repair),
        Command::Bundle {
            plan,
            output,
            measured_on,
        } => crate::study_bundle::bundle(&cli, plan, output, measured_on.as_deref()),
        Command::Reproduce {
            bundle,
            into,
            allow_host_steps,
            only,
        } => crate::study_bundle::reproduce(&cli, bundle, into.as_deref(), *allow_host_steps, only),
        Command::Compare {
            a,
            b,
            plan,
            measured_on_a,
            measured_on_b,
        } => crate::study_bundle::compare(
            &cli,
            a,
            b.as_deref(),
            plan.as_deref(),
            measured_on_a.as_deref(),
            measured_on_b.as_deref(),
        ),
        Command::Clean { all } => clean(&cli, *all),
        Command::History {
            plan,
            metric,
            fail_on,
        } => crate::history::history(&cli, plan, metric, *fail_on),
        Command::Machine { host } => crate::machine_cmd::machine(&cli, *host),
        Command::Gc {
            plans,
            apply,
            other_machines,
        } => gc(&cli, plans, *apply, *other_machines),
        Command::Bench {
            slurm: Some(plan),
            partition,
            ..
        } => crate::bench::bench_slurm(plan, partition.as_deref()),
        Command::Bench {
            study: Some(plan), ..
        } => crate::bench::bench_study(plan),
        Command::Bench {
            sequential: true,
            studies,
            jobs,
            ..
        } => crate::bench_sequential::bench_sequential(*studies, *jobs),
        Command::Bench {
            steps,
            jobs,
            cached,
            ..
        } => crate::bench::bench(&cli, steps, *jobs, cached),
    };
    match r {
        Ok(code) => code,
        Err(Exit(code)) => code,
    }
}

fn check(cli: &Cli, path: &Path) -> Result<i32, Exit> {
    if cli.json {
        context::diagnostics_as_json();
    }
    let (plan, graph) = context::load_graph(path)?;
    // every kind the graph holds, in the order its steps come (images first)
    let mut kinds: Vec<StepKind> = Vec::new();
    for step in &graph.steps {
        if !kinds.contains(&step.kind) {
            kinds.push(step.kind);
        }
    }
    if cli.json {
        crate::preflight::diagnose(&plan, &graph).map_err(|e| {
            context::print_diagnostic(&e);
            Exit(BAD_INPUT)
        })?;
        crate::preflight::check_option_names(&plan, &graph, &cli.results)?;
        let counts: serde_json::Map<String, serde_json::Value> = kinds
            .iter()
            .map(|k| (k.as_str().to_string(), json!(graph.count(*k))))
            .collect();
        let params: serde_json::Map<String, serde_json::Value> = plan
            .params
            .iter()
            .map(|p| (p.name.value.clone(), json!(p.value)))
            .collect();
        println!(
            "{}",
            json!({"valid": true, "plan": path, "study": plan.study.name,
                   "steps": graph.steps.len(), "kinds": counts, "params": params,
                   "notes": crate::preflight::design_notes(&plan),
                   "warnings": crate::preflight::design_warnings(&plan).into_iter()
                       .chain(crate::preflight::step_warnings(&graph)).collect::<Vec<_>>()})
        );
        return Ok(OK);
    }
    crate::preflight::check(&plan, &graph)?;
    crate::preflight::check_option_names(&plan, &graph, &cli.results)?;
    println!(
        "{}: study `{}` is valid — {} steps",
        path.display(),
        plan.study.name,
        graph.steps.len()
    );
    for kind in kinds {
        println!("  {:<9} {}", kind.as_str(), graph.count(kind));
    }
    if let Some(line) = context::parameters_line(&plan) {
        println!("{line}");
    }
    Ok(OK)
}

fn short(key: &Option<String>) -> &str {
    key.as_deref().map_or("-", |k| &k[..12])
}

fn value(v: &Option<serde_json::Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(serde_json::Value::String(s)) => format!("{s:?}"),
        Some(v) => v.to_string(),
    }
}

fn digest(d: &Option<String>) -> &str {
    d.as_deref().map_or("(none)", |d| &d[..12.min(d.len())])
}

pub fn describe(r: &Reason) -> String {
    match r {
        Reason::New => "new: never run before".into(),
        Reason::Fresh => "--fresh: re-running on purpose".into(),
        Reason::MeasuredAnew { why } => format!("measured anew: {why}"),
        Reason::BlobMissing { digest } => {
            format!(
                "a recorded output blob is missing or damaged ({})",
                &digest[..12]
            )
        }
        Reason::CorruptRecord { error } => format!("its record is damaged: {error}"),
        Reason::Changed { path, old, new } => {
            format!("{path} changed: {} → {}", value(old), value(new))
        }
        Reason::InputChanged {
            mount,
            from,
            old,
            new,
        } => format!(
            "input `{mount}` (from {from}) changed: {} → {}",
            digest(old),
            &new[..12]
        ),
        Reason::InputPending { mount, from } => {
            format!("waits on input `{mount}`: {from} runs first")
        }
        Reason::InputBlocked { from, .. } => format!("input {from} is blocked"),
        Reason::PreviousGone { key } => {
            format!(
                "its previous record ({}) is gone, e.g. removed by gc",
                &key[..12]
            )
        }
        Reason::NotExecutable { kind } => format!(
            "`{kind}` steps have no executor yet (containers, workloads and analyses come later)"
        ),
        Reason::Unusable { why, .. } => format!("its record cannot serve here: {why}"),
        Reason::Unavailable { error } => format!("blocked: {error}"),
        Reason::Note(note) => note.text.clone(),
        Reason::Decided { decision } => crate::event_output::decision_line(decision),
        Reason::Conditional {
            min,
            max,
            until_decided: true,
            ..
        } => format!(
            "conditional: a pass beyond min={min} (max={max}); runs only if a table comparison or claim at its matrix point is then undecided"
        ),
        Reason::Conditional {
            min,
            max,
            until_ci,
            metric,
            ..
        } => format!(
            "conditional: a pass beyond min={min} (max={max}); runs only if the point's {metric} CI half-width is then above {}",
            until_ci.map_or_else(|| "its target".to_string(), |t| format!("{}%", t * 100.0))
        ),
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Cached => "cached",
        Status::Run => "run",
        Status::Pending => "pending",
        Status::Blocked => "blocked",
        Status::NotNeeded => "unneeded",
    }
}

/// Above this many inputs a step waits on, `cairn plan` counts them instead of listing
/// them (`-v` lists them): an analysis of a large plan waits on hundreds of trials.
const LISTED_PENDING_INPUTS: usize = 3;

/// Each step's kind by its address, for counting the inputs a step waits on by kind.
type KindsByAddress<'g> = std::collections::HashMap<&'g str, &'static str>;

fn kinds_by_address(graph: &StepGraph) -> KindsByAddress<'_> {
    graph
        .steps
        .iter()
        .map(|s| (s.address.as_str(), s.kind.as_str()))
        .collect()
}

/// A step's reasons, a line each; with `kinds`, the inputs it waits on are counted by kind
/// in one line when there are more than [`LISTED_PENDING_INPUTS`] of them.
fn reason_lines(s: &StepStatus, kinds: Option<&KindsByAddress<'_>>) -> Vec<String> {
    let waits_on: Vec<&str> = s
        .reasons
        .iter()
        .filter_map(|r| match r {
            Reason::InputPending { from, .. } => Some(from.as_str()),
            _ => None,
        })
        .collect();
    let Some(kinds) = kinds.filter(|_| waits_on.len() > LISTED_PENDING_INPUTS) else {
        return s.reasons.iter().map(describe).collect();
    };
    let mut by_kind: std::collections::BTreeMap<&str, usize> = Default::default();
    for from in &waits_on {
        let kind = kinds.get(from).copied().unwrap_or("step");
        *by_kind.entry(kind).or_default() += 1;
    }
    let counted: Vec<String> = by_kind
        .into_iter()
        .map(|(kind, n)| crate::wording::count(n, kind))
        .collect();
    let mut lines: Vec<String> = s
        .reasons
        .iter()
        .filter(|r| !matches!(r, Reason::InputPending { .. }))
        .map(describe)
        .collect();
    lines.push(format!(
        "waits on {} that run first (-v lists them)",
        crate::wording::and_list(&counted)
    ));
    lines
}

fn print_status(s: &StepStatus, indent: usize, verbose: u8) {
    print_status_condensed(s, indent, verbose, None)
}

/// [`print_status`]; with `kinds`, a long list of inputs waited on is counted
/// ([`reason_lines`]).
fn print_status_condensed(
    s: &StepStatus,
    indent: usize,
    verbose: u8,
    kinds: Option<&KindsByAddress<'_>>,
) {
    let pad = "  ".repeat(indent);
    println!(
        "{pad}{:<8} {:<40} {}",
        status_word(s.status),
        s.address,
        short(&s.key)
    );
    for line in reason_lines(s, kinds) {
        println!("{pad}         · {line}");
    }
    if verbose >= 2 {
        if let Some(k) = &s.key_json {
            println!("{pad}         key {}", k);
        }
    }
}

fn plan_cmd(cli: &Cli, path: &Path, fresh: &[String], on: &OnArgs) -> Result<i32, Exit> {
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, graph) = context::load_graph_cached(path, Some(&cache))?;
    crate::preflight::check(&plan, &graph)?;
    let fresh = context::matching_selectors(&graph, path, fresh)?;
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(cache);
    let fp = machine.fingerprint(&graph);
    let all = cairn_engine::statuses(
        &graph,
        &machine.env(&graph, &store, &fp),
        &fresh,
        cli.verbose >= 2,
    );
    if cli.json {
        for s in &all {
            println!("{}", serde_json::to_string(s).expect("serialises"));
        }
        return Ok(OK);
    }
    if let Some(line) = context::parameters_line(&plan) {
        println!("{line}");
    }
    let mut counts = [0usize; 5];
    let kinds = (cli.verbose == 0).then(|| kinds_by_address(&graph));
    for &id in &graph.order {
        let s = &all[id];
        counts[s.status as usize] += 1;
        if s.status != Status::Cached || cli.verbose > 0 {
            print_status_condensed(s, 0, cli.verbose, kinds.as_ref());
        }
    }
    let not_needed = match counts[Status::NotNeeded as usize] {
        0 => String::new(),
        n => format!(", {n} not needed"),
    };
    println!(
        "{} steps: {} cached, {} will run, {} pending, {} blocked{not_needed}",
        all.len(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    for line in crate::lock_cmd::plan_lines(path, &plan, &graph, machine.cache()) {
        println!("{line}");
    }
    if let Some(line) = crate::budget_line::plan_line(&graph, &all, &store) {
        println!("{line}");
    }
    if on.on == Fleet::Slurm {
        crate::fleet::plan_lines(&graph, &all, &store, on)?;
    }
    Ok(OK)
}

fn explain(cli: &Cli, path: &Path, step: &str) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let fp = machine.fingerprint(&graph);
    let all = cairn_engine::statuses(&graph, &machine.env(&graph, &store, &fp), &[], true);
    let by_name = context::selectors(&[step.to_string()])?.remove(0);
    let sel = if !graph.steps.iter().any(|s| by_name.matches(s))
        && crate::step_by_key::looks_like_key(step)
    {
        match crate::step_by_key::find(&graph, &all, &store, step)? {
            Some(crate::step_by_key::KeyMatch { step: Some(id), .. }) => {
                cairn_graph::Selector::Exact(graph.steps[id].address.clone())
            }
            Some(m) => {
                eprintln!(
                    "error: `{step}` is the key of {}; explain a step of {}",
                    crate::step_by_key::describe(&graph, &m),
                    path.display()
                );
                return Err(Exit(BAD_INPUT));
            }
            None => {
                eprintln!(
                    "error: no step of {} and no record in the store has a key starting with `{step}`",
                    path.display()
                );
                return Err(Exit(BAD_INPUT));
            }
        }
    } else {
        context::matching_selectors(&graph, path, &[step.to_string()])?.remove(0)
    };
    for (depth, id) in cairn_engine::explain(&graph, &all, &sel) {
        if cli.json {
            println!("{}", json!({"depth": depth, "status": &all[id]}));
        } else {
            print_status(&all[id], depth, cli.verbose);
        }
    }
    Ok(OK)
}

/// Route Ctrl-C, SIGTERM and SIGHUP to a new cancel token, which the run's runtimes take.
pub(crate) fn install_stop_handler() -> CancelToken {
    // Ctrl-C, SIGTERM and SIGHUP (sent by `timeout`, CI cancellation, service managers and a
    // closed terminal) all stop the run the same way: end children, let the engine stop
    // cleanly and remove its servers; nothing half-done is recorded. The exit code is 130 for
    // each, not 128 + the signal: 130 is cairn's one code for "stopped on request, nothing
    // half-recorded, the next run resumes", so a script tests one number for it. Whoever
    // sent the signal does not need cairn to tell it which: `timeout` exits 124 itself when
    // its time ran out (with --preserve-status it passes any non-zero code on), and CI
    // runners mark a cancelled job cancelled whatever its exit code.
    let cancel = CancelToken::new();
    let tripped = cancel.clone();
    let _ = ctrlc::set_handler(move || {
        tripped.cancel_all(Duration::from_secs(5));
    });
    cancel
}

/// The options of `cairn run`.
pub(crate) struct RunArgs<'a> {
    pub only: &'a [String],
    pub fresh: &'a [String],
    pub jobs: usize,
    pub keep_going: bool,
    pub seed: Option<u64>,
    pub mirror: Option<String>,
    pub retries: cairn_engine::RetryPolicy,
    pub on: OnArgs,
    pub spool: Option<PathBuf>,
    pub node_retries: u32,
    /// Build as if the plan had no lock (`cairn lock` resolving it anew).
    pub ignore_lock: bool,
}

pub(crate) fn run(cli: &Cli, path: &Path, a: RunArgs<'_>) -> Result<i32, Exit> {
    // The stop signals are caught first of all: one that arrives while the plan is read or
    // the store is locked must stop the run like one that arrives mid-step (exit 130), not
    // kill the process with the signal's default action.
    let cancel = install_stop_handler();
    let t0 = std::time::Instant::now();
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, mut graph) = context::load_graph_cached(path, Some(&cache))?;
    crate::preflight::check(&plan, &graph)?;
    if let Some(line) = context::parameters_line(&plan).filter(|_| !cli.json) {
        eprintln!("{line}");
    }
    if a.ignore_lock {
        graph.lock = None;
    }
    let opts = RunOptions {
        jobs: a.jobs,
        keep_going: a.keep_going,
        only: context::matching_selectors(&graph, path, a.only)?,
        fresh: context::matching_selectors(&graph, path, a.fresh)?,
        seed: a.seed,
        retries: a.retries,
    };
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let mut machine = context::Machine::with_cancel(cache, cancel.clone());
    machine.host.mirror = a.mirror.clone();
    if cancel.is_cancelled() {
        return Ok(INTERRUPTED);
    }
    machine.sweep_stale_containers_on_connect();
    context::remove_stale_socket_dirs();
    if let Err(e) = cairn_exec::command_runner::prepare_work_root(machine.host.work.root()) {
        eprintln!(
            "error: cannot create {}: {e}",
            machine.host.work.root().display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let mut reporter = event_output::pick_with_budget(cli.json, cli.verbose, || {
        crate::budget_line::per_step(&graph, &store, &opts)
    });
    let fp = machine.fingerprint(&graph);
    let env = machine.env(&graph, &store, &fp);
    let fleet = match a.on.on {
        Fleet::Local => None,
        Fleet::Slurm => Some(crate::fleet::slurm_fleet(
            cli,
            path,
            &a.on,
            a.spool.as_deref(),
            a.node_retries,
        )?),
    };
    let summary = cairn_engine::run_on(
        &graph,
        &env,
        &opts,
        fleet.as_ref().map(|f| f as &dyn cairn_engine::fleet::Fleet),
        reporter.as_mut(),
    );
    drop(reporter);
    // what it started is stopped: what is left is printing
    quiet_on_closed_pipe();
    if let Some(f) = &fleet {
        crate::fleet::print_costs(cli, f);
        f.tidy(env.run_id);
    }
    machine.sweep_stale_containers_if_connected();
    if !summary.cancelled {
        // the study's main table and the claims' verdicts; the report under results/<study>/
        crate::report_command::after_run(cli, &plan, &graph, &env, &summary);
        event_output::efficiency(cli.json, &summary, t0.elapsed());
    }
    Ok(if summary.cancelled {
        INTERRUPTED
    } else if summary.failed > 0 {
        FAILED
    } else {
        OK
    })
}

/// Why step `id` has no usable result: its own reasons, then those of the first input it
/// waits for, back to the step where the chain starts (an image gone from the engine, a
/// snapshot gone from the cache, a changed definition).
fn why_not_cached(graph: &StepGraph, all: &[StepStatus], id: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut at = Some(id);
    let mut seen = std::collections::BTreeSet::new();
    while let Some(i) = at.filter(|i| seen.insert(*i)) {
        let st = &all[i];
        lines.extend(st.reasons.iter().map(|r| {
            format!(
                "{} ({}): {}",
                st.address,
                status_word(st.status),
                describe(r)
            )
        }));
        at = st.reasons.iter().find_map(|r| match r {
            Reason::InputPending { from, .. } | Reason::InputBlocked { from, .. } => {
                graph.steps.iter().position(|s| &s.address == from)
            }
            _ => None,
        });
    }
    lines
}

fn cat(cli: &Cli, path: &Path, step: &str, output: Option<&str>) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let sel = context::selectors(&[step.to_string()])?.remove(0);
    let matching: Vec<_> = graph.steps.iter().filter(|s| sel.matches(s)).collect();
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let fp = machine.fingerprint(&graph);
    let all = cairn_engine::statuses(&graph, &machine.env(&graph, &store, &fp), &[], false);
    let (label, record) = match matching.as_slice() {
        [target] => (
            target.address.clone(),
            current_record(&graph, &all, &store, target.id, path)?,
        ),
        [] if crate::step_by_key::looks_like_key(step) => {
            let Some(m) = crate::step_by_key::find(&graph, &all, &store, step)? else {
                eprintln!(
                    "error: no step of {} and no record in the store has a key starting with `{step}`",
                    path.display()
                );
                return Err(Exit(BAD_INPUT));
            };
            let label = crate::step_by_key::describe(&graph, &m);
            match (m.record, m.step) {
                (Some(r), _) => (label, r),
                (None, Some(id)) => (label, current_record(&graph, &all, &store, id, path)?),
                (None, None) => unreachable!("a key comes from a step or a record"),
            }
        }
        _ => {
            eprintln!(
                "error: `{step}` matches {} steps; name one address or key (see `cairn plan -v {}`)",
                matching.len(),
                path.display()
            );
            return Err(Exit(BAD_INPUT));
        }
    };
    let blob = match output {
        Some(log) if log.starts_with('@') => record.logs.get(&log[1..]),
        Some(o) => record.outputs.get(o),
        None if record.outputs.len() == 1 => record.outputs.values().next(),
        None => None,
    };
    let Some(blob) = blob else {
        let names: Vec<&str> = record.outputs.keys().map(String::as_str).collect();
        eprintln!(
            "error: name one output of {label}: {} (or @stdout, @stderr)",
            names.join(", ")
        );
        return Err(Exit(BAD_INPUT));
    };
    let bytes = store.read_blob(blob).map_err(context::fail(FAILED))?;
    let _ = std::io::stdout().write_all(&bytes);
    Ok(OK)
}

/// The record of step `id` for its current definition, or why it has none (exit 1).
fn current_record(
    graph: &StepGraph,
    all: &[StepStatus],
    store: &cairn_store::Store,
    id: usize,
    path: &Path,
) -> Result<cairn_store::Record, Exit> {
    let st = &all[id];
    let record = match (&st.status, &st.key) {
        (Status::Cached, Some(k)) => store.get_record(k).ok().flatten(),
        _ => None,
    };
    record.ok_or_else(|| {
        eprintln!(
            "error: {} has no result for its current definition yet (status: {}); run `cairn run {}`",
            st.address,
            status_word(st.status),
            path.display()
        );
        for line in why_not_cached(graph, all, id) {
            eprintln!("  {line}");
        }
        Exit(FAILED)
    })
}

fn graph(path: &Path, format: GraphFormat) -> Result<i32, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let text = match format {
        GraphFormat::Dot => cairn_graph::render::dot(&graph),
        GraphFormat::Mermaid => cairn_graph::render::mermaid(&graph),
    };
    print!("{text}");
    Ok(OK)
}

fn fmt(paths: &[PathBuf], check: bool) -> Result<i32, Exit> {
    let mut unformatted = 0;
    for p in paths {
        let text = cairn_plan::limits::read_plan_file(p).map_err(|e| {
            eprintln!("error: cannot read {}: {e}", p.display());
            Exit(BAD_INPUT)
        })?;
        let formatted = cairn_plan::format_text(&text).map_err(|e| {
            eprint!("{}", cairn_plan::render(&e));
            Exit(BAD_INPUT)
        })?;
        if formatted == text {
            continue;
        }
        unformatted += 1;
        if check {
            println!("{} is not formatted", p.display());
        } else {
            let tmp = p.with_extension("kdl.cairn-fmt");
            std::fs::write(&tmp, &formatted)
                .and_then(|_| std::fs::rename(&tmp, p))
                .map_err(|e| {
                    eprintln!("error: cannot write {}: {e}", p.display());
                    Exit(FAILED)
                })?;
            println!("formatted {}", p.display());
        }
    }
    Ok(if check && unformatted > 0 { FAILED } else { OK })
}

/// `cairn clean`: what ended runs left; with `all`, the containers and networks of live runs
/// too (another terminal's study, a build in progress), which a plain clean never touches.
fn clean(cli: &Cli, all: bool) -> Result<i32, Exit> {
    // Server socket directories first: they are the host's, not the container engine's (the
    // process executor makes them too), so they go even when no engine answers. A live run's
    // are in use (its containers may be removed below, but the run removes its own
    // directories when it ends); only those of ended runs go.
    let socket_dirs = cairn_exec::docker::cleanup::clean_stale_socket_dirs(&std::env::temp_dir());
    let print_dirs = || {
        for d in &socket_dirs {
            println!("removed socket directory {}", d.display());
        }
    };
    // Slurm jobs of killed runs (their submitting process is gone): cancelled, whatever
    // the container engine says
    let jobs = crate::fleet::cancel_stale_jobs();
    if !cli.json {
        for (id, run) in &jobs {
            println!("cancelled Slurm job {id} (of run {run}, which is gone)");
        }
    }
    // host settings a killed trial left in place (its journal): back to what they were
    let host_settings =
        cairn_exec::host_settings::restore_leftovers(cairn_exec::docker::cleanup::is_stale_run);
    if !cli.json {
        for h in &host_settings {
            println!("restored host setting {h} (left by a run that is gone)");
        }
    }
    let containers = |docker: cairn_exec::docker::Docker| {
        if all {
            cairn_exec::docker::cleanup::clean_all(&docker)
        } else {
            cairn_exec::docker::cleanup::clean_stale(&docker)
        }
    };
    let rep = match cairn_exec::docker::Docker::connect().and_then(containers) {
        Ok(rep) => rep,
        Err(e) => {
            if !cli.json {
                print_dirs();
            }
            return Err(context::fail(FAILED)(e));
        }
    };
    if cli.json {
        println!(
            "{}",
            json!({"containers": rep.containers, "networks": rep.networks, "socket_dirs": socket_dirs, "slurm_jobs": jobs.iter().map(|(id, _)| id).collect::<Vec<_>>(), "host_settings": host_settings})
        );
    } else if rep.is_empty()
        && socket_dirs.is_empty()
        && jobs.is_empty()
        && host_settings.is_empty()
    {
        println!("{}", nothing_to_clean(all));
    } else {
        for c in &rep.containers {
            println!("removed container {c}");
        }
        for n in &rep.networks {
            println!("removed network {n}");
        }
        print_dirs();
    }
    Ok(OK)
}

/// What `cairn clean` says when it removed nothing.
fn nothing_to_clean(all: bool) -> &'static str {
    if all {
        "nothing to clean: no cairn containers, networks or socket directories"
    } else {
        "nothing to clean: no containers, networks or socket directories of ended cairn runs \
         (runs still going keep theirs; `cairn clean --all` removes those too)"
    }
}

fn verify(cli: &Cli, repair: bool) -> Result<i32, Exit> {
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let rep = store.verify().map_err(context::fail(FAILED))?;
    if !repair {
        if cli.json {
            println!("{}", verify_json(&rep));
        } else {
            print!("{}", verify_text(&rep));
        }
        return Ok(if rep.is_clean() { OK } else { FAILED });
    }
    let moved = store.repair_records(&rep).map_err(context::fail(FAILED))?;
    // look again: what is left after the repair decides the exit code
    let after = store.verify().map_err(context::fail(FAILED))?;
    if cli.json {
        let mut j = verify_json(&rep);
        j["repaired"] = json!(moved
            .iter()
            .map(|m| json!({"record": m.key, "quarantined_to": m.quarantined_to}))
            .collect::<Vec<_>>());
        j["clean_after_repair"] = json!(after.is_clean());
        println!("{j}");
    } else {
        print!("{}", verify_body(&rep));
        for m in &moved {
            println!(
                "moved damaged record {} to {}",
                m.key,
                m.quarantined_to.display()
            );
        }
        if after.is_clean() {
            println!("store is clean");
        } else {
            print!("{}", verify_text(&after));
        }
    }
    Ok(if after.is_clean() { OK } else { FAILED })
}

fn gc(cli: &Cli, plans: &[PathBuf], apply: bool, other_machines: bool) -> Result<i32, Exit> {
    // by default the project's plans: `plans/` beside the results directory
    let plans_dir = cli
        .results
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("plans"), |p| p.join("plans"));
    let plans: Vec<PathBuf> = if plans.is_empty() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&plans_dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    } else {
        plans.to_vec()
    };
    if plans.is_empty() {
        // without a plan nothing is referenced, and gc would remove every record
        eprintln!(
            "error: gc found no plans in {} (beside the results directory {}): name the plans whose results to keep, e.g. `cairn gc plans/*.kdl`",
            plans_dir.display(),
            cli.results.display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let store = context::open_store(&cli.results)?;
    let _lock = context::lock_store(&store)?;
    let machine = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let mut keep: HashSet<String> = HashSet::new();
    // this machine's fingerprints (host and container measurements differ in the runtime)
    let mut here: Vec<serde_json::Value> = Vec::new();
    for p in &plans {
        let (_plan, graph) = context::load_graph(p)?;
        let fp = machine.fingerprint(&graph);
        keep.extend(referenced_keys(&graph, &machine.env(&graph, &store, &fp)));
        here.push(serde_json::to_value(&fp).expect("serialises"));
    }
    let foreign = if other_machines {
        Vec::new()
    } else {
        other_machines_measurements(&store, &keep, &here)?
    };
    keep.extend(foreign.iter().cloned());
    let rep = store.gc(&keep, apply).map_err(context::fail(FAILED))?;
    if !foreign.is_empty() && !cli.json {
        println!(
            "keeping {} measurements made on other machines (--other-machines removes them too)",
            foreign.len()
        );
    }
    if cli.json {
        println!(
            "{}",
            json!({"applied": rep.applied, "records_removed": rep.records_removed,
                   "blobs_removed": rep.blobs_removed, "bytes": rep.bytes()})
        );
    } else {
        println!(
            "{} {} records and {} blobs ({} bytes)",
            if apply { "removed" } else { "would remove" },
            rep.records_removed.len(),
            rep.blobs_removed.len(),
            rep.bytes()
        );
        if !apply {
            println!("(dry run: nothing removed; pass --apply to remove)");
        }
    }
    let _ = std::io::stdout().flush();
    Ok(OK)
}

/// Records outside `keep` that are measurements of another machine: their fingerprint is
/// none of this machine's. This machine cannot make them again, so gc keeps them unless
/// asked (`--other-machines`).
fn other_machines_measurements(
    store: &cairn_store::Store,
    keep: &HashSet<String>,
    here: &[serde_json::Value],
) -> Result<Vec<String>, Exit> {
    let keys = store.record_keys().map_err(context::fail(FAILED))?;
    let mut out = Vec::new();
    for key in keys.into_iter().filter(|k| !keep.contains(k)) {
        // a damaged record is gc's to report, not to keep
        if let Ok(Some(rec)) = store.get_record(&key) {
            if rec.fingerprint.as_ref().is_some_and(|f| !here.contains(f)) {
                out.push(key);
            }
        }
    }
    Ok(out)
}

/// Keys a plan references: each step's current key where it is known, plus the last
/// recorded key of every step (so a step whose input is about to change keeps its last
/// result until it has a new one).
fn referenced_keys(graph: &StepGraph, env: &cairn_engine::Env<'_>) -> Vec<String> {
    let store = env.store;
    let mut out: Vec<String> = cairn_engine::statuses(graph, env, &[], false)
        .into_iter()
        .filter_map(|s| s.key)
        .collect();
    let remembered = store.names(&graph.study).unwrap_or_default();
    for s in &graph.steps {
        if let Some(k) = remembered.get(&s.address) {
            out.push(k.clone());
        }
    }
    out
}

fn verify_json(rep: &cairn_store::VerifyReport) -> serde_json::Value {
    json!({
        "clean": rep.is_clean(),
        "blobs_checked": rep.blobs_checked,
        "records_checked": rep.records_checked,
        "corrupt_blobs": rep.corrupt_blobs.iter().map(|b| json!({
            "digest": b.digest, "actual": b.actual, "quarantined_to": b.quarantined_to,
        })).collect::<Vec<_>>(),
        "missing_blobs": rep.missing_blobs.iter().map(|m| json!({"record": m.key, "digest": m.digest})).collect::<Vec<_>>(),
        "corrupt_records": rep.corrupt_records.iter().map(|r| json!({"record": r.key, "reason": r.reason})).collect::<Vec<_>>(),
        "stray_tmp_files": rep.stray_tmp_files,
    })
}

/// What `verify` found, line by line, without the verdict.
fn verify_body(rep: &cairn_store::VerifyReport) -> String {
    let mut s = format!(
        "checked {} blobs and {} records\n",
        rep.blobs_checked, rep.records_checked
    );
    for b in &rep.corrupt_blobs {
        s += &format!(
            "corrupt blob {}: content hashes to {}; moved to {}\n",
            b.digest,
            b.actual,
            b.quarantined_to.display()
        );
    }
    for m in &rep.missing_blobs {
        s += &format!(
            "record {} names blob {}, which is missing or damaged\n",
            m.key, m.digest
        );
    }
    for r in &rep.corrupt_records {
        s += &format!("record {} is damaged: {}\n", r.key, r.reason);
    }
    for t in &rep.stray_tmp_files {
        s += &format!("stray temp file {} (removed at next open)\n", t.display());
    }
    s
}

fn verify_text(rep: &cairn_store::VerifyReport) -> String {
    let mut s = verify_body(rep);
    if rep.is_clean() {
        s += "store is clean\n";
    } else if rep.missing_blobs.is_empty() && rep.corrupt_records.is_empty() {
        // blobs no record names, moved to quarantine just now, or temp files
        s += "store had damage that no record depends on; it is in quarantine or removed \
              at the next open\n";
    } else {
        // a damaged record is only ever replaced by a run of its own step: one under a key
        // that no plan's step has any more (an orphan) would stay for ever
        s += "store has damage: a damaged record of a step that a plan still has is replaced \
              when that step runs again at the next `cairn run`; any other stays until \
              `cairn verify --repair` moves damaged records to quarantine (or `cairn gc --apply` \
              removes the records no plan uses)\n";
    }
    s
}
