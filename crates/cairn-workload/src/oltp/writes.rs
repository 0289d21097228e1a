//! The write queries of sysbench's `oltp_common.lua` (used by `oltp_read_write` and `oltp_write_only`), prepared once per connection and table, or sent as text.

use mysql::prelude::Queryable;
use mysql::{Conn, Statement};

/// The write statements, with sysbench's texts (`stmt_defs` in `oltp_common.lua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteQuery {
    /// `UPDATE sbtestN SET k=k+1 WHERE id=?` (`index_updates`)
    IndexUpdate,
    /// `UPDATE sbtestN SET c=? WHERE id=?` (`non_index_updates`)
    NonIndexUpdate,
    /// `DELETE FROM sbtestN WHERE id=?` (first half of `delete_inserts`)
    Delete,
    /// `INSERT INTO sbtestN (id, k, c, pad) VALUES (?, ?, ?, ?)` (second half)
    Insert,
}

impl WriteQuery {
    pub const ALL: [WriteQuery; 4] = [
        WriteQuery::IndexUpdate,
        WriteQuery::NonIndexUpdate,
        WriteQuery::Delete,
        WriteQuery::Insert,
    ];

    /// The statement text for table `n`, with `?` placeholders.
    pub fn sql(self, n: u32) -> String {
        match self {
            WriteQuery::IndexUpdate => format!("UPDATE sbtest{n} SET k=k+1 WHERE id=?"),
            WriteQuery::NonIndexUpdate => format!("UPDATE sbtest{n} SET c=? WHERE id=?"),
            WriteQuery::Delete => format!("DELETE FROM sbtest{n} WHERE id=?"),
            WriteQuery::Insert => {
                format!("INSERT INTO sbtest{n} (id, k, c, pad) VALUES (?, ?, ?, ?)")
            }
        }
    }
}

/// One write with its values. `c` and `pad` are sysbench's digit-and-dash strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write<'a> {
    IndexUpdate {
        id: u32,
    },
    NonIndexUpdate {
        c: &'a [u8],
        id: u32,
    },
    Delete {
        id: u32,
    },
    Insert {
        id: u32,
        k: u32,
        c: &'a [u8],
        pad: &'a [u8],
    },
}

impl Write<'_> {
    pub(crate) fn query(&self) -> WriteQuery {
        match self {
            Write::IndexUpdate { .. } => WriteQuery::IndexUpdate,
            Write::NonIndexUpdate { .. } => WriteQuery::NonIndexUpdate,
            Write::Delete { .. } => WriteQuery::Delete,
            Write::Insert { .. } => WriteQuery::Insert,
        }
    }

    /// The statement with its values written in (for `prepared = false`). The strings hold
    /// only digits and dashes, so quoting them needs no escaping.
    pub(crate) fn text(&self, n: u32) -> String {
        let s = |b: &[u8]| {
            std::str::from_utf8(b)
                .expect("ASCII digits and dashes")
                .to_owned()
        };
        match *self {
            Write::IndexUpdate { id } => format!("UPDATE sbtest{n} SET k=k+1 WHERE id={id}"),
            Write::NonIndexUpdate { c, id } => {
                format!("UPDATE sbtest{n} SET c='{}' WHERE id={id}", s(c))
            }
            Write::Delete { id } => format!("DELETE FROM sbtest{n} WHERE id={id}"),
            Write::Insert { id, k, c, pad } => format!(
                "INSERT INTO sbtest{n} (id, k, c, pad) VALUES ({id}, {k}, '{}', '{}')",
                s(c),
                s(pad)
            ),
        }
    }
}

/// One connection's way of sending the writes: prepared per table, or text.
pub(crate) enum Writes {
    Prepared(Vec<[Statement; 4]>),
    Text,
}

impl Writes {
    /// Prepares the four writes for tables `1..=tables` when `prepare` (only tests that
    /// write do, as sysbench's `prepare_statements`), else sends text.
    pub(crate) fn new(conn: &mut Conn, tables: u32, prepare: bool) -> mysql::Result<Self> {
        if !prepare {
            return Ok(Writes::Text);
        }
        let mut all = Vec::with_capacity(tables as usize);
        for n in 1..=tables {
            let mut one = Vec::with_capacity(4);
            for q in WriteQuery::ALL {
                one.push(conn.prep(q.sql(n))?);
            }
            all.push(one.try_into().expect("four statements"));
        }
        Ok(Writes::Prepared(all))
    }

    /// Runs `w` on table `n`.
    pub(crate) fn run(&self, conn: &mut Conn, n: u32, w: &Write) -> mysql::Result<()> {
        let Writes::Prepared(all) = self else {
            return conn.query_drop(w.text(n));
        };
        let st = &all[(n - 1) as usize][w.query() as usize];
        match *w {
            Write::IndexUpdate { id } | Write::Delete { id } => conn.exec_drop(st, (id,)),
            Write::NonIndexUpdate { c, id } => conn.exec_drop(st, (c, id)),
            Write::Insert { id, k, c, pad } => conn.exec_drop(st, (id, k, c, pad)),
        }
    }

    /// How many statements a connection keeps prepared for writes.
    pub(crate) fn count(tables: u32) -> usize {
        tables as usize * WriteQuery::ALL.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_sysbench() {
        assert_eq!(
            WriteQuery::IndexUpdate.sql(2),
            "UPDATE sbtest2 SET k=k+1 WHERE id=?"
        );
        assert_eq!(
            WriteQuery::NonIndexUpdate.sql(1),
            "UPDATE sbtest1 SET c=? WHERE id=?"
        );
        assert_eq!(WriteQuery::Delete.sql(3), "DELETE FROM sbtest3 WHERE id=?");
        assert_eq!(
            WriteQuery::Insert.sql(4),
            "INSERT INTO sbtest4 (id, k, c, pad) VALUES (?, ?, ?, ?)"
        );
        let w = Write::Insert {
            id: 5,
            k: 9,
            c: b"12-34",
            pad: b"5-6",
        };
        assert_eq!(
            w.text(1),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (5, 9, '12-34', '5-6')"
        );
        assert_eq!(
            Write::NonIndexUpdate { c: b"1-2", id: 7 }.text(2),
            "UPDATE sbtest2 SET c='1-2' WHERE id=7"
        );
        for (i, q) in WriteQuery::ALL.into_iter().enumerate() {
            assert_eq!(q as usize, i, "indexes the prepared array");
        }
    }
}
