//! End-to-end: PostgreSQL as a server system through the real `cairn` binary and real
//! Docker — `system "postgresql"` servers from the shipped `images/postgresql.kdl`, a
//! sysbench dataset loaded with COPY and snapshotted, trials restored from the snapshot
//! running point_select natively (also from the server's own network namespace, `client
//! "loopback"`) and read_only with the image's own sysbench (`--db-driver=pgsql`), over TCP
//! and the socket, and both over TLS (the server's `pg_stat_ssl` view recorded); the
//! variant recorded; the server's own
//! transaction and row counters checked against the drivers' counts; MariaDB and
//! PostgreSQL side by side in one trials node; workloads that do not apply refused at
//! `cairn check`.
//!
//! Workloads are tiny (1,000 rows, 2 s runs): these tests check behaviour, never speed.

use std::path::Path;
use std::sync::RwLockReadGuard;
use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_shared, Sandbox};
use crate::trials::{containers_of, images as mariadb_images, networks_of};

/// A hang guard for invocations that start servers (never a timing).
const GUARD: Duration = Duration::from_secs(900);

fn images() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("images/postgresql.kdl")
        .display()
        .to_string()
}

/// The PostgreSQL image exists before the test's cairn needs it; the guard holds the engine
/// shared for the test.
fn image_ready() -> RwLockReadGuard<'static, ()> {
    let engine = engine_shared();
    cairn_testkit::postgresql_image();
    engine
}

const SERVERS: &str = r#"
server "pg" {
    image "postgresql-bookworm"
    system "postgresql"
    option shared_buffers="32MB" max_connections=50 synchronous_commit=#false
}
server "pg-sock" { extends "pg"; connect "socket" }
server "pg-lo" { extends "pg"; client "loopback" }
dataset "sb" { sysbench tables=1 rows=1000 }
"#;

fn workloads(tool: &str) -> String {
    let driver = if tool == "external" {
        " tool=\"external\""
    } else {
        ""
    };
    format!(
        r#"
workload "ps-{tool}" {{ sysbench "oltp_point_select"{driver}; threads 2; duration "2s"; warmup "1s" }}
workload "ro-{tool}" {{ sysbench "oltp_read_only"{driver}; threads 2; duration "2s"; warmup "1s" }}
"#
    )
}

fn cat(sb: &Sandbox, step: &str, file: &str) -> Value {
    let out = sb.cairn(["cat", "plan.kdl", step, file]).guard(GUARD).run();
    out.expect_code(0);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn postgresql_runs_sysbench_native_and_external_from_a_snapshot() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            "study \"e2e-postgresql\"\nimport \"{}\"\n{SERVERS}{}{}\
             trials \"ps-native\" {{ servers \"pg\" \"pg-sock\" \"pg-lo\"; dataset \"sb\"; workload \"ps-native\" }}\n\
             trials \"ro-external\" {{ servers \"pg\" \"pg-sock\"; dataset \"sb\"; workload \"ro-external\" }}\n",
            images(),
            workloads("native"),
            workloads("external"),
        ),
    );
    let r = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);

    let addresses: Vec<String> = sb
        .record_files()
        .iter()
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
            Some(v["address"].as_str()?.to_string())
        })
        .collect();
    // the dataset: COPY, then a snapshot of the cleanly stopped server's datadir
    let datasets: Vec<&String> = addresses
        .iter()
        .filter(|a| a.starts_with("dataset/"))
        .collect();
    assert!(!datasets.is_empty(), "{addresses:?}");
    for d in datasets {
        let load = &sb.record(d)["extra"];
        assert!(
            load.to_string().contains("\"copy\""),
            "{d} loaded with COPY: {load}"
        );
    }
    let trials: Vec<&String> = addresses
        .iter()
        .filter(|a| a.starts_with("trial/"))
        .collect();
    assert_eq!(trials.len(), 5, "{trials:?}");
    for address in &trials {
        let rec = sb.record(address);
        let v = &rec["extra"]["variant"]["checks"];
        assert!(
            v["version"].as_str().unwrap().starts_with("PostgreSQL 15"),
            "{address}: {v}"
        );
        assert_eq!(v["process_name"], "postgres", "{v}");
        assert_eq!(v["word_size"], 64, "{v}");
        assert_eq!(v["compile_machine"], "x86_64", "{v}");
        // PostgreSQL names no allocator: the maps say none was preloaded
        assert_eq!(v["malloc_library"], "system (from the memory map)", "{v}");
        let f = &rec["extra"]["figures"];
        assert!(f["tps"].as_f64().unwrap() > 0.0, "{address}: {f}");
        assert_eq!(f["errors"].as_f64(), Some(0.0), "{address}: {f}");

        // the server's counters against the driver's: every event is one transaction
        // (a point select in autocommit, or BEGIN … COMMIT); the server also counts the
        // warmup's, so it counts at least the measured ones
        let sj = cat(&sb, address, "server.json");
        let d = &sj["status_deltas"];
        let commits = d["xact_commit"].as_f64().unwrap_or(0.0);
        let fetched = d["tup_fetched"].as_f64().unwrap_or(0.0);
        let m = cat(&sb, address, "metrics.json");
        let events = f["events"]
            .as_f64()
            .unwrap_or_else(|| panic!("{address}: no event count in {f}"));
        assert!(events > 0.0, "{address}: {f}");
        assert!(
            commits >= events,
            "{address}: the server committed {commits} transactions, the driver counted {events} events: {d}"
        );
        // and not wildly more: warmup (1 s) and measured window (2 s) run at similar rates
        assert!(
            commits <= events * 3.0 + 100.0,
            "{address}: the server committed {commits} transactions for {events} events: {d}"
        );
        let rows_per_event = if address.contains("/ps-") { 1.0 } else { 10.0 };
        assert!(
            fetched >= events * rows_per_event,
            "{address}: {fetched} rows fetched for {events} events: {d}"
        );
        if address.ends_with("/pg-lo") {
            // the native driver spoke PostgreSQL's protocol from the server's namespace
            let client = &rec["extra"]["client"];
            assert_eq!(client["path"], "loopback", "{client}");
            assert_eq!(client["driver"], "native", "{client}");
        }
        if address.contains("external") {
            let argv: Vec<String> = m["tool"]["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            assert!(argv.contains(&"--db-driver=pgsql".to_string()), "{argv:?}");
            if address.ends_with("/pg-sock") {
                assert!(
                    argv.contains(&"--pgsql-host=/run/cairn".to_string()),
                    "{argv:?}"
                );
            }
        }
    }

    // a second run is served from the cache
    let again = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    again.expect_code(0);
    assert!(again.events().finished().is_empty(), "{}", again.stderr);

    let pid = r.pid.unwrap();
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}

/// MariaDB, MySQL and PostgreSQL in one trials node: each verifies its own system, and
/// `cairn results` shows the three side by side.
#[test]
fn mariadb_mysql_and_postgresql_side_by_side() {
    let _engine = image_ready();
    let _mariadb = cairn_testkit::mariadb_image();
    let _mysql = cairn_testkit::mysql_image();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-side-by-side"
import "{}"
import "{}"
import "{}"
server "mariadb" {{ image "mariadb-bookworm"; option innodb_buffer_pool_size="64M" }}
server "mysql" {{ image "mysql-sid"; system "mysql"; option innodb_buffer_pool_size="64M" innodb_redo_log_capacity="8M" }}
server "postgresql" {{ image "postgresql-bookworm"; system "postgresql"; option shared_buffers="32MB" }}
dataset "sb" {{ sysbench tables=1 rows=1000 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 2; duration "2s"; warmup "1s" }}
trials "all" {{ servers "mariadb" "mysql" "postgresql"; dataset "sb"; workload "ps" }}
"#,
            mariadb_images(),
            mariadb_images().replace("mariadb.kdl", "mysql.kdl"),
            images()
        ),
    );
    let r = sb.cairn(["run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    for (server, version) in [
        ("mariadb", "MariaDB"),
        ("mysql", ""),
        ("postgresql", "PostgreSQL"),
    ] {
        let rec = sb.record(&format!("trial/all/{server}"));
        let v = rec["extra"]["variant"]["checks"]["version"]
            .as_str()
            .unwrap_or_default();
        assert!(!v.is_empty() && v.contains(version), "{server}: {v}");
        if server == "mysql" {
            assert!(!v.contains("MariaDB"), "{v}");
        }
    }
    let table = sb.cairn(["results", "plan.kdl"]).guard(GUARD).run();
    table.expect_code(0);
    let rows: Vec<&str> = table.stdout.lines().collect();
    for server in ["mariadb", "mysql", "postgresql"] {
        assert!(
            rows.iter().any(|l| l.contains(server)),
            "{server} in the results:\n{}",
            table.stdout
        );
    }
}

#[test]
fn workloads_that_do_not_apply_are_refused_at_check() {
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-pg-check"
import "{}"
server "pg" {{ image "postgresql-bookworm"; system "postgresql" }}
dataset "words" {{ smack rows=100 }}
workload "smack" {{ smack "select_index"; clients 2; rounds 10 }}
trials "t" {{ servers "pg"; dataset "words"; workload "smack" }}
"#,
            images()
        ),
    );
    let out = sb.cairn(["check", "plan.kdl"]).guard(GUARD).run();
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("MariaDB or MySQL server, not a postgresql one"),
        "{}",
        out.stderr
    );
}

/// `connect "tls"` on PostgreSQL: the server starts with a per-start CA and certificate
/// (`ssl = on`, `pg_hba.conf` refusing TCP without TLS), the dataset is loaded and the
/// native driver runs over TLS (rustls, verifying the run's CA and the server's address),
/// and the image's sysbench reaches it through libpq's `PGSSLMODE=verify-full` — TLS or no
/// connection. The record holds the server's own view of a connection of cairn's client
/// (its `pg_stat_ssl` row), and its session counter saw the workload's TCP sessions, which
/// `pg_hba.conf` admits only over TLS.
#[test]
fn postgresql_runs_native_and_external_sysbench_over_tls() {
    let _engine = image_ready();
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        &format!(
            r#"study "e2e-postgresql-tls"
import "{}"
server "pg-tls" {{
    image "postgresql-bookworm"
    system "postgresql"
    option shared_buffers="32MB" max_connections=50
    connect "tls"
}}
dataset "sb" {{ sysbench tables=1 rows=500 }}
workload "ps" {{ sysbench "oltp_point_select"; threads 2; duration "1s" }}
workload "ps-ext" {{ sysbench "oltp_point_select" tool="external"; threads 2; duration "1s" }}
trials "native" {{ servers "pg-tls"; dataset "sb"; workload "ps" }}
trials "external" {{ servers "pg-tls"; dataset "sb"; workload "ps-ext" }}
"#,
            images()
        ),
    );
    let check = sb.cairn(["check", "plan.kdl"]).guard(GUARD).run();
    check.expect_code(0);
    let r = sb.cairn(["--json", "run", "plan.kdl"]).guard(GUARD).run();
    r.expect_code(0);
    for step in ["trial/native/pg-tls", "trial/external/pg-tls"] {
        let rec = sb.record(step);
        let f = &rec["extra"]["figures"];
        assert!(f["tps"].as_f64().unwrap() > 0.0, "{step}: {f}");
        assert_eq!(f["errors"].as_f64(), Some(0.0), "{step}: {f}");
        let server = cat(&sb, step, "server.json");
        // the server's pg_stat_ssl row of a connection of cairn's native client
        let tls = &server["tls"];
        assert_eq!(tls["ssl"], "t", "{step}: {server}");
        assert!(
            tls["version"].as_str().unwrap().starts_with("TLSv1."),
            "{step}: {tls}"
        );
        assert!(!tls["cipher"].as_str().unwrap().is_empty(), "{step}: {tls}");
        // the workload's sessions (TCP, so TLS by pg_hba.conf) were the server's
        let sessions = server["status_deltas"]["sessions"].as_f64().unwrap_or(0.0);
        assert!(sessions >= 2.0, "{step}: sessions {sessions}: {server}");
    }
    let m = cat(&sb, "trial/external/pg-tls", "metrics.json");
    let argv: Vec<&str> = m["tool"]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv[..3],
        ["env", "PGSSLMODE=verify-full", "PGSSLROOTCERT=cacert.pem"],
        "{argv:?}"
    );
    let pid = r.pid.unwrap();
    assert!(containers_of(pid).is_empty(), "{:?}", containers_of(pid));
    assert!(networks_of(pid).is_empty(), "{:?}", networks_of(pid));
}
