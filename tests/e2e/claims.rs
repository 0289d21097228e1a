//! End-to-end: the claim forms beyond one figure at one point, and faceted tables, in a small
//! real study (two MariaDB servers in Docker): a trend claim along `threads`, a table with
//! one facet per `distribution`, and a claim over sql-bench's `select` operations at a tiny
//! scale. With two passes nothing can be decided, so each says so; what the test holds is
//! that each reaches `claim.json`, `data.json`, the report and the run's summary, and that
//! the report's headline states no number its data does not back.

use std::path::Path;
use std::time::Duration;

use crate::support::{engine_shared, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(1200);

fn plan() -> String {
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/mariadb.kdl");
    format!(
        r#"study "e2e-claim-forms" {{ title "Trend claims, claims over operations, facets (e2e)" }}
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
    distribution "uniform" "special"
    duration "1s"
}}
workload "sel" {{ sqlbench "select"; scale 5000 }}
trials "r" {{ servers "system" "jemalloc"; dataset "sb"; workload "ps"; passes 2 }}
trials "suite" {{ servers "system" "jemalloc"; workload "sel"; passes 2 }}
analysis "by-distribution" {{
    trials "r"
    table metric="tps" rows="server" columns="threads" baseline="system" facet="distribution"
}}
claim "jemalloc's gain grows with threads" {{
    trials "r"
    metric "tps"
    where distribution="uniform"
    expect "jemalloc > system" trend="grows" x="threads"
}}
claim "jemalloc is no slower on most selects" {{
    trials "suite"
    operations "select"
    expect "jemalloc < system" for="most"
}}
report "summary" {{ analyses "by-distribution" }}
"#,
        images.display()
    )
}

#[test]
fn a_trend_claim_a_claim_over_operations_and_a_faceted_table_reach_the_report() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan());
    let run = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    run.expect_code(0);
    let dir = sb.results().join("e2e-claim-forms");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();

    // the trend: its two points, the gain at each with its CI, and their change
    let trend = &data["claims"]["jemalloc's gain grows with threads"];
    assert_eq!(trend["trend"]["x"], "threads", "{trend}");
    assert_eq!(
        (
            trend["trend"]["from"].as_str(),
            trend["trend"]["to"].as_str()
        ),
        (Some("1"), Some("2"))
    );
    assert_eq!(trend["trend"]["gain"], "jemalloc / system");
    // two passes per side cannot decide an effect: never holds nor fails
    assert_eq!(trend["verdict"], "inconclusive", "{trend}");
    assert!(
        trend["reason"].as_str().unwrap().contains("too few passes"),
        "{trend}"
    );

    // over operations: each of the select test's operations, counted
    let over = &data["claims"]["jemalloc is no slower on most selects"];
    let each = over["operations"]["each"]
        .as_array()
        .expect("each operation");
    assert!(!each.is_empty(), "{over}");
    assert!(
        each.iter()
            .all(|e| e["operation"].as_str().unwrap().starts_with("select")),
        "{over}"
    );
    assert!(over["operations"]["correction"]
        .as_str()
        .unwrap()
        .contains("Holm"));
    assert_ne!(over["verdict"], "holds", "{over}");

    // the faceted table: one table per distribution, each with its cells only
    for facet in ["uniform", "special"] {
        let name = format!("by-distribution, distribution = {facet}");
        let cells = data["tables"][&name]["cells"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} in data.json: {}", data["tables"]));
        assert_eq!(cells.len(), 4, "{name}: two servers × two thread counts");
        assert!(cells.iter().all(|c| c["facet"] == facet), "{name}");
    }

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for part in [
        "by-distribution, distribution = uniform",
        "by-distribution, distribution = special",
        "its gain grows from threads = 1 to 2",
        "at threads = 1 and ×",
        "operations (",
    ] {
        assert!(md.contains(part), "{part:?} in\n{md}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("distribution = special"),
        "the facet in report.html"
    );
    // the headline's numbers (the findings and what they rest on) are the data's
    let headline = cairn_report::markdown::headline(&md);
    assert!(headline.starts_with("- Claim \""), "{headline}");
    let unbacked = cairn_report::numbers::unbacked(headline, &data);
    assert!(unbacked.is_empty(), "{unbacked:?} in {headline}");
    // the run's summary names both claims
    for claim in [
        "jemalloc's gain grows with threads",
        "jemalloc is no slower on most selects",
    ] {
        assert!(run.stdout.contains(claim), "{claim} in\n{}", run.stdout);
    }
    // the run ends with its main table, one per facet
    for facet in ["uniform", "special"] {
        let title = format!("### by-distribution, distribution = {facet}: `tps`");
        assert!(run.stdout.contains(&title), "{title} in\n{}", run.stdout);
    }
}
