//! One client thread: connect and prepare, wait for the others, run events (as fast as it can, or when the rate's schedule says) until the clock or the event budget runs out, retry after survivable errors.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::session::Session;
use super::statements::Query;
use super::writes::Write;
use super::{OltpTest, Shared};
use crate::cpu::CpuTime;
use crate::dataset::sysbench::{C_TEMPLATE, PAD_TEMPLATE};
use crate::metrics::{ErrorKind, QueryCounts, Recorder};
use crate::rand::{Rng, Sampler};
use crate::Error;

/// Pauses between reconnection attempts; when all fail the server is taken to be gone.
const RECONNECT_BACKOFF: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_millis(1000),
];

/// Longest sleep while waiting for a scheduled arrival, so a stop is noticed soon.
const SCHEDULE_NAP: Duration = Duration::from_millis(20);

/// Type of the statement being sent, to count the one that fails.
#[derive(Debug, Clone, Copy)]
enum Sending {
    Read,
    Write,
    Other,
}

struct Client<'a, S: Session> {
    sh: &'a Shared<'a>,
    session: S,
    rng: Rng,
    ids: Sampler,
    sending: Sending,
}

/// Sleeps until `at`; `false` if the run was stopped meanwhile.
fn wait_until(sh: &Shared, at: Instant) -> bool {
    loop {
        if sh.stop.load(Ordering::Relaxed) {
            return false;
        }
        if (sh.cancel)() {
            sh.stop.store(true, Ordering::SeqCst);
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        std::thread::sleep((at - now).min(SCHEDULE_NAP));
    }
}

fn fail(sh: &Shared, thread: u32, cause: Error) {
    sh.stop.store(true, Ordering::SeqCst);
    let mut f = sh.failure.lock().unwrap();
    if f.is_none() {
        *f = Some(Error::Worker {
            thread,
            cause: Box::new(cause),
        });
    }
}

/// The thread's body, speaking to the server through `S`; `None` if it failed (the cause is
/// in `sh.failure`).
pub(crate) fn run<S: Session>(sh: &Shared, thread: u32) -> Option<Recorder> {
    let setup = S::open(sh, false);
    if setup.is_err() {
        // before the barrier, so every thread sees `stop` once past it
        sh.stop.store(true, Ordering::SeqCst);
    }
    if !sh.ready.wait() {
        // another thread could not start or panicked: the run fails with its error
        return None;
    }
    let start = *sh.start.get_or_init(Instant::now);
    let session = match setup {
        Ok(x) => x,
        Err(e) => {
            fail(sh, thread, e);
            return None;
        }
    };
    let spec = sh.spec;
    let mut c = Client {
        sh,
        session,
        rng: Rng::for_stream(spec.seed, thread as u64 + 1),
        ids: spec.rand.sampler(),
        sending: Sending::Other,
    };
    let warmup_end = start + spec.warmup;
    let deadline = spec.time.map(|t| warmup_end + t);
    let mut rec = Recorder::new(start, warmup_end, spec.report_interval);
    let mut cpu_mark = CpuTime::thread();
    let mut measuring = spec.warmup.is_zero();
    loop {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        if (sh.cancel)() {
            sh.stop.store(true, Ordering::SeqCst);
            break;
        }
        // with a rate, the event starts at its intended time: waiting for a free thread
        // counts in its latency
        let (started, backlog) = match &sh.schedule {
            None => (Instant::now(), None),
            Some(schedule) => {
                let now = Instant::now();
                let end = deadline.map(|d| d - start);
                let Some(a) = schedule.take(now - start, end) else {
                    break;
                };
                let intended = start + a.at;
                if !wait_until(sh, intended) {
                    break;
                }
                (intended, Some(a.backlog))
            }
        };
        if !rec.is_warmup(started) {
            if !measuring {
                let now = CpuTime::thread();
                rec.add_cpu(false, now.since(&cpu_mark));
                cpu_mark = now;
                measuring = true;
            }
            if deadline.is_some_and(|d| started >= d) {
                break;
            }
            if let Some(n) = spec.events {
                if sh.admitted.fetch_add(1, Ordering::Relaxed) >= n {
                    break;
                }
            }
        }
        if let Some(backlog) = backlog {
            rec.queued(started, Instant::now(), backlog);
        }
        match c.event_with_retries(&mut rec) {
            Ok(q) => rec.event(started, Instant::now(), &q),
            Err(e) => {
                fail(sh, thread, e);
                return None;
            }
        }
    }
    rec.add_cpu(measuring, CpuTime::thread().since(&cpu_mark));
    Some(rec)
}

impl<S: Session> Client<'_, S> {
    fn table(&mut self) -> u32 {
        self.rng.uniform(1, self.sh.spec.tables)
    }

    fn id(&mut self) -> u32 {
        self.ids.sample(&mut self.rng, 1, self.sh.spec.table_size)
    }

    /// BEGIN, COMMIT or ROLLBACK.
    fn other(&mut self, q: &mut QueryCounts, sql: &'static str) -> Result<(), S::Failure> {
        self.sending = Sending::Other;
        self.session.other(sql)?;
        q.other += 1;
        Ok(())
    }

    fn read(
        &mut self,
        q: &mut QueryCounts,
        query: Query,
        t: u32,
        a: u32,
        b: u32,
    ) -> Result<(), S::Failure> {
        self.sending = Sending::Read;
        self.session.read(query, t, a, b)?;
        q.read += 1;
        Ok(())
    }

    /// Runs `w` on table `t`.
    fn write(&mut self, q: &mut QueryCounts, t: u32, w: Write) -> Result<(), S::Failure> {
        self.sending = Sending::Write;
        self.session.write(t, &w)?;
        q.write += 1;
        Ok(())
    }

    /// One event; `q` counts the queries sent, also if it fails midway.
    fn event(&mut self, q: &mut QueryCounts) -> Result<(), S::Failure> {
        let spec = self.sh.spec;
        if spec.test == OltpTest::PointSelect {
            let (t, id) = (self.table(), self.id());
            return self.read(q, Query::Point, t, id, 0);
        }
        if spec.in_trx() {
            self.other(q, "BEGIN")?;
        }
        if spec.test.reads() {
            let t = self.table();
            for _ in 0..spec.point_selects {
                let id = self.id();
                self.read(q, Query::Point, t, id, 0)?;
            }
            if spec.range_selects {
                for (query, n) in [
                    (Query::SimpleRange, spec.simple_ranges),
                    (Query::SumRange, spec.sum_ranges),
                    (Query::OrderRange, spec.order_ranges),
                    (Query::DistinctRange, spec.distinct_ranges),
                ] {
                    let t = self.table();
                    for _ in 0..n {
                        let id = self.id();
                        let end = id.saturating_add(spec.range_size.saturating_sub(1));
                        self.read(q, query, t, id, end)?;
                    }
                }
            }
        }
        if spec.test.writes() {
            self.writes_part(q)?;
        }
        if spec.in_trx() {
            self.other(q, "COMMIT")?;
        }
        Ok(())
    }

    /// `execute_index_updates`, `execute_non_index_updates`, `execute_delete_inserts`: a
    /// table per group, values drawn in sysbench's order.
    fn writes_part(&mut self, q: &mut QueryCounts) -> Result<(), S::Failure> {
        let spec = self.sh.spec;
        let t = self.table();
        for _ in 0..spec.index_updates {
            let id = self.id();
            self.write(q, t, Write::IndexUpdate { id })?;
        }
        let (mut c, mut pad) = ([0u8; C_TEMPLATE.len()], [0u8; PAD_TEMPLATE.len()]);
        let t = self.table();
        for _ in 0..spec.non_index_updates {
            self.rng.fill_template_into(C_TEMPLATE, &mut c);
            let id = self.id();
            self.write(q, t, Write::NonIndexUpdate { c: &c, id })?;
        }
        let t = self.table();
        for _ in 0..spec.delete_inserts {
            let (id, k) = (self.id(), self.id());
            self.rng.fill_template_into(C_TEMPLATE, &mut c);
            self.rng.fill_template_into(PAD_TEMPLATE, &mut pad);
            self.write(q, t, Write::Delete { id })?;
            let (c, pad) = (&c[..], &pad[..]);
            self.write(q, t, Write::Insert { id, k, c, pad })?;
        }
        Ok(())
    }

    /// Runs an event, retrying after survivable errors (each counted in `rec`).
    fn event_with_retries(&mut self, rec: &mut Recorder) -> Result<QueryCounts, Error> {
        let mut attempts = 0;
        loop {
            let mut q = QueryCounts::default();
            let e = match self.event(&mut q) {
                Ok(()) => return Ok(q),
                Err(e) => e,
            };
            let Some(mut kind) = S::classify(&e) else {
                let what = if S::is_timeout(&e) {
                    format!(
                        "{} event: no answer from the server within {:?} (it hangs)",
                        self.sh.spec.test.name(),
                        self.sh.target.io_timeout.unwrap_or_default()
                    )
                } else {
                    format!("{} event", self.sh.spec.test.name())
                };
                return Err(S::fatal(what, e));
            };
            // the statement reached the server and failed there (it counts in `Com_*`)
            let mut failed = QueryCounts::default();
            if kind != ErrorKind::LostConnection {
                match self.sending {
                    Sending::Read => failed.read = 1,
                    Sending::Write => failed.write = 1,
                    Sending::Other => failed.other = 1,
                }
            }
            // a deadlock rolled the transaction back already, a lock wait timeout only the
            // statement: end it either way before the event starts again
            if kind != ErrorKind::LostConnection && self.sh.spec.in_trx() {
                match self.other(&mut q, "ROLLBACK") {
                    Ok(()) => {}
                    Err(re) if S::classify(&re) == Some(ErrorKind::LostConnection) => {
                        kind = ErrorKind::LostConnection
                    }
                    Err(re) => return Err(S::fatal("ROLLBACK after an error".into(), re)),
                }
            }
            rec.failed_attempt(Instant::now(), &q, &failed, kind);
            attempts += 1;
            if attempts > self.sh.spec.max_retries {
                return Err(S::exhausted(attempts, e));
            }
            if kind == ErrorKind::LostConnection {
                match self.reconnect() {
                    Ok(()) => rec.reconnected(Instant::now()),
                    Err(re) => return Err(S::gone(e, re)),
                }
            }
        }
    }

    fn reconnect(&mut self) -> Result<(), Error> {
        let mut last = None;
        for pause in RECONNECT_BACKOFF {
            if self.sh.stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(pause);
            match S::open(self.sh, true) {
                Ok(session) => {
                    self.session = session;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Invalid("the run was stopped".into())))
    }
}
