//! Ctrl-C while a client container runs: `Docker::run_client` kills and removes it and says it was stopped (the token is the spec's own).

use std::time::Duration;

use cairn_exec::cancel::CancelToken;
use cairn_exec::docker::{ClientError, ClientSpec};
use cairn_testkit::{docker, mariadb_image, RunGuard};

#[test]
fn ctrl_c_kills_and_removes_the_client() {
    let d = docker();
    let guard = RunGuard::new("client-cancel");
    let network = d.ensure_network(&guard.id).unwrap();
    let mut spec = ClientSpec::new(
        &guard.id,
        &mariadb_image().reference,
        &network,
        vec!["sleep".into(), "60".into()],
    );
    let token = CancelToken::new();
    spec.cancel = token.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        token.cancel_all(Duration::from_secs(1));
    });
    let e = d.run_client(&spec).unwrap_err();
    canceller.join().unwrap();
    assert!(matches!(e, ClientError::Cancelled { .. }), "{e}");
    let left = d.cleanup_stale(&format!("cairn.run={}", guard.id)).unwrap();
    assert!(left.containers.is_empty(), "left behind: {left:?}");
}
