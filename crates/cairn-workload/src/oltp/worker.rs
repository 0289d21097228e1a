//! One client thread: connect and prepare, wait for the others, run events until the clock or the event budget runs out, retry after survivable errors.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;

use super::errors::classify;
use super::statements::{Query, Statements};
use super::{OltpTest, Shared};
use crate::cpu::CpuTime;
use crate::metrics::{ErrorKind, QueryCounts, Recorder};
use crate::rand::Rng;
use crate::Error;

/// Pauses between reconnection attempts; when all fail the server is taken to be gone.
const RECONNECT_BACKOFF: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_millis(1000),
];

struct Client<'a> {
    sh: &'a Shared<'a>,
    conn: Conn,
    stmts: Statements,
    rng: Rng,
}

/// TCP connect timeout of a reconnection.
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(2);

fn connect(sh: &Shared, reconnect: bool) -> Result<(Conn, Statements), Error> {
    let spec = sh.spec;
    let cache = Statements::count(spec.tables) + 8;
    let mut conn = if reconnect {
        sh.target.reconnect_with_cache(cache, RECONNECT_TIMEOUT)?
    } else {
        sh.target.connect_with_cache(cache)?
    };
    let stmts = Statements::new(&mut conn, spec.tables, spec.prepared)
        .map_err(|e| Error::sql("prepare the statements", e))?;
    Ok((conn, stmts))
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
    let (conn, stmts) = match setup {
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
        rng: Rng::for_stream(spec.seed, thread as u64 + 1),
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
        let started = Instant::now();
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
        self.sh
            .spec
            .rand
            .sample(&mut self.rng, 1, self.sh.spec.table_size)
    }

    fn in_trx(&self) -> bool {
        self.sh.spec.test == OltpTest::ReadOnly && !self.sh.spec.skip_trx
    }

    /// One event; `q` counts the queries sent, also if it fails midway.
    fn event(&mut self, q: &mut QueryCounts) -> mysql::Result<()> {
        let spec = self.sh.spec;
        match spec.test {
            OltpTest::PointSelect => {
                let (t, id) = (self.table(), self.id());
                self.stmts.run(&mut self.conn, Query::Point, t, id, 0)?;
                q.read += 1;
            }
            OltpTest::ReadOnly => {
                if !spec.skip_trx {
                    self.conn.query_drop("BEGIN")?;
                    q.other += 1;
                }
                let t = self.table();
                for _ in 0..spec.point_selects {
                    let id = self.id();
                    self.stmts.run(&mut self.conn, Query::Point, t, id, 0)?;
                    q.read += 1;
                }
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
                        self.stmts.run(&mut self.conn, query, t, id, end)?;
                        q.read += 1;
                    }
                }
                if !spec.skip_trx {
                    self.conn.query_drop("COMMIT")?;
                    q.other += 1;
                }
            }
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
                return Err(Error::sql(format!("{} event", self.sh.spec.test.name()), e));
            };
            if kind != ErrorKind::LostConnection && self.in_trx() {
                match self.conn.query_drop("ROLLBACK") {
                    Ok(()) => q.other += 1,
                    Err(re) if classify(&re) == Some(ErrorKind::LostConnection) => {
                        kind = ErrorKind::LostConnection
                    }
                    Err(re) => return Err(Error::sql("ROLLBACK after an error", re)),
                }
            }
            rec.failed_attempt(Instant::now(), &q, kind);
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
                Ok((conn, stmts)) => {
                    self.conn = conn;
                    self.stmts = stmts;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Invalid("the run was stopped".into())))
    }
}
