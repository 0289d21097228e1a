//! Which record serves each step of a plan, and whether it chains back to the plan: a
//! step's key recomputed from its definition, its inputs' recorded output digests and (for
//! a measurement) the fingerprint it was measured on must be the key of its record. A bundle
//! made by an earlier cairn may hold a record whose kind's code has since changed (a claim's
//! `claim/10` where this cairn's is `claim/11`): its key is the plan's with that code, and it
//! chains as what that code made ([`Link::OlderCode`]).

use cairn_graph::{step_key, Fingerprint, StepGraph};
use cairn_store::{Record, Store};

/// The output digest dependents get from a conditional pass that was not needed.
pub use cairn_engine::adaptive::NOT_NEEDED_DIGEST;

/// One step's link in the chain.
#[derive(Debug, Clone)]
pub enum Link {
    /// Served by this record, whose key is what the plan gives.
    Record(Box<Record>),
    /// Served by this record, whose key is what the plan gives with another version of the
    /// step kind's code (`code`, the one the record says made it).
    OlderCode { record: Box<Record>, code: String },
    /// A conditional pass that was not needed: no record, by design.
    NotNeeded,
    /// No record under the key the plan gives (or the step's inputs have none).
    Missing { key: Option<String>, why: String },
}

impl Link {
    pub fn output_digest(&self) -> Option<&str> {
        match self {
            Link::Record(r) | Link::OlderCode { record: r, .. } => Some(&r.output_digest),
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
    walk_with(graph, store, fingerprint_of, &|_| None)
}

/// [`walk`], where a step with no record under the plan's key may be served by the record
/// `listed` names for it (a bundle's manifest) if that record's key is the plan's with the
/// code version it recorded: what an earlier cairn made (`Link::OlderCode`).
pub fn walk_with(
    graph: &StepGraph,
    store: &Store,
    fingerprint_of: &dyn Fn(usize) -> Option<Fingerprint>,
    listed: &dyn Fn(usize) -> Option<Record>,
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
                        Ok(None) => match older_code(step, &d, fp.as_ref(), listed(id)) {
                            Some(link) => link,
                            None if step.is_conditional() => Link::NotNeeded,
                            None => Link::Missing {
                                key: Some(key),
                                why: "no record under the key the plan gives".into(),
                            },
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

/// The code version `record` was keyed with, when it is another version of the same kind's
/// code than `code` (`claim/10` beside `claim/11`): what an earlier (or later) cairn made of
/// the step, never another kind's.
pub(crate) fn another_version_of<'r>(record: &'r Record, code: &str) -> Option<&'r str> {
    let recorded = record.key_json.get("code")?.as_str()?;
    let same_kind = recorded.split('/').next() == code.split('/').next();
    (recorded != code && same_kind).then_some(recorded)
}

/// `record` as what another version of `step`'s kind code made: its recorded code names
/// the same kind (`claim/10` for `claim/11`), and the plan's key with that code is its key.
fn older_code(
    step: &cairn_graph::Step,
    digests: &[&str],
    fingerprint: Option<&Fingerprint>,
    record: Option<Record>,
) -> Option<Link> {
    let record = record?;
    let code = another_version_of(&record, &step.code)?.to_string();
    let mut key = step_key(step, digests, fingerprint);
    key.code = &code;
    (key.hash() == record.key).then(|| Link::OlderCode {
        record: Box::new(record),
        code,
    })
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A study with one claim over two servers' trials (also the comparison's tests').
    pub(crate) const PLAN: &str = r#"
study "older-code"
server "a" { option innodb_buffer_pool_size="64M" }
server "b" { option innodb_buffer_pool_size="64M"; allocator "jemalloc" }
workload "ro" { sysbench "oltp_read_only"; threads 4 }
trials "ro" { servers "a" "b"; workload "ro"; passes 4 }
claim "b keeps up" { metric "tps"; expect "b >= a" within="5%" }
"#;

    /// [`PLAN`] resolved, and its claim's step.
    pub(crate) fn plan_and_claim() -> (cairn_graph::StepGraph, cairn_graph::Step) {
        let plan = cairn_plan::parse_str("older-code.kdl", PLAN).expect("parses");
        let graph = cairn_graph::resolve(&plan).expect("resolves");
        let step = graph
            .steps
            .iter()
            .find(|s| s.address == "claim/b keeps up")
            .expect("the claim")
            .clone();
        (graph, step)
    }

    /// The claim step of [`PLAN`], its inputs' (made-up) output digests, and a record of it
    /// keyed as the plan's key with the code `code`.
    fn claim_made_by(code: &str) -> (cairn_graph::Step, Vec<String>, Record) {
        let (_, step) = plan_and_claim();
        let digests: Vec<String> = (0..step.inputs.len())
            .map(|i| format!("{i:064x}"))
            .collect();
        let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
        let mut key = step_key(&step, &refs, None);
        key.code = code;
        let mut record = Record::new(key.hash(), "claim", "older-code", &step.address);
        record.key_json = key.to_json();
        (step, digests, record)
    }

    #[test]
    fn a_record_of_an_earlier_version_of_its_kinds_code_chains_with_that_code() {
        let (step, digests, record) = claim_made_by("claim/1");
        let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
        match older_code(&step, &refs, None, Some(record)) {
            Some(Link::OlderCode { code, .. }) => assert_eq!(code, "claim/1"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_record_whose_key_is_not_the_plans_with_its_code_does_not_chain() {
        let (step, digests, record) = claim_made_by("claim/1");
        let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
        // its recorded code changed after it was keyed (an edited record)
        let mut edited = record.clone();
        edited.key_json["code"] = "claim/2".into();
        assert!(older_code(&step, &refs, None, Some(edited)).is_none());
        // another input than the one it was keyed from
        let mut other = refs.clone();
        other[0] = "f";
        assert!(older_code(&step, &other, None, Some(record)).is_none());
        // another kind's code
        let (step, digests, record) = claim_made_by("report/1");
        let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
        assert!(older_code(&step, &refs, None, Some(record)).is_none());
        // this cairn's own code: the plain walk's business
        let (step, digests, record) = claim_made_by(&step.code.clone());
        let refs: Vec<&str> = digests.iter().map(String::as_str).collect();
        assert!(older_code(&step, &refs, None, Some(record)).is_none());
    }
}
