//! Which machine's measurements a command that only reads them (`report`, `bundle`) reads:
//! this machine's; the class named with `--measured-on`; or, when this machine has not
//! measured the study, the one other machine class whose complete results the store holds
//! (a clone of a published study, measured elsewhere, renders and bundles as published).
//!
//! Measurement keys hold the machine's class, so on a machine of another class the same
//! plan asks for other keys: reading commands must be told (or find) whose results to read.
//! Nothing is ever measured here; this only picks the keys to read.

use cairn_graph::{Fingerprint, StepGraph};
use cairn_store::Store;

use crate::bundle::chain::Link;
use crate::context::{self, Exit, Machine};
use crate::{BAD_INPUT, FAILED};

/// Whether every measurement of `graph` has a record measured on `fp` that chains back to
/// the plan (a pass the adaptive rule did not need counts as had). Records, not the engine's
/// state: an image not built on this machine yet still has its record.
fn complete_on(graph: &StepGraph, store: &Store, fp: &Fingerprint) -> bool {
    let links = crate::bundle::chain::walk(graph, store, &|_| Some(fp.clone()));
    graph
        .steps
        .iter()
        .all(|s| !s.measure || !matches!(links[s.id], Link::Missing { .. }))
}

/// The class as one line, as `compare` prints a side's machine.
fn describe(fp: &Fingerprint) -> String {
    cairn_report::machine::machine_line(&serde_json::to_value(fp).expect("serialises"))
}

/// The fingerprint whose measurements to read (see the module's doc). `explicit` is the
/// `--measured-on` JSON, as `cairn machine --json` prints a class.
pub fn reading_fingerprint(
    machine: &Machine,
    graph: &StepGraph,
    store: &Store,
    explicit: Option<&str>,
) -> Result<Fingerprint, Exit> {
    if let Some(text) = explicit {
        return serde_json::from_str(text).map_err(|e| {
            eprintln!(
                "error: --measured-on: {e}: expected a machine class as JSON, as `cairn machine --json` prints it under \"class\""
            );
            Exit(BAD_INPUT)
        });
    }
    let here = machine.fingerprint(graph);
    if complete_on(graph, store, &here) {
        return Ok(here);
    }
    let complete: Vec<Fingerprint> = recorded_classes(graph, store)?
        .into_iter()
        .filter(|fp| fp != &here)
        .filter(|fp| complete_on(graph, store, fp))
        .collect();
    match complete.as_slice() {
        [] => Ok(here),
        [one] => {
            eprintln!(
                "note: this machine ({}) has not measured {}; reading the results measured on {}",
                describe(&here),
                graph.study,
                describe(one)
            );
            Ok(one.clone())
        }
        several => {
            eprintln!(
                "error: this machine has not measured {}, and the store holds complete results of {} machine classes; name one with --measured-on:",
                graph.study,
                several.len()
            );
            for fp in several {
                eprintln!(
                    "  --measured-on '{}'   ({})",
                    serde_json::to_string(fp).expect("serialises"),
                    describe(fp)
                );
            }
            Err(Exit(BAD_INPUT))
        }
    }
}

/// The distinct machine classes of the study's recorded measurements, in a stable order.
fn recorded_classes(graph: &StepGraph, store: &Store) -> Result<Vec<Fingerprint>, Exit> {
    let mut out: Vec<Fingerprint> = Vec::new();
    for key in store.record_keys().map_err(context::fail(FAILED))? {
        // a damaged record is verify's to report; it cannot make a study complete
        let Ok(Some(rec)) = store.get_record(&key) else {
            continue;
        };
        if rec.study != graph.study {
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
}
