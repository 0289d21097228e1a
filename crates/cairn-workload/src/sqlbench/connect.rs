//! sql-bench's test-connect: connecting and disconnecting, connect + one query, then many tiny queries on one connection (constants, a one- and two-row table, arithmetic) and a 65000-byte blob.
//!
//! Groups: `connect`, `connect+select_simple`, `select_simple`, `select_simple_cache`,
//! `connect+select_1_row`, `select_1_row`, `select_1_row_cache`, `select_2_rows`,
//! `select_column+column`, `select_big_str`. The connect groups count connections; each
//! connection is closed (`COM_QUIT`) before the next. `loops` queries, `loops / 10`
//! connections and blob reads; over TCP (sql-bench's `--tcpip`) at most 1000 queries.

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// sql-bench's blob length (`$str_length`, within MySQL's limits).
pub const BLOB_BYTES: usize = 65_000;

/// test-connect's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectCounts {
    /// `$opt_loop_count`: queries per query group.
    pub loops: u64,
    /// `$small_loop_count`: connections per connect group, and blob reads.
    pub connects: u64,
}

impl ConnectCounts {
    pub fn at(scale: Scale, tcpip: bool) -> Self {
        let mut loops = scale.pick(500_000, 5000, 1000, 10);
        if tcpip {
            loops = loops.min(1000);
        }
        ConnectCounts {
            loops,
            connects: loops / 10,
        }
    }
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = ConnectCounts::at(s.spec.scale, s.spec.tcpip.unwrap_or(false));
    s.timed("connect", |s| {
        s.set_count(c.connects);
        for _ in 0..c.connects {
            drop(s.new_conn()?);
        }
        Ok(())
    })?;
    s.timed("connect+select_simple", |s| {
        s.set_count(c.connects);
        for i in 0..c.connects {
            let mut conn = s.new_conn()?;
            s.query_on(&mut conn, &format!("select {i}"), false)?;
        }
        Ok(())
    })?;

    s.connect()?;
    s.timed("select_simple", |s| {
        for i in 0..c.loops {
            s.rows(&format!("select {i}"))?;
        }
        Ok(())
    })?;
    s.timed("select_simple_cache", |s| {
        for _ in 0..c.loops {
            s.rows("select 10000")?;
        }
        Ok(())
    })?;

    s.exec("drop table if exists bench1")?;
    let columns = ["a int NOT NULL", "i int", "s char(10)"].map(String::from);
    s.exec(&s.create_sql("bench1", &columns, &["primary key (a)".to_string()]))?;
    s.exec("insert into bench1 values(1,100,'AAA')")?;
    s.disconnect();
    s.timed("connect+select_1_row", |s| {
        s.set_count(c.connects);
        for i in 0..c.connects {
            let mut conn = s.new_conn()?;
            let q = format!("select a,i,s,{i} from bench1");
            let n = s.query_on(&mut conn, &q, false)?.rows;
            s.expect_rows(&q, n, 1);
        }
        Ok(())
    })?;
    s.connect()?;
    s.timed("select_1_row", |s| {
        for i in 0..c.loops {
            s.rows(&format!("select a,i,s,{i} from bench1"))?;
        }
        Ok(())
    })?;
    s.timed("select_1_row_cache", |s| {
        for _ in 0..c.loops {
            s.rows("select a,i,s from bench1")?;
        }
        Ok(())
    })?;
    s.exec("insert into bench1 values(2,200,'BBB')")?;
    s.timed("select_2_rows", |s| {
        for i in 0..c.loops {
            let q = format!("select a,i,s,{i} from bench1");
            let n = s.rows(&q)?;
            s.expect_rows(&q, n, 2);
        }
        Ok(())
    })?;
    s.timed("select_column+column", |s| {
        for i in 0..c.loops {
            s.rows(&format!("select a+a+a+a+a+a+a+a+a+{i} from bench1"))?;
        }
        Ok(())
    })?;
    s.exec("drop table bench1")?;

    // ---- a record of one big blob
    s.exec(&s.create_sql("bench1", &["b blob".to_string()], &[]))?;
    s.exec(&format!(
        "insert into bench1 values('{}')",
        "A".repeat(BLOB_BYTES)
    ))?;
    s.timed("select_big_str", |s| {
        for i in 0..c.connects {
            let q = format!("select b,{i} from bench1");
            let r = s.first(&q)?;
            let len = r
                .first
                .as_ref()
                .and_then(|row| row.first().cloned().flatten())
                .map(|b| b.len());
            if len != Some(BLOB_BYTES) {
                s.wrong(format!("'{q}' returned a blob of {len:?} bytes"));
            }
        }
        Ok(())
    })?;
    s.exec("drop table bench1")?;
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_scale_and_tcpip_cap() {
        assert_eq!(
            ConnectCounts::at(Scale::Full, false),
            ConnectCounts {
                loops: 500_000,
                connects: 50_000
            }
        );
        assert_eq!(
            ConnectCounts::at(Scale::Full, true),
            ConnectCounts {
                loops: 1000,
                connects: 100
            }
        );
        assert_eq!(ConnectCounts::at(Scale::SmallTest, false).loops, 5000);
        assert_eq!(ConnectCounts::at(Scale::Small, true).connects, 100);
        assert_eq!(ConnectCounts::at(Scale::Divisor(100_000), false).loops, 10);
    }
}
