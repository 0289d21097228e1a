//! Step records: the provenance of one finished step, checksummed, stored at `records/<key>.json`.
//!
//! The file is the record's compact JSON (fields in declaration order, map keys sorted,
//! `checksum` last) plus a newline. `checksum` is blake3 of those same bytes with
//! `checksum = ""`. Reading hashes the file's exact bytes (with the checksum value blanked),
//! so any edit — even one that parses to the same values — is reported as corruption.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::atomic;
use crate::blob::BlobRef;
use crate::error::{Result, StoreError};
use crate::{is_hex64, Store};

/// The record format version written by this crate.
pub const RECORD_SCHEMA: u32 = 1;

/// The provenance of one finished step. Field order is part of the format: do not reorder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Record format version ([`RECORD_SCHEMA`]).
    pub schema: u32,
    /// The step key, 64 hex.
    pub key: String,
    /// "command" | "image" | "trial" | …
    pub kind: String,
    /// The study the step belongs to.
    pub study: String,
    /// Human name of the step incl. matrix point and pass, e.g. `load[threads=2]#1`.
    pub address: String,
    /// The canonical key struct that was hashed into `key`.
    pub key_json: Value,
    /// The step's resolved definition.
    pub definition: Value,
    /// Input name → that input's output digest.
    pub inputs: BTreeMap<String, String>,
    /// Declared output path → blob.
    pub outputs: BTreeMap<String, BlobRef>,
    /// "stdout", "stderr" → blob.
    pub logs: BTreeMap<String, BlobRef>,
    /// [`Record::compute_output_digest`] of `outputs`.
    pub output_digest: String,
    /// RFC 3339 UTC.
    pub started: String,
    /// RFC 3339 UTC.
    pub finished: String,
    /// Wall-clock duration in milliseconds (finite).
    pub duration_ms: f64,
    /// Exit status of the step.
    pub exit_status: i32,
    /// Machine fingerprint (trials). `Some(null)` is stored as `None`.
    pub fingerprint: Option<Value>,
    /// Version of cairn that ran the step.
    pub cairn_version: String,
    /// blake3 of the definitions of the step and its ancestors, not of their outputs nor
    /// of the machine: the same step of the same recipe has one definition key on every
    /// machine (records written before it existed have none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition_key: String,
    /// Kind-specific provenance (image manifest, server variables, checks).
    #[serde(default)]
    pub extra: serde_json::Map<String, Value>,
    /// blake3 of the record's serialization with `checksum = ""`; filled by `put_record`.
    #[serde(default)]
    pub checksum: String,
}

impl Record {
    /// A record with the given identity and empty everything else (schema set, times empty).
    pub fn new(
        key: impl Into<String>,
        kind: impl Into<String>,
        study: impl Into<String>,
        address: impl Into<String>,
    ) -> Record {
        Record {
            schema: RECORD_SCHEMA,
            key: key.into(),
            kind: kind.into(),
            study: study.into(),
            address: address.into(),
            key_json: Value::Null,
            definition: Value::Null,
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
            logs: BTreeMap::new(),
            output_digest: Record::compute_output_digest(&BTreeMap::new()),
            started: String::new(),
            finished: String::new(),
            duration_ms: 0.0,
            exit_status: 0,
            fingerprint: None,
            cairn_version: String::new(),
            definition_key: String::new(),
            extra: serde_json::Map::new(),
            checksum: String::new(),
        }
    }

    /// blake3 (hex) of the canonical JSON of an outputs map (`{"path":{"digest":…,"size":…},…}`,
    /// keys sorted, compact).
    pub fn compute_output_digest(outputs: &BTreeMap<String, BlobRef>) -> String {
        let bytes = serde_json::to_vec(outputs).expect("a map of strings to BlobRef serializes");
        crate::hash_bytes(&bytes)
    }

    /// Every blob the record names: outputs, then logs.
    pub fn blobs(&self) -> impl Iterator<Item = &BlobRef> {
        self.outputs.values().chain(self.logs.values())
    }

    /// Sorts the keys of every JSON object inside the record (a no-op unless serde_json's
    /// `preserve_order` is on somewhere in the build), and turns `Some(null)` fingerprints
    /// into `None` (both are written as `null`).
    fn canonicalize(&mut self) {
        if self.fingerprint == Some(Value::Null) {
            self.fingerprint = None;
        }
        self.key_json.sort_all_objects();
        self.definition.sort_all_objects();
        if let Some(f) = &mut self.fingerprint {
            f.sort_all_objects();
        }
        self.extra.sort_keys();
        for v in self.extra.values_mut() {
            v.sort_all_objects();
        }
    }

    /// Serialization with `checksum = ""` (the checksummed bytes). Leaves `checksum` empty.
    fn unsigned_bytes(&mut self) -> Vec<u8> {
        self.checksum.clear();
        serde_json::to_vec(self).expect("a Record serializes")
    }
}

/// Reads a small file with open + read + read + close: `File::read_to_end` would ask
/// `statx` and `lseek` for a size hint first, two calls more per record.
fn read_file(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = fs::File::open(path)?;
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// `{…,"checksum":""}` → the file bytes `{…,"checksum":"<hex>"}\n`.
fn signed_file_bytes(mut unsigned: Vec<u8>, checksum: &str) -> Vec<u8> {
    debug_assert!(unsigned.ends_with(b"\"\"}"));
    unsigned.truncate(unsigned.len() - 2);
    unsigned.extend_from_slice(checksum.as_bytes());
    unsigned.extend_from_slice(b"\"}\n");
    unsigned
}

pub(crate) fn check_key(key: &str) -> Result<()> {
    if is_hex64(key) {
        Ok(())
    } else {
        Err(StoreError::InvalidKey {
            key: key.to_string(),
        })
    }
}

impl Store {
    /// Where the record for `key` lives.
    pub fn record_path(&self, key: &str) -> PathBuf {
        self.records.join(format!("{key}.json"))
    }

    /// Is there a record file for `key`? One `stat`; does not check it.
    pub fn has_record(&self, key: &str) -> bool {
        is_hex64(key) && self.record_path(key).is_file()
    }

    /// Writes `rec` atomically (temp file, fsync, rename), after checking
    /// that every blob it names is in the store. Fills `rec.checksum` and sorts the keys of
    /// its JSON objects. Replaces an existing record with the same key.
    pub fn put_record(&self, rec: &mut Record) -> Result<()> {
        let bytes = self.signed_bytes(rec)?;
        // No fsync of `records/` after the rename: if a crash loses the new directory
        // entry, the step simply has no record and runs again — a record can go missing,
        // never point at missing or partial blobs (those were fsynced first, and the record
        // file itself is fsynced before it is renamed into place). That saves the costliest
        // of a step's syncs (~0.4 ms measured here).
        atomic::write_atomic(&self.tmp, &self.record_path(&rec.key), &bytes, None)
    }

    /// Checks `rec` (key, schema, finite duration, every blob it names present), fills its
    /// checksum and returns the bytes of its file.
    pub(crate) fn signed_bytes(&self, rec: &mut Record) -> Result<Vec<u8>> {
        check_key(&rec.key)?;
        let invalid = |reason: String| StoreError::InvalidRecord {
            key: rec.key.clone(),
            reason,
        };
        if rec.schema != RECORD_SCHEMA {
            return Err(invalid(format!(
                "schema is {}, this cairn writes schema {RECORD_SCHEMA}",
                rec.schema
            )));
        }
        if !rec.duration_ms.is_finite() {
            return Err(invalid(format!("duration_ms is {}", rec.duration_ms)));
        }
        if let Some(b) = rec.blobs().find(|b| !is_hex64(&b.digest)) {
            return Err(invalid(format!("blob digest {:?} is not 64 hex", b.digest)));
        }
        let mut missing: Vec<String> = rec
            .blobs()
            .filter(|b| !self.has_blob(b))
            .map(|b| b.digest.clone())
            .collect();
        if !missing.is_empty() {
            missing.sort();
            missing.dedup();
            return Err(StoreError::RecordMissingBlobs {
                key: rec.key.clone(),
                digests: missing,
            });
        }
        rec.canonicalize();
        let unsigned = rec.unsigned_bytes();
        let checksum = crate::hash_bytes(&unsigned);
        let bytes = signed_file_bytes(unsigned, &checksum);
        rec.checksum = checksum;
        Ok(bytes)
    }

    /// Reads and checks the current record for `key` — the newest (by finish time) of the
    /// record at `records/<key>.json` and those kept beside it ([`Store::record`]):
    /// `Ok(None)` if there is none; `CorruptRecord` if it does not parse, its checksum does
    /// not match, or its bytes were edited.
    pub fn get_record(&self, key: &str) -> Result<Option<Record>> {
        Ok(self.current_record(key)?.map(|(r, _)| r))
    }

    /// Reads and checks the record at `records/<key>.json` only (the first recorded).
    pub fn get_primary_record(&self, key: &str) -> Result<Option<Record>> {
        check_key(key)?;
        let path = self.record_path(key);
        let bytes = match read_file(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("read record", path, e)),
        };
        parse_record(key, path, &bytes).map(Some)
    }

    /// [`Store::get_record`] for many keys, spread over the machine's cores; results are in
    /// the order of `keys`.
    pub fn get_records<K: AsRef<str> + Sync>(&self, keys: &[K]) -> Vec<Result<Option<Record>>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = keys.len().div_ceil(threads).max(256);
        if keys.len() <= chunk {
            return keys.iter().map(|k| self.get_record(k.as_ref())).collect();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = keys
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|k| self.get_record(k.as_ref()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a record reader panicked"))
                .collect()
        })
    }

    /// The keys of all record files, sorted. Files in `records/` that are not `<key>.json`
    /// are ignored.
    pub fn record_keys(&self) -> Result<Vec<String>> {
        let rd =
            fs::read_dir(&self.records).map_err(|e| StoreError::io("list", &self.records, e))?;
        let mut keys = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| StoreError::io("list", &self.records, e))?;
            if let Some(key) = ent
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|k| is_hex64(k))
            {
                keys.push(key.to_string());
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }
}

/// Length of the file's tail after the checksummed prefix: 64 hex + `"}` + newline.
const TAIL: usize = 64 + 3;
/// What the checksummed prefix of a record file ends with.
const CHECKSUM_FIELD: &[u8] = b",\"checksum\":\"";

/// Parses and checks a record file's bytes. The file must be `P + hex + "}\n` where `P + "}`
/// (the record with `checksum = ""`) hashes to `hex`; so the checksum covers the exact bytes,
/// and no re-serialization is needed.
pub(crate) fn parse_record(key: &str, path: PathBuf, bytes: &[u8]) -> Result<Record> {
    let corrupt = |reason: String| StoreError::CorruptRecord {
        key: key.to_string(),
        path: path.clone(),
        reason,
    };
    if bytes.len() < TAIL + CHECKSUM_FIELD.len() || !bytes.ends_with(b"\"}\n") {
        return Err(corrupt(
            "truncated or not written by cairn (it must end with the checksum field)".into(),
        ));
    }
    let (prefix, tail) = bytes.split_at(bytes.len() - TAIL);
    if !prefix.ends_with(CHECKSUM_FIELD) {
        return Err(corrupt(
            "the checksum is not the last field (edited by hand?)".into(),
        ));
    }
    let stored = std::str::from_utf8(&tail[..64]).unwrap_or("");
    let mut hasher = blake3::Hasher::new();
    hasher.update(prefix);
    hasher.update(b"\"}");
    let actual = hasher.finalize().to_hex();
    if actual.as_str() != stored {
        return Err(corrupt(format!(
            "checksum mismatch: the file says {stored:?}, its content hashes to {actual}"
        )));
    }
    let rec: Record =
        serde_json::from_slice(bytes).map_err(|e| corrupt(format!("does not parse: {e}")))?;
    if rec.schema != RECORD_SCHEMA {
        return Err(corrupt(format!(
            "schema {} is not the supported schema {RECORD_SCHEMA}",
            rec.schema
        )));
    }
    if rec.key != key {
        return Err(corrupt(format!("holds key {} instead", rec.key)));
    }
    if rec.checksum != stored {
        return Err(corrupt("holds a second checksum field".into()));
    }
    Ok(rec)
}
