//! sql-bench's test-transactions: single-row inserts, updates and deletes by primary key, committed once at the end or autocommitted, and the same work rolled back every `batch` rows.
//!
//! Tables `bench1` and `bench2 (idn primary key, rev_idn, region char(1), grp, updated
//! tinyint, unique (region, grp))`; `region` cycles through 27 letters and `grp` is
//! `idn / 27` rounded (as the server rounds sql-bench's fractions). Groups:
//! `insert_commit`, `insert_autocommit`, `insert_rollback`, `update_rollback`,
//! `delete_rollback`, `update_commit`, `update_autocommit`, `delete_commit`,
//! `delete_autocommit`. `SET autocommit` is sent when the mode changes, outside the groups'
//! clocks (as DBI does when sql-bench sets `AutoCommit`).

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// sql-bench's `$opt_groups`: regions 'A'..'['.
const GROUPS: u64 = 27;

/// test-transactions' counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionCounts {
    /// `$opt_loop_count`: rows.
    pub rows: u64,
    /// `$opt_medium_loop_count`: statements per rolled-back transaction.
    pub batch: u64,
}

impl TransactionCounts {
    pub fn at(scale: Scale) -> Self {
        TransactionCounts {
            rows: scale.pick(500_000, 5000, 200, 10),
            batch: scale.pick(10_000, 1000, 50, 1),
        }
    }
}

/// `(id, rev_id, 'region', grp, 0)`.
pub fn row(id: u64, rev_id: u64) -> String {
    let region = (b'A' + (id % GROUPS) as u8) as char;
    // round(id / 27), half away from zero (27 is odd: no exact halves)
    let grp = (2 * id + GROUPS) / (2 * GROUPS);
    format!("({id},{rev_id},'{region}',{grp},0)")
}

struct Mode {
    autocommit: bool,
}

impl Mode {
    fn set(&mut self, s: &mut Session, on: bool) -> Result<(), Error> {
        if self.autocommit != on {
            s.exec(&format!("SET autocommit={}", u8::from(on)))?;
            self.autocommit = on;
        }
        Ok(())
    }
}

/// Runs `statement(i)` for each `i`, rolling back every `batch` statements and once more
/// at the end for a partial batch.
fn rolled_back(
    s: &mut Session,
    batch: u64,
    ids: impl Iterator<Item = u64>,
    statement: impl Fn(u64) -> String,
) -> Result<(), Error> {
    let mut pending = 0;
    for id in ids {
        s.exec(&statement(id))?;
        pending += 1;
        if pending >= batch {
            s.exec("ROLLBACK")?;
            pending = 0;
        }
    }
    if pending > 0 {
        s.exec("ROLLBACK")?;
    }
    Ok(())
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = TransactionCounts::at(s.spec.scale);
    let l = c.rows;
    s.connect()?;
    s.exec("drop table if exists bench1")?;
    s.exec("drop table if exists bench2")?;
    let columns = [
        "idn int NOT NULL",
        "rev_idn int NOT NULL",
        "region char(1) NOT NULL",
        "grp int NOT NULL",
        "updated tinyint NOT NULL",
    ]
    .map(String::from);
    let keys = ["primary key (idn)", "unique (region,grp)"].map(String::from);
    for t in ["bench1", "bench2"] {
        s.exec(&s.create_sql(t, &columns, &keys))?;
    }
    let mut mode = Mode { autocommit: true };

    for (table, group, auto) in [
        ("bench1", "insert_commit", false),
        ("bench2", "insert_autocommit", true),
    ] {
        mode.set(s, auto)?;
        s.timed(group, |s| {
            for id in 0..l {
                s.exec(&format!(
                    "insert into {table} values {}",
                    row(id, l - 1 - id)
                ))?;
            }
            if !auto {
                s.exec("COMMIT")?;
            }
            Ok(())
        })?;
    }

    mode.set(s, false)?;
    s.timed("insert_rollback", |s| {
        rolled_back(s, c.batch, l..2 * l, |id| {
            format!("insert into bench1 values {}", row(id, 2 * l - id))
        })
    })?;
    s.timed("update_rollback", |s| {
        rolled_back(s, c.batch, 0..l, |id| {
            format!("update bench1 set updated=2 where idn={id}")
        })
    })?;
    s.timed("delete_rollback", |s| {
        rolled_back(s, c.batch, 0..l, |id| {
            format!("delete from bench1 where idn={id}")
        })
    })?;

    for (what, sql) in [
        ("update", "update {t} set updated=1 where idn={id}"),
        ("delete", "delete from {t} where idn={id}"),
    ] {
        for (table, auto) in [("bench1", false), ("bench2", true)] {
            mode.set(s, auto)?;
            let group = format!("{what}_{}", if auto { "autocommit" } else { "commit" });
            s.timed(&group, |s| {
                for id in 0..l {
                    s.exec(&sql.replace("{t}", table).replace("{id}", &id.to_string()))?;
                }
                if !auto {
                    s.exec("COMMIT")?;
                }
                Ok(())
            })?;
        }
    }

    s.exec("drop table bench1")?;
    s.exec("drop table bench2")?;
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_groups_like_the_server() {
        assert_eq!(row(0, 9), "(0,9,'A',0,0)");
        assert_eq!(row(13, 0), "(13,0,'N',0,0)"); // 0.48 → 0
        assert_eq!(row(14, 0), "(14,0,'O',1,0)"); // 0.52 → 1
        assert_eq!(row(26, 0), "(26,0,'[',1,0)");
        assert_eq!(row(27, 0), "(27,0,'A',1,0)");
        assert_eq!(row(41, 0), "(41,0,'O',2,0)"); // 1.52 → 2
                                                  // (region, grp) stays unique over many rows
        let mut seen = std::collections::HashSet::new();
        for id in 0..20_000 {
            let r = row(id, 0);
            let key: Vec<&str> = r.split(',').skip(2).take(2).collect();
            assert!(seen.insert(key.join(",")), "{r}");
        }
    }

    #[test]
    fn counts_per_scale() {
        assert_eq!(
            TransactionCounts::at(Scale::Full),
            TransactionCounts {
                rows: 500_000,
                batch: 10_000
            }
        );
        assert_eq!(TransactionCounts::at(Scale::SmallTest).rows, 5000);
    }
}
