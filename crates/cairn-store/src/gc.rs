//! `gc`: remove records not in a keep set, then blobs no kept record names; dry-run by default.

use std::collections::HashSet;
use std::fs;
use std::io;

use crate::error::{Result, StoreError};
use crate::{is_hex64, Store};

/// What `gc` removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Whether anything was actually removed.
    pub applied: bool,
    /// Keys of removed records, sorted.
    pub records_removed: Vec<String>,
    /// Records kept beside removed records' keys (`alternates/`), removed with them.
    pub alternates_removed: usize,
    /// Bytes of removed record files.
    pub record_bytes: u64,
    /// Digests of removed blobs, sorted.
    pub blobs_removed: Vec<String>,
    /// Bytes of removed blobs.
    pub blob_bytes: u64,
    /// Names-log lines dropped by compaction (0 in a dry run).
    pub names_dropped: usize,
}

impl GcReport {
    /// Total bytes freed (or that would be).
    pub fn bytes(&self) -> u64 {
        self.record_bytes + self.blob_bytes
    }
}

fn remove(path: &std::path::Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove", path, e)),
    }
}

impl Store {
    /// Removes records whose key is not in `keep`, then blobs named by no kept record, then
    /// (when applying) compacts the names logs to kept keys. With `apply = false` nothing is
    /// touched and the report says what would go. Every kept record must be readable — if one
    /// is corrupt, gc stops with `CorruptRecord` before removing anything, since its blobs
    /// cannot be known. Quarantine is never touched. Hold the store lock while calling this.
    pub fn gc(&self, keep: &HashSet<String>, apply: bool) -> Result<GcReport> {
        let mut report = GcReport {
            applied: apply,
            ..GcReport::default()
        };
        let mut referenced: HashSet<String> = HashSet::new();
        let mut doomed = Vec::new();
        for key in self.record_keys()? {
            if keep.contains(&key) {
                if let Some(rec) = self.get_record(&key)? {
                    referenced.extend(rec.blobs().map(|b| b.digest.clone()));
                }
                // the first record stays beside a newer current one, and still serves the
                // plan whose later steps were keyed from it: its blobs stay too
                if let Some(rec) = self.get_primary_record(&key)? {
                    referenced.extend(rec.blobs().map(|b| b.digest.clone()));
                }
                for alt in self.alternates(&key)? {
                    referenced.extend(alt.blobs().map(|b| b.digest.clone()));
                }
            } else {
                doomed.push(key);
            }
        }
        for key in doomed {
            let path = self.record_path(&key);
            let len = match fs::metadata(&path) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io("stat", path, e)),
            };
            if apply {
                remove(&path)?;
            }
            report.record_bytes += len;
            report.records_removed.push(key);
        }
        // records kept beside a key go with it
        for key in self.keys_with_alternates()? {
            if keep.contains(&key) {
                continue;
            }
            let dir = self.alternates_dir(&key);
            for digest in self.alternate_digests(&key)? {
                let path = dir.join(format!("{digest}.json"));
                report.record_bytes += fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                report.alternates_removed += 1;
            }
            if apply {
                match fs::remove_dir_all(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(StoreError::io("remove", dir, e)),
                }
            }
        }
        for (name, path, _dir) in self.blob_files()? {
            // Only well-formed blob files are gc's business; anything else is left for verify.
            if !is_hex64(&name) || referenced.contains(&name) || !path.is_file() {
                continue;
            }
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if apply {
                remove(&path)?;
            }
            report.blob_bytes += len;
            report.blobs_removed.push(name);
        }
        report.blobs_removed.sort();
        if apply {
            report.names_dropped = self.compact_names(keep)?;
        }
        Ok(report)
    }
}
