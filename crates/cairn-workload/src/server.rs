//! What the server says about itself around a run: `SHOW GLOBAL STATUS` before and after (their numeric deltas) and `SHOW GLOBAL VARIABLES` — for PostgreSQL its database's `pg_stat_database` row and `pg_settings` ([`crate::pgsql`]).

use std::collections::BTreeMap;

use mysql::prelude::Queryable;

use crate::conn::Protocol;
use crate::{Error, Target};

/// `SHOW GLOBAL STATUS`, name → value as the server printed it (PostgreSQL: the counters
/// of the target's database, [`crate::pgsql::status`]).
pub fn global_status(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    match target.protocol {
        Protocol::Mysql => show(target, "SHOW GLOBAL STATUS"),
        Protocol::Postgresql => crate::pgsql::status(target),
    }
}

/// `SHOW GLOBAL VARIABLES`, name → value (PostgreSQL: `pg_settings`).
pub fn global_variables(target: &Target) -> Result<BTreeMap<String, String>, Error> {
    match target.protocol {
        Protocol::Mysql => show(target, "SHOW GLOBAL VARIABLES"),
        Protocol::Postgresql => crate::pgsql::settings(target),
    }
}

/// `SHOW GLOBAL STATUS` (PostgreSQL: [`crate::pgsql::status_on`]) over a connection opened
/// ahead of time, so that a reading due at a given moment costs one query, not a connect
/// (whose handshake a busy machine or a bridge being rewired for a new container can delay
/// by seconds).
pub struct StatusSession {
    target: Target,
    conn: Option<StatusConn>,
}

/// The open connection of a [`StatusSession`], in the target's protocol.
enum StatusConn {
    Mysql(mysql::Conn),
    Postgresql(Box<crate::pgsql::PgConn>),
}

impl StatusConn {
    fn open(target: &Target) -> Result<StatusConn, Error> {
        Ok(match target.protocol {
            Protocol::Mysql => StatusConn::Mysql(target.connect_no_db()?),
            Protocol::Postgresql => {
                StatusConn::Postgresql(Box::new(crate::pgsql::status_connection(target)?))
            }
        })
    }

    fn read(&mut self, target: &Target) -> Result<BTreeMap<String, String>, Error> {
        match self {
            StatusConn::Mysql(c) => show_on(c, "SHOW GLOBAL STATUS"),
            StatusConn::Postgresql(c) => crate::pgsql::status_on(c, &target.database),
        }
    }
}

impl StatusSession {
    /// Connects now; a failed connect is tried again at the first reading.
    pub fn open(target: &Target) -> StatusSession {
        StatusSession {
            target: target.clone(),
            conn: StatusConn::open(target).ok(),
        }
    }

    /// The status on the open connection, or on a new one if it is gone.
    pub fn read(&mut self) -> Result<BTreeMap<String, String>, Error> {
        if let Some(c) = &mut self.conn {
            if let Ok(status) = c.read(&self.target) {
                return Ok(status);
            }
        }
        self.conn = None;
        let mut c = StatusConn::open(&self.target)?;
        let status = c.read(&self.target)?;
        self.conn = Some(c);
        Ok(status)
    }
}

/// The TLS of a connection to the target as the server sees it, for a target that
/// connects with TLS (`None` otherwise): PostgreSQL's `pg_stat_ssl` row of the connection's
/// backend (`ssl`, `version`, `cipher`, `bits`), MySQL's session `Ssl_version` and
/// `Ssl_cipher`. A connection of cairn's native client, made before the workload's (so it
/// counts in no delta around it).
pub fn connection_tls(target: &Target) -> Result<Option<BTreeMap<String, String>>, Error> {
    if target.tls_ca.is_none() {
        return Ok(None);
    }
    match target.protocol {
        Protocol::Mysql => show(
            target,
            "SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')",
        )
        .map(Some),
        Protocol::Postgresql => crate::pgsql::connection_ssl(target).map(Some),
    }
}

fn show(target: &Target, sql: &str) -> Result<BTreeMap<String, String>, Error> {
    show_on(&mut target.connect_no_db()?, sql)
}

fn show_on(c: &mut mysql::Conn, sql: &str) -> Result<BTreeMap<String, String>, Error> {
    let rows: Vec<(String, Option<String>)> = c.query(sql).map_err(|e| Error::sql(sql, e))?;
    Ok(rows
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

/// `after - before` for every counter that is a number in both and changed.
pub fn status_deltas(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let a: f64 = a.parse().ok()?;
            let b: f64 = before.get(k)?.parse().ok()?;
            (a != b).then(|| (k.clone(), a - b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_of_numbers_that_changed() {
        let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let before = m(&[
            ("Com_select", "10"),
            ("Uptime", "5"),
            ("Ssl_cipher", ""),
            ("X", "1"),
        ]);
        let after = m(&[
            ("Com_select", "25"),
            ("Uptime", "7"),
            ("Ssl_cipher", "AES"),
            ("X", "1"),
        ]);
        let d = status_deltas(&before, &after);
        assert_eq!(d.get("Com_select"), Some(&15.0));
        assert_eq!(d.get("Uptime"), Some(&2.0));
        assert!(!d.contains_key("Ssl_cipher") && !d.contains_key("X"));
    }
}
