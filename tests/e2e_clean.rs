//! `cairn clean` against the real Docker Engine: what a killed run left (found by its
//! `cairn.run` label) is removed; without an engine the command says how to start one.

use std::process::Command;

fn cairn(args: &[&str], docker_host: Option<&str>) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cairn"));
    c.args(args);
    if let Some(h) = docker_host {
        c.env("DOCKER_HOST", h);
    }
    c.output().expect("cairn runs")
}

#[test]
fn clean_removes_networks_a_killed_run_left() {
    let name = format!("cairn-e2e-clean-{}", std::process::id());
    let made = Command::new("docker")
        .args(["network", "create", "--label"])
        .arg(format!("cairn.run=e2e-clean-{}", std::process::id()))
        .arg(&name)
        .output()
        .expect("docker CLI");
    assert!(made.status.success(), "{made:?}");

    let out = cairn(&["clean"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains(&name), "{stdout}");
    let left = Command::new("docker")
        .args(["network", "ls", "-q", "--filter"])
        .arg(format!("name=^{name}$"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty());
}

#[test]
fn clean_without_an_engine_says_how_to_start_one() {
    let out = cairn(&["clean"], Some("unix:///nonexistent/cairn-docker.sock"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("systemctl start docker"), "{stderr}");
}
