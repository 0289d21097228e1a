//! Which record serves each step of a plan, and whether it chains back to the plan: a
//! step's key recomputed from its definition, its inputs' recorded output digests and (for
//! a measurement) the fingerprint it was measured on must be the key of its record.

use cairn_graph::{step_key, Fingerprint, StepGraph};
use cairn_store::{Record, Store};

/// The output digest dependents get from a conditional pass that was not needed.
pub use cairn_engine::adaptive::NOT_NEEDED_DIGEST;

/// One step's link in the chain.
#[derive(Debug, Clone)]
pub enum Link {
    /// Served by this record, whose key is what the plan gives.
    Record(Box<Record>),
    /// A conditional pass that was not needed: no record, by design.
    NotNeeded,
    /// No record under the key the plan gives (or the step's inputs have none).
    Missing { key: Option<String>, why: String },
}

impl Link {
    pub fn output_digest(&self) -> Option<&str> {
        match self {
            Link::Record(r) => Some(&r.output_digest),
            Link::NotNeeded => Some(NOT_NEEDED_DIGEST),
            Link::Missing { .. } => None,
        }
    }
}

/// Walks `graph` in order: each step's key from its inputs' links and the fingerprint
/// `fingerprint_of` gives for it (measurements), and the record under that key.
pub fn walk(
    graph: &StepGraph,
    store: &Store,
    fingerprint_of: &dyn Fn(usize) -> Option<Fingerprint>,
) -> Vec<Link> {
    let mut links: Vec<Option<Link>> = vec![None; graph.steps.len()];
    for &id in &graph.order {
        let step = &graph.steps[id];
        let digests: Option<Vec<&str>> = step
            .inputs
            .iter()
            .map(|i| links[i.from].as_ref().and_then(Link::output_digest))
            .collect();
        let link = match digests {
            None => Link::Missing {
                key: None,
                why: "an input has no record".into(),
            },
            Some(d) => {
                let fp = if step.measure {
                    fingerprint_of(id)
                } else {
                    None
                };
                if step.measure && fp.is_none() && step.is_conditional() {
                    // a conditional pass the bundle holds no record of was not needed; were
                    // it needed and its record dropped, the analyses that read it would not
                    // chain (their keys hold its real output), and say so
                    Link::NotNeeded
                } else if step.measure && fp.is_none() {
                    Link::Missing {
                        key: None,
                        why: "no fingerprint to key the measurement with".into(),
                    }
                } else {
                    let key = step_key(step, &d, fp.as_ref()).hash();
                    match store.get_record(&key) {
                        // the record made under this step's address, if the key has several
                        // (`cairn_engine::cache` serves the same one)
                        Ok(Some(r)) if r.address != step.address => {
                            match store.record_made_at(&key, &step.address) {
                                Ok(Some(own)) => Link::Record(Box::new(own)),
                                _ => Link::Record(Box::new(r)),
                            }
                        }
                        Ok(Some(r)) => Link::Record(Box::new(r)),
                        Ok(None) if step.is_conditional() => Link::NotNeeded,
                        Ok(None) => Link::Missing {
                            key: Some(key),
                            why: "no record under the key the plan gives".into(),
                        },
                        Err(e) => Link::Missing {
                            key: Some(key),
                            why: e.to_string(),
                        },
                    }
                }
            }
        };
        links[id] = Some(link);
    }
    links
        .into_iter()
        .map(|l| l.expect("every step is in the order"))
        .collect()
}

/// Every step that depends on `id`, directly or not, in the graph's order (what a problem
/// with `id` breaks).
pub fn dependents_of(graph: &StepGraph, id: usize) -> Vec<usize> {
    let mut hit = vec![false; graph.steps.len()];
    let mut stack = vec![id];
    while let Some(s) = stack.pop() {
        for d in graph.dependents(s) {
            if !hit[d] {
                hit[d] = true;
                stack.push(d);
            }
        }
    }
    graph.order.iter().copied().filter(|&i| hit[i]).collect()
}

/// "a, b, c and 4 more": a short list of what a problem breaks.
pub fn breaks(graph: &StepGraph, ids: &[usize]) -> String {
    if ids.is_empty() {
        return "nothing else".into();
    }
    let names: Vec<&str> = ids
        .iter()
        .take(3)
        .map(|&i| graph.steps[i].address.as_str())
        .collect();
    let more = ids.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", names.join(", "))
    } else {
        names.join(", ")
    }
}
