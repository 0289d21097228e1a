//! A fixed arrival rate (sysbench's `--rate`): intended start times from a seeded Poisson process, taken by the client threads in arrival order.
//!
//! sysbench 1.0 runs an event-generator thread that sleeps through exponentially
//! distributed gaps (`-ln(1 - u) / rate` seconds, truncated to whole microseconds) and
//! queues a timestamp per arrival; an idle worker takes the oldest one, and the event's
//! latency counts from that timestamp (its `queue_time` is added to the measured time), so
//! a stalled server shows up in the latency instead of silently lowering the offered load.
//!
//! Here no generator thread is needed: the arrivals are a sequence computed from the seed,
//! and a thread takes the next one under a lock, sleeps until it is due if it is early,
//! and measures from its intended time. Three differences from sysbench, all on purpose:
//! sysbench's idle workers poll an empty queue every `0.5 × threads / rate` seconds, which
//! delays starts, where a thread here sleeps until the exact intended time; sysbench
//! truncates each gap to whole microseconds, which shortens the mean gap by about half a
//! microsecond and so raises high rates (by 5% at 100000/s), where gaps here keep
//! nanoseconds; and sysbench gives up when 131072 arrivals are queued, where here the run
//! stops at its time limit as usual and reports the backlog and the arrivals never started
//! ([`Totals::unstarted`](crate::Totals)).

use std::sync::Mutex;
use std::time::Duration;

use crate::rand::Rng;

/// The arrival process, as offsets from the run's start.
#[derive(Debug, Clone)]
struct Arrivals {
    rng: Rng,
    rate: f64,
    /// Intended time of the next arrival.
    next: Duration,
    /// Arrivals before `next`.
    passed: u64,
}

impl Arrivals {
    fn new(rate: u32, seed: u64) -> Self {
        // stream 0: the client threads use streams 1..=threads
        let mut a = Arrivals {
            rng: Rng::for_stream(seed, 0),
            rate: rate as f64,
            next: Duration::ZERO,
            passed: 0,
        };
        // the first arrival comes one gap after the start, not at once
        a.next = a.gap();
        a
    }

    /// An exponentially distributed gap of mean `1 / rate` (inverse transform of a uniform
    /// draw in `[0, 1)`, as sysbench's generator), to the nanosecond.
    fn gap(&mut self) -> Duration {
        let u = self.rng.next_f64();
        Duration::from_nanos((-(1.0 - u).ln() / self.rate * 1e9) as u64)
    }

    fn advance(&mut self) {
        let gap = self.gap();
        self.next += gap;
        self.passed += 1;
    }
}

/// The shared schedule of a rate-limited run.
pub(crate) struct Schedule {
    state: Mutex<State>,
}

struct State {
    /// The next arrival no thread has taken yet.
    take: Arrivals,
    /// The same sequence, advanced to "now" to count what is due (sysbench's queue length).
    due: Arrivals,
}

/// An arrival a thread took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// Intended start, from the run's start.
    pub at: Duration,
    /// Arrivals due by the time it was taken and not taken yet, this one excluded.
    pub backlog: u64,
}

impl Schedule {
    /// `rate` events per second (at least 1), from `seed`.
    pub(crate) fn new(rate: u32, seed: u64) -> Self {
        let a = Arrivals::new(rate.max(1), seed);
        Schedule {
            state: Mutex::new(State {
                take: a.clone(),
                due: a,
            }),
        }
    }

    /// Takes the next arrival, unless the run ends first: `None` once `now` or the
    /// arrival's intended time reaches `end` (sysbench stops starting events at the time
    /// limit, queued ones included).
    pub(crate) fn take(&self, now: Duration, end: Option<Duration>) -> Option<Arrival> {
        let mut st = self.state.lock().unwrap();
        let at = st.take.next;
        if end.is_some_and(|e| now >= e || at >= e) {
            return None;
        }
        st.take.advance();
        while st.due.next <= now {
            st.due.advance();
        }
        let backlog = st.due.passed.saturating_sub(st.take.passed);
        Some(Arrival { at, backlog })
    }

    /// Arrivals intended before `end` that no thread took.
    pub(crate) fn untaken_before(&self, end: Duration) -> u64 {
        let mut c = self.state.lock().unwrap().take.clone();
        let mut n = 0;
        while c.next < end {
            c.advance();
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn gaps_are_exponential_with_the_rate_as_mean() {
        let mut a = Arrivals::new(200, 1);
        let n = 100_000;
        let gaps: Vec<f64> = (0..n)
            .map(|_| {
                let before = a.next;
                a.advance();
                (a.next - before).as_secs_f64()
            })
            .collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        assert!((mean - 1.0 / 200.0).abs() < 0.0001, "{mean}");
        // memoryless: P(gap > mean) = e^-1, and the coefficient of variation is 1
        let above = gaps.iter().filter(|&&g| g > 1.0 / 200.0).count() as f64 / n as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.03, "{cv}");
        // 60 s hold about 12000 arrivals
        let s = Schedule::new(200, 2);
        let all = s.untaken_before(secs(60.0)) as f64;
        assert!((all - 12_000.0).abs() < 4.0 * 12_000f64.sqrt(), "{all}");
        // high rates are not inflated by rounding the gaps (10 µs on average here)
        let s = Schedule::new(100_000, 4);
        let all = s.untaken_before(secs(10.0)) as f64;
        assert!((all - 1e6).abs() < 4.0 * 1e6f64.sqrt(), "{all}");
    }

    #[test]
    fn takes_in_order_counts_backlog_and_stops_at_the_end() {
        let s = Schedule::new(100, 3);
        let total = s.untaken_before(secs(2.0));
        // early takers get future arrivals, nothing is due
        let first = s.take(Duration::ZERO, Some(secs(2.0))).unwrap();
        assert_eq!(first.backlog, 0);
        let second = s.take(Duration::ZERO, Some(secs(2.0))).unwrap();
        assert!(second.at >= first.at);
        // a taker late by a second sees what piled up
        let late = s.take(secs(1.0), Some(secs(2.0))).unwrap();
        assert!(late.at < secs(1.0));
        let due = s.untaken_before(secs(1.0));
        assert!(late.backlog == due, "{} vs {due}", late.backlog);
        assert!(late.backlog > 50, "{}", late.backlog);
        // the same seed gives the same schedule
        let again = Schedule::new(100, 3);
        assert_eq!(again.take(Duration::ZERO, None).unwrap().at, first.at);
        // past the end, nothing more is handed out, also not queued arrivals
        assert!(s.take(secs(2.0), Some(secs(2.0))).is_none());
        assert_eq!(s.untaken_before(secs(2.0)), total - 3);
        let mut n = 3;
        while let Some(a) = s.take(secs(1.5), Some(secs(2.0))) {
            assert!(a.at < secs(2.0));
            n += 1;
        }
        assert_eq!(n, total);
        assert_eq!(s.untaken_before(secs(2.0)), 0);
    }
}
