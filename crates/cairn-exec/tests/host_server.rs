//! The process executor's server: a real host `mariadbd` (Debian's mariadb-server-core,
//! installed by scripts/setup-tests.sh) in a private datadir and socket.

use std::time::Duration;

use cairn_exec::host_server::{self, HostServerError, HostServerSpec};

#[test]
fn a_host_server_starts_answers_reports_its_variant_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = HostServerSpec::new(dir.path().join("srv"));
    spec.options = vec![("max_connections".into(), "77".into())];
    let server = host_server::start(&spec).expect("server starts");
    eprintln!("host server answered after {:?}", server.ready_after);
    assert_eq!(server.sql("SELECT 1 + 1").unwrap(), "2");
    assert_eq!(server.sql("SELECT @@max_connections").unwrap(), "77");
    let checks = server
        .variant_checks(&["libtcmalloc", "libjemalloc"])
        .unwrap();
    assert!(checks.version.contains("MariaDB"), "{checks:?}");
    assert_eq!(checks.word_size, 64);
    assert_eq!(checks.process_name, "mariadbd");
    assert!(!checks.is_mapped("libtcmalloc") && !checks.is_mapped("libjemalloc"));
    let pid = server.pid;
    let status = server.stop(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "clean shutdown: {status:?}");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());

    // the datadir survives: a second start reuses it without initialising again
    let again = host_server::start(&spec).expect("restarts on the same datadir");
    assert_eq!(again.sql("SELECT 1").unwrap(), "1");
    again.stop(Duration::from_secs(30)).unwrap();
}

#[test]
fn an_invalid_option_fails_with_the_servers_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = HostServerSpec::new(dir.path().join("srv"));
    spec.options = vec![("no_such_option".into(), "1".into())];
    match host_server::start(&spec) {
        // the option already breaks initialising the datadir, which runs the server
        Err(
            HostServerError::InstallDb { output: log, .. } | HostServerError::Exited { log, .. },
        ) => {
            assert!(log.contains("unknown variable 'no_such_option=1'"), "{log}")
        }
        other => panic!("expected the server to exit with its error, got {other:?}"),
    }
}
