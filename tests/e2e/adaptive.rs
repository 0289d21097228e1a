//! End-to-end: adaptive passes on a real tiny study (real Docker, real MariaDB): `passes
//! min=2 max=4 until-ci=…` runs the two passes of every point, then decides on each further
//! pass from the CI of what was measured; every decision is in the event stream and the run
//! summary with the CI behind it, a pass that ran records it, one that was not needed left
//! no record, and `cairn plan` shows the passes beyond min as conditional.

use std::time::Duration;

use crate::support::{engine_shared, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

#[test]
fn a_real_study_decides_its_passes_and_records_why() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-adaptive"
import "{}"
server "system" {{
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=50 skip-name-resolve=#true
    connect "tcp"
}}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 2; duration "1s" }}
trials "t" {{ servers "system"; dataset "sb"; workload "ps"; passes min=2 max=4 until-ci="3%" }}
analysis "tps" {{ table metric="tps" rows="server" columns="threads" }}
report "r" {{ analyses "tps" }}
"#,
            crate::trials::images()
        ),
    );
    // before the run, passes 3 and 4 are conditional
    let plan = sb.plan_json("plan.kdl");
    for s in &plan {
        let address = s["address"].as_str().unwrap();
        let conditional = s["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["reason"] == "conditional");
        assert_eq!(
            conditional,
            address.ends_with("#3") || address.ends_with("#4"),
            "{s}"
        );
    }

    let r = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    let ev = r.events();
    let decisions = ev.of("pass_decided");
    assert!(!decisions.is_empty(), "{}", r.stderr);
    assert_eq!(
        ev.summary()["decisions"].as_array().unwrap().len(),
        decisions.len()
    );
    let mut measured = 2;
    for e in &decisions {
        let d = &e["decision"];
        let pass = d["pass"].as_u64().unwrap();
        assert!(pass == 3 || pass == 4, "{d}");
        assert_eq!(d["until_ci"], 0.03);
        assert_eq!(d["metric"], "tps");
        assert!(d["ci_half_width"].as_f64().unwrap() >= 0.0, "{d}");
        let address = e["step"].as_str().unwrap();
        if d["needed"] == true {
            measured += 1;
            assert!(d["ci_half_width"].as_f64().unwrap() > 0.03, "{d}");
            let rec = sb.record(address);
            assert_eq!(
                rec["extra"]["adaptive"], *d,
                "the pass records its decision"
            );
        } else {
            assert!(d["ci_half_width"].as_f64().unwrap() <= 0.03, "{d}");
            assert!(
                sb.records_of(address).is_empty(),
                "{address} was not needed"
            );
        }
    }
    assert_eq!(ev.count("not_needed") as usize, 4 - measured);
    let trials = (1..=4)
        .map(|p| format!("trial/t/system#{p}"))
        .filter(|a| !sb.records_of(a).is_empty())
        .count();
    assert_eq!(trials, measured);

    // the table and the report read the passes that exist
    assert!(
        sb.results().join("e2e-adaptive/report.md").exists(),
        "{}",
        r.stderr
    );
    // `cairn plan` now knows, from the records, which passes are not needed
    for s in sb.plan_json("plan.kdl") {
        let status = s["status"].as_str().unwrap();
        assert!(status == "cached" || status == "not_needed", "{s}");
    }
    sb.cairn(["report", "plan.kdl"]).guard(GUARD).success();

    // a second run measures nothing: the passes that ran are cached, the rule decides alike
    let again = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    again.expect_code(0);
    let ev = again.events();
    assert!(
        ev.finished().iter().all(|a| !a.starts_with("trial/")),
        "{:?}",
        ev.finished()
    );
}
