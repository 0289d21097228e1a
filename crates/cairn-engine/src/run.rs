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
use crate::cache::{usable_record, Lookup, Presence};
use crate::context::Env;
use crate::error::{FailureClass, StepError};
use crate::events::{Event, Reporter};
use crate::execute::{perform, Done};
use crate::fleet::{block_key, BlockStep, Fleet};
use crate::kind::Lane;
use crate::order;
use crate::together::{Held, Settled, Together};

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
    /// Measurements whose record was of another campaign than the others they are compared
    /// with, measured anew in this run ([`crate::together`]); counted among `ran`, not `cached`.
    #[serde(default)]
    pub measured_anew: usize,
    /// Every adaptive decision, in order, with the CI half-width it was based on.
    pub decisions: Vec<crate::adaptive::Decision>,
    /// What each step handed on, by step id, where it was served or ran (the record key
    /// among it): what the CLI reads the study's results from after the run, without
    /// checking every step again.
    #[serde(skip)]
    pub done: Vec<Option<Arc<Done>>>,
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
    let mut books = Books::new(graph, env, opts, fleet);
    reporter.event(&Event::RunStarted {
        total: books.summary.selected,
    });

    // a fleet's blocks each hold a thread while they are out (waiting on their node)
    let block_threads = fleet.map_or(0, |f| f.capacity().max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1) + block_threads)
        .thread_name(|i| format!("cairn-worker-{i}"))
        .build()
        .expect("thread pool");
    let (tx, rx) = mpsc::channel::<Message>();

    pool.in_place_scope(|scope| {
        let launcher = Launcher {
            scope,
            env,
            graph,
            tx: tx.clone(),
        };
        loop {
            // 1. cache checks, in parallel when there are many (a cached re-run is mostly this)
            books.check_ready(&pool, reporter);
            if env.is_cancelled() {
                books.summary.cancelled = true;
                books.stopping = true;
            }
            // 2. dispatch
            if !books.stopping {
                books.dispatch(&launcher, reporter);
            }
            if books.running == 0 {
                if books.ready.is_empty() || books.stopping {
                    break;
                }
                continue; // a pass found not needed released its readers
            }
            // 3. wait for one step to finish (passing on the phases of running ones)
            match rx.recv().expect("workers hold the sender") {
                Message::Phase { id, phase } => reporter.event(&Event::StepPhase {
                    step: &graph.steps[id],
                    phase: &phase,
                }),
                Message::Finished(fin) => books.finished(fin, reporter),
            }
        }
    });

    books.skip_the_rest(reporter);
    let mut summary = books.summary;
    summary.elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
    summary.done = books.done;
    reporter.event(&Event::RunFinished { summary: &summary });
    summary
}

/// A ready step's cache check: its key and, when its record serves, what it hands on with
/// the record's campaign (for a measurement compared with others).
type Check = (StepId, String, Option<(Done, Option<String>)>);

/// The scheduler's books: where every step stands, what finished steps handed on, the
/// lanes' queues and the run's summary so far.
struct Books<'g> {
    graph: &'g StepGraph,
    env: &'g Env<'g>,
    opts: &'g RunOptions,
    fleet: Option<&'g dyn Fleet>,
    selected: Vec<bool>,
    state: Vec<State>,
    done: Vec<Option<Arc<Done>>>,
    /// Inputs each waiting step still waits for.
    missing: Vec<usize>,
    keys: Vec<String>,
    /// Whether what a done step made is known to be on this machine: it ran here, or its
    /// product was found present when a step that reads it was about to run. A step served
    /// from its record is not asked until then, so a run that runs nothing needs neither
    /// the container engine nor the machine-local cache.
    here: Vec<bool>,
    /// Steps served from their record that run again because what they made is gone: who
    /// waits for each (their key is computed again once it is done).
    waiters: HashMap<StepId, Vec<StepId>>,
    /// Earlier failed tries of each step (transient failures that are being retried).
    attempts: Vec<Vec<serde_json::Value>>,
    /// Steps whose inputs are all done, waiting for their cache check.
    ready: Vec<StepId>,
    builds: Vec<StepId>,
    measures: BTreeSet<((u32, u64), StepId)>,
    /// Units out: build steps, the local measurement, fleet blocks (each one unit).
    running: usize,
    running_builds: usize,
    blocks: BlocksOut,
    /// Measurements compared together: served ones held until their group is settled.
    together: Together,
    stopping: bool,
    summary: RunSummary,
}

impl<'g> Books<'g> {
    fn new(
        graph: &'g StepGraph,
        env: &'g Env<'g>,
        opts: &'g RunOptions,
        fleet: Option<&'g dyn Fleet>,
    ) -> Books<'g> {
        let n = graph.steps.len();
        let selected = selection(graph, &opts.only);
        let together = Together::new(graph, &selected);
        let missing: Vec<usize> = graph.steps.iter().map(|s| s.inputs.len()).collect();
        let ready = (0..n).filter(|&i| selected[i] && missing[i] == 0).collect();
        let seed = opts
            .seed
            .unwrap_or_else(|| order::default_seed(&graph.study));
        Books {
            graph,
            env,
            opts,
            fleet,
            summary: RunSummary {
                selected: selected.iter().filter(|s| **s).count(),
                seed,
                ..Default::default()
            },
            selected,
            state: vec![State::Waiting; n],
            done: vec![None; n],
            missing,
            keys: vec![String::new(); n],
            here: vec![false; n],
            waiters: HashMap::new(),
            attempts: vec![Vec::new(); n],
            ready,
            builds: Vec::new(),
            measures: BTreeSet::new(),
            running: 0,
            running_builds: 0,
            blocks: BlocksOut::default(),
            together,
            stopping: false,
        }
    }

    /// Compute the key of every ready step and look it up; a hit is served, a miss goes to
    /// its lane (or waits for inputs that must run again). Repeats while serving makes more
    /// steps ready.
    fn check_ready(&mut self, pool: &rayon::ThreadPool, reporter: &mut dyn Reporter) {
        let (graph, env, opts) = (self.graph, self.env, self.opts);
        while !self.ready.is_empty() {
            let batch = std::mem::take(&mut self.ready);
            let done = &self.done;
            let checks: Vec<Check> = pool.install(|| {
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
                                    .unwrap_or_else(|| {
                                        panic!(
                                            "{} is keyed before its input {} is done",
                                            step.address, graph.steps[i.from].address
                                        )
                                    })
                                    .output_digest
                                    .as_str()
                            })
                            .collect();
                        let key = step_key(step, &digests, Some(env.fingerprint_of(step))).hash();
                        let fresh = cairn_graph::select::any_matches(&opts.fresh, step);
                        let hit = if fresh {
                            None
                        } else {
                            match usable_record(env, step, &key) {
                                Lookup::Hit(r) => {
                                    let campaign = step
                                        .together
                                        .as_ref()
                                        .and_then(|_| env.kinds.get(step)?.campaign(&r));
                                    Some((Done::from_record(&r), campaign))
                                }
                                _ => None,
                            }
                        };
                        (id, key, hit)
                    })
                    .collect()
            });
            for (id, key, hit) in checks {
                if self.missing[id] > 0 {
                    // keyed from an input found gone since, for another step of this batch:
                    // it waits for that input and is keyed again after it
                    continue;
                }
                self.keys[id] = key;
                let (hit, campaign) = match hit {
                    // to be measured anew, keyed again after an input ran again
                    Some(_) if self.together.must_run(id) => (None, None),
                    Some((d, c)) if self.is_goal(id) => (self.goal_here(id, d), c),
                    Some((d, c)) => (Some(d), c),
                    None => (None, None),
                };
                match hit {
                    Some(done) if self.together.holds(id) => {
                        self.together.hold(Held { id, done, campaign })
                    }
                    Some(d) => self.serve(id, d, reporter),
                    None => {
                        let conditional = graph.steps[id].is_conditional();
                        self.together.keyed_to_run(id, !conditional);
                        self.enqueue(id, reporter);
                    }
                }
            }
            self.settle_together(false, reporter);
        }
    }

    /// Step `id` is served from its record.
    fn serve(&mut self, id: StepId, d: Done, reporter: &mut dyn Reporter) {
        reporter.event(&Event::StepCached {
            step: &self.graph.steps[id],
            key: &self.keys[id],
            headline: d.headline.as_deref(),
        });
        self.summary.cached += 1;
        self.state[id] = State::Done;
        self.done[id] = Some(Arc::new(d));
        self.release(id);
    }

    /// Settle the groups of measurements compared together whose members are all keyed
    /// (`all`: every group, once nothing but measurements is left): serve what is held, or
    /// measure anew what is of another campaign than the rest ([`crate::together`]).
    fn settle_together(&mut self, all: bool, reporter: &mut dyn Reporter) {
        let (graph, env) = (self.graph, self.env);
        let settled = self
            .together
            .settle(all, &|id| crate::together::campaign_now(env, graph, id));
        for s in settled {
            match s {
                Settled::Serve(h) => self.serve(h.id, h.done, reporter),
                Settled::Anew(h, why) => {
                    reporter.event(&Event::MeasuredAnew {
                        step: &graph.steps[h.id],
                        why: &why,
                    });
                    self.summary.measured_anew += 1;
                    self.enqueue(h.id, reporter);
                }
            }
        }
    }

    /// Whether step `id` is a goal of the run: nothing selected reads it, so what it made
    /// is what the run is for (an image a plan only builds, `--only kind:dataset`).
    fn is_goal(&self, id: StepId) -> bool {
        !self.graph.dependents(id).any(|d| self.selected[d])
    }

    /// A goal served from its record must have its product here (an image in the engine):
    /// the record, another record of its key whose product is here, or none (it runs).
    fn goal_here(&mut self, id: StepId, d: Done) -> Option<Done> {
        match crate::cache::present(self.env, &self.graph.steps[id], &d.key) {
            Presence::Here => {
                self.here[id] = true;
                Some(d)
            }
            Presence::Alternate(r) => {
                self.here[id] = true;
                Some(Done::from_record(&r))
            }
            Presence::Gone(_) => None,
        }
    }

    /// Step `id` must run: once what it reads is here, into its lane. A conditional pass
    /// goes to its lane at once: whether it runs is decided at its turn, and what it reads
    /// is asked then, only if it does.
    fn enqueue(&mut self, id: StepId, reporter: &mut dyn Reporter) {
        if self.graph.steps[id].is_conditional() {
            // counted as a reader of an input that runs again, or reading one: it waits
            if self.missing[id] > 0 || self.waits_for_inputs_running_again(id) {
                self.state[id] = State::Waiting;
                return;
            }
        } else if !self.inputs_here(id, reporter) {
            return;
        }
        self.state[id] = State::Queued;
        self.queue_in_lane(id);
    }

    /// Whether step `id` reads an input that runs again (served first, then found gone for
    /// another reader, so not done now): then it waits for each such input, as a reader
    /// released when it is done, and is keyed again.
    fn waits_for_inputs_running_again(&mut self, id: StepId) -> bool {
        let mut again: Vec<StepId> = self.graph.steps[id]
            .inputs
            .iter()
            .map(|i| i.from)
            .filter(|&from| {
                self.done[from].is_none()
                    && matches!(
                        self.state[from],
                        State::Waiting | State::Queued | State::Running
                    )
            })
            .collect();
        again.sort_unstable();
        again.dedup();
        if again.is_empty() {
            return false;
        }
        self.state[id] = State::Waiting;
        for from in again {
            self.missing[id] += 1;
            self.waiters.entry(from).or_default().push(id);
        }
        true
    }

    /// Whether what step `id` reads is here, so it can run now. An input served from its
    /// record whose product is gone (an image removed from the engine) runs again first,
    /// or serves from a record kept beside its own whose product is here; either way `id`
    /// is keyed again (it waits, or goes back to the ready steps) and this says no.
    fn inputs_here(&mut self, id: StepId, reporter: &mut dyn Reporter) -> bool {
        let (graph, env) = (self.graph, self.env);
        let mut inputs: Vec<StepId> = graph.steps[id].inputs.iter().map(|i| i.from).collect();
        inputs.sort_unstable();
        inputs.dedup();
        if self.waits_for_inputs_running_again(id) {
            return false; // back when they are done
        }
        let mut rekey = false;
        let mut gone = Vec::new();
        for from in inputs {
            let Some(d) = self.done[from].clone() else {
                continue;
            };
            if self.here[from] || d.is_not_needed() {
                continue;
            }
            match crate::cache::present(env, &graph.steps[from], &d.key) {
                Presence::Here => self.here[from] = true,
                Presence::Alternate(r) => {
                    self.done[from] = Some(Arc::new(Done::from_record(&r)));
                    self.here[from] = true;
                    rekey = true;
                }
                Presence::Gone(why) => gone.push((from, why)),
            }
        }
        if gone.is_empty() {
            if rekey {
                // an input now serves another output: `id`'s key is another
                self.state[id] = State::Waiting;
                self.ready.push(id);
            }
            return !rekey;
        }
        // `id` waits (with anything else not yet keyed that reads them) for what is gone
        self.state[id] = State::Waiting;
        for (from, why) in gone {
            self.missing[id] += 1;
            self.waiters.entry(from).or_default().push(id);
            if self.state[from] != State::Done {
                continue; // already running again for another reader
            }
            reporter.event(&Event::StepUnserved {
                step: &graph.steps[from],
                why: &why.why,
            });
            self.unserve(from, Some(id));
            // its key is known; what it reads must be here too
            self.enqueue(from, reporter);
        }
        false
    }

    /// Step `from`, served from its record, runs after all: it is no longer done, and the
    /// selected readers waiting on it (but `except`, which the caller counts) wait for it
    /// again, released — they alone — when it is done.
    fn unserve(&mut self, from: StepId, except: Option<StepId>) {
        self.summary.cached -= 1;
        self.done[from] = None;
        let readers: Vec<StepId> = self
            .graph
            .dependents(from)
            .filter(|&d| Some(d) != except && self.selected[d] && self.state[d] == State::Waiting)
            .collect();
        for &d in &readers {
            if self.missing[d] == 0 {
                self.ready.retain(|&r| r != d);
            }
            self.missing[d] += 1;
            self.together.unhold(d);
        }
        // an entry even with no reader: `release` then frees only those listed
        self.waiters.entry(from).or_default().extend(readers);
    }

    fn queue_in_lane(&mut self, id: StepId) {
        let step = &self.graph.steps[id];
        match lane(self.env, step) {
            Lane::Exclusive => {
                self.measures
                    .insert((order::rank(self.summary.seed, step), id));
            }
            Lane::Build => self.builds.push(id),
        }
    }

    /// Step `id` is done: its readers have one input less to wait for (only those waiting
    /// for it to run again, when it ran again after being served).
    fn release(&mut self, id: StepId) {
        let readers: Vec<StepId> = match self.waiters.remove(&id) {
            Some(w) => w,
            None => self
                .graph
                .dependents(id)
                .filter(|&d| self.selected[d])
                .collect(),
        };
        // a step may read the same input twice (two mounts); count each edge
        for dep in readers {
            self.missing[dep] -= 1;
            if self.missing[dep] == 0 {
                self.ready.push(dep);
            }
        }
    }

    /// Start what may start: builds up to `--jobs`; then a measurement alone (or a fleet's
    /// blocks, as many as it has nodes) when no build runs here.
    fn dispatch(&mut self, launcher: &Launcher<'_, 'g>, reporter: &mut dyn Reporter) {
        if self.running_builds == 0 && self.builds.is_empty() && self.ready.is_empty() {
            // every measurement that can be keyed is: its inputs are builds
            self.settle_together(true, reporter);
        }
        let jobs = self.opts.jobs.max(1);
        // with a fleet, blocks out on nodes leave this machine's build slots free
        while (if self.fleet.is_some() {
            self.running_builds
        } else {
            self.running
        }) < jobs
        {
            let Some(id) = self.builds.pop() else { break };
            self.running += 1;
            self.running_builds += 1;
            let mut extra = serde_json::Map::new();
            if !self.attempts[id].is_empty() {
                extra.insert("attempts".into(), json!(self.attempts[id]));
            }
            self.state[id] = State::Running;
            launcher.start(id, &self.keys, &self.done, extra, reporter);
        }
        match self.fleet {
            Some(fleet) => self.dispatch_blocks(fleet, launcher, reporter),
            None => {
                // an exclusive step starts only when nothing else runs, and the loop then
                // waits for it before dispatching anything: it always runs alone
                while self.running == 0 && self.builds.is_empty() {
                    let Some(&(rank, id)) = self.measures.iter().next() else {
                        break;
                    };
                    self.measures.remove(&(rank, id));
                    let Some(extra) = self.measurement_due(id, reporter) else {
                        continue;
                    };
                    self.running += 1;
                    self.state[id] = State::Running;
                    launcher.start(id, &self.keys, &self.done, extra, reporter);
                }
            }
        }
    }

    /// Blocks go out while nothing is built here (a block's variants all need their
    /// inputs) and a node is free, pass by pass.
    fn dispatch_blocks(
        &mut self,
        fleet: &'g dyn Fleet,
        launcher: &Launcher<'_, 'g>,
        reporter: &mut dyn Reporter,
    ) {
        let graph = self.graph;
        while self.running_builds == 0
            && self.builds.is_empty()
            && self.blocks.left.len() < fleet.capacity().max(1)
        {
            let Some(&(_, first)) = self.measures.iter().next() else {
                break;
            };
            let pass = graph.steps[first].pass;
            if self.blocks.earlier_pass_out(pass) {
                break;
            }
            let bkey = block_key(&graph.steps[first]);
            let members: Vec<((u32, u64), StepId)> = self
                .measures
                .iter()
                .filter(|(_, id)| block_key(&graph.steps[*id]) == bkey)
                .copied()
                .collect();
            let mut block: Vec<BlockStep> = Vec::new();
            for m in members {
                self.measures.remove(&m);
                let id = m.1;
                let Some(extra) = self.measurement_due(id, reporter) else {
                    continue;
                };
                block.push(BlockStep {
                    id,
                    key: self.keys[id].clone(),
                    inputs: graph.steps[id]
                        .inputs
                        .iter()
                        .map(|i| self.done[i.from].clone().expect("input done"))
                        .collect(),
                    extra,
                });
            }
            if block.is_empty() {
                continue;
            }
            self.running += 1;
            let b = self.blocks.start(block.len(), pass);
            for s in &block {
                self.state[s.id] = State::Running;
            }
            launcher.start_block(fleet, b, block, &self.keys, reporter);
        }
    }

    /// Measurement `id`'s turn has come: a conditional pass runs only if its point still
    /// needs it (the decision is reported and kept). Returns what its record carries of
    /// how it was scheduled, or `None` when it is not needed (done, without a record).
    fn measurement_due(
        &mut self,
        id: StepId,
        reporter: &mut dyn Reporter,
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        let step = &self.graph.steps[id];
        let decision = adaptive::decide(self.env, self.graph, step, &self.done);
        if decision.as_ref().is_some_and(|d| d.needed) && self.measure_point_anew(id, reporter) {
            return None; // decided again once the point's earlier passes are measured anew
        }
        if let Some(d) = &decision {
            reporter.event(&Event::PassDecided { step, decision: d });
            self.summary.decisions.push(d.clone());
        }
        if decision.as_ref().is_some_and(|d| !d.needed) {
            self.summary.not_needed += 1;
            self.state[id] = State::Done;
            self.done[id] = Some(Arc::new(Done::not_needed()));
            self.here[id] = true;
            self.release(id);
            return None;
        }
        if step.is_conditional() && !self.inputs_here(id, reporter) {
            return None; // back when what it reads is here again
        }
        let extra = measurement_extra(
            self.env.run_id,
            self.summary.seed,
            self.summary.measurement_order.len(),
            decision,
            &self.attempts[id],
        );
        self.summary.measurement_order.push(step.address.clone());
        Some(extra)
    }

    /// A conditional pass is needed at a point whose other passes were served from an
    /// earlier campaign: they are measured anew first, in this run (their readers wait for
    /// them again), and the pass goes back to its lane, to be decided again after them.
    /// Whether any were.
    fn measure_point_anew(&mut self, id: StepId, reporter: &mut dyn Reporter) -> bool {
        let again: Vec<StepId> = self
            .together
            .served_elsewhere(id)
            .into_iter()
            .filter(|&m| self.state[m] == State::Done && self.done[m].is_some())
            .collect();
        if again.is_empty() {
            return false;
        }
        let why = format!(
            "a pass at its point is measured in this run ({}), and its record is of an earlier campaign: a comparison uses measurements made together",
            self.graph.steps[id].address
        );
        for m in again {
            self.unserve(m, None);
            reporter.event(&Event::MeasuredAnew {
                step: &self.graph.steps[m],
                why: &why,
            });
            self.summary.measured_anew += 1;
            self.state[m] = State::Queued;
            self.queue_in_lane(m);
        }
        self.state[id] = State::Queued;
        self.queue_in_lane(id);
        true
    }

    /// A step reported back: done (its readers released), retried, failed or cancelled.
    fn finished(&mut self, fin: Finished, reporter: &mut dyn Reporter) {
        let (graph, env) = (self.graph, self.env);
        match fin.block {
            Some(b) => {
                if self.blocks.reported(b) {
                    self.running -= 1;
                }
            }
            None => {
                self.running -= 1;
                if lane(env, &graph.steps[fin.id]) == Lane::Build {
                    self.running_builds = self.running_builds.saturating_sub(1);
                }
            }
        }
        self.summary.step_ms += fin.elapsed.as_secs_f64() * 1e3;
        let step = &graph.steps[fin.id];
        match fin.result {
            Ok((d, times)) => {
                self.summary.ran += 1;
                let command = times.command;
                self.summary.command_ms += command.map_or(0.0, |c| c.as_secs_f64() * 1e3);
                self.summary.measuring_ms += times.measuring.map_or(0.0, |c| c.as_secs_f64() * 1e3);
                self.state[fin.id] = State::Done;
                let d = Arc::new(d);
                self.done[fin.id] = Some(d.clone());
                self.here[fin.id] = true;
                reporter.event(&Event::StepFinished {
                    step,
                    key: &fin.key,
                    elapsed: fin.elapsed,
                    command,
                    headline: d.headline.as_deref(),
                });
                self.release(fin.id);
            }
            Err(e) if e.class == FailureClass::Cancelled => {
                self.state[fin.id] = State::Skipped;
                self.summary.cancelled = true;
                self.stopping = true;
                reporter.event(&Event::StepSkipped {
                    step,
                    because: "the run was cancelled",
                });
                self.summary.skipped += 1;
            }
            Err(e)
                if e.is_transient()
                    && !self.stopping
                    && !env.is_cancelled()
                    && (self.attempts[fin.id].len() as u32)
                        < self.opts.retries.for_lane(lane(env, step)) =>
            {
                self.attempts[fin.id].push(attempt_note(&e));
                self.summary.retried += 1;
                reporter.event(&Event::StepRetrying {
                    step,
                    key: &fin.key,
                    attempt: self.attempts[fin.id].len() as u32 + 1,
                    error: &e,
                });
                // back into its lane: a measurement waits its turn to run alone again
                self.state[fin.id] = State::Queued;
                self.queue_in_lane(fin.id);
            }
            Err(e) => {
                self.summary.failed += 1;
                self.state[fin.id] = State::Failed;
                reporter.event(&Event::StepFailed {
                    step,
                    key: &fin.key,
                    error: &e,
                });
                if self.opts.keep_going {
                    self.skip_downstream(fin.id, reporter);
                } else {
                    self.stopping = true;
                }
            }
        }
    }

    fn skip_downstream(&mut self, failed: StepId, reporter: &mut dyn Reporter) {
        let graph = self.graph;
        let because = format!("input `{}` failed", graph.steps[failed].address);
        let mut stack: Vec<StepId> = graph.dependents(failed).collect();
        while let Some(id) = stack.pop() {
            if self.selected[id] && self.state[id] == State::Waiting {
                self.state[id] = State::Skipped;
                self.summary.skipped += 1;
                reporter.event(&Event::StepSkipped {
                    step: &graph.steps[id],
                    because: &because,
                });
                stack.extend(graph.dependents(id));
            }
        }
    }

    /// Whatever never ran (the run stopped early) counts as skipped.
    fn skip_the_rest(&mut self, reporter: &mut dyn Reporter) {
        let because = if self.summary.cancelled {
            "the run was interrupted"
        } else {
            "the run stopped after a failure (use --keep-going to run what does not depend on it)"
        };
        for id in 0..self.graph.steps.len() {
            if self.selected[id] && matches!(self.state[id], State::Waiting | State::Queued) {
                self.summary.skipped += 1;
                reporter.event(&Event::StepSkipped {
                    step: &self.graph.steps[id],
                    because,
                });
            }
        }
    }
}

/// What a measurement's record carries of how it was scheduled: the seed that ordered it and
/// its place in the order, the adaptive decision that ran it, and its earlier tries.
fn measurement_extra(
    run: &str,
    seed: u64,
    position: usize,
    decision: Option<adaptive::Decision>,
    attempts: &[serde_json::Value],
) -> serde_json::Map<String, serde_json::Value> {
    let mut extra = serde_json::Map::new();
    // the run that measured it (its campaign, with the study and the machine's boot) and
    // where in that run's seeded order
    extra.insert(
        "order".into(),
        json!({"seed": seed, "position": position, "run": run}),
    );
    if let Some(d) = decision {
        extra.insert("adaptive".into(), d.to_json());
    }
    if !attempts.is_empty() {
        extra.insert("attempts".into(), json!(attempts));
    }
    extra
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
        extra: serde_json::Map<String, serde_json::Value>,
        reporter: &mut dyn Reporter,
    ) {
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
            let key = step_key(step, &digests, Some(env.fingerprint_of(step)));
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
        reporter: &mut dyn Reporter,
    ) {
        for s in &block {
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
