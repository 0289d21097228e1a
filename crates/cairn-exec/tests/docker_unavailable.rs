//! Without a reachable Docker Engine, connecting fails at once with a message that says how to start one (own test binary: it sets `DOCKER_HOST`).

use std::time::{Duration, Instant};

use cairn_exec::docker::{Docker, DockerError};

fn assert_fast_and_helpful(what: &str, r: Result<Docker, DockerError>, t: Instant) {
    let elapsed = t.elapsed();
    let err = r.expect_err("no engine there");
    let msg = err.to_string();
    eprintln!("{what}: failed after {elapsed:.2?}: {msg}");
    assert!(matches!(err, DockerError::Unavailable { .. }), "{err:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    for hint in ["systemctl start docker", "dockerd", "DOCKER_HOST"] {
        assert!(msg.contains(hint), "{msg}");
    }
}

#[test]
fn unreachable_engines_fail_fast_with_a_hint() {
    let t = Instant::now();
    assert_fast_and_helpful(
        "missing socket",
        Docker::connect_to("unix:///nonexistent.sock"),
        t,
    );
    // a socket file nobody listens on
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let t = Instant::now();
    assert_fast_and_helpful(
        "dead socket",
        Docker::connect_to(&format!("unix://{}", path.display())),
        t,
    );
    // a TCP port that refuses
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    assert_fast_and_helpful(
        "refused tcp",
        Docker::connect_to(&format!("tcp://127.0.0.1:{port}")),
        t,
    );
    // what `Docker::connect` reads
    std::env::set_var("DOCKER_HOST", "unix:///nonexistent.sock");
    let t = Instant::now();
    let r = Docker::connect();
    std::env::remove_var("DOCKER_HOST");
    assert_fast_and_helpful("DOCKER_HOST", r, t);
}
