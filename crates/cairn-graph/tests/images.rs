//! Image chains: a base step plus one step per layer, shared between images that `extends`
//! each other, keys that follow only what each step depends on, no mirror in any key.

use std::collections::BTreeMap;

use cairn_graph::{resolve, step_key, Fingerprint, StepGraph, StepKind};
use serde_json::json;

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU".into(),
        cores: 2,
        threads: 2,
        memory_gib: 1,
        kernel: "6.1.0-test".into(),
        runtime: "host".into(),
    }
}

/// Write `files` into a temp dir, load `plan.kdl` from it, resolve.
fn load(files: &[(&str, &str)]) -> (tempfile::TempDir, StepGraph) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let plan = cairn_plan::load(&dir.path().join("plan.kdl"))
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    (dir, g)
}

/// Keys by address, computed in topological order; an image step's "output digest" is
/// blake3 of its own key (a stand-in for the manifest blob), so keys chain like in a run.
fn keys(g: &StepGraph) -> BTreeMap<String, String> {
    let fp = fingerprint();
    let mut out_digest: Vec<String> = vec![String::new(); g.steps.len()];
    let mut keys = BTreeMap::new();
    for &id in &g.order {
        let s = &g.steps[id];
        let ds: Vec<&str> = s
            .inputs
            .iter()
            .map(|i| out_digest[i.from].as_str())
            .collect();
        let k = step_key(s, &ds, Some(&fp)).hash();
        out_digest[id] = blake3::hash(k.as_bytes()).to_hex().to_string();
        keys.insert(s.address.clone(), k);
    }
    keys
}

fn images(g: &StepGraph) -> Vec<&str> {
    g.steps
        .iter()
        .filter(|s| s.kind == StepKind::IMAGE)
        .map(|s| s.address.as_str())
        .collect()
}

const RECIPE: &str = r#"
image "small" {
    debian suite="bookworm" arch="amd64"
    packages "procps" "mariadb-server" "procps"
    run "echo one > /etc/cairn-one"
    file "conf/x.cnf" "/etc/mysql/conf.d/x.cnf"
}
"#;

const PLAN: &str = r#"
study "img"
import "images.kdl"
server "s" { image "small" }
dataset "d" { sysbench tables=1 rows=10 }
workload "w" { sysbench "oltp_read_only"; threads 1 }
trials "t" { servers "s"; dataset "d"; workload "w" }
"#;

fn small(conf: &str, recipe: &str) -> (tempfile::TempDir, StepGraph) {
    load(&[
        ("plan.kdl", PLAN),
        ("images.kdl", recipe),
        ("conf/x.cnf", conf),
    ])
}

#[test]
fn an_image_is_a_chain_of_base_and_layers() {
    let (_d, g) = small("[mysqld]\n", RECIPE);
    assert_eq!(
        images(&g),
        ["image/small", "image/small/1", "image/small/2"]
    );
    let by_addr = |a: &str| g.steps.iter().find(|s| s.address == a).unwrap();
    let base = by_addr("image/small");
    assert_eq!(
        base.definition,
        json!({
            "stage": "base",
            "debian": {"suite": "bookworm", "arch": "amd64", "variant": "minbase"},
            "packages": ["mariadb-server", "procps"],
        })
    );
    assert!(base.inputs.is_empty());
    let l1 = by_addr("image/small/1");
    assert_eq!(
        l1.definition,
        json!({"stage": "layer", "layer": {"run": {"command": "echo one > /etc/cairn-one"}}})
    );
    assert_eq!(l1.inputs.len(), 1);
    assert_eq!(l1.inputs[0].mount, "parent");
    assert_eq!(l1.inputs[0].from, base.id);
    let l2 = by_addr("image/small/2");
    let digest = blake3::hash(b"[mysqld]\n").to_hex().to_string();
    assert_eq!(
        l2.definition,
        json!({"stage": "layer", "layer": {"file": {"digest": digest, "dest": "/etc/mysql/conf.d/x.cnf"}}})
    );
    assert_eq!(l2.inputs[0].from, l1.id);
    // the executor finds the file through the step, not the definition
    let f = &l2.command.as_ref().unwrap().files[0];
    assert_eq!(f.rel, "conf/x.cnf");
    assert!(f.abs.ends_with("conf/x.cnf"));
    // the dataset and the trial take the chain's last step as their image
    for kind in [StepKind::DATASET, StepKind::TRIAL] {
        let s = g.steps.iter().find(|s| s.kind == kind).unwrap();
        let img: Vec<_> = s.inputs.iter().filter(|i| i.mount == "image").collect();
        assert_eq!(img.len(), 1, "{}", s.address);
        assert_eq!(img[0].from, l2.id, "{}", s.address);
    }
}

#[test]
fn debian_defaults_are_written_into_the_definition() {
    let explicit = r#"image "small" { debian suite="bookworm" arch="amd64" variant="minbase"; packages "procps" }"#;
    let implicit = r#"image "small" { packages "procps" }"#;
    let (_d1, g1) = small("", explicit);
    let (_d2, g2) = small("", implicit);
    assert_eq!(g1.steps[0].definition, g2.steps[0].definition);
    assert_eq!(keys(&g1)["image/small"], keys(&g2)["image/small"]);
}

#[test]
fn extends_shares_the_base_and_leading_layers() {
    let recipe = r#"
image "parent" {
    packages "procps"
    run "echo one > /etc/cairn-one"
}
image "child" {
    extends "parent"
    run "echo two > /etc/cairn-two"
}
image "twin" { extends "parent" }
"#;
    // servers use every image (an imported image is built only when used)
    let plan = format!(
        "{PLAN}\nserver \"p\" {{ image \"parent\" }}\nserver \"c\" {{ image \"child\" }}\nserver \"tw\" {{ image \"twin\" }}\n"
    );
    let (_d, g) = load(&[
        ("plan.kdl", &plan),
        (
            "images.kdl",
            &format!("{recipe}\nimage \"small\" {{ packages \"procps\" }}"),
        ),
        ("conf/x.cnf", ""),
    ]);
    // parent: base + 1; child: shares both, adds its 2nd layer; twin: all shared;
    // small: same base as parent (same packages, no layers) → shared
    assert_eq!(
        images(&g),
        ["image/parent", "image/parent/1", "image/child/2"]
    );
    let child2 = g
        .steps
        .iter()
        .find(|s| s.address == "image/child/2")
        .unwrap();
    let parent1 = g
        .steps
        .iter()
        .find(|s| s.address == "image/parent/1")
        .unwrap();
    assert_eq!(child2.inputs[0].from, parent1.id);
    // the trial's server uses "small", whose chain is only the shared base
    let trial = g.steps.iter().find(|s| s.kind == StepKind::TRIAL).unwrap();
    let img = trial.inputs.iter().find(|i| i.mount == "image").unwrap();
    assert_eq!(g.steps[img.from].address, "image/parent");
}

#[test]
fn imported_images_are_built_only_when_a_server_uses_them() {
    let recipe = format!("{RECIPE}\nimage \"unused\" {{ packages \"less\" }}");
    let (_d, g) = small("[mysqld]\n", &recipe);
    assert_eq!(
        images(&g),
        ["image/small", "image/small/1", "image/small/2"],
        "`unused` is offered by the recipe file but no server uses it"
    );
    // declared in the plan itself, an image is built even without a server
    let (_d, g) = load(&[(
        "plan.kdl",
        r#"study "x"
image "own" { packages "less" }"#,
    )]);
    assert_eq!(images(&g), ["image/own"]);
}

#[test]
fn changing_the_last_layer_changes_only_its_key() {
    let (_d1, g1) = small("[mysqld]\na=1\n", RECIPE);
    let (_d2, g2) = small("[mysqld]\na=2\n", RECIPE);
    let (k1, k2) = (keys(&g1), keys(&g2));
    assert_eq!(k1["image/small"], k2["image/small"]);
    assert_eq!(k1["image/small/1"], k2["image/small/1"]);
    assert_ne!(k1["image/small/2"], k2["image/small/2"]);
    // changing the first layer changes it and (through its output) the one after
    let (_d3, g3) = small("[mysqld]\na=1\n", &RECIPE.replace("echo one", "echo uno"));
    let k3 = keys(&g3);
    assert_eq!(k1["image/small"], k3["image/small"]);
    assert_ne!(k1["image/small/1"], k3["image/small/1"]);
    assert_ne!(k1["image/small/2"], k3["image/small/2"]);
    // a package changes the base and everything on it
    let (_d4, g4) = small(
        "[mysqld]\na=1\n",
        &RECIPE.replace("\"mariadb-server\" ", ""),
    );
    let k4 = keys(&g4);
    assert_ne!(k1["image/small"], k4["image/small"]);
}

#[test]
fn the_mirror_is_in_no_key() {
    // The mirror is machine-local configuration: it is not in any definition.
    std::env::set_var("CAIRN_DEBIAN_MIRROR", "http://mirror.example/debian");
    let (_d1, g1) = small("x", RECIPE);
    let k1 = keys(&g1);
    std::env::set_var("CAIRN_DEBIAN_MIRROR", "http://other.example/debian");
    let (_d2, g2) = small("x", RECIPE);
    assert_eq!(k1, keys(&g2));
    for s in g1.steps.iter().filter(|s| s.kind == StepKind::IMAGE) {
        let text = s.definition.to_string();
        assert!(!text.contains("mirror"), "{}: {text}", s.address);
    }
}

#[test]
fn the_shared_mariadb_recipe_resolves() {
    let recipe = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/mariadb.kdl");
    let text = std::fs::read_to_string(&recipe).expect("images/mariadb.kdl");
    let plan = cairn_plan::parse_str("mariadb.kdl", &text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let base = g
        .steps
        .iter()
        .find(|s| s.address == "image/mariadb-bookworm")
        .expect("base step");
    let pkgs = base.definition["packages"].as_array().unwrap();
    for p in ["libjemalloc2", "libtcmalloc-minimal4", "mariadb-server"] {
        assert!(pkgs.iter().any(|v| v == p), "{p} in {pkgs:?}");
    }
}
