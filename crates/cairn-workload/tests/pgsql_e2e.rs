//! End-to-end tests of the sysbench dataset on a real PostgreSQL container: the tables as
//! sysbench's `pgsql` driver makes them, read back with `psql` in the server's container.

use std::time::Duration;

use cairn_exec::docker::Connect;
use cairn_testkit::{start_postgresql, TestServer};
use cairn_workload::{
    load_sysbench, run_oltp, OltpSpec, OltpTest, Protocol, SysbenchDataset, Target,
};

/// A server from the PostgreSQL test image, with a TCP target as user `cairn`.
fn start(test: &str) -> (TestServer, Target) {
    let s = start_postgresql(test, Connect::Tcp);
    let mut target = Target::tcp(&s.server.ip, s.server.port, "cairn");
    target.protocol = Protocol::Postgresql;
    (s, target)
}

/// The indexes of table `sbtest<n>` in database `db` (`name:definition`, one per line, by
/// name), as `psql` in the server's container reads them.
fn indexes(s: &TestServer, db: &str, n: u32) -> String {
    let sql = format!(
        "SELECT indexname || ':' || indexdef FROM pg_indexes WHERE tablename = 'sbtest{n}' ORDER BY indexname"
    );
    let out = std::process::Command::new("docker")
        .args(["exec", "-u", "postgres", &s.server.container_id])
        .args(["psql", "-h", "/run/cairn", "-d", db, "-At", "-c", &sql])
        .output()
        .expect("docker CLI");
    assert!(out.status.success(), "psql {sql}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The usual table has its primary key on `id`; sysbench's `--secondary`
/// (`id-index="secondary"`) none, `id` under the index `xid_N` made after the rows; the OLTP
/// tests run on both.
#[test]
fn the_id_is_the_primary_key_or_under_a_secondary_index() {
    let (server, target) = start("pg-xid");
    let mut spec = SysbenchDataset::new(2, 1000);
    load_sysbench(&target, &spec).unwrap();
    let usual = indexes(&server, "sbtest", 1);
    assert!(
        usual.contains("k_1:CREATE INDEX k_1 ON public.sbtest1 USING btree (k)"),
        "{usual}"
    );
    assert!(
        usual.contains(
            "sbtest1_pkey:CREATE UNIQUE INDEX sbtest1_pkey ON public.sbtest1 USING btree (id)"
        ),
        "{usual}"
    );

    let mut other = target.clone();
    other.database = "sbtest_xid".into();
    spec.secondary_id = true;
    load_sysbench(&other, &spec).unwrap();
    let xid = indexes(&server, "sbtest_xid", 2);
    assert_eq!(
        xid,
        "k_2:CREATE INDEX k_2 ON public.sbtest2 USING btree (k)\n\
         xid_2:CREATE INDEX xid_2 ON public.sbtest2 USING btree (id)"
    );

    let mut oltp = OltpSpec::new(OltpTest::ReadWrite, 2, 1000, 2, Duration::from_secs(30));
    oltp.time = None;
    oltp.events = Some(200);
    let m = run_oltp(&other, &oltp).unwrap();
    assert_eq!(m.measured.totals.events, 200);
}
