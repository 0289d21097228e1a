//! sql-bench's test-big-tables: a table of `columns` int columns holding one row, read with `SELECT *` and with every column named, then written with `INSERT … VALUES` with and without the column list, `loops` times each.
//!
//! Groups: `select_many_fields` and `insert_many_fields`, each the sum of its two loops (as
//! sql-bench prints both under one name).

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// test-big-tables' counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BigTablesCounts {
    /// `$opt_loop_count`.
    pub loops: u64,
    /// `$opt_field_count`.
    pub columns: u64,
}

impl BigTablesCounts {
    pub fn at(scale: Scale) -> Self {
        BigTablesCounts {
            loops: scale.pick(70_000, 7000, 100, 1),
            columns: scale.pick(1000, 100, 100, 10),
        }
    }
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = BigTablesCounts::at(s.spec.scale);
    let names: Vec<String> = (1..=c.columns).map(|i| format!("i{i}")).collect();
    let columns: Vec<String> = names.iter().map(|n| format!("{n} int")).collect();
    let fields = names.join(",");
    let values = vec!["1"; c.columns as usize].join(",");
    s.connect()?;
    s.exec("drop table if exists bench1")?;
    s.exec(&s.create_sql("bench1", &columns, &[]))?;
    s.exec(&format!("insert into bench1 values ({values})"))?;
    for q in [
        "select * from bench1".to_string(),
        format!("select {fields} from bench1"),
    ] {
        s.timed("select_many_fields", |s| {
            for _ in 0..c.loops {
                let n = s.rows(&q)?;
                s.expect_rows(&q, n, 1);
            }
            Ok(())
        })?;
    }
    for q in [
        format!("insert into bench1 values({values})"),
        format!("insert into bench1 ({fields}) values({values})"),
    ] {
        s.timed("insert_many_fields", |s| {
            for _ in 0..c.loops {
                s.exec(&q)?;
            }
            Ok(())
        })?;
    }
    s.exec("drop table bench1")?;
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_scale() {
        assert_eq!(
            BigTablesCounts::at(Scale::Full),
            BigTablesCounts {
                loops: 70_000,
                columns: 1000
            }
        );
        assert_eq!(
            BigTablesCounts::at(Scale::SmallTest),
            BigTablesCounts {
                loops: 7000,
                columns: 100
            }
        );
        assert_eq!(BigTablesCounts::at(Scale::Divisor(1000)).columns, 10);
    }
}
