//! `StoreError`: every way a store operation can fail, with messages naming the path, key or digest.

use std::io;
use std::path::PathBuf;

use crate::lock::LockHolder;

/// An error from the result store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "create directory".
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// `try_lock` found the store lock held by another process.
    #[error(
        "the result store is locked by {holder} (lock file {}); wait for it to finish, or stop it",
        path.display()
    )]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, as written in the lock file by the holder.
        holder: LockHolder,
    },

    /// A blob was asked for that the store does not hold.
    #[error("blob {digest} is not in the store (expected at {})", path.display())]
    MissingBlob {
        /// The blob's digest.
        digest: String,
        /// Where it should be.
        path: PathBuf,
    },

    /// A blob's content does not hash to its name (or has the wrong size).
    #[error(
        "blob {digest} at {} is corrupt: {reason}; run `cairn verify` to quarantine it, then re-run the step that made it",
        path.display()
    )]
    Corrupt {
        /// The digest the blob should have.
        digest: String,
        /// The blob file.
        path: PathBuf,
        /// What is wrong (actual hash or size).
        reason: String,
    },

    /// `put_record` was given a record that names blobs the store does not hold.
    #[error("record {key} was not written: it names blob(s) not in the store: {}", digests.join(", "))]
    RecordMissingBlobs {
        /// The record's key.
        key: String,
        /// The missing digests.
        digests: Vec<String>,
    },

    /// A record file is unparsable, has a bad checksum, or was edited.
    #[error("record {key} at {} is corrupt: {reason}; `cairn verify --repair` moves it to quarantine (a step that a plan still has runs again), or restore it from version control", path.display())]
    CorruptRecord {
        /// The record's key (from its file name).
        key: String,
        /// The record file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A record was rejected before writing (bad schema, non-finite number, …).
    #[error("record {key} is invalid: {reason}")]
    InvalidRecord {
        /// The record's key.
        key: String,
        /// What is wrong.
        reason: String,
    },

    /// A step key is not 64 lowercase hex characters.
    #[error("invalid step key {key:?}: a key is 64 lowercase hex characters")]
    InvalidKey {
        /// The offending key.
        key: String,
    },

    /// A blob digest is not 64 lowercase hex characters.
    #[error("invalid blob digest {digest:?}: a digest is 64 lowercase hex characters")]
    InvalidDigest {
        /// The offending digest.
        digest: String,
    },

    /// A study name or step address cannot be stored in a names log.
    #[error("invalid {what} {name:?}: {reason}")]
    InvalidName {
        /// "study name" or "step address".
        what: &'static str,
        /// The offending name.
        name: String,
        /// Why it is rejected.
        reason: &'static str,
    },
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Shorthand for results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
