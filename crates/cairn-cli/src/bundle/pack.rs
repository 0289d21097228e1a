//! `cairn bundle PLAN -o study.tar.zst`: everything a peer needs to verify and reproduce a
//! study, in one archive written whole or not at all.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cairn_graph::{StepGraph, StepKind};
use cairn_plan::Plan;
use cairn_store::Store;

use super::chain::{self, Link};
use super::format::{FileEntry, Manifest, StepEntry, FORMAT, MANIFEST};

/// What went into a bundle.
#[derive(Debug)]
pub struct Packed {
    pub manifest: Manifest,
    /// Bytes of the archive written.
    pub archive_bytes: u64,
}

/// Hashes a file: blake3 and size.
pub fn hash_file(path: &Path) -> io::Result<FileEntry> {
    let mut f = File::open(path)?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok(FileEntry {
        blake3: h.finalize().to_hex().to_string(),
        size,
    })
}

/// The files of the plan: every source file and every host file its steps read, each
/// relative to the deepest folder holding them all (so `import "../images/x.kdl"` keeps
/// working inside the bundle).
fn plan_files(
    plan_path: &Path,
    plan: &Plan,
    graph: &StepGraph,
) -> Result<Vec<(String, PathBuf)>, String> {
    let mut paths: Vec<PathBuf> = vec![plan_path.to_path_buf()];
    paths.extend(plan.sources.iter().map(|s| s.path.clone()));
    for s in &graph.steps {
        if let Some(c) = &s.command {
            paths.extend(c.files.iter().map(|f| f.abs.clone()));
        }
    }
    let lock = crate::context::lock_path(plan_path);
    if lock.is_file() {
        paths.push(lock);
    }
    let abs: Vec<PathBuf> = paths
        .iter()
        .map(|p| {
            p.canonicalize()
                .map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, _>>()?;
    let mut root = abs[0].parent().unwrap_or(Path::new("/")).to_path_buf();
    for a in &abs {
        while !a.starts_with(&root) {
            root = root.parent().unwrap_or(Path::new("/")).to_path_buf();
        }
    }
    let mut out = BTreeMap::new();
    for a in abs {
        let rel = a.strip_prefix(&root).expect("under the common folder");
        let rel = rel
            .to_str()
            .ok_or_else(|| format!("{} is not UTF-8", rel.display()))?;
        out.insert(format!("plan/{rel}"), a);
    }
    Ok(out.into_iter().collect())
}

/// Packs the study of `graph` (as recorded in `store` on the machines `reading` names) into
/// `out`. Every step must have its result: a bundle holds the whole study.
pub fn pack(
    plan_path: &Path,
    plan: &Plan,
    graph: &StepGraph,
    store: &Store,
    reading: &crate::measured_on::Reading,
    report_dir: &Path,
    out: &Path,
) -> Result<Packed, String> {
    let links = chain::walk(graph, store, &|id| Some(reading.class_of(id).clone()));
    let mut steps = Vec::new();
    let mut files: Vec<(String, PathBuf)> = plan_files(plan_path, plan, graph)?;
    let root_rel = files
        .iter()
        .find(|(_, abs)| Some(abs) == plan_path.canonicalize().ok().as_ref())
        .map(|(rel, _)| rel.clone())
        .ok_or("the root plan file is not among the plan's files")?;
    let mut missing = Vec::new();
    let mut blobs = BTreeMap::new();
    for &id in &graph.order {
        let step = &graph.steps[id];
        let key = match &links[id] {
            Link::Record(r) => {
                // the record the walk chose (the current one, or of a key with several the
                // one made under this step's address), wherever it is kept, is the bundle's
                // record of the key
                let source = match store.current_record(&r.key).ok().flatten() {
                    Some((current, p)) if current.output_digest == r.output_digest => p,
                    _ => {
                        let kept = store
                            .alternates_dir(&r.key)
                            .join(format!("{}.json", r.output_digest));
                        if kept.exists() {
                            kept
                        } else {
                            store.record_path(&r.key)
                        }
                    }
                };
                files.push((format!("store/records/{}.json", r.key), source));
                for b in r.blobs() {
                    blobs.insert(
                        format!("store/blobs/{}/{}", &b.digest[..2], b.digest),
                        store.blob_path(&b.digest),
                    );
                }
                Some(r.key.clone())
            }
            Link::NotNeeded => None,
            // a plain walk of this store links only to records of this cairn's code
            Link::Missing { .. } | Link::OlderCode { .. } => {
                missing.push(step.address.clone());
                None
            }
        };
        steps.push(StepEntry {
            address: step.address.clone(),
            kind: step.kind.as_str().to_string(),
            key,
            definition_key: step.definition_key.clone(),
        });
    }
    if !missing.is_empty() {
        return Err(format!(
            "{} steps have no result on this machine (e.g. {}): run the study before bundling it",
            missing.len(),
            missing[0]
        ));
    }
    files.extend(blobs);
    if let Ok(rd) = std::fs::read_dir(report_dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_file() {
                let name = e.file_name().to_string_lossy().into_owned();
                files.push((format!("report/{}/{name}", graph.study), p));
            }
        }
    }
    files.sort();
    files.dedup();
    let mut entries = BTreeMap::new();
    for (rel, abs) in &files {
        let e = hash_file(abs).map_err(|e| format!("{}: {e}", abs.display()))?;
        entries.insert(rel.clone(), e);
    }
    let total_bytes = entries.values().map(|e| e.size).sum();
    let manifest = Manifest {
        format: FORMAT.into(),
        study: graph.study.clone(),
        plan: root_rel,
        cairn_version: env!("CARGO_PKG_VERSION").into(),
        created: cairn_store::now_rfc3339(),
        files: entries,
        steps,
        host_steps: graph
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::COMMAND)
            .map(|s| s.address.clone())
            .collect(),
        total_bytes,
        params: plan
            .param_values()
            .into_iter()
            .map(|(name, (value, _default))| (name, value))
            .collect(),
    };
    let archive_bytes = write_archive(&manifest, &files, out)?;
    Ok(Packed {
        manifest,
        archive_bytes,
    })
}

/// Writes the archive beside `out` and renames it into place: never half-written.
fn write_archive(
    manifest: &Manifest,
    files: &[(String, PathBuf)],
    out: &Path,
) -> Result<u64, String> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // made as any new file is (0666 less the umask, so 0644 usually), not a temporary
    // file's private 0600: the archive is there to be shared
    let tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let err = |e: io::Error| format!("writing {}: {e}", out.display());
    {
        // the tar in memory, then compressed in memory (the pure-Rust encoder cannot report
        // a write error, so it never writes to a file), then written out
        let mut tar = tar::Builder::new(Vec::new());
        tar.mode(tar::HeaderMode::Deterministic);
        let json = serde_json::to_vec_pretty(manifest).expect("serialises");
        append(&mut tar, MANIFEST, &mut json.as_slice(), json.len() as u64).map_err(err)?;
        for (rel, abs) in files {
            let mut f = File::open(abs).map_err(|e| format!("{}: {e}", abs.display()))?;
            let len = f.metadata().map_err(err)?.len();
            append(&mut tar, rel, &mut f, len).map_err(err)?;
        }
        let tar = tar.into_inner().map_err(err)?;
        let zst = ruzstd::encoding::compress_to_vec(
            tar.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut f = tmp.as_file();
        f.write_all(&zst).map_err(err)?;
        f.flush().map_err(err)?;
        f.sync_all().map_err(err)?;
    }
    let len = tmp.as_file().metadata().map_err(err)?.len();
    tmp.persist(out).map_err(|e| err(e.error))?;
    Ok(len)
}

fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    data: &mut dyn Read,
    len: u64,
) -> io::Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(len);
    h.set_mode(0o644);
    h.set_mtime(0);
    tar.append_data(&mut h, path, data)
}
