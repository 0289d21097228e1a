//! One client thread: connect and prepare, wait for the others, run events (as fast as it can, or when the rate's schedule says) until the clock or the event budget runs out, retry after survivable errors.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;

use super::errors::{classify, is_timeout};
use super::statements::{Query, Statements};
use super::writes::{Write, Writes};
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

struct Client<'a> {
    sh: &'a Shared<'a>,
    conn: Conn,
    stmts: Statements,
    writes: Writes,
    rng: Rng,
    ids: Sampler,
    sending: Sending,
}

/// TCP connect timeout of a reconnection.
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(2);

fn connect(sh: &Shared, reconnect: bool) -> Result<(Conn, Statements, Writes), Error> {
    let spec = sh.spec;
    let cache = Statements::count(spec.tables) + Writes::count(spec.tables) + 8;
    let mut conn = if reconnect {
        sh.target.reconnect_with_cache(cache, RECONNECT_TIMEOUT)?
    } else {
        sh.target.connect_with_cache(cache)?
    };
    // like sysbench, prepare only what the test runs: a write-only test sends no reads,
    // so its (unused) read statements are left as text and nothing is prepared for them
    let reads = spec.test.reads() || spec.test == OltpTest::PointSelect;
    let stmts = Statements::new(&mut conn, spec.tables, spec.prepared && reads)
        .map_err(|e| Error::sql("prepare the statements", e))?;
    let writes = Writes::new(&mut conn, spec.tables, spec.prepared && spec.test.writes())
        .map_err(|e| Error::sql("prepare the write statements", e))?;
    Ok((conn, stmts, writes))
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

/// The thread's body; `None` if it failed (the cause is in `sh.failure`).
pub(crate) fn run(sh: &Shared, thread: u32) -> Option<Recorder> {
    let setup = connect(sh, false);
    if setup.is_err() {
        // before the barrier, so every thread sees `stop` once past it
        sh.stop.store(true, Ordering::SeqCst);
    }
    sh.ready.wait();
    let start = *sh.start.get_or_init(Instant::now);
    let (conn, stmts, writes) = match setup {
        Ok(x) => x,
        Err(e) => {
            fail(sh, thread, e);
            return None;
        }
    };
    let spec = sh.spec;
    let mut c = Client {
        sh,
        conn,
        stmts,
        writes,
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

impl Client<'_> {
    fn table(&mut self) -> u32 {
        self.rng.uniform(1, self.sh.spec.tables)
    }

    fn id(&mut self) -> u32 {
        self.ids.sample(&mut self.rng, 1, self.sh.spec.table_size)
    }

    /// BEGIN, COMMIT or ROLLBACK.
    fn other(&mut self, q: &mut QueryCounts, sql: &str) -> mysql::Result<()> {
        self.sending = Sending::Other;
        self.conn.query_drop(sql)?;
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
    ) -> mysql::Result<()> {
        self.sending = Sending::Read;
        self.stmts.run(&mut self.conn, query, t, a, b)?;
        q.read += 1;
        Ok(())
    }

    /// Runs `w` on table `t`.
    fn write(&mut self, q: &mut QueryCounts, t: u32, w: Write) -> mysql::Result<()> {
        self.sending = Sending::Write;
        self.writes.run(&mut self.conn, t, &w)?;
        q.write += 1;
        Ok(())
    }

    /// One event; `q` counts the queries sent, also if it fails midway.
    fn event(&mut self, q: &mut QueryCounts) -> mysql::Result<()> {
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
    fn writes_part(&mut self, q: &mut QueryCounts) -> mysql::Result<()> {
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
            let Some(mut kind) = classify(&e) else {
                let what = if is_timeout(&e) {
                    format!(
                        "{} event: no answer from the server within {:?} (it hangs)",
                        self.sh.spec.test.name(),
                        self.sh.target.io_timeout.unwrap_or_default()
                    )
                } else {
                    format!("{} event", self.sh.spec.test.name())
                };
                return Err(Error::sql(what, e));
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
                    Err(re) if classify(&re) == Some(ErrorKind::LostConnection) => {
                        kind = ErrorKind::LostConnection
                    }
                    Err(re) => return Err(Error::sql("ROLLBACK after an error", re)),
                }
            }
            rec.failed_attempt(Instant::now(), &q, &failed, kind);
            attempts += 1;
            if attempts > self.sh.spec.max_retries {
                return Err(Error::RetriesExhausted { attempts, last: e });
            }
            if kind == ErrorKind::LostConnection {
                match self.reconnect() {
                    Ok(()) => rec.reconnected(Instant::now()),
                    Err(re) => {
                        return Err(Error::ServerGone {
                            lost: e,
                            reconnect: Box::new(re),
                        })
                    }
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
            match connect(self.sh, true) {
                Ok((conn, stmts, writes)) => {
                    self.conn = conn;
                    self.stmts = stmts;
                    self.writes = writes;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Invalid("the run was stopped".into())))
    }
}
