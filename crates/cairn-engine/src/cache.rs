//! Is a step's result already in the store, and can it stand for the step here? A record
//! counts only if every blob it names is present with its recorded size (content is
//! re-checked when it is read) and the step's kind accepts what the record says on this
//! machine (e.g. the plan's lock accepts the image's packages). When the kind refuses the
//! record, a record kept beside it under the same key (`Store::alternates`) may serve
//! instead. Whether what a record made is still here (an image in the engine, a snapshot in
//! the cache) is asked later, and only of the inputs of a step that runs ([`present`]).

use cairn_graph::Step;
use cairn_store::Record;

use crate::context::Env;
use crate::kind::Unusable;

/// The record of `key` for `step`, if it can serve as the step's result on this machine.
pub fn usable_record(env: &Env<'_>, step: &Step, key: &str) -> Lookup {
    match env.store.get_record(key) {
        Ok(Some(rec)) => {
            // one look per distinct blob (a step's empty stdout and stderr are one)
            let mut blobs: Vec<&cairn_store::BlobRef> = rec.blobs().collect();
            blobs.sort_unstable();
            blobs.dedup();
            let missing = blobs
                .into_iter()
                .find(|b| !env.store.has_blob(b))
                .map(|b| b.digest.clone());
            if let Some(digest) = missing {
                return Lookup::BlobMissing(digest);
            }
            let verdict = env
                .kinds
                .get(step)
                .map_or(Ok(()), |kind| kind.accepts(env, &rec));
            match verdict {
                // two plans that name one image definition differently share its key, but
                // an image's output holds its name (its reference), so each build under
                // another name is another record of the key: the one made under this
                // step's own address is what this plan's later steps were keyed from
                Ok(()) if rec.address != step.address => match own(env, step, key, &rec) {
                    Some(own) => Lookup::Hit(Box::new(own)),
                    None => Lookup::Hit(Box::new(rec)),
                },
                Ok(()) => Lookup::Hit(Box::new(rec)),
                // a record kept beside it (another output of the same key, e.g. an image
                // rebuilt here with other packages) may be one the kind accepts
                Err(why) => match alternate(env, step, key, &rec, false) {
                    Some(alt) => Lookup::Hit(Box::new(alt)),
                    None => Lookup::Unusable(why),
                },
            }
        }
        Ok(None) => Lookup::Miss,
        Err(e) => Lookup::Corrupt(e.to_string()),
    }
}

/// Whether what the record of `key` made is still here for a step that reads it (the
/// kind's `present`); if not, another record of the key whose product is here, the newest
/// first, or why neither serves.
pub fn present(env: &Env<'_>, step: &Step, key: &str) -> Presence {
    let Some(kind) = env.kinds.get(step) else {
        return Presence::Here;
    };
    let rec = match env.store.get_record(key) {
        Ok(Some(rec)) => rec,
        // the record served a moment ago; gone now, the step runs again
        Ok(None) => {
            return Presence::Gone(Unusable {
                what: "record_missing",
                why: "its record is no longer in the store".into(),
            })
        }
        Err(e) => {
            return Presence::Gone(Unusable {
                what: "record_corrupt",
                why: e.to_string(),
            })
        }
    };
    match kind.present(env, &rec) {
        Ok(()) => Presence::Here,
        Err(why) => match alternate(env, step, key, &rec, true) {
            Some(alt) => Presence::Alternate(Box::new(alt)),
            None => Presence::Gone(why),
        },
    }
}

/// Another record of `key` made under `step`'s own address, whose blobs are here and that
/// the kind accepts here, the newest first.
fn own(env: &Env<'_>, step: &Step, key: &str, current: &Record) -> Option<Record> {
    // without the kind (gc's statuses), a record is judged by its blobs alone
    let kind = env.kinds.get(step);
    let others = env.store.records_made_at(key, &step.address).ok()?;
    others.into_iter().find(|r| {
        r.output_digest != current.output_digest
            && r.blobs().all(|b| env.store.has_blob(b))
            && kind.is_none_or(|k| k.accepts(env, r).is_ok())
    })
}

/// Another record of `key` (the first, or one kept beside) whose blobs are here and that
/// the kind accepts here (and, with `here`, whose product is present), the newest first.
fn alternate(
    env: &Env<'_>,
    step: &Step,
    key: &str,
    current: &Record,
    here: bool,
) -> Option<Record> {
    let kind = env.kinds.get(step)?;
    let mut others: Vec<Record> = env.store.alternates(key).ok()?;
    others.extend(env.store.get_primary_record(key).ok().flatten());
    others.retain(|r| r.output_digest != current.output_digest);
    others.sort_by(|a, b| b.finished.cmp(&a.finished));
    others.into_iter().find(|r| {
        r.blobs().all(|b| env.store.has_blob(b))
            && kind.accepts(env, r).is_ok()
            && (!here || kind.present(env, r).is_ok())
    })
}

pub enum Lookup {
    Hit(Box<Record>),
    Miss,
    BlobMissing(String),
    Corrupt(String),
    /// The record is intact, but its kind does not accept it here (the plan's lock refuses
    /// the packages it recorded, a trial's window stalled).
    Unusable(Unusable),
}

/// Whether the product of a record that served is still here for a step that reads it.
pub enum Presence {
    Here,
    /// Not the current record's, but another record's of the same key (its output differs).
    Alternate(Box<Record>),
    /// Gone: the step runs again.
    Gone(Unusable),
}
