//! Is a step's result already in the store? A record counts only if every blob it
//! names is present with its recorded size (content is re-checked when it is read).

use std::path::Path;

use cairn_store::{Record, Store};

/// The record of `key`, if it can serve as the step's result on this machine
/// (`cache_root`: the machine-local cache, where dataset snapshots live).
pub fn usable_record(store: &Store, cache_root: &Path, key: &str) -> Lookup {
    match store.get_record(key) {
        Ok(Some(rec)) => {
            let missing = rec
                .blobs()
                .find(|b| !store.has_blob(b))
                .map(|b| b.digest.clone());
            if let Some(digest) = missing {
                Lookup::BlobMissing(digest)
            } else if let Err(why) = image_check(&rec) {
                Lookup::ImageMissing(why)
            } else if let Err(why) = snapshot_check(&rec, cache_root) {
                Lookup::SnapshotMissing(why)
            } else {
                Lookup::Hit(Box::new(rec))
            }
        }
        Ok(None) => Lookup::Miss,
        Err(e) => Lookup::Corrupt(e.to_string()),
    }
}

/// Image records are usable only while the Docker image they name exists (cheap: only
/// image records ask the engine).
fn image_check(rec: &Record) -> Result<(), String> {
    if rec.kind == "image" {
        crate::image_step::image_present(rec)
    } else {
        Ok(())
    }
}

/// Dataset records are usable only while their snapshot is in this machine's cache.
fn snapshot_check(rec: &Record, cache_root: &Path) -> Result<(), String> {
    if rec.kind == "dataset" {
        crate::dataset_step::snapshot_present(rec, cache_root)
    } else {
        Ok(())
    }
}

pub enum Lookup {
    Hit(Box<Record>),
    Miss,
    BlobMissing(String),
    Corrupt(String),
    /// An image record whose Docker image is gone (or the engine is unreachable): why.
    ImageMissing(String),
    /// A dataset record whose snapshot is not in this machine's cache: why.
    SnapshotMissing(String),
}
