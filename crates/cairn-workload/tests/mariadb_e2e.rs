//! End-to-end tests of the sysbench dataset and OLTP driver against real MariaDB containers (cairn_exec::docker), checked with the server's `SHOW GLOBAL STATUS` counters.
//!
//! Servers come from the shared test image (`cairn_testkit`, the `images/mariadb.kdl` recipe,
//! built at most once per machine); each test's containers and network are removed when its
//! [`TestServer`] is dropped, also on failure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cairn_exec::docker::Connect;
use cairn_testkit::{start_mariadb, TestServer};
use cairn_workload::{load_sysbench, run_oltp, OltpSpec, OltpTest, SysbenchDataset, Target};
use mysql::prelude::Queryable;

/// A server from the shared test image, with a TCP target as user `cairn`.
fn start(test: &str) -> (TestServer, Target) {
    let s = start_mariadb(
        test,
        &[
            ("innodb_buffer_pool_size", "128M"),
            ("skip-name-resolve", ""),
            ("max_connections", "50"),
        ],
        Connect::Tcp,
    );
    let target = Target::tcp(&s.server.ip, s.server.port, "cairn");
    (s, target)
}

fn status(c: &mut mysql::Conn) -> HashMap<String, u64> {
    c.query::<(String, String), _>("SHOW GLOBAL STATUS LIKE 'Com\\_%'")
        .unwrap()
        .into_iter()
        .filter_map(|(k, v)| v.parse().ok().map(|v| (k, v)))
        .collect()
}

fn delta(a: &HashMap<String, u64>, b: &HashMap<String, u64>, k: &str) -> u64 {
    b[k] - a[k]
}

fn admin(target: &Target) -> mysql::Conn {
    target.connect().unwrap()
}

fn one(c: &mut mysql::Conn, q: &str) -> String {
    let v: Option<String> = c.query_first(q).unwrap();
    v.unwrap_or_else(|| panic!("no row for {q}"))
}

#[test]
fn load_two_tables_like_sysbench() {
    let (_guard, target) = start("load");
    let mut spec = SysbenchDataset::new(2, 1000);
    spec.parallel = 2;
    spec.seed = 42;
    let t = Instant::now();
    let report = load_sysbench(&target, &spec).unwrap();
    eprintln!("TIMING load 2x1000: {:.2?} {report:?}", t.elapsed());
    assert_eq!(report.tables.len(), 2);

    let mut c = admin(&target);
    for n in 1..=2 {
        let q = |s: &str| s.replace("{n}", &n.to_string());
        assert_eq!(one(&mut c, &q("SELECT COUNT(*) FROM sbtest{n}")), "1000");
        assert_eq!(
            one(
                &mut c,
                &q("SELECT CONCAT(MIN(id), ',', MAX(id)) FROM sbtest{n}")
            ),
            "1,1000"
        );
        assert_eq!(
            one(
                &mut c,
                &q("SELECT CONCAT(MIN(LENGTH(c)), ',', MAX(LENGTH(c)), ',', MIN(LENGTH(pad)), ',', MAX(LENGTH(pad))) FROM sbtest{n}")
            ),
            "119,119,59,59"
        );
        assert_eq!(
            one(
                &mut c,
                &q("SELECT COUNT(*) FROM sbtest{n} WHERE c REGEXP '^([0-9]{11}-){9}[0-9]{11}$' AND pad REGEXP '^([0-9]{11}-){4}[0-9]{11}$' AND k BETWEEN 1 AND 1000")
            ),
            "1000"
        );
        assert_eq!(
            one(
                &mut c,
                &q("SELECT GROUP_CONCAT(COLUMN_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest{n}' AND INDEX_NAME='k_{n}'")
            ),
            "k"
        );
        assert_eq!(
            one(
                &mut c,
                &q("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest{n}'")
            ),
            "InnoDB"
        );
        // k is spread over its range, not constant
        let distinct: u64 = c
            .query_first(q("SELECT COUNT(DISTINCT k) FROM sbtest{n}"))
            .unwrap()
            .unwrap();
        assert!(distinct > 500, "{distinct}");
    }

    // like sysbench, loading over existing tables fails
    let err = load_sysbench(&target, &spec).unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");

    // the same seed gives the same data, whatever the parallelism and engine
    let mut other = target.clone();
    other.database = "sbtest_b".into();
    let mut spec_b = spec.clone();
    spec_b.parallel = 1;
    spec_b.engine = "MyISAM".into();
    spec_b.insert_bytes = 4096; // many statements
    let rb = load_sysbench(&other, &spec_b).unwrap();
    assert!(rb.tables[0].insert_statements > 10, "{rb:?}");
    let digest = |db: &str, n: u32, c: &mut mysql::Conn| {
        one(
            c,
            &format!("SELECT CONCAT(SUM(CRC32(CONCAT(id, k, c, pad))), ',', COUNT(*)) FROM {db}.sbtest{n}"),
        )
    };
    for n in 1..=2 {
        assert_eq!(
            digest("sbtest", n, &mut c),
            digest("sbtest_b", n, &mut c),
            "table {n}"
        );
    }
    assert_eq!(
        one(
            &mut c,
            "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest_b' AND TABLE_NAME='sbtest1'"
        ),
        "MyISAM"
    );
}

#[test]
fn read_only_mix_matches_server_counters() {
    let (_guard, target) = start("ro");
    let mut ds = SysbenchDataset::new(2, 1000);
    ds.parallel = 2;
    load_sysbench(&target, &ds).unwrap();

    let mut c = admin(&target);
    let before = status(&mut c);
    let mut spec = OltpSpec::new(OltpTest::ReadOnly, 2, 1000, 2, Duration::from_secs(2));
    spec.warmup = Duration::from_secs(1);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);

    let (w, t) = (&m.warmup.totals, &m.measured.totals);
    eprintln!(
        "oltp_read_only 2 threads: tps {:.1} qps {:.1} latency {:?} cpu {:?} warmup events {} measured events {}",
        m.tps, m.qps, m.measured.latency, m.measured.client_cpu, w.events, t.events
    );
    assert!(w.events > 0 && t.events > 0);
    assert_eq!(t.errors.total() + w.errors.total(), 0);
    // the per-transaction mix: 10 point + 4 range selects, BEGIN and COMMIT
    for p in [w, t] {
        assert_eq!(p.queries.read, 14 * p.events);
        assert_eq!(p.queries.other, 2 * p.events);
        assert_eq!(p.queries.write, 0);
    }
    let events = w.events + t.events;
    assert_eq!(delta(&before, &after, "Com_select"), 14 * events);
    assert_eq!(delta(&before, &after, "Com_begin"), events);
    assert_eq!(delta(&before, &after, "Com_commit"), events);
    assert_eq!(delta(&before, &after, "Com_stmt_execute"), 14 * events);
    // 2 threads × 2 tables × 5 statements
    assert_eq!(delta(&before, &after, "Com_stmt_prepare"), 20);

    // warmup kept apart: the series holds both, the measured figures only the rest
    assert!(m.series.len() >= 3, "{:?}", m.series);
    assert!(m.series[0].warmup && !m.series.last().unwrap().warmup);
    let measured_in_series: u64 = m
        .series
        .iter()
        .filter(|s| !s.warmup)
        .map(|s| s.events)
        .sum();
    assert_eq!(measured_in_series, t.events);
    assert_eq!(m.series.iter().map(|s| s.events).sum::<u64>(), events);
    assert!(
        (m.warmup.seconds - 1.0).abs() < 0.01,
        "{}",
        m.warmup.seconds
    );
    assert!(m.measured.seconds >= 2.0 && m.measured.seconds < 3.0);
    let l = &m.measured.latency;
    assert_eq!(l.count, t.events);
    assert!(l.min_ms <= l.p50_ms && l.p50_ms <= l.p95_ms && l.p95_ms <= l.p99_ms);
    assert!(l.p99_ms <= l.p999_ms && l.p999_ms <= l.max_ms && l.max_ms > 0.0);
    assert!(m.measured.client_cpu.total_s() > 0.0);
    let json = serde_json::to_string(&m).unwrap();
    assert!(json.contains("\"histogram_us\""));
}

#[test]
fn point_select_events_and_text_mode() {
    let (_guard, target) = start("ps");
    load_sysbench(&target, &SysbenchDataset::new(2, 1000)).unwrap();

    let mut c = admin(&target);
    let before = status(&mut c);
    let mut spec = OltpSpec::new(OltpTest::PointSelect, 2, 1000, 2, Duration::from_secs(30));
    spec.time = None;
    spec.events = Some(500);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    eprintln!(
        "oltp_point_select 2 threads, 500 events: tps {:.1} latency {:?}",
        m.tps, m.measured.latency
    );
    assert_eq!(m.measured.totals.events, 500);
    assert_eq!(m.warmup.totals.events, 0);
    assert_eq!(delta(&before, &after, "Com_select"), 500);
    assert_eq!(delta(&before, &after, "Com_stmt_execute"), 500);
    assert_eq!(delta(&before, &after, "Com_begin"), 0);

    // text protocol: the same queries, nothing prepared
    spec.prepared = false;
    spec.events = Some(200);
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    assert_eq!(m.measured.totals.events, 200);
    assert_eq!(delta(&before, &after, "Com_select"), 200);
    assert_eq!(delta(&before, &after, "Com_stmt_execute"), 0);
    assert_eq!(delta(&before, &after, "Com_stmt_prepare"), 0);
}

#[test]
fn a_server_that_dies_fails_the_run() {
    let (guard, target) = start("die");
    load_sysbench(&target, &SysbenchDataset::new(1, 1000)).unwrap();
    let server = &guard.server;
    let spec = OltpSpec::new(OltpTest::PointSelect, 1, 1000, 2, Duration::from_secs(60));
    let t = Instant::now();
    let err = std::thread::scope(|s| {
        let run = s.spawn(|| run_oltp(&target, &spec));
        std::thread::sleep(Duration::from_secs(1));
        // SIGKILL, a crash: the container stays (stopped) and so does the run's network,
        // so reconnection attempts fail on the local bridge. (`stop_server` would remove the
        // network, and the container's address would then route off this machine.)
        let out = std::process::Command::new("docker")
            .args(["kill", &server.container_id])
            .output()
            .expect("docker CLI");
        assert!(out.status.success(), "{out:?}");
        eprintln!("server killed after {:.2?}", t.elapsed());
        run.join().unwrap()
    })
    .expect_err("the run must fail")
    .to_string();
    eprintln!("failed after {:.2?}: {err}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(err.contains("could not reconnect"), "{err}");
}
