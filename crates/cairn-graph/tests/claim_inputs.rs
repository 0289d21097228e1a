//! A claim reads only the trials of the two cells its `expect` names: those are its inputs,
//! so re-measuring another server (a new image of it) re-runs nothing of it, and `--only`
//! the claim needs only its own servers' measurements.

use cairn_graph::{resolve, StepGraph, StepKind};

const PLAN: &str = r#"
image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "a" { image "i" }
server "b" { image "i"; option max_connections=200 }
server "c" { image "i"; option max_connections=300 }
workload "w" { sysbench "oltp_point_select"; threads 1 4 }
workload "v" { sysbench "oltp_read_only"; threads 4 }
trials "t" { servers "a" "b" "c"; workload "w"; passes 2 }
trials "u" { servers "a" "b"; workload "v"; passes 2 }
claim "b beats a" { trials "t"; metric "tps"; where threads=4; expect "b > a" }
claim "c scales" { trials "t"; metric "tps"; expect "c[threads=4] > c[threads=1]" }
claim "a across blocks" { metric "tps"; where threads=4; expect "u:a >= t:a" within="5%" }
"#;

fn graph() -> StepGraph {
    let plan = cairn_plan::parse_str("claims.kdl", PLAN)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

/// The addresses of the trials claim `name` reads, without their passes, once each.
fn inputs(g: &StepGraph, name: &str) -> Vec<String> {
    let c = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::CLAIM && s.name == name)
        .unwrap();
    let mut out: Vec<String> = c
        .inputs
        .iter()
        .map(|i| {
            let a = &g.steps[i.from].address;
            a.split('#').next().unwrap_or(a).to_string()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn a_claim_reads_only_the_cells_it_names() {
    let g = graph();
    assert_eq!(
        inputs(&g, "b beats a"),
        [
            "trial/t/a[threads=1]",
            "trial/t/a[threads=4]",
            "trial/t/b[threads=1]",
            "trial/t/b[threads=4]"
        ]
    );
    assert_eq!(
        inputs(&g, "c scales"),
        ["trial/t/c[threads=1]", "trial/t/c[threads=4]"]
    );
    // a side that names its block reads that block's trials of the server alone
    assert_eq!(
        inputs(&g, "a across blocks"),
        ["trial/t/a[threads=1]", "trial/t/a[threads=4]", "trial/u/a"]
    );
}
