//! Is a step's result already in the store? A record counts only if every blob it
//! names is present with its recorded size (content is re-checked when it is read).

use cairn_store::{Record, Store};

pub fn usable_record(store: &Store, key: &str) -> Lookup {
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

pub enum Lookup {
    Hit(Box<Record>),
    Miss,
    BlobMissing(String),
    Corrupt(String),
    /// An image record whose Docker image is gone (or the engine is unreachable): why.
    ImageMissing(String),
}
