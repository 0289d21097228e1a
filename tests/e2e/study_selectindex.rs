//! End-to-end: the seed study `plans/select-index.kdl` (super-smack `select_index` on MyISAM,
//! the server on 1 and 2 CPUs, a settle window and several runs per server start) run at
//! its `tiny` scale in a sandbox, end to end: the report holds the seed's blocks (q/s per
//! run, one table per CPU count), the per-setting table, and every claim of the plan with a
//! verdict and its reasons (tiny runs are usually inconclusive: the verdict is asserted to be
//! present and explained, never to hold).

use std::path::Path;
use std::sync::RwLockReadGuard;
use std::time::Duration;

use crate::support::{engine_shared, repo_root, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(900);

/// The image exists before the test's cairn needs it (one build shared with the MySQL tests).
fn image_ready() -> RwLockReadGuard<'static, ()> {
    let engine = engine_shared();
    cairn_testkit::mysql_image();
    engine
}

/// The claims the plan declares, by name, read from its text (so a claim added to the plan
/// is checked here too).
fn claims_of(plan: &str) -> Vec<String> {
    plan.lines()
        .filter_map(|l| l.trim_start().strip_prefix("claim \""))
        .map(|rest| rest.split_once('"').expect("a claim's closing quote").0)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_select_index_study_runs_at_tiny_scale_with_its_tables_and_claims() {
    let _engine = image_ready();
    let root = repo_root();
    let sb = Sandbox::new();
    let plan = std::fs::read_to_string(root.join("plans/select-index.kdl")).expect("the plan");
    sb.write("plans/select-index.kdl", &plan);
    sb.copy_tree(&root.join("images"), "images");

    let r = sb
        .cairn([
            "--json",
            "run",
            "plans/select-index.kdl",
            "--set",
            "scale=tiny",
        ])
        .guard(GUARD)
        .run();
    r.expect_code(0);
    let finished = r.events().finished();
    // both CPU counts, 4 server starts each, and the report
    for cpus in [1, 2] {
        for pass in 1..=4 {
            let address = format!("trial/htt/mysql[cpus={cpus}]#{pass}");
            assert!(finished.contains(&address), "{address}: {}", r.stderr);
        }
    }
    assert!(finished.contains("report/select-index"), "{}", r.stderr);

    // each start: settled, then 2 runs of 10 clients × 1000 rounds × 2 queries, on MyISAM,
    // the server on the CPUs asked for
    let rec = sb.record("trial/htt/mysql[cpus=1]#1");
    let runs = rec["extra"]["runs"].as_array().expect("extra.runs");
    assert_eq!(runs.len(), 2, "{rec}");
    for run in runs {
        assert_eq!(run["figures"]["queries"], 20000.0, "{run}");
        assert!(run["figures"]["qps"].as_f64().unwrap() > 0.0, "{run}");
    }
    assert_eq!(rec["extra"]["cpus"]["count"], 1, "{rec}");
    // the clients on the server's own CPU, as the seed's hyper-threading switch took CPUs
    // from mysqld and super-smack alike
    let placed = &rec["extra"]["cpus"];
    assert_eq!(rec["definition"]["clients_with_server"], true, "{rec}");
    assert_eq!(placed["clients"], placed["server_affinity"], "{placed}");
    assert!(rec["extra"]["settle"]["seconds"].as_f64().unwrap() >= 2.0);
    let ds = sb.record("dataset/http_auth@mysql");
    assert!(ds.to_string().contains("MyISAM"), "{ds}");

    let report = std::fs::read_to_string(
        sb.results()
            .join("select-index")
            .join(Path::new("report.md")),
    )
    .expect("report.md");
    eprintln!("{report}");
    // the seed's blocks: one per setting, q/s by run of a start
    for cpus in [1, 2] {
        let heading = format!("### qps per run, cpus = {cpus}: `qps` (1/s)");
        let at = report
            .find(&heading)
            .unwrap_or_else(|| panic!("{heading}: {report}"));
        let block = &report[at..];
        assert!(block.contains("| server \\ run | 1 | 2 |"), "{block}");
        assert!(block.contains("| mysql | "), "{block}");
    }
    // the settings side by side, and the scaling from 1 CPU to 2
    assert!(report.contains("### qps by cpus"), "{report}");
    assert!(report.contains("| server \\ cpus | 1 | 2 |"), "{report}");
    assert!(
        report.contains("Scaling of qps from cpus = 1 to 2"),
        "{report}"
    );
    // the design says what each start did
    assert!(report.contains("2 s idle to settle"), "{report}");
    assert!(report.contains("then 2 runs back to back"), "{report}");

    // every claim of the plan, with a verdict and its reasons
    let claims = claims_of(&plan);
    assert_eq!(claims.len(), 3, "{claims:?}");
    let section = &report[report.find("## Claims").expect("a claims section")..];
    for claim in &claims {
        let line = section
            .lines()
            .find(|l| l.starts_with(&format!("- \"{claim}\" (")))
            .unwrap_or_else(|| panic!("claim {claim:?} in {section}"));
        let verdict = ["holds", "fails", "inconclusive"]
            .into_iter()
            .find(|v| line.contains(&format!("**{v}** — ")))
            .unwrap_or_else(|| panic!("a verdict: {line}"));
        // explained: the ratio with its CI and the passes it rests on
        assert!(line.contains("ratio "), "{line}");
        assert!(line.contains("4 passes per side"), "{line}");
        if verdict == "inconclusive" {
            // and why it is not decided
            let why = line.split("passes per side").nth(1).unwrap_or("");
            assert!(why.trim_start_matches(';').trim().len() > 10, "{line}");
        }
    }
}
