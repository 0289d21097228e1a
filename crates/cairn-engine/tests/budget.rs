//! The time budget on synthetic plans and records: declared times for trials never run,
//! recorded durations where an earlier run is known, conditional passes summed apart.

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_engine::budget::{declared, estimate, human, SERVER_START};
use cairn_graph::StepGraph;

fn graph(passes: &str) -> StepGraph {
    let text = format!(
        r#"
study "budget"
server "a" {{ option max_connections=100 }}
server "b" {{ option max_connections=200 }}
workload "w" {{ sysbench "oltp_read_only"; threads 1 4; duration "8s"; warmup "2s" }}
trials "t" {{ servers "a" "b"; workload "w"; {passes} }}
"#
    );
    let plan = cairn_plan::parse_str("budget.kdl", &text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    cairn_graph::resolve(&plan).expect("resolves")
}

#[test]
fn trials_never_run_take_their_declared_times() {
    let g = graph("passes 3");
    let every = vec![true; g.steps.len()];
    let b = estimate(&g, &every, |_| None);
    let trials = g.steps.iter().filter(|s| declared(s).is_some()).count();
    assert_eq!(trials, 2 * 2 * 3);
    let one = Duration::from_secs(10) + SERVER_START;
    assert_eq!(b.certain, one * trials as u32);
    assert_eq!(b.conditional, Duration::ZERO);
    assert_eq!((b.recorded, b.declared), (0, trials));
}

#[test]
fn a_settle_window_and_consecutive_runs_add_to_a_trials_declared_time() {
    let g = graph(r#"passes 1; settle "30s"; runs 3"#);
    let trial = g.steps.iter().find(|s| declared(s).is_some()).unwrap();
    // 30 s settling, then three runs of 2 s warmup + 8 s on one server start
    assert_eq!(
        declared(trial),
        Some(Duration::from_secs(30 + 3 * 10) + SERVER_START)
    );
}

#[test]
fn recorded_durations_win_and_conditional_passes_are_summed_apart() {
    let g = graph(r#"passes min=2 max=5 until-ci="2%""#);
    let every = vec![true; g.steps.len()];
    // every earlier run of server a took 30 s; b was never run
    let records: BTreeMap<String, Duration> = g
        .steps
        .iter()
        .filter(|s| s.address.starts_with("trial/t/a["))
        .map(|s| (s.address.clone(), Duration::from_secs(30)))
        .collect();
    let b = estimate(&g, &every, |s| records.get(&s.address).copied());
    let declared_b = Duration::from_secs(10) + SERVER_START;
    // 2 points × 2 certain passes per server; 2 points × 3 conditional passes
    assert_eq!(
        b.certain,
        Duration::from_secs(30) * 4 + declared_b * 4,
        "{b:?}"
    );
    assert_eq!(b.conditional, Duration::from_secs(30) * 6 + declared_b * 6);
    assert_eq!(b.at_most(), b.certain + b.conditional);
    assert_eq!((b.recorded, b.declared, b.unknown), (10, 10, 0));
    // only what will run counts
    let none = vec![false; g.steps.len()];
    assert_eq!(estimate(&g, &none, |_| None), Default::default());
}

#[test]
fn durations_read_for_people() {
    assert_eq!(human(Duration::from_secs(52)), "52s");
    assert_eq!(human(Duration::from_secs(250)), "4m 10s");
    assert_eq!(human(Duration::from_secs(3900)), "1h 05m");
}

#[test]
fn trials_that_end_on_a_count_take_a_recorded_pass_of_their_point_or_say_they_have_none() {
    let text = r#"
study "budget"
server "a" { option max_connections=100 }
workload "w" { sqlbench "select"; scale "small" }
trials "t" { servers "a"; workload "w"; passes 3 }
"#;
    let plan = cairn_plan::parse_str("count.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let g = cairn_graph::resolve(&plan).expect("resolves");
    let every = vec![true; g.steps.len()];
    let trials = g
        .steps
        .iter()
        .filter(|s| s.address.starts_with("trial/"))
        .count();
    assert_eq!(trials, 3);
    // none ran: no declared time, and the budget says they are counted, not free
    let b = estimate(&g, &every, |_| None);
    assert_eq!((b.declared, b.counted), (0, 3));
    assert_eq!(b.certain, Duration::ZERO);
    // the first pass ran in 40 s: the others of its definition take as long
    let b = estimate(&g, &every, |s| {
        (s.address == "trial/t/a#1").then_some(Duration::from_secs(40))
    });
    assert_eq!((b.recorded, b.counted, b.unknown), (3, 0, 0));
    assert_eq!(b.certain, Duration::from_secs(120));
}
