//! One client's connection as the OLTP worker sees it, whatever the server's protocol: send
//! BEGIN/COMMIT, a read, a write; tell which failures the run survives; name the errors that
//! end it. The worker ([`super::worker`]) draws tables and ids and keeps the clock, the same
//! for every protocol; [`MySession`] speaks MariaDB's protocol, [`super::pg::PgSession`]
//! PostgreSQL's.

use mysql::prelude::Queryable;
use mysql::Conn;

use super::errors::{classify, is_timeout};
use super::statements::{Query, Statements};
use super::wire::Wire;
use super::writes::{Write, Writes};
use super::{OltpTest, Shared};
use crate::metrics::ErrorKind;
use crate::Error;

/// A client connection with the test's statements ready.
pub(crate) trait Session: Sized {
    /// What a statement fails with.
    type Failure: std::fmt::Display;
    /// Connect and prepare what the test runs (`reconnect`: after a lost connection, with
    /// a short connect timeout).
    fn open(sh: &Shared, reconnect: bool) -> Result<Self, Error>;
    /// BEGIN, COMMIT or ROLLBACK.
    fn other(&mut self, sql: &'static str) -> Result<(), Self::Failure>;
    /// A read query on table `t` with `a` (and `b` for ranges), rows read and dropped.
    fn read(&mut self, q: Query, t: u32, a: u32, b: u32) -> Result<(), Self::Failure>;
    /// A write on table `t`.
    fn write(&mut self, t: u32, w: &Write) -> Result<(), Self::Failure>;
    /// `Some(kind)` for a failure to count and retry after, `None` for one that ends the run.
    fn classify(e: &Self::Failure) -> Option<ErrorKind>;
    /// Whether the server gave no answer within the I/O timeout.
    fn is_timeout(e: &Self::Failure) -> bool;
    /// The run's error for a failure that ends it, during `op`.
    fn fatal(op: String, e: Self::Failure) -> Error;
    /// The run's error after `attempts` failed attempts of one event.
    fn exhausted(attempts: u32, last: Self::Failure) -> Error;
    /// The run's error when the connection was lost and could not be made again.
    fn gone(lost: Self::Failure, reconnect: Error) -> Error;
}

/// Reads are prepared when the test runs them, as sysbench's `prepare_statements`.
pub(crate) fn prepares_reads(test: OltpTest) -> bool {
    test.reads() || test == OltpTest::PointSelect
}

/// TCP connect timeout of a reconnection.
pub(crate) const RECONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A connection to MariaDB (or MySQL): the `mysql` crate connects, prepares and writes;
/// the reads, BEGIN and COMMIT go over [`Wire`] on the same socket when it is not TLS.
pub(crate) struct MySession {
    conn: Conn,
    /// The reads, BEGIN and COMMIT go here when the connection is not TLS (see `wire`);
    /// the writes stay on the crate's `conn`.
    wire: Option<Wire<std::fs::File>>,
    stmts: Statements,
    writes: Writes,
}

impl Session for MySession {
    type Failure = mysql::Error;

    fn open(sh: &Shared, reconnect: bool) -> Result<Self, Error> {
        let spec = sh.spec;
        let cache = Statements::count(spec.tables) + Writes::count(spec.tables) + 8;
        let mut conn = if reconnect {
            sh.target.reconnect_with_cache(cache, RECONNECT_TIMEOUT)?
        } else {
            sh.target.connect_with_cache(cache)?
        };
        // like sysbench, prepare only what the test runs: a write-only test sends no reads,
        // so its (unused) read statements are left as text and nothing is prepared for them
        let stmts = Statements::new(
            &mut conn,
            spec.tables,
            spec.prepared && prepares_reads(spec.test),
        )
        .map_err(|e| Error::sql("prepare the statements", e))?;
        let writes = Writes::new(&mut conn, spec.tables, spec.prepared && spec.test.writes())
            .map_err(|e| Error::sql("prepare the write statements", e))?;
        let wire = match sh.target.tls_ca {
            Some(_) => None,
            None => {
                Some(Wire::over(&conn).map_err(|e| Error::sql("duplicate the socket", e.into()))?)
            }
        };
        Ok(MySession {
            conn,
            wire,
            stmts,
            writes,
        })
    }

    fn other(&mut self, sql: &'static str) -> mysql::Result<()> {
        match &mut self.wire {
            Some(w) => w.query(sql).map(drop),
            None => self.conn.query_drop(sql),
        }
    }

    #[inline]
    fn read(&mut self, q: Query, t: u32, a: u32, b: u32) -> mysql::Result<()> {
        self.stmts
            .run(&mut self.conn, self.wire.as_mut(), q, t, a, b)
    }

    fn write(&mut self, t: u32, w: &Write) -> mysql::Result<()> {
        self.writes.run(&mut self.conn, t, w)
    }

    fn classify(e: &mysql::Error) -> Option<ErrorKind> {
        classify(e)
    }

    fn is_timeout(e: &mysql::Error) -> bool {
        is_timeout(e)
    }

    fn fatal(op: String, e: mysql::Error) -> Error {
        Error::sql(op, e)
    }

    fn exhausted(attempts: u32, last: mysql::Error) -> Error {
        Error::RetriesExhausted { attempts, last }
    }

    fn gone(lost: mysql::Error, reconnect: Error) -> Error {
        Error::ServerGone {
            lost,
            reconnect: Box::new(reconnect),
        }
    }
}
