//! The trials' `cpus` factor changes only the keys it should: a block without it resolves to
//! byte-identical definitions and keys; with it, each CPU count is a trial of its own whose
//! definition carries the count (not the workload's parameters), and every count reads the
//! one dataset step of its server.

use cairn_graph::{resolve, step_key, StepGraph, StepKind};

fn graph(text: &str) -> StepGraph {
    let plan = cairn_plan::parse_str("cpus.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

/// Address → (key with fixed fake input digests, definition).
fn keys(g: &StepGraph) -> Vec<(String, String, serde_json::Value)> {
    g.steps
        .iter()
        .map(|s| {
            let fake: Vec<String> = s
                .inputs
                .iter()
                .map(|i| {
                    blake3::hash(g.steps[i.from].address.as_bytes())
                        .to_hex()
                        .to_string()
                })
                .collect();
            let inputs: Vec<&str> = fake.iter().map(String::as_str).collect();
            (
                s.address.clone(),
                step_key(s, &inputs, None).hash(),
                s.definition.clone(),
            )
        })
        .collect()
}

const HEAD: &str = r#"
image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "a" { image "i" }
dataset "sb" { sysbench tables=1 rows=100 }
workload "w" { sysbench "oltp_point_select"; threads 1 2 }
"#;

fn plan(factor: &str) -> String {
    format!(r#"{HEAD}trials "t" {{ servers "a"; dataset "sb"; workload "w"; {factor} }}"#)
}

#[test]
fn without_the_factor_nothing_changes_and_with_one_count_the_addresses_stay() {
    let plain = keys(&graph(&plan("")));
    for (address, _, def) in &plain {
        assert!(def.get("cpus").is_none(), "{address}: {def}");
    }
    // one count: the same addresses (a one-valued axis stays quiet), other trial keys
    let one = keys(&graph(&plan("cpus 2")));
    let addresses = |k: &[(String, String, serde_json::Value)]| {
        k.iter().map(|(a, _, _)| a.clone()).collect::<Vec<_>>()
    };
    assert_eq!(addresses(&plain), addresses(&one));
    for ((address, plain_key, plain_def), (_, key, def)) in plain.iter().zip(&one) {
        if address.starts_with("trial/") {
            assert_ne!(plain_key, key, "{address}: the count is in the trial's key");
            assert_eq!(def["cpus"], 2, "{address}");
            // the workload is the plan's, without the factor
            assert_eq!(def["workload"], plain_def["workload"], "{address}");
            assert_eq!(def["server"], plain_def["server"], "{address}");
        } else {
            // images and the dataset do not depend on the factor
            assert_eq!(plain_key, key, "{address}");
        }
    }
}

#[test]
fn each_count_is_a_point_and_all_read_one_dataset_step() {
    let g = graph(&plan("cpus 1 2"));
    let trials: Vec<&cairn_graph::Step> = g
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::TRIAL)
        .collect();
    let addresses: Vec<&str> = trials.iter().map(|s| s.address.as_str()).collect();
    assert_eq!(
        addresses,
        [
            "trial/t/a[cpus=1,threads=1]",
            "trial/t/a[cpus=2,threads=1]",
            "trial/t/a[cpus=1,threads=2]",
            "trial/t/a[cpus=2,threads=2]",
        ]
    );
    assert_eq!(
        g.count(StepKind::DATASET),
        1,
        "one snapshot for every count"
    );
    let dataset = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::DATASET)
        .unwrap();
    for t in &trials {
        assert!(
            t.inputs.iter().any(|i| i.from == dataset.id),
            "{}",
            t.address
        );
        let count = t.trial_def().unwrap().cpus.unwrap();
        assert_eq!(t.params["cpus"], cairn_plan::Value::Int(i64::from(count)));
        // the driver's parameters hold no `cpus`
        assert!(t.trial_def().unwrap().workload.params.get("cpus").is_none());
    }
    // each count is its own group of passes measured together
    let together: std::collections::BTreeSet<_> =
        trials.iter().map(|t| t.together.clone().unwrap()).collect();
    assert_eq!(together.len(), 4);
    // keys differ between counts at one workload point
    let k = keys(&g);
    let key = |a: &str| k.iter().find(|(x, _, _)| x == a).unwrap().1.clone();
    assert_ne!(
        key("trial/t/a[cpus=1,threads=1]"),
        key("trial/t/a[cpus=2,threads=1]")
    );
    // adding a count keeps the keys of the counts there were
    let more = keys(&graph(&plan("cpus 1 2 4")));
    for (address, k1, _) in &k {
        if let Some((_, k2, _)) = more.iter().find(|(a, _, _)| a == address) {
            assert_eq!(k1, k2, "{address}");
        }
    }
}

#[test]
fn an_analysis_may_select_and_plot_by_the_count() {
    let g = graph(&format!(
        "{}\nanalysis \"two\" {{ where cpus=2; table metric=\"tps\" }}",
        plan("cpus 1 2")
    ));
    let a = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS)
        .unwrap();
    let read: Vec<&str> = a
        .inputs
        .iter()
        .map(|i| g.steps[i.from].address.as_str())
        .collect();
    assert_eq!(
        read,
        ["trial/t/a[cpus=2,threads=1]", "trial/t/a[cpus=2,threads=2]"]
    );
}

#[test]
fn a_named_set_keys_its_cpus_not_its_name() {
    let g = graph(&plan(r#"cpus 1 cores="0,2""#));
    let k = keys(&g);
    let of = |k: &[(String, String, serde_json::Value)], a: &str| {
        k.iter()
            .find(|(x, _, _)| x == a)
            .unwrap_or_else(|| panic!("{a}"))
            .clone()
    };
    let (_, key, def) = of(&k, "trial/t/a[cpus=cores,threads=1]");
    assert_eq!(def["cpuset"], "0,2");
    assert!(def.get("cpus").is_none(), "{def}");
    // renamed, the same CPUs: the same key under another address
    let renamed = keys(&graph(&plan(r#"cpus 1 apart="0,2""#)));
    assert_eq!(of(&renamed, "trial/t/a[cpus=apart,threads=1]").1, key);
    // other CPUs: another key; the count's trials keep theirs
    let other = keys(&graph(&plan(r#"cpus 1 cores="0,3""#)));
    assert_ne!(of(&other, "trial/t/a[cpus=cores,threads=1]").1, key);
    assert_eq!(
        of(&other, "trial/t/a[cpus=1,threads=1]").1,
        of(&k, "trial/t/a[cpus=1,threads=1]").1
    );
    // still one dataset step
    assert_eq!(g.count(StepKind::DATASET), 1);
}

#[test]
fn a_tie_measures_only_the_points_it_pairs_under_the_keys_they_had_crossed() {
    let text = |tie: &str| {
        format!(
            r#"{}trials "t" {{ servers "a"; dataset "sb"; workload "w"; cpus 1 2; {tie} }}"#,
            HEAD.replace("threads 1 2", "threads 2 4")
        )
    };
    let crossed = keys(&graph(&text("")));
    let tied = keys(&graph(&text(r#"tie "threads" to="cpus" times=2"#)));
    let trials = |k: &[(String, String, serde_json::Value)]| -> Vec<(String, String)> {
        k.iter()
            .filter(|(a, _, _)| a.starts_with("trial/"))
            .map(|(a, key, _)| (a.clone(), key.clone()))
            .collect()
    };
    let (crossed, tied) = (trials(&crossed), trials(&tied));
    assert_eq!(crossed.len(), 4);
    // threads = 2 × cpus: (2, 1) and (4, 2), each under the key it has in the full cross
    let addresses: Vec<&str> = tied.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        addresses,
        ["trial/t/a[cpus=1,threads=2]", "trial/t/a[cpus=2,threads=4]"]
    );
    for t in &tied {
        assert!(crossed.contains(t), "{t:?} not in {crossed:?}");
    }
}
