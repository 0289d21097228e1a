//! End-to-end tests of the sysbench dataset and OLTP driver against real MariaDB containers (cairn_exec::docker), checked with the server's `SHOW GLOBAL STATUS` counters.
//!
//! Servers come from the shared test image (`cairn_testkit`, the `images/mariadb.kdl` recipe,
//! built at most once per machine); each test's containers and network are removed when its
//! [`TestServer`] is dropped, also on failure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cairn_exec::docker::Connect;
use cairn_testkit::{start_mariadb, TestServer};
use cairn_workload::metrics::{Metrics, QueryCounts, Totals};
use cairn_workload::{
    load_sysbench, run_oltp, Distribution, OltpSpec, OltpTest, SysbenchDataset, Target,
};
use mysql::prelude::Queryable;

/// A server from the shared test image, with a TCP target as user `cairn`.
fn start(test: &str) -> (TestServer, Target) {
    let s = start_mariadb(test, cairn_testkit::SMALL_SERVER, Connect::Tcp);
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

/// A dataset step's load — its server with the load-only settings
/// (`DbSystem::load_options`), rows by LOAD DATA, the secondary index after them, tables in
/// parallel — gives exactly the rows and schema of a plain load: sysbench's INSERT
/// statements, one table after the other, on a server without those settings.
#[test]
fn the_fast_load_gives_the_rows_of_a_plain_load() {
    let load_options = cairn_exec::system::by_name("mariadb")
        .unwrap()
        .load_options();
    let mut fast_options = cairn_testkit::SMALL_SERVER.to_vec();
    fast_options.extend(load_options.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let fast_server = start_mariadb("load-fast", &fast_options, Connect::Tcp);
    let fast = Target::tcp(&fast_server.server.ip, fast_server.server.port, "cairn");
    let (_plain_server, plain) = start("load-plain");

    let mut spec = SysbenchDataset::new(3, 2000);
    spec.seed = 7;
    spec.parallel = 3;
    load_sysbench(&fast, &spec).unwrap();
    let mut sysbench_like = spec.clone();
    sysbench_like.parallel = 1;
    sysbench_like.method = cairn_workload::dataset::sysbench::LoadMethod::Insert;
    let r = load_sysbench(&plain, &sysbench_like).unwrap();
    assert!(r
        .tables
        .iter()
        .all(|t| t.method == cairn_workload::dataset::sysbench::LoadMethod::Insert));

    let (mut f, mut p) = (admin(&fast), admin(&plain));
    // the settings were in force on the fast server only
    let settings = "SELECT CONCAT(@@innodb_doublewrite, ',', @@innodb_flush_log_at_trx_commit, ',', @@log_bin)";
    assert_eq!(one(&mut f, settings), "OFF,0,OFF");
    assert_eq!(one(&mut p, settings), "ON,1,OFF");
    type Row = (u32, u32, String, String);
    for n in 1..=3 {
        let rows = |c: &mut mysql::Conn| -> Vec<Row> {
            c.query(format!("SELECT id, k, c, pad FROM sbtest{n} ORDER BY id"))
                .unwrap()
        };
        let (rf, rp) = (rows(&mut f), rows(&mut p));
        assert_eq!(rf.len(), 2000);
        assert!(rf == rp, "sbtest{n}: the rows differ");
        let create = |c: &mut mysql::Conn| -> String {
            let (_, sql): (String, String) = c
                .query_first(format!("SHOW CREATE TABLE sbtest{n}"))
                .unwrap()
                .unwrap();
            sql
        };
        assert_eq!(
            create(&mut f),
            create(&mut p),
            "sbtest{n}: the schema differs"
        );
    }
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

/// sysbench's `--secondary` (`id-index="secondary"`): `id` under the secondary key `xid`, no
/// primary key (InnoDB clusters on a hidden row id), and the OLTP tests run on it as they do
/// on the usual table.
#[test]
fn a_secondary_id_index_replaces_the_primary_key() {
    let (_guard, target) = start("xid");
    let mut spec = SysbenchDataset::new(1, 1000);
    spec.secondary_id = true;
    load_sysbench(&target, &spec).unwrap();

    let mut c = admin(&target);
    let indexes = one(
        &mut c,
        "SELECT GROUP_CONCAT(INDEX_NAME, ':', COLUMN_NAME, ':', NON_UNIQUE ORDER BY INDEX_NAME) \
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest1'",
    );
    assert_eq!(indexes, "k_1:k:1,xid:id:1");
    assert_eq!(one(&mut c, "SELECT COUNT(*) FROM sbtest.sbtest1"), "1000");

    let mut oltp = OltpSpec::new(OltpTest::ReadWrite, 1, 1000, 2, Duration::from_secs(30));
    oltp.time = None;
    oltp.events = Some(200);
    let m = run_oltp(&target, &oltp).unwrap();
    assert_eq!(m.measured.totals.events, 200);
    assert_rows_intact(&mut c, 1, 1000);
}

#[test]
fn a_server_that_dies_fails_the_run() {
    let (guard, target) = start("die");
    load_sysbench(&target, &SysbenchDataset::new(1, 1000)).unwrap();
    let spec = OltpSpec::new(OltpTest::PointSelect, 1, 1000, 2, Duration::from_secs(60));
    let t = Instant::now();
    let err = guard
        .disturbed("kill", || run_oltp(&target, &spec))
        .expect_err("the run must fail")
        .to_string();
    eprintln!("failed after {:.2?}: {err}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(err.contains("could not reconnect"), "{err}");
}

/// Warmup and measured totals together (the server's counters see both).
fn both(m: &Metrics) -> Totals {
    let (w, t) = (&m.warmup.totals, &m.measured.totals);
    let add = |a: &QueryCounts, b: &QueryCounts| QueryCounts {
        read: a.read + b.read,
        write: a.write + b.write,
        other: a.other + b.other,
    };
    let mut all = *t;
    all.events += w.events;
    all.queries = add(&w.queries, &t.queries);
    all.failed = add(&w.failed, &t.failed);
    all.retries += w.retries;
    all.reconnects += w.reconnects;
    all.errors.deadlock += w.errors.deadlock;
    all.errors.lock_wait_timeout += w.errors.lock_wait_timeout;
    all.errors.lost_connection += w.errors.lost_connection;
    all.errors.record_changed += w.errors.record_changed;
    all
}

/// The server's `Com_*` deltas agree with what the run says it sent, failed attempts and
/// their ROLLBACKs included; without failures, also with sysbench's per-event mix.
fn check_counters(
    spec: &OltpSpec,
    m: &Metrics,
    before: &HashMap<String, u64>,
    after: &HashMap<String, u64>,
) {
    let d = |k: &str| delta(before, after, k);
    let all = both(m);
    let (q, f) = (&all.queries, &all.failed);
    assert_eq!(all.errors.lost_connection, 0);
    // a statement that failed on a deadlock was executed and counted by the server
    assert_eq!(d("Com_select"), q.read + f.read, "{all:?}");
    assert_eq!(
        d("Com_update") + d("Com_delete") + d("Com_insert"),
        q.write + f.write,
        "{all:?}"
    );
    assert_eq!(
        d("Com_begin") + d("Com_commit") + d("Com_rollback"),
        q.other + f.other
    );
    if spec.in_trx() {
        assert_eq!(d("Com_commit"), all.events);
        // every failed attempt was rolled back, then the event began again
        assert_eq!(d("Com_rollback"), all.retries);
        assert_eq!(d("Com_begin"), all.events + all.retries);
    }
    if all.retries == 0 {
        let per = spec.queries_per_event();
        let n = all.events;
        assert_eq!(d("Com_select"), per.read * n);
        assert_eq!(
            d("Com_update"),
            (spec.index_updates + spec.non_index_updates) as u64 * n
        );
        assert_eq!(d("Com_delete"), spec.delete_inserts as u64 * n);
        assert_eq!(d("Com_insert"), spec.delete_inserts as u64 * n);
        assert_eq!(q.write, per.write * n);
        assert_eq!(q.other, per.other * n);
    }
}

/// `sbtestN` still holds exactly ids `1..=rows`: every DELETE was followed by the INSERT of
/// the same id in the same transaction, or rolled back with it.
fn assert_rows_intact(c: &mut mysql::Conn, n: u32, rows: u32) {
    assert_eq!(
        one(
            c,
            &format!("SELECT CONCAT(COUNT(*), ',', MIN(id), ',', MAX(id)) FROM sbtest{n}")
        ),
        format!("{rows},1,{rows}")
    );
}

#[test]
fn read_write_and_write_only_mix_matches_server_counters() {
    let (_guard, target) = start("rw");
    let mut ds = SysbenchDataset::new(2, 1000);
    ds.parallel = 2;
    load_sysbench(&target, &ds).unwrap();
    let mut c = admin(&target);

    let mut spec = OltpSpec::new(OltpTest::ReadWrite, 2, 1000, 2, Duration::from_secs(2));
    spec.warmup = Duration::from_secs(1);
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    let all = both(&m);
    eprintln!(
        "oltp_read_write 2 threads: tps {:.1} qps {:.1} latency {:?} totals {all:?}",
        m.tps, m.qps, m.measured.latency
    );
    assert!(m.warmup.totals.events > 0 && m.measured.totals.events > 0);
    check_counters(&spec, &m, &before, &after);
    // 2 threads × 2 tables × (5 reads + 4 writes)
    assert_eq!(delta(&before, &after, "Com_stmt_prepare"), 36);
    assert_eq!(
        delta(&before, &after, "Com_stmt_execute"),
        all.queries.read + all.queries.write + all.failed.read + all.failed.write
    );
    let errors_in_series: u64 = m.series.iter().map(|s| s.errors).sum();
    assert_eq!(errors_in_series, all.errors.total());
    for n in 1..=2 {
        assert_rows_intact(&mut c, n, 1000);
    }
    // `c` was rewritten by the non-index updates and the inserts: not the loaded values any
    // more for some rows, still 119 characters of digit groups
    assert_eq!(
        one(
            &mut c,
            "SELECT COUNT(*) FROM sbtest1 WHERE c NOT REGEXP '^([0-9]{11}-){9}[0-9]{11}$' OR pad NOT REGEXP '^([0-9]{11}-){4}[0-9]{11}$'"
        ),
        "0"
    );

    // write-only: no reads at all, only the write statements prepared
    spec.test = OltpTest::WriteOnly;
    spec.warmup = Duration::ZERO;
    spec.time = None;
    spec.events = Some(300);
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    eprintln!("oltp_write_only 300 events: {:?}", both(&m));
    assert_eq!(m.measured.totals.events, 300);
    assert_eq!(m.measured.totals.queries.read, 0);
    check_counters(&spec, &m, &before, &after);
    assert_eq!(delta(&before, &after, "Com_select"), 0);
    assert_eq!(delta(&before, &after, "Com_stmt_prepare"), 2 * 2 * 4);

    // text protocol, no transactions (sysbench's --skip-trx --db-ps-mode=disable)
    spec.test = OltpTest::ReadWrite;
    spec.prepared = false;
    spec.skip_trx = true;
    spec.threads = 1;
    spec.events = Some(100);
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    assert_eq!(m.measured.totals.events, 100);
    check_counters(&spec, &m, &before, &after);
    assert_eq!(delta(&before, &after, "Com_stmt_execute"), 0);
    assert_eq!(delta(&before, &after, "Com_begin"), 0);
    assert_eq!(delta(&before, &after, "Com_update"), 200);
    for n in 1..=2 {
        assert_rows_intact(&mut c, n, 1000);
    }
}

#[test]
fn write_tests_survive_deadlocks() {
    let (_guard, target) = start("deadlock");
    let rows = 50;
    load_sysbench(&target, &SysbenchDataset::new(1, rows)).unwrap();
    let mut c = admin(&target);

    // 4 threads writing a few hot rows of one small table: deadlocks are routine
    let mut spec = OltpSpec::new(OltpTest::WriteOnly, 1, rows, 4, Duration::from_secs(3));
    spec.rand = Distribution::zipfian();
    spec.delete_inserts = 2;
    spec.max_retries = 1000;
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    let t = &m.measured.totals;
    eprintln!(
        "oltp_write_only 4 threads on {rows} rows (zipfian): tps {:.1} errors {:?} retries {} failed {:?} latency {:?}",
        m.tps, t.errors, t.retries, t.failed, m.measured.latency
    );
    assert!(t.events > 0);
    assert!(t.errors.deadlock > 0, "{:?}", t.errors);
    assert_eq!(t.retries, t.errors.total());
    assert_eq!(t.failed.write, t.errors.total(), "the writes deadlock");
    check_counters(&spec, &m, &before, &after);
    let per_interval: u64 = m.series.iter().map(|s| s.errors).sum();
    assert_eq!(per_interval, t.errors.total());
    assert_rows_intact(&mut c, 1, rows);

    // read_write on the same hot rows: also survives, with the same accounting
    spec.test = OltpTest::ReadWrite;
    spec.time = Some(Duration::from_secs(2));
    let before = status(&mut c);
    let m = run_oltp(&target, &spec).unwrap();
    let after = status(&mut c);
    eprintln!(
        "oltp_read_write 4 threads on {rows} rows: tps {:.1} errors {:?}",
        m.tps, m.measured.totals.errors
    );
    check_counters(&spec, &m, &before, &after);
    assert_rows_intact(&mut c, 1, rows);

    // a retry budget is a budget: with none, the first deadlock fails the run
    spec.test = OltpTest::WriteOnly;
    spec.max_retries = 0;
    spec.time = Some(Duration::from_secs(30));
    let err = run_oltp(&target, &spec).unwrap_err().to_string();
    eprintln!("max_retries 0: {err}");
    assert!(err.contains("gave up after 1 attempts"), "{err}");
}

#[test]
fn rate_latency_includes_an_injected_stall() {
    let (_guard, target) = start("rate");
    load_sysbench(&target, &SysbenchDataset::new(1, 1000)).unwrap();

    let rate = 100;
    let time = Duration::from_secs(4);
    let mut spec = OltpSpec::new(OltpTest::ReadWrite, 1, 1000, 4, time);
    spec.rate = rate;
    spec.seed = 5;
    let stall = Duration::from_millis(1500);
    let (m, held) = std::thread::scope(|s| {
        let run = s.spawn(|| run_oltp(&target, &spec));
        std::thread::sleep(Duration::from_secs(1));
        // another connection blocks every read and write of the table for a while
        let mut locker = admin(&target);
        locker.query_drop("LOCK TABLES sbtest1 WRITE").unwrap();
        let locked = Instant::now();
        std::thread::sleep(stall);
        let held = locked.elapsed();
        locker.query_drop("UNLOCK TABLES").unwrap();
        (run.join().unwrap().unwrap(), held)
    });
    let t = &m.measured.totals;
    let l = &m.measured.latency;
    let backlog = m.series.iter().map(|s| s.backlog).max().unwrap();
    eprintln!(
        "oltp_read_write rate {rate}/s with a {held:?} stall: events {} unstarted {} tps {:.1} latency {l:?} queue {:?} backlog max {backlog} series {:?}",
        t.events,
        t.unstarted,
        m.tps,
        m.measured.queue,
        m.series.iter().map(|s| (s.events, s.backlog)).collect::<Vec<_>>()
    );
    assert_eq!(m.rate, rate);
    // events arrive on the schedule whatever the server does: about rate × time of them
    // were due (a Poisson count: 400 ± 20), and all were started or counted as unstarted
    let due = (t.events + t.unstarted) as f64;
    let want = rate as f64 * time.as_secs_f64();
    assert!(
        (due - want).abs() < 4.0 * want.sqrt(),
        "{due} due, want {want}"
    );
    // the events that arrived during the stall waited for it, and their latency says so:
    // the first one arrived at most a few gaps (10 ms each on average) after the lock
    let held_ms = held.as_secs_f64() * 1000.0;
    assert!(
        l.max_ms >= held_ms - 100.0,
        "max {} < stall {held_ms}",
        l.max_ms
    );
    // about 150 of the 400 events arrived during the stall, so the tail is the stall
    assert!(l.p99_ms >= 1000.0, "p99 {}", l.p99_ms);
    assert!(l.p95_ms >= 500.0, "p95 {}", l.p95_ms);
    // waiting for a thread is part of it, and is reported on its own too
    assert!(m.measured.queue.count == t.events);
    assert!(m.measured.queue.max_ms >= 500.0, "{:?}", m.measured.queue);
    // blocked threads took nothing while arrivals piled up
    assert!(backlog >= 50, "backlog {backlog}");
    let in_series: u64 = m.series.iter().map(|s| s.events).sum();
    assert_eq!(in_series, t.events);
}

#[test]
fn a_hung_server_fails_the_run_after_the_io_timeout() {
    let (guard, mut target) = start("hang");
    load_sysbench(&target, &SysbenchDataset::new(1, 500)).unwrap();
    target.io_timeout = Some(Duration::from_secs(2));
    let spec = OltpSpec::new(OltpTest::PointSelect, 1, 500, 2, Duration::from_secs(120));
    let t = Instant::now();
    let err = guard
        .disturbed("pause", || run_oltp(&target, &spec))
        .expect_err("a hung server fails the run")
        .to_string();
    eprintln!("failed after {:.2?}: {err}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert!(
        err.contains("no answer from the server within 2s (it hangs)"),
        "{err}"
    );
}

/// The read path speaks the protocol on the connection's socket (a unix socket here) and
/// leaves a TLS connection to the `mysql` crate: both count exactly what the server counts.
#[test]
fn read_only_over_a_unix_socket_and_over_tls() {
    for connect in [Connect::Socket, Connect::Tls] {
        let s = start_mariadb(
            &format!("ro-{}", connect.as_str()),
            cairn_testkit::SMALL_SERVER,
            connect,
        );
        let target = match connect {
            Connect::Socket => Target::socket(s.server.socket_path.to_str().unwrap(), "cairn"),
            _ => Target {
                tls_ca: Some(s.server.tls_ca.clone().expect("a CA")),
                ..Target::tcp(&s.server.ip, s.server.port, "cairn")
            },
        };
        load_sysbench(&target, &SysbenchDataset::new(1, 500)).unwrap();
        let mut c = admin(&target);
        if connect == Connect::Tls {
            let cipher: Option<(String, String)> =
                c.query_first("SHOW STATUS LIKE 'Ssl_cipher'").unwrap();
            assert!(
                !cipher.unwrap().1.is_empty(),
                "the admin connection uses TLS"
            );
        }
        let before = status(&mut c);
        let spec = OltpSpec::new(OltpTest::ReadOnly, 1, 500, 2, Duration::from_secs(1));
        let m = run_oltp(&target, &spec).unwrap_or_else(|e| panic!("{connect:?}: {e}"));
        let after = status(&mut c);
        let t = &m.measured.totals;
        let events = m.warmup.totals.events + t.events;
        eprintln!("{connect:?}: {events} events, tps {:.1}", m.tps);
        assert!(events > 0 && t.errors.total() == 0, "{connect:?}");
        assert_eq!(delta(&before, &after, "Com_select"), 14 * events);
        assert_eq!(delta(&before, &after, "Com_stmt_execute"), 14 * events);
        assert_eq!(delta(&before, &after, "Com_begin"), events);
        assert_eq!(delta(&before, &after, "Com_commit"), events);
    }
}
