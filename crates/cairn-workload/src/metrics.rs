//! What a run measured: per-interval series, totals by query type and error kind, HDR latency histograms and their percentiles, client CPU — warmup kept apart from the measured window.
//!
//! Each client thread records into its own [`Recorder`] (no sharing while running); the
//! recorders are merged into [`Metrics`] at the end. An event belongs to the phase and the
//! interval in which it *started*, so the events in the measured totals are exactly the
//! ones admitted after the warmup (and an `events` limit counts exactly those). With a
//! fixed arrival rate an event "starts" at its *intended* time on the schedule, and its
//! latency runs from there: time spent waiting for a free thread counts (no coordinated
//! omission); that wait is also kept on its own ([`PhaseMetrics::queue`]).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::cpu::CpuTime;

/// Highest latency the histograms hold: one hour, in microseconds (larger values saturate).
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Queries sent, by sysbench's types: reads (SELECT), writes, other (BEGIN, COMMIT, ROLLBACK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryCounts {
    pub read: u64,
    pub write: u64,
    pub other: u64,
}

impl QueryCounts {
    pub fn total(&self) -> u64 {
        self.read + self.write + self.other
    }

    fn add(&mut self, o: &QueryCounts) {
        self.read += o.read;
        self.write += o.write;
        self.other += o.other;
    }
}

/// Errors that made an event be retried (or, at the last one, the run fail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// ER_LOCK_DEADLOCK (1213).
    pub deadlock: u64,
    /// ER_LOCK_WAIT_TIMEOUT (1205).
    pub lock_wait_timeout: u64,
    /// The connection broke (I/O error, server gone, connection killed).
    pub lost_connection: u64,
    /// ER_CHECKREAD (1020), "record has changed since last read": a write conflict that
    /// MariaDB ≥ 11.6 reports under `innodb_snapshot_isolation` (sysbench ignores it too).
    #[serde(default)]
    pub record_changed: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.deadlock + self.lock_wait_timeout + self.lost_connection + self.record_changed
    }

    fn add(&mut self, o: &ErrorCounts) {
        self.deadlock += o.deadlock;
        self.lock_wait_timeout += o.lock_wait_timeout;
        self.lost_connection += o.lost_connection;
        self.record_changed += o.record_changed;
    }
}

/// The kinds of error a run survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Deadlock,
    LockWaitTimeout,
    LostConnection,
    RecordChanged,
}

/// Totals of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Events (transactions, or single queries for point_select) completed.
    pub events: u64,
    /// Queries sent successfully, also those of attempts that failed later.
    pub queries: QueryCounts,
    /// The statements that failed with a survivable error, by type (the server counts them
    /// in its `Com_*` counters too; `queries` does not).
    #[serde(default)]
    pub failed: QueryCounts,
    pub errors: ErrorCounts,
    /// Event attempts repeated after an error.
    pub retries: u64,
    pub reconnects: u64,
    /// With a fixed rate: arrivals due before the end of the measured window that no thread
    /// started before the time ran out (the threads could not keep up).
    #[serde(default)]
    pub unstarted: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.events += o.events;
        self.queries.add(&o.queries);
        self.failed.add(&o.failed);
        self.errors.add(&o.errors);
        self.retries += o.retries;
        self.reconnects += o.reconnects;
        self.unstarted += o.unstarted;
    }
}

/// One report interval (by default one second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start of the interval, seconds since the run started (warmup included).
    pub start_s: f64,
    /// The interval began before the end of the warmup.
    pub warmup: bool,
    pub events: u64,
    pub queries: u64,
    pub errors: u64,
    pub reconnects: u64,
    /// With a fixed rate: the most arrivals that were due but not yet started, as seen when
    /// a thread took an event in this interval (sysbench's `queue`).
    #[serde(default)]
    pub backlog: u64,
}

/// Event latency percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: h.len(),
            min_ms: ms(h.min()),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// One phase's figures: totals, latency, the raw histogram and client CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseMetrics {
    /// Length of the phase, seconds.
    pub seconds: f64,
    pub totals: Totals,
    pub latency: LatencySummary,
    /// The raw HDR histogram of event latencies: `[value_us, count]` for every recorded
    /// bucket (3 significant digits), enough to merge runs or recompute any percentile.
    pub histogram_us: Vec<[u64; 2]>,
    /// CPU time of the client threads during the phase.
    pub client_cpu: CpuTime,
    /// With a fixed rate: how late events started after their intended time (waiting for a
    /// free thread); part of `latency`. Empty without a rate.
    #[serde(default)]
    pub queue: LatencySummary,
}

/// Everything a run measured. `measured` excludes the warmup, which is kept in `warmup`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub test: String,
    pub threads: u32,
    pub report_interval_s: f64,
    /// Target arrival rate, events per second over all threads; 0 = as fast as possible.
    #[serde(default)]
    pub rate: u32,
    /// Per-interval series over the whole run, warmup included (flagged).
    pub series: Vec<Interval>,
    pub warmup: PhaseMetrics,
    pub measured: PhaseMetrics,
    /// Events per second over the measured window.
    pub tps: f64,
    /// Queries per second over the measured window (all types, as sysbench's qps).
    pub qps: f64,
}

impl Metrics {
    /// The measured totals (the reported figures).
    pub fn totals(&self) -> &Totals {
        &self.measured.totals
    }
}

struct Phase {
    totals: Totals,
    hist: Histogram<u64>,
    /// Schedule lag of rate-limited events.
    queue: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid bounds")
}

impl Phase {
    fn new() -> Self {
        Phase {
            totals: Totals::default(),
            hist: histogram(),
            queue: histogram(),
        }
    }
}

/// A client thread's measurements.
pub(crate) struct Recorder {
    start: Instant,
    warmup_end: Instant,
    interval: Duration,
    series: Vec<Interval>,
    phases: [Phase; 2],
    cpu: [CpuTime; 2],
    last_done: Option<Instant>,
    /// The interval events fell into last (`series[cur]`, `[cur_start, cur_end)`): events
    /// come in time order, so finding their interval is usually two comparisons.
    cur: usize,
    cur_start: Instant,
    cur_end: Instant,
}

impl Recorder {
    pub(crate) fn new(start: Instant, warmup_end: Instant, interval: Duration) -> Self {
        Recorder {
            start,
            warmup_end,
            interval,
            series: Vec::new(),
            phases: [Phase::new(), Phase::new()],
            cpu: [CpuTime::default(); 2],
            last_done: None,
            cur: usize::MAX,
            cur_start: start,
            cur_end: start,
        }
    }

    pub(crate) fn is_warmup(&self, at: Instant) -> bool {
        at < self.warmup_end
    }

    fn slot(&mut self, at: Instant) -> (&mut Interval, &mut Totals) {
        if !(self.cur_start <= at && at < self.cur_end) {
            let i = (at.saturating_duration_since(self.start).as_nanos()
                / self.interval.as_nanos().max(1)) as usize;
            while self.series.len() <= i {
                let start = self.interval * self.series.len() as u32;
                self.series.push(Interval {
                    start_s: start.as_secs_f64(),
                    warmup: self.start + start < self.warmup_end,
                    ..Interval::default()
                });
            }
            self.cur = i;
            self.cur_start = self.start + self.interval * i as u32;
            self.cur_end = self.cur_start + self.interval;
        }
        let phase = usize::from(!self.is_warmup(at));
        (&mut self.series[self.cur], &mut self.phases[phase].totals)
    }

    /// An event that started at `started` and completed now, having sent `queries`.
    pub(crate) fn event(&mut self, started: Instant, done: Instant, queries: &QueryCounts) {
        let latency_us = done.saturating_duration_since(started).as_micros() as u64;
        let phase = usize::from(!self.is_warmup(started));
        self.phases[phase].hist.saturating_record(latency_us.max(1));
        let (iv, totals) = self.slot(started);
        iv.events += 1;
        iv.queries += queries.total();
        totals.events += 1;
        totals.queries.add(queries);
        self.last_done = Some(self.last_done.map_or(done, |l| l.max(done)));
    }

    /// A failed attempt: the queries it sent before the error, and the statement that
    /// failed (by type; none if the connection broke between statements).
    pub(crate) fn failed_attempt(
        &mut self,
        at: Instant,
        queries: &QueryCounts,
        failed: &QueryCounts,
        kind: ErrorKind,
    ) {
        let (iv, totals) = self.slot(at);
        iv.queries += queries.total();
        iv.errors += 1;
        totals.queries.add(queries);
        totals.failed.add(failed);
        totals.retries += 1;
        match kind {
            ErrorKind::Deadlock => totals.errors.deadlock += 1,
            ErrorKind::LockWaitTimeout => totals.errors.lock_wait_timeout += 1,
            ErrorKind::LostConnection => totals.errors.lost_connection += 1,
            ErrorKind::RecordChanged => totals.errors.record_changed += 1,
        }
    }

    /// A rate-limited event intended for `intended` began at `began`, with `backlog`
    /// arrivals due and not yet started when it was taken.
    pub(crate) fn queued(&mut self, intended: Instant, began: Instant, backlog: u64) {
        let lag_us = began.saturating_duration_since(intended).as_micros() as u64;
        let phase = usize::from(!self.is_warmup(intended));
        self.phases[phase].queue.saturating_record(lag_us.max(1));
        let (iv, _) = self.slot(intended);
        iv.backlog = iv.backlog.max(backlog);
    }

    pub(crate) fn reconnected(&mut self, at: Instant) {
        let (iv, totals) = self.slot(at);
        iv.reconnects += 1;
        totals.reconnects += 1;
    }

    /// CPU time the thread spent in the warmup (`0`) or measured (`1`) phase.
    pub(crate) fn add_cpu(&mut self, measured: bool, cpu: CpuTime) {
        self.cpu[usize::from(measured)].add(&cpu);
    }

    pub(crate) fn last_done(&self) -> Option<Instant> {
        self.last_done
    }
}

/// Merges the threads' recorders; `end` closes the measured window.
pub(crate) fn merge(
    test: &str,
    threads: u32,
    interval: Duration,
    start: Instant,
    warmup_end: Instant,
    end: Instant,
    recorders: Vec<Recorder>,
) -> Metrics {
    let mut series: Vec<Interval> = Vec::new();
    let mut phases = [Phase::new(), Phase::new()];
    let mut cpu = [CpuTime::default(); 2];
    for r in recorders {
        for (i, iv) in r.series.iter().enumerate() {
            if series.len() <= i {
                series.resize(i + 1, Interval::default());
            }
            let s = &mut series[i];
            s.start_s = iv.start_s;
            s.warmup = iv.warmup;
            s.events += iv.events;
            s.queries += iv.queries;
            s.errors += iv.errors;
            s.reconnects += iv.reconnects;
            s.backlog = s.backlog.max(iv.backlog);
        }
        for (p, rp) in phases.iter_mut().zip(r.phases.iter()) {
            p.totals.add(&rp.totals);
            p.hist.add(&rp.hist).expect("same bounds");
            p.queue.add(&rp.queue).expect("same bounds");
        }
        for (c, rc) in cpu.iter_mut().zip(r.cpu.iter()) {
            c.add(rc);
        }
    }
    // intervals no thread reached (e.g. a stall): keep them, with zeros
    for (i, s) in series.iter_mut().enumerate() {
        let t = interval * i as u32;
        s.start_s = t.as_secs_f64();
        s.warmup = start + t < warmup_end;
    }
    let phase_metrics = |p: &Phase, seconds: f64, cpu: CpuTime| PhaseMetrics {
        seconds,
        totals: p.totals,
        latency: LatencySummary::of(&p.hist),
        histogram_us: p
            .hist
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect(),
        client_cpu: cpu,
        queue: LatencySummary::of(&p.queue),
    };
    let warmup_s = warmup_end.saturating_duration_since(start).as_secs_f64();
    let measured_s = end.saturating_duration_since(warmup_end).as_secs_f64();
    let measured = phase_metrics(&phases[1], measured_s, cpu[1]);
    let per_s = |n: u64| {
        if measured_s > 0.0 {
            n as f64 / measured_s
        } else {
            0.0
        }
    };
    Metrics {
        test: test.into(),
        threads,
        report_interval_s: interval.as_secs_f64(),
        rate: 0,
        series,
        warmup: phase_metrics(&phases[0], warmup_s, cpu[0]),
        tps: per_s(measured.totals.events),
        qps: per_s(measured.totals.queries.total()),
        measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_out_of_order_land_in_their_interval() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let q = QueryCounts {
            read: 1,
            write: 0,
            other: 0,
        };
        let mut r = Recorder::new(start, start, ms(100));
        for t in [250, 50, 260, 99, 100, 0, 399] {
            r.event(start + ms(t), start + ms(t + 1), &q);
        }
        let m = merge("t", 1, ms(100), start, start, start + ms(400), vec![r]);
        let events: Vec<u64> = m.series.iter().map(|s| s.events).collect();
        assert_eq!(events, [3, 1, 2, 1]);
    }

    #[test]
    fn events_split_by_phase_and_interval() {
        let start = Instant::now();
        let warmup_end = start + Duration::from_secs(1);
        let end = start + Duration::from_secs(3);
        let q = QueryCounts {
            read: 14,
            write: 0,
            other: 2,
        };
        let mut a = Recorder::new(start, warmup_end, Duration::from_secs(1));
        let mut b = Recorder::new(start, warmup_end, Duration::from_secs(1));
        let ms = Duration::from_millis;
        a.event(start + ms(100), start + ms(102), &q);
        a.event(start + ms(1500), start + ms(1510), &q);
        b.event(start + ms(2500), start + ms(2501), &q);
        let one_write = QueryCounts {
            write: 1,
            ..QueryCounts::default()
        };
        b.failed_attempt(start + ms(2600), &q, &one_write, ErrorKind::Deadlock);
        b.failed_attempt(start + ms(2700), &q, &one_write, ErrorKind::RecordChanged);
        // a rate-limited event intended at 2.8 s that began 5 ms late, 3 others due
        b.queued(start + ms(2800), start + ms(2805), 3);
        a.queued(start + ms(2900), start + ms(2900), 1);
        let m = merge(
            "t",
            2,
            Duration::from_secs(1),
            start,
            warmup_end,
            end,
            vec![a, b],
        );
        assert_eq!(m.series.len(), 3);
        assert!(m.series[0].warmup && !m.series[1].warmup);
        assert_eq!(
            m.series.iter().map(|s| s.events).collect::<Vec<_>>(),
            [1, 1, 1]
        );
        assert_eq!(m.series[2].errors, 2);
        assert_eq!(m.series[2].backlog, 3);
        assert_eq!(m.warmup.totals.events, 1);
        assert_eq!(m.measured.totals.events, 2);
        assert_eq!(m.measured.totals.queries.read, 14 * 4);
        assert_eq!(m.measured.totals.failed.write, 2);
        assert_eq!(m.measured.totals.errors.deadlock, 1);
        assert_eq!(m.measured.totals.errors.total(), 2);
        assert_eq!(m.measured.queue.count, 2);
        assert!((m.measured.queue.max_ms - 5.0).abs() < 0.01);
        assert_eq!(m.warmup.queue.count, 0);
        assert_eq!(m.measured.latency.count, 2);
        assert!((m.measured.latency.max_ms - 10.0).abs() < 0.1);
        assert!((m.tps - 1.0).abs() < 1e-9);
        let n: u64 = m.measured.histogram_us.iter().map(|b| b[1]).sum();
        assert_eq!(n, 2);
    }
}
