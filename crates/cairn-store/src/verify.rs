//! `verify`: re-hash every blob and check every record; quarantine corrupt blobs, list problems; on request, quarantine damaged records.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::{atomic, is_hex64, Store};

/// A blob file whose name is not its content hash (or not a valid digest at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptBlob {
    /// The blob's name (its claimed digest).
    pub digest: String,
    /// What its content hashes to.
    pub actual: String,
    /// Where it was moved to in `quarantine/`.
    pub quarantined_to: PathBuf,
}

/// A record naming a blob that is absent, has the wrong size, or was corrupt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingBlob {
    /// The record's key.
    pub key: String,
    /// The blob's digest.
    pub digest: String,
}

/// A record that could not be read or failed its checksum (left in place).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRecordEntry {
    /// The record's key.
    pub key: String,
    /// The error, as a message.
    pub reason: String,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Blob files hashed.
    pub blobs_checked: usize,
    /// Record files checked.
    pub records_checked: usize,
    /// Blobs moved to quarantine.
    pub corrupt_blobs: Vec<CorruptBlob>,
    /// Blobs named by records but not (correctly) present.
    pub missing_blobs: Vec<MissingBlob>,
    /// Records that are unreadable or fail their checksum.
    pub corrupt_records: Vec<CorruptRecordEntry>,
    /// Stale temp files in `store/tmp` (removed at the next `Store::open`).
    pub stray_tmp_files: Vec<PathBuf>,
}

impl VerifyReport {
    /// Nothing wrong (stray temp files count as not clean).
    pub fn is_clean(&self) -> bool {
        self.corrupt_blobs.is_empty()
            && self.missing_blobs.is_empty()
            && self.corrupt_records.is_empty()
            && self.stray_tmp_files.is_empty()
    }
}

/// A damaged record that [`Store::repair_records`] moved to quarantine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantinedRecord {
    /// The record's key.
    pub key: String,
    /// Where it was moved to in `quarantine/`.
    pub quarantined_to: PathBuf,
}

fn hash_file(path: &Path) -> io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((hasher.finalize().to_hex().to_string(), size))
}

impl Store {
    /// Every file under `blobs/`, as (name, path, aa-dir name).
    pub(crate) fn blob_files(&self) -> Result<Vec<(String, PathBuf, String)>> {
        let mut out = Vec::new();
        let rd = fs::read_dir(&self.blobs).map_err(|e| StoreError::io("list", &self.blobs, e))?;
        for dir in rd {
            let dir = dir.map_err(|e| StoreError::io("list", &self.blobs, e))?;
            let dir_name = dir.file_name().to_string_lossy().into_owned();
            let dir_path = dir.path();
            if !dir_path.is_dir() {
                out.push((dir_name.clone(), dir_path, String::new()));
                continue;
            }
            let inner =
                fs::read_dir(&dir_path).map_err(|e| StoreError::io("list", &dir_path, e))?;
            for ent in inner {
                let ent = ent.map_err(|e| StoreError::io("list", &dir_path, e))?;
                out.push((
                    ent.file_name().to_string_lossy().into_owned(),
                    ent.path(),
                    dir_name.clone(),
                ));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Moves a file into `quarantine/` under `name` (suffixing `.1`, `.2`, … to never overwrite).
    fn quarantine_file(&self, path: &Path, name: &str) -> Result<PathBuf> {
        let mut dest = self.quarantine.join(name);
        let mut n = 0;
        while dest.exists() {
            n += 1;
            dest = self.quarantine.join(format!("{name}.{n}"));
        }
        atomic::rename_any(path, &dest)?;
        Ok(dest)
    }

    /// Re-hashes every blob (its name must equal its content hash) and checks every record
    /// (parse, checksum, and every blob it names present with the right size and hash).
    /// Corrupt blobs are moved to `quarantine/`; bad records are listed, not removed.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        // digest → size of blobs that hash correctly.
        let mut good: HashMap<String, u64> = HashMap::new();
        for (name, path, dir) in self.blob_files()? {
            if path.is_dir() {
                continue; // not ours; leave it alone
            }
            report.blobs_checked += 1;
            let (actual, size) =
                hash_file(&path).map_err(|e| StoreError::io("read blob", &path, e))?;
            let well_placed = is_hex64(&name) && dir == name[..2];
            if well_placed && actual == name {
                good.insert(name, size);
            } else {
                let quarantined_to = self.quarantine_file(&path, &name)?;
                report.corrupt_blobs.push(CorruptBlob {
                    digest: name,
                    actual,
                    quarantined_to,
                });
            }
        }
        for key in self.record_keys()? {
            report.records_checked += 1;
            match self.get_record(&key) {
                Ok(Some(rec)) => {
                    let mut missing: Vec<&str> = rec
                        .blobs()
                        .filter(|b| good.get(&b.digest) != Some(&b.size))
                        .map(|b| b.digest.as_str())
                        .collect();
                    missing.sort_unstable();
                    missing.dedup();
                    report
                        .missing_blobs
                        .extend(missing.into_iter().map(|d| MissingBlob {
                            key: key.clone(),
                            digest: d.to_string(),
                        }));
                }
                Ok(None) => report.records_checked -= 1, // removed while we looked
                Err(e) => report.corrupt_records.push(CorruptRecordEntry {
                    key: key.clone(),
                    reason: e.to_string(),
                }),
            }
        }
        report.stray_tmp_files = atomic::stale_tmp_files(&self.tmp)?;
        Ok(report)
    }

    /// Moves every record `report` found damaged (unreadable, failing its checksum, or naming
    /// a missing or corrupt blob) to `quarantine/<key>.json`, so the store verifies clean
    /// again. A damaged record of a step that a plan still uses would be overwritten by that
    /// step's next run anyway; one under a key no step uses (an orphan) is never overwritten,
    /// and this is the only way to clear it short of `gc`. The step of a moved record runs
    /// again at the next `cairn run`. Hold the store lock while calling this.
    pub fn repair_records(&self, report: &VerifyReport) -> Result<Vec<QuarantinedRecord>> {
        let mut keys: Vec<&str> = report
            .corrupt_records
            .iter()
            .map(|r| r.key.as_str())
            .chain(report.missing_blobs.iter().map(|m| m.key.as_str()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut moved = Vec::new();
        for key in keys {
            let path = self.record_path(key);
            if !path.exists() {
                continue; // removed or rewritten since: nothing to move
            }
            let quarantined_to = self.quarantine_file(&path, &format!("{key}.json"))?;
            moved.push(QuarantinedRecord {
                key: key.to_string(),
                quarantined_to,
            });
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Record;

    fn key(n: u8) -> String {
        format!("{n:02x}").repeat(32)
    }

    #[test]
    fn repair_quarantines_an_orphaned_empty_record_and_verify_is_clean_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open");
        let mut good = Record::new(key(1), "command", "s", "good");
        store.put_record(&mut good).expect("put");
        // what a crash between create and write can leave: an empty record no step uses
        let orphan = key(2);
        fs::write(store.record_path(&orphan), "").expect("empty record");

        let report = store.verify().expect("verify");
        assert!(!report.is_clean());
        assert_eq!(report.corrupt_records.len(), 1, "{report:?}");
        assert_eq!(report.corrupt_records[0].key, orphan);
        // verify alone never heals it: a second look finds the same damage
        assert!(!store.verify().expect("verify").is_clean());

        let moved = store.repair_records(&report).expect("repair");
        assert_eq!(moved.len(), 1);
        assert_eq!(moved[0].key, orphan);
        assert!(moved[0].quarantined_to.starts_with(store.quarantine_dir()));
        assert!(moved[0].quarantined_to.exists(), "kept for inspection");
        assert!(!store.record_path(&orphan).exists());

        let after = store.verify().expect("verify");
        assert!(after.is_clean(), "{after:?}");
        assert_eq!(after.records_checked, 1);
        assert!(
            store.get_record(&key(1)).expect("read").is_some(),
            "good record kept"
        );
        // nothing left to repair
        assert!(store.repair_records(&after).expect("repair").is_empty());
    }
}
