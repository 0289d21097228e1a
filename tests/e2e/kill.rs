//! End-to-end: a run that dies (SIGKILL) or is interrupted (SIGINT, SIGTERM, SIGHUP) in the
//! middle leaves a store that verifies clean, and the next run completes, reusing what was
//! recorded; SIGTERM and SIGHUP during a trial on a real MariaDB server stop it like Ctrl-C
//! (exit 130, server container, network and socket directory removed, nothing recorded).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{
    engine_exclusive, engine_shared, leftovers_after, parse_json_lines, processes_with, reap,
    unique_marker, Live, Sandbox,
};
use crate::trials::{containers_of, images, long_trial_plan, networks_of, trial_running};

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

/// Writes the [`many_steps`] plan whose steps hang in a long sleep after their first 0.2 s
/// while the returned flag file exists.
fn hanging_steps(sb: &Sandbox, marker: &str) -> std::path::PathBuf {
    let flag = sb.path().join("hang-flag");
    let extra = format!("if [ -e '{}' ]; then sleep 30; fi;", flag.display());
    sb.write("p.kdl", &many_steps(marker, &extra));
    flag
}

/// Raises `flag` and returns once a step started after it hangs: such a step certainly
/// sleeps 30 s from 0.2 s after its start, so a signal sent now lands while a step runs.
fn hang_from_now(live: &mut Live, flag: &std::path::Path) {
    std::fs::write(flag, "").expect("flag");
    let started_before = live
        .seen
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| is_started(&v)))
        .count();
    live.wait_for(started_before + 1, Duration::from_secs(30), is_started);
    std::thread::sleep(Duration::from_millis(600));
}

#[test]
fn sigkill_mid_run_then_the_next_run_completes_the_rest() {
    let sb = Sandbox::new();
    let marker = unique_marker("kill");
    let flag = hanging_steps(&sb, &marker);

    let mut live = sb.run("p.kdl").args(["-j", "2"]).spawn();
    live.wait_for(4, Duration::from_secs(30), is_finished);
    // the kill lands while a step runs (its working directory exists), not between two steps
    hang_from_now(&mut live, &flag);
    live.signal(libc::SIGKILL);
    let r = live.finish(Duration::from_secs(20));
    assert_eq!(r.code, None, "killed by a signal: {r:?}");
    let seen_finished = parse_json_lines(&r.stdout)
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

    std::fs::remove_file(&flag).expect("flag");
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
    interrupted_mid_run_exits_130_cleanly(libc::SIGINT, "int");
}

/// `timeout`, CI cancellation and service managers send SIGTERM: it stops a run like Ctrl-C.
#[test]
fn sigterm_mid_run_exits_130_cleanly() {
    interrupted_mid_run_exits_130_cleanly(libc::SIGTERM, "term");
}

/// A closed terminal sends SIGHUP: it stops a run like Ctrl-C.
#[test]
fn sighup_mid_run_exits_130_cleanly() {
    interrupted_mid_run_exits_130_cleanly(libc::SIGHUP, "hup");
}

/// Send `signal` while steps run: the run ends with 130, no process is left, exactly the
/// finished steps are recorded, and the next run completes the rest.
fn interrupted_mid_run_exits_130_cleanly(signal: libc::c_int, name: &str) {
    let sb = Sandbox::new();
    let marker = unique_marker(name);
    let flag = hanging_steps(&sb, &marker);

    let mut live = sb.run("p.kdl").args(["-j", "2"]).spawn();
    live.wait_for(3, Duration::from_secs(30), is_finished);
    hang_from_now(&mut live, &flag);
    assert!(
        !processes_with(&marker).is_empty(),
        "some step command should be running now"
    );

    let t0 = Instant::now();
    live.signal(signal);
    let r = live.finish(Duration::from_secs(20));
    // a hang guard, not a timing claim: the 30 s sleeps must not be waited for
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(r.code, Some(130), "{r:?}");

    let left = leftovers_after(&marker, Duration::from_secs(3));
    reap(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");

    let events = parse_json_lines(&r.stdout);
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

/// SIGTERM (`timeout`, CI cancellation, service managers) while a trial's real MariaDB
/// server runs: the run stops like Ctrl-C.
#[test]
fn sigterm_mid_trial_removes_the_server_and_records_nothing() {
    stop_signal_mid_trial(libc::SIGTERM, "e2e-sigterm");
}

/// SIGHUP (a closed terminal) while a trial's real MariaDB server runs.
#[test]
fn sighup_mid_trial_removes_the_server_and_records_nothing() {
    stop_signal_mid_trial(libc::SIGHUP, "e2e-sighup");
}

/// Send `signal` while the workload of a five-minute trial runs against a real server:
/// the run exits 130 at once, its server container, run network, socket directory and
/// host datadir are gone, the trial is not recorded, the store verifies clean, and the dataset recorded
/// before stays usable.
fn stop_signal_mid_trial(signal: libc::c_int, study: &str) {
    let _engine = engine_shared();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    // cairn's own temp directory, so its run directories are not mixed with other tests'
    let tmp = sb.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    sb.write("plan.kdl", &long_trial_plan(study, "5m"));
    let live = sb
        .run("plan.kdl")
        .env("TMPDIR", &tmp.display().to_string())
        .spawn();
    let (live, pid) = trial_running(live);
    let socket_dirs = || {
        std::fs::read_dir(&tmp)
            .expect("tmp")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("cairn-run-{pid}-")))
            .collect::<Vec<_>>()
    };
    assert!(!containers_of(pid).is_empty(), "the server runs");
    // the server's socket directory and (as root) its datadir on the host
    assert!(!socket_dirs().is_empty(), "the server's directories");

    let t0 = Instant::now();
    live.signal(signal);
    let r = live.finish(Duration::from_secs(120));
    // a hang guard, not a timing claim: the five-minute workload is not waited for
    assert!(t0.elapsed() < Duration::from_secs(120));
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
    assert!(socket_dirs().is_empty(), "{:?}", socket_dirs());
    assert!(
        sb.records_of("trial/t/s").is_empty(),
        "nothing half-recorded"
    );
    assert_eq!(
        sb.records_of("dataset/sb@s").len(),
        1,
        "the dataset finished"
    );
    sb.verify().expect_code(0);
}

/// A closed terminal: SIGHUP arrives and stderr (the log lines) can no longer be written.
/// The run still stops cleanly with 130 — it does not panic on the lost stream and leave
/// its work behind — and the next run completes the rest.
#[test]
fn sighup_after_the_terminal_is_gone_still_stops_cleanly() {
    let sb = Sandbox::new();
    let marker = unique_marker("hupgone");
    sb.write("p.kdl", &many_steps(&marker, ""));
    // log lines on stderr (no --json), whose reader goes away at once
    let mut cmd = sb.cairn(["run", "p.kdl", "-j", "2"]).command();
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn cairn");
    drop(child.stderr.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while sb.record_count() < 2 && child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "no step finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGHUP);
    }
    let status = crate::support::wait_status(&mut child, Duration::from_secs(20))
        .expect("cairn exits (hang guard)");
    assert_eq!(status.code(), Some(130), "{status:?}");
    let left = leftovers_after(&marker, Duration::from_secs(3));
    reap(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");
    sb.verify().expect_code(0);
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran") + ev.count("cached"), STEPS as u64);
    assert_eq!(sb.record_count(), STEPS);
}

/// What a killed run asked the engine for may appear only after the next run's sweep at its
/// start (the engine finishes a create request whose client died): the run sweeps once more
/// at its end. Here a step makes such a late leftover — a network labelled with a run whose
/// process cannot exist — while the run is under way.
#[test]
fn a_run_removes_what_a_killed_run_left_late_when_it_ends() {
    // another Docker run starting in between would remove the network first
    let _engine = engine_exclusive();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    let name = unique_marker("late");
    sb.write(
        "p.kdl",
        &format!(
            r#"study "e2e-late"
import "{}"
// a server makes the plan one that uses the container engine
server "s" {{ image "mariadb-bookworm" }}
step "late" {{
    run "docker network create --label cairn.run=run-4294967295-5 {name} > /dev/null; echo ok > o.txt"
    output "o.txt"
}}
"#,
            images()
        ),
    );
    // (the run says it removed the network; not asserted: any cairn run of another test
    // process starting meanwhile would remove it first, as it should)
    let r = sb.run("p.kdl").guard(Duration::from_secs(300)).success();
    let left = std::process::Command::new("docker")
        .args(["network", "ls", "-q", "--filter"])
        .arg(format!("name=^{name}$"))
        .output()
        .expect("docker CLI");
    let left = String::from_utf8_lossy(&left.stdout).trim().to_string();
    if !left.is_empty() {
        // never leak it, whatever the outcome
        let _ = std::process::Command::new("docker")
            .args(["network", "rm", &name])
            .output();
    }
    assert!(left.is_empty(), "the late network is left\n{}", r.stderr);
}
