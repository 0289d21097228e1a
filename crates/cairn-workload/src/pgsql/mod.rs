//! PostgreSQL for the native drivers: a blocking connection (`tokio-postgres` on a
//! current-thread runtime of its own, every call bounded by the target's I/O timeout), the
//! server's counters and settings around a run, the database a dataset lives in, and
//! sysbench's dataset loaded with `COPY` ([`dataset`]).
//!
//! The counters are the target database's row of `pg_stat_database` (`xact_commit`,
//! `tup_fetched`, …): PostgreSQL counts no statements without `pg_stat_statements`, but a
//! sysbench event is one transaction (a point select in autocommit, or BEGIN … COMMIT), so
//! `xact_commit` is the server's count of events. A backend adds its counts to the shared
//! statistics at most once a second and when it exits, so a run ends only once its sessions
//! have ([`await_sessions_end`]).

pub mod dataset;
pub mod tls;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage};

use crate::{Error, Target};

/// Why a PostgreSQL call failed.
#[derive(Debug, thiserror::Error)]
pub enum PgFailure {
    /// The server answered with an error, or the connection broke.
    #[error(transparent)]
    Server(#[from] tokio_postgres::Error),
    /// No answer within the connection's I/O timeout: the server hangs.
    #[error("no answer from the server within {0:?}")]
    NoAnswer(Duration),
    /// Something around the connection (its runtime, the target's form).
    #[error("{0}")]
    Local(String),
}

impl PgFailure {
    /// Whether the server gave no answer in time.
    pub fn is_no_answer(&self) -> bool {
        matches!(self, PgFailure::NoAnswer(_))
    }

    /// The SQLSTATE of a server error (`40P01` deadlock, …).
    pub fn sql_state(&self) -> Option<&str> {
        match self {
            PgFailure::Server(e) => e.code().map(|c| c.code()),
            _ => None,
        }
    }

    /// Whether the connection is gone (closed, broken, or the server shutting down).
    pub fn is_lost_connection(&self) -> bool {
        match self {
            PgFailure::Server(e) => {
                e.is_closed()
                    || e.code().is_none() && !e.to_string().contains("db error")
                    // admin_shutdown, crash_shutdown, cannot_connect_now
                    || matches!(self.sql_state(), Some("57P01" | "57P02" | "57P03"))
            }
            _ => false,
        }
    }
}

/// An error of `op`.
pub(crate) fn pg_error(op: impl Into<String>, source: PgFailure) -> Error {
    Error::Pg {
        op: op.into(),
        source,
    }
}

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One blocking connection: its own current-thread runtime drives the client and the
/// connection's task whenever a call waits.
pub struct PgConn {
    rt: Runtime,
    /// Taken on drop, so the connection's task can say goodbye before the runtime ends.
    client: Option<Client>,
    /// The connection's task: it sends Terminate and ends once the client is dropped.
    connection: Option<tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>>,
    io_timeout: Option<Duration>,
}

/// How long a closing connection may take to send Terminate (the server then counts the
/// session as ended, not abandoned).
const GOODBYE: Duration = Duration::from_millis(500);

impl Drop for PgConn {
    fn drop(&mut self) {
        drop(self.client.take());
        if let Some(task) = self.connection.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(GOODBYE, task).await });
        }
    }
}

/// The client configuration of `target` in `database`. A socket target names the socket
/// file (`<dir>/.s.PGSQL.<port>`); libpq's convention is the directory and the port.
pub(crate) fn config(target: &Target, database: &str) -> Result<Config, PgFailure> {
    let mut c = Config::new();
    c.user(&target.user)
        .dbname(database)
        .application_name("cairn");
    if let Some(p) = &target.password {
        c.password(p);
    }
    match &target.socket {
        Some(path) => {
            let path = std::path::Path::new(path);
            let port = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(".s.PGSQL."))
                .and_then(|p| p.parse::<u16>().ok())
                .ok_or_else(|| {
                    PgFailure::Local(format!(
                        "{} is not a PostgreSQL socket (.s.PGSQL.<port>)",
                        path.display()
                    ))
                })?;
            c.host_path(path.parent().unwrap_or(std::path::Path::new("/")))
                .port(port);
        }
        None => {
            c.host(&target.host).port(target.port);
        }
    }
    if target.tls_ca.is_some() {
        if target.socket.is_some() {
            return Err(PgFailure::Local(
                "TLS over a unix socket: PostgreSQL speaks TLS only over TCP".into(),
            ));
        }
        // TLS or no connection (the CA is checked by the connector)
        c.ssl_mode(SslMode::Require);
    }
    Ok(c)
}

impl PgConn {
    /// Connect to `target`'s database.
    pub fn connect(target: &Target) -> Result<PgConn, Error> {
        Self::connect_to(target, &target.database, CONNECT_TIMEOUT)
    }

    /// Connect to `database` of `target`'s server, giving up after `timeout`.
    pub(crate) fn connect_to(
        target: &Target,
        database: &str,
        timeout: Duration,
    ) -> Result<PgConn, Error> {
        let what = || format!("cannot connect to {}", target.describe());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| pg_error(what(), PgFailure::Local(format!("a runtime: {e}"))))?;
        let config = config(target, database).map_err(|e| pg_error(what(), e))?;
        let tls = match &target.tls_ca {
            Some(ca) => Some(
                tls::MakeRustls::from_ca_file(ca)
                    .map_err(|e| pg_error(what(), PgFailure::Local(e)))?,
            ),
            None => None,
        };
        // the connection's task runs while a call of this thread waits on the runtime; it
        // ends when the client is dropped
        let connected = rt.block_on(async {
            match tls {
                Some(tls) => {
                    let (client, connection) = tokio::time::timeout(timeout, config.connect(tls))
                        .await
                        .map_err(|_| PgFailure::NoAnswer(timeout))?
                        .map_err(PgFailure::Server)?;
                    Ok((client, tokio::spawn(connection)))
                }
                None => {
                    let (client, connection) = tokio::time::timeout(timeout, config.connect(NoTls))
                        .await
                        .map_err(|_| PgFailure::NoAnswer(timeout))?
                        .map_err(PgFailure::Server)?;
                    Ok((client, tokio::spawn(connection)))
                }
            }
        });
        let (client, connection) = connected.map_err(|e| pg_error(what(), e))?;
        let connection = Some(connection);
        Ok(PgConn {
            rt,
            client: Some(client),
            connection,
            io_timeout: target.io_timeout,
        })
    }

    /// The client (there until the connection is dropped).
    pub(crate) fn client(&self) -> &Client {
        self.client.as_ref().expect("a client until dropped")
    }

    /// Wait for `f`, at most the I/O timeout.
    pub(crate) fn wait<T, E: Into<PgFailure>>(
        &self,
        f: impl Future<Output = Result<T, E>>,
    ) -> Result<T, PgFailure> {
        match self.io_timeout {
            Some(limit) => self.rt.block_on(async {
                match tokio::time::timeout(limit, f).await {
                    Ok(r) => r.map_err(Into::into),
                    Err(_) => Err(PgFailure::NoAnswer(limit)),
                }
            }),
            None => self.rt.block_on(f).map_err(Into::into),
        }
    }

    /// Run SQL text (one or more statements), dropping any rows.
    pub fn batch(&self, sql: &str) -> Result<(), PgFailure> {
        self.wait(self.client().batch_execute(sql))
    }

    /// The rows of a text query, each column as text (NULL as empty).
    pub fn text_rows(&self, sql: &str) -> Result<Vec<Vec<(String, String)>>, PgFailure> {
        let messages = self.wait(self.client().simple_query(sql))?;
        Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(
                    r.columns()
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            (
                                c.name().to_string(),
                                r.get(i).unwrap_or_default().to_string(),
                            )
                        })
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }
}

/// The counters of the target's database (its `pg_stat_database` row), name → value.
pub fn status(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    status_on(&status_connection(target)?, &target.database)
}

/// A connection for reading the counters of `target`'s database: to the `postgres`
/// database, so that it is not one of the target database's sessions (which a run waits to
/// end, [`await_sessions_end`]) and its own queries are not counted with the workload's.
pub fn status_connection(target: &Target) -> Result<PgConn, Error> {
    PgConn::connect_to(target, "postgres", CONNECT_TIMEOUT)
}

/// The `pg_stat_database` row of `database` (a plain identifier, checked with the
/// dataset's name), read on `c`.
pub fn status_on(c: &PgConn, database: &str) -> Result<BTreeMap<String, String>, Error> {
    first_row(
        c,
        &format!("SELECT * FROM pg_stat_database WHERE datname = '{database}'"),
    )
}

/// The first row `sql` returns on `c`, column → text value (empty when it returns none).
fn first_row(c: &PgConn, sql: &str) -> Result<BTreeMap<String, String>, Error> {
    let rows = c.text_rows(sql).map_err(|e| pg_error(sql, e))?;
    Ok(rows
        .into_iter()
        .next()
        .unwrap_or_default()
        .into_iter()
        .collect())
}

/// The server's view of a new connection's TLS: its backend's `pg_stat_ssl` row (`ssl`,
/// `version`, `cipher`, `bits`; `ssl` is `f` on a connection without TLS).
pub fn connection_ssl(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    first_row(
        &status_connection(target)?,
        "SELECT ssl, version, cipher, bits FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    )
}

/// The server's settings (`pg_settings`), name → value.
pub fn settings(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    let c = PgConn::connect(target)?;
    let sql = "SELECT name, setting FROM pg_settings";
    let rows = c.text_rows(sql).map_err(|e| pg_error(sql, e))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next()?.1, r.next()?.1))
        })
        .collect())
}

/// Create the target's database unless it exists (PostgreSQL has no `IF NOT EXISTS` for
/// databases). The name was checked to be a plain identifier.
pub fn ensure_database(target: &Target) -> Result<(), Error> {
    let c = PgConn::connect_to(target, "postgres", CONNECT_TIMEOUT)?;
    let db = &target.database;
    let exists = c
        .text_rows(&format!("SELECT 1 FROM pg_database WHERE datname = '{db}'"))
        .map_err(|e| pg_error("look for the database", e))?;
    if exists.is_empty() {
        c.batch(&format!("CREATE DATABASE \"{db}\""))
            .map_err(|e| pg_error("create the database", e))?;
    }
    Ok(())
}

/// Longest wait for a workload's sessions to end after it.
const SESSIONS_END_WAIT: Duration = Duration::from_secs(5);

/// Wait (a few seconds at most) until no other client session is connected to the target's
/// database: a backend adds its last counts to `pg_stat_database` as it exits, after its
/// client has closed the connection, so the counters read after a workload are complete
/// only then. Returns whether they all ended.
pub fn await_sessions_end(target: &Target) -> Result<bool, Error> {
    let c = PgConn::connect(target)?;
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
               AND backend_type = 'client backend' AND pid <> pg_backend_pid()";
    let until = Instant::now() + SESSIONS_END_WAIT;
    loop {
        let rows = c.text_rows(sql).map_err(|e| pg_error(sql, e))?;
        let others = rows
            .first()
            .and_then(|r| r.first())
            .map_or(0, |(_, v)| v.parse::<u64>().unwrap_or(0));
        if others == 0 {
            return Ok(true);
        }
        if Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_and_tcp_configs() {
        let mut t = Target::socket("/tmp/cairn-x/.s.PGSQL.5432", "cairn");
        t.protocol = crate::Protocol::Postgresql;
        let c = config(&t, "sbtest").unwrap();
        assert_eq!(c.get_ports(), [5432]);
        assert!(matches!(
            &c.get_hosts()[0],
            tokio_postgres::config::Host::Unix(p) if p == std::path::Path::new("/tmp/cairn-x")
        ));
        assert_eq!(c.get_dbname(), Some("sbtest"));
        let bad = Target::socket("/tmp/mysqld.sock", "cairn");
        assert!(config(&bad, "x")
            .unwrap_err()
            .to_string()
            .contains("not a PostgreSQL socket"));
        let mut tls = Target::tcp("10.0.0.2", 5432, "cairn");
        tls.tls_ca = Some("/ca.pem".into());
        assert_eq!(config(&tls, "x").unwrap().get_ssl_mode(), SslMode::Require);
        assert_eq!(config(&t, "x").unwrap().get_ssl_mode(), SslMode::Prefer);
        let mut sock = Target::socket("/tmp/cairn-x/.s.PGSQL.5432", "cairn");
        sock.tls_ca = Some("/ca.pem".into());
        assert!(config(&sock, "x")
            .unwrap_err()
            .to_string()
            .contains("only over TCP"));
    }

    #[test]
    fn a_server_that_is_not_there_is_a_connect_error() {
        let mut t = Target::tcp("127.0.0.1", 1, "cairn");
        t.protocol = crate::Protocol::Postgresql;
        let e = PgConn::connect(&t).map(|_| ()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot connect to cairn@127.0.0.1:1"),
            "{e}"
        );
    }
}
