//! cairn-store: the content-addressed store under `results/store`.
//!
//! Layout (rooted at a `results/` directory):
//!
//! ```text
//! results/store/records/<key>.json     one step record per key (see [`Record`])
//! results/store/blobs/<aa>/<digest>    content-addressed blobs, aa = first two hex chars
//! results/store/tmp/                   temp files; stale ones are removed at open
//! results/store/quarantine/            corrupt blobs moved here by `verify`
//! results/store/alternates/<key>/<output digest>.json
//!                                      a later record of a key whose output differed
//!                                      from the first (never overwritten, see [`Recorded`])
//! results/store/names/<study>.log      "address\tkey\tduration_ms" hints for `explain` and the budget
//! results/store/lock                   exclusive lock; holds the holder's pid and command
//! ```
//!
//! Every write goes to a temp file in `store/tmp`, is fsynced and renamed into place;
//! a record is written only after every blob it names exists.

mod atomic;
mod blob;
mod error;
mod gc;
mod keep;
mod lock;
mod names;
mod record;
mod time;
mod verify;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub use blob::BlobRef;
pub use error::{Result, StoreError};
pub use gc::GcReport;
pub use keep::Recorded;
pub use lock::{LockHolder, StoreLock};
pub use names::Remembered;
pub use record::{Record, RECORD_SCHEMA};
pub use time::{now_rfc3339, rfc3339};
pub use verify::{CorruptBlob, CorruptRecordEntry, MissingBlob, QuarantinedRecord, VerifyReport};

/// blake3 of `bytes` as 64 lowercase hex characters.
pub fn hash_bytes(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Is `s` 64 lowercase hex characters (a step key or blob digest)?
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A handle on the store under `results/store`. Cheap to share by reference across threads.
#[derive(Debug)]
pub struct Store {
    results: PathBuf,
    root: PathBuf,
    records: PathBuf,
    blobs: PathBuf,
    tmp: PathBuf,
    quarantine: PathBuf,
    names: PathBuf,
    lock_path: PathBuf,
    /// Which `blobs/<aa>` directories are known to exist (created lazily, once).
    blob_dirs: [AtomicBool; 256],
    /// The keys that have records kept beside their own (`alternates/<key>/`), listed once
    /// on first need and kept up to date by this handle's writes: reading a record then
    /// costs no directory lookup for the (usual) key without alternates.
    with_alternates: std::sync::OnceLock<AlternateKeys>,
}

/// The keys known to have alternates; `None`: unknown, look each up.
type AlternateKeys = std::sync::Mutex<Option<std::collections::HashSet<String>>>;

impl Store {
    /// Opens (creating if needed) the store under `results_dir/store`, and removes stale temp
    /// files left by processes that are no longer running.
    pub fn open(results_dir: &Path) -> Result<Store> {
        let root = results_dir.join("store");
        let records = root.join("records");
        fs::create_dir_all(&records)
            .map_err(|e| StoreError::io("create directory", &records, e))?;
        let store = Store {
            results: results_dir.to_path_buf(),
            records,
            blobs: root.join("blobs"),
            tmp: root.join("tmp"),
            quarantine: root.join("quarantine"),
            names: root.join("names"),
            lock_path: root.join("lock"),
            root,
            blob_dirs: std::array::from_fn(|_| AtomicBool::new(false)),
            with_alternates: std::sync::OnceLock::new(),
        };
        for dir in [
            &store.records,
            &store.blobs,
            &store.tmp,
            &store.quarantine,
            &store.names,
        ] {
            fs::create_dir_all(dir).map_err(|e| StoreError::io("create directory", dir, e))?;
        }
        for stale in atomic::stale_tmp_files(&store.tmp)? {
            let r = if stale.is_dir() {
                fs::remove_dir_all(&stale)
            } else {
                fs::remove_file(&stale)
            };
            match r {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("remove stale temp file", stale, e)),
            }
        }
        Ok(store)
    }

    /// The `results/` directory this store lives in.
    pub fn results_dir(&self) -> &Path {
        &self.results
    }

    /// The `results/store` directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `results/store/quarantine` directory.
    pub fn quarantine_dir(&self) -> &Path {
        &self.quarantine
    }
}
