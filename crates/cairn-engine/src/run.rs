//! The scheduler: walks the graph in dependency order, serves cached steps from the
//! store, runs stale builds on a rayon pool (`jobs` at once) and measurements one at a
//! time with nothing beside them, in the seeded order of [`crate::order`] — or, given a
//! [`Fleet`], as blocks on a cluster's nodes, as many at once as it has nodes.

use std::collections::{BTreeSet, HashMap};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_graph::{step_key, Selector, StepGraph, StepId};
use rayon::prelude::*;
use serde_json::json;

use crate::adaptive;
use crate::cache::{usable_record, Lookup};
use crate::context::Env;
use crate::error::{FailureClass, StepError};
use crate::events::{Event, Reporter};
use crate::execute::{perform, Done};
use crate::fleet::{block_key, BlockStep, Fleet};
use crate::kind::Lane;
use crate::order;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    pub keep_going: bool,
    /// Run only these steps (and what they need).
    pub only: Vec<Selector>,
    /// Re-run these even if cached.
    pub fresh: Vec<Selector>,
    pub seed: Option<u64>,
    /// How often a step that failed transiently is tried again.
    pub retries: RetryPolicy,
}

/// How many more tries a step gets after a transient failure (an engine hiccup, a lost
/// node). Permanent failures and cancellations are never retried. Measurements are not
/// retried unless asked: a retried measurement ran under other conditions than its
/// neighbours, so the retry is recorded with it (`extra.attempts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub builds: u32,
    pub measurements: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            builds: 2,
            measurements: 0,
        }
    }
}

impl RetryPolicy {
    fn for_lane(&self, lane: Lane) -> u32 {
        match lane {
            Lane::Build => self.builds,
            Lane::Exclusive => self.measurements,
        }
    }
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct RunSummary {
    pub selected: usize,
    pub cached: usize,
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Tries after a transient failure, all steps.
    pub retried: usize,
    pub cancelled: bool,
    /// Wall time of the whole run.
    pub elapsed_ms: f64,
    /// Sum of the time stale steps spent executing (their own work plus cairn's
    /// per-step work inside the worker).
    pub step_ms: f64,
    /// Sum of the time the steps' own commands took.
    pub command_ms: f64,
    /// Sum of the time measurements spent measuring (warmup and measured windows); against
    /// `elapsed_ms`, the share of the run that measured ([`RunSummary::measuring_share`]).
    #[serde(default)]
    pub measuring_ms: f64,
    pub seed: u64,
    /// Measurements in the order they ran.
    pub measurement_order: Vec<String>,
    /// Conditional passes the adaptive rule found not needed (not run, not recorded).
    pub not_needed: usize,
    /// Every adaptive decision, in order, with the CI half-width it was based on.
    pub decisions: Vec<crate::adaptive::Decision>,
}

impl RunSummary {
    pub fn ok(&self) -> bool {
        self.failed == 0 && !self.cancelled
    }

    /// The share of the run's wall time spent measuring, if anything measured.
    pub fn measuring_share(&self) -> Option<f64> {
        (self.measuring_ms > 0.0 && self.elapsed_ms > 0.0)
            .then(|| self.measuring_ms / self.elapsed_ms)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Waiting,
    Queued,
    Running,
    Done,
    Failed,
    Skipped,
}

struct Finished {
    id: StepId,
    key: String,
    result: Result<(Done, crate::execute::StepTimes), StepError>,
    elapsed: Duration,
    /// The fleet block it ran in (its steps report one by one; the block is out until the
    /// last has).
    block: Option<usize>,
}

/// The blocks a fleet has out: how many of each block's steps are still to report, and
/// the pass of each (a block of a later pass waits while one of an earlier pass is out).
#[derive(Default)]
struct BlocksOut {
    next: usize,
    left: HashMap<usize, (usize, u32)>,
}

impl BlocksOut {
    fn start(&mut self, steps: usize, pass: u32) -> usize {
        let b = self.next;
        self.next += 1;
        self.left.insert(b, (steps, pass));
        b
    }

    /// One step of block `b` reported; whether that was its last.
    fn reported(&mut self, b: usize) -> bool {
        let e = self.left.get_mut(&b).expect("block out");
        e.0 -= 1;
        if e.0 == 0 {
            self.left.remove(&b);
            true
        } else {
            false
        }
    }

    fn earlier_pass_out(&self, pass: u32) -> bool {
        self.left.values().any(|&(_, p)| p < pass)
    }
}

/// What a worker tells the scheduler: a phase of a running step, or that it is done.
enum Message {
    Phase { id: StepId, phase: String },
    Finished(Finished),
}

/// Steps selected by `--only` plus everything they need; all steps when `only` is empty.
pub fn selection(graph: &StepGraph, only: &[Selector]) -> Vec<bool> {
    if only.is_empty() {
        return vec![true; graph.steps.len()];
    }
    let mut sel = vec![false; graph.steps.len()];
    let mut stack: Vec<StepId> = graph
        .steps
        .iter()
        .filter(|s| cairn_graph::select::any_matches(only, s))
        .map(|s| s.id)
        .collect();
    while let Some(id) = stack.pop() {
        if !sel[id] {
            sel[id] = true;
            stack.extend(graph.steps[id].inputs.iter().map(|i| i.from));
        }
    }
    sel
}

/// The lane of a step: its kind decides; a step no kind performs goes to the build lane,
/// where it fails with the reason.
fn lane(env: &Env<'_>, step: &cairn_graph::Step) -> Lane {
    env.kinds.get(step).map_or(Lane::Build, |k| k.lane(step))
}

/// One earlier, failed try of a step, recorded with the try that succeeded.
fn attempt_note(e: &StepError) -> serde_json::Value {
    json!({"class": e.class.as_str(), "error": e.message()})
}

/// Run the selected steps of `graph` in `env`: cached ones are served from the store,
/// stale builds run on a pool (`opts.jobs` at once), measurements alone.
pub fn run(
    graph: &StepGraph,
    env: &Env<'_>,
    opts: &RunOptions,
    reporter: &mut dyn Reporter,
) -> RunSummary {
    run_on(graph, env, opts, None, reporter)
}

/// [`run`], with the measurements performed by `fleet` (when given) on its nodes, a block
/// at a time, instead of here; everything else as in a local run.
pub fn run_on(
    graph: &StepGraph,
    env: &Env<'_>,
    opts: &RunOptions,
    fleet: Option<&dyn Fleet>,
    reporter: &mut dyn Reporter,
) -> RunSummary {
    let t0 = Instant::now();
    // working directories go here; made once per run (the CLI also cleans stale ones)
    let _ = std::fs::create_dir_all(env.work_root);
    let n = graph.steps.len();
    let selected = selection(graph, &opts.only);
    let seed = opts
        .seed
        .unwrap_or_else(|| order::default_seed(&graph.study));
    let mut summary = RunSummary {
        selected: selected.iter().filter(|s| **s).count(),
        seed,
        ..Default::default()
    };
    reporter.event(&Event::RunStarted {
        total: summary.selected,
    });

    let mut state = vec![State::Waiting; n];
    let mut done: Vec<Option<Arc<Done>>> = vec![None; n];
    let mut missing: Vec<usize> = graph.steps.iter().map(|s| s.inputs.len()).collect();
    let mut keys: Vec<String> = vec![String::new(); n];
    // earlier failed tries of each step (transient failures that are being retried)
    let mut attempts: Vec<Vec<serde_json::Value>> = vec![Vec::new(); n];
    let mut builds: Vec<StepId> = Vec::new();
    let mut measures: BTreeSet<((u32, u64), StepId)> = BTreeSet::new();
    let mut stopping = false;

    // a fleet's blocks each hold a thread while they are out (waiting on their node)
    let block_threads = fleet.map_or(0, |f| f.capacity().max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1) + block_threads)
        .thread_name(|i| format!("cairn-worker-{i}"))
        .build()
        .expect("thread pool");
    let (tx, rx) = mpsc::channel::<Message>();

    // steps whose inputs are all done, waiting for their cache check
    let mut ready: Vec<StepId> = (0..n).filter(|&i| selected[i] && missing[i] == 0).collect();

    pool.in_place_scope(|scope| {
        let launcher = Launcher {
            scope,
            env,
            graph,
            tx: tx.clone(),
        };
        // units out: build steps, the local measurement, fleet blocks (each one unit)
        let mut running = 0usize;
        let mut running_builds = 0usize;
        let mut blocks = BlocksOut::default();
        loop {
            // 1. cache checks, in parallel when there are many (a cached re-run is mostly this)
            while !ready.is_empty() {
                let batch = std::mem::take(&mut ready);
                let checks: Vec<(StepId, String, Option<Done>)> = pool.install(|| {
                    batch
                        .par_iter()
                        .map(|&id| {
                            let step = &graph.steps[id];
                            let digests: Vec<&str> = step
                                .inputs
                                .iter()
                                .map(|i| {
                                    done[i.from]
                                        .as_ref()
                                        .expect("input done")
                                        .output_digest
                                        .as_str()
                                })
                                .collect();
                            let key = step_key(step, &digests, Some(env.fingerprint)).hash();
                            let fresh = cairn_graph::select::any_matches(&opts.fresh, step);
                            let hit = if fresh {
                                None
                            } else {
                                match usable_record(env, step, &key) {
                                    Lookup::Hit(r) => Some(Done::from_record(&r)),
                                    _ => None,
                                }
                            };
                            (id, key, hit)
                        })
                        .collect()
                });
                for (id, key, hit) in checks {
                    keys[id] = key;
                    match hit {
                        Some(d) => {
                            reporter.event(&Event::StepCached {
                                step: &graph.steps[id],
                                key: &keys[id],
                                headline: d.headline.as_deref(),
                            });
                            summary.cached += 1;
                            state[id] = State::Done;
                            done[id] = Some(Arc::new(d));
                            release(graph, id, &selected, &mut missing, &mut ready);
                        }
                        None => {
                            state[id] = State::Queued;
                            match lane(env, &graph.steps[id]) {
                                Lane::Exclusive => {
                                    measures.insert((order::rank(seed, &graph.steps[id]), id));
                                }
                                Lane::Build => builds.push(id),
                            }
                        }
                    }
                }
            }

            if env.is_cancelled() {
                summary.cancelled = true;
                stopping = true;
            }

            // 2. dispatch
            // An exclusive step is only started when nothing else runs, and the loop then
            // waits for it before dispatching anything: it always runs alone.
            if !stopping {
                // with a fleet, blocks out on nodes leave this machine's build slots free
                let busy = |running: usize, running_builds: usize| {
                    if fleet.is_some() {
                        running_builds
                    } else {
                        running
                    }
                };
                while busy(running, running_builds) < opts.jobs.max(1) {
                    let Some(id) = builds.pop() else { break };
                    running += 1;
                    running_builds += 1;
                    let mut extra = serde_json::Map::new();
                    if !attempts[id].is_empty() {
                        extra.insert("attempts".into(), json!(attempts[id]));
                    }
                    launcher.start(id, &keys, &done, &mut state, extra, reporter);
                }
                if let Some(fleet) = fleet {
                    // blocks go out while nothing is built here (a block's variants all need
                    // their inputs) and a node is free, pass by pass
                    while running_builds == 0
                        && builds.is_empty()
                        && blocks.left.len() < fleet.capacity().max(1)
                    {
                        let Some(&(_, first)) = measures.iter().next() else {
                            break;
                        };
                        let pass = graph.steps[first].pass;
                        if blocks.earlier_pass_out(pass) {
                            break;
                        }
                        let bkey = block_key(&graph.steps[first]);
                        let members: Vec<((u32, u64), StepId)> = measures
                            .iter()
                            .filter(|(_, id)| block_key(&graph.steps[*id]) == bkey)
                            .copied()
                            .collect();
                        let mut block: Vec<BlockStep> = Vec::new();
                        for m in members {
                            measures.remove(&m);
                            let id = m.1;
                            let decision =
                                adaptive::decide(env.store, graph, &graph.steps[id], &done);
                            if let Some(d) = &decision {
                                reporter.event(&Event::PassDecided {
                                    step: &graph.steps[id],
                                    decision: d,
                                });
                                summary.decisions.push(d.clone());
                            }
                            if decision.as_ref().is_some_and(|d| !d.needed) {
                                summary.not_needed += 1;
                                state[id] = State::Done;
                                done[id] = Some(Arc::new(Done::not_needed()));
                                release(graph, id, &selected, &mut missing, &mut ready);
                                continue;
                            }
                            let extra = measurement_extra(
                                seed,
                                summary.measurement_order.len(),
                                decision,
                                &attempts[id],
                            );
                            summary
                                .measurement_order
                                .push(graph.steps[id].address.clone());
                            block.push(BlockStep {
                                id,
                                key: keys[id].clone(),
                                inputs: graph.steps[id]
                                    .inputs
                                    .iter()
                                    .map(|i| done[i.from].clone().expect("input done"))
                                    .collect(),
                                extra,
                            });
                        }
                        if block.is_empty() {
                            continue;
                        }
                        running += 1;
                        let b = blocks.start(block.len(), pass);
                        launcher.start_block(fleet, b, block, &keys, &mut state, reporter);
                    }
                } else if running == 0 && builds.is_empty() {
                    if let Some(&(rank, id)) = measures.iter().next() {
                        measures.remove(&(rank, id));
                        // a conditional pass runs only if its point still needs it
                        let decision = adaptive::decide(env.store, graph, &graph.steps[id], &done);
                        if let Some(d) = &decision {
                            reporter.event(&Event::PassDecided {
                                step: &graph.steps[id],
                                decision: d,
                            });
                            summary.decisions.push(d.clone());
                        }
                        if decision.as_ref().is_some_and(|d| !d.needed) {
                            summary.not_needed += 1;
                            state[id] = State::Done;
                            done[id] = Some(Arc::new(Done::not_needed()));
                            release(graph, id, &selected, &mut missing, &mut ready);
                            continue;
                        }
                        running += 1;
                        let extra = measurement_extra(
                            seed,
                            summary.measurement_order.len(),
                            decision,
                            &attempts[id],
                        );
                        summary
                            .measurement_order
                            .push(graph.steps[id].address.clone());
                        launcher.start(id, &keys, &done, &mut state, extra, reporter);
                    }
                }
            }

            if running == 0 {
                break;
            }

            // 3. wait for one step to finish (passing on the phases of running ones)
            let fin = match rx.recv().expect("workers hold the sender") {
                Message::Phase { id, phase } => {
                    reporter.event(&Event::StepPhase {
                        step: &graph.steps[id],
                        phase: &phase,
                    });
                    continue;
                }
                Message::Finished(fin) => fin,
            };
            match fin.block {
                Some(b) => {
                    if blocks.reported(b) {
                        running -= 1;
                    }
                }
                None => {
                    running -= 1;
                    if lane(env, &graph.steps[fin.id]) == Lane::Build {
                        running_builds = running_builds.saturating_sub(1);
                    }
                }
            }
            summary.step_ms += fin.elapsed.as_secs_f64() * 1e3;
            let step = &graph.steps[fin.id];
            match fin.result {
                Ok((d, times)) => {
                    summary.ran += 1;
                    let command = times.command;
                    summary.command_ms += command.map_or(0.0, |c| c.as_secs_f64() * 1e3);
                    summary.measuring_ms += times.measuring.map_or(0.0, |c| c.as_secs_f64() * 1e3);
                    state[fin.id] = State::Done;
                    let d = Arc::new(d);
                    done[fin.id] = Some(d.clone());
                    reporter.event(&Event::StepFinished {
                        step,
                        key: &fin.key,
                        elapsed: fin.elapsed,
                        command,
                        headline: d.headline.as_deref(),
                    });
                    release(graph, fin.id, &selected, &mut missing, &mut ready);
                }
                Err(e) if e.class == FailureClass::Cancelled => {
                    state[fin.id] = State::Skipped;
                    summary.cancelled = true;
                    stopping = true;
                    reporter.event(&Event::StepSkipped {
                        step,
                        because: "the run was cancelled",
                    });
                    summary.skipped += 1;
                }
                Err(e)
                    if e.is_transient()
                        && !stopping
                        && !env.is_cancelled()
                        && (attempts[fin.id].len() as u32)
                            < opts.retries.for_lane(lane(env, step)) =>
                {
                    attempts[fin.id].push(attempt_note(&e));
                    summary.retried += 1;
                    reporter.event(&Event::StepRetrying {
                        step,
                        key: &fin.key,
                        attempt: attempts[fin.id].len() as u32 + 1,
                        error: &e,
                    });
                    // back into its lane: a measurement waits its turn to run alone again
                    state[fin.id] = State::Queued;
                    match lane(env, step) {
                        Lane::Exclusive => {
                            measures.insert((order::rank(seed, step), fin.id));
                        }
                        Lane::Build => builds.push(fin.id),
                    }
                }
                Err(e) => {
                    summary.failed += 1;
                    state[fin.id] = State::Failed;
                    reporter.event(&Event::StepFailed {
                        step,
                        key: &fin.key,
                        error: &e,
                    });
                    if opts.keep_going {
                        skip_downstream(
                            graph,
                            fin.id,
                            &selected,
                            &mut state,
                            &mut summary,
                            reporter,
                        );
                    } else {
                        stopping = true;
                    }
                }
            }
        }
    });

    // whatever never ran (stopped early) counts as skipped
    let because = if summary.cancelled {
        "the run was interrupted"
    } else {
        "the run stopped after a failure (use --keep-going to run what does not depend on it)"
    };
    for id in 0..n {
        if selected[id] && matches!(state[id], State::Waiting | State::Queued) {
            summary.skipped += 1;
            reporter.event(&Event::StepSkipped {
                step: &graph.steps[id],
                because,
            });
        }
    }
    summary.elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
    reporter.event(&Event::RunFinished { summary: &summary });
    summary
}

/// What a measurement's record carries of how it was scheduled: the seed that ordered it and
/// its place in the order, the adaptive decision that ran it, and its earlier tries.
fn measurement_extra(
    seed: u64,
    position: usize,
    decision: Option<adaptive::Decision>,
    attempts: &[serde_json::Value],
) -> serde_json::Map<String, serde_json::Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("order".into(), json!({"seed": seed, "position": position}));
    if let Some(d) = decision {
        extra.insert("adaptive".into(), d.to_json());
    }
    if !attempts.is_empty() {
        extra.insert("attempts".into(), json!(attempts));
    }
    extra
}

fn release(
    graph: &StepGraph,
    id: StepId,
    selected: &[bool],
    missing: &mut [usize],
    ready: &mut Vec<StepId>,
) {
    for dep in graph.dependents(id) {
        if !selected[dep] {
            continue;
        }
        // a step may read the same input twice (two mounts); count each edge
        missing[dep] -= 1;
        if missing[dep] == 0 {
            ready.push(dep);
        }
    }
}

fn skip_downstream(
    graph: &StepGraph,
    failed: StepId,
    selected: &[bool],
    state: &mut [State],
    summary: &mut RunSummary,
    reporter: &mut dyn Reporter,
) {
    let because = format!("input `{}` failed", graph.steps[failed].address);
    let mut stack: Vec<StepId> = graph.dependents(failed).collect();
    while let Some(id) = stack.pop() {
        if selected[id] && state[id] == State::Waiting {
            state[id] = State::Skipped;
            summary.skipped += 1;
            reporter.event(&Event::StepSkipped {
                step: &graph.steps[id],
                because: &because,
            });
            stack.extend(graph.dependents(id));
        }
    }
}

/// Starts steps on the pool; each reports back on `tx` when it is done.
struct Launcher<'a, 's> {
    scope: &'a rayon::Scope<'s>,
    env: &'s Env<'s>,
    graph: &'s StepGraph,
    tx: mpsc::Sender<Message>,
}

impl<'s> Launcher<'_, 's> {
    /// Start step `id` (its inputs are done) and tell the reporter.
    fn start(
        &self,
        id: StepId,
        keys: &[String],
        done: &[Option<Arc<Done>>],
        state: &mut [State],
        extra: serde_json::Map<String, serde_json::Value>,
        reporter: &mut dyn Reporter,
    ) {
        state[id] = State::Running;
        let env = self.env;
        let step = &self.graph.steps[id];
        let inputs: Vec<Arc<Done>> = step
            .inputs
            .iter()
            .map(|i| done[i.from].clone().expect("input done"))
            .collect();
        let key_hash = keys[id].clone();
        let tx = self.tx.clone();
        self.scope.spawn(move |_| {
            let t = Instant::now();
            let digests: Vec<&str> = inputs.iter().map(|d| d.output_digest.as_str()).collect();
            let key = step_key(step, &digests, Some(env.fingerprint));
            let refs: Vec<&Done> = inputs.iter().map(|d| d.as_ref()).collect();
            // a panic in a kind must fail its step, not leave the scheduler waiting for a
            // report that never comes (what it started, e.g. a server, is dropped and
            // removed while the panic unwinds)
            let phases = tx.clone();
            let sink = move |phase: &str| {
                let _ = phases.send(Message::Phase {
                    id,
                    phase: phase.to_string(),
                });
            };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::progress::with_sink(sink, || {
                    perform(env, step, &key, &key_hash, &refs, extra)
                })
            }))
            .unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".into());
                Err(crate::error::StepError::permanent(format!(
                    "the step panicked: {why}"
                )))
            });
            let _ = tx.send(Message::Finished(Finished {
                id,
                key: key_hash,
                result,
                elapsed: t.elapsed(),
                block: None,
            }));
        });
        reporter.event(&Event::StepStarted {
            step,
            key: &keys[id],
        });
    }

    /// Hand block `b` (its steps' inputs are done) to `fleet`; each step reports back on
    /// `tx` when the block is done.
    fn start_block(
        &self,
        fleet: &'s dyn Fleet,
        b: usize,
        block: Vec<BlockStep>,
        keys: &[String],
        state: &mut [State],
        reporter: &mut dyn Reporter,
    ) {
        for s in &block {
            state[s.id] = State::Running;
            reporter.event(&Event::StepStarted {
                step: &self.graph.steps[s.id],
                key: &keys[s.id],
            });
        }
        let env = self.env;
        let graph = self.graph;
        let tx = self.tx.clone();
        self.scope.spawn(move |_| {
            let results = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                fleet.run_block(env, graph, &block)
            }))
            .unwrap_or_default();
            let mut results = results.into_iter();
            for s in &block {
                let r = results.next().unwrap_or(crate::fleet::BlockResult {
                    result: Err(StepError::permanent(
                        "the fleet executor gave no result for this step (it panicked)",
                    )),
                    elapsed: Duration::ZERO,
                });
                let _ = tx.send(Message::Finished(Finished {
                    id: s.id,
                    key: s.key.clone(),
                    result: r.result,
                    elapsed: r.elapsed,
                    block: Some(b),
                }));
            }
        });
    }
}
