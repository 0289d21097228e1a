//! Catalogue of malformed plans: each file under tests/plans/bad/ must fail, and its rendered
//! diagnostics are pinned by an insta snapshot.

use std::path::Path;

/// The one test of this binary: it changes the working directory to tests/plans/ so that
/// diagnostics name files relative to it (`bad/NN_….kdl`) whatever the checkout's location.
/// Keep other tests out of this file, they would race with the change of directory.
#[test]
fn every_bad_plan_is_rejected_with_pinned_diagnostics() {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/plans");
    std::env::set_current_dir(&plans).expect("tests/plans exists");
    let dir = Path::new("bad");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("tests/plans/bad exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".kdl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 70,
        "the catalogue has {} entries",
        files.len()
    );
    for file in files {
        let path = dir.join(&file);
        let err = match cairn_plan::load(&path) {
            Ok(_) => panic!("{file} should be rejected"),
            Err(e) => e,
        };
        assert!(
            matches!(err, cairn_plan::PlanError::Invalid { .. }),
            "{file}: {err:?}"
        );
        // the registered drivers stand in as a placeholder: a driver added to its registry
        // must not change a pinned diagnostic (the list has one source)
        let err = err.with_placeholder(
            &cairn_plan::one_of(&cairn_defs::driver_names()),
            "<the registered drivers>",
        );
        let rendered = cairn_plan::render(&err);
        let name = file.trim_end_matches(".kdl");
        insta::assert_snapshot!(name, rendered);
    }
}
