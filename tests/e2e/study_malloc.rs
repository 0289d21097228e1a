//! End-to-end: the seed study `plans/malloc.kdl` (glibc malloc vs tcmalloc vs jemalloc on
//! MariaDB, with MySQL and PostgreSQL as rows; sysbench read-only by thread count) run at its
//! `tiny` scale in a sandbox, through the real `cairn` binary and real Docker. The report
//! must hold the seed-shaped table (one row per server, one column per thread count,
//! transactions/s, PostgreSQL's 64-thread cell left out as the seed left it out) and every
//! claim of the seed with a verdict that says why; the verdicts themselves are not asserted
//! (one pass per cell decides nothing, and says so).

use std::path::Path;
use std::time::Duration;

use crate::support::{engine_shared, repo_root, Sandbox};

/// A hang guard for the whole run (never a timing).
const GUARD: Duration = Duration::from_secs(1200);

const SERVERS: [&str; 5] = [
    "pg",
    "mysql",
    "mariadb",
    "mariadb-tcmalloc",
    "mariadb-jemalloc",
];

const CLAIMS: [&str; 3] = [
    "tcmalloc is faster than glibc malloc at 64 threads",
    "tcmalloc is no slower than glibc malloc at 1 thread",
    "PostgreSQL is ahead of MariaDB at 8 threads",
];

/// The plan (its scales are its parameters' values) and the image recipes it imports, at
/// the same relative places.
fn copy_plan(sb: &Sandbox) {
    for rel in [
        "plans/malloc.kdl",
        "images/mariadb.kdl",
        "images/mysql.kdl",
        "images/postgresql.kdl",
    ] {
        let text = std::fs::read_to_string(repo_root().join(rel))
            .unwrap_or_else(|e| panic!("read {rel}: {e}"));
        sb.write(rel, &text);
    }
}

/// The markdown table that follows the heading line starting with `heading`.
fn table_after<'r>(report: &'r str, heading: &str) -> Vec<&'r str> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect()
}

#[test]
fn malloc_study_runs_at_tiny_with_the_seed_table_and_every_claim() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    cairn_testkit::mysql_image();
    cairn_testkit::postgresql_image();
    let sb = Sandbox::new();
    copy_plan(&sb);

    // every scale checks; only the images the servers use are in the plan (no i386, no trixie)
    for scale in ["tiny", "short", "published"] {
        sb.cairn([
            "check",
            "plans/malloc.kdl",
            "--set",
            &format!("scale={scale}"),
        ])
        .run()
        .expect_code(0);
    }
    let plan = sb.plan_json_with("plans/malloc.kdl", &["--set", "scale=tiny"]);
    let images: Vec<&str> = plan
        .iter()
        .filter_map(|s| s["address"].as_str())
        .filter(|a| a.starts_with("image/"))
        .collect();
    assert_eq!(images.len(), 3, "{images:?}");

    let r = sb
        .cairn(["run", "plans/malloc.kdl", "--set", "scale=tiny"])
        .guard(GUARD)
        .run();
    r.expect_code(0);

    let report = sb.read("results/malloc/report.md");
    assert!(report.contains("scale = `tiny`"), "{report}");

    // the seed's table: servers × threads, transactions/s; PostgreSQL's 64-thread cell blank
    let tps = table_after(&report, "### tps: `tps`");
    assert_eq!(
        tps.first(),
        Some(&"| server \\ threads | 1 | 8 | 64 |"),
        "{report}"
    );
    for server in SERVERS {
        let row = tps
            .iter()
            .find(|l| l.starts_with(&format!("| {server} |")))
            .unwrap_or_else(|| panic!("no row {server} in the table:\n{}", tps.join("\n")));
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "{row}");
        for (i, cell) in cells[1..].iter().enumerate() {
            if server == "pg" && i == 2 {
                assert_eq!(*cell, "-", "PostgreSQL at 64 threads is left out: {row}");
                continue;
            }
            let median: f64 = cell
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a median in `{cell}` of {row}"));
            assert!(median > 0.0, "{row}");
        }
    }
    // each row against glibc's malloc
    let ratios = table_after(&report, "#### Relative to `mariadb`");
    assert_eq!(ratios.len(), 2 + SERVERS.len(), "{}", ratios.join("\n"));

    // every claim of the seed, with a verdict and its reason
    let claims: Vec<&str> = report
        .lines()
        .skip_while(|l| *l != "## Claims")
        .filter(|l| l.starts_with("- \""))
        .collect();
    assert_eq!(claims.len(), CLAIMS.len(), "{report}");
    for claim in CLAIMS {
        let line = claims
            .iter()
            .find(|l| l.starts_with(&format!("- \"{claim}\"")))
            .unwrap_or_else(|| panic!("claim {claim:?} not in the report:\n{report}"));
        let verdict = ["holds", "fails", "inconclusive"]
            .into_iter()
            .find(|v| line.contains(&format!("**{v}** — ")))
            .unwrap_or_else(|| panic!("no verdict with a reason: {line}"));
        if verdict == "inconclusive" {
            // one pass per side: the verdict says so rather than guessing
            assert!(line.contains("too few passes"), "{line}");
        }
    }
    assert!(Path::new(&sb.path().join("results/malloc/plot-scaling.svg")).exists());
}
