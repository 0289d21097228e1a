//! End-to-end: analyses shaped by the study — `servers`, `where` and `exclude` — in a small
//! real study (two MariaDB servers in Docker, two thread counts, two passes of a second).
//! The report holds each table with only the cells it keeps, and re-measuring a trial one
//! analysis does not read leaves that analysis as it was.

use std::path::Path;
use std::time::Duration;

use crate::support::{engine_shared, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(900);

fn plan() -> String {
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    format!(
        r#"study "e2e-subsets" {{ title "Subsets of one study (e2e)" }}
import "{}"
server "system" {{
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=50 skip-name-resolve=#true
    connect "tcp"
}}
server "jemalloc" {{ extends "system"; allocator "jemalloc" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{
    sysbench "oltp_point_select"
    threads 1 2
    duration "1s"
}}
trials "r" {{ servers "system" "jemalloc"; dataset "sb"; workload "ps"; passes 2 }}
analysis "at1" {{
    where threads=1
    table metric="tps" rows="server" columns="threads" baseline="system"
}}
analysis "without-j2" {{
    exclude threads=2 server="jemalloc"
    table metric="tps" rows="server" columns="threads" baseline="system"
}}
analysis "system-only" {{
    servers "system"
    table metric="tps" rows="threads" columns="server"
}}
report "summary" {{ analyses "at1" "without-j2" "system-only" }}
"#,
        images.display()
    )
}

/// The `(server, threads)` of each cell of table `name` in the report's data.json.
fn cells(data: &serde_json::Value, name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = data["tables"][name]["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("table {name} in data.json: {data}"))
        .iter()
        .map(|c| {
            let server = c["server"].as_str().unwrap_or_default().to_string();
            let place = format!("{}/{}", c["row"], c["column"]);
            (server, place)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn analyses_with_servers_where_and_exclude_render_only_their_cells() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan());

    let run = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    let dir = sb.results().join("e2e-subsets");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for part in ["### at1", "### without-j2", "### system-only"] {
        assert!(md.contains(part), "{part:?} in\n{md}");
    }
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    // where threads=1: both servers at one thread count
    assert_eq!(cells(&data, "at1").len(), 2, "{:?}", cells(&data, "at1"));
    // exclude threads=2 server="jemalloc": three cells of four
    let without = cells(&data, "without-j2");
    assert_eq!(without.len(), 3, "{without:?}");
    assert_eq!(
        without.iter().filter(|(s, _)| s == "jemalloc").count(),
        1,
        "{without:?}"
    );
    // servers "system": its two thread counts
    let system = cells(&data, "system-only");
    assert_eq!(system.len(), 2, "{system:?}");
    assert!(system.iter().all(|(s, _)| s == "system"), "{system:?}");
    // every trial is still in data.csv: the subsets shape tables, not the data
    let csv = std::fs::read_to_string(dir.join("data.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8);

    // one trial at two threads measured again (with its point's other passes): the
    // analysis at one thread reads none of them and does not run again
    let again = sb
        .cairn([
            "--json",
            "run",
            "plan.kdl",
            "--fresh",
            "trial/r/jemalloc[threads=2]#2",
        ])
        .guard(GUARD)
        .run();
    again.expect_code(0);
    let finished = again.events().finished();
    assert!(!finished.contains("analysis/at1"), "{finished:?}");
    for re_run in [
        "analysis/without-j2",
        "analysis/system-only",
        "report/summary",
    ] {
        assert!(finished.contains(re_run), "{re_run} in {finished:?}");
    }
}
