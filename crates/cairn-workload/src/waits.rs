//! What a server's sessions waited on over a measured window: its wait statistics, where the
//! server keeps them.
//!
//! - MariaDB and MySQL: the performance schema's `events_waits_summary_by_user_by_event_name`
//!   summed over its users (the sessions of clients, those that ended included; background
//!   threads have no user), read at the window's start and end; each event's time waited is
//!   the difference of its `SUM_TIMER_WAIT` (picoseconds). The schema must be on (the trial
//!   switches it on with every wait instrument timed when `waits` is asked, because they cost
//!   throughput). `idle` and the client connection's socket waits are left out: a session
//!   waiting for its client's next statement is the client's time, not the server's.
//! - PostgreSQL keeps no cumulative wait times: a thread samples `pg_stat_activity` every
//!   [`PG_INTERVAL`] on a connection of its own, and each active client session seen waiting
//!   on an event (or on none: `CPU`) counts that interval of session time to it. An estimate,
//!   finer the more samples it rests on.
//!
//! Either way a window's waits are microseconds of session time per event, named as the
//! server names it (`wait/synch/mutex/innodb/buf_pool_mutex`, `LWLock:BufferMapping`, and
//! `CPU:running` for a PostgreSQL session seen waiting on nothing), one event per line with
//! its µs: the shape of a flame graph's folded stacks (each a stack of one frame), so the
//! same code compares them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use crate::conn::{Protocol, Target};

/// How often PostgreSQL's sessions are sampled.
pub const PG_INTERVAL: Duration = Duration::from_millis(50);

/// The server options that switch the performance schema on with its wait instruments timed
/// (MariaDB and MySQL; option-file names).
pub const MYSQL_OPTIONS: &[(&str, &str)] = &[
    ("performance_schema", "ON"),
    ("performance-schema-instrument", "wait/%=ON"),
];

/// A window's waits: microseconds of session time per event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Waits {
    /// Where they come from, for the record.
    pub source: &'static str,
    pub micros: BTreeMap<String, f64>,
    /// PostgreSQL: how many times the sessions were sampled (0 for a cumulative source).
    pub samples: u64,
}

impl Waits {
    /// As folded lines, `event µs` (rounded to whole microseconds, nothing under 1).
    pub fn to_folded(&self) -> String {
        self.micros
            .iter()
            .filter(|(_, us)| us.round() >= 1.0)
            .map(|(event, us)| format!("{event} {}\n", us.round() as u64))
            .collect()
    }
}

/// A window's wait statistics being taken.
pub enum WaitsRecording {
    Mysql {
        conn: Box<mysql::Conn>,
        before: BTreeMap<String, f64>,
    },
    Postgresql {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Result<Waits, String>>,
    },
}

impl WaitsRecording {
    /// Starts at the window's start: the first reading (MySQL family) or the sampler
    /// (PostgreSQL). The error says why the server cannot tell.
    pub fn start(target: &Target) -> Result<WaitsRecording, String> {
        match target.protocol {
            Protocol::Mysql => {
                let mut conn = target
                    .connect_no_db()
                    .map_err(|e| format!("connecting to read the performance schema: {e}"))?;
                let on: Option<i64> = conn
                    .query_first("SELECT @@performance_schema")
                    .map_err(|e| format!("reading @@performance_schema: {e}"))?;
                if on != Some(1) {
                    return Err("the server's performance schema is off".into());
                }
                let before = mysql_waits(&mut conn)?;
                Ok(WaitsRecording::Mysql {
                    conn: Box::new(conn),
                    before,
                })
            }
            Protocol::Postgresql => {
                let conn = crate::pgsql::status_connection(target)
                    .map_err(|e| format!("connecting to sample pg_stat_activity: {e}"))?;
                let stop = Arc::new(AtomicBool::new(false));
                let flag = stop.clone();
                let thread = std::thread::spawn(move || sample_pg(&conn, &flag));
                Ok(WaitsRecording::Postgresql { stop, thread })
            }
        }
    }

    /// Ends at the window's end: the waits in between.
    pub fn stop(self) -> Result<Waits, String> {
        match self {
            WaitsRecording::Mysql { mut conn, before } => {
                let after = mysql_waits(&mut conn)?;
                Ok(Waits {
                    source: "performance_schema.events_waits_summary_by_user_by_event_name, client sessions",
                    micros: deltas(&before, &after),
                    samples: 0,
                })
            }
            WaitsRecording::Postgresql { stop, thread } => {
                stop.store(true, Ordering::SeqCst);
                thread
                    .join()
                    .map_err(|_| "the pg_stat_activity sampler panicked".to_string())?
            }
        }
    }
}

const MYSQL_WAITS: &str = "SELECT EVENT_NAME, CAST(SUM(SUM_TIMER_WAIT) AS UNSIGNED) \
     FROM performance_schema.events_waits_summary_by_user_by_event_name \
     WHERE USER IS NOT NULL AND COUNT_STAR > 0 AND EVENT_NAME <> 'idle' \
     AND EVENT_NAME NOT LIKE 'wait/io/socket/%' GROUP BY EVENT_NAME";

/// Every event's time waited so far, µs, by the instrument's name.
fn mysql_waits(conn: &mut mysql::Conn) -> Result<BTreeMap<String, f64>, String> {
    let rows: Vec<(String, Option<u64>)> = conn
        .query(MYSQL_WAITS)
        .map_err(|e| format!("reading the performance schema's waits: {e}"))?;
    Ok(rows
        .into_iter()
        .map(|(name, ps)| (event_key(&name), ps.unwrap_or(0) as f64 / 1e6))
        .collect())
}

/// An event's name fit for a folded line: one frame (no `;`), no blanks.
fn event_key(name: &str) -> String {
    name.replace([';'], ":").replace([' ', '\n', '\r'], "_")
}

/// `after - before` per event, the ones that grew.
fn deltas(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let d = a - before.get(k).copied().unwrap_or(0.0);
            (d > 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

const PG_ACTIVE: &str = "SELECT coalesce(wait_event_type, 'CPU') AS class, \
     coalesce(wait_event, 'running') AS event FROM pg_stat_activity \
     WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()";

/// Samples the active client sessions until told to stop; each session seen counts one
/// interval of session time to what it waited on.
fn sample_pg(conn: &crate::pgsql::PgConn, stop: &AtomicBool) -> Result<Waits, String> {
    let per_sample = PG_INTERVAL.as_secs_f64() * 1e6;
    let mut waits = Waits {
        source: "pg_stat_activity, sampled every 50 ms",
        ..Waits::default()
    };
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let rows = conn
            .text_rows(PG_ACTIVE)
            .map_err(|e| format!("sampling pg_stat_activity: {e}"))?;
        waits.samples += 1;
        for row in rows {
            let get = |c: &str| {
                row.iter()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or_default()
            };
            *waits
                .micros
                .entry(event_key(&format!("{}:{}", get("class"), get("event"))))
                .or_default() += per_sample;
        }
        next += PG_INTERVAL;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok(waits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_one_frame() {
        assert_eq!(
            event_key("wait/synch/mutex/innodb/buf_pool_mutex"),
            "wait/synch/mutex/innodb/buf_pool_mutex"
        );
        assert_eq!(event_key("LWLock:a b;c"), "LWLock:a_b:c");
    }

    #[test]
    fn deltas_keep_what_grew_and_fold() {
        let before = BTreeMap::from([("a/x".to_string(), 10.0), ("a/y".to_string(), 5.0)]);
        let after = BTreeMap::from([
            ("a/x".to_string(), 12.5),
            ("a/y".to_string(), 5.0),
            ("b/z".to_string(), 3.0),
        ]);
        let waits = Waits {
            source: "test",
            micros: deltas(&before, &after),
            samples: 0,
        };
        assert_eq!(waits.to_folded(), "a/x 3\nb/z 3\n");
    }
}
