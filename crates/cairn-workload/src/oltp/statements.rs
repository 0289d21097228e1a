//! The OLTP queries of sysbench's `oltp_common.lua`, prepared once per connection and table, or sent as text.

use mysql::prelude::Queryable;
use mysql::{Conn, Statement};

use super::wire::Wire;

/// The read queries of sysbench's OLTP tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// `SELECT c FROM sbtestN WHERE id=?`
    Point,
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ?`
    SimpleRange,
    /// `SELECT SUM(k) FROM sbtestN WHERE id BETWEEN ? AND ?`
    SumRange,
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`
    OrderRange,
    /// `SELECT DISTINCT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`
    DistinctRange,
}

impl Query {
    pub const ALL: [Query; 5] = [
        Query::Point,
        Query::SimpleRange,
        Query::SumRange,
        Query::OrderRange,
        Query::DistinctRange,
    ];

    /// The statement text for table `n`, with `?` placeholders (sysbench's `stmt_defs`).
    pub fn sql(self, n: u32) -> String {
        match self {
            Query::Point => format!("SELECT c FROM sbtest{n} WHERE id=?"),
            Query::SimpleRange => format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
            Query::SumRange => format!("SELECT SUM(k) FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
            Query::OrderRange => {
                format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Query::DistinctRange => {
                format!("SELECT DISTINCT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
        }
    }

    /// The same query with the values written in (for `prepared = false`).
    pub fn text(self, n: u32, a: u32, b: u32) -> String {
        match self {
            Query::Point => format!("SELECT c FROM sbtest{n} WHERE id={a}"),
            _ => {
                let mut s = self.sql(n);
                s = s.replacen('?', &a.to_string(), 1);
                s.replacen('?', &b.to_string(), 1)
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One connection's way of sending the queries: prepared statements per table, or text.
pub(crate) enum Statements {
    Prepared(Vec<[Statement; 5]>),
    Text,
}

impl Statements {
    /// Prepares every query for tables `1..=tables` (as sysbench's `thread_init`), or nothing.
    pub(crate) fn new(conn: &mut Conn, tables: u32, prepared: bool) -> mysql::Result<Self> {
        if !prepared {
            return Ok(Statements::Text);
        }
        let mut all = Vec::with_capacity(tables as usize);
        for n in 1..=tables {
            let mut one = Vec::with_capacity(5);
            for q in Query::ALL {
                one.push(conn.prep(q.sql(n))?);
            }
            all.push(one.try_into().expect("five statements"));
        }
        Ok(Statements::Prepared(all))
    }

    /// Runs `q` on table `n` with `a` (and `b` for ranges), reading and dropping the rows:
    /// on `wire` (rows skipped undecoded) if there is one, else through the `mysql` crate.
    #[inline]
    pub(crate) fn run<S: std::io::Read + std::io::Write>(
        &self,
        conn: &mut Conn,
        wire: Option<&mut Wire<S>>,
        q: Query,
        n: u32,
        a: u32,
        b: u32,
    ) -> mysql::Result<()> {
        let point = q == Query::Point;
        match (self, wire) {
            (Statements::Prepared(all), Some(w)) => {
                let id = all[(n - 1) as usize][q.index()].id();
                let params = [a, b];
                w.execute(id, &params[..if point { 1 } else { 2 }])
                    .map(drop)
            }
            (Statements::Prepared(all), None) => {
                let st = &all[(n - 1) as usize][q.index()];
                if point {
                    conn.exec_drop(st, (a,))
                } else {
                    conn.exec_drop(st, (a, b))
                }
            }
            (Statements::Text, Some(w)) => w.query(&q.text(n, a, b)).map(drop),
            (Statements::Text, None) => conn.query_drop(q.text(n, a, b)),
        }
    }

    /// How many statements a connection keeps prepared (its statement cache must hold them).
    pub(crate) fn count(tables: u32) -> usize {
        tables as usize * Query::ALL.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_sysbench() {
        assert_eq!(Query::Point.sql(2), "SELECT c FROM sbtest2 WHERE id=?");
        assert_eq!(
            Query::DistinctRange.sql(1),
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"
        );
        assert_eq!(
            Query::SumRange.text(3, 5, 104),
            "SELECT SUM(k) FROM sbtest3 WHERE id BETWEEN 5 AND 104"
        );
        assert_eq!(
            Query::Point.text(1, 7, 0),
            "SELECT c FROM sbtest1 WHERE id=7"
        );
    }
}
