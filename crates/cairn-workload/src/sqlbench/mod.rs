//! A native sql-bench: the tests of MySQL's `sql-bench` suite (alter-table, big-tables, connect, create, insert, select, transactions, wisconsin) reimplemented on the `mysql` crate, timed per operation group as sql-bench prints them, with its `RUN-` summary.
//!
//! Each test creates the tables it needs, runs sql-bench's statements in sql-bench's order,
//! times them in sql-bench's operation groups ("Time for `select_diff_key` (…)") and drops
//! its tables at the end, as the `test-*` scripts of sql-bench 2.15 (MariaDB's and MySQL's
//! `sql-bench/`) do with their default options against a MySQL-family server (the
//! `db_MySQL` limits of `server-cfg`: multi-row inserts, `IN`, outer joins, 16 keys of 16
//! parts, `query_size` 1,000,000, `ORDER BY NULL`). test-select follows MariaDB's (10.11),
//! which times four GROUP BY groups MySQL's lacks. `all` runs the tests in sql-bench's
//! `run-all-tests` order. Per test, see its module: [`insert`], [`select`], [`alter_table`],
//! [`big_tables`], [`connect`], [`create`], [`transactions`], [`wisconsin`].
//!
//! # Scales
//!
//! sql-bench's counts are large (its full run takes hours); a [`Scale`] picks them:
//!
//! | test | count | `full` (sql-bench) | `small-test` (`--small-test`) | `small` | `N` (÷N, at least) |
//! |---|---|---|---|---|---|
//! | insert | rows/3 (`loop_count`) | 100000 | 1000 | 100 | ÷N (100) |
//! | | full-table loops (`small_loop_count`) | 10 | 10 | 1 | ÷N (1) |
//! | | range loops | 500 | 10 | 5 | ÷N (1) |
//! | | rows of the 16-key table | 100000 | 100 | 100 | ÷N (100) |
//! | | key lookups (`read_key_loop_count`) | 100000 | 10 | 10 | ÷N (10) |
//! | select | rows | 10000 | 1000 | 100 | ÷N (100) |
//! | | group-by loops (`medium_loop_count`) | 7000 | 700 | 10 | ÷N (1) |
//! | | `small_loop_count` | 10 | 1 | 1 | ÷N (1) |
//! | | groups | 100 | 10 | 10 | 100 |
//! | alter-table | rows | 1000 | 100 | 10 | ÷N (1) |
//! | | columns added up to | 1000 | 100 | 16 | ÷N (10) |
//! | big-tables | loops | 70000 | 7000 | 100 | ÷N (1) |
//! | | columns | 1000 | 100 | 100 | ÷N (10) |
//! | connect | queries (`loop_count`; connections = ÷10) | 500000 | 5000 | 1000 | ÷N (10) |
//! | create | tables at once | 400 | 10 | 5 | ÷N (1) |
//! | | create+drop loops | 10000 | 10 | 5 | ÷N (1) |
//! | transactions | rows | 500000 | 5000 | 200 | ÷N (10) |
//! | | rows per rollback | 10000 | 1000 | 50 | ÷N (1) |
//! | wisconsin | runs of each query | 5000 | 1000 | 2 | ÷N (1) |
//! | | `tenk` rows (`onek`: ÷10) | 10000 | 10000 | 1000 | ÷N (1000) |
//!
//! `small` runs every test in a few seconds (for tests, not for numbers). Over TCP, connect
//! caps its queries at 1000 (sql-bench's `--tcpip`: thousands of connections in a row
//! exhaust the client's ports); see [`SqlBenchSpec::tcpip`].
//!
//! # Differences from sql-bench
//!
//! - The client: statements go through the `mysql` crate from compiled Rust, not through
//!   Perl's DBI and DBD::mysql, and its cost per query is lower. So absolute seconds are not
//!   comparable with published sql-bench runs (least of all in groups of many cheap
//!   statements, where the client's share of the time is largest); ratios between servers
//!   measured with this same client are.
//! - Times are fractional wall-clock seconds (sql-bench's `--hires`) and client CPU of the
//!   running thread; nothing is "estimated" (no `--time-limit` extrapolation).
//! - Each group's count is the statements it sent (connections for connect's groups, pairs
//!   for create's `create+drop` groups); sql-bench's parenthesised numbers sometimes count
//!   otherwise (`select_range_prefix` counts each query twice).
//! - `delete_all_many_keys` times its own statement; sql-bench's clock for it starts before
//!   `delete_big_many_keys`. alter-table's `insert` line is summed like the others (sql-bench's
//!   lacks the colon its summary needs).
//! - test-insert's `prepared_select` and `once_prepared_select` use server-side prepared
//!   statements (DBD::mysql emulates them on the client).
//! - The Wisconsin relations are generated, not read from `Data/Wisconsin`: the same
//!   formulas, with `unique1` a seeded permutation ([`SqlBenchSpec::seed`]); below 10000
//!   `tenk` rows the queries' constants shrink with the relations.
//! - A wrong result (sql-bench's warnings, and the checks it dies on) is counted, reported
//!   and marked `?`, and the run goes on; a server error or a lost connection ends the run.
//! - Not implemented: test-ATIS (needs sql-bench's data files), `--fast`, `--lock-tables`.

pub mod alter_table;
pub mod big_tables;
pub mod connect;
pub mod create;
pub mod insert;
pub mod report;
pub mod select;
mod session;
pub mod transactions;
pub mod wisconsin;

use std::time::{Duration, Instant, SystemTime};

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use report::{snake, GroupReport, SqlBenchReport, TestReport};
pub use session::com_counter;

use crate::oltp::StopCheck;
use crate::workload::{Params, WorkloadDef};
use crate::{Error, Target};

/// One sql-bench test (`test-<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqlBenchTest {
    AlterTable,
    BigTables,
    Connect,
    Create,
    Insert,
    Select,
    Transactions,
    Wisconsin,
}

impl SqlBenchTest {
    /// Every test, in the order `run-all-tests` runs them (the sorted `test-*` scripts).
    pub const ALL: [SqlBenchTest; 8] = [
        SqlBenchTest::AlterTable,
        SqlBenchTest::BigTables,
        SqlBenchTest::Connect,
        SqlBenchTest::Create,
        SqlBenchTest::Insert,
        SqlBenchTest::Select,
        SqlBenchTest::Transactions,
        SqlBenchTest::Wisconsin,
    ];

    /// sql-bench's name (`test-<name>`).
    pub fn name(self) -> &'static str {
        match self {
            SqlBenchTest::AlterTable => "alter-table",
            SqlBenchTest::BigTables => "big-tables",
            SqlBenchTest::Connect => "connect",
            SqlBenchTest::Create => "create",
            SqlBenchTest::Insert => "insert",
            SqlBenchTest::Select => "select",
            SqlBenchTest::Transactions => "transactions",
            SqlBenchTest::Wisconsin => "wisconsin",
        }
    }

    /// The tests a plan's test name stands for: one test, or `all`.
    pub fn parse(name: &str) -> Option<Vec<SqlBenchTest>> {
        if name == "all" {
            return Some(Self::ALL.to_vec());
        }
        Self::ALL
            .iter()
            .find(|t| t.name() == name)
            .map(|t| vec![*t])
    }
}

/// How many operations each test does; see the table in the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// A few seconds for the whole suite: for tests of the driver, not for numbers.
    Small,
    /// sql-bench's `--small-test` counts.
    SmallTest,
    /// sql-bench's default counts.
    Full,
    /// sql-bench's default counts divided by N (> 1), each at least a stated minimum.
    Divisor(u32),
}

impl Scale {
    /// `"small"`, `"small-test"`, `"full"`, or a whole number N ≥ 1 (1 = `full`).
    pub fn parse(v: &Value) -> Result<Scale, String> {
        match v {
            Value::String(s) => match s.as_str() {
                "small" => Ok(Scale::Small),
                "small-test" => Ok(Scale::SmallTest),
                "full" => Ok(Scale::Full),
                _ => Err(format!("{s:?} is not a scale")),
            },
            Value::Number(n) => match n.as_u64() {
                Some(1) => Ok(Scale::Full),
                Some(d) if d > 1 && d <= u32::MAX as u64 => Ok(Scale::Divisor(d as u32)),
                _ => Err(format!("{n} is not a divisor (a whole number ≥ 1)")),
            },
            other => Err(format!("{other} is not a scale")),
        }
    }

    /// `small`, `small-test`, `full`, `1/N`.
    pub fn label(self) -> String {
        match self {
            Scale::Small => "small".into(),
            Scale::SmallTest => "small-test".into(),
            Scale::Full => "full".into(),
            Scale::Divisor(d) => format!("1/{d}"),
        }
    }

    /// A count: sql-bench's `full` value, its `--small-test` value, the `small` value, and
    /// the least a divided count may be.
    pub(crate) fn pick(self, full: u64, small_test: u64, small: u64, floor: u64) -> u64 {
        match self {
            Scale::Full => full,
            Scale::SmallTest => small_test,
            Scale::Small => small,
            Scale::Divisor(d) => (full / d as u64).max(floor),
        }
    }
}

/// A sql-bench run's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SqlBenchSpec {
    /// The tests, in the order to run them.
    pub tests: Vec<SqlBenchTest>,
    pub scale: Scale,
    /// Storage engine of every table (sql-bench's `--create-options=ENGINE=…`); `None` =
    /// the server's default. transactions is skipped for engines without transactions.
    pub engine: Option<String>,
    /// sql-bench's `--fast-insert`: test-insert writes multi-row `INSERT … VALUES` lists of
    /// up to `query_size` (1,000,000) bytes instead of one row per statement.
    pub fast_insert: bool,
    /// sql-bench's `--tcpip` (connect does at most 1000 queries and 100 connections);
    /// `None` = when the target is reached over TCP.
    pub tcpip: Option<bool>,
    /// Seeds the generated data (the Wisconsin relations' `unique1` order).
    pub seed: u64,
    /// A statement that takes longer (no reply) fails the run: a hung server must not hang
    /// the benchmark.
    pub statement_timeout: Duration,
}

impl SqlBenchSpec {
    pub fn new(tests: Vec<SqlBenchTest>, scale: Scale) -> Self {
        SqlBenchSpec {
            tests,
            scale,
            engine: None,
            fast_insert: false,
            tcpip: None,
            seed: 0,
            statement_timeout: Duration::from_secs(600),
        }
    }

    /// A plan's `sqlbench` workload: test `all` or one of sql-bench's (`insert`,
    /// `alter-table`, …); parameters `scale` (`"small"`, `"small-test"`, `"full"` — the
    /// default, sql-bench's counts — or a divisor), `engine`, `fast-insert`, `tcpip`, `seed`,
    /// `statement-timeout` (seconds). sql-bench's data do not change between passes, so the
    /// pass seed is not used.
    pub fn from_def(def: &WorkloadDef, p: &mut Params<'_>) -> Result<Self, Error> {
        let Some(tests) = SqlBenchTest::parse(&def.test) else {
            let names: Vec<&str> = SqlBenchTest::ALL.iter().map(|t| t.name()).collect();
            return Err(Error::Invalid(format!(
                "sqlbench test `{}` is not supported: use all, {}",
                def.test,
                names.join(", ")
            )));
        };
        let scale = match def.params.get("scale") {
            None => Scale::Full,
            Some(v) => {
                // marks the parameter used, whichever its type
                if v.is_string() {
                    p.string("scale", "")?;
                } else {
                    p.opt_u64("scale").ok();
                }
                Scale::parse(v).map_err(|e| {
                    Error::Invalid(format!(
                        "workload parameter `scale` must be \"small\", \"small-test\", \"full\" or a divisor ≥ 1: {e}"
                    ))
                })?
            }
        };
        let mut s = SqlBenchSpec::new(tests, scale);
        if p.has("engine") {
            s.engine = Some(p.identifier("engine", "")?);
        }
        s.fast_insert = p.bool("fast-insert", false)?;
        if p.has("tcpip") {
            s.tcpip = Some(p.bool("tcpip", false)?);
        }
        s.seed = p.u64("seed", 0)?;
        s.statement_timeout = p.duration("statement-timeout", 600.0)?;
        if s.statement_timeout.is_zero() {
            return Err(Error::Invalid(
                "workload parameter `statement-timeout` must be above 0".into(),
            ));
        }
        Params::new("driver", &def.driver_props).finish()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), Error> {
        if self.tests.is_empty() {
            return Err(Error::Invalid("sqlbench needs at least one test".into()));
        }
        if let Some(e) = &self.engine {
            crate::conn::check_identifier(e)?;
        }
        if self.statement_timeout.is_zero() {
            return Err(Error::Invalid(
                "sqlbench statement-timeout must be above 0".into(),
            ));
        }
        Ok(())
    }

    /// The run's options, as sql-bench's `Arguments:` line would show them.
    pub fn arguments(&self) -> String {
        let mut a = vec![format!("--scale={}", self.scale.label())];
        if let Some(e) = &self.engine {
            a.push(format!("--create-options=ENGINE={e}"));
        }
        if self.fast_insert {
            a.push("--fast-insert".into());
        }
        if self.tcpip == Some(true) {
            a.push("--tcpip".into());
        }
        a.join(" ")
    }

    /// Whether the engine keeps transactions (unknown engines are assumed to).
    pub fn transactional(&self) -> bool {
        const WITHOUT: [&str; 7] = [
            "myisam",
            "aria",
            "memory",
            "heap",
            "csv",
            "archive",
            "blackhole",
        ];
        match &self.engine {
            None => true,
            Some(e) => !WITHOUT.contains(&e.to_ascii_lowercase().as_str()),
        }
    }
}

/// Where a run is, for callers that look between tests (e.g. at server counters).
#[derive(Debug)]
pub enum Progress<'a> {
    /// About to run this test.
    Starting(SqlBenchTest),
    /// The test finished (or was skipped).
    Finished(&'a TestReport),
}

/// Runs `spec` against `target` (its database is created if missing).
pub fn run_sqlbench(target: &Target, spec: &SqlBenchSpec) -> Result<SqlBenchReport, Error> {
    run_sqlbench_with(target, spec, &|| false, &mut |_| {})
}

/// As [`run_sqlbench`], ending with [`Error::Stopped`] as soon as `stop()` is true (it is
/// asked before every statement and connection).
pub fn run_sqlbench_until(
    target: &Target,
    spec: &SqlBenchSpec,
    stop: StopCheck<'_>,
) -> Result<SqlBenchReport, Error> {
    run_sqlbench_with(target, spec, stop, &mut |_| {})
}

/// As [`run_sqlbench_until`], telling `progress` before and after each test (outside the
/// tests' clocks).
pub fn run_sqlbench_with(
    target: &Target,
    spec: &SqlBenchSpec,
    stop: StopCheck<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<SqlBenchReport, Error> {
    spec.validate()?;
    target.ensure_database()?;
    let mut spec = spec.clone();
    spec.tcpip = Some(spec.tcpip.unwrap_or(target.socket.is_none()));
    let server_version = server_version(target)?;
    let date = utc_now();
    let mut tests = Vec::new();
    let start = Instant::now();
    for &test in &spec.tests {
        if stop() {
            return Err(Error::Stopped);
        }
        progress(Progress::Starting(test));
        let report = run_test(target, &spec, stop, test)?;
        progress(Progress::Finished(&report));
        tests.push(report);
    }
    let total_s = start.elapsed().as_secs_f64();
    Ok(SqlBenchReport {
        scale: spec.scale.label(),
        arguments: spec.arguments(),
        server_version,
        machine: machine(),
        date,
        wrong_results: tests.iter().map(|t| t.wrong_results).sum(),
        tests,
        total_s,
    })
}

/// One test, on its own connection(s).
fn run_test(
    target: &Target,
    spec: &SqlBenchSpec,
    stop: StopCheck<'_>,
    test: SqlBenchTest,
) -> Result<TestReport, Error> {
    let mut s = session::Session::new(target, spec, stop, test.name());
    match test {
        SqlBenchTest::AlterTable => alter_table::run(&mut s)?,
        SqlBenchTest::BigTables => big_tables::run(&mut s)?,
        SqlBenchTest::Connect => connect::run(&mut s)?,
        SqlBenchTest::Create => create::run(&mut s)?,
        SqlBenchTest::Insert => insert::run(&mut s)?,
        SqlBenchTest::Select => select::run(&mut s)?,
        SqlBenchTest::Transactions => {
            if !spec.transactional() {
                return Ok(TestReport {
                    name: test.name().into(),
                    skipped: Some(
                        "Test skipped because the database doesn't support transactions".into(),
                    ),
                    ..Default::default()
                });
            }
            transactions::run(&mut s)?
        }
        SqlBenchTest::Wisconsin => wisconsin::run(&mut s)?,
    }
    s.disconnect();
    Ok(s.finish())
}

/// `VERSION()` as sql-bench shows it: `-` as spaces (read with `SHOW VARIABLES`, which moves
/// no counter a test claims).
fn server_version(target: &Target) -> Result<String, Error> {
    let mut c = target.connect()?;
    let v: Option<(String, String)> = c
        .query_first("SHOW VARIABLES LIKE 'version'")
        .map_err(|e| Error::sql("read the server version", e))?;
    let v = v.map(|(_, v)| v).unwrap_or_default().replace('-', " ");
    let family = if v.to_ascii_lowercase().contains("mariadb") {
        "MariaDB"
    } else {
        "MySQL"
    };
    Ok(format!("{family} {v}"))
}

/// `uname`: system, release, machine (sql-bench's `Running tests on:`).
fn machine() -> String {
    // SAFETY: uname fills the zeroed struct we own; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// Now, `YYYY-MM-DD HH:MM:SS` UTC.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Seconds since the epoch as a UTC date and time (the civil-from-days algorithm).
fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The vocabulary knows a per-test figure by its test's name: each test is a stem of
    /// the family, and the family has no stem that is not a test.
    #[test]
    fn every_test_is_a_stem_of_the_per_operation_figures() {
        let tests: Vec<String> = SqlBenchTest::ALL.iter().map(|t| snake(t.name())).collect();
        assert_eq!(cairn_defs::figures::OPERATION_SECONDS.stems, tests);
    }

    #[test]
    fn all_runs_in_run_all_tests_order() {
        let all = SqlBenchTest::parse("all").unwrap();
        let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "alter-table",
                "big-tables",
                "connect",
                "create",
                "insert",
                "select",
                "transactions",
                "wisconsin"
            ]
        );
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "run-all-tests sorts the test-* scripts");
        assert_eq!(
            SqlBenchTest::parse("big-tables"),
            Some(vec![SqlBenchTest::BigTables])
        );
        assert_eq!(SqlBenchTest::parse("big_tables"), None);
        assert_eq!(SqlBenchTest::parse("ATIS"), None);
    }

    #[test]
    fn scales_parse_strictly() {
        assert_eq!(Scale::parse(&json!("small")), Ok(Scale::Small));
        assert_eq!(Scale::parse(&json!("small-test")), Ok(Scale::SmallTest));
        assert_eq!(Scale::parse(&json!("full")), Ok(Scale::Full));
        assert_eq!(Scale::parse(&json!(1)), Ok(Scale::Full));
        assert_eq!(Scale::parse(&json!(20)), Ok(Scale::Divisor(20)));
        for bad in [json!(0), json!(-3), json!(2.5), json!("tiny"), json!(true)] {
            assert!(Scale::parse(&bad).is_err(), "{bad}");
        }
        assert_eq!(Scale::Divisor(20).label(), "1/20");
        assert_eq!(Scale::Divisor(20).pick(100_000, 1000, 100, 100), 5000);
        assert_eq!(Scale::Divisor(5000).pick(100_000, 1000, 100, 100), 100);
        assert_eq!(Scale::Full.pick(100_000, 1000, 100, 100), 100_000);
        assert_eq!(Scale::SmallTest.pick(100_000, 1000, 100, 100), 1000);
        assert_eq!(Scale::Small.pick(100_000, 1000, 100, 100), 100);
    }

    #[test]
    fn spec_arguments_and_engines() {
        let mut s = SqlBenchSpec::new(SqlBenchTest::ALL.to_vec(), Scale::Small);
        assert_eq!(s.arguments(), "--scale=small");
        assert!(s.transactional());
        s.engine = Some("MyISAM".into());
        s.fast_insert = true;
        s.tcpip = Some(true);
        assert_eq!(
            s.arguments(),
            "--scale=small --create-options=ENGINE=MyISAM --fast-insert --tcpip"
        );
        assert!(!s.transactional());
        s.engine = Some("InnoDB".into());
        assert!(s.transactional());
        s.engine = Some("InnoDB; drop".into());
        assert!(s.validate().is_err());
        s.engine = None;
        s.tests.clear();
        assert!(s.validate().is_err());
    }

    fn def(test: &str, params: Value) -> crate::WorkloadDef {
        crate::WorkloadDef {
            driver: "sqlbench".into(),
            test: test.into(),
            driver_props: Default::default(),
            params: params.as_object().unwrap().clone(),
        }
    }

    fn spec(test: &str, params: Value) -> Result<SqlBenchSpec, Error> {
        let w = crate::Workload::from_def(&def(test, params), None, 9)?;
        Ok(w.spec::<SqlBenchSpec>()
            .expect("a sql-bench workload")
            .clone())
    }

    #[test]
    fn workload_parameters() {
        let s = spec(
            "all",
            json!({"scale": "small", "engine": "MyISAM", "fast-insert": true, "tcpip": false,
                   "seed": 3, "statement-timeout": 30.0}),
        )
        .unwrap();
        assert_eq!(s.tests, SqlBenchTest::ALL);
        assert_eq!(s.scale, Scale::Small);
        assert_eq!(s.engine.as_deref(), Some("MyISAM"));
        assert!(s.fast_insert);
        assert_eq!(s.tcpip, Some(false));
        assert_eq!(s.seed, 3, "the pass seed does not change sql-bench's data");
        assert_eq!(s.statement_timeout, Duration::from_secs(30));

        // sql-bench's defaults
        let s = spec("insert", json!({})).unwrap();
        assert_eq!(s.tests, [SqlBenchTest::Insert]);
        assert_eq!(s.scale, Scale::Full);
        assert_eq!(
            (s.engine, s.fast_insert, s.tcpip, s.seed),
            (None, false, None, 0)
        );
        assert_eq!(s.statement_timeout, Duration::from_secs(600));
        assert_eq!(
            spec("select", json!({"scale": 20})).unwrap().scale,
            Scale::Divisor(20)
        );
        assert_eq!(
            spec("select", json!({"scale": 1})).unwrap().scale,
            Scale::Full
        );
        assert_eq!(
            spec("wisconsin", json!({"scale": "small-test"}))
                .unwrap()
                .scale,
            Scale::SmallTest
        );
    }

    #[test]
    fn bad_workloads_are_named() {
        let err = |test: &str, params: Value| spec(test, params).unwrap_err().to_string();
        let e = err("ATIS", json!({}));
        assert!(e.contains("`ATIS`") && e.contains("alter-table"), "{e}");
        let e = err("insert", json!({"scale": "tiny"}));
        assert!(e.contains("`scale`") && e.contains("tiny"), "{e}");
        assert!(err("insert", json!({"scale": 0})).contains("`scale`"));
        assert!(err("insert", json!({"scale": 2.5})).contains("`scale`"));
        assert!(err("insert", json!({"loops": 3})).contains("`loops`"));
        assert!(err("insert", json!({"fast-insert": "yes"})).contains("`fast-insert` must be"));
        assert!(err("insert", json!({"engine": "InnoDB; drop"})).contains("identifier"));
        assert!(err("insert", json!({"statement-timeout": 0})).contains("statement-timeout"));
        let mut d = def("insert", json!({}));
        d.driver_props.insert("tool".into(), json!("external"));
        let e = crate::Workload::from_def(&d, None, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`tool`"), "{e}");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(format_utc(1_735_787_045), "2025-01-02 03:04:05");
    }
}
