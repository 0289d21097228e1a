//! The scheduler: walks the graph in dependency order, serves cached steps from the
//! store, runs stale builds on a rayon pool (`jobs` at once) and measurements one at a
//! time with nothing beside them, in the seeded order of [`crate::order`].

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_graph::{step_key, Fingerprint, Selector, StepGraph, StepId};
use cairn_store::Store;
use rayon::prelude::*;

use crate::cache::{usable_record, Lookup};
use crate::events::{Event, Reporter};
use crate::execute::{perform, Done, StepContext, StepError};
use crate::order;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    pub keep_going: bool,
    /// Run only these steps (and what they need).
    pub only: Vec<Selector>,
    /// Re-run these even if cached.
    pub fresh: Vec<Selector>,
    pub work_root: PathBuf,
    /// The machine-local cache directory (dataset snapshots, debootstrap downloads).
    pub cache_root: PathBuf,
    /// The Debian mirror for base images (`--mirror`); `None` = `$CAIRN_DEBIAN_MIRROR` or apt's.
    pub mirror: Option<String>,
    pub seed: Option<u64>,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct RunSummary {
    pub selected: usize,
    pub cached: usize,
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    pub cancelled: bool,
    /// Wall time of the whole run.
    pub elapsed_ms: f64,
    /// Sum of the time stale steps spent executing (their own work plus cairn's
    /// per-step work inside the worker).
    pub step_ms: f64,
    /// Sum of the time the steps' own commands took.
    pub command_ms: f64,
    pub seed: u64,
    /// Measurements in the order they ran.
    pub measurement_order: Vec<String>,
}

impl RunSummary {
    pub fn ok(&self) -> bool {
        self.failed == 0 && !self.cancelled
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
    result: Result<(Done, Option<Duration>), StepError>,
    elapsed: Duration,
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

pub fn run(
    graph: &StepGraph,
    store: &Store,
    fingerprint: &Fingerprint,
    opts: &RunOptions,
    reporter: &mut dyn Reporter,
) -> RunSummary {
    let t0 = Instant::now();
    // working directories go here; made once per run (the CLI also cleans stale ones)
    let _ = std::fs::create_dir_all(&opts.work_root);
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
    let mut builds: Vec<StepId> = Vec::new();
    let mut measures: BTreeSet<((u32, u64), StepId)> = BTreeSet::new();
    let mut stopping = false;

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .thread_name(|i| format!("cairn-worker-{i}"))
        .build()
        .expect("thread pool");
    let ctx = StepContext {
        study: &graph.study,
        store,
        work_root: &opts.work_root,
        cache_root: &opts.cache_root,
        run_id: cairn_exec::docker::this_run_id(),
        mirror: opts.mirror.as_deref(),
        fingerprint,
    };
    let (tx, rx) = mpsc::channel::<Finished>();

    // steps whose inputs are all done, waiting for their cache check
    let mut ready: Vec<StepId> = (0..n).filter(|&i| selected[i] && missing[i] == 0).collect();

    pool.in_place_scope(|scope| {
        let launcher = Launcher {
            scope,
            ctx: &ctx,
            graph,
            fingerprint,
            tx: tx.clone(),
        };
        let mut running = 0usize;
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
                            let key = step_key(step, &digests, Some(fingerprint)).hash();
                            let fresh = cairn_graph::select::any_matches(&opts.fresh, step);
                            let hit = if fresh {
                                None
                            } else {
                                match usable_record(store, &opts.cache_root, &key) {
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
                            if graph.steps[id].measure {
                                measures.insert((order::rank(seed, &graph.steps[id]), id));
                            } else {
                                builds.push(id);
                            }
                        }
                    }
                }
            }

            if cairn_exec::cancel::is_cancelled() {
                summary.cancelled = true;
                stopping = true;
            }

            // 2. dispatch
            // A measurement is only started when nothing else runs, and the loop then
            // waits for it before dispatching anything: it always runs alone.
            if !stopping {
                while running < opts.jobs.max(1) {
                    let Some(id) = builds.pop() else { break };
                    running += 1;
                    let extra = serde_json::Map::new();
                    launcher.start(id, &keys, &done, &mut state, extra, reporter);
                }
                if running == 0 && builds.is_empty() {
                    if let Some(&(rank, id)) = measures.iter().next() {
                        measures.remove(&(rank, id));
                        running += 1;
                        // recorded with the result: the seed that ordered it, and its place
                        let mut extra = serde_json::Map::new();
                        extra.insert(
                            "order".into(),
                            serde_json::json!({
                                "seed": seed,
                                "position": summary.measurement_order.len(),
                            }),
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

            // 3. wait for one step to finish
            let fin = rx.recv().expect("workers hold the sender");
            running -= 1;
            summary.step_ms += fin.elapsed.as_secs_f64() * 1e3;
            let step = &graph.steps[fin.id];
            match fin.result {
                Ok((d, command)) => {
                    summary.ran += 1;
                    summary.command_ms += command.map_or(0.0, |c| c.as_secs_f64() * 1e3);
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
                Err(StepError::Cancelled) => {
                    state[fin.id] = State::Skipped;
                    summary.cancelled = true;
                    stopping = true;
                    reporter.event(&Event::StepSkipped {
                        step,
                        because: "the run was cancelled",
                    });
                    summary.skipped += 1;
                }
                Err(StepError::Failed(msg)) => {
                    summary.failed += 1;
                    state[fin.id] = State::Failed;
                    reporter.event(&Event::StepFailed {
                        step,
                        key: &fin.key,
                        error: &msg,
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
    ctx: &'s StepContext<'s>,
    graph: &'s StepGraph,
    fingerprint: &'s Fingerprint,
    tx: mpsc::Sender<Finished>,
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
        let (ctx, fingerprint) = (self.ctx, self.fingerprint);
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
            let key = step_key(step, &digests, Some(fingerprint));
            let refs: Vec<&Done> = inputs.iter().map(|d| d.as_ref()).collect();
            let result = perform(ctx, step, &key, &key_hash, &refs, extra);
            let _ = tx.send(Finished {
                id,
                key: key_hash,
                result,
                elapsed: t.elapsed(),
            });
        });
        reporter.event(&Event::StepStarted {
            step,
            key: &keys[id],
        });
    }
}
