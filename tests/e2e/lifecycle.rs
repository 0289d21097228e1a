//! End-to-end: a trials block's server lifecycle on real containers — `settle` lets the
//! started server sit idle and records the window and what the server did in it (its CPU
//! time and status counters), for a super-smack workload that has no warmup; `runs N` runs
//! the workload N times on one server start, records each run's figures, and a table with
//! `columns="run"` (and one `where run=1`) reads them.

use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_shared, Sandbox};
use crate::trials::images;

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

#[test]
fn a_settle_window_is_recorded_with_what_the_server_did_in_it() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-settle"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "auth" {{ smack rows=200 }}
workload "select-index" {{ smack "select_index"; clients 2; rounds 20 }}
trials "settled" {{ servers "s"; dataset "auth"; workload "select-index"; settle "2s" }}
analysis "qps" {{ table metric="qps" rows="server" columns="trials" }}
report "r" {{ analyses "qps" }}
"#,
            images()
        ),
    );
    sb.cairn(["run", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let rec = sb.record("trial/settled/s");
    assert_eq!(rec["definition"]["lifecycle"]["settle_s"], 2.0, "{rec}");
    let settle = &rec["extra"]["settle"];
    eprintln!("settle: {settle}");
    assert_eq!(settle["declared_s"], 2.0, "{settle}");
    // the window lasted at least what was declared (it sleeps that long)
    assert!(settle["seconds"].as_f64().unwrap() >= 2.0, "{settle}");
    // what the server did: its CPU time from the container's counters, no client queries
    let cpu = settle["server_cpu_s"].as_f64().expect("server CPU read");
    let share = settle["cpu_share"].as_f64().unwrap();
    assert!(cpu >= 0.0 && (share - cpu / settle["seconds"].as_f64().unwrap()).abs() < 1e-9);
    assert_eq!(settle["client_queries"], 0.0, "{settle}");
    assert!(settle["status_moved"].is_object(), "{settle}");
    // idle is what the readings say, and a server that was not is flagged with why
    let idle = share <= 0.05;
    assert_eq!(settle["idle"], idle, "{settle}");
    assert_eq!(settle.get("not_idle").is_some(), !idle, "{settle}");
    // the workload ran after it as always: one run, no run records
    assert!(
        rec["extra"]["figures"]["qps"].as_f64().unwrap() > 0.0,
        "{rec}"
    );
    assert!(rec["extra"].get("runs").is_none());
    // the report's design says what each server start did
    let report = std::fs::read_to_string(sb.results().join("e2e-settle/report.md")).unwrap();
    let idle_words = if idle {
        "2 s idle to settle (idle in 1 of 1 starts)"
    } else {
        "2 s idle to settle (idle in 0 of 1 starts; not idle at"
    };
    assert!(report.contains(idle_words), "{report}");
}

#[test]
fn runs_on_one_server_start_are_recorded_and_a_table_reads_them_by_run() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-runs"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=200 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 1; duration "1s" }}
trials "warm" {{ servers "s"; dataset "sb"; workload "ps"; runs 3 }}
analysis "by-run" {{ table metric="tps" rows="server" columns="run" }}
analysis "first" {{ where run=1; table metric="tps" rows="server" columns="trials" }}
analysis "starts" {{ table metric="tps" rows="server" columns="trials" }}
analysis "runs-plot" {{ plot metric="tps" x="run" }}
report "r" {{ analyses "by-run" "starts" "runs-plot" }}
"#,
            images()
        ),
    );
    sb.cairn(["run", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let rec = sb.record("trial/warm/s");
    assert_eq!(rec["definition"]["lifecycle"]["runs"], 3, "{rec}");
    // one server start: one start in the timings, one startup in its log
    let log = sb.output_text("trial/warm/s", "server.log");
    assert_eq!(
        log.matches("ready for connections").count(),
        1,
        "one start: {log}"
    );
    // three runs, each with its own figures; the trial's figures are their medians
    let runs = rec["extra"]["runs"].as_array().expect("extra.runs");
    assert_eq!(runs.len(), 3, "{rec}");
    let mut tps: Vec<f64> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["run"], i + 1);
            // each run is metered like a whole trial: its own efficiency figures
            assert!(r["figures"]["server_cpu_s"].is_number(), "{r}");
            r["figures"]["tps"].as_f64().expect("a run's tps")
        })
        .collect();
    assert!(tps.iter().all(|t| *t > 0.0), "{tps:?}");
    let by_run = tps.clone();
    tps.sort_by(f64::total_cmp);
    assert_eq!(
        rec["extra"]["figures"]["tps"].as_f64(),
        Some(tps[1]),
        "{rec}"
    );
    let all: Value =
        serde_json::from_str(&sb.output_text("trial/warm/s", "runs.json")).expect("runs.json");
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert!(all[2]["detail"].is_object(), "each run's driver detail");
    assert!(all[1]["status_deltas"]["Questions"].as_f64().unwrap() > 0.0);

    // the table by run: one column per run, each cell that run's figure
    let cat = |analysis: &str| -> Value {
        let r = sb
            .cairn(["cat", "plan.kdl", analysis, "table.json"])
            .guard(GUARD)
            .run();
        r.expect_code(0);
        serde_json::from_str(&r.stdout).expect("table.json")
    };
    let t = cat("analysis/by-run");
    assert_eq!(t["columns"]["name"], "run");
    assert_eq!(t["columns"]["values"], serde_json::json!(["1", "2", "3"]));
    let cells = t["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3, "{t}");
    for (cell, want) in cells.iter().zip(&by_run) {
        assert_eq!(cell["values"], serde_json::json!([want]), "{cell}");
    }
    // `where run=1` reads the first run of each start
    let first = cat("analysis/first");
    assert_eq!(first["cells"][0]["values"], serde_json::json!([by_run[0]]));
    // without `run`, the unit is the server start: one value per pass, the runs' median
    let starts = cat("analysis/starts");
    assert_eq!(starts["cells"][0]["values"], serde_json::json!([tps[1]]));
    // a chart by run reads the same runs
    let plot = cat("analysis/runs-plot");
    assert_eq!(plot["columns"]["name"], "run", "{plot}");
    let report = std::fs::read_to_string(sb.results().join("e2e-runs/report.md")).unwrap();
    assert!(
        report.contains("Each server start: 3 runs back to back"),
        "{report}"
    );
}
