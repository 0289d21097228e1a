//! End-to-end: `plans/engine-scaling.kdl` (seed 003: MariaDB packaged, generic and CPU-tuned
//! builds against MySQL, by engine, CPUs and I/O scheduler) at its `tiny` scale, in a
//! sandbox: it checks at every scale, runs without building MariaDB from source, and its
//! report holds the seed-shaped tables (tps by server × CPUs, one table per I/O scheduler,
//! per sysbench test) and every claim of the scale with a verdict and its reason. Setting
//! the I/O scheduler needs root and a disk offering `none` and `mq-deadline`; where this
//! machine lacks them the test says so and passes.

use std::process::Command;
use std::time::Duration;

use crate::support::{engine_shared, repo_root, Sandbox};

/// A hang guard for the run (never a timing): tiny runs in ~2 min alone on 2 cores, and
/// waits for the machine's measurement lock when other runs measure.
const GUARD: Duration = Duration::from_secs(1800);

const PLAN: &str = "plans/engine-scaling.kdl";

/// Whether this machine lets cairn set the scheduler of the engine's data disk to the tiny
/// scale's `none` and `mq-deadline`.
fn schedulers_settable() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: setting the I/O scheduler needs root");
        return false;
    }
    let Ok(out) = Command::new("docker")
        .args(["info", "--format", "{{.DockerRootDir}}"])
        .output()
    else {
        return false;
    };
    let root = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let Ok(meta) = std::fs::metadata(&root) else {
        return false;
    };
    use std::os::unix::fs::MetadataExt;
    let dev = meta.dev();
    let Ok(sys) = std::fs::canonicalize(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    )) else {
        return false;
    };
    let text = [sys.join("queue/scheduler"), sys.join("../queue/scheduler")]
        .into_iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .unwrap_or_default();
    let offered: Vec<&str> = text
        .split_whitespace()
        .map(|w| w.trim_start_matches('[').trim_end_matches(']'))
        .collect();
    let ok = offered.contains(&"none") && offered.contains(&"mq-deadline");
    if !ok {
        eprintln!("skipped: the engine's data disk offers {offered:?}, not none and mq-deadline");
    }
    ok
}

/// The claims the plan declares at `scale`, by name (`cairn plan`'s claim steps).
fn claims_at(sb: &Sandbox, scale: &str) -> Vec<String> {
    sb.plan_json_with(PLAN, &["--set", &format!("scale={scale}")])
        .iter()
        .filter(|step| step["kind"] == "claim")
        .filter_map(|step| step["address"].as_str()?.strip_prefix("claim/"))
        .map(str::to_string)
        .collect()
}

/// The plan and the shared image recipes, as the repository has them.
fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    let root = repo_root();
    sb.copy_tree(&root.join("images"), "images");
    sb.write(
        PLAN,
        &std::fs::read_to_string(root.join(PLAN)).expect("the plan"),
    );
    sb
}

#[test]
fn engine_scaling_checks_at_every_scale_and_runs_tiny_to_a_seed_shaped_report() {
    let sb = sandbox();
    // every scale is a valid plan (no container runs for a check)
    for scale in ["tiny", "default"] {
        sb.cairn(["check", PLAN, "--set", &format!("scale={scale}")])
            .success();
    }
    // the default scale declares every seed claim this machine can test
    let default_claims = claims_at(&sb, "default");
    assert!(default_claims.len() >= 15, "{default_claims:?}");

    if !schedulers_settable() {
        return;
    }
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    cairn_testkit::mysql_image();

    let r = sb
        .run(PLAN)
        .args(["--set", "scale=tiny"])
        .guard(GUARD)
        .success();
    let events = r.events();
    // no source build at tiny: only Debian's MariaDB and sid's MySQL images
    let images: Vec<String> = events
        .finished()
        .into_iter()
        .chain(events.cached())
        .filter(|a| a.starts_with("image/"))
        .collect();
    assert!(
        images
            .iter()
            .all(|a| a == "image/mariadb-bookworm" || a == "image/mysql-sid"),
        "{images:?}"
    );
    // 2 servers × 2 CPU counts × (2 schedulers for MyISAM + 1 + 1), one pass each
    let trials = events
        .finished()
        .into_iter()
        .filter(|a| a.starts_with("trial/"))
        .count();
    assert_eq!(trials, 16, "{}", r.stderr);

    let report = sb.read("results/engine-scaling/report.md");
    // the seed's charts: per test, tps of each server by CPU count, one per scheduler
    for table in [
        "### myisam read-only, io-scheduler = none: `tps`",
        "### myisam read-only, io-scheduler = mq-deadline: `tps`",
        "### innodb read-only, io-scheduler = mq-deadline: `tps`",
        "### innodb read-write, io-scheduler = mq-deadline: `tps`",
        "### myisam read-only by scheduler: `tps`",
    ] {
        assert!(report.contains(table), "no table {table:?} in\n{report}");
    }
    assert!(report.contains("| server \\ cpus | 1 | 2 |"), "{report}");
    assert!(report.contains("| server \\ io-scheduler |"), "{report}");
    for server in ["| debian |", "| mysql |"] {
        assert!(report.contains(server), "no row {server} in\n{report}");
    }

    // every claim of the tiny scale, with a verdict and why
    let claims_section = report
        .split("## Claims")
        .nth(1)
        .expect("a Claims section")
        .split("\n## ")
        .next()
        .unwrap();
    let tiny_claims = claims_at(&sb, "tiny");
    assert!(!tiny_claims.is_empty());
    for claim in &tiny_claims {
        let line = claims_section
            .lines()
            .find(|l| l.starts_with(&format!("- \"{claim}\"")))
            .unwrap_or_else(|| panic!("claim {claim:?} not in\n{claims_section}"));
        let verdict = ["**holds**", "**fails**", "**inconclusive**"]
            .into_iter()
            .find(|v| line.contains(v))
            .unwrap_or_else(|| panic!("no verdict: {line}"));
        // the verdict is explained: its ratio and passes, and for an undecided one why
        let why = line.split(verdict).nth(1).unwrap();
        assert!(why.contains("passes per side"), "{line}");
        if verdict == "**inconclusive**" {
            assert!(
                why.contains("too few passes") || why.contains("CI"),
                "{line}"
            );
        }
    }
}
