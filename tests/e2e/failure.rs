//! End-to-end: failing steps. Exit codes, the stderr tail in the message, no record for a
//! failure, dependents skipped, `--keep-going` vs fail-fast, timeouts that leave no
//! process behind, declared outputs that are missing.

use std::time::{Duration, Instant};

use crate::support::{contains, leftovers_after, reap, set, unique_marker, Sandbox};

const OK_ONLY: &str = r#"study "f"
step "ok" { run "echo ok > ok.txt"; output "ok.txt" }
"#;

fn with_bad(bad_cmd: &str) -> String {
    format!(
        r#"study "f"
step "ok" {{ run "echo ok > ok.txt"; output "ok.txt" }}
step "bad" {{ run "{bad_cmd}"; output "o.txt" }}
step "child" {{ needs "bad"; run "cp bad/o.txt c.txt"; output "c.txt" }}
step "grandchild" {{ needs "child"; run "cp child/c.txt g.txt"; output "g.txt" }}
"#
    )
}

const FAILING: &str = "echo some-stdout; echo first-line >&2; echo e2e-boom-tail >&2; exit 3";

#[test]
fn a_failing_step_fails_the_run_and_records_nothing() {
    let sb = Sandbox::new();
    sb.write("p.kdl", OK_ONLY);
    sb.run_ok("p.kdl", &[]);
    assert_eq!(sb.record_count(), 1);

    sb.write("p.kdl", &with_bad(FAILING));
    let ev = sb.run("p.kdl").failure().events();
    assert_eq!(ev.failed(), set(["bad"]));
    let msg = ev.first_error();
    assert!(msg.contains("e2e-boom-tail"), "stderr tail in {msg:?}");
    assert!(msg.contains('3'), "exit status in {msg:?}");
    // nothing downstream ran
    assert!(ev.finished().is_empty(), "{:?}", ev.finished());
    assert_eq!(ev.cached(), set(["ok"]));
    assert_eq!(ev.count("failed"), 1);
    assert_eq!(ev.count("skipped"), 2);
    // no record for the failure (nor its dependents)
    assert_eq!(sb.record_count(), 1);
    assert!(sb.records_of("bad").is_empty());
    assert_eq!(sb.verify().code, Some(0));

    // the human report carries the tail too
    sb.cairn(["run", "p.kdl"])
        .output(contains("e2e-boom-tail"))
        .output(contains("bad"))
        .failure();
}

#[test]
fn fail_fast_reports_every_skipped_step() {
    let sb = Sandbox::new();
    sb.write("p.kdl", &with_bad(FAILING));
    let ev = sb.run("p.kdl").failure().events();
    assert_eq!(ev.count("skipped"), 2);
    // the JSON stream should say which steps were skipped, as with --keep-going
    assert_eq!(
        ev.skipped(),
        set(["child", "grandchild"]),
        "summary counts 2 skipped steps but the stream names {:?}",
        ev.skipped()
    );
}

#[test]
fn a_failed_step_runs_again_and_runs_once_fixed() {
    let sb = Sandbox::new();
    sb.write("p.kdl", &with_bad(FAILING));
    sb.run("p.kdl").failure();

    // unchanged: it is not cached, it runs (and fails) again
    let ev = sb.run("p.kdl").failure().events();
    assert!(ev.addresses("step_started").contains("bad"));
    assert_eq!(ev.failed(), set(["bad"]));

    // fixed: it runs, then its dependents
    sb.write("p.kdl", &with_bad("echo fixed > o.txt"));
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["bad", "child", "grandchild"]));
    assert_eq!(ev.cached(), set(["ok"]));
    assert_eq!(sb.record_count(), 4);
}

/// `bad` fails at once while `slow` is still running; `after_slow` becomes ready only
/// after the failure.
const KEEP_GOING: &str = r#"study "kg"
step "bad" { run "echo e2e-kg >&2; exit 3"; output "o.txt" }
step "child" { needs "bad"; run "cp bad/o.txt c.txt"; output "c.txt" }
step "slow" { run "sleep 1; echo s > s.txt"; output "s.txt" }
step "after_slow" { needs "slow"; run "cp slow/s.txt a.txt"; output "a.txt" }
"#;

#[test]
fn without_keep_going_the_run_stops_dispatching() {
    let sb = Sandbox::new();
    sb.write("p.kdl", KEEP_GOING);
    let ev = sb.run("p.kdl").args(["-j", "2"]).failure().events();
    assert_eq!(ev.failed(), set(["bad"]));
    // slow was already running and may finish; nothing new is started after the failure
    let started = ev.addresses("step_started");
    assert!(!started.contains("after_slow"), "started: {started:?}");
    assert!(!started.contains("child"), "started: {started:?}");
    assert!(sb.records_of("after_slow").is_empty());
}

#[test]
fn keep_going_runs_independent_steps_and_skips_dependents() {
    let sb = Sandbox::new();
    sb.write("p.kdl", KEEP_GOING);
    let ev = sb
        .run("p.kdl")
        .args(["-j", "2", "--keep-going"])
        .failure()
        .events();
    assert_eq!(ev.failed(), set(["bad"]));
    assert_eq!(ev.finished(), set(["slow", "after_slow"]));
    assert_eq!(ev.skipped(), set(["child"]));
    let skip = ev.of("step_skipped")[0];
    assert!(
        skip["because"].as_str().unwrap_or("").contains("bad"),
        "{skip}"
    );
    assert_eq!(ev.count("failed"), 1);
    assert_eq!(ev.count("skipped"), 1);
    assert_eq!(ev.count("ran"), 2);
    assert_eq!(sb.record_count(), 2);
}

#[test]
fn a_timeout_fails_the_step_and_leaves_no_process_behind() {
    let sb = Sandbox::new();
    let marker = unique_marker("timeout");
    // a background sleep too: the whole process group has to go
    sb.write(
        "p.kdl",
        &format!(
            r#"study "to"
step "slow" {{ run "sleep 30 & sleep 30; echo {marker}"; output "o.txt"; timeout "1s"; env E2E_MARK="{marker}" }}
"#
        ),
    );
    let t0 = Instant::now();
    // hang guard only: the timeout has to cut the 30 s sleep well short
    let ev = sb
        .run("p.kdl")
        .guard(Duration::from_secs(20))
        .failure()
        .events();
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(ev.failed(), set(["slow"]));
    let msg = ev.first_error();
    assert!(msg.contains("timed out"), "{msg}");
    assert_eq!(sb.record_count(), 0);

    let left = leftovers_after(&marker, Duration::from_secs(3));
    reap(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_missing_declared_output_fails_the_step() {
    let sb = Sandbox::new();
    sb.write(
        "p.kdl",
        r#"study "mo"
step "noout" { run "echo hi > other.txt"; output "promised.txt" }
step "after" { needs "noout"; run "cp noout/promised.txt x"; output "x" }
"#,
    );
    let ev = sb.run("p.kdl").failure().events();
    assert_eq!(ev.failed(), set(["noout"]));
    let msg = ev.first_error();
    assert!(msg.contains("promised.txt"), "{msg}");
    assert!(ev.finished().is_empty());
    assert_eq!(sb.record_count(), 0);
}
