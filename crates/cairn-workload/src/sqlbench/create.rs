//! sql-bench's test-create: creating many tables, counting each, dropping each, then create+drop pairs of a plain table and of a table with 16 keys.
//!
//! Groups: `create_MANY_tables`, `select_group_when_MANY_tables`,
//! `drop_table_when_MANY_tables`, `create+drop`, `create_key+drop` (the pairs count as
//! their loops, 2 statements each). Before the first group, one `DROP TABLE IF EXISTS` of
//! every `bench_N` it will use clears what an interrupted run left (sql-bench's `--force`
//! drops them one by one).

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// test-create's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateCounts {
    /// `$max_tables`: tables that exist at once.
    pub tables: u64,
    /// `$create_loop_count`: create+drop pairs of each kind.
    pub loops: u64,
}

impl CreateCounts {
    pub fn at(scale: Scale) -> Self {
        CreateCounts {
            tables: scale.pick(400, 10, 5, 1),
            loops: scale.pick(10_000, 10, 5, 1),
        }
    }
}

fn plain_table(s: &Session, i: u64) -> String {
    let columns = [
        "i int NOT NULL",
        "d double",
        "f float",
        "s char(10)",
        "v varchar(100)",
    ]
    .map(String::from);
    s.create_sql(&format!("bench_{i}"), &columns, &["primary key (i)".into()])
}

/// The 16-key table of `create_key+drop`: `primary key (field1..field16)` and an index on
/// each of `field2..field16`.
pub fn keyed_table_parts() -> (Vec<String>, Vec<String>) {
    let mut fields: Vec<String> = [
        "field1 tinyint not null",
        "field2 mediumint not null",
        "field3 smallint not null",
        "field4 char(16) not null",
        "field5 integer not null",
        "field6 float not null",
        "field7 double not null",
    ]
    .map(String::from)
    .to_vec();
    fields.extend((8..=16).map(|i| format!("field{i} char(5) not null")));
    let parts = (1..=16)
        .map(|i| format!("field{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut keys = vec![format!("primary key ({parts})")];
    keys.extend((2..=16).map(|i| format!("index index{i} (field{i})")));
    (fields, keys)
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = CreateCounts::at(s.spec.scale);
    s.connect()?;
    let all = (1..=c.tables.max(c.loops))
        .map(|i| format!("bench_{i}"))
        .collect::<Vec<_>>()
        .join(",");
    s.exec(&format!("drop table if exists {all}"))?;

    s.timed("create_MANY_tables", |s| {
        for i in 1..=c.tables {
            s.exec(&plain_table(s, i))?;
        }
        Ok(())
    })?;
    s.timed("select_group_when_MANY_tables", |s| {
        for i in 1..=c.tables {
            let q = format!("select count(*) from bench_{i}");
            let r = s.first(&q)?;
            if r.num(0) != Some(0.0) {
                s.wrong(format!("'{q}' returned {:?}, not 0", r.num(0)));
            }
        }
        Ok(())
    })?;
    s.timed("drop_table_when_MANY_tables", |s| {
        for i in 1..=c.tables {
            s.exec(&format!("drop table bench_{i}"))?;
        }
        Ok(())
    })?;
    s.timed("create+drop", |s| {
        s.set_count(c.loops);
        for i in 1..=c.loops {
            s.exec(&plain_table(s, i))?;
            s.exec(&format!("drop table bench_{i}"))?;
        }
        Ok(())
    })?;
    let (fields, keys) = keyed_table_parts();
    s.timed("create_key+drop", |s| {
        s.set_count(c.loops);
        for i in 1..=c.loops {
            s.exec(&s.create_sql(&format!("bench_{i}"), &fields, &keys))?;
            s.exec(&format!("drop table bench_{i}"))?;
        }
        Ok(())
    })?;
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_keyed_table() {
        assert_eq!(
            CreateCounts::at(Scale::Full),
            CreateCounts {
                tables: 400,
                loops: 10_000
            }
        );
        assert_eq!(
            CreateCounts::at(Scale::SmallTest),
            CreateCounts {
                tables: 10,
                loops: 10
            }
        );
        let (fields, keys) = keyed_table_parts();
        assert_eq!(fields.len(), 16);
        assert_eq!(keys.len(), 16);
        assert!(keys[0].ends_with("field15,field16)"));
        assert_eq!(keys[15], "index index16 (field16)");
    }
}
