//! A fleet block as a directory on a filesystem the nodes share (the spool): what the
//! submitting cairn writes for a node (the block's steps, their keys and inputs, with the
//! inputs' blobs shipped into a store of the job's own), what the node's `cairn worker`
//! performs and writes back (each step's outputs, logs, `extra` and timing, then `done.json`),
//! and how the submitting cairn gathers that into its store as a local run records it.
//!
//! Files, each written whole (temp file, then rename): `job.json` ([`JobFile`]),
//! `store/` (a cairn store: shipped inputs, then the node's outputs), `started.json`
//! (the worker's start), `result-<i>.json` ([`StepOutcome`], one per step, in order) and
//! `done.json` ([`NodeFacts`]: the block is complete). A block without `done.json` is lost
//! whole: none of its steps is recorded.
//!
//! Why build steps are built once here and shipped, not built on each node: an image and a
//! dataset are deterministic outputs under their keys; building them once keeps every node
//! measuring the same bytes (the same image id, the same snapshot), costs one build instead
//! of one per node, and makes "nothing built twice on one node for one key" hold by
//! construction. What ships: the inputs' output blobs (manifests, the dataset's description)
//! through the job's store; the dataset snapshots and the cache through the shared cache
//! directory; images through the node's container engine (here every node shares the one
//! engine of this machine).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use cairn_graph::{step_key, Fingerprint, StepGraph};
use cairn_store::{BlobRef, Store};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::context::Env;
use crate::error::{FailureClass, StepError};
use crate::execute::{record, Built, Done, Timing};
use crate::fleet::{BlockResult, BlockStep};

pub const JOB: &str = "job.json";
pub const STARTED: &str = "started.json";
pub const DONE: &str = "done.json";

/// What a node is told to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobFile {
    /// The plan, by absolute path on the shared filesystem.
    pub plan: PathBuf,
    /// The machine-local cache of the submitting run (dataset snapshots), shared.
    pub cache: PathBuf,
    /// The fingerprint the submitting run keys measurements with.
    pub fingerprint: Fingerprint,
    pub steps: Vec<JobStep>,
}

/// One step of the block: the node finds it in the plan by address and checks its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobStep {
    pub address: String,
    pub key: String,
    pub inputs: Vec<Done>,
}

/// What became of one step on the node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepOutcome {
    pub address: String,
    pub key: String,
    pub timing: Timing,
    #[serde(default)]
    pub outputs: BTreeMap<String, BlobRef>,
    #[serde(default)]
    pub logs: BTreeMap<String, BlobRef>,
    #[serde(default)]
    pub extra: Map<String, Value>,
    pub command_ms: Option<f64>,
    /// How long it measured (a trial's warmup and measured window).
    #[serde(default)]
    pub measuring_ms: Option<f64>,
    /// `(class, message)` when the step failed.
    pub error: Option<(String, String)>,
}

/// The node a block ran on, as `done.json` tells it (the block is complete).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeFacts {
    pub name: String,
    /// The node's own fingerprint (what it measured on).
    pub fingerprint: Fingerprint,
    /// The scheduler's job id, if any.
    pub job: Option<String>,
}

/// The worker's start, for the submission → start overhead.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Started {
    pub unix_ms: f64,
    pub node: String,
}

pub fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1e3
}

/// Write `value` as JSON to `path` whole: a reader sees all of it or nothing.
pub fn write_whole(path: &Path, value: &impl Serialize) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let bytes = serde_json::to_vec_pretty(value).expect("serialises");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn result_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("result-{i}.json"))
}

/// Copy blob `b` from store `from` into store `to` (content-addressed: same reference).
fn ship_blob(from: &Store, to: &Store, b: &BlobRef) -> Result<(), String> {
    if to.has_blob(b) {
        return Ok(());
    }
    let bytes = from.read_blob(b).map_err(|e| e.to_string())?;
    to.put_blob(&bytes).map(|_| ()).map_err(|e| e.to_string())
}

/// Write block `block` of `env`'s run into `dir` for a node: `job.json` and the inputs'
/// blobs in the job's store.
pub fn write_job(
    env: &Env<'_>,
    graph: &StepGraph,
    plan: &Path,
    dir: &Path,
    block: &[BlockStep],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let job_store = Store::open(dir).map_err(|e| e.to_string())?;
    let mut steps = Vec::new();
    for s in block {
        for input in &s.inputs {
            for b in input.outputs.values() {
                ship_blob(env.store, &job_store, b)?;
            }
        }
        steps.push(JobStep {
            address: graph.steps[s.id].address.clone(),
            key: s.key.clone(),
            inputs: s.inputs.iter().map(|d| (**d).clone()).collect(),
        });
    }
    write_whole(
        &dir.join(JOB),
        &JobFile {
            plan: plan.to_path_buf(),
            cache: env.cache_root.to_path_buf(),
            fingerprint: env.fingerprint.clone(),
            steps,
        },
    )
}

/// The node's side: perform the block in `dir` in its order with `env` (whose store is the
/// job's store) and write each step's outcome, then `done.json`. A step that fails is
/// written as failed and the block goes on; a cancelled worker (the job was cancelled) stops
/// without `done.json`, so nothing of the block is gathered.
pub fn work(env: &Env<'_>, graph: &StepGraph, dir: &Path, node: &NodeFacts) -> Result<(), String> {
    let job: JobFile = read(&dir.join(JOB))?;
    write_whole(
        &dir.join(STARTED),
        &Started {
            unix_ms: unix_ms(SystemTime::now()),
            node: node.name.clone(),
        },
    )?;
    for (i, js) in job.steps.iter().enumerate() {
        if env.is_cancelled() {
            return Err("cancelled".into());
        }
        let started_at = SystemTime::now();
        let started = Instant::now();
        let result = perform_one(env, graph, &job, js);
        let timing = Timing::since(started_at, started);
        let mut outcome = StepOutcome {
            address: js.address.clone(),
            key: js.key.clone(),
            timing,
            outputs: BTreeMap::new(),
            logs: BTreeMap::new(),
            extra: Map::new(),
            command_ms: None,
            measuring_ms: None,
            error: None,
        };
        match result {
            Ok(built) => {
                outcome.outputs = built.outputs;
                outcome.logs = built.logs;
                outcome.extra = built.extra;
                outcome.command_ms = built.command_time.map(|d| d.as_secs_f64() * 1e3);
                outcome.measuring_ms = built.measuring_time.map(|d| d.as_secs_f64() * 1e3);
            }
            Err(e) if e.is_cancelled() => return Err("cancelled".into()),
            Err(e) => outcome.error = Some((e.class.as_str().to_string(), e.message())),
        }
        write_whole(&result_path(dir, i), &outcome)?;
    }
    write_whole(&dir.join(DONE), node)
}

fn perform_one(
    env: &Env<'_>,
    graph: &StepGraph,
    job: &JobFile,
    js: &JobStep,
) -> Result<Built, StepError> {
    let step = graph
        .steps
        .iter()
        .find(|s| s.address == js.address)
        .ok_or_else(|| {
            StepError::permanent(format!(
                "the plan {} has no step {} (was it changed after the run was submitted?)",
                job.plan.display(),
                js.address
            ))
        })?;
    let digests: Vec<&str> = js.inputs.iter().map(|d| d.output_digest.as_str()).collect();
    let key = step_key(step, &digests, Some(&job.fingerprint)).hash();
    if key != js.key {
        return Err(StepError::permanent(format!(
            "{} has key {} here but {} where it was submitted: the plan or cairn differs on this node",
            js.address,
            &key[..12],
            &js.key[..12.min(js.key.len())]
        )));
    }
    let kind = env.kinds.get(step).ok_or_else(|| {
        StepError::permanent(format!("no executor for `{}` steps", step.kind.as_str()))
    })?;
    let inputs: Vec<&Done> = js.inputs.iter().collect();
    kind.perform(env, step, &js.key, &inputs)
}

/// What the submitting cairn found of a block in `dir` once its job ended.
pub enum Gathered {
    /// `done.json` is there: every step's result, recorded when it succeeded.
    Complete(Vec<BlockResult>),
    /// No `done.json`: the block was lost (its node or job died); nothing was recorded.
    Lost,
}

/// Gather block `block` from `dir` into `env`'s store: each finished step's blobs (from the
/// job's store) first, then its record, with the node and its fingerprint in `extra.node`
/// and the scheduler's `extra` beside the kind's. `more` is added to every step's `extra`.
pub fn gather(
    env: &Env<'_>,
    graph: &StepGraph,
    dir: &Path,
    block: &[BlockStep],
    more: &Map<String, Value>,
) -> Result<Gathered, String> {
    let node: NodeFacts = match read(&dir.join(DONE)) {
        Ok(n) => n,
        Err(_) if !dir.join(DONE).exists() => return Ok(Gathered::Lost),
        Err(e) => return Err(e),
    };
    let job_store = Store::open(dir).map_err(|e| e.to_string())?;
    let node_json = json!({
        "name": node.name,
        "job": node.job,
        "fingerprint": node.fingerprint,
        "class": node_class(&node.fingerprint),
    });
    let mut results = Vec::new();
    for (i, s) in block.iter().enumerate() {
        let step = &graph.steps[s.id];
        let outcome: StepOutcome = read(&result_path(dir, i))?;
        let elapsed = Duration::from_secs_f64(outcome.timing.duration_ms.max(0.0) / 1e3);
        if outcome.address != step.address || outcome.key != s.key {
            return Err(format!(
                "{} holds a result for {} where {} was expected",
                result_path(dir, i).display(),
                outcome.address,
                step.address
            ));
        }
        if let Some((class, message)) = outcome.error {
            let class = match class.as_str() {
                "transient" => FailureClass::Transient,
                _ => FailureClass::Permanent,
            };
            let mut e = StepError::permanent(message).context(format!("on node {}", node.name));
            e.class = class;
            results.push(BlockResult {
                result: Err(e),
                elapsed,
            });
            continue;
        }
        let ship = |b: &BlobRef| ship_blob(&job_store, env.store, b);
        let shipped = outcome
            .outputs
            .values()
            .chain(outcome.logs.values())
            .try_for_each(ship);
        let result = match shipped {
            Err(e) => Err(StepError::transient(format!(
                "gathering the outputs from {}: {e}",
                dir.display()
            ))),
            Ok(()) => {
                let mut extra = s.extra.clone();
                extra.extend(more.clone());
                extra.insert("node".into(), node_json.clone());
                let mut kind_extra = outcome.extra;
                // the kind's own `extra` wins nowhere over the scheduler's
                kind_extra.retain(|k, _| !extra.contains_key(k));
                let built = Built {
                    outputs: outcome.outputs,
                    logs: outcome.logs,
                    extra: kind_extra,
                    command_time: outcome
                        .command_ms
                        .map(|ms| Duration::from_secs_f64(ms / 1e3)),
                    measuring_time: outcome
                        .measuring_ms
                        .map(|ms| Duration::from_secs_f64(ms / 1e3)),
                };
                let inputs: Vec<&Done> = s.inputs.iter().map(|d| d.as_ref()).collect();
                let digests: Vec<&str> = inputs.iter().map(|d| d.output_digest.as_str()).collect();
                let key = step_key(step, &digests, Some(env.fingerprint));
                record(
                    env,
                    step,
                    &key,
                    &s.key,
                    &inputs,
                    built,
                    outcome.timing,
                    extra,
                )
            }
        };
        results.push(BlockResult { result, elapsed });
    }
    Ok(Gathered::Complete(results))
}

/// A short name for a node's kind of machine: nodes whose fingerprints are equal share it,
/// so reports can tell (and analyses block on) nodes that differ.
pub fn node_class(fp: &Fingerprint) -> String {
    let bytes = serde_json::to_vec(fp).expect("serialises");
    blake3::hash(&bytes).to_hex()[..12].to_string()
}
