//! End-to-end tests of `Docker::run_client` against the real Docker Engine: output, exit code, CPU time, the server's network, the timeout, and that no client container stays behind.

use std::collections::HashMap;
use std::time::Duration;

use bollard::query_parameters::ListContainersOptionsBuilder;
use cairn_exec::docker::{ClientError, ClientSpec, Connect, Docker, LABEL_RUN};
use cairn_testkit::{docker, mariadb_image, start_mariadb, RunGuard};

/// Containers (any state) labelled with `run`.
fn containers_of(d: &Docker, run: &str) -> usize {
    let label = format!("{LABEL_RUN}={run}");
    let filters = HashMap::from([("label", vec![label.as_str()])]);
    let opts = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(d.api().list_containers(Some(opts)))
        .unwrap()
        .len()
}

fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

#[test]
fn output_exit_code_cpu_and_removal() {
    let d = docker();
    let guard = RunGuard::new("client-basic");
    let network = d.ensure_network(&guard.id).unwrap();
    let image = &mariadb_image().reference;
    // some CPU to measure: a busy loop of ~0.3 s
    let spec = ClientSpec::new(
        &guard.id,
        image,
        &network,
        sh("echo out; echo 'a b' >&2; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3"),
    );
    let out = d.run_client(&spec).unwrap();
    assert_eq!(out.exit_code, 3);
    assert_eq!(out.stdout, "out\n");
    assert_eq!(out.stderr, "a b\n", "the CPU block is removed");
    let cpu = out.cpu.expect("cgroup CPU counters");
    eprintln!("client cpu {cpu:?} in {:?}", out.elapsed);
    assert!(cpu.total_s() > 0.0, "{cpu:?}");
    assert_eq!(containers_of(d, &guard.id), 0);

    // arguments reach the command unchanged (no shell re-parsing)
    let spec = ClientSpec::new(
        &guard.id,
        image,
        &network,
        vec![
            "printf".into(),
            "%s|".into(),
            "a b".into(),
            "$HOME".into(),
            "'x'".into(),
        ],
    );
    assert_eq!(d.run_client(&spec).unwrap().stdout, "a b|$HOME|'x'|");

    // without CPU measurement the command runs as it is
    let mut spec = ClientSpec::new(&guard.id, image, &network, sh("echo plain >&2"));
    spec.measure_cpu = false;
    let out = d.run_client(&spec).unwrap();
    assert_eq!((out.stderr.as_str(), out.cpu), ("plain\n", None));

    // a missing program: a non-zero exit with the shell's message, nothing left behind
    let spec = ClientSpec::new(&guard.id, image, &network, vec!["no-such-tool".into()]);
    let out = d.run_client(&spec).unwrap();
    assert_eq!(out.exit_code, 127);
    assert!(out.stderr.contains("no-such-tool"), "{}", out.stderr);
    assert_eq!(containers_of(d, &guard.id), 0);
}

#[test]
fn timeout_kills_and_removes() {
    let d = docker();
    let guard = RunGuard::new("client-timeout");
    let network = d.ensure_network(&guard.id).unwrap();
    let mut spec = ClientSpec::new(
        &guard.id,
        &mariadb_image().reference,
        &network,
        sh("sleep 60"),
    );
    spec.timeout = Some(Duration::from_millis(500));
    let e = d.run_client(&spec).unwrap_err();
    assert!(matches!(e, ClientError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("sleep 60"), "{e}");
    assert_eq!(containers_of(d, &guard.id), 0);
}

#[test]
fn reaches_the_server_on_its_network() {
    let d = docker();
    let s = start_mariadb("client-net", &[], Connect::Tcp);
    let spec = ClientSpec::new(
        &s.guard.id,
        &s.server.image,
        &s.server.network,
        vec![
            "mariadb".into(),
            format!("--host={}", s.server.ip),
            format!("--port={}", s.server.port),
            "--user=cairn".into(),
            "-N".into(),
            "-e".into(),
            "SELECT 40+2".into(),
        ],
    );
    let out = d.run_client(&spec).unwrap();
    assert_eq!((out.exit_code, out.stdout.trim()), (0, "42"), "{out:?}");
    assert_eq!(containers_of(d, &s.guard.id), 1, "only the server is left");
}
