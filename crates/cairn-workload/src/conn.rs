//! Where a workload connects: a server address, user, database and client protocol, turned into `mysql` connection options (PostgreSQL's: [`crate::pgsql`]).

use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder};
use serde::{Deserialize, Serialize};

use crate::Error;

/// The client protocol a server speaks, so drivers know how to talk to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// MariaDB's and MySQL's (the `mysql` crate; sysbench's `mysql` driver).
    #[default]
    Mysql,
    /// PostgreSQL's (`tokio-postgres`; sysbench's `pgsql` driver).
    Postgresql,
}

impl Protocol {
    /// The protocol a database system names (`DbSystem::client_protocol`).
    pub fn of_system(name: &str) -> Result<Protocol, String> {
        match name {
            "mysql" => Ok(Protocol::Mysql),
            "postgresql" => Ok(Protocol::Postgresql),
            other => Err(format!("no native driver speaks the `{other}` protocol")),
        }
    }

    /// Whether cairn's native client of this protocol (dataset loaders, native workloads)
    /// connects over TLS; a server whose clients must use TLS is refused at check otherwise.
    pub fn native_tls(self) -> bool {
        match self {
            Protocol::Mysql => true,
            // tokio-postgres with rustls ([`crate::pgsql::tls`])
            Protocol::Postgresql => true,
        }
    }

    /// `mysql` or `postgresql`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Mysql => "mysql",
            Protocol::Postgresql => "postgresql",
        }
    }
}

/// A server and database to run against (TCP or a unix socket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// If set, connect through this unix socket instead of TCP.
    pub socket: Option<String>,
    pub user: String,
    pub password: Option<String>,
    /// sysbench's `--mysql-db`, default `sbtest`.
    pub database: String,
    /// Connect over TLS and verify the server's certificate against this CA (PEM).
    #[serde(default)]
    pub tls_ca: Option<std::path::PathBuf>,
    /// A read or write that waits longer fails the run: a hung server must not hang the
    /// trial. `None` = wait forever.
    #[serde(default = "default_io_timeout")]
    pub io_timeout: Option<Duration>,
    /// How to speak to it.
    #[serde(default)]
    pub protocol: Protocol,
}

/// The default [`Target::io_timeout`]: far above any OLTP statement, far below forever.
pub const IO_TIMEOUT: Duration = Duration::from_secs(120);

fn default_io_timeout() -> Option<Duration> {
    Some(IO_TIMEOUT)
}

impl Target {
    /// TCP to `host:port` as `user` without a password, database `sbtest`.
    pub fn tcp(host: &str, port: u16, user: &str) -> Self {
        Target {
            host: host.into(),
            port,
            socket: None,
            user: user.into(),
            password: None,
            database: "sbtest".into(),
            tls_ca: None,
            io_timeout: default_io_timeout(),
            protocol: Protocol::Mysql,
        }
    }

    /// The unix socket at `path` as `user` without a password, database `sbtest`.
    pub fn socket(path: &str, user: &str) -> Self {
        Target {
            socket: Some(path.into()),
            ..Target::tcp("localhost", 3306, user)
        }
    }

    /// Options for a connection; `with_db` selects the database on connect.
    /// `stmt_cache` must hold every statement a connection keeps prepared: the `mysql` crate
    /// closes a statement it evicts from its cache.
    pub(crate) fn opts(&self, with_db: bool, stmt_cache: usize) -> Opts {
        self.opts_with_timeout(with_db, stmt_cache, Duration::from_secs(10))
    }

    fn opts_with_timeout(&self, with_db: bool, stmt_cache: usize, connect: Duration) -> Opts {
        let mut b = OptsBuilder::new()
            .ip_or_hostname(Some(self.host.clone()))
            .tcp_port(self.port)
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .socket(self.socket.clone())
            // a given socket is used directly; "prefer" would make the crate ask a loopback
            // server `SELECT @@socket` on every connect (counted in `Com_select`)
            .prefer_socket(false)
            .tcp_nodelay(true)
            .stmt_cache_size(stmt_cache)
            // given, so the crate does not ask the server (`SELECT @@max_allowed_packet`
            // would count in `Com_select`)
            .max_allowed_packet(Some(64 * 1024 * 1024))
            .tcp_connect_timeout(Some(connect))
            .read_timeout(self.io_timeout)
            .write_timeout(self.io_timeout);
        if with_db {
            b = b.db_name(Some(self.database.clone()));
        }
        if let Some(ca) = &self.tls_ca {
            b = b.ssl_opts(Some(
                mysql::SslOpts::default().with_root_cert_path(Some(ca.clone())),
            ));
        }
        Opts::from(b)
    }

    /// A connection to the target's database.
    pub fn connect(&self) -> Result<Conn, Error> {
        self.connect_with_cache(32)
    }

    pub(crate) fn connect_with_cache(&self, stmt_cache: usize) -> Result<Conn, Error> {
        Conn::new(self.opts(true, stmt_cache)).map_err(|e| Error::connect(self, e))
    }

    /// As [`Target::connect_with_cache`], giving up on TCP connect after `timeout`
    /// (a reconnection must not wait long for a server that is gone).
    pub(crate) fn reconnect_with_cache(
        &self,
        stmt_cache: usize,
        timeout: Duration,
    ) -> Result<Conn, Error> {
        Conn::new(self.opts_with_timeout(true, stmt_cache, timeout))
            .map_err(|e| Error::connect(self, e))
    }

    /// A connection that selects no database (for server-wide statements).
    pub fn connect_no_db(&self) -> Result<Conn, Error> {
        Conn::new(self.opts(false, 0)).map_err(|e| Error::connect(self, e))
    }

    /// Creates the target's database if it does not exist (sysbench expects it to exist).
    pub fn ensure_database(&self) -> Result<(), Error> {
        check_identifier(&self.database)?;
        if self.protocol == Protocol::Postgresql {
            return crate::pgsql::ensure_database(self);
        }
        let mut c = Conn::new(self.opts(false, 0)).map_err(|e| Error::connect(self, e))?;
        c.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{}`", self.database))
            .map_err(|e| Error::sql("create the database", e))
    }

    /// `host:port` or the socket path, for messages.
    pub fn describe(&self) -> String {
        let tls = if self.tls_ca.is_some() { " (TLS)" } else { "" };
        match &self.socket {
            Some(s) => format!("{}@{s}{tls}", self.user),
            None => format!(
                "{}@{}:{}/{}{tls}",
                self.user, self.host, self.port, self.database
            ),
        }
    }
}

/// Rejects names that would need quoting beyond backticks (table engines, databases).
pub(crate) fn check_identifier(name: &str) -> Result<(), Error> {
    if !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{name:?} is not a plain identifier (letters, digits, '_')"
        )))
    }
}
