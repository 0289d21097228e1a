//! Recording a finished step without ever overwriting a different result: the first record
//! of a key stays at `records/<key>.json`; a later one with the same output as the current
//! record is not written (the files stay byte for byte as they were), a later one with
//! another output is kept beside it, under `alternates/<key>/<output digest>.json`, becomes
//! the current record (`Store::get_record` reads the newest), and the caller is told so.

use std::fs;
use std::io;
use std::path::PathBuf;

use crate::error::{Result, StoreError};
use crate::record::{check_key, parse_record};
use crate::{atomic, is_hex64, Record, Store};

/// What [`Store::record`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// Written at `records/<key>.json`: there was no record (or only a damaged one).
    Written,
    /// A record with this key and the same output digest was already there; it was left as
    /// it was (its times and machine-local details are the first run's).
    Unchanged,
    /// A record with this key but another output is there: it stays, and the new record is
    /// kept beside it at `path`.
    KeptBeside {
        /// The output digest of the record at `records/<key>.json`.
        existing_output: String,
        /// Where the new record was written.
        path: PathBuf,
    },
}

impl Store {
    /// The directory holding the records kept beside `key`'s record.
    pub fn alternates_dir(&self, key: &str) -> PathBuf {
        self.root.join("alternates").join(key)
    }

    /// The current record of `key` and the file it is in: the newest (by finish time) of
    /// the primary and the records kept beside it; the primary on a tie.
    pub fn current_record(&self, key: &str) -> Result<Option<(Record, PathBuf)>> {
        let Some(primary) = self.get_primary_record(key)? else {
            return Ok(None);
        };
        let mut best = (primary, self.record_path(key));
        if !self.may_have_alternates(key) {
            return Ok(Some(best));
        }
        for digest in self.alternate_digests(key)? {
            if let Some(alt) = self.read_alternate(key, &digest)? {
                if alt.finished > best.0.finished {
                    let path = self.alternates_dir(key).join(format!("{digest}.json"));
                    best = (alt, path);
                }
            }
        }
        Ok(Some(best))
    }

    /// Records `rec` without overwriting a different result (see [`Recorded`]). Like
    /// [`Store::put_record`], blobs must be stored first. The new record becomes the
    /// current one ([`Store::get_record`]): a re-run that made another output (`--fresh`, a
    /// rebuild with other packages) is what this machine has now; the first stays too.
    pub fn record(&self, rec: &mut Record) -> Result<Recorded> {
        check_key(&rec.key)?;
        let current = match self.current_record(&rec.key) {
            Ok(found) => found,
            // a damaged record is replaced: it serves nobody
            Err(StoreError::CorruptRecord { .. }) => None,
            Err(e) => return Err(e),
        };
        let Some((current, _)) = current else {
            self.put_record(rec)?;
            return Ok(Recorded::Written);
        };
        if current.output_digest == rec.output_digest {
            return Ok(Recorded::Unchanged);
        }
        let existing_output = self
            .get_primary_record(&rec.key)?
            .map_or(current.output_digest, |p| p.output_digest);
        let dir = self.alternates_dir(&rec.key);
        let path = dir.join(format!("{}.json", rec.output_digest));
        // signed like any record (its blobs checked first), then written to the side
        let bytes = self.signed_bytes(rec)?;
        fs::create_dir_all(&dir).map_err(|e| StoreError::io("create directory", &dir, e))?;
        atomic::write_atomic(&self.tmp, &path, &bytes, None)?;
        if let Some(keys) = self
            .alternates_known()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            keys.insert(rec.key.clone());
        }
        Ok(Recorded::KeptBeside {
            existing_output,
            path,
        })
    }

    /// The record of `key` kept beside the main one with output `output_digest`, if any.
    pub fn read_alternate(&self, key: &str, output_digest: &str) -> Result<Option<Record>> {
        check_key(key)?;
        if !is_hex64(output_digest) {
            return Ok(None);
        }
        let path = self
            .alternates_dir(key)
            .join(format!("{output_digest}.json"));
        match fs::read(&path) {
            Ok(b) => parse_record(key, path, &b).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read record", path, e)),
        }
    }

    /// Every record kept beside `key`'s (sorted by output digest); damaged ones are errors.
    pub fn alternates(&self, key: &str) -> Result<Vec<Record>> {
        let mut out = Vec::new();
        for digest in self.alternate_digests(key)? {
            if let Some(r) = self.read_alternate(key, &digest)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The output digests of the records kept beside `key`'s, sorted.
    pub fn alternate_digests(&self, key: &str) -> Result<Vec<String>> {
        let dir = self.alternates_dir(key);
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io("list", dir, e)),
        };
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| StoreError::io("list", &dir, e))?;
            if let Some(d) = ent
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|d| is_hex64(d))
            {
                out.push(d.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// The record of `key` made under `address`, the newest, if the key has several and one
    /// of them was: two plans that name one definition differently share its key, and each
    /// plan's later steps were keyed from its own. `None` when no record was made there.
    pub fn record_made_at(&self, key: &str, address: &str) -> Result<Option<Record>> {
        Ok(self.records_made_at(key, address)?.into_iter().next())
    }

    /// Every record of `key` made under `address`, the newest first, when the key has
    /// several (empty when it has one: that one serves whatever its address).
    pub fn records_made_at(&self, key: &str, address: &str) -> Result<Vec<Record>> {
        if !self.may_have_alternates(key) {
            return Ok(Vec::new());
        }
        let mut all = self.alternates(key)?;
        all.extend(self.get_primary_record(key)?);
        all.retain(|r| r.address == address);
        all.sort_by(|a, b| b.finished.cmp(&a.finished));
        Ok(all)
    }

    /// Whether `key` may have records kept beside its own (false: it has none; a lookup in
    /// memory after the first).
    pub fn may_have_alternates(&self, key: &str) -> bool {
        self.alternates_known()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_none_or(|keys| keys.contains(key))
    }

    /// The keys with alternates, listed from the store the first time (`None` when the
    /// listing failed: every key may have some, and each is looked up).
    fn alternates_known(&self) -> &crate::AlternateKeys {
        self.with_alternates.get_or_init(|| {
            let keys = self.keys_with_alternates().ok();
            std::sync::Mutex::new(keys.map(|k| k.into_iter().collect()))
        })
    }

    /// The keys that have records kept beside their own, sorted.
    pub fn keys_with_alternates(&self) -> Result<Vec<String>> {
        let dir = self.root.join("alternates");
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io("list", dir, e)),
        };
        let mut out: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .filter(|k| is_hex64(k))
            .collect();
        out.sort();
        Ok(out)
    }
}
