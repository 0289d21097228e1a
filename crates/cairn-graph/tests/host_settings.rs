//! Host settings as factors of a trials block (`io-scheduler`, `sysctl`, …): they change
//! only the trials' keys — never an image's or a dataset's, never the workload's definition
//! the driver sees — and a plan without them resolves as before.

use std::collections::BTreeMap;

use cairn_graph::{resolve, step_key, StepKind};

/// Every step by address: its kind, key, definition and params.
fn steps(text: &str) -> BTreeMap<String, (StepKind, String, serde_json::Value, String)> {
    let plan = cairn_plan::parse_str("host.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let fake = "00".repeat(32);
    g.steps
        .iter()
        .map(|s| {
            let inputs: Vec<&str> = s.inputs.iter().map(|_| fake.as_str()).collect();
            (
                s.address.clone(),
                (
                    s.kind,
                    step_key(s, &inputs, None).hash(),
                    s.definition.clone(),
                    serde_json::to_string(&s.params).unwrap(),
                ),
            )
        })
        .collect()
}

fn plan(host: &str) -> String {
    format!(
        r#"
image "i" {{ debian suite="bookworm"; packages "mariadb-server" }}
server "a" {{ image "i" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1 2 }}
trials "t" {{ servers "a"; dataset "sb"; workload "w"; {host} }}
analysis "tps" {{ table metric="tps" }}
"#
    )
}

#[test]
fn a_host_setting_changes_only_the_trial_keys() {
    let without = steps(&plan("passes 1"));
    let with = steps(&plan(r#"io-scheduler "none""#));
    // one value: addresses as before, the image and the dataset untouched
    assert_eq!(
        without.keys().collect::<Vec<_>>(),
        with.keys().collect::<Vec<_>>()
    );
    for (address, (kind, key, def, _)) in &without {
        let (_, key2, def2, params2) = &with[address];
        match *kind {
            StepKind::TRIAL => {
                assert_ne!(key, key2, "{address}: the setting is in the trial's key");
                assert_eq!(
                    def2["host"],
                    serde_json::json!([{"knob": "io-scheduler", "value": "none"}])
                );
                assert!(def.get("host").is_none(), "{address}: no setting, no field");
                // the driver never sees it
                assert_eq!(def["workload"], def2["workload"], "{address}");
                assert!(params2.contains(r#""io-scheduler":"none""#), "{params2}");
            }
            // the analysis reads the trials' outputs, not their definitions
            StepKind::ANALYSIS => assert_eq!(def, def2, "{address}"),
            _ => assert_eq!(key, key2, "{address}: not a trial, the same key"),
        }
    }
}

#[test]
fn host_settings_multiply_the_matrix_points_and_name_their_axes() {
    let s = steps(&plan(
        r#"io-scheduler "none" "mq-deadline"; sysctl "vm.swappiness" 10 as="swappiness""#,
    ));
    let trials: Vec<&String> = s
        .iter()
        .filter(|(_, (k, ..))| *k == StepKind::TRIAL)
        .map(|(a, _)| a)
        .collect();
    assert_eq!(
        trials,
        [
            "trial/t/a[io-scheduler=mq-deadline,threads=1]",
            "trial/t/a[io-scheduler=mq-deadline,threads=2]",
            "trial/t/a[io-scheduler=none,threads=1]",
            "trial/t/a[io-scheduler=none,threads=2]",
        ]
    );
    let (_, _, def, params) = &s["trial/t/a[io-scheduler=none,threads=2]"];
    assert_eq!(
        def["host"],
        serde_json::json!([
            {"knob": "io-scheduler", "value": "none"},
            {"knob": {"sysctl": "vm.swappiness"}, "value": "10"},
        ])
    );
    assert_eq!(def["workload"]["params"], serde_json::json!({"threads": 2}));
    assert!(params.contains(r#""swappiness":10"#), "{params}");
}

#[test]
fn an_analysis_filters_by_a_host_setting() {
    let text = plan(r#"io-scheduler "none" "mq-deadline""#).replace(
        r#"analysis "tps" { table metric="tps" }"#,
        r#"analysis "tps" { table metric="tps"; where io-scheduler="none" }"#,
    );
    let plan = cairn_plan::parse_str("host.kdl", &text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let analysis = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS)
        .unwrap();
    let read: Vec<&str> = analysis
        .inputs
        .iter()
        .map(|i| g.steps[i.from].address.as_str())
        .collect();
    assert_eq!(
        read,
        [
            "trial/t/a[io-scheduler=none,threads=1]",
            "trial/t/a[io-scheduler=none,threads=2]"
        ]
    );
    // a value none of the trials has is refused at load
    let bad = text.replace(
        r#"where io-scheduler="none""#,
        r#"where io-scheduler="cfq""#,
    );
    let e = cairn_plan::parse_str("host.kdl", &bad).unwrap_err();
    assert!(
        cairn_plan::render(&e).contains("io-scheduler = cfq"),
        "{}",
        cairn_plan::render(&e)
    );
}
