//! sysbench-compatible OLTP tests (`oltp_point_select`, `oltp_read_only`, `oltp_read_write`, `oltp_write_only`) driven natively: parameters, the threads, the run's clock and its arrival rate.
//!
//! Semantics follow sysbench 1.0.20's `oltp_common.lua` and test scripts (for MariaDB as its
//! `mysql` driver sends them, for PostgreSQL as its `pgsql` driver does, see [`pg`]):
//! - `oltp_point_select`: one `SELECT c FROM sbtestN WHERE id=?` per event, no transaction;
//! - `oltp_read_only`: per event `BEGIN`; `point_selects` (10) point selects; then, if
//!   `range_selects`, `simple_ranges`, `sum_ranges`, `order_ranges`, `distinct_ranges`
//!   (1 each) range queries over `[id, id + range_size - 1]` (range size 100); `COMMIT`;
//! - `oltp_read_write`: the same reads, then `index_updates` (1)
//!   `UPDATE sbtestN SET k=k+1 WHERE id=?`, `non_index_updates` (1)
//!   `UPDATE sbtestN SET c=? WHERE id=?` (a fresh 119-character `c`), `delete_inserts` (1)
//!   `DELETE FROM sbtestN WHERE id=?` followed by
//!   `INSERT INTO sbtestN (id, k, c, pad) VALUES (?, ?, ?, ?)` with the same id, a new `k`
//!   drawn like an id, a new `c` and `pad`; `COMMIT`;
//! - `oltp_write_only`: the same without the reads.
//!
//! As in sysbench, the table is drawn uniformly once per *group* of queries (the point
//! selects share one table, each range kind, the index updates, the non-index updates and
//! the delete/inserts draw their own), ids (and the inserted `k`) from [`OltpSpec::rand`],
//! in sysbench's order of draws. Statements are prepared by default, only those the test
//! runs (BEGIN/COMMIT as text: sysbench's server-side preparation of them falls back to
//! emulation too). Deadlocks, lock wait timeouts and changed records roll the transaction
//! back and restart the event, at most `max_retries` times in a row ([`classify`]).
//!
//! A run is `warmup` followed by the measured window (`time` and/or `events`); the warmup's
//! figures are kept apart ([`Metrics::warmup`](crate::Metrics)). With a `rate`, events
//! arrive on a Poisson schedule and their latency counts from the intended start (see
//! [`rate`]).

pub(crate) mod errors;
mod pg;
pub mod rate;
mod session;
mod statements;
mod wire;
mod worker;
mod writes;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use errors::classify;
pub use statements::Query;
pub use writes::WriteQuery;

use crate::metrics::{merge, Metrics, QueryCounts};
use crate::rand::Distribution;
use crate::{Error, Target};

/// Which sysbench test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OltpTest {
    PointSelect,
    ReadOnly,
    ReadWrite,
    WriteOnly,
}

impl OltpTest {
    pub const ALL: [OltpTest; 4] = [
        OltpTest::PointSelect,
        OltpTest::ReadOnly,
        OltpTest::ReadWrite,
        OltpTest::WriteOnly,
    ];

    /// sysbench's script name.
    pub fn name(self) -> &'static str {
        match self {
            OltpTest::PointSelect => "oltp_point_select",
            OltpTest::ReadOnly => "oltp_read_only",
            OltpTest::ReadWrite => "oltp_read_write",
            OltpTest::WriteOnly => "oltp_write_only",
        }
    }

    /// The test of sysbench's script name.
    pub fn from_name(name: &str) -> Option<Self> {
        OltpTest::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Runs the transaction's read part (point selects and ranges).
    pub fn reads(self) -> bool {
        matches!(self, OltpTest::ReadOnly | OltpTest::ReadWrite)
    }

    /// Runs the write part (updates, delete/inserts).
    pub fn writes(self) -> bool {
        matches!(self, OltpTest::ReadWrite | OltpTest::WriteOnly)
    }
}

/// A run's parameters (sysbench's option names in the comments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpSpec {
    pub test: OltpTest,
    /// `--tables`
    pub tables: u32,
    /// `--table-size`
    pub table_size: u32,
    /// `--threads`: client threads, one connection each.
    pub threads: u32,
    /// `--time`: length of the measured window (after the warmup).
    pub time: Option<Duration>,
    /// `--events`: stop after this many measured events.
    pub events: Option<u64>,
    /// `--warmup-time`: run this long first, with figures kept apart.
    pub warmup: Duration,
    /// `--report-interval`: width of the series' intervals.
    pub report_interval: Duration,
    /// `--rand-type` for ids. Default `uniform`; **sysbench 1.0's default is `special`**
    /// (1.1's is `uniform`), so compare with `sysbench --rand-type=uniform`.
    pub rand: Distribution,
    /// `--range-size`
    pub range_size: u32,
    /// `--range_selects`: run the four kinds of range queries at all.
    pub range_selects: bool,
    /// `--point-selects` (oltp_point_select always sends 1)
    pub point_selects: u32,
    /// `--simple-ranges`
    pub simple_ranges: u32,
    /// `--sum-ranges`
    pub sum_ranges: u32,
    /// `--order-ranges`
    pub order_ranges: u32,
    /// `--distinct-ranges`
    pub distinct_ranges: u32,
    /// `--index-updates`
    pub index_updates: u32,
    /// `--non-index-updates`
    pub non_index_updates: u32,
    /// `--delete-inserts`: DELETE + INSERT pairs.
    pub delete_inserts: u32,
    /// `--skip-trx`: no BEGIN/COMMIT.
    pub skip_trx: bool,
    /// Server-side prepared statements (sysbench's `--db-ps-mode=auto`); `false` = text queries.
    pub prepared: bool,
    /// Attempts of one event after an error, before the run fails.
    pub max_retries: u32,
    /// `--rate`: events per second over all threads, arriving as a Poisson process;
    /// latency counts from each event's intended start. `0` = as fast as possible.
    pub rate: u32,
    /// Seed of the threads' generators (thread `i` uses stream `i`).
    pub seed: u64,
}

impl OltpSpec {
    /// sysbench's defaults for `test`, run for `time` with `threads` threads.
    pub fn new(test: OltpTest, tables: u32, table_size: u32, threads: u32, time: Duration) -> Self {
        OltpSpec {
            test,
            tables,
            table_size,
            threads,
            time: Some(time),
            events: None,
            warmup: Duration::ZERO,
            report_interval: Duration::from_secs(1),
            rand: Distribution::Uniform,
            range_size: 100,
            range_selects: true,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            skip_trx: false,
            prepared: true,
            max_retries: 10,
            rate: 0,
            seed: 0,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Invalid(m.into()));
        if self.tables == 0 || self.table_size == 0 || self.threads == 0 {
            return bad("tables, table_size and threads must be at least 1");
        }
        if self.time.is_none() && self.events.is_none() {
            return bad("give a time or an events limit");
        }
        if self.report_interval.is_zero() {
            return bad("report_interval must be positive");
        }
        self.rand.validate().map_err(Error::Invalid)
    }

    /// Whether events run in a transaction (BEGIN … COMMIT).
    pub fn in_trx(&self) -> bool {
        self.test != OltpTest::PointSelect && !self.skip_trx
    }

    /// Queries per completed event, by type: what a server's `Com_select`, `Com_update` +
    /// `Com_delete` + `Com_insert`, and `Com_begin` + `Com_commit` grow by per event (when
    /// no attempt failed).
    pub fn queries_per_event(&self) -> QueryCounts {
        let mut q = QueryCounts::default();
        if self.test == OltpTest::PointSelect {
            q.read = 1;
            return q;
        }
        if self.test.reads() {
            q.read = self.point_selects as u64;
            if self.range_selects {
                q.read += (self.simple_ranges
                    + self.sum_ranges
                    + self.order_ranges
                    + self.distinct_ranges) as u64;
            }
        }
        if self.test.writes() {
            q.write = (self.index_updates + self.non_index_updates) as u64
                + 2 * self.delete_inserts as u64;
        }
        if self.in_trx() {
            q.other = 2;
        }
        q
    }
}

/// Asked between events: `true` ends the run early (e.g. Ctrl-C); the run then fails with
/// [`Error::Stopped`].
pub type StopCheck<'a> = &'a (dyn Fn() -> bool + Sync);

/// State shared by the client threads.
pub(crate) struct Shared<'a> {
    pub spec: &'a OltpSpec,
    pub target: &'a Target,
    pub cancel: StopCheck<'a>,
    /// Where the threads wait for each other after connecting (called off on trouble).
    pub ready: crate::threads::StartGate,
    pub start: OnceLock<Instant>,
    /// Set to stop every thread (the clock ran out, or a thread failed).
    pub stop: AtomicBool,
    /// Measured events admitted so far (for `events`).
    pub admitted: AtomicU64,
    pub failure: Mutex<Option<Error>>,
    /// The arrivals of a rate-limited run.
    pub schedule: Option<rate::Schedule>,
}

/// Runs `spec` against `target` (whose `sbtest` tables must be loaded) and returns what it
/// measured, or the first thread's fatal error (e.g. the server died).
pub fn run_oltp(target: &Target, spec: &OltpSpec) -> Result<Metrics, Error> {
    run_oltp_until(target, spec, &|| false)
}

/// As [`run_oltp`], ending early with [`Error::Stopped`] once `cancel()` is true.
pub fn run_oltp_until(
    target: &Target,
    spec: &OltpSpec,
    cancel: StopCheck<'_>,
) -> Result<Metrics, Error> {
    spec.validate()?;
    let shared = Shared {
        spec,
        target,
        cancel,
        ready: crate::threads::StartGate::new(spec.threads as usize),
        start: OnceLock::new(),
        stop: AtomicBool::new(false),
        admitted: AtomicU64::new(0),
        failure: Mutex::new(None),
        schedule: (spec.rate > 0).then(|| rate::Schedule::new(spec.rate, spec.seed)),
    };
    // a thread that cannot start or panics stops the others and fails the run
    let protocol = target.protocol;
    let recorders = crate::threads::run_threads(
        spec.threads,
        "oltp",
        |i| match protocol {
            crate::Protocol::Mysql => worker::run::<session::MySession>(&shared, i),
            crate::Protocol::Postgresql => worker::run::<pg::PgSession>(&shared, i),
        },
        || {
            shared.stop.store(true, Ordering::SeqCst);
            shared.ready.call_off();
        },
    );
    if let Some(e) = shared
        .failure
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        return Err(e);
    }
    let recorders: Vec<_> = recorders?.into_iter().flatten().collect();
    if cancel() {
        return Err(Error::Stopped);
    }
    if protocol == crate::Protocol::Postgresql {
        // the sessions' last counts reach pg_stat_database as their backends exit
        crate::pgsql::await_sessions_end(target)?;
    }
    let start = *shared.start.get().expect("threads started");
    let warmup_end = start + spec.warmup;
    let end = recorders
        .iter()
        .filter_map(|r| r.last_done())
        .max()
        .unwrap_or(warmup_end)
        .max(warmup_end);
    let mut m = merge(
        spec.test.name(),
        spec.threads,
        spec.report_interval,
        start,
        warmup_end,
        end,
        recorders,
    );
    m.rate = spec.rate;
    if let (Some(s), Some(time)) = (&shared.schedule, spec.time) {
        // an exhausted event budget, not the clock, ended the run: nothing was left behind
        let budget_spent = spec
            .events
            .is_some_and(|n| shared.admitted.load(Ordering::Relaxed) >= n);
        if !budget_spent {
            m.measured.totals.unstarted = s.untaken_before(spec.warmup + time);
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_per_event_follow_sysbench() {
        let q = |test| OltpSpec::new(test, 1, 10, 1, Duration::from_secs(1)).queries_per_event();
        let counts = |read, write, other| QueryCounts { read, write, other };
        assert_eq!(q(OltpTest::PointSelect), counts(1, 0, 0));
        assert_eq!(q(OltpTest::ReadOnly), counts(14, 0, 2));
        // 2 updates + 1 delete + 1 insert
        assert_eq!(q(OltpTest::ReadWrite), counts(14, 4, 2));
        assert_eq!(q(OltpTest::WriteOnly), counts(0, 4, 2));
        let mut s = OltpSpec::new(OltpTest::ReadWrite, 1, 10, 1, Duration::from_secs(1));
        s.range_selects = false;
        s.skip_trx = true;
        s.delete_inserts = 2;
        assert_eq!(s.queries_per_event(), counts(10, 6, 0));
        for t in OltpTest::ALL {
            assert_eq!(OltpTest::from_name(t.name()), Some(t));
        }
        assert_eq!(OltpTest::from_name("oltp_insert"), None);
    }

    #[test]
    fn invalid_distributions_are_rejected_before_connecting() {
        let mut s = OltpSpec::new(OltpTest::ReadWrite, 1, 10, 1, Duration::from_secs(1));
        s.rand = crate::Distribution::Pareto { h: 1.5 };
        let target = Target::tcp("127.0.0.1", 1, "nobody");
        let e = run_oltp(&target, &s).unwrap_err();
        assert!(e.to_string().contains("pareto h"), "{e}");
    }
}
