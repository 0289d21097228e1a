//! A trials block's server lifecycle (`settle`, `runs`) changes the keys of that block's
//! trials and nothing else: a plan without it (or with `runs 1`, `settle "0s"`) keeps every
//! key, and the analyses read the same trial steps (runs live inside one trial).

use cairn_graph::{resolve, step_key, StepKind};

fn keys(text: &str) -> Vec<(String, String, serde_json::Value)> {
    let plan = cairn_plan::parse_str("life.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let fake = "00".repeat(32);
    g.steps
        .iter()
        .map(|s| {
            let inputs: Vec<&str> = s.inputs.iter().map(|_| fake.as_str()).collect();
            (
                s.address.clone(),
                step_key(s, &inputs, None).hash(),
                s.definition.clone(),
            )
        })
        .collect()
}

fn plan(warm: &str) -> String {
    format!(
        r#"
image "i" {{ debian suite="bookworm"; packages "mariadb-server" }}
server "a" {{ image "i" }}
server "b" {{ image "i"; option max_connections=200 }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "w" {{ sysbench "oltp_point_select"; threads 1 2 }}
trials "cold" {{ servers "a" "b"; dataset "sb"; workload "w"; passes 2 }}
trials "warm" {{ servers "a" "b"; dataset "sb"; workload "w"; passes 2{warm} }}
analysis "t" {{ trials "cold"; table metric="tps" columns="threads" }}
"#
    )
}

#[test]
fn a_block_without_a_lifecycle_keeps_its_keys() {
    let base = keys(&plan(""));
    for same in ["; runs 1", "; settle \"0s\"", "; runs 1; settle \"0s\""] {
        assert_eq!(keys(&plan(same)), base, "{same}");
    }
    for (_, _, def) in &base {
        assert!(def.get("lifecycle").is_none());
    }
}

#[test]
fn settle_and_runs_change_only_their_blocks_trials() {
    let base = keys(&plan(""));
    for (warm, want) in [
        ("; settle \"60s\"", serde_json::json!({"settle_s": 60.0})),
        ("; runs 3", serde_json::json!({"runs": 3})),
        (
            "; settle \"1m30s\"; runs 2",
            serde_json::json!({"settle_s": 90.0, "runs": 2}),
        ),
    ] {
        let k = keys(&plan(warm));
        // one trial step per pass still: runs live inside the trial
        assert_eq!(k.len(), base.len(), "{warm}");
        for ((addr, key, def), (base_addr, base_key, _)) in k.iter().zip(&base) {
            assert_eq!(addr, base_addr);
            if addr.starts_with("trial/warm/") {
                assert_ne!(key, base_key, "{warm}: {addr}");
                assert_eq!(def["lifecycle"], want, "{warm}: {addr}");
            } else {
                assert_eq!(key, base_key, "{warm}: {addr} must keep its key");
            }
        }
    }
}

#[test]
fn an_analysis_of_one_run_reads_every_trial_of_its_block() {
    let text = plan("; runs 3").replace(
        r#"analysis "t" { trials "cold"; table metric="tps" columns="threads" }"#,
        r#"analysis "t" { trials "warm"; where run=1; exclude run=2 threads=2; table metric="tps" columns="threads" }"#,
    );
    let plan = cairn_plan::parse_str("life.kdl", &text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = resolve(&plan).expect("resolves");
    let analysis = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS)
        .unwrap();
    // every run is inside its trial: `where run=…` and `exclude run=…` drop no trial step
    assert_eq!(analysis.inputs.len(), 2 * 2 * 2);
    assert_eq!(analysis.definition["filter"], serde_json::json!({"run": 1}));
}

#[test]
fn run_is_a_parameter_only_of_blocks_with_runs() {
    let text = plan("").replace(
        r#"analysis "t" { trials "cold"; table"#,
        r#"analysis "t" { trials "cold"; where run=1; table"#,
    );
    let err = cairn_plan::parse_str("life.kdl", &text).expect_err("cold runs once per start");
    assert!(cairn_plan::render(&err).contains("no parameter `run`"));
    let text = plan("; runs 2").replace(
        r#"analysis "t" { trials "cold"; table"#,
        r#"analysis "t" { trials "warm"; where run=3; table"#,
    );
    let err = cairn_plan::parse_str("life.kdl", &text).expect_err("two runs");
    assert!(
        cairn_plan::render(&err).contains("run = 1, 2"),
        "{}",
        cairn_plan::render(&err)
    );
}
