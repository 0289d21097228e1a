//! A step named by its key instead of its address: `cairn cat` and `cairn explain` take the
//! 12 hex a report prints beside each trial (at least [`MIN_KEY_PREFIX`] hex of a key), and
//! find the plan's step with that key — its current key here, or the key of a record the
//! store holds of it (an earlier result, or one measured on another machine class).

use cairn_engine::StepStatus;
use cairn_graph::StepGraph;
use cairn_store::{Record, Store};

use crate::context::Exit;
use crate::BAD_INPUT;

/// The fewest hex digits that name a key (a shorter one would too often name several).
pub const MIN_KEY_PREFIX: usize = 8;

/// What a key names.
pub struct KeyMatch {
    /// The whole key.
    pub key: String,
    /// The plan's step it is a key of, if any.
    pub step: Option<usize>,
    /// The store's record under the key, if any.
    pub record: Option<Record>,
}

/// Whether `text` is written as a key (or a prefix of one): hex, at least
/// [`MIN_KEY_PREFIX`] and at most 64 digits.
pub fn looks_like_key(text: &str) -> bool {
    (MIN_KEY_PREFIX..=64).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit())
}

/// The step or record whose key starts with `prefix`: `Ok(None)` when none does; bad input
/// listing the candidates when several keys do.
pub fn find(
    graph: &StepGraph,
    statuses: &[StepStatus],
    store: &Store,
    prefix: &str,
) -> Result<Option<KeyMatch>, Exit> {
    let prefix = prefix.to_ascii_lowercase();
    let mut keys: Vec<String> = statuses
        .iter()
        .filter_map(|s| s.key.clone())
        .filter(|k| k.starts_with(&prefix))
        .collect();
    // a store of many records: their keys are file names, read without opening them
    keys.extend(
        store
            .record_keys()
            .unwrap_or_default()
            .into_iter()
            .filter(|k| k.starts_with(&prefix)),
    );
    keys.sort();
    keys.dedup();
    let matches: Vec<KeyMatch> = keys
        .into_iter()
        .map(|key| {
            let record = store.get_record(&key).ok().flatten();
            let step = step_of(graph, statuses, &key, record.as_ref());
            KeyMatch { key, step, record }
        })
        .collect();
    if matches.len() > 1 {
        eprintln!(
            "error: `{prefix}` is the start of {} keys; give more of it:",
            matches.len()
        );
        for m in &matches {
            eprintln!("  {}  {}", &m.key[..16], describe(graph, m));
        }
        return Err(Exit(BAD_INPUT));
    }
    Ok(matches.into_iter().next())
}

/// What a match is, for a person: the plan's step, else the record's study and address.
pub fn describe(graph: &StepGraph, m: &KeyMatch) -> String {
    match (m.step, &m.record) {
        (Some(id), _) => graph.steps[id].address.clone(),
        (None, Some(r)) => format!("{} of study {} (no step of this plan)", r.address, r.study),
        (None, None) => "(unknown)".into(),
    }
}

/// The plan's step that `key` is a key of: the step whose current key it is, else the step
/// the record is a result of (the same definition key, or the same study and address).
fn step_of(
    graph: &StepGraph,
    statuses: &[StepStatus],
    key: &str,
    record: Option<&Record>,
) -> Option<usize> {
    if let Some(s) = statuses.iter().position(|s| s.key.as_deref() == Some(key)) {
        return Some(s);
    }
    let r = record?;
    graph
        .steps
        .iter()
        .find(|s| !r.definition_key.is_empty() && s.definition_key == r.definition_key)
        .or_else(|| {
            graph
                .steps
                .iter()
                .find(|s| r.study == graph.study && s.address == r.address)
        })
        .map(|s| s.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_eight_to_sixty_four_hex() {
        assert!(looks_like_key("a1c1b85482bb"));
        assert!(looks_like_key("A1C1B854"));
        assert!(!looks_like_key("a1c1b85"));
        assert!(!looks_like_key("load"));
        assert!(!looks_like_key("trial/x"));
        assert!(!looks_like_key(&"a".repeat(65)));
    }
}
