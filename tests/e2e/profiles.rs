//! End-to-end: a trials block's `profile "cpu"` samples the real server's on-CPU stacks over
//! the measured window (perf against a MariaDB in a container), keeps them folded as the
//! trial's `profile.folded` with the server binary's symbols resolved, and says in the record
//! what sampled them; `cairn profile` prints a cell's top functions and `cairn diff-profile`
//! what changed between two cells; a `profile` analysis puts each server's flame graph and
//! the differential table into the report; where perf cannot run, the trial is measured and its record says why it
//! has no profile, never silently.

use std::time::Duration;

use crate::support::{engine_shared, Sandbox};
use crate::trials::images;

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

fn plan(servers: &str, extra: &str) -> String {
    format!(
        r#"study "e2e-profiles"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "t" {{ extends "s"; option query_cache_type=1 query_cache_size="16M" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ro" {{ sysbench "oltp_read_only"; threads 2; duration "3s"; warmup "1s" }}
trials "ro" {{ servers {servers}; dataset "sb"; workload "ro"; profile "cpu" }}
{extra}
"#,
        images()
    )
}

/// The `n` stacks of a folded profile with the most samples, heaviest first (what a failed
/// assertion shows: the alphabetical first lines are the shallow ones).
fn heaviest(folded: &str, n: usize) -> String {
    let mut stacks: Vec<(u64, &str)> = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(stack, count)| (count.parse().unwrap_or(0), stack))
        .collect();
    stacks.sort_by(|a, b| b.cmp(a));
    stacks
        .iter()
        .take(n)
        .map(|(count, stack)| format!("{count} {stack}\n"))
        .collect()
}

#[test]
fn a_profiled_trial_keeps_the_servers_stacks_with_its_symbols() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &plan(
            r#""s" "t""#,
            r#"analysis "where" { trials "ro"; profile baseline="s" top=6; }
report "r" { analyses "where"; }"#,
        ),
    );
    sb.cairn(["run", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let rec = sb.record("trial/ro/s");
    let p = &rec["extra"]["profile"];
    assert_eq!(p["kind"], "cpu", "{p}");
    assert_eq!(p["event"], "cpu-clock", "{p}");
    // two client threads keep the server busy for 3 s: hundreds of samples at 199 Hz
    let samples = p["samples"].as_u64().unwrap_or(0);
    assert!(samples > 50, "{p}");
    let folded = sb
        .cairn(["cat", "plan.kdl", "trial/ro/s", "profile.folded"])
        .guard(GUARD)
        .run();
    folded.expect_code(0);
    let total: u64 = folded
        .stdout
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, samples);
    // the server's own functions, resolved in the container's binary: the query path
    assert!(
        folded.stdout.contains("dispatch_command") || folded.stdout.contains("do_command"),
        "{total} samples, none on the query path; the heaviest stacks:\n{}",
        heaviest(&folded.stdout, 20)
    );

    let top = sb
        .cairn(["profile", "plan.kdl", "trial/ro/s", "--top", "5"])
        .guard(GUARD)
        .run();
    top.expect_code(0);
    eprintln!("{}", top.stdout);
    assert!(
        top.stdout.starts_with(&format!(
            "trial/ro/s: {samples} samples over 1 pass (cpu-clock at 199 Hz)"
        )),
        "{}",
        top.stdout
    );
    // a header and five functions
    assert_eq!(top.stdout.lines().count(), 7, "{}", top.stdout);

    let diff = sb
        .cairn([
            "diff-profile",
            "plan.kdl",
            "trial/ro/s",
            "trial/ro/t",
            "--top",
            "5",
        ])
        .guard(GUARD)
        .run();
    diff.expect_code(0);
    eprintln!("{}", diff.stdout);
    assert!(diff.stdout.contains("Δ pts"), "{}", diff.stdout);
    assert_eq!(diff.stdout.lines().count(), 7, "{}", diff.stdout);

    // a trial that was not profiled, or an address that names none, is said
    let none = sb
        .cairn(["profile", "plan.kdl", "trial/nothing"])
        .guard(GUARD)
        .run();
    none.expect_code(2);
    assert!(none.stderr.contains("names no trial"), "{}", none.stderr);

    // the report: a section with the differential table and a flame graph per server and
    // per variant, written beside it
    sb.cairn(["report", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let dir = sb.path().join("results/e2e-profiles");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    // the design says which passes paid for the profiler
    assert!(
        md.contains("Profiled over each measured window: on-CPU stacks of every server"),
        "{md}"
    );
    let section = md
        .split("## Where the time went")
        .nth(1)
        .unwrap_or_else(|| panic!("no profile section:\n{md}"));
    assert!(
        section.contains("| function | s self % | t self % | Δ points | s µs/tx | t µs/tx |"),
        "{section}"
    );
    for file in [
        "profile-where-flame-s.svg",
        "profile-where-flame-t.svg",
        "profile-where-flame-diff-t.svg",
    ] {
        assert!(section.contains(&format!("]({file})")), "{file}: {section}");
        let svg = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<title>"), "{file}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Where the time went"));
    // a profile of trials that record none is refused at check, at its analysis
    sb.write(
        "unprofiled.kdl",
        &plan(r#""s""#, r#"analysis "where" { trials "ro"; profile; }"#)
            .replace(r#"; profile "cpu" }"#, " }"),
    );
    let bad = sb.cairn(["check", "unprofiled.kdl"]).guard(GUARD).run();
    bad.expect_code(2);
    assert!(bad.stderr.contains("records none"), "{}", bad.stderr);
}

#[test]
fn a_trial_that_cannot_profile_is_measured_and_says_why() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan(r#""s""#, ""));
    sb.cairn(["run", "plan.kdl"])
        .env("CAIRN_PERF", "/nonexistent/perf")
        .guard(GUARD)
        .run()
        .expect_code(0);
    let rec = sb.record("trial/ro/s");
    assert!(rec["extra"]["figures"]["tps"].as_f64().unwrap() > 0.0);
    let absent = rec["extra"]["profile"]["absent"].as_str().unwrap_or("");
    assert!(
        absent.starts_with("not profiled: cannot start `perf record`"),
        "{}",
        rec["extra"]["profile"]
    );
    assert!(rec["outputs"].get("profile.folded").is_none(), "{rec}");
    // and `cairn profile` says why there is nothing to show
    let top = sb
        .cairn(["profile", "plan.kdl", "trial/ro/s"])
        .guard(GUARD)
        .run();
    top.expect_code(1);
    assert!(
        top.stderr
            .contains("has no profile: not profiled: cannot start `perf record`"),
        "{}",
        top.stderr
    );
}

/// `profile "waits"`: a MariaDB (and a MySQL) trial switches the performance schema on and
/// keeps the time its sessions waited per event over the window; a PostgreSQL trial samples
/// `pg_stat_activity` and keeps the session time per wait event (`CPU:running` for none).
/// A `profile` analysis of them compares the wait events (no flame graphs without stacks).
#[test]
fn waits_are_read_over_the_window_from_each_servers_own_statistics() {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    cairn_testkit::postgresql_image();
    cairn_testkit::mysql_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-waits"
import "{}"
import "{}"
import "{}"
server "m" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "my" {{ image "mysql-sid"; system "mysql"; option innodb_buffer_pool_size="64M" innodb_redo_log_capacity="8M"; profile "waits" }}
server "n" {{ extends "m"; option innodb_spin_wait_delay=0 }}
server "pg" {{ image "postgresql-bookworm"; system "postgresql"; option shared_buffers="32MB"; profile "waits" }}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "rw" {{ sysbench "oltp_read_write"; threads 4; duration "3s"; warmup "1s" }}
trials "rw" {{ servers "m" "n"; dataset "sb"; workload "rw"; profile "waits" "cpu" }}
trials "pg" {{ servers "pg" "my"; dataset "sb"; workload "rw" }}
analysis "waits" {{ trials "rw"; profile baseline="m" top=5; }}
report "r" {{ analyses "waits"; }}
"#,
            images(),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("images/postgresql.kdl")
                .display(),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("images/mysql.kdl")
                .display()
        ),
    );
    sb.cairn(["run", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let rec = sb.record("trial/rw/m");
    let w = &rec["extra"]["waits"];
    assert_eq!(
        w["source"],
        "performance_schema.events_waits_summary_by_user_by_event_name, client sessions",
        "{w}"
    );
    assert!(w["total_us"].as_u64().unwrap_or(0) > 0, "{w}");
    assert_eq!(
        rec["extra"]["profile"]["kind"], "cpu",
        "both profiles: {rec}"
    );
    let folded = sb
        .cairn(["cat", "plan.kdl", "trial/rw/m", "waits.folded"])
        .guard(GUARD)
        .run();
    folded.expect_code(0);
    // read-write on InnoDB: its file and synchronisation waits are timed
    assert!(folded.stdout.contains("wait/"), "{}", folded.stdout);
    assert!(!folded.stdout.contains("\nidle "), "{}", folded.stdout);
    // the CLI reads them with --waits: a cell's events, and what changed between two
    let top = sb
        .cairn(["profile", "plan.kdl", "trial/rw/m", "--waits", "--top", "3"])
        .guard(GUARD)
        .run();
    top.expect_code(0);
    assert!(
        top.stdout.contains(" µs waited over 1 pass"),
        "{}",
        top.stdout
    );
    assert!(top.stdout.contains("wait event"), "{}", top.stdout);
    let diff = sb
        .cairn([
            "diff-profile",
            "plan.kdl",
            "trial/rw/m",
            "trial/rw/n",
            "--waits",
        ])
        .guard(GUARD)
        .run();
    diff.expect_code(0);
    assert!(
        diff.stdout.contains("µs waited per transaction"),
        "{}",
        diff.stdout
    );
    // a block that reads no waits says so
    let none = sb
        .cairn(["profile", "plan.kdl", "trial/pg/pg"])
        .guard(GUARD)
        .run();
    none.expect_code(1);
    assert!(
        none.stderr
            .contains("asks for no profile (add `profile \"cpu\"`"),
        "{}",
        none.stderr
    );

    let pg = sb.record("trial/pg/pg");
    let w = &pg["extra"]["waits"];
    assert_eq!(w["source"], "pg_stat_activity, sampled every 50 ms", "{w}");
    assert!(w["samples"].as_u64().unwrap_or(0) > 20, "{w}");
    let folded = sb
        .cairn(["cat", "plan.kdl", "trial/pg/pg", "waits.folded"])
        .guard(GUARD)
        .run();
    folded.expect_code(0);
    assert!(folded.stdout.contains("CPU:running "), "{}", folded.stdout);

    // MySQL: the same performance schema path as MariaDB's
    let my = sb.record("trial/pg/my");
    let w = &my["extra"]["waits"];
    assert!(w["total_us"].as_u64().unwrap_or(0) > 0, "{w}");
    assert_eq!(
        my["extra"]["profile"],
        serde_json::Value::Null,
        "waits only: no on-CPU profile"
    );

    sb.cairn(["report", "plan.kdl"])
        .guard(GUARD)
        .run()
        .expect_code(0);
    let md = std::fs::read_to_string(sb.path().join("results/e2e-waits/report.md")).unwrap();
    assert!(
        md.contains(
            "Profiled over each measured window: on-CPU stacks and wait statistics of every server"
        ),
        "{md}"
    );
    let section = md
        .split("## Where the time went")
        .nth(1)
        .unwrap_or_else(|| panic!("no profile section:\n{md}"));
    assert!(
        section.contains("| wait event | m µs/tx | n µs/tx |"),
        "{section}"
    );
}
