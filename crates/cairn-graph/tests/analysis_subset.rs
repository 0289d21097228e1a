//! An analysis with `servers`, `where` or `exclude` reads only the trials it keeps: those are
//! its inputs (so re-measuring another re-runs nothing of it), its definition says which, and
//! an analysis without them keeps every trial and its definition as before.

use cairn_graph::{resolve, StepGraph, StepKind};

const PLAN: &str = r#"
image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "a" { image "i" }
server "b" { image "i"; option max_connections=200 }
server "c" { image "i"; option max_connections=300 }
workload "w" { sysbench "oltp_point_select"; threads 1 4 64 }
trials "t" { servers "a" "b" "c"; workload "w"; passes 2 }
analysis "all" { table metric="tps" columns="threads" }
analysis "ab" { servers "a" "b"; table metric="tps" columns="threads" baseline="a" }
analysis "at4" { where threads=4; table metric="tps" columns="server" rows="threads" }
analysis "no64c" {
    exclude threads=64 server="c"
    exclude threads=1
    table metric="tps" columns="threads"
}
"#;

fn graph() -> StepGraph {
    let plan = cairn_plan::parse_str("subset.kdl", PLAN)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

/// The addresses of the trials analysis `name` reads.
fn inputs(g: &StepGraph, name: &str) -> Vec<String> {
    let a = g
        .steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS && s.name == name)
        .unwrap();
    let mut out: Vec<String> = a
        .inputs
        .iter()
        .map(|i| g.steps[i.from].address.clone())
        .collect();
    out.sort();
    out
}

fn definition(g: &StepGraph, name: &str) -> serde_json::Value {
    g.steps
        .iter()
        .find(|s| s.kind == StepKind::ANALYSIS && s.name == name)
        .unwrap()
        .definition
        .clone()
}

#[test]
fn an_analysis_reads_only_the_trials_its_subset_keeps() {
    let g = graph();
    assert_eq!(inputs(&g, "all").len(), 3 * 3 * 2);
    let ab = inputs(&g, "ab");
    assert_eq!(ab.len(), 2 * 3 * 2);
    assert!(ab.iter().all(|a| !a.starts_with("trial/t/c")), "{ab:?}");
    let at4 = inputs(&g, "at4");
    assert_eq!(at4.len(), 3 * 2);
    assert!(at4.iter().all(|a| a.contains("[threads=4]")), "{at4:?}");
    let no64c = inputs(&g, "no64c");
    // threads 4 for all three, threads 64 for a and b; two passes each
    assert_eq!(no64c.len(), (3 + 2) * 2, "{no64c:?}");
    assert!(!no64c.iter().any(|a| a.starts_with("trial/t/c[threads=64]")));
    assert!(!no64c.iter().any(|a| a.contains("[threads=1]")));
}

#[test]
fn the_definition_names_the_subset_and_an_analysis_without_one_adds_nothing() {
    let g = graph();
    assert_eq!(
        definition(&g, "all"),
        serde_json::json!({"kind": "table", "props": {"metric": "tps", "columns": "threads"}})
    );
    assert_eq!(
        definition(&g, "ab")["servers"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(
        definition(&g, "at4")["filter"],
        serde_json::json!({"threads": 4})
    );
    assert_eq!(
        definition(&g, "no64c")["exclude"],
        serde_json::json!([{"server": "c", "threads": 64}, {"threads": 1}])
    );
}
