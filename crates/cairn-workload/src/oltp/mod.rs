//! sysbench-compatible OLTP tests (`oltp_point_select`, `oltp_read_only`) driven natively: parameters, the threads, the run's clock.
//!
//! Semantics follow sysbench 1.0's `oltp_common.lua`:
//! - `oltp_point_select`: one `SELECT c FROM sbtestN WHERE id=?` per event, no transaction;
//! - `oltp_read_only`: per event `BEGIN`; `point_selects` (10) point selects; then
//!   `simple_ranges`, `sum_ranges`, `order_ranges`, `distinct_ranges` (1 each) range
//!   queries over `[id, id + range_size - 1]` (range size 100); `COMMIT`. As in sysbench,
//!   the table is drawn uniformly once per *group* of queries (the point selects share one
//!   table, each range kind draws its own), the ids from [`OltpSpec::rand`].
//! - prepared statements by default (BEGIN/COMMIT as text: sysbench's server-side
//!   preparation of them falls back to emulation too).
//!
//! A run is `warmup` followed by the measured window (`time` and/or `events`); the warmup's
//! figures are kept apart ([`Metrics::warmup`](crate::Metrics)).

mod errors;
mod statements;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use errors::classify;
pub use statements::Query;

use crate::metrics::{merge, Metrics};
use crate::rand::Distribution;
use crate::{Error, Target};

/// Which sysbench test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OltpTest {
    PointSelect,
    ReadOnly,
}

impl OltpTest {
    /// sysbench's script name.
    pub fn name(self) -> &'static str {
        match self {
            OltpTest::PointSelect => "oltp_point_select",
            OltpTest::ReadOnly => "oltp_read_only",
        }
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
    /// `--skip-trx`: no BEGIN/COMMIT.
    pub skip_trx: bool,
    /// Server-side prepared statements (sysbench's `--db-ps-mode=auto`); `false` = text queries.
    pub prepared: bool,
    /// Attempts of one event after an error, before the run fails.
    pub max_retries: u32,
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
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            skip_trx: false,
            prepared: true,
            max_retries: 10,
            seed: 0,
        }
    }

    fn validate(&self) -> Result<(), Error> {
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
        Ok(())
    }

    /// Queries per event of each type: `(reads, other)`, what a server's `Com_select` and
    /// `Com_begin` + `Com_commit` should grow by per event.
    pub fn queries_per_event(&self) -> (u64, u64) {
        match self.test {
            OltpTest::PointSelect => (1, 0),
            OltpTest::ReadOnly => {
                let reads = self.point_selects
                    + self.simple_ranges
                    + self.sum_ranges
                    + self.order_ranges
                    + self.distinct_ranges;
                (reads as u64, if self.skip_trx { 0 } else { 2 })
            }
        }
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
    pub ready: Barrier,
    pub start: OnceLock<Instant>,
    /// Set to stop every thread (the clock ran out, or a thread failed).
    pub stop: AtomicBool,
    /// Measured events admitted so far (for `events`).
    pub admitted: AtomicU64,
    pub failure: Mutex<Option<Error>>,
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
        ready: Barrier::new(spec.threads as usize),
        start: OnceLock::new(),
        stop: AtomicBool::new(false),
        admitted: AtomicU64::new(0),
        failure: Mutex::new(None),
    };
    let recorders = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.threads)
            .map(|i| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("oltp-{i}"))
                    .spawn_scoped(s, move || worker::run(shared, i))
                    .expect("spawn a client thread")
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("client thread panicked"))
            .collect::<Vec<_>>()
    });
    if let Some(e) = shared.failure.into_inner().unwrap() {
        return Err(e);
    }
    if cancel() {
        return Err(Error::Stopped);
    }
    let start = *shared.start.get().expect("threads started");
    let warmup_end = start + spec.warmup;
    let end = recorders
        .iter()
        .filter_map(|r| r.last_done())
        .max()
        .unwrap_or(warmup_end)
        .max(warmup_end);
    Ok(merge(
        spec.test.name(),
        spec.threads,
        spec.report_interval,
        start,
        warmup_end,
        end,
        recorders,
    ))
}
