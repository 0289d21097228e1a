//! Plan parameters and keys: a parameter changes exactly the keys of the steps its value
//! reaches, and its default gives the same keys as the same value given with `--set`.

use std::collections::BTreeMap;

use cairn_graph::{resolve, step_key, Fingerprint, StepGraph};

const PLAN: &str = r#"
param "scale" default="tiny" { values "tiny" "published" }
param "threads" default="1 4"
image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "s" { image "i" }
dataset "d" { sysbench tables=1 rows=1000 }
workload "w" { sysbench "oltp_read_only"; threads "${threads}"; duration "8s" }
trials "t" { servers "s"; dataset "d"; workload "w"; passes 2 }
step "note" { run "echo ${scale}" }
step "other" { run "true" }
"#;

fn graph(pairs: &[(&str, &str)]) -> StepGraph {
    let settings: cairn_plan::Settings = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let plan = cairn_plan::parse_str_with("p.kdl", PLAN, &settings)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

/// Every step's key by address; an input's digest is derived from its address.
fn keys(g: &StepGraph) -> BTreeMap<String, String> {
    let fp = Fingerprint {
        cpu_model: "Test CPU".into(),
        cores: 2,
        threads: 2,
        memory_gib: 24,
        kernel: "6.1.0-test".into(),
        runtime: "host".into(),
    };
    let fake: Vec<String> = g
        .steps
        .iter()
        .map(|s| blake3::hash(s.address.as_bytes()).to_hex().to_string())
        .collect();
    g.steps
        .iter()
        .map(|s| {
            let ds: Vec<&str> = s.inputs.iter().map(|i| fake[i.from].as_str()).collect();
            (s.address.clone(), step_key(s, &ds, Some(&fp)).hash())
        })
        .collect()
}

#[test]
fn a_default_and_the_same_value_given_explicitly_give_the_same_keys() {
    let defaults = keys(&graph(&[]));
    let explicit = keys(&graph(&[("scale", "tiny"), ("threads", "1 4")]));
    assert_eq!(defaults, explicit);
}

#[test]
fn a_parameter_changes_only_the_keys_its_value_reaches() {
    let tiny = keys(&graph(&[]));
    let published = keys(&graph(&[("scale", "published")]));
    let changed: Vec<&String> = tiny.keys().filter(|a| tiny[*a] != published[*a]).collect();
    assert_eq!(changed, vec!["note"]);

    // more thread counts: more trials; the ones at 1 and 4 threads keep their keys
    let wide = keys(&graph(&[("threads", "1 2 4")]));
    assert!(wide.len() > tiny.len());
    for (address, key) in &tiny {
        assert_eq!(wide.get(address), Some(key), "{address}");
    }
}
