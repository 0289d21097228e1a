//! End-to-end: the word-size seed study (`plans/word-size.kdl`) at its `tiny` scale, run from
//! the repository's plan into a sandbox's store: Debian's i386 and amd64 MariaDB packages on
//! the whole sql-bench suite (MyISAM, so no transactions test) and sysbench read-only. What
//! it holds: no source build is planned or run at this scale, each server ran at the word
//! size it stands for, the report has the seed's table (seconds per test, each test's %
//! difference against the 32-bit build) and every claim of the scale with a verdict and its
//! reason — a tiny run is too short to decide them, so never a `holds` on four noisy passes
//! without a CI inside the claimed band.

use std::time::Duration;

use crate::support::{engine_shared, repo_root, Sandbox};

/// A hang guard for the run (never a timing).
const GUARD: Duration = Duration::from_secs(1200);

/// The claims the plan makes at `tiny` (those on the optimized builds need `large`).
const CLAIMS: [&str; 4] = [
    "64-bit is about 50% faster on SELECT",
    "64-bit is about 30% faster on big-tables",
    "64-bit is 10-15% faster overall",
    "64-bit is 10-15% faster on sysbench read-only",
];

/// sql-bench's tests the seed's table lists (transactions is skipped on MyISAM).
const TESTS: [&str; 7] = [
    "alter_table",
    "big_tables",
    "connect",
    "create",
    "insert",
    "select",
    "wisconsin",
];

#[test]
fn the_word_size_study_runs_at_tiny_scale_and_reports_the_seed_table_and_claims() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let plan = repo_root().join("plans/word-size.kdl");
    let plan = plan.to_str().expect("a UTF-8 path");
    let sb = Sandbox::new();

    // tiny needs no source build: the optimized servers' images are not even steps
    let planned = sb
        .cairn(["--json", "plan", plan, "--set", "scale=tiny"])
        .guard(GUARD)
        .success()
        .stdout;
    assert!(!planned.contains("mariadb-opt"), "{planned}");
    assert!(!planned.contains("opt32"), "{planned}");

    let run = sb
        .cairn(["run", plan, "--set", "scale=tiny"])
        .guard(GUARD)
        .run();
    run.expect_code(0);

    // each server at the word size it stands for, on the same 64-bit kernel
    for (server, bits) in [("deb32", 32), ("deb64", 64)] {
        let address = format!("trial/suite/{server}#1");
        let records = sb.records_of(&address);
        let (_, rec) = records.first().unwrap_or_else(|| panic!("{address}"));
        let v = &rec["extra"]["variant"];
        assert_eq!(v["checks"]["word_size"], bits, "{address}: {v}");
        let f = &rec["extra"]["figures"];
        assert!(f.get("transactions_s").is_none(), "MyISAM: {f}");
        assert!(f["total_s"].as_f64().is_some_and(|s| s > 0.0), "{f}");
    }

    let dir = sb.results().join("word-size");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();

    // the seed's table: seconds per test, 32-bit and 64-bit, against the 32-bit build
    let table = &data["tables"]["deb32-vs-deb64"];
    assert_eq!(table["baseline"], "deb32", "{table}");
    let cells = table["cells"].as_array().expect("cells");
    for test in TESTS {
        for server in ["deb32", "deb64"] {
            assert!(
                cells
                    .iter()
                    .any(|c| c["row"] == test && c["server"] == server),
                "{test} × {server} in the table"
            );
        }
    }
    assert!(!cells.iter().any(|c| c["row"] == "transactions"));
    // one row per test, as the seed's table: no operation group beside its test's total
    assert!(
        cells.iter().all(|c| TESTS.iter().any(|t| c["row"] == *t)),
        "{table}"
    );

    // every claim: a verdict with its reason, its ratio and the passes it rests on; a
    // `holds` only with a CI inside the band
    for name in CLAIMS {
        let c = &data["claims"][name];
        let verdict = c["verdict"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {c}"));
        assert!(
            ["holds", "fails", "inconclusive"].contains(&verdict),
            "{name}: {c}"
        );
        assert!(
            !c["reason"].as_str().unwrap_or("").is_empty(),
            "{name}: {c}"
        );
        assert!(c["ratio"].as_f64().is_some(), "{name}: {c}");
        assert_eq!(c["passes"], 4, "{name}: {c}");
        if verdict == "holds" {
            let size = c["size"].as_f64().unwrap();
            let tol = c["tolerance"].as_f64().unwrap();
            let ci = &c["ratio_ci"];
            let (lo, hi) = (ci["low"].as_f64().unwrap(), ci["high"].as_f64().unwrap());
            let (a, b) = if name.contains("sysbench") {
                (1.0 + size - tol, 1.0 + size + tol)
            } else {
                (1.0 - size - tol, 1.0 - size + tol)
            };
            assert!(a <= lo && hi <= b, "{name}: holds outside its band: {c}");
        }
    }

    // the report: the seed's table and every claim with its meaning and verdict
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("### deb32-vs-deb64"), "{md}");
    assert!(md.contains("Relative to `deb32`"), "{md}");
    for name in CLAIMS {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("- \"{name}\"")))
            .unwrap_or_else(|| panic!("claim {name:?} in\n{md}"));
        assert!(line.contains("meaning"), "{line}");
        assert!(line.contains("**"), "a verdict: {line}");
    }
    assert!(md.contains("scale = `tiny`"), "the parameter in the design");
    for name in CLAIMS {
        assert!(run.stdout.contains(name), "{name} in\n{}", run.stdout);
    }
}
