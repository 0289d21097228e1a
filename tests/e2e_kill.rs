//! End-to-end: a run that dies (SIGKILL) or is interrupted (SIGINT) in the middle leaves
//! a store that verifies clean, and the next run completes, reusing what was recorded.

mod common;

use std::time::{Duration, Instant};

use common::{leftovers_after, reap, unique_marker, Live, Sandbox};
use serde_json::Value;

const STEPS: usize = 30;

/// `STEPS` independent steps of ~0.2 s each, plus nothing else. `extra` goes into every
/// command before the output is written.
fn many_steps(marker: &str, extra: &str) -> String {
    let points: Vec<String> = (1..=STEPS).map(|i| i.to_string()).collect();
    format!(
        r#"study "kill"
step "w" {{
    run "sleep 0.2; {extra} echo $CAIRN_PARAM_I > o.txt"
    output "o.txt"
    env E2E_MARK="{marker}"
    matrix {{ i {} }}
}}
"#,
        points.join(" ")
    )
}

fn is_finished(v: &Value) -> bool {
    v["event"] == "step_finished"
}

fn is_started(v: &Value) -> bool {
    v["event"] == "step_started"
}

#[test]
fn sigkill_mid_run_then_the_next_run_completes_the_rest() {
    let sb = Sandbox::new();
    let marker = unique_marker("kill");
    sb.write("p.kdl", &many_steps(&marker, ""));

    let mut live = Live::spawn(sb.command(&["--json"], &["run", "p.kdl", "-j", "2"]));
    live.wait_for(4, Duration::from_secs(30), is_finished);
    live.signal(libc::SIGKILL);
    let r = live.finish(Duration::from_secs(20));
    assert_eq!(r.code, None, "killed by a signal: {r:?}");
    let seen_finished = common::parse_json_lines(&r.stdout)
        .iter()
        .filter(|v| is_finished(v))
        .count();
    assert!(seen_finished >= 4);
    // orphaned 0.2 s sleeps end by themselves; let them go before looking at the store
    let _ = leftovers_after(&marker, Duration::from_secs(5));
    reap(&marker);

    // every step reported finished has its record
    assert!(
        sb.record_count() >= seen_finished,
        "{} records, {seen_finished} finished",
        sb.record_count()
    );

    // the killed run left working directories behind (its pid is in their names)
    let work_dirs = || {
        std::fs::read_dir(sb.cache().join("work"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert!(
        work_dirs() > 0,
        "the killed run's working directories are there"
    );

    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(
        work_dirs(),
        0,
        "the next run removed the stale working directories"
    );
    let (ran, cached) = (ev.count("ran"), ev.count("cached"));
    assert_eq!(ran + cached, STEPS as u64, "{}", ev.summary());
    assert!(ran < STEPS as u64, "{}", ev.summary());
    assert!(cached >= seen_finished as u64, "{}", ev.summary());
    assert_eq!(sb.record_count(), STEPS);

    let v = sb.verify();
    v.expect_code(0);

    // and everything is cached now
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0);
}

#[test]
fn sigint_mid_run_exits_130_cleanly() {
    let sb = Sandbox::new();
    let marker = unique_marker("int");
    // while the flag file exists, steps hang in a long sleep after their first 0.2 s
    let flag = sb.path().join("hang-flag");
    let extra = format!("if [ -e '{}' ]; then sleep 30; fi;", flag.display());
    sb.write("p.kdl", &many_steps(&marker, &extra));

    let mut live = Live::spawn(sb.command(&["--json"], &["run", "p.kdl", "-j", "2"]));
    live.wait_for(3, Duration::from_secs(30), is_finished);
    std::fs::write(&flag, "").expect("flag");
    // a step started after the flag certainly hangs; by then (0.2 s later) it sleeps 30 s
    let started_before = live
        .seen
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| is_started(&v)))
        .count();
    live.wait_for(started_before + 1, Duration::from_secs(30), is_started);
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !common::processes_with(&marker).is_empty(),
        "some step command should be running now"
    );

    let t0 = Instant::now();
    live.signal(libc::SIGINT);
    let r = live.finish(Duration::from_secs(20));
    // a hang guard, not a timing claim: the 30 s sleeps must not be waited for
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(r.code, Some(130), "{r:?}");

    let left = leftovers_after(&marker, Duration::from_secs(3));
    reap(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");

    let events = common::parse_json_lines(&r.stdout);
    let finished = events.iter().filter(|v| is_finished(v)).count();
    if let Some(last) = events.last().filter(|v| v["event"] == "run_finished") {
        assert_eq!(last["summary"]["cancelled"], true, "{last}");
    }
    // nothing half-recorded: exactly the finished steps have records, and they verify
    assert_eq!(sb.record_count(), finished);
    sb.verify().expect_code(0);

    std::fs::remove_file(&flag).expect("remove flag");
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(
        ev.count("ran") + ev.count("cached"),
        STEPS as u64,
        "{}",
        ev.summary()
    );
    assert_eq!(ev.count("cached"), finished as u64, "{}", ev.summary());
    assert_eq!(sb.record_count(), STEPS);
    sb.verify().expect_code(0);
}
