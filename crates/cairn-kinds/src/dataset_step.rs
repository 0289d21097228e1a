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

use crate::image_step::{self, ImageOutput};
use crate::server_run::{check_server, LiveServer, ServerDef, StartRequest};
use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::Env;

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
    ctx: &Env<'_>,
    step: &Step,
    inputs: &[&Done],
) -> Result<Option<ImageOutput>, StepError> {
    input(step, inputs, "image")
        .map(|d| {
            let mut out = image_step::read_output(ctx.store, &d.outputs)
                .map_err(|e| failed(format!("reading the image manifest: {e}")))?;
            // the id is machine-local, not in the manifest: this engine's image, for the
            // trial's provenance
            if out.manifest.image_id.is_empty() {
                if let Some(id) = crate::container_engine(ctx)
                    .ok()
                    .and_then(|e| e.image_id(&out.reference).ok().flatten())
                {
                    out.manifest.image_id = id;
                }
            }
            Ok(out)
        })
        .transpose()
}

/// The server's option names against those its image's program takes (the list read once
/// per image and kept in the store), before the server starts: a typo fails the step here,
/// not the server's start after it.
pub fn options_taken(
    ctx: &Env<'_>,
    step: &Step,
    inputs: &[&Done],
    def: &ServerDef,
    image: Option<&ImageOutput>,
) -> Result<(), StepError> {
    let (Some(image), Some(done)) = (image, input(step, inputs, "image")) else {
        return Ok(());
    };
    crate::option_names::check_before_start(
        ctx.store,
        &crate::host(ctx).runtimes,
        def,
        &image.reference,
        &done.key,
    )
    .map_err(failed)
}

/// The generator and properties of a dataset step's definition.
pub fn dataset_def(step: &Step) -> Result<DatasetDef, String> {
    step.dataset_def().map(|d| d.dataset)
}

/// The server definition of a dataset or trial step, checked ([`check_server`]): what
/// `check` and `perform` of both kinds start from.
pub fn checked_server(step: &Step) -> Result<ServerDef, cairn_workload::Error> {
    let def = step
        .server_def()
        .map_err(cairn_workload::Error::Invalid)?
        .ok_or_else(|| {
            cairn_workload::Error::Invalid(format!("{} has no server definition", step.address))
        })?;
    check_server(&def)?;
    Ok(def)
}

/// Everything a dataset step's run needs that its definition alone decides: its server and
/// the generator's spec. `cairn check` (through [`DatasetKind`]'s `check`) and [`perform`]
/// both go through here, so nothing `perform` would refuse before loading passes `check`.
pub fn check(step: &Step) -> Result<(ServerDef, DatasetDef, Dataset), cairn_workload::Error> {
    let sdef = checked_server(step)?;
    let def = dataset_def(step).map_err(cairn_workload::Error::Invalid)?;
    let dataset = Dataset::from_def(&def)?;
    dataset.supports(crate::server_run::protocol_of(&sdef)?)?;
    Ok((sdef, def, dataset))
}

/// Load the dataset and snapshot its datadir.
pub fn perform(
    ctx: &Env<'_>,
    step: &Step,
    key: &str,
    inputs: &[&Done],
) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let (sdef, def, dataset) = check(step).map_err(failed)?;
    let image = image_of(ctx, step, inputs)?;
    options_taken(ctx, step, inputs, &sdef, image.as_ref())?;
    // the loading server runs with settings that only speed up the load (recorded below;
    // a trial's server never gets them)
    let load_settings = crate::server_run::system_of(&sdef)
        .map_err(failed)?
        .load_options();
    let live = LiveServer::start(
        &crate::host(ctx).runtimes,
        &StartRequest {
            def: &sdef,
            image: image.as_ref(),
            run_id: ctx.run_id,
            step_id: &step.address,
            snapshot: None,
            ready_timeout: READY_TIMEOUT,
            extra_options: load_settings.clone(),
        },
    )
    .map_err(failed)?;
    let server = live.verify().map_err(failed)?;
    let target = live.target(dataset.database());
    let t_load = Instant::now();
    let load = target
        .ensure_database()
        .and_then(|_| dataset.load(&target))
        .map_err(|e| failed(format!("loading {}: {e}", step.address)))?;
    let load_ms = t_load.elapsed().as_secs_f64() * 1e3;
    if ctx.is_cancelled() {
        return Err(StepError::cancelled());
    }

    let rel = snapshot_rel(key);
    let dest = crate::host(ctx).cache_root.as_path().join(&rel);
    let dir = dest.parent().expect("has a directory");
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("create {}: {e}", dir.display())))?;
    // two dataset steps of one key may run side by side (servers that differ only in where
    // their clients run): each writes its own temporary file, and the renames are atomic
    static WRITERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        "{key}.tar.tmp-{}-{}",
        std::process::id(),
        WRITERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
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
        "load_settings".into(),
        Value::Object(
            load_settings
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        ),
    );
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
        ..Default::default()
    })
}

/// Cache check of a dataset record: its snapshot must be in this machine's cache with the
/// recorded size (snapshots are machine-local, not in the store).
pub fn snapshot_present(rec: &Record, cache_root: &Path) -> Result<(), String> {
    let file = rec
        .extra
        .get("snapshot")
        .and_then(|s| s.get("file"))
        .and_then(Value::as_str);
    let Some(file) = file else {
        return Err("its record names no snapshot".into());
    };
    let path: PathBuf = cache_root.join(file);
    whole_tar(&path).map_err(|why| format!("snapshot {}: {why}", path.display()))
}

/// Whether `path` is a whole tar archive: a size in 512-byte blocks ending in the two zero
/// blocks that close an archive. Any whole snapshot of a key serves: it holds the same rows,
/// whichever store's run on this machine wrote it last (a reproduction into a fresh store
/// rewrites the key's snapshot with bytes of another size, and the recorded size of the
/// first store's record is then not the file's). Snapshots are renamed into place whole, so
/// this catches a file cut short or replaced by something else, not a flipped bit.
fn whole_tar(path: &Path) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|_| "not in this machine's cache".to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if len < 1024 || len % 512 != 0 {
        return Err(format!("{len} bytes: not a whole tar archive"));
    }
    let mut end = [0u8; 1024];
    f.seek(SeekFrom::Start(len - 1024))
        .and_then(|_| f.read_exact(&mut end))
        .map_err(|e| e.to_string())?;
    if end.iter().any(|b| *b != 0) {
        return Err("it does not end as a tar archive ends: cut short or damaged".into());
    }
    Ok(())
}

/// The runtime a dataset's or trial's server runs in (`executor`, default `docker`).
pub fn server_runtime(step: &Step) -> crate::Requirement {
    let name = match step.server_def() {
        Ok(Some(def)) => def.executor_or_default().to_string(),
        // an unreadable definition fails the step with the reason when it runs
        _ => cairn_defs::server::DEFAULT_EXECUTOR.to_string(),
    };
    crate::Requirement::ServerRuntime(name)
}

/// The kind of dataset steps: a server loads the data once; a record serves only while its
/// snapshot is in this machine's cache.
pub struct DatasetKind;

impl cairn_engine::Kind for DatasetKind {
    fn check(
        &self,
        _graph: &cairn_graph::StepGraph,
        step: &Step,
    ) -> Result<(), cairn_engine::CheckError> {
        check(step).map(|_| ()).map_err(crate::check_error)
    }

    fn unavailable(&self, env: &Env<'_>, step: &Step) -> Option<String> {
        crate::requirements(step)
            .iter()
            .find_map(|need| need.unmet(crate::host(env)))
    }

    fn present(&self, env: &Env<'_>, record: &Record) -> Result<(), cairn_engine::Unusable> {
        snapshot_present(record, crate::host(env).cache_root.as_path()).map_err(|why| {
            cairn_engine::Unusable {
                what: "snapshot_missing",
                why,
            }
        })
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        perform(env, step, key, inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_serves_when_it_is_a_whole_tar_whatever_size_a_record_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tar");
        // a real archive, as the runtimes write them
        let mut b = tar::Builder::new(std::fs::File::create(&path).unwrap());
        let data = b"rows";
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append_data(&mut h, "data/t", &data[..]).unwrap();
        b.into_inner().unwrap();
        assert_eq!(whole_tar(&path), Ok(()));
        // cut short, or something else in its place
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 512]).unwrap();
        assert!(whole_tar(&path).unwrap_err().contains("does not end"));
        std::fs::write(&path, &bytes[..700]).unwrap();
        assert!(whole_tar(&path).unwrap_err().contains("not a whole tar"));
        assert!(whole_tar(&dir.path().join("gone.tar"))
            .unwrap_err()
            .contains("not in this machine's cache"));
    }
}
