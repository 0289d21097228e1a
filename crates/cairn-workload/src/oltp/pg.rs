//! The OLTP client of a PostgreSQL server, as sysbench 1.0's `pgsql` driver sends the
//! queries of `oltp_common.lua`: the same statement texts with `$n` placeholders, prepared
//! per connection and table (`PQprepare`, what `--db-ps-mode=auto` does with the pgsql
//! driver) or sent as text; BEGIN and COMMIT as text queries.
//!
//! One difference, on purpose: sysbench binds its `CHAR` parameters (the `c` of a non-index
//! update, `c` and `pad` of an insert) as PostgreSQL's one-byte `"char"` type (OID 18), so
//! the server stores their first character only; here the server infers the column's type
//! and stores the whole value, as MariaDB does.
//!
//! Failures the run survives are those sysbench's pgsql driver ignores (it rolls back and
//! restarts the event): 40P01 deadlock_detected (counted as a deadlock), 40001
//! serialization_failure and 23505 unique_violation (a concurrent delete/insert of one id),
//! counted as write conflicts (`record_changed`); and a lost connection.

use tokio_postgres::Statement;

use super::session::{prepares_reads, Session, RECONNECT_TIMEOUT};
use super::statements::Query;
use super::writes::{Write, WriteQuery};
use super::Shared;
use crate::metrics::ErrorKind;
use crate::pgsql::{pg_error, PgConn, PgFailure};
use crate::Error;

/// `?` placeholders as PostgreSQL's `$1`, `$2`, ….
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(ch);
        }
    }
    out
}

/// A connection to PostgreSQL with the test's statements prepared (or none, for text).
pub(crate) struct PgSession {
    conn: PgConn,
    reads: Option<Vec<[Statement; 5]>>,
    writes: Option<Vec<[Statement; 4]>>,
}

fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("ASCII digits and dashes")
}

impl PgSession {
    fn prepare<const N: usize>(
        conn: &PgConn,
        tables: u32,
        texts: impl Fn(u32) -> [String; N],
    ) -> Result<Vec<[Statement; N]>, PgFailure> {
        let mut all = Vec::with_capacity(tables as usize);
        for n in 1..=tables {
            let mut one = Vec::with_capacity(N);
            for sql in texts(n) {
                one.push(conn.wait(conn.client().prepare(&numbered(&sql)))?);
            }
            let Ok(one) = <[Statement; N]>::try_from(one) else {
                unreachable!("one statement per text: {N}")
            };
            all.push(one);
        }
        Ok(all)
    }
}

impl Session for PgSession {
    type Failure = PgFailure;

    fn open(sh: &Shared, reconnect: bool) -> Result<Self, Error> {
        let spec = sh.spec;
        let conn = if reconnect {
            PgConn::connect_to(sh.target, &sh.target.database, RECONNECT_TIMEOUT)?
        } else {
            PgConn::connect(sh.target)?
        };
        let reads = (spec.prepared && prepares_reads(spec.test))
            .then(|| Self::prepare(&conn, spec.tables, |n| Query::ALL.map(|q| q.sql(n))))
            .transpose()
            .map_err(|e| pg_error("prepare the statements", e))?;
        let writes = (spec.prepared && spec.test.writes())
            .then(|| Self::prepare(&conn, spec.tables, |n| WriteQuery::ALL.map(|q| q.sql(n))))
            .transpose()
            .map_err(|e| pg_error("prepare the write statements", e))?;
        Ok(PgSession {
            conn,
            reads,
            writes,
        })
    }

    fn other(&mut self, sql: &'static str) -> Result<(), PgFailure> {
        self.conn.batch(sql)
    }

    fn read(&mut self, q: Query, t: u32, a: u32, b: u32) -> Result<(), PgFailure> {
        let Some(all) = &self.reads else {
            return self.conn.batch(&q.text(t, a, b));
        };
        let st = &all[(t - 1) as usize][q as usize];
        let (a, b) = (a as i32, b as i32);
        if q == Query::Point {
            self.conn.wait(self.conn.client().query(st, &[&a]))?;
        } else {
            self.conn.wait(self.conn.client().query(st, &[&a, &b]))?;
        }
        Ok(())
    }

    fn write(&mut self, t: u32, w: &Write) -> Result<(), PgFailure> {
        let Some(all) = &self.writes else {
            return self.conn.batch(&w.text(t));
        };
        let st = &all[(t - 1) as usize][w.query() as usize];
        let c = self.conn.client();
        match *w {
            Write::IndexUpdate { id } | Write::Delete { id } => {
                self.conn.wait(c.execute(st, &[&(id as i32)]))?
            }
            Write::NonIndexUpdate { c: text, id } => self
                .conn
                .wait(c.execute(st, &[&ascii(text), &(id as i32)]))?,
            Write::Insert {
                id,
                k,
                c: text,
                pad,
            } => self
                .conn
                .wait(c.execute(st, &[&(id as i32), &(k as i32), &ascii(text), &ascii(pad)]))?,
        };
        Ok(())
    }

    fn classify(e: &PgFailure) -> Option<ErrorKind> {
        match e.sql_state() {
            Some("40P01") => Some(ErrorKind::Deadlock),
            Some("40001" | "23505") => Some(ErrorKind::RecordChanged),
            _ if e.is_lost_connection() => Some(ErrorKind::LostConnection),
            _ => None,
        }
    }

    fn is_timeout(e: &PgFailure) -> bool {
        e.is_no_answer()
    }

    fn fatal(op: String, e: PgFailure) -> Error {
        pg_error(op, e)
    }

    fn exhausted(attempts: u32, last: PgFailure) -> Error {
        pg_error(
            format!("gave up after {attempts} attempts of one event; last error"),
            last,
        )
    }

    fn gone(lost: PgFailure, reconnect: Error) -> Error {
        pg_error(
            format!("lost the connection and could not reconnect ({reconnect})"),
            lost,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            numbered(&Query::SumRange.sql(2)),
            "SELECT SUM(k) FROM sbtest2 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(
            numbered(&WriteQuery::Insert.sql(1)),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)"
        );
    }

    #[test]
    fn survivable_failures_are_sysbenchs() {
        assert_eq!(
            PgSession::classify(&PgFailure::NoAnswer(std::time::Duration::from_secs(1))),
            None,
            "a hung server ends the run"
        );
        assert!(PgSession::is_timeout(&PgFailure::NoAnswer(
            std::time::Duration::from_secs(1)
        )));
        assert_eq!(PgSession::classify(&PgFailure::Local("x".into())), None);
    }
}
