//! The shipped release plan (`plans/release.kdl`): changing only the newer image changes
//! the keys of its steps and of what reads them, never of the older image's steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairn_graph::{resolve, step_key, Fingerprint, StepGraph};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU".into(),
        cores: 2,
        threads: 2,
        memory_gib: 24,
        kernel: "6.1.0".into(),
        runtime: "docker 20.10".into(),
    }
}

/// Every step's key, each step's output digest standing in as its own key (a build with
/// the same definition and inputs makes the same output).
fn keys(g: &StepGraph) -> BTreeMap<String, String> {
    let fp = fingerprint();
    let mut out: Vec<Option<String>> = vec![None; g.steps.len()];
    for &id in &g.order {
        let s = &g.steps[id];
        let ds: Vec<String> = s
            .inputs
            .iter()
            .map(|i| out[i.from].clone().expect("input keyed first"))
            .collect();
        let ds: Vec<&str> = ds.iter().map(String::as_str).collect();
        out[id] = Some(step_key(s, &ds, Some(&fp)).hash());
    }
    g.steps
        .iter()
        .map(|s| (s.address.clone(), out[s.id].clone().unwrap()))
        .collect()
}

fn graph_of(plan: &Path) -> StepGraph {
    resolve(&cairn_plan::load(plan).expect("plan loads")).expect("resolves")
}

#[test]
fn changing_the_newer_image_keeps_every_step_of_the_older() {
    let shipped = graph_of(&repo().join("plans/release.kdl"));
    // the same plan with one more package in the trixie image only
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plans")).unwrap();
    std::fs::create_dir_all(dir.path().join("images")).unwrap();
    std::fs::copy(
        repo().join("plans/release.kdl"),
        dir.path().join("plans/release.kdl"),
    )
    .unwrap();
    let recipe = std::fs::read_to_string(repo().join("images/mariadb.kdl")).unwrap();
    let changed_recipe = recipe.replace(
        "\"libtcmalloc-minimal4t64\"\n",
        "\"libtcmalloc-minimal4t64\" \"less\"\n",
    );
    assert_ne!(recipe, changed_recipe, "the trixie image is in the recipe");
    std::fs::write(dir.path().join("images/mariadb.kdl"), changed_recipe).unwrap();
    let changed = graph_of(&dir.path().join("plans/release.kdl"));

    let (a, b) = (keys(&shipped), keys(&changed));
    assert_eq!(a.len(), b.len());
    let mut older = 0;
    for (address, key) in &a {
        // the analysis, claim and report read both sides, so they change too
        let is_older = address.contains("bookworm") || address.contains("mariadb-10.11");
        if is_older {
            older += 1;
            assert_eq!(&b[address], key, "{address} must not change");
        } else {
            assert_ne!(&b[address], key, "{address} depends on the newer image");
        }
    }
    assert_eq!(
        older,
        1 + 1 + 12,
        "the bookworm image, its dataset and 12 trials"
    );
}
