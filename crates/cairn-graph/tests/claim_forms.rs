//! A claim over operations (`operations`, `for=`), one at each value of a parameter (`over=`,
//! `for=`) and a trend claim (`trend=`, `x=`, `from=`, `to=`) reach their definitions, and so their keys; a claim written without them keeps the
//! key it had (its definition serialises as before), and adding a trend claim changes no
//! other step's key.

use cairn_defs::ClaimDef;
use cairn_graph::resolve;

const BASE: &str = r#"
study "claim-forms"
server "a" { option innodb_buffer_pool_size="64M" }
server "b" { option innodb_buffer_pool_size="64M"; allocator "jemalloc" }
workload "ro" { sysbench "oltp_read_only"; threads 1 4 }
workload "suite" { sqlbench "select" }
trials "ro" { servers "a" "b"; workload "ro"; passes 6 }
trials "suite" { servers "a" "b"; workload "suite"; passes 6 }
claim "b is faster at 4" {
    trials "ro"
    metric "tps"
    where threads=4
    expect "b > a" by="5%"
}
"#;

const FORMS: &str = r#"
claim "b's gain grows" {
    trials "ro"
    metric "tps"
    expect "b > a" trend="grows" x="threads" from=1 to=4
}
claim "b is slower on most selects" {
    trials "suite"
    operations "select"
    expect "b > a" by="20%" for="most"
}
claim "b is faster at every thread count" {
    trials "ro"
    metric "tps"
    expect "b > a" over="threads" for="all"
}
"#;

fn graph(text: &str) -> cairn_graph::StepGraph {
    let plan = cairn_plan::parse_str("forms.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

#[test]
fn the_forms_reach_their_definitions_and_change_no_other_key() {
    let before = graph(BASE);
    let after = graph(&format!("{BASE}{FORMS}"));
    let step = |g: &cairn_graph::StepGraph, a: &str| {
        g.steps
            .iter()
            .find(|s| s.address == a)
            .unwrap_or_else(|| panic!("{a}"))
            .clone()
    };
    let trend: ClaimDef = step(&after, "claim/b's gain grows").def().unwrap();
    assert_eq!(trend.trend.as_deref(), Some("grows"));
    assert_eq!(trend.x.as_deref(), Some("threads"));
    assert_eq!(
        (trend.from.as_deref(), trend.to.as_deref()),
        (Some("1"), Some("4"))
    );
    let over: ClaimDef = step(&after, "claim/b is slower on most selects")
        .def()
        .unwrap();
    assert_eq!(over.operations, Some(vec!["select".to_string()]));
    assert_eq!(over.quantifier.as_deref(), Some("most"));
    assert_eq!(over.metric, "<test>_s");
    let each: ClaimDef = step(&after, "claim/b is faster at every thread count")
        .def()
        .unwrap();
    assert_eq!(each.over.as_deref(), Some("threads"));
    assert_eq!(each.quantifier.as_deref(), Some("all"));
    // a claim without the new forms writes none of their fields
    let plain = serde_json::to_string(&step(&after, "claim/b is faster at 4").definition).unwrap();
    for field in [
        "operations",
        "\"for\"",
        "\"over\"",
        "trend",
        "\"x\"",
        "from",
        "\"to\"",
    ] {
        assert!(!plain.contains(field), "{field} in {plain}");
    }
    // every step of the plan before keeps its definition (so its key)
    for s in &before.steps {
        assert_eq!(
            step(&after, &s.address).definition,
            s.definition,
            "{}",
            s.address
        );
    }
}
