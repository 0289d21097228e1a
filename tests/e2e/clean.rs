//! `cairn clean` against the real Docker Engine: what a killed run left (found by its
//! `cairn.run` label) is removed and a live run's is kept; `--all` removes that too; without
//! an engine the command says how to start one; the server socket directories of ended runs
//! are removed by `cairn clean` and `cairn run`.
//!
//! `cairn clean` removes what every killed run left, also other tests' that are about to
//! look at theirs, and `--all` what live tests use: they run with the engine held
//! exclusively ([`engine_exclusive`]).

use std::process::Command;

use crate::support::{contains, engine_exclusive, Sandbox};

/// Make a network labelled as run `run` made it; its name.
fn network_of_run(run: &str, tag: &str) -> String {
    let name = format!("cairn-e2e-clean-{tag}-{}", std::process::id());
    let made = Command::new("docker")
        .args(["network", "create", "--label"])
        .arg(format!("cairn.run={run}"))
        .arg(&name)
        .output()
        .expect("docker CLI");
    assert!(made.status.success(), "{made:?}");
    name
}

fn network_exists(name: &str) -> bool {
    let left = Command::new("docker")
        .args(["network", "ls", "-q", "--filter"])
        .arg(format!("name=^{name}$"))
        .output()
        .unwrap();
    !String::from_utf8_lossy(&left.stdout).trim().is_empty()
}

#[test]
fn clean_removes_what_a_killed_run_left_and_keeps_a_live_runs() {
    let _engine = engine_exclusive();
    // a run id whose process cannot exist (pid 2^32 - 1), and this live test process's
    let dead = network_of_run("run-4294967295-5", "dead");
    let live = network_of_run(&live_run_id(), "live");

    Sandbox::new()
        .cairn(["clean"])
        .stdout(contains(&dead))
        .success();
    assert!(!network_exists(&dead), "a killed run's network is removed");
    assert!(network_exists(&live), "a live run's network is kept");

    Sandbox::new()
        .cairn(["clean"])
        .stdout(contains("cairn clean --all"))
        .success();
    assert!(network_exists(&live), "still kept");

    Sandbox::new()
        .cairn(["clean", "--all"])
        .stdout(contains(&live))
        .success();
    assert!(!network_exists(&live), "`--all` removes a live run's too");
}

#[test]
fn clean_without_an_engine_says_how_to_start_one() {
    Sandbox::new()
        .cairn(["clean"])
        .env("DOCKER_HOST", "unix:///nonexistent/cairn-docker.sock")
        .stderr(contains("systemctl start docker"))
        .failure();
}

/// This (live) test process's run id as a cairn run would make it: `run-<pid>-<start ticks>`.
fn live_run_id() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("stat has a name") + 1..];
    let ticks = after_name
        .split_whitespace()
        .nth(19)
        .expect("start time field");
    format!("run-{}-{ticks}", std::process::id())
}

/// A socket directory name of this (live) test process as a cairn run would make it:
/// `cairn-run-<pid>-<start ticks>-<random>`.
fn live_socket_dir_name() -> String {
    format!("cairn-{}-live01", live_run_id())
}

/// `cairn clean` removes the server socket directories of ended runs (here one of a pid that
/// cannot exist), keeps a live run's, and says so — also when no container engine answers
/// (the engine is never reached here, so nothing of other tests is touched).
#[test]
fn clean_removes_socket_dirs_of_ended_runs_even_without_an_engine() {
    let sb = Sandbox::new();
    let tmp = sb.path().join("tmp");
    let dead = tmp.join("cairn-run-4294967295-5-dead01");
    let live = tmp.join(live_socket_dir_name());
    for d in [&dead, &live] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(dead.join("mysqld.sock"), "").expect("socket stand-in");
    sb.cairn(["clean"])
        .env("TMPDIR", &tmp.display().to_string())
        .env("DOCKER_HOST", "unix:///nonexistent/cairn-docker.sock")
        .stdout(contains(format!(
            "removed socket directory {}",
            dead.display()
        )))
        .stderr(contains("systemctl start docker"))
        .failure();
    assert!(!dead.exists(), "an ended run's directory is removed");
    assert!(live.exists(), "a live run's directory is kept");
}

/// `cairn run` (of any plan) first removes the socket directories that killed runs left.
#[test]
fn run_removes_socket_dirs_that_killed_runs_left() {
    let sb = Sandbox::new();
    let tmp = sb.path().join("tmp");
    let dead = tmp.join("cairn-run-4294967295-5-dead02");
    let live = tmp.join(live_socket_dir_name());
    for d in [&dead, &live] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    sb.write(
        "p.kdl",
        "study \"sweep\"\nstep \"a\" { run \"echo a > a.txt\"; output \"a.txt\" }\n",
    );
    sb.run("p.kdl")
        .env("TMPDIR", &tmp.display().to_string())
        .stderr(contains("1 socket directory"))
        .success();
    assert!(!dead.exists());
    assert!(live.exists());
}
