//! Dataset steps: start the dataset's server, load the generator's tables, shut the server down cleanly and keep its datadir as a snapshot in the machine-local cache, so every trial starts from the same data without loading it again.
//!
//! The snapshot is `<cache>/datasets/<key>.tar` (the datadir as a tar archive, written to a
//! temporary name and renamed when complete). The step's output is `dataset.json`
//! ([`DatasetOutput`]): the definition, the database, the load report, the snapshot's file
//! and size, and the verified server variant that made it. A record whose snapshot is gone
//! from this machine's cache is not usable ([`snapshot_present`]): the step runs again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_graph::Step;
use cairn_store::Record;
use cairn_workload::{Dataset, DatasetDef};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::execute::{failed, Built, Done, StepContext, StepError};
use crate::image_step::{self, ImageOutput};
use crate::server_run::{LiveServer, ServerDef, StartRequest};

/// The name of a dataset step's output.
pub const OUTPUT: &str = "dataset.json";

/// How long a dataset's or trial's server may take to answer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// `dataset.json`: what a dataset step made — only what does not change when the same
/// definition is loaded again (times, sizes and the server's checks are in the record's
/// `extra`), so a snapshot made anew (e.g. after the cache was cleared) leaves every trial
/// that uses it cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetOutput {
    pub definition: DatasetDef,
    /// The database the tables are in.
    pub database: String,
    /// Rows written, all tables.
    pub rows: u64,
    /// The datadir archive, relative to the cache directory.
    pub snapshot: String,
}

/// The snapshot file of a dataset step with key `key`, relative to the cache directory.
pub fn snapshot_rel(key: &str) -> String {
    format!("datasets/{key}.tar")
}

/// The input mounted as `mount`, if the step has one.
pub fn input<'a>(step: &Step, inputs: &'a [&'a Done], mount: &str) -> Option<&'a Done> {
    step.inputs
        .iter()
        .position(|i| i.mount == mount)
        .map(|i| inputs[i])
}

/// The image a dataset or trial runs in (its `image` input), if any.
pub fn image_of(
    ctx: &StepContext<'_>,
    step: &Step,
    inputs: &[&Done],
) -> Result<Option<ImageOutput>, StepError> {
    input(step, inputs, "image")
        .map(|d| {
            image_step::read_output(ctx.store, &d.outputs)
                .map_err(|e| failed(format!("reading the image manifest: {e}")))
        })
        .transpose()
}

/// The server definition inside a dataset's or trial's definition.
pub fn server_def(step: &Step) -> Result<ServerDef, StepError> {
    serde_json::from_value(step.definition["server"].clone())
        .map_err(|e| failed(format!("the server definition: {e}")))
}

/// The generator and properties of a dataset step's definition.
pub fn dataset_def(step: &Step) -> DatasetDef {
    DatasetDef {
        generator: step.definition["generator"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        props: step.definition["props"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
    }
}

/// Load the dataset and snapshot its datadir.
pub fn perform(
    ctx: &StepContext<'_>,
    step: &Step,
    key: &str,
    inputs: &[&Done],
) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let def = dataset_def(step);
    let dataset = Dataset::from_def(&def).map_err(failed)?;
    let sdef = server_def(step)?;
    let image = image_of(ctx, step, inputs)?;
    let live = LiveServer::start(&StartRequest {
        def: &sdef,
        image: image.as_ref(),
        run_id: ctx.run_id,
        step_id: &step.address,
        snapshot: None,
        ready_timeout: READY_TIMEOUT,
    })
    .map_err(failed)?;
    let server = live.verify().map_err(failed)?;
    let target = live.target(dataset.database());
    let t_load = Instant::now();
    let load = target
        .ensure_database()
        .and_then(|_| dataset.load(&target))
        .map_err(|e| failed(format!("loading {}: {e}", step.address)))?;
    let load_ms = t_load.elapsed().as_secs_f64() * 1e3;
    if cairn_exec::cancel::is_cancelled() {
        return Err(StepError::Cancelled);
    }

    let rel = snapshot_rel(key);
    let dest = ctx.cache_root.join(&rel);
    let dir = dest.parent().expect("has a directory");
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("create {}: {e}", dir.display())))?;
    let tmp = dir.join(format!("{key}.tar.tmp-{}", std::process::id()));
    let t_snap = Instant::now();
    let bytes = match live.stop_archiving(&tmp) {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(format!("snapshot of {}: {e}", step.address)));
        }
    };
    std::fs::rename(&tmp, &dest).map_err(|e| {
        failed(format!(
            "rename {} → {}: {e}",
            tmp.display(),
            dest.display()
        ))
    })?;
    let snapshot_ms = t_snap.elapsed().as_secs_f64() * 1e3;

    let out = DatasetOutput {
        definition: def,
        database: dataset.database().to_string(),
        rows: load.rows,
        snapshot: rel.clone(),
    };
    let blob = ctx
        .store
        .put_blob(&serde_json::to_vec_pretty(&out).expect("serialises"))
        .map_err(|e| failed(format!("storing {OUTPUT}: {e}")))?;
    let mut extra = Map::new();
    extra.insert("snapshot".into(), json!({"file": rel, "bytes": bytes}));
    extra.insert("server_version".into(), json!(server.checks.version));
    extra.insert("variant".into(), json!(server));
    extra.insert("load".into(), json!(load));
    extra.insert(
        "timings".into(),
        json!({"load_ms": load_ms, "snapshot_ms": snapshot_ms, "total_ms": t0.elapsed().as_secs_f64() * 1e3}),
    );
    extra.insert(
        "headline".into(),
        json!(format!(
            "loaded {} rows in {:.2} s; snapshot {:.1} MB",
            load.rows,
            load.seconds,
            bytes as f64 / 1e6
        )),
    );
    Ok(Built {
        outputs: BTreeMap::from([(OUTPUT.to_string(), blob)]),
        extra,
    })
}

/// Cache check of a dataset record: its snapshot must be in this machine's cache with the
/// recorded size (snapshots are machine-local, not in the store).
pub fn snapshot_present(rec: &Record, cache_root: &Path) -> Result<(), String> {
    let snap = rec.extra.get("snapshot");
    let file = snap.and_then(|s| s.get("file")).and_then(Value::as_str);
    let bytes = snap.and_then(|s| s.get("bytes")).and_then(Value::as_u64);
    let (Some(file), Some(bytes)) = (file, bytes) else {
        return Err("its record names no snapshot".into());
    };
    let path: PathBuf = cache_root.join(file);
    match std::fs::metadata(&path) {
        Ok(m) if m.len() == bytes => Ok(()),
        Ok(m) => Err(format!(
            "snapshot {} has {} bytes, not the recorded {bytes}",
            path.display(),
            m.len()
        )),
        Err(_) => Err(format!(
            "snapshot {} is not in this machine's cache",
            path.display()
        )),
    }
}
