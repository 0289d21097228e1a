//! sql-bench's test-alter-table: a table of 8 int columns and `rows` rows grows one `ALTER TABLE … ADD` at a time to `columns` columns, gets and loses an index on each of its first 8 columns, and shrinks again by `ALTER TABLE … DROP`.
//!
//! Groups: `insert`, `alter_table_add`, `create_index`, `drop_index`, `alter_table_drop`.
//! As in sql-bench, each `alter_table_drop` statement drops the column below the last one
//! and steps down two, so it sends half as many statements as `alter_table_add`.

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// sql-bench's `$opt_start_field_count`.
pub const START_COLUMNS: u64 = 8;

/// test-alter-table's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlterCounts {
    /// `$opt_row_count`.
    pub rows: u64,
    /// `$opt_field_count`: columns after the adds.
    pub columns: u64,
}

impl AlterCounts {
    pub fn at(scale: Scale) -> Self {
        AlterCounts {
            rows: scale.pick(1000, 100, 10, 1),
            columns: scale.pick(1000, 100, 16, 10).max(START_COLUMNS),
        }
    }
}

/// The `ALTER TABLE … DROP` statements of sql-bench's drop loop, from `columns` columns.
pub fn drop_statements(columns: u64) -> Vec<String> {
    let mut fc = columns;
    let mut out = Vec::new();
    while fc > START_COLUMNS {
        let end = (fc - 1).max(START_COLUMNS);
        let mut drops = Vec::new();
        loop {
            fc -= 1;
            if fc < end {
                break;
            }
            drops.push(format!("DROP i{fc}"));
        }
        out.push(format!("ALTER TABLE bench {}", drops.join(",")));
    }
    out
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = AlterCounts::at(s.spec.scale);
    s.connect()?;
    s.exec("drop table if exists bench")?;
    let columns: Vec<String> = (1..=START_COLUMNS)
        .map(|i| format!("i{i} int not null"))
        .collect();
    s.exec(&s.create_sql("bench", &columns, &[]))?;
    s.timed("insert", |s| {
        for i in 0..c.rows {
            let values = vec![i.to_string(); START_COLUMNS as usize].join(",");
            s.exec(&format!("insert into bench values ( {values})"))?;
        }
        Ok(())
    })?;
    s.timed("alter_table_add", |s| {
        for n in START_COLUMNS + 1..=c.columns {
            s.exec(&format!("ALTER TABLE bench ADD i{n} integer"))?;
        }
        Ok(())
    })?;
    s.timed("create_index", |s| {
        for i in 1..=START_COLUMNS {
            s.exec(&format!("CREATE INDEX bench_ind{i} ON bench (i{i})"))?;
        }
        Ok(())
    })?;
    s.timed("drop_index", |s| {
        for i in 1..=START_COLUMNS {
            s.exec(&format!("DROP INDEX bench_ind{i} ON bench"))?;
        }
        Ok(())
    })?;
    s.timed("alter_table_drop", |s| {
        for q in drop_statements(c.columns) {
            s.exec(&q)?;
        }
        Ok(())
    })?;
    s.exec("drop table bench")?;
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_step_down_two_columns_like_sql_bench() {
        assert_eq!(
            drop_statements(16),
            [
                "ALTER TABLE bench DROP i15",
                "ALTER TABLE bench DROP i13",
                "ALTER TABLE bench DROP i11",
                "ALTER TABLE bench DROP i9"
            ]
        );
        assert_eq!(drop_statements(1000).len(), 496);
        assert_eq!(drop_statements(100).len(), 46);
        assert!(drop_statements(8).is_empty());
    }

    #[test]
    fn counts_per_scale() {
        assert_eq!(
            AlterCounts::at(Scale::Full),
            AlterCounts {
                rows: 1000,
                columns: 1000
            }
        );
        assert_eq!(AlterCounts::at(Scale::SmallTest).columns, 100);
        assert_eq!(AlterCounts::at(Scale::Divisor(500)).columns, 10);
    }
}
