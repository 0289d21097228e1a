//! Catalogue of plans that parse and resolve but that `cairn check` must refuse: what a run
//! would refuse before it measures (names no registry holds, server options my.cnf cannot hold, dataset and driver
//! parameters, bounds on threads). Each file under tests/plans/bad-check/ goes through what
//! `cairn check` does (load, resolve, the kinds' checks) and its rendered diagnostic is pinned
//! by an insta snapshot.

use std::path::Path;

/// The one test of this binary: it changes the working directory to tests/plans/ so that
/// diagnostics name files relative to it (`bad-check/NN_….kdl`) whatever the checkout's
/// location. Keep other tests out of this file, they would race with the change of directory.
#[test]
fn every_plan_check_must_refuse_is_refused_with_pinned_diagnostics() {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/plans");
    std::env::set_current_dir(&plans).expect("tests/plans exists");
    let dir = Path::new("bad-check");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("tests/plans/bad-check exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".kdl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "the catalogue has {} entries",
        files.len()
    );
    for file in files {
        let path = dir.join(&file);
        // the plan itself is fine: only the kinds' checks can refuse it
        let plan = cairn_plan::load(&path)
            .unwrap_or_else(|e| panic!("{file} must parse: {}", cairn_plan::render(&e)));
        // what `cairn check` refuses first: names no registry holds, then the kinds' checks
        let checked = cairn_cli::preflight::names(&plan).and_then(|()| {
            let graph = cairn_graph::resolve_with_kinds(&plan, &cairn_kinds::plan_step_kinds())
                .unwrap_or_else(|e| panic!("{file} must resolve: {e}"));
            cairn_cli::preflight::diagnose(&plan, &graph)
        });
        let err = match checked {
            Ok(()) => panic!("{file} should be refused by `cairn check`"),
            Err(e) => e,
        };
        // the registries' names stand in as placeholders: a system or runtime added to its
        // registry must not change a pinned diagnostic (the lists have one source)
        // so are the CPUs this machine gives cairn (replaced before the text is wrapped)
        let err = err.with_placeholder(
            &cairn_exec::cpu_sets::Usable::here().describe(),
            "<this machine's CPUs>",
        );
        let rendered = cairn_plan::render(&err)
            .replace(
                &cairn_plan::allowed_values(&cairn_exec::system::names()),
                "<the registered systems>",
            )
            .replace(
                &cairn_plan::allowed_values(&cairn_exec::runtime::Runtimes::registered().names()),
                "<the registered runtimes>",
            )
            .replace(
                &cairn_plan::allowed_values(
                    &cairn_kinds::plan_step_kinds()
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>(),
                ),
                "<the registered plan-step kinds>",
            )
            // the architectures this host runs are its own
            .replace(
                &format!(
                    "this host runs {};",
                    cairn_exec::docker::image::host_arch::runnable_architectures()
                        .unwrap_or_default()
                        .join(", ")
                ),
                "this host runs <this host's architectures>;",
            );
        // the disk holding the data and the schedulers it offers are this host's
        let rendered = match data_disk_offers() {
            Some(offers) => {
                rendered.replace(&offers, "(<the data's disk>) offers: <its schedulers>")
            }
            None => rendered,
        };
        let name = file.trim_end_matches(".kdl");
        insta::assert_snapshot!(name, rendered);
    }
}

/// How a refused I/O scheduler names this host's disk holding the process executor's data
/// (the temp directory) and the schedulers it offers: `(vda, under /tmp) offers: none, …`.
fn data_disk_offers() -> Option<String> {
    let tmp = std::env::temp_dir();
    let (disk, file) = cairn_exec::host_settings::disk_of(&tmp).ok()?;
    let text = std::fs::read_to_string(file).ok()?;
    let offered: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_start_matches('[').trim_end_matches(']'))
        .collect();
    Some(format!(
        "({disk}, under {}) offers: {}",
        tmp.display(),
        offered.join(", ")
    ))
}
