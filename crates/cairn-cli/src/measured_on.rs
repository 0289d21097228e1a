//! Which machine's measurements a command that only reads them (`report`, `bundle`,
//! `compare`) reads: this machine's; the class named with `--measured-on` (its short id, as
//! `cairn machine` prints it, or its JSON); or, when this machine has not measured the
//! study, the one other machine class whose complete results the store holds (a clone of a
//! published study, measured elsewhere, renders and bundles as published).
//!
//! A study too long for one sitting may be measured in parts, on whatever machine each
//! sitting had: when no one class holds all of it, each trials block at each point is read
//! from the class that measured it whole ([`Reading::elsewhere`]), and a note says which.
//! A block is compared within itself, so no comparison crosses machines; one that would is
//! flagged as mixing them, as ever.
//!
//! Measurement keys hold the machine's class, so on a machine of another class the same
//! plan asks for other keys: reading commands must be told (or find) whose results to read.
//! Nothing is ever measured here; this only picks the keys to read.

use std::collections::{BTreeMap, HashMap};

use cairn_graph::fingerprint::{class_id, CLASS_ID_LEN};
use cairn_graph::{Fingerprint, StepGraph, StepId};
use cairn_store::Store;

use crate::bundle::chain::{walk, Link};
use crate::context::{self, Exit, Machine};
use crate::{BAD_INPUT, FAILED};

/// Each step's link when every measurement is read as made on `fp`. Records, not the
/// engine's state: an image not built on this machine yet still has its record.
fn links_on(graph: &StepGraph, store: &Store, fp: &Fingerprint) -> Vec<Link> {
    walk(graph, store, &|_| Some(fp.clone()))
}

/// Whether every measurement of `graph` has a record among `links` (one class's walk) that
/// chains back to the plan (a pass the adaptive rule did not need counts as had).
fn complete(graph: &StepGraph, links: &[Link]) -> bool {
    graph
        .steps
        .iter()
        .all(|s| !s.measure || !matches!(links[s.id], Link::Missing { .. }))
}

/// The class as one line, as `compare` prints a side's machine.
fn describe(fp: &Fingerprint) -> String {
    cairn_report::machine::machine_line(&serde_json::to_value(fp).expect("serialises"))
}

/// The class as a person picks it from a list: its id, then what it is.
pub fn class_line(fp: &Fingerprint) -> String {
    format!("{}  {}", class_id(fp), describe(fp))
}

/// The fewest hex digits of an id a command accepts (a prefix as short as `git`'s).
const MIN_ID_PREFIX: usize = 4;

/// The class a flag names: `text` is a class id (or a prefix of one, at least
/// [`MIN_ID_PREFIX`] hex) among `known`, or a class's JSON (as `cairn machine --json`
/// prints it under "class"). A bad value is bad input, named by `flag`.
pub fn parse_class(flag: &str, text: &str, known: &[Fingerprint]) -> Result<Fingerprint, Exit> {
    let text = text.trim();
    if text.starts_with('{') {
        return serde_json::from_str(text).map_err(|e| {
            eprintln!(
                "error: {flag}: {e}: expected a machine class's id (as `cairn machine` prints it) or its JSON (as `cairn machine --json` prints it under \"class\")"
            );
            Exit(BAD_INPUT)
        });
    }
    let is_id = (MIN_ID_PREFIX..=CLASS_ID_LEN).contains(&text.len())
        && text.chars().all(|c| c.is_ascii_hexdigit());
    if !is_id {
        eprintln!(
            "error: {flag}: `{text}` is not a machine class: give its id ({CLASS_ID_LEN} hex, as `cairn machine` prints it) or its JSON"
        );
        list_classes(known);
        return Err(Exit(BAD_INPUT));
    }
    let text = text.to_ascii_lowercase();
    let matching: Vec<&Fingerprint> = known
        .iter()
        .filter(|fp| class_id(fp).starts_with(&text))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            eprintln!("error: {flag}: no machine class here has the id `{text}`");
            list_classes(known);
            Err(Exit(BAD_INPUT))
        }
        several => {
            eprintln!(
                "error: {flag}: `{text}` is the start of {} class ids; give more of it:",
                several.len()
            );
            for fp in several {
                eprintln!("  {}", class_line(fp));
            }
            Err(Exit(BAD_INPUT))
        }
    }
}

/// On stderr: the classes a flag could have named.
fn list_classes(known: &[Fingerprint]) {
    if known.is_empty() {
        eprintln!("  (no machine class is known here: the store holds no measurement)");
        return;
    }
    eprintln!("  the classes known here:");
    for fp in known {
        eprintln!("  {}", class_line(fp));
    }
}

/// The classes a `--measured-on` can name here: this machine's (in containers and on the
/// host), then every class the store holds measurements of.
fn known_classes(machine: &Machine, store: &Store) -> Result<Vec<Fingerprint>, Exit> {
    let mut out = vec![machine.fingerprint_for(true)];
    for fp in std::iter::once(machine.fingerprint_for(false)).chain(store_classes(store, None)?) {
        if !out.contains(&fp) {
            out.push(fp);
        }
    }
    Ok(out)
}

/// `--measured-on-a` / `--measured-on-b` of `compare`: the class whose trials to read from
/// one side's store (`None`: every class). A class the side holds no trial of `graph` of
/// (by definition key, as `compare` matches them) is bad input — a comparison of nothing
/// would only say "cannot compare" in every cell: the error lists the classes it does hold
/// the plan's trials of.
pub fn side_class(
    flag: &str,
    text: Option<&str>,
    store: &Store,
    side: &str,
    graph: &StepGraph,
) -> Result<Option<serde_json::Value>, Exit> {
    let Some(text) = text else { return Ok(None) };
    let fp = parse_class(flag, text, &store_classes(store, None)?)?;
    let held = plan_trial_classes(store, graph)?;
    if !held.contains(&fp) {
        eprintln!(
            "error: {flag}: {side} holds no trial of {} measured on {}",
            graph.study,
            class_line(&fp)
        );
        if held.is_empty() {
            eprintln!("  ({side} holds no trial of {} at all)", graph.study);
        } else {
            eprintln!("  the classes {side} holds its trials of:");
            for c in &held {
                eprintln!("  {}", class_line(c));
            }
        }
        return Err(Exit(BAD_INPUT));
    }
    Ok(Some(serde_json::to_value(&fp).expect("serialises")))
}

/// The classes of the store's records of `graph`'s trials (their definition keys), in a
/// stable order.
fn plan_trial_classes(store: &Store, graph: &StepGraph) -> Result<Vec<Fingerprint>, Exit> {
    let definitions: std::collections::HashSet<&str> = graph
        .steps
        .iter()
        .filter(|s| s.kind == cairn_graph::StepKind::TRIAL)
        .map(|s| s.definition_key.as_str())
        .collect();
    classes_of(store, |rec| {
        rec.kind == "trial" && definitions.contains(rec.definition_key.as_str())
    })
}

/// Whose measurements a reading command reads: one machine class for the whole study, or a
/// class per block for a study measured in parts.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The class the study is read from: this machine's unless another holds all of it.
    pub fingerprint: Fingerprint,
    /// The measured steps read from another class than `fingerprint`.
    pub elsewhere: HashMap<StepId, Fingerprint>,
}

impl Reading {
    fn one(fingerprint: Fingerprint) -> Reading {
        Reading {
            fingerprint,
            elsewhere: HashMap::new(),
        }
    }

    /// The class step `id`'s measurement is read from.
    pub fn class_of(&self, id: StepId) -> &Fingerprint {
        self.elsewhere.get(&id).unwrap_or(&self.fingerprint)
    }
}

/// Each trials block at each point (its `together` group) of a study measured in parts,
/// read from the first of `walks` (each a class and its links, this machine's first) under
/// which every pass chains to the plan and some pass was measured (a pass a sequential
/// design did not need counts as had). `None` unless every block is found so; the map holds
/// the steps not read from the first class.
fn assembled(
    graph: &StepGraph,
    walks: &[(Fingerprint, Vec<Link>)],
) -> Option<HashMap<StepId, Fingerprint>> {
    let mut blocks: BTreeMap<&str, Vec<StepId>> = BTreeMap::new();
    for s in graph.steps.iter().filter(|s| s.measure) {
        let block = s.together.as_deref().unwrap_or(s.address.as_str());
        blocks.entry(block).or_default().push(s.id);
    }
    let mut out = HashMap::new();
    for ids in blocks.values() {
        let whole = |links: &[Link]| {
            ids.iter()
                .all(|&id| !matches!(links[id], Link::Missing { .. }))
                && ids.iter().any(|&id| matches!(links[id], Link::Record(_)))
        };
        let at = walks.iter().position(|(_, links)| whole(links))?;
        if at > 0 {
            out.extend(ids.iter().map(|&id| (id, walks[at].0.clone())));
        }
    }
    Some(out)
}

/// The class each measured step of a published study (a bundle's store) is read from, as
/// its report read it where it was published: every step from the one class that holds the
/// whole study, or each block from the class that measured it whole (a study measured in
/// parts). Silent, and without this machine's preference: a bundle's classes are its
/// publisher's. `None` when no class or assembly holds every block.
pub fn published_classes(
    graph: &StepGraph,
    store: &Store,
) -> Option<HashMap<StepId, serde_json::Value>> {
    let walks: Vec<(Fingerprint, Vec<Link>)> = store_classes(store, Some(&graph.study))
        .ok()?
        .into_iter()
        .map(|fp| {
            let links = links_on(graph, store, &fp);
            (fp, links)
        })
        .collect();
    let (first, elsewhere) = match walks.iter().position(|(_, links)| complete(graph, links)) {
        Some(whole) => (walks[whole].0.clone(), HashMap::new()),
        None => (walks.first()?.0.clone(), assembled(graph, &walks)?),
    };
    let value = |fp: &Fingerprint| serde_json::to_value(fp).expect("serialises");
    Some(
        graph
            .steps
            .iter()
            .filter(|s| s.measure)
            .map(|s| (s.id, value(elsewhere.get(&s.id).unwrap_or(&first))))
            .collect(),
    )
}

/// The note of a study read in parts: which blocks each other class measured.
fn parts_note(graph: &StepGraph, here: &Fingerprint, elsewhere: &HashMap<StepId, Fingerprint>) {
    let mut by_class: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for (&id, fp) in elsewhere {
        // `trial/flags/o2#1` → `flags`
        let address = graph.steps[id].address.as_str();
        let block = address.split('/').nth(1).unwrap_or(address);
        by_class.entry(class_line(fp)).or_default().insert(block);
    }
    eprintln!(
        "note: {} was measured in parts, on {} machine classes; each block is read from the machine that measured it:",
        graph.study,
        by_class.len() + 1
    );
    for (class, blocks) in &by_class {
        let blocks: Vec<&str> = blocks.iter().copied().collect();
        eprintln!("  {}: {class}", blocks.join(", "));
    }
    eprintln!("  the rest: {} (this machine)", class_line(here));
}

/// What to read (see the module's doc). `explicit` is the `--measured-on` JSON, as `cairn
/// machine --json` prints a class.
pub fn reading_classes(
    machine: &Machine,
    graph: &StepGraph,
    store: &Store,
    explicit: Option<&str>,
) -> Result<Reading, Exit> {
    if let Some(text) = explicit {
        let fp = parse_class("--measured-on", text, &known_classes(machine, store)?)?;
        return Ok(Reading::one(fp));
    }
    let here = machine.fingerprint(graph);
    let here_links = links_on(graph, store, &here);
    if complete(graph, &here_links) {
        return Ok(Reading::one(here));
    }
    // each class walked once: for a class holding the whole study, and for the blocks
    let mut walks = vec![(here.clone(), here_links)];
    for fp in store_classes(store, Some(&graph.study))? {
        if fp != here {
            let links = links_on(graph, store, &fp);
            walks.push((fp, links));
        }
    }
    let whole: Vec<&Fingerprint> = walks[1..]
        .iter()
        .filter(|(_, links)| complete(graph, links))
        .map(|(fp, _)| fp)
        .collect();
    match whole.as_slice() {
        [] => {
            match assembled(graph, &walks) {
                Some(elsewhere) if !elsewhere.is_empty() => {
                    parts_note(graph, &here, &elsewhere);
                    Ok(Reading {
                        fingerprint: here,
                        elsewhere,
                    })
                }
                // nothing found elsewhere: what is missing is missing here
                _ => Ok(Reading::one(here)),
            }
        }
        [one] => {
            eprintln!(
                "note: this machine ({}) has not measured {}; reading the results measured on {}",
                class_line(&here),
                graph.study,
                class_line(one)
            );
            Ok(Reading::one((*one).clone()))
        }
        several => {
            eprintln!(
                "error: this machine has not measured {}, and the store holds complete results of {} machine classes; name one with --measured-on:",
                graph.study,
                several.len()
            );
            for fp in several {
                eprintln!("  --measured-on {}   ({})", class_id(fp), describe(fp));
            }
            Err(Exit(BAD_INPUT))
        }
    }
}

/// The distinct machine classes of the store's measurements (of `study` only, if given), in
/// a stable order.
pub fn store_classes(store: &Store, study: Option<&str>) -> Result<Vec<Fingerprint>, Exit> {
    classes_of(store, |rec| study.is_none_or(|s| rec.study == s))
}

/// The distinct machine classes of the store's records that `keep` keeps, in a stable
/// order. A damaged record is verify's to report; it names no class here.
fn classes_of(
    store: &Store,
    keep: impl Fn(&cairn_store::Record) -> bool,
) -> Result<Vec<Fingerprint>, Exit> {
    let keys = store.record_keys().map_err(context::fail(FAILED))?;
    let mut out: Vec<Fingerprint> = Vec::new();
    for rec in store.get_records(&keys).into_iter().flatten().flatten() {
        if !keep(&rec) {
            continue;
        }
        let Some(fp) = rec
            .fingerprint
            .and_then(|v| serde_json::from_value::<Fingerprint>(v).ok())
        else {
            continue;
        };
        if !out.contains(&fp) {
            out.push(fp);
        }
    }
    out.sort_by_key(describe);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_reads_as_one_line() {
        let fp = Fingerprint {
            cpu_model: "AMD EPYC".into(),
            cores: 2,
            threads: 2,
            memory_gib: 24,
            kernel: "6.18.44".into(),
            runtime: "docker 20.10".into(),
        };
        assert_eq!(
            describe(&fp),
            "AMD EPYC, 2 cores / 2 threads, 24.0 GiB, kernel 6.18.44, docker 20.10"
        );
    }

    fn class(threads: u32) -> Fingerprint {
        Fingerprint {
            cpu_model: "AMD EPYC".into(),
            cores: 2,
            threads,
            memory_gib: 24,
            kernel: "6.18.44".into(),
            runtime: "docker 20.10".into(),
        }
    }

    #[test]
    fn a_class_is_named_by_its_id_a_prefix_of_it_or_its_json() {
        let known = [class(2), class(4)];
        let id = class_id(&known[1]);
        assert_eq!(parse_class("--measured-on", &id, &known).unwrap(), known[1]);
        assert_eq!(
            parse_class("--measured-on", &id[..8].to_uppercase(), &known).unwrap(),
            known[1]
        );
        let json = serde_json::to_string(&known[0]).unwrap();
        assert_eq!(parse_class("--measured-on", &json, &[]).unwrap(), known[0]);
    }

    #[test]
    fn a_bad_class_is_bad_input() {
        let known = [class(2)];
        for bad in ["garbage", "{\"cpu\": 1}", "ab", "0123456789abcdef"] {
            let Err(Exit(code)) = parse_class("--measured-on-a", bad, &known) else {
                panic!("{bad} accepted");
            };
            assert_eq!(code, BAD_INPUT, "{bad}");
        }
        // a well-formed id of no class known here
        let unknown = if class_id(&known[0]).starts_with("0000") {
            "ffff"
        } else {
            "0000"
        };
        assert!(parse_class("--measured-on", unknown, &known).is_err());
    }
}
