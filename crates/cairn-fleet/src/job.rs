//! A fleet block as a directory on a filesystem the nodes share (the spool): what the
//! submitting cairn writes for a node (the block's steps, their keys and inputs, with the
//! inputs' blobs shipped into a store of the job's own, and the images and dataset snapshots
//! the steps need shipped into the spool's `shipped/` directory), what the node's `cairn
//! worker` performs and writes back (each step's outputs, logs, `extra` and timing, then
//! `done.json`), and how the submitting cairn gathers that into its store as a local run
//! records it.
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
//! through the job's store; the rest through `<spool>/shipped/` ([`SHIPPED`]), which
//! `job.json` names relative to the job directory, so the node reads it at whatever path it
//! mounts the spool: the dataset snapshots as `datasets/<key>.tar` (hard-linked from this
//! machine's cache where the filesystem allows, else copied; the worker's cache directory
//! *is* this directory), and each image as a `docker save` archive `images/<id>.tar`,
//! content-addressed by the image id of this machine's engine and written once. Each node
//! uses its own container engine (`DOCKER_HOST` of the job's environment, else the default
//! socket): before a step runs, the worker looks for the step's image there by reference
//! and expected id ([`ShippedImage`]); when it is absent or has another id it loads the
//! archive (`POST /images/load`), checks the loaded id, and every step of the block that
//! uses the image records `extra.shipped` (the image, its id, the archive's size, the load's
//! time). An archive that does not load, or loads as another id, fails those steps as
//! permanent errors naming the image.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use cairn_graph::{step_key, Fingerprint, StepGraph};
use cairn_store::{BlobRef, Store};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use cairn_engine::error::{FailureClass, StepError};
use cairn_engine::execute::{read_json, record, Built, Done, Timing};
use cairn_engine::fleet::{BlockResult, BlockStep};
use cairn_engine::Env;
use cairn_kinds::dataset_step::{self, DatasetOutput};
use cairn_kinds::image_step;

pub const JOB: &str = "job.json";
pub const STARTED: &str = "started.json";
pub const DONE: &str = "done.json";
/// The spool's directory of shipped files (image archives, dataset snapshots), shared by
/// its runs and blocks.
pub const SHIPPED: &str = "shipped";

/// What a node is told to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobFile {
    /// The plan, by absolute path on the shared filesystem.
    pub plan: PathBuf,
    /// The plan parameters' values the run was submitted with (absent: every default).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub params: std::collections::BTreeMap<String, String>,
    /// The shipped files (`datasets/<key>.tar`, `images/<id>.tar`), relative to the job
    /// directory: the node's worker uses it as its cache directory.
    pub shipped: PathBuf,
    /// The fingerprint the submitting run keys measurements with.
    pub fingerprint: Fingerprint,
    /// The images the block's steps run in, as archives in the shipped directory.
    #[serde(default)]
    pub images: Vec<ShippedImage>,
    pub steps: Vec<JobStep>,
}

/// An image shipped as a `docker save` archive: what the node's engine must hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShippedImage {
    /// `cairn/<name>:<key>`, the reference the steps start their servers from.
    pub reference: String,
    /// `sha256:…`: the id the submitting machine's engine has for it; the node's must be
    /// the same.
    pub image_id: String,
    /// The archive, relative to the shipped directory.
    pub archive: String,
    pub bytes: u64,
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

/// The worker's start, for the submission → start overhead: when it was ready to perform
/// its block, and when its process began (before it read the plan and probed the node).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Started {
    pub unix_ms: f64,
    pub node: String,
    /// When the worker's process began; absent from workers of older cairns.
    #[serde(default)]
    pub process_unix_ms: Option<f64>,
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

/// `target` as a path relative to directory `base` (both absolute, or both relative to the
/// same directory).
fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let t: Vec<_> = target.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = PathBuf::new();
    for _ in common..b.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c);
    }
    rel
}

/// `path` with its `.` and `..` components resolved lexically (no filesystem access): the
/// shipped directory as a person reads it, not `<job>/../../shipped`.
pub fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Put `src` at `dest` whole, unless `dest` already is it: a hard link where the filesystem
/// allows (no bytes copied), else a copy; either way through a temp file and a rename.
fn link_or_copy(src: &Path, dest: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let s = std::fs::metadata(src).map_err(|e| format!("reading {}: {e}", src.display()))?;
    if let Ok(d) = std::fs::metadata(dest) {
        let same_file = d.dev() == s.dev() && d.ino() == s.ino();
        // a copy (the spool on another filesystem) made after the source was written
        let same_copy = d.nlink() == 1
            && d.len() == s.len()
            && (d.mtime(), d.mtime_nsec()) > (s.mtime(), s.mtime_nsec());
        if same_file || same_copy {
            return Ok(());
        }
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let tmp = dest.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::fs::hard_link(src, &tmp)
        .or_else(|_| std::fs::copy(src, &tmp).map(|_| ()))
        .and_then(|()| std::fs::rename(&tmp, dest))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("shipping {} to {}: {e}", src.display(), dest.display())
        })
}

/// The image and the dataset snapshot `step` runs with, shipped into `shipped`: the image
/// as a `docker save` archive named by its id in this machine's engine (written once), the
/// snapshot under its cache path. Returns the image, if the step has one.
fn ship_inputs(
    env: &Env<'_>,
    step: &cairn_graph::Step,
    inputs: &[&Done],
    shipped: &Path,
) -> Result<Option<ShippedImage>, String> {
    if let Some(d) = dataset_step::input(step, inputs, "dataset") {
        let out: DatasetOutput = read_json(env.store, &d.outputs, dataset_step::OUTPUT)
            .map_err(|e| format!("reading the dataset's output: {e}"))?;
        link_or_copy(
            &cairn_kinds::host(env).cache_root.join(&out.snapshot),
            &shipped.join(&out.snapshot),
        )?;
    }
    let Some(d) = dataset_step::input(step, inputs, "image") else {
        return Ok(None);
    };
    let image = image_step::read_output(env.store, &d.outputs)
        .map_err(|e| format!("reading the image manifest: {e}"))?;
    let reference = image.reference;
    let engine = cairn_kinds::container_engine(env)?;
    let image_id = engine
        .image_id(&reference)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("image {reference} is not in this machine's engine any more"))?;
    let archive = format!("images/{}.tar", image_id.trim_start_matches("sha256:"));
    let path = shipped.join(&archive);
    let bytes = match std::fs::metadata(&path) {
        // content-addressed and written whole: a present archive is this image
        Ok(m) => m.len(),
        Err(_) => {
            std::fs::create_dir_all(shipped.join("images"))
                .map_err(|e| format!("creating {}: {e}", shipped.display()))?;
            engine
                .save_image(&reference, &path)
                .map_err(|e| format!("saving image {reference}: {e}"))?
        }
    };
    Ok(Some(ShippedImage {
        reference,
        image_id,
        archive,
        bytes,
    }))
}

/// Write block `block` of `env`'s run into `dir` for a node: `job.json`, the inputs' blobs
/// in the job's store, and the steps' images and snapshots in `shipped` (the spool's
/// [`SHIPPED`] directory; callers writing blocks side by side serialise this call, so an
/// image is saved once).
pub fn write_job(
    env: &Env<'_>,
    graph: &StepGraph,
    (plan, params): (&Path, &std::collections::BTreeMap<String, String>),
    shipped: &Path,
    dir: &Path,
    block: &[BlockStep],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let job_store = Store::open(dir).map_err(|e| e.to_string())?;
    let mut steps = Vec::new();
    let mut images: Vec<ShippedImage> = Vec::new();
    for s in block {
        for input in &s.inputs {
            for b in input.outputs.values() {
                ship_blob(env.store, &job_store, b)?;
            }
        }
        let inputs: Vec<&Done> = s.inputs.iter().map(|d| d.as_ref()).collect();
        if let Some(image) = ship_inputs(env, &graph.steps[s.id], &inputs, shipped)? {
            if !images.contains(&image) {
                images.push(image);
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
            params: params.clone(),
            shipped: relative_to(
                &std::path::absolute(shipped).unwrap_or_else(|_| shipped.to_path_buf()),
                &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            ),
            fingerprint: env.fingerprint.clone(),
            images,
            steps,
        },
    )
}

/// What became of a shipped image on this node: `None` when its engine already held it,
/// else the facts of the load (`extra.shipped`), or why it could not be loaded.
type Arrival = Result<Option<Value>, String>;

/// Make sure this node's engine holds `image` with the shipped id: look for it by
/// reference and id; when it is absent or another image, load its archive from `shipped`
/// and check the id the load gave it.
pub fn ensure_image(env: &Env<'_>, image: &ShippedImage, shipped: &Path) -> Arrival {
    let reference = &image.reference;
    let engine = cairn_kinds::container_engine(env)
        .map_err(|e| format!("image {reference}: this node has no container engine: {e}"))?;
    let before = engine
        .image_id(reference)
        .map_err(|e| format!("image {reference}: asking this node's engine: {e}"))?;
    if before.as_deref() == Some(image.image_id.as_str()) {
        return Ok(None);
    }
    let archive = shipped.join(&image.archive);
    let t = Instant::now();
    engine.load_image(&archive).map_err(|e| {
        format!("image {reference} could not be loaded into this node's engine: {e}")
    })?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let after = engine
        .image_id(reference)
        .map_err(|e| format!("image {reference}: asking this node's engine: {e}"))?;
    if after.as_deref() != Some(image.image_id.as_str()) {
        return Err(format!(
            "image {reference}: the archive {} loaded, but this node's engine has {} for it where {} was shipped",
            archive.display(),
            after.as_deref().unwrap_or("no image"),
            image.image_id
        ));
    }
    Ok(Some(json!({
        "image": reference,
        "image_id": image.image_id,
        "archive_bytes": image.bytes,
        "load_ms": load_ms,
        "replaced": before,
    })))
}

/// The shipped image `step` runs in, if it has one the job ships.
fn image_needed<'j>(
    env: &Env<'_>,
    graph: &StepGraph,
    job: &'j JobFile,
    js: &JobStep,
) -> Option<&'j ShippedImage> {
    let step = graph.steps.iter().find(|s| s.address == js.address)?;
    let inputs: Vec<&Done> = js.inputs.iter().collect();
    let d = dataset_step::input(step, &inputs, "image")?;
    let image = image_step::read_output(env.store, &d.outputs).ok()?;
    job.images.iter().find(|i| i.reference == image.reference)
}

/// The node's side: perform the block in `dir` in its order with `env` (whose store is the
/// job's store and whose cache directory is the shipped one) and write each step's outcome,
/// then `done.json`. Before a step runs, its image is made sure of in this node's engine
/// ([`ensure_image`], once per block). A step that fails is written as failed and the block
/// goes on; a cancelled worker (the job was cancelled) stops without `done.json`, so nothing
/// of the block is gathered.
pub fn work(
    env: &Env<'_>,
    graph: &StepGraph,
    dir: &Path,
    node: &NodeFacts,
    process_started: SystemTime,
) -> Result<(), String> {
    let job: JobFile = read(&dir.join(JOB))?;
    write_whole(
        &dir.join(STARTED),
        &Started {
            unix_ms: unix_ms(SystemTime::now()),
            node: node.name.clone(),
            process_unix_ms: Some(unix_ms(process_started)),
        },
    )?;
    let shipped = lexical(&dir.join(&job.shipped));
    let mut arrived: BTreeMap<String, Arrival> = BTreeMap::new();
    for (i, js) in job.steps.iter().enumerate() {
        if env.is_cancelled() {
            return Err("cancelled".into());
        }
        let started_at = SystemTime::now();
        let started = Instant::now();
        let arrival = image_needed(env, graph, &job, js).map(|image| {
            arrived
                .entry(image.reference.clone())
                .or_insert_with(|| ensure_image(env, image, &shipped))
                .clone()
        });
        let result = match &arrival {
            Some(Err(e)) => Err(StepError::permanent(e.clone())),
            _ => perform_one(env, graph, &job, js),
        };
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
                if let Some(Ok(Some(facts))) = arrival {
                    outcome.extra.insert("shipped".into(), facts);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_directory_is_named_relative_to_the_job() {
        let rel = relative_to(
            Path::new("/spool/shipped"),
            Path::new("/spool/run-1/block-0-try-0"),
        );
        assert_eq!(rel, Path::new("../../shipped"));
        // the node mounts the spool elsewhere: the same relative path finds it
        let on_node = lexical(&Path::new("/mnt/x/spool/run-1/block-0-try-0").join(&rel));
        assert_eq!(on_node, Path::new("/mnt/x/spool/shipped"));
        assert_eq!(lexical(Path::new("a/./b/../c")), Path::new("a/c"));
        assert_eq!(lexical(Path::new("../a")), Path::new("../a"));
    }

    #[test]
    fn a_snapshot_is_shipped_whole_once_and_again_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("cache/datasets/k.tar");
        std::fs::create_dir_all(src.parent().unwrap()).unwrap();
        std::fs::write(&src, b"first").unwrap();
        let dest = dir.path().join("spool/shipped/datasets/k.tar");
        link_or_copy(&src, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"first");
        // shipping it again leaves it as it is
        link_or_copy(&src, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"first");
        // a snapshot made anew (a new file renamed over the old one) ships again
        let tmp = dir.path().join("cache/datasets/k.tmp");
        std::fs::write(&tmp, b"second, longer").unwrap();
        std::fs::rename(&tmp, &src).unwrap();
        link_or_copy(&src, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"second, longer");
        // no temp file is left beside it
        let left: Vec<_> = std::fs::read_dir(dest.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
