//! End-to-end: datasets and trials through the real `cairn` binary, real Docker and real MariaDB — servers from plan `server` nodes (TCP, socket, TLS; system, tcmalloc and jemalloc; amd64 and i386; the process executor), the variant recorded and checked, the second run served from the cache, `cairn results`, a server's own error for a bad option value, a typo'd option name refused after the image build and before the load (and then by `cairn check`), options my.cnf cannot hold and driver parameters checked before a run, and a SIGKILLed run's containers removed by the next run; a server paused mid-trial fails the trial (the watchdog), which is never recorded, and a run a count ends stops at its `timeout`.
//!
//! Plans import the shipped `images/mariadb.kdl`, whose amd64 image is the one every test
//! suite shares (`cairn_testkit`); it is built once per machine (a minute) and then reused.
//! Workloads are tiny (a second each): these tests check behaviour, never speed.

use std::path::Path;
use std::process::Command;
use std::sync::RwLockReadGuard;
use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_exclusive, engine_shared, set, Events, Live, Ran, Sandbox};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(600);

pub(crate) fn images() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("images/mariadb.kdl")
        .display()
        .to_string()
}

/// The shared image exists before any test's cairn needs it (one build, not one per test);
/// the returned guard holds the engine shared for the test (`cairn clean` waits for it).
fn image_ready() -> RwLockReadGuard<'static, ()> {
    let engine = engine_shared();
    cairn_testkit::mariadb_image();
    engine
}

fn cairn(sb: &Sandbox, global: &[&str], args: &[&str]) -> Ran {
    sb.cairn(global.iter().chain(args).copied())
        .guard(GUARD)
        .run()
}

fn run_json(sb: &Sandbox, plan: &str, extra: &[&str]) -> (Ran, Events) {
    let mut args = vec!["run", plan];
    args.extend_from_slice(extra);
    let r = cairn(sb, &["--json"], &args);
    let ev = r.events();
    (r, ev)
}

/// The only record of `address`.
fn record(sb: &Sandbox, address: &str) -> Value {
    sb.record(address)
}

/// Container names labelled with a run id of process `pid` (`run-<pid>-…`).
pub(crate) fn containers_of(pid: u32) -> Vec<String> {
    run_containers_field(pid, "{{.Names}}")
}

/// The step labels of the containers of the runs of process `pid` (`trial/…`, `dataset/…`), so a
/// test can wait for one step's containers rather than any of the run's.
pub(crate) fn container_steps_of(pid: u32) -> Vec<String> {
    run_containers_field(pid, "{{.Label \"cairn.step\"}}")
}

/// One field (a `docker ps` format) of each container of the runs of process `pid`.
fn run_containers_field(pid: u32, field: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-a", "--filter", "label=cairn.run", "--format"])
        .arg(format!("{{{{.Label \"cairn.run\"}}}} {field}"))
        .output()
        .expect("docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("run-{pid}-")))
        .map(|l| l.split_once(' ').map_or("", |(_, f)| f).to_string())
        .collect()
}

/// Network names of the runs of process `pid`.
pub(crate) fn networks_of(pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "network",
            "ls",
            "--filter",
            "label=cairn.run",
            "--format",
            "{{.Name}}",
        ])
        .output()
        .expect("docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("cairn-run-{pid}-")))
        .map(String::from)
        .collect()
}

const SERVERS: &str = r#"
server "system" {
    image "mariadb-bookworm"
    option innodb_buffer_pool_size="64M" max_connections=50 skip-name-resolve=#true
    connect "tcp"
}
server "tcmalloc" { extends "system"; allocator "tcmalloc"; connect "socket" }
server "jemalloc" { extends "system"; allocator "jemalloc"; connect "tls" }
dataset "sb" { sysbench tables=1 rows=500 }
workload "ps" {
    sysbench "oltp_point_select"
    threads 2
    duration "1s"
}
"#;

#[test]
fn trials_verify_their_variant_and_are_cached() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            "study \"e2e-trials\"\nimport \"{}\"\n{SERVERS}\ntrials \"t\" {{ servers \"system\" \"tcmalloc\" \"jemalloc\"; dataset \"sb\"; workload \"ps\" }}\n",
            images()
        ),
    );
    let (r, ev) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(0);
    let trials = set(["trial/t/system", "trial/t/tcmalloc", "trial/t/jemalloc"]);
    let finished = ev.finished();
    for t in &trials {
        assert!(finished.contains(t), "{t} ran: {finished:?}\n{}", r.stderr);
    }
    // every trial printed its headline as it finished
    for e in ev.of("step_finished") {
        if e["kind"] == "trial" {
            assert!(e["headline"].as_str().unwrap().contains(" tps"), "{e}");
        }
    }

    for (address, allocator, lib) in [
        ("trial/t/system", "system", None),
        ("trial/t/tcmalloc", "tcmalloc", Some("libtcmalloc")),
        ("trial/t/jemalloc", "jemalloc", Some("libjemalloc")),
    ] {
        let rec = record(&sb, address);
        let v = &rec["extra"]["variant"];
        assert_eq!(v["allocator"], allocator, "{address}: {v}");
        assert_eq!(v["checks"]["word_size"], 64, "{v}");
        assert_eq!(v["checks"]["compile_machine"], "x86_64", "{v}");
        assert!(v["checks"]["version"].as_str().unwrap().contains("MariaDB"));
        let mapped: Vec<&str> = v["checks"]["allocators"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["mapped"] == true)
            .map(|a| a["library"].as_str().unwrap())
            .collect();
        match lib {
            None => assert!(mapped.is_empty(), "{address}: nothing preloaded: {v}"),
            Some(l) => assert_eq!(mapped, [l], "{address}: {v}"),
        }
        // the server says so too
        let malloc = v["checks"]["malloc_library"].as_str().unwrap();
        assert!(
            malloc.contains(if allocator == "system" {
                "system"
            } else {
                allocator
            }),
            "{malloc}"
        );
        let figures = &rec["extra"]["figures"];
        assert!(figures["tps"].as_f64().unwrap() > 0.0, "{figures}");
        assert_eq!(figures["errors"], 0.0);
        // the fingerprint keeps the runtime's class ("docker <major>.<minor>"); the exact
        // engine version is in the record's machine details
        let runtime = rec["fingerprint"]["runtime"].as_str().unwrap();
        assert!(runtime.starts_with("docker "), "{runtime}");
        for out in [
            "figures.json",
            "metrics.json",
            "server.json",
            "variables.json",
            "server.log",
        ] {
            assert!(rec["outputs"][out].is_object(), "{address} has {out}");
        }
    }
    // the TLS trial ran over TLS: the server counted TLS handshakes during the workload
    let server_json = cairn(
        &sb,
        &[],
        &["cat", "plan.kdl", "trial/t/jemalloc", "server.json"],
    );
    server_json.expect_code(0);
    let sj: Value = serde_json::from_str(&server_json.stdout).unwrap();
    assert!(
        sj["status_deltas"]["Ssl_accepts"].as_f64().unwrap_or(0.0) >= 2.0,
        "{}",
        sj["status_deltas"]
    );
    assert!(sj["status_deltas"]["Com_select"].as_f64().unwrap() > 0.0);

    // nothing of the run is left in the engine
    let pid = r.pid.expect("pid");
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));

    // second run: everything from the cache, headlines shown again
    let (r2, ev2) = run_json(&sb, "plan.kdl", &[]);
    r2.expect_code(0);
    assert!(ev2.finished().is_empty(), "{:?}", ev2.finished());
    for t in &trials {
        assert!(ev2.cached().contains(t));
    }
    let cached_trial = ev2
        .of("step_cached")
        .into_iter()
        .find(|e| e["step"] == "trial/t/system")
        .unwrap()
        .clone();
    assert!(cached_trial["headline"].as_str().unwrap().contains("tps"));

    // `cairn results`: a table, CSV and JSON of the same trials
    let table = cairn(&sb, &[], &["results", "plan.kdl"]);
    table.expect_code(0);
    assert!(table.stdout.contains("tps") && table.stdout.contains("jemalloc"));
    assert!(
        table.stdout.contains("3 of 3 trials measured"),
        "{}",
        table.stdout
    );
    let csv = cairn(&sb, &[], &["results", "plan.kdl", "--csv"]);
    csv.expect_code(0);
    let mut lines = csv.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(
        header.contains(&"tps") && header.contains(&"threads"),
        "{header:?}"
    );
    assert_eq!(lines.count(), 3);
    let json = cairn(&sb, &["--json"], &["results", "plan.kdl"]);
    let rows = json.json_lines();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["state"] == "cached"));
    assert!(rows.iter().any(|r| r["allocator"] == "tcmalloc"));

    // the machine-local snapshots are gone (a cleared cache): no trial that reads them
    // runs, so nothing asks for them and nothing runs
    let snapshots = sb.cache().join("datasets");
    assert_eq!(std::fs::read_dir(&snapshots).unwrap().count(), 3);
    std::fs::remove_dir_all(&snapshots).unwrap();
    let status_of = |plan: &[Value], address: &str| {
        plan.iter()
            .find(|s| s["address"] == address)
            .unwrap()
            .clone()
    };
    let plan = sb.plan_json("plan.kdl");
    assert_eq!(status_of(&plan, "dataset/sb@system")["status"], "cached");
    let (r3, ev3) = run_json(&sb, "plan.kdl", &[]);
    r3.expect_code(0);
    assert!(ev3.finished().is_empty(), "{:?}", ev3.finished());
    // a trial that runs again needs its snapshot, and so do the others at its point, which
    // an earlier run measured: they are measured anew beside it (a comparison uses
    // measurements made together), so every dataset is loaded again first (the data are the
    // same, so the trials' keys are too)
    let plan = sb.plan_json_with("plan.kdl", &["--fresh", "trial/t/system"]);
    for server in ["system", "tcmalloc", "jemalloc"] {
        let ds = status_of(&plan, &format!("dataset/sb@{server}"));
        assert_eq!(ds["status"], "run", "{ds}");
        assert_eq!(ds["reasons"][0]["reason"], "unusable", "{ds}");
        assert_eq!(ds["reasons"][0]["what"], "snapshot_missing", "{ds}");
    }
    let tc = status_of(&plan, "trial/t/tcmalloc");
    assert_eq!(tc["reasons"][0]["reason"], "measured_anew", "{tc}");
    let (r4, ev4) = run_json(&sb, "plan.kdl", &["--fresh", "trial/t/system"]);
    r4.expect_code(0);
    assert_eq!(
        ev4.finished(),
        set([
            "dataset/sb@system",
            "dataset/sb@tcmalloc",
            "dataset/sb@jemalloc",
            "trial/t/system",
            "trial/t/tcmalloc",
            "trial/t/jemalloc",
        ]),
        "{}",
        r4.stderr
    );
    assert_eq!(
        ev4.addresses("measured_anew"),
        set(["trial/t/tcmalloc", "trial/t/jemalloc"])
    );
    assert_eq!(
        ev4.addresses("step_unserved"),
        set([
            "dataset/sb@system",
            "dataset/sb@tcmalloc",
            "dataset/sb@jemalloc"
        ])
    );
}

#[test]
fn a_fully_cached_run_needs_no_container_engine() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            "study \"e2e-no-engine\"\nimport \"{}\"\n{SERVERS}\ntrials \"t\" {{ servers \"system\" \"jemalloc\"; dataset \"sb\"; workload \"ps\"; passes 2 }}\nanalysis \"tps\" {{ table metric=\"tps\" rows=\"server\" columns=\"threads\" baseline=\"system\" }}\n",
            images()
        ),
    );
    // this test's engine address: the real engine behind a socket the test can take away
    let mut proxy = crate::support::EngineProxy::start(&sb.path().join("docker.sock"));
    let host = proxy.host();
    let cairn_at = |args: &[&str]| {
        sb.cairn(args.iter().copied())
            .env("DOCKER_HOST", &host)
            .guard(GUARD)
            .run()
    };
    let first = cairn_at(&["--json", "run", "plan.kdl"]);
    first.expect_code(0);
    assert_eq!(first.events().finished().len(), 8, "{}", first.stderr);
    let results = |r: &Ran| {
        r.expect_code(0);
        r.json_lines()
            .into_iter()
            .map(|row| (row["address"].clone(), row["figures"]["tps"].clone()))
            .collect::<Vec<_>>()
    };
    let measured = results(&cairn_at(&["--json", "results", "plan.kdl"]));
    assert_eq!(measured.len(), 4);

    // the engine is gone from that address (stopped, as far as cairn can tell)
    proxy.stop();
    let again = cairn_at(&["--json", "run", "plan.kdl"]);
    again.expect_code(0);
    let ev = again.events();
    assert!(
        ev.finished().is_empty(),
        "{:?}\n{}",
        ev.finished(),
        again.stderr
    );
    assert_eq!(ev.cached().len(), 8, "{}", again.stderr);
    assert_eq!(
        results(&cairn_at(&["--json", "results", "plan.kdl"])),
        measured
    );
    let shown = cairn_at(&["run", "plan.kdl"]);
    shown.expect_code(0);
    assert!(shown.stdout.contains("| system |"), "{}", shown.stdout);
    // the machine's class is the one the engine had when it last answered here
    let machine = cairn_at(&["--json", "machine"]);
    machine.expect_code(0);
    let m: Value = serde_json::from_str(&machine.stdout).unwrap();
    assert!(
        m["details"]["runtime_note"]
            .as_str()
            .unwrap()
            .contains("last seen"),
        "{m}"
    );
    // and what would need the engine says so
    let fresh = cairn_at(&["run", "plan.kdl", "--fresh", "trial/t/system#1"]);
    assert_ne!(fresh.code, Some(0));
    assert!(fresh.stderr.contains("Docker"), "{}", fresh.stderr);
}

/// An option the server takes, with a value it refuses, fails the dataset with the server's
/// own words (a name it does not take is refused before it starts: see the next test).
#[test]
fn an_invalid_option_fails_with_the_servers_own_error() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-badopt"
import "{}"
server "bad" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" default_storage_engine="no_such_engine" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "ps" {{ sysbench "oltp_point_select"; duration "1s" }}
trials "t" {{ servers "bad"; dataset "sb"; workload "ps" }}
"#,
            images()
        ),
    );
    let (r, ev) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(1);
    assert_eq!(ev.failed(), set(["dataset/sb@bad"]));
    let err = ev.of("step_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains("Unknown/unsupported storage engine: no_such_engine"),
        "the server's own words: {err}"
    );
    let pid = r.pid.expect("pid");
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

/// A typo'd option name (`innodb_bufer_pool_size`): `cairn check` cannot know it before the
/// image is built and says so; the run refuses it right after the build, before the dataset
/// loads (the server never starts); then `cairn check` refuses it at the option with the name
/// the server takes (exit 2), from the list the run kept in the store.
#[test]
fn a_typo_in_an_option_name_is_refused_before_the_load_and_then_by_check() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-typo-option"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_bufer_pool_size="64M" max-connections=50 skip-name-resolve=#true loose-no-such-plugin-option=1 }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "ps" {{ sysbench "oltp_point_select"; duration "1s" }}
trials "t" {{ servers "s"; dataset "sb"; workload "ps" }}
"#,
            images()
        ),
    );
    let check = cairn(&sb, &[], &["check", "plan.kdl"]);
    check.expect_code(0);
    assert!(
        check.stderr.contains(
            "note: option names not checked: image `mariadb-bookworm` not built yet (they are checked when it is)"
        ),
        "{}",
        check.stderr
    );

    let (r, ev) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(1);
    assert_eq!(ev.failed(), set(["dataset/sb@s"]));
    let err = ev.of("step_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains(
            "server option `innodb_bufer_pool_size`: mariadbd in image `cairn/mariadb-bookworm:"
        ) && err.contains("did you mean `innodb_buffer_pool_size`?"),
        "{err}"
    );
    // refused before the server started: no server log, no load
    assert!(!err.contains("[ERROR]"), "{err}");
    let pid = r.pid.expect("pid");
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));

    // the image is built now: check reads the kept list and refuses the typo at its place
    let t = std::time::Instant::now();
    let check = cairn(&sb, &[], &["check", "plan.kdl"]);
    check.expect_code(2);
    for part in [
        "dataset/sb@s: server option `innodb_bufer_pool_size`",
        "did you mean `innodb_buffer_pool_size`?",
        r#"innodb_bufer_pool_size="64M""#,
    ] {
        assert!(
            check.stderr.contains(part),
            "no {part:?} in {}",
            check.stderr
        );
    }
    assert!(
        !check.stderr.contains("max-connections`"),
        "{}",
        check.stderr
    );
    assert!(!check.stderr.contains("not checked"), "{}", check.stderr);
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the kept list costs no container"
    );

    // fixed, the plan passes check and its dataset loads
    sb.write(
        "plan.kdl",
        &std::fs::read_to_string(sb.path().join("plan.kdl"))
            .unwrap()
            .replace("innodb_bufer_pool_size", "innodb_buffer_pool_size"),
    );
    cairn(&sb, &[], &["check", "plan.kdl"]).expect_code(0);
}

#[test]
fn bad_driver_parameters_are_bad_input_before_anything_runs() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-badparam"
import "{}"
server "s" {{ image "mariadb-bookworm" }}
dataset "sb" {{ sysbench tables=1 rows=100 tabels=3 }}
workload "ps" {{
    sysbench "oltp_point_select"
    clients 4
}}
trials "t" {{ servers "s"; dataset "sb"; workload "ps" }}
"#,
            images()
        ),
    );
    for cmd in [["check", "plan.kdl"], ["run", "plan.kdl"]] {
        let r = cairn(&sb, &[], &cmd);
        r.expect_code(2);
        assert!(
            r.stderr.contains("unknown dataset parameter `tabels`"),
            "{}",
            r.stderr
        );
        // it points at the parameter in the plan text
        assert!(r.stderr.contains("tabels=3"), "{}", r.stderr);
    }
    // with the dataset fixed, the workload's parameter is named
    sb.write(
        "plan.kdl",
        &std::fs::read_to_string(sb.path().join("plan.kdl"))
            .unwrap()
            .replace(" tabels=3", ""),
    );
    let r = cairn(&sb, &[], &["check", "plan.kdl"]);
    r.expect_code(2);
    assert!(
        r.stderr.contains("unknown workload parameter `clients`") && r.stderr.contains("clients 4"),
        "{}",
        r.stderr
    );
    assert_eq!(sb.record_count(), 0, "nothing ran");
}

/// A server option my.cnf cannot hold (a line break would have set `max_connections=7` behind
/// the record's back) is bad input for `check` and `run` alike: exit 2, the diagnostic at
/// the option, nothing recorded, no container or network started.
#[test]
fn a_server_option_my_cnf_cannot_hold_is_refused_by_check_and_run() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-badoption"
import "{}"
server "s" {{
    image "mariadb-bookworm"
    option max_connections=512 wait_timeout="100\nmax_connections=7"
}}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "ps" {{
    sysbench "oltp_point_select"
    threads 1
    duration "1s"
}}
trials "t" {{ servers "s"; dataset "sb"; workload "ps" }}
"#,
            images()
        ),
    );
    for cmd in ["check", "run"] {
        let live = sb.cairn([cmd, "plan.kdl"]).guard(GUARD).spawn();
        let pid = live.pid() as u32;
        let r = live.finish(GUARD);
        r.expect_code(2);
        for part in [
            "server option `wait_timeout`",
            "line feed",
            r#"wait_timeout="100\nmax_connections=7""#,
        ] {
            assert!(
                r.stderr.contains(part),
                "{cmd}: no {part:?} in {}",
                r.stderr
            );
        }
        assert!(containers_of(pid).is_empty(), "{cmd} started a container");
        assert!(networks_of(pid).is_empty(), "{cmd} made a network");
    }
    assert_eq!(sb.record_count(), 0, "nothing ran");
}

#[test]
fn after_a_sigkill_mid_trial_the_next_run_removes_the_leftovers() {
    // any cairn run that uses the Docker Engine removes what killed runs left when it first
    // connects: this test's own next run has to be the one that does, so no other test's
    // run may start in between
    let _engine = engine_exclusive();
    cairn_testkit::mariadb_image();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &long_trial_plan("e2e-kill", "5m"));
    let (live, pid) = start_trial(&sb);
    live.signal(libc::SIGKILL);
    let r = live.finish(GUARD);
    assert_eq!(r.code, None, "killed by a signal");
    let left = containers_of(pid);
    assert!(!left.is_empty(), "a SIGKILL leaves the server behind");

    // the next run that needs the engine (the dataset loaded again here) removes them first
    let r2 = cairn(
        &sb,
        &[],
        &[
            "run",
            "plan.kdl",
            "--only",
            "dataset/*",
            "--fresh",
            "dataset/*",
        ],
    );
    r2.expect_code(0);
    assert!(
        r2.stderr
            .contains("removed what an earlier, killed run left"),
        "{}",
        r2.stderr
    );
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
    // and the killed trial was not recorded
    assert!(sb.records_of("trial/t/s").is_empty());
}

#[test]
fn the_process_executor_runs_a_host_mariadbd() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        r#"study "e2e-process"
server "host" {
    executor "process"
    option innodb_buffer_pool_size="64M" innodb_log_file_size="16M"
    connect "socket"
}
dataset "sb" { sysbench tables=1 rows=300 }
workload "ps" { sysbench "oltp_point_select"; threads 2; duration "1s" }
trials "t" { servers "host"; dataset "sb"; workload "ps"; passes 2 }
"#,
    );
    let (r, ev) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(0);
    assert_eq!(
        ev.finished(),
        set(["dataset/sb@host", "trial/t/host#1", "trial/t/host#2"]),
        "{}",
        r.stderr
    );
    let rec = record(&sb, "trial/t/host#2");
    let v = &rec["extra"]["variant"];
    assert_eq!(v["executor"], "process", "{v}");
    assert_eq!(v["checks"]["process_name"], "mariadbd", "{v}");
    assert_eq!(v["checks"]["word_size"], 64);
    assert_eq!(rec["fingerprint"]["runtime"], "host");
    assert!(rec["extra"]["figures"]["tps"].as_f64().unwrap() > 0.0);
    let (_, ev) = run_json(&sb, "plan.kdl", &[]);
    assert!(ev.finished().is_empty());
}

#[test]
fn an_i386_build_records_word_size_32_beside_amd64s_64() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-wordsize"
import "{}"
server "amd64" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "i386" {{ extends "amd64"; image "mariadb-bookworm-i386" }}
dataset "sb" {{ sysbench tables=1 rows=200 }}
workload "ps" {{ sysbench "oltp_point_select"; duration "1s" }}
trials "t" {{ servers "amd64" "i386"; dataset "sb"; workload "ps" }}
"#,
            images()
        ),
    );
    let (r, _) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(0);
    for (address, bits, machine) in [
        ("trial/t/amd64", 64, "x86_64"),
        ("trial/t/i386", 32, "i686"),
    ] {
        let v = record(&sb, address)["extra"]["variant"].clone();
        assert_eq!(v["checks"]["word_size"], bits, "{address}: {v}");
        assert_eq!(v["checks"]["compile_machine"], machine, "{address}: {v}");
    }
}

/// A plan whose one trial runs `duration` of point selects on server `s`.
pub(crate) fn long_trial_plan(study: &str, duration: &str) -> String {
    format!(
        r#"study "{study}"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "long" {{ sysbench "oltp_point_select"; duration "{duration}" }}
trials "t" {{ servers "s"; dataset "sb"; workload "long" }}
"#,
        images()
    )
}

/// Start `cairn run` and wait until the trial's server container exists; returns it.
fn start_trial(sb: &Sandbox) -> (Live, u32) {
    trial_running(sb.run("plan.kdl").spawn())
}

/// Wait until the run `live` of a [`long_trial_plan`] runs its trial's workload; returns it
/// and its pid.
pub(crate) fn trial_running(mut live: Live) -> (Live, u32) {
    live.wait_for(1, GUARD, |v| {
        v["event"] == "step_started" && v["step"] == "trial/t/s"
    });
    let pid = live.pid() as u32;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while containers_of(pid).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no server container");
        std::thread::sleep(Duration::from_millis(200));
    }
    // on a busy machine the server may take longer than the pause below to start: a kill
    // before it is ready tests startup, not a running workload
    let name = containers_of(pid).pop().unwrap_or_default();
    while !server_log(&name).contains("ready for connections") {
        assert!(
            std::time::Instant::now() < deadline,
            "server {name} not ready: {}",
            server_log(&name)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // let the workload start
    std::thread::sleep(Duration::from_secs(3));
    (live, pid)
}

/// The log (stdout and stderr) of container `name` so far.
fn server_log(name: &str) -> String {
    let out = Command::new("docker")
        .args(["logs", name])
        .output()
        .expect("docker CLI");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_server_that_crashes_mid_trial_fails_it_with_its_log() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &long_trial_plan("e2e-crash", "5m"));
    let (live, pid) = start_trial(&sb);
    let name = containers_of(pid).pop().unwrap();
    // the server process dies (SIGKILL inside the container), as in a crash
    let out = Command::new("docker")
        .args(["kill", "--signal", "KILL", &name])
        .output()
        .expect("docker CLI");
    assert!(out.status.success(), "{out:?}");
    let r = live.finish(GUARD);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let ev = r.events();
    assert_eq!(ev.failed(), set(["trial/t/s"]));
    let err = ev.of("step_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(err.contains("the server died during the workload"), "{err}");
    assert!(err.contains("last lines of the server log"), "{err}");
    assert!(err.contains("mariadbd"), "the log tail: {err}");
    assert!(containers_of(pid).is_empty(), "removed anyway");
    assert!(networks_of(pid).is_empty());
    assert!(
        sb.records_of("trial/t/s").is_empty(),
        "a failed trial is not recorded"
    );
}

/// Wait until the trial's workload runs against container `name`: its prepared point
/// selects have started (the server variant checks and status reads are over).
fn wait_for_workload(name: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let out = Command::new("docker")
            .args([
                "exec",
                name,
                "mariadb",
                "--defaults-file=/etc/cairn/my.cnf",
                "-N",
                "-B",
                "-e",
                "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'",
            ])
            .output()
            .expect("docker CLI");
        let executed: u64 = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if executed > 20 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the workload did not start on {name}: {out:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `docker pause`/`unpause`/`rm -f` on a container of ours (a removed one is fine).
fn docker_quiet(args: &[&str]) {
    let _ = Command::new("docker").args(args).output();
}

/// Removes a container this test paused, whatever happens to the test.
struct RemovePaused(String);

impl Drop for RemovePaused {
    fn drop(&mut self) {
        docker_quiet(&["unpause", &self.0]);
        docker_quiet(&["rm", "-f", &self.0]);
    }
}

/// The error of the one failed step `address` of a run, which must have exited with 1.
fn the_failure(r: &Ran, address: &str) -> String {
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let ev = r.events();
    assert_eq!(ev.failed(), set([address]), "{}", r.stderr);
    ev.of("step_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string()
}

// An 8 s trial: the watchdog allows one answer 10 s (8 s + 2 s margin), the status reads
// 15 s; the pauses below outlast both, wherever in the workload they land.
const PAUSED_TRIAL: &str = "8s";
const PAUSE: Duration = Duration::from_secs(20);

#[test]
fn a_server_paused_mid_trial_fails_it_and_the_next_run_measures_it_again() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &long_trial_plan("e2e-pause", PAUSED_TRIAL));
    let (live, pid) = start_trial(&sb);
    let name = containers_of(pid).pop().unwrap();
    let _cleanup = RemovePaused(name.clone());
    wait_for_workload(&name);
    docker_quiet(&["pause", &name]);
    std::thread::sleep(PAUSE);
    // the watchdog may have removed it already
    docker_quiet(&["unpause", &name]);
    let r = live.finish(GUARD);
    let err = the_failure(&r, "trial/t/s");
    assert!(err.contains("the server stalled"), "{err}");
    assert!(err.contains("last lines of the server log"), "{err}");
    assert!(
        sb.records_of("trial/t/s").is_empty(),
        "a stalled trial is no measurement: {:?}",
        sb.records_of("trial/t/s")
    );
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));

    // not served from the cache: the next run measures the trial again, and keeps it
    let (r2, ev) = run_json(&sb, "plan.kdl", &[]);
    r2.expect_code(0);
    assert_eq!(ev.finished(), set(["trial/t/s"]), "{}", r2.stderr);
    let seconds = record(&sb, "trial/t/s")["extra"]["figures"]["seconds"]
        .as_f64()
        .unwrap();
    assert!(seconds <= 10.0, "within the margin: {seconds}");
}

#[test]
fn a_server_paused_for_good_fails_the_trial_and_is_removed() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &long_trial_plan("e2e-pause-forever", PAUSED_TRIAL),
    );
    let (live, pid) = start_trial(&sb);
    let name = containers_of(pid).pop().unwrap();
    let _cleanup = RemovePaused(name.clone());
    wait_for_workload(&name);
    docker_quiet(&["pause", &name]);
    // never unpaused: the run ends on its own (the guard only catches a hang)
    let r = live.finish(GUARD);
    let err = the_failure(&r, "trial/t/s");
    assert!(err.contains("the server stalled"), "{err}");
    assert!(sb.records_of("trial/t/s").is_empty());
    assert!(
        containers_of(pid).is_empty(),
        "the paused server is removed: {:?}",
        containers_of(pid)
    );
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

#[test]
fn a_timeout_the_clock_reaches_first_is_bad_input_at_its_place() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        r#"study "e2e-badtimeout"
server "s" { executor "process" }
dataset "sb" { sysbench tables=1 rows=100 }
workload "w" { sysbench "oltp_point_select"; duration "5s"; warmup "1s"; timeout "6s" }
trials "t" { servers "s"; dataset "sb"; workload "w" }
"#,
    );
    for cmd in [["check", "plan.kdl"], ["run", "plan.kdl"]] {
        let r = cairn(&sb, &[], &cmd);
        r.expect_code(2);
        assert!(
            r.stderr
                .contains("workload parameter `timeout` (6 s) must be longer than")
                && r.stderr.contains(r#"timeout "6s""#),
            "{}",
            r.stderr
        );
    }
    assert_eq!(sb.record_count(), 0, "nothing ran");
}

#[test]
fn a_run_an_event_count_ends_is_stopped_at_its_timeout_external_tool_included() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    // a billion events at 5 per second: only the workload's timeout ends these runs
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-timeout"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "sb" {{ sysbench tables=1 rows=100 }}
workload "native" {{ sysbench "oltp_point_select"; events 1000000000; rate 5; timeout "3s" }}
workload "external" {{ sysbench "oltp_point_select" tool="external"; events 1000000000; rate 5; timeout "3s" }}
trials "native" {{ servers "s"; dataset "sb"; workload "native" }}
trials "external" {{ servers "s"; dataset "sb"; workload "external" }}
"#,
            images()
        ),
    );
    let (r, ev) = run_json(&sb, "plan.kdl", &["--keep-going"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(
        ev.failed(),
        set(["trial/native/s", "trial/external/s"]),
        "{}",
        r.stderr
    );
    for e in ev.of("step_failed") {
        let err = e["error"].as_str().unwrap();
        assert!(
            err.contains("the watchdog stopped it") && err.contains("the workload's `timeout`"),
            "{err}"
        );
    }
    assert!(sb.records_of("trial/native/s").is_empty());
    assert!(sb.records_of("trial/external/s").is_empty());
    // the external tool's client container was killed and removed with the server
    let pid = r.pid.unwrap();
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

#[test]
fn ctrl_c_mid_trial_stops_and_removes_the_server() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write("plan.kdl", &long_trial_plan("e2e-sigint", "5m"));
    let (live, pid) = start_trial(&sb);
    live.signal(libc::SIGINT);
    let r = live.finish(GUARD);
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
    assert!(sb.records_of("trial/t/s").is_empty());
}

#[test]
fn smack_and_sqlbench_trials_run_from_a_plan() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-drivers"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
dataset "auth" {{ smack rows=2000 }}
workload "select-index" {{
    smack "select_index"
    clients 3
    rounds 100
}}
workload "suite" {{
    sqlbench "all"
    scale "small"
}}
trials "smack" {{ servers "s"; dataset "auth"; workload "select-index" }}
trials "sqlbench" {{ servers "s"; workload "suite" }}
"#,
            images()
        ),
    );
    let (r, ev) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(0);
    assert!(ev.finished().contains("trial/smack/s"), "{}", r.stderr);
    let smack = record(&sb, "trial/smack/s");
    let f = &smack["extra"]["figures"];
    assert_eq!(
        f["queries"], 600.0,
        "3 clients × 100 rounds × 2 queries: {f}"
    );
    assert!(f["qps"].as_f64().unwrap() > 0.0);
    let sql = record(&sb, "trial/sqlbench/s");
    let f = &sql["extra"]["figures"];
    for t in ["insert_s", "select_s", "wisconsin_s", "total_s"] {
        assert!(f[t].as_f64().is_some_and(|s| s > 0.0), "{t}: {f}");
    }
    let table = cairn(&sb, &[], &["results", "plan.kdl"]);
    table.expect_code(0);
    assert!(table.stdout.contains("total_s"), "{}", table.stdout);
}

#[test]
fn the_images_own_sysbench_runs_as_an_external_tool() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-external"
import "{}"
server "s" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "sock" {{ extends "s"; connect "socket" }}
server "tls" {{ extends "s"; connect "tls" }}
dataset "sb" {{ sysbench tables=2 rows=500 }}
workload "native" {{ sysbench "oltp_read_only"; threads 2; duration "2s"; warmup "1s" }}
workload "external" {{ sysbench "oltp_read_only" tool="external"; threads 2; duration "2s"; warmup "1s" }}
trials "native" {{ servers "s"; dataset "sb"; workload "native" }}
trials "external" {{ servers "s" "sock" "tls"; dataset "sb"; workload "external" }}
"#,
            images()
        ),
    );
    let (r, _) = run_json(&sb, "plan.kdl", &[]);
    r.expect_code(0);
    let native = record(&sb, "trial/native/s");
    let fnat = &native["extra"]["figures"];
    for f in ["tps", "qps", "latency_p95_ms"] {
        assert!(fnat[f].as_f64().is_some(), "{f}: {fnat}");
    }
    let cat = |step: &str, file: &str| -> Value {
        let out = cairn(&sb, &[], &["cat", "plan.kdl", step, file]);
        out.expect_code(0);
        serde_json::from_str(&out.stdout).unwrap()
    };
    for server in ["s", "sock", "tls"] {
        let step = format!("trial/external/{server}");
        let fext = &record(&sb, &step)["extra"]["figures"];
        for f in ["tps", "qps", "latency_p95_ms"] {
            assert!(fext[f].as_f64().unwrap() > 0.0, "{step} {f}: {fext}");
        }
        // sysbench's own count of queries is what the server executed in the measured window
        let sj = cat(&step, "server.json");
        let selects = sj["status_deltas"]["Com_select"].as_f64().unwrap();
        assert!(
            selects >= fext["queries"].as_f64().unwrap() * 14.0 / 16.0,
            "{step}: {selects} {fext}"
        );
        // and it reached the server the way the plan's server says clients connect
        let m = cat(&step, "metrics.json");
        let argv: Vec<&str> = m["tool"]["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[0], "sysbench");
        let has = |o: &str| argv.iter().any(|a| a.starts_with(o));
        match server {
            "s" => assert!(has("--mysql-host=") && !has("--mysql-ssl"), "{argv:?}"),
            "sock" => assert!(
                has("--mysql-socket=/run/cairn/mysqld.sock") && !has("--mysql-host="),
                "{argv:?}"
            ),
            _ => {
                assert!(has("--mysql-ssl=on") && has("--mysql-host="), "{argv:?}");
                // the TLS server refuses unencrypted TCP clients, and counted these handshakes
                let accepts = sj["status_deltas"]["Ssl_accepts"].as_f64().unwrap_or(0.0);
                assert!(
                    accepts >= 2.0,
                    "Ssl_accepts {accepts}: {}",
                    sj["status_deltas"]
                );
            }
        }
    }
    let pid = r.pid.unwrap();
    assert!(
        containers_of(pid).is_empty(),
        "client containers removed too"
    );
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}
