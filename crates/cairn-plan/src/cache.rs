//! The parse cache: a plan whose files are byte-for-byte unchanged is not parsed again.
//!
//! Parsing KDL is the largest cost of a fully cached re-run of a big plan (the `kdl`
//! crate keeps formatting for round-trips and parses at a few MB/s). An entry holds the
//! typed [`Plan`] (without file texts) plus the blake3 of every file it was read from;
//! it is used only if every one of those files still hashes the same, and only by the
//! same cairn binary that wrote it (a rebuilt parser never reads an old entry). Entries
//! live in the machine-local cache directory; losing one costs a parse, nothing else.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::diagnostics::PlanError;
use crate::model::Plan;

#[derive(Serialize, Deserialize)]
struct Entry {
    /// Identity of the binary that wrote the entry.
    parser: String,
    /// blake3 of each of `plan.sources`' files, same order.
    hashes: Vec<String>,
    /// The parameters' values the plan was read with (`--set`): another set is another plan.
    #[serde(default)]
    settings: crate::params::Settings,
    plan: Plan,
}

/// Which binary this is: its path, size and modification time. Any rebuild changes it.
fn parser_identity() -> String {
    let exe = std::env::current_exe().ok();
    let meta = exe.as_ref().and_then(|e| std::fs::metadata(e).ok());
    let mtime = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{:?}:{}:{}",
        env!("CARGO_PKG_VERSION"),
        exe,
        meta.map_or(0, |m| m.len()),
        mtime
    )
}

fn entry_path(cache_dir: &Path, root: &Path) -> PathBuf {
    let abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let name = blake3::hash(abs.to_string_lossy().as_bytes()).to_hex();
    cache_dir
        .join("plans")
        .join(format!("{}.json", &name[..32]))
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Like [`crate::load`], but served from `cache_dir` when no plan file changed.
/// Returns the plan and whether it came from the cache.
///
/// A cached plan was validated when it was parsed; checks against other files
/// (declared `input`s) are not repeated — the caller hashes those files anyway.
pub fn load_cached(path: &Path, cache_dir: &Path) -> Result<(Plan, bool), PlanError> {
    load_cached_with(path, cache_dir, &crate::params::Settings::new())
}

/// [`load_cached`] with the parameters' values the caller gives (`--set`).
pub fn load_cached_with(
    path: &Path,
    cache_dir: &Path,
    settings: &crate::params::Settings,
) -> Result<(Plan, bool), PlanError> {
    let entry_file = entry_path(cache_dir, path);
    let parser = parser_identity();
    if let Some(plan) = try_hit(&entry_file, &parser, settings) {
        return Ok((plan, true));
    }
    let plan = crate::load_with(path, settings)?;
    let entry = Entry {
        settings: settings.clone(),
        parser,
        hashes: plan.sources.iter().map(|s| hash(&s.text)).collect(),
        plan,
    };
    // best effort: a cache that cannot be written only costs the next run a parse
    if let Some(dir) = entry_file.parent() {
        if std::fs::create_dir_all(dir).is_ok() {
            let tmp = entry_file.with_extension(format!("tmp{}", std::process::id()));
            if let Ok(bytes) = serde_json::to_vec(&entry) {
                if std::fs::write(&tmp, bytes).is_ok()
                    && std::fs::rename(&tmp, &entry_file).is_err()
                {
                    let _ = std::fs::remove_file(&tmp);
                }
            }
        }
    }
    Ok((entry.plan, false))
}

fn try_hit(entry_file: &Path, parser: &str, settings: &crate::params::Settings) -> Option<Plan> {
    let bytes = std::fs::read(entry_file).ok()?;
    let mut entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.parser != parser
        || &entry.settings != settings
        || entry.hashes.len() != entry.plan.sources.len()
    {
        return None;
    }
    for (source, want) in entry.plan.sources.iter_mut().zip(&entry.hashes) {
        // bounded like a first read: a file swapped for a FIFO or /dev/zero must not hang
        let text = crate::limits::read_plan_file(&source.path).ok()?;
        if &hash(&text) != want {
            return None;
        }
        source.text = Arc::from(text);
    }
    Some(entry.plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_parsed_again_and_an_unchanged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let lib = dir.path().join("lib.kdl");
        let root = dir.path().join("p.kdl");
        std::fs::write(&lib, "step \"b\" { run \"true\" }\n").unwrap();
        std::fs::write(&root, "import \"lib.kdl\"\nstep \"a\" { run \"true\" }\n").unwrap();

        let (p1, hit1) = load_cached(&root, &cache).unwrap();
        let (p2, hit2) = load_cached(&root, &cache).unwrap();
        assert!(!hit1 && hit2);
        assert_eq!(p1.steps.len(), p2.steps.len());
        assert_eq!(p2.sources[1].text.as_ref(), "step \"b\" { run \"true\" }\n");
        assert_eq!(p1.steps[0].name.loc, p2.steps[0].name.loc);

        // an imported file changes: parsed again, the change is seen
        std::fs::write(&lib, "step \"b\" { run \"false\" }\n").unwrap();
        let (p3, hit3) = load_cached(&root, &cache).unwrap();
        assert!(!hit3);
        let b = p3.steps.iter().find(|s| s.name.value == "b").unwrap();
        assert_eq!(b.run.value, "false");

        // an error is never cached
        std::fs::write(&root, "step \"a\" { nope }\n").unwrap();
        assert!(load_cached(&root, &cache).is_err());
        assert!(load_cached(&root, &cache).is_err());
    }
}
