//! Is a step's result already in the store, and can it serve here? A record counts only if
//! every blob it names is present with its recorded size (content is re-checked when it is
//! read) and the step's kind accepts it on this machine (e.g. its image is still in the
//! engine, its snapshot still in the cache). When the kind refuses the record, a record kept
//! beside it under the same key (`Store::alternates`) may serve instead.

use cairn_graph::Step;
use cairn_store::Record;

use crate::context::Env;
use crate::kind::Unusable;

/// The record of `key` for `step`, if it can serve as the step's result on this machine.
pub fn usable_record(env: &Env<'_>, step: &Step, key: &str) -> Lookup {
    match env.store.get_record(key) {
        Ok(Some(rec)) => {
            let missing = rec
                .blobs()
                .find(|b| !env.store.has_blob(b))
                .map(|b| b.digest.clone());
            if let Some(digest) = missing {
                return Lookup::BlobMissing(digest);
            }
            let verdict = env
                .kinds
                .get(step)
                .map_or(Ok(()), |kind| kind.usable(env, &rec));
            match verdict {
                Ok(()) => Lookup::Hit(Box::new(rec)),
                // a record kept beside it (another output of the same key, e.g. an image
                // rebuilt here with other packages) may be the one this machine has
                Err(why) => match usable_alternate(env, step, key, &rec) {
                    Some(alt) => Lookup::Hit(Box::new(alt)),
                    None => Lookup::Unusable(why),
                },
            }
        }
        Ok(None) => Lookup::Miss,
        Err(e) => Lookup::Corrupt(e.to_string()),
    }
}

/// Another record of `key` (the first, or one kept beside) whose blobs are here and that
/// the kind accepts here, the newest first.
fn usable_alternate(env: &Env<'_>, step: &Step, key: &str, current: &Record) -> Option<Record> {
    let kind = env.kinds.get(step)?;
    let mut others: Vec<Record> = env.store.alternates(key).ok()?;
    others.extend(env.store.get_primary_record(key).ok().flatten());
    others.retain(|r| r.output_digest != current.output_digest);
    others.sort_by(|a, b| b.finished.cmp(&a.finished));
    others
        .into_iter()
        .find(|r| r.blobs().all(|b| env.store.has_blob(b)) && kind.usable(env, r).is_ok())
}

pub enum Lookup {
    Hit(Box<Record>),
    Miss,
    BlobMissing(String),
    Corrupt(String),
    /// The record is intact, but its kind cannot use it here (an image gone from the engine,
    /// a snapshot gone from the cache).
    Unusable(Unusable),
}
