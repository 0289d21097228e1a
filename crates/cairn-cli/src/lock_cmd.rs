//! `cairn lock PLAN`: write `PLAN.lock` — the package versions of every image of the plan
//! as built on this machine, and the digest of every plan file — and the lines `cairn plan`
//! prints about a lock: plan files changed since, versions the archive no longer serves.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use cairn_defs::image::{Debian, ImageDef};
use cairn_defs::{Lock, LockedImage};
use cairn_engine::Status;
use cairn_graph::{Step, StepGraph, StepKind};

use crate::args::{Cli, Fleet, OnArgs};
use crate::commands::{run, RunArgs};
use crate::context::{self, Exit};
use crate::{BAD_INPUT, FAILED, OK};

pub fn lock(cli: &Cli, path: &Path, mirror: Option<String>) -> Result<i32, Exit> {
    // build what is missing, resolved anew (an earlier lock does not hold this one back)
    let images = ["kind:image".to_string()];
    let code = run(
        cli,
        path,
        RunArgs {
            only: &images,
            fresh: &[],
            jobs: crate::args::default_jobs(),
            keep_going: false,
            seed: None,
            mirror,
            retries: cairn_engine::RetryPolicy::default(),
            on: OnArgs {
                on: Fleet::Local,
                partition: None,
            },
            spool: None,
            node_retries: 0,
            ignore_lock: true,
        },
    )?;
    if code != OK {
        eprintln!("error: the plan's images could not all be built here; nothing was locked");
        return Ok(code);
    }
    let cache = context::cache_dir(cli.cache.as_deref());
    let (plan, mut graph) = context::load_graph_cached(path, Some(&cache))?;
    graph.lock = None;
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(cache);
    let fp = machine.fingerprint(&graph);
    let statuses = cairn_engine::statuses(&graph, &machine.env(&graph, &store, &fp), &[], false);

    let mut images = BTreeMap::new();
    for s in graph.steps.iter().filter(|s| s.kind == StepKind::IMAGE) {
        let st = &statuses[s.id];
        let record = match (&st.status, &st.key) {
            (Status::Cached, Some(k)) => store.get_record(k).ok().flatten(),
            _ => None,
        };
        let Some(record) = record else {
            eprintln!(
                "error: {} has no usable build here after the run; nothing was locked",
                s.address
            );
            return Ok(FAILED);
        };
        let out = cairn_kinds::image_step::read_output(&store, &record.outputs).map_err(|e| {
            eprintln!("error: reading the manifest of {}: {e}", s.address);
            Exit(FAILED)
        })?;
        let Some((debian, base)) = base_of(&graph, s) else {
            eprintln!("error: {} has no debootstrap base to lock", s.address);
            return Ok(FAILED);
        };
        images.insert(
            s.address.clone(),
            LockedImage {
                suite: debian.suite,
                arch: debian.arch,
                base,
                packages: out
                    .manifest
                    .packages
                    .iter()
                    .map(|p| (p.package.clone(), p.version.clone()))
                    .collect(),
            },
        );
    }
    let lock_path = context::lock_path(path);
    let lock = Lock {
        lock: cairn_defs::lock::LOCK_FORMAT,
        study: graph.study.clone(),
        plan_files: plan_file_digests(path, &plan)?,
        images,
    };
    write_atomically(&lock_path, lock.to_text().as_bytes()).map_err(|e| {
        eprintln!("error: cannot write {}: {e}", lock_path.display());
        Exit(BAD_INPUT)
    })?;
    let versions: usize = lock.images.values().map(|i| i.packages.len()).sum();
    println!(
        "wrote {}: {} image(s), {versions} package versions, {} plan file(s)",
        lock_path.display(),
        lock.images.len(),
        lock.plan_files.len()
    );
    Ok(OK)
}

/// The debootstrap base of an image step (itself, or the base its layers stand on), and
/// whether the step is that base.
fn base_of(graph: &StepGraph, step: &Step) -> Option<(Debian, bool)> {
    let mut at = step;
    for depth in 0..=graph.steps.len() {
        match at.image_def().ok()? {
            ImageDef::Base { debian, .. } => return Some((debian, depth == 0)),
            ImageDef::Layer { .. } => {
                let parent = at.inputs.iter().find(|i| i.mount == "parent")?;
                at = &graph.steps[parent.from];
            }
        }
    }
    None
}

/// blake3 of the plan file and every file it imports, each named relative to the lock's
/// folder.
fn plan_file_digests(
    path: &Path,
    plan: &cairn_plan::Plan,
) -> Result<BTreeMap<String, String>, Exit> {
    let dir = lock_dir(path);
    let mut files: Vec<PathBuf> = vec![path.to_path_buf()];
    files.extend(plan.sources.iter().map(|s| s.path.clone()));
    let mut out = BTreeMap::new();
    for f in files {
        let bytes = std::fs::read(&f).map_err(|e| {
            eprintln!("error: cannot read {}: {e}", f.display());
            Exit(BAD_INPUT)
        })?;
        out.insert(
            relative_to(&dir, &f),
            blake3::hash(&bytes).to_hex().to_string(),
        );
    }
    Ok(out)
}

fn lock_dir(plan: &Path) -> PathBuf {
    let abs = plan.canonicalize().unwrap_or_else(|_| plan.to_path_buf());
    abs.parent().unwrap_or(Path::new("/")).to_path_buf()
}

/// `file` as a `/`-separated path from `dir` (`../images/x.kdl`).
fn relative_to(dir: &Path, file: &Path) -> String {
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let a: Vec<Component> = dir.components().collect();
    let b: Vec<Component> = file.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".into(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("lock.tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// What `cairn plan` says about the plan's lock: plan files changed since it was written,
/// and for each locked base image, the locked versions the archive no longer serves.
pub fn plan_lines(
    path: &Path,
    plan: &cairn_plan::Plan,
    graph: &StepGraph,
    cache: &Path,
) -> Vec<String> {
    let Some(lock) = &graph.lock else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let lock_name = context::lock_path(path).display().to_string();
    if let Ok(now) = plan_file_digests(path, plan) {
        for (file, digest) in &now {
            match lock.plan_files.get(file) {
                Some(d) if d == digest => {}
                Some(_) => lines.push(format!(
                    "lock: {file} changed since {lock_name} was written"
                )),
                None => lines.push(format!("lock: {file} is not in {lock_name}")),
            }
        }
        for file in lock.plan_files.keys().filter(|f| !now.contains_key(*f)) {
            lines.push(format!(
                "lock: {file} is locked but no longer part of the plan"
            ));
        }
    }
    for s in graph.steps.iter().filter(|s| s.kind == StepKind::IMAGE) {
        if !lock.images.contains_key(&s.address) {
            lines.push(format!(
                "lock: {} is not in {lock_name} (`cairn lock` to add it)",
                s.address
            ));
        }
    }
    let mirror = match cairn_exec::docker::resolve_mirror(None) {
        Ok(m) => m.url,
        Err(e) => {
            lines.push(format!("lock: cannot check the archive: {e}"));
            return lines;
        }
    };
    for (address, locked) in lock.images.iter().filter(|(_, i)| i.base) {
        match cairn_exec::docker::archive_versions(&mirror, &locked.suite, &locked.arch, cache) {
            Err(e) => lines.push(format!("lock: {address}: cannot check the archive: {e}")),
            Ok(offered) => {
                let wrong = locked.not_offered(&offered);
                if wrong.is_empty() {
                    lines.push(format!(
                        "lock: {address}: the archive serves all {} locked versions",
                        locked.packages.len()
                    ));
                } else {
                    lines.push(format!(
                        "lock: {address}: the lock and the archive disagree on {} package(s): {}",
                        wrong.len(),
                        cairn_defs::lock::describe(&wrong)
                    ));
                }
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_files_are_named_from_the_locks_folder() {
        assert_eq!(
            relative_to(Path::new("/r/plans"), Path::new("/r/images/mariadb.kdl")),
            "../images/mariadb.kdl"
        );
        assert_eq!(
            relative_to(Path::new("/r/plans"), Path::new("/r/plans/q.kdl")),
            "q.kdl"
        );
    }
}
