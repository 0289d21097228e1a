//! sql-bench's test-wisconsin: the Wisconsin benchmark's relations `onek`, `tenk1`, `tenk2` and `Bprime`, loaded one row per `INSERT`, then its query list — selections, joins, projections, an aggregate, inserts, deletes and updates.
//!
//! Groups: `create_table`, `insert` (every row), `delete_big` (shrinks `Bprime` to its first
//! `onek` rows), `wisc_benchmark` (each SELECT `loops` times, each other statement once).
//!
//! The rows follow the formulas of sql-bench's `Data/Wisconsin` files (the PostgreSQL
//! regression `onek`/`tenk` data) for `n` tuples: `unique2` = 0..n in order, `unique1` a
//! permutation of it, `two, four, ten, twenty` = `unique1` mod 2, 4, 10, 20, `hundred,
//! thousand, twothousand, fivethous, tenthous` = `unique1` mod n/100, n/10, n/5, n/2, n,
//! `odd, even` = 2·`hundred` (+1), `stringu1`/`stringu2` = two base-26 letters of
//! `unique1`/`unique2` then `AAAA`, `string4` = `AAAAxx`, `HHHHxx`, `OOOOxx`, `VVVVxx` by
//! `unique2` mod 4. sql-bench's files hold one fixed permutation; here it is drawn from
//! [`SqlBenchSpec::seed`](super::SqlBenchSpec::seed). `tenk1`, `tenk2` and `Bprime` hold
//! the same rows, `onek` its own n/10. With fewer than 10000 `tenk` rows (scale `small`),
//! every key constant of the queries is scaled by n/10000 so each still selects the same
//! share of the rows.

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::rand::Rng;
use crate::Error;

/// The relations in load order.
pub const TABLES: [&str; 4] = ["onek", "tenk1", "tenk2", "Bprime"];

const COLUMNS: [&str; 16] = [
    "unique1",
    "unique2",
    "two",
    "four",
    "ten",
    "twenty",
    "hundred",
    "thousand",
    "twothousand",
    "fivethous",
    "tenthous",
    "odd",
    "even",
    "stringu1",
    "stringu2",
    "string4",
];

/// test-wisconsin's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WisconsinCounts {
    /// `$opt_loop_count`: runs of each SELECT.
    pub loops: u64,
    /// Rows of `tenk1`, `tenk2` and `Bprime` (`onek` has a tenth).
    pub tenk_rows: u64,
}

impl WisconsinCounts {
    pub fn at(scale: Scale) -> Self {
        WisconsinCounts {
            loops: scale.pick(5000, 1000, 2, 1),
            tenk_rows: scale.pick(10_000, 10_000, 1000, 1000),
        }
    }
}

/// Two base-26 letters of `v`, then `AAAA` (as in the data files).
fn letters(v: u64) -> String {
    let a = (b'A' + (v % 26) as u8) as char;
    let b = (b'A' + (v / 26 % 26) as u8) as char;
    format!("{a}{b}AAAA")
}

/// The VALUES list of the row with `unique1` = `u1`, `unique2` = `u2` of an `n`-row relation.
pub fn row(u1: u64, u2: u64, n: u64) -> String {
    let m = |d: u64| u1 % (n / d).max(1);
    let hundred = m(100);
    let string4 = ["AAAAxx", "HHHHxx", "OOOOxx", "VVVVxx"][(u2 % 4) as usize];
    format!(
        "{u1},{u2},{},{},{},{},{hundred},{},{},{},{},{},{},'{}','{}','{string4}'",
        u1 % 2,
        u1 % 4,
        u1 % 10,
        u1 % 20,
        m(10),
        m(5),
        m(2),
        m(1),
        hundred * 2,
        hundred * 2 + 1,
        letters(u1),
        letters(u2),
    )
}

/// `unique1` for `unique2` = 0..n: a permutation drawn with `rng` (Fisher–Yates).
pub fn permutation(n: u64, rng: &mut Rng) -> Vec<u64> {
    let mut p: Vec<u64> = (0..n).collect();
    for i in (1..p.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

fn create_sql(s: &Session, table: &str) -> String {
    let index = match table {
        "onek" => "hundred1",
        "tenk1" => "hundred2",
        "tenk2" => "hundred3",
        _ => "hundred4",
    };
    let width = if table == "onek" { 5 } else { 4 };
    let mut columns = vec![
        format!("unique1 int({width}) NOT NULL"),
        "unique2 int(4) NOT NULL".to_string(),
    ];
    for c in &COLUMNS[2..13] {
        let not_null = if *c == "hundred" { " NOT NULL" } else { "" };
        columns.push(format!("{c} int(4){not_null}"));
    }
    for c in &COLUMNS[13..] {
        columns.push(format!("{c} char(16)"));
    }
    let keys = [
        "UNIQUE (unique1)".to_string(),
        "UNIQUE (unique2)".to_string(),
        format!("INDEX {index} (hundred)"),
    ];
    s.create_sql(table, &columns, &keys)
}

/// `t.unique1 AS <prefix>unique1, …` for every column of alias `t`.
fn aliased(t: &str, prefix: &str) -> String {
    COLUMNS
        .iter()
        .map(|c| format!("{t}.{c} AS {prefix}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn insert_tenk1(u1: u64, u2: u64) -> String {
    format!(
        "insert into tenk1 ({}) values ({u1}, {u2}, 0, 2, 0, 10, 50, 688, 1950, 4950, 9950, 1, 100, 'ron may choi', 'jae kwang choi', 'u. c. berkeley')",
        COLUMNS.join(", ")
    )
}

/// The benchmark's statements for `n` `tenk` rows, each with the rows a SELECT must return.
pub fn queries(n: u64) -> Vec<(String, Option<u64>)> {
    // sql-bench's constants are for n = 10000
    let k = |c: u64| c * n / 10_000;
    let onek = n / 10;
    let sel = |q: String, rows: u64| (q, Some(rows));
    let other = |q: String| (q, None);
    vec![
        sel(
            format!("select * from tenk1 where (unique2 > {}) and (unique2 < {})", k(301), k(402)),
            k(402) - k(301) - 1,
        ),
        sel(
            format!("select * from tenk1 where (unique1 > {}) and (unique1 < {})", k(647), k(1648)),
            k(1648) - k(647) - 1,
        ),
        sel(format!("select * from tenk1 where unique2 = {}", k(2001)), 1),
        sel(
            format!("select * from tenk1 where (unique2 > {}) and (unique2 < {})", k(301), k(402)),
            k(402) - k(301) - 1,
        ),
        sel(
            format!(
                "select t1.*, {} from tenk1 t1, tenk1 t2 where (t1.unique2 = t2.unique2) and (t2.unique2 < {})",
                aliased("t2", "t2"),
                k(1000)
            ),
            k(1000),
        ),
        sel(
            format!(
                "select t.*, {} from tenk1 t, Bprime B where t.unique2 = B.unique2",
                aliased("B", "B")
            ),
            onek,
        ),
        sel(
            format!(
                "select t1.*, {} from onek o, tenk1 t1, tenk1 t2 where (o.unique2 = t1.unique2) and (t1.unique2 = t2.unique2) and (t1.unique2 < {}) and (t2.unique2 < {})",
                aliased("o", "o"),
                k(1000),
                k(1000)
            ),
            onek.min(k(1000)),
        ),
        sel("select two, four, ten, twenty, hundred, string4 from tenk1".into(), n),
        sel("select * from onek".into(), onek),
        sel("select MIN(unique2) as x from tenk1".into(), 1),
        other(insert_tenk1(10001, 74001)),
        other(insert_tenk1(19991, 60001)),
        other(format!("delete from tenk1 where tenk1.unique2 = {}", k(877))),
        other(format!("delete from tenk1 where tenk1.unique2 = {}", k(876))),
        other(format!("update tenk1 set unique2 = 10001 where tenk1.unique2 ={}", k(1491))),
        other(format!("update tenk1 set unique2 = 10023 where tenk1.unique2 ={}", k(1480))),
        other(insert_tenk1(20002, 70002)),
        other(insert_tenk1(50002, 40002)),
        other("delete from tenk1 where tenk1.unique2 = 10001".into()),
        other(format!("delete from tenk1 where tenk1.unique2 = {}", k(900))),
        other(format!("update tenk1 set unique2 = 10088 where tenk1.unique2 ={}", k(187))),
        other(format!("update tenk1 set unique2 = 10003 where tenk1.unique2 ={}", k(2000))),
        other(format!("update tenk1 set unique2 = 10020 where tenk1.unique2 ={}", k(1974))),
        other(format!("update tenk1 set unique2 = 16001 where tenk1.unique2 ={}", k(1140))),
    ]
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = WisconsinCounts::at(s.spec.scale);
    let n = c.tenk_rows;
    let onek_rows = n / 10;
    let onek = permutation(onek_rows, &mut Rng::for_stream(s.spec.seed, onek_rows));
    let tenk = permutation(n, &mut Rng::for_stream(s.spec.seed, n));
    s.connect()?;

    s.timed("create_table", |s| {
        for t in TABLES {
            s.exec(&format!("drop table if exists {t}"))?;
            s.exec(&create_sql(s, t))?;
        }
        Ok(())
    })?;
    s.timed("insert", |s| {
        for t in TABLES {
            let (u1s, rows) = if t == "onek" {
                (&onek, onek_rows)
            } else {
                (&tenk, n)
            };
            for (u2, u1) in u1s.iter().enumerate() {
                s.exec(&format!(
                    "insert into {t} values ({})",
                    row(*u1, u2 as u64, rows)
                ))?;
            }
        }
        Ok(())
    })?;
    s.timed("delete_big", |s| {
        let q = format!(
            "delete from Bprime where Bprime.unique2 >= {}",
            1000 * n / 10_000
        );
        let gone = s.exec(&q)?;
        if gone != n - onek_rows {
            s.wrong(format!("'{q}' deleted {gone} rows, not {}", n - onek_rows));
        }
        Ok(())
    })?;
    let list = queries(n);
    s.timed("wisc_benchmark", |s| {
        for (q, want) in &list {
            match want {
                Some(want) => {
                    for _ in 0..c.loops {
                        let got = s.rows(q)?;
                        s.expect_rows(q, got, *want);
                    }
                }
                None => {
                    s.exec(q)?;
                }
            }
        }
        Ok(())
    })?;
    for t in TABLES {
        s.exec(&format!("drop table {t}"))?;
    }
    s.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_sql_bench_data_files() {
        // the first lines of Data/Wisconsin/tenk.data and onek.data
        assert_eq!(
            row(8800, 0, 10_000),
            "8800,0,0,0,0,0,0,800,800,3800,8800,0,1,'MAAAAA','AAAAAA','AAAAxx'"
        );
        assert_eq!(
            row(1891, 1, 10_000),
            "1891,1,1,3,1,11,91,891,1891,1891,1891,182,183,'TUAAAA','BAAAAA','HHHHxx'"
        );
        assert_eq!(
            row(147, 0, 1000),
            "147,0,1,3,7,7,7,47,147,147,147,14,15,'RFAAAA','AAAAAA','AAAAxx'"
        );
        assert_eq!(
            row(931, 1, 1000),
            "931,1,1,3,1,11,1,31,131,431,931,2,3,'VJAAAA','BAAAAA','HHHHxx'"
        );
        assert_eq!(letters(26), "ABAAAA");
    }

    #[test]
    fn permutations_are_seeded() {
        let a = permutation(1000, &mut Rng::for_stream(0, 1000));
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_eq!(a, permutation(1000, &mut Rng::for_stream(0, 1000)));
        assert_ne!(a, permutation(1000, &mut Rng::for_stream(1, 1000)));
        assert_ne!(a, sorted);
    }

    #[test]
    fn full_scale_queries_are_sql_bench_s() {
        let q = queries(10_000);
        assert_eq!(q.len(), 24);
        assert_eq!(q.iter().filter(|(_, w)| w.is_some()).count(), 10);
        assert_eq!(
            q[0],
            (
                "select * from tenk1 where (unique2 > 301) and (unique2 < 402)".to_string(),
                Some(100)
            )
        );
        assert!(q[4]
            .0
            .contains("t2.string4 AS t2string4 from tenk1 t1, tenk1 t2"));
        assert!(q[4].0.ends_with("(t2.unique2 < 1000)"));
        assert_eq!(q[5].1, Some(1000));
        assert_eq!(
            q[14].0,
            "update tenk1 set unique2 = 10001 where tenk1.unique2 =1491"
        );
        // the small relations keep the shares
        let small = queries(1000);
        assert_eq!(
            small[0].0,
            "select * from tenk1 where (unique2 > 30) and (unique2 < 40)"
        );
        assert_eq!(small[1].1, Some(99));
        assert_eq!(small[6].1, Some(100));
    }

    #[test]
    fn counts_per_scale() {
        assert_eq!(
            WisconsinCounts::at(Scale::Full),
            WisconsinCounts {
                loops: 5000,
                tenk_rows: 10_000
            }
        );
        assert_eq!(WisconsinCounts::at(Scale::SmallTest).loops, 1000);
        assert_eq!(WisconsinCounts::at(Scale::Small).tenk_rows, 1000);
    }
}
