//! sql-bench's test-insert: 3 × `loop_count` rows into a 2-key table (in order, reversed, shuffled), then lookups, ranges, ORDER BY, GROUP BY, joins, `IN` lists, updates and deletes on it, a 16-key table, and multi-row inserts.
//!
//! Table `bench1 (id, id2, id3 int NOT NULL, dummy1 char(30), primary key (id,id2), index
//! (id3))`; every row has `id = id2 = id3`, the ids `0..3L` (L = `loop_count`). The shuffled
//! keys come from sql-bench's own deterministic shuffle ([`Keys`]). Operation groups, in
//! order: `insert`, `insert_duplicates`, `prepared_select`, `once_prepared_select`,
//! `select_big`, `order_by_big_key`, `order_by_big_key_desc`, `order_by_big_key_prefix`,
//! `order_by_big_key2`, `order_by_big_key_diff`, `order_by_big`, `order_by_range`,
//! `order_by_key_prefix`, `order_by_key2_diff`, `select_diff_key`, `select_range_prefix`,
//! `select_range_key2` (an OR/IN list test and later a fixed list of 20 range conditions,
//! summed as in sql-bench), `select_key_prefix`, `select_key`, `select_key_return_key`,
//! `select_key2`, `select_key2_return_key`, `select_key2_return_prim`, `select_group`,
//! `min_max_on_key`, `min_max`, `count_on_key`, `count`, `count_distinct_big`,
//! `update_of_key`, `update_of_key_big`, `update_with_key`,
//! `update_with_key_record_unchanged`, `update_with_key_prefix`, `update_big`,
//! `outer_join_on_key`, `outer_join`, `outer_join_found`, `outer_join_not_found`,
//! `select_in`, `select_join_in`, `insert_select_1_key`, `insert_select_2_keys`,
//! `drop_table`, `delete_key`, `delete_range`, `insert_key`,
//! `update_of_primary_key_many_keys`, `delete_big_many_keys`, `delete_all_many_keys`,
//! `multiple_value_insert`, `drop_table`.

use serde::{Deserialize, Serialize};

use super::session::{Session, ER_DUP_ENTRY};
use super::Scale;
use crate::Error;

/// sql-bench's `query_size` limit for MySQL: the longest statement it builds.
pub const QUERY_SIZE: usize = 1_000_000;

/// test-insert's loop counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsertCounts {
    /// `$opt_loop_count`: a third of the rows.
    pub loop_count: u64,
    /// `$small_loop_count`: full-table scans and sorts.
    pub small_loop: u64,
    /// `$range_loop_count`.
    pub range_loop: u64,
    /// `$many_keys_loop_count`: rows of the 16-key table.
    pub many_keys: u64,
    /// `$opt_read_key_loop_count`: key lookups per `select_key*` group.
    pub read_key: u64,
}

impl InsertCounts {
    pub fn at(scale: Scale) -> Self {
        let loop_count = scale.pick(100_000, 1000, 100, 100);
        InsertCounts {
            loop_count,
            small_loop: scale.pick(10, 10, 1, 1),
            range_loop: scale.pick(500, 10, 5, 1).min(loop_count),
            many_keys: scale.pick(100_000, 100, 100, 100).min(loop_count),
            read_key: scale.pick(100_000, 10, 10, 10),
        }
    }
}

/// sql-bench's shuffled keys and its running `$tmpvar`, which later groups keep drawing from.
#[derive(Debug, Clone)]
pub struct Keys {
    /// `random[i]` for `i < L` is a permutation of `L..2L`; `random[L]` is 0.
    pub random: Vec<u64>,
    tmpvar: u64,
    loop_count: u64,
}

impl Keys {
    pub fn new(loop_count: u64) -> Self {
        let mut k = Keys {
            random: (0..loop_count).map(|i| i + loop_count).chain([0]).collect(),
            tmpvar: 1,
            loop_count,
        };
        for i in 0..loop_count {
            let swap = k.next(i, loop_count) as usize;
            k.random.swap(i as usize, swap);
        }
        k
    }

    /// Steps `$tmpvar` with loop index `i` and returns it modulo `modulo`.
    pub fn next(&mut self, i: u64, modulo: u64) -> u64 {
        self.tmpvar ^= (self.tmpvar + 63 + i) * 3 % self.loop_count;
        self.tmpvar % modulo
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Sends `rows` as multi-row `INSERT`s (`head` then `(…),(…)`) of fewer than
/// [`QUERY_SIZE`] bytes each, as sql-bench's `--fast-insert` loops build them.
pub(crate) fn insert_batched(
    s: &mut Session,
    head: &str,
    rows: impl Iterator<Item = String>,
) -> Result<(), Error> {
    let mut buf = String::from(head);
    let mut any = false;
    for row in rows {
        if any && buf.len() + 1 + row.len() + 1 >= QUERY_SIZE {
            s.exec(&buf)?;
            buf.truncate(head.len());
            any = false;
        }
        if any {
            buf.push(',');
        }
        buf.push_str(&row);
        any = true;
    }
    if any {
        s.exec(&buf)?;
    }
    Ok(())
}

/// The 20 range conditions of sql-bench's `check_select_range`, on column `c`, with the rows
/// each must return. `L` = `loop_count`.
pub fn range_queries(c: &str, loop_count: u64) -> Vec<(String, u64)> {
    let total = 3 * loop_count;
    let half = loop_count / 2;
    let q = [
        (format!("{c}=3 or {c}=2 or {c}=1 or {c}=4 or {c}=16 or {c}=10"), 6),
        (format!("{c}>={} or {c}<1", total - 1), 2),
        (format!("{c}>=1 and {c}<=2"), 2),
        (format!("({c}>=1 and {c}<=2) or ({c}>=1 and {c}<=2)"), 2),
        (format!("{c}>=1 and {c}<=10 and {c}<=5"), 5),
        (format!("({c}>0 and {c}<2) or {c}>={}", total - 1), 2),
        (
            format!(
                "({c}>0 and {c}<2) or ({c}>= {half} and {c} <= {}) or {c} = {}",
                half + 2,
                half - 1
            ),
            5,
        ),
        (format!("({c}>=5 and {c}<=10) or ({c}>=1 and {c}<=4)"), 10),
        (format!("({c}=1 or {c}=2) and ({c}=3 or {c}=4)"), 0),
        (format!("({c}=1 or {c}=2) and ({c}=2 or {c}=3)"), 1),
        (
            format!("({c}=1 or {c}=5 or {c}=20 or {c}=40) and ({c}=1 or {c}>=20 or {c}=4)"),
            3,
        ),
        (format!("(({c}=1 or {c}=3) or ({c}>1 and {c}<3)) and {c}<=2"), 2),
        (format!("({c} >= 0 and {c} < 4) or ({c} >=4 and {c} < 6)"), 6),
        (
            format!("{c} <= -1 or ({c} >= 0 and {c} <= 5) or ({c} >=4 and {c} < 6) or ({c} >=6 and {c} <=7) or ({c}>7 and {c} <= 8)"),
            9,
        ),
        (
            format!("({c}>=1 and {c}<=2 or {c}>=4 and {c}<=5) or ({c}>=0 and {c} <=10)"),
            11,
        ),
        (
            format!("({c}>=1 and {c}<=2 or {c}>=4 and {c}<=5) or ({c}>2 and {c} <=10)"),
            10,
        ),
        (format!("({c}>1 or {c} <1) and {c}<=2"), 2),
        (format!("{c} <= 2 and ({c}>1 or {c} <=1)"), 3),
        (format!("({c}>=1 or {c} <1) and {c}<=2"), 3),
        (format!("({c}>=1 or {c} <=2) and {c}<=2"), 3),
    ];
    q.into_iter()
        .map(|(w, n)| (format!("select * from bench1 where {w}"), n))
        .collect()
}

/// The OR list of `check_or_range` with `n` terms on column `c`, and its `IN` form.
fn or_and_in(keys: &mut Keys, c: &str, n: u64, modulo: u64) -> (String, String) {
    let mut values = vec![1];
    for i in 1..n {
        values.push(keys.next(i, modulo));
    }
    let or = values
        .iter()
        .map(|v| format!("{c}={v}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let list = values
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    (or, format!("{c} IN ({list})"))
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = InsertCounts::at(s.spec.scale);
    let fast = s.spec.fast_insert;
    let l = c.loop_count;
    let total = 3 * l;
    let (small, range) = (c.small_loop, c.range_loop);
    let mut keys = Keys::new(l);
    let bench_columns = strings(&[
        "id int NOT NULL",
        "id2 int NOT NULL",
        "id3 int NOT NULL",
        "dummy1 char(30)",
    ]);

    s.connect()?;
    for t in ["bench1", "bench2", "bench3"] {
        s.exec(&format!("drop table if exists {t}"))?;
    }
    s.exec(&s.create_sql(
        "bench1",
        &bench_columns,
        &strings(&["primary key (id,id2)", "index ix_id3 (id3)"]),
    ))?;

    // ---- 3L rows: in order, in reverse order, shuffled
    let query = if fast {
        "insert into bench1 values "
    } else {
        "insert into bench1 (id,id2,id3,dummy1) values "
    };
    s.timed("insert", |s| {
        let rows = (0..l)
            .map(|i| format!("({i},{i},{i},'ABCDEFGHIJ')"))
            .chain((0..l).map(|i| {
                let v = total - 1 - i;
                format!("({v},{v},{v},'BCDEFGHIJK')")
            }))
            .chain((0..l as usize).map(|i| {
                let v = keys.random[i];
                format!("({v},{v},{v},'CDEFGHIJKL')")
            }));
        if fast {
            insert_batched(s, query, rows)
        } else {
            for r in rows {
                s.exec(&format!("{query}{r}"))?;
            }
            Ok(())
        }
    })?;

    s.timed("insert_duplicates", |s| {
        for i in 0..l {
            let k = keys.next(i, total);
            s.exec_expecting(&format!("{query}({k},{k},2,'D')"), ER_DUP_ENTRY)?;
        }
        Ok(())
    })?;

    // ---- lookups by prepared statements: prepared per query, then prepared once
    s.timed("prepared_select", |s| {
        for i in 1..=l as usize {
            let q = format!("select * from bench1 where id={}", keys.random[i]);
            let stmt = s.prepare(&q)?;
            let n = s.execute(&stmt, vec![], &q)?;
            s.expect_rows(&q, n, 1);
            s.close(stmt, &q)?;
        }
        Ok(())
    })?;
    s.timed("once_prepared_select", |s| {
        let q = "select * from bench1 where id=?";
        let stmt = s.prepare(q)?;
        for i in 1..=l as usize {
            let n = s.execute(&stmt, vec![keys.random[i].into()], q)?;
            s.expect_rows(q, n, 1);
        }
        s.close(stmt, q)
    })?;

    // ---- whole-table reads and sorts
    let whole = |s: &mut Session, group: &str, q: &str| {
        s.timed(group, |s| {
            for _ in 0..small {
                let n = s.rows(q)?;
                s.expect_rows(q, n, total);
            }
            Ok(())
        })
    };
    whole(s, "select_big", "select id from bench1")?;
    whole(
        s,
        "order_by_big_key",
        "select id,id2 from bench1 order by id,id2",
    )?;
    whole(
        s,
        "order_by_big_key_desc",
        "select id,id2 from bench1 order by id desc, id2 desc",
    )?;
    whole(
        s,
        "order_by_big_key_prefix",
        "select id from bench1 order by id desc",
    )?;
    whole(
        s,
        "order_by_big_key2",
        "select id3 from bench1 order by id3",
    )?;
    whole(
        s,
        "order_by_big_key_diff",
        "select id2 from bench1 order by id3",
    )?;
    whole(s, "order_by_big", "select id from bench1 order by id2,id3")?;

    // ---- ranges, sorted
    let ranges = |s: &mut Session,
                  group: &str,
                  sel: &str,
                  col: &str,
                  width: &dyn Fn(u64) -> u64,
                  order: &str| {
        s.timed(group, |s| {
            for i in 1..=range {
                let start = l * i / range;
                let end = start + width(i);
                let q = format!(
                    "select {sel} from bench1 where {col}>={start} and {col} <= {end} order by {order}"
                );
                let n = s.rows(&q)?;
                s.expect_rows(&q, n, end.min(total - 1) - start + 1);
            }
            Ok(())
        })
    };
    ranges(s, "order_by_range", "dummy1", "id", &|i| i, "id3")?;
    ranges(s, "order_by_key_prefix", "dummy1", "id", &|i| i, "id")?;
    ranges(s, "order_by_key2_diff", "id2", "id3", &|_| range, "id3")?;

    // ---- two keys OR'ed (needs an index merge)
    s.timed("select_diff_key", |s| {
        for i in 1..=range {
            let q = format!(
                "select id2 from bench1 where id={i} or id3={}",
                keys.random[i as usize]
            );
            let n = s.rows(&q)?;
            s.expect_rows(&q, n, 2);
        }
        Ok(())
    })?;

    // ---- OR and IN lists of 0, 12, 24, 36, 48 values (sql-bench's check_or_range)
    for (col, group) in [("id", "select_range_prefix"), ("id3", "select_range_key2")] {
        s.timed(group, |s| {
            let columns = 48;
            let loop_count = range * 10 + 14;
            let loop_count = loop_count - loop_count % 15;
            let mut count = 0;
            while count < loop_count {
                let mut n = 0;
                while n <= columns {
                    let (or, inlist) = or_and_in(&mut keys, col, n, l * 4);
                    let q_or = format!("select * from bench1 where {or}");
                    let q_in = format!("select * from bench1 where {inlist}");
                    let a = s.rows(&q_or)?;
                    let b = s.rows(&q_in)?;
                    s.expect_rows(&q_in, b, a);
                    if a == 0 {
                        s.wrong(format!("'{q_or}' returned no rows"));
                    }
                    s.rows(&format!("select * from bench1 where ({or}) and {col} < 10"))?;
                    count += 3;
                    n += columns / 4;
                }
            }
            Ok(())
        })?;
    }

    // ---- one key value: found, then not found
    let by_key = |s: &mut Session, keys: &mut Keys, group: &str, sel: &str, cols: &[&str]| {
        s.timed(group, |s| {
            for i in 1..=c.read_key {
                let k = keys.next(i, total);
                for (v, want) in [(k, 1), (k + total, 0)] {
                    let w = cols
                        .iter()
                        .map(|c| format!("{c}={v}"))
                        .collect::<Vec<_>>()
                        .join(" and ");
                    let q = format!("select {sel} from bench1 where {w}");
                    let n = s.rows(&q)?;
                    s.expect_rows(&q, n, want);
                }
            }
            Ok(())
        })
    };
    by_key(s, &mut keys, "select_key_prefix", "*", &["id"])?;
    by_key(s, &mut keys, "select_key", "*", &["id", "id2"])?;
    by_key(
        s,
        &mut keys,
        "select_key_return_key",
        "id,id2",
        &["id", "id2"],
    )?;
    by_key(s, &mut keys, "select_key2", "*", &["id3"])?;
    by_key(s, &mut keys, "select_key2_return_key", "id3", &["id3"])?;
    by_key(s, &mut keys, "select_key2_return_prim", "id,id2", &["id3"])?;

    // ---- 20 fixed range conditions, on the primary key's prefix and on the second key
    for (col, group) in [("id", "select_range_prefix"), ("id3", "select_range_key2")] {
        let queries = range_queries(col, l);
        s.timed(group, |s| {
            for _ in 0..range {
                for (q, want) in &queries {
                    let n = s.rows(q)?;
                    s.expect_rows(q, n, *want);
                }
            }
            Ok(())
        })?;
    }

    // ---- group functions
    s.timed("select_group", |s| {
        for _ in 0..small {
            let r = s.first("select count(*) from bench1")?;
            if r.num(0) != Some(total as f64) {
                s.wrong(format!("count(*) of bench1 is {:?}, not {total}", r.num(0)));
            }
            s.rows("select min(id) from bench1")?;
            s.rows("select max(id) from bench1")?;
            s.rows("select sum(id+0.0) from bench1")?;
            s.rows("select min(id3),max(id3),sum(id3-0.0) from bench1")?;
            s.rows("select min(dummy1),max(dummy1) from bench1")?;
            let q = format!("select count(*) from bench1 where id >= {}", 2 * l);
            let r = s.first(&q)?;
            if r.num(0) != Some(l as f64) {
                s.wrong(format!("'{q}' returned {:?}, not {l}", r.num(0)));
            }
            let r = s.first("select count(*),sum(id+0.0),min(id),max(id),avg(id-0.0) from bench1")?;
            let t = total as f64;
            let avg = (t - 1.0) / 2.0;
            let ok = r.num(0) == Some(t)
                && r.num(1).map(|v| (v - avg * t).abs() < 0.5) == Some(true)
                && r.num(2) == Some(0.0)
                && r.num(3) == Some(t - 1.0)
                && r.num(4).map(|v| (1.0 - v / avg).abs() <= 0.001) == Some(true);
            if !ok {
                s.wrong(format!("count/sum/min/max/avg of bench1: {:?}", r.first));
            }
            let q = "select id % 10,count(*) from bench1 group by 1";
            let n = s.rows(q)?;
            s.expect_rows(q, n, 10);
            let q = "select id,id3,dummy1 from bench1 where id < 100 group by id,id3,dummy1 order by id desc,id3,dummy1";
            let n = s.rows(q)?;
            s.expect_rows(q, n, 100.min(total));
        }
        Ok(())
    })?;
    s.timed("min_max_on_key", |s| {
        for t in 1..=range * 5 {
            s.rows("select min(id) from bench1")?;
            s.rows("select max(id) from bench1")?;
            for f in ["min(id2)", "max(id2)", "min(dummy1)", "max(dummy1)"] {
                s.rows(&format!("select {f} from bench1 where id={t}"))?;
            }
        }
        Ok(())
    })?;
    s.timed("min_max", |s| {
        for t in 1..=small {
            s.rows("select min(id2) from bench1")?;
            s.rows("select max(id2) from bench1")?;
            for f in ["min(id3)", "max(id3)", "min(dummy1)", "max(dummy1)"] {
                s.rows(&format!("select {f} from bench1 where id2={t}"))?;
            }
        }
        Ok(())
    })?;
    for (group, sel, col) in [("count_on_key", "id", "id"), ("count", "dummy1", "id2")] {
        s.timed(group, |s| {
            for k in 0..100 {
                s.rows(&format!(
                    "select count({sel}) from bench1 where {col} < {}",
                    total * k / 100
                ))?;
            }
            Ok(())
        })?;
    }
    s.timed("count_distinct_big", |s| {
        for _ in 0..small {
            s.rows("select count(distinct dummy1) from bench1")?;
            s.rows("select dummy1,count(distinct id) from bench1 group by dummy1")?;
        }
        Ok(())
    })?;

    // ---- updates of the second key
    let updated = l / 2;
    s.timed("update_of_key", |s| {
        for i in 0..updated as usize {
            let k = l + keys.random[i];
            s.exec(&format!("update bench1 set id3=-{k} where id3={k}"))?;
        }
        Ok(())
    })?;
    s.timed("update_of_key_big", |s| {
        let step = (l / range + 1) as usize;
        for i in (0..l).step_by(step) {
            s.exec(&format!(
                "update bench1 set id3= 0-id3 where id3 >= 0 and id3 <= {i}"
            ))?;
        }
        s.exec(&format!(
            "update bench1 set id3= 0-id3 where id3 >= 0 and id3 < {l}"
        ))?;
        s.exec(&format!(
            "update bench1 set id3= 0-id3 where id3 >= {l} and id3 < {}",
            2 * l
        ))?;
        let r = s.first("select count(*) from bench1 where id3>=0")?;
        let want = 1 + l - updated;
        if r.num(0) != Some(want as f64) {
            s.wrong(format!(
                "update check returned {:?} instead of {want}",
                r.num(0)
            ));
        }
        s.exec("update bench1 set id3=floor((0-id3)/20) where id3<0")?;
        Ok(())
    })?;
    for group in ["update_with_key", "update_with_key_record_unchanged"] {
        s.timed(group, |s| {
            for i in 0..total {
                s.exec(&format!(
                    "update bench1 set dummy1='updated' where id={i} and id2={i}"
                ))?;
            }
            Ok(())
        })?;
    }
    s.timed("update_with_key_prefix", |s| {
        for i in (1..total).step_by(3) {
            s.exec(&format!(
                "update bench1 set dummy1='really updated' where id={i}"
            ))?;
        }
        Ok(())
    })?;
    s.timed("update_big", |s| {
        for i in 0..small {
            s.exec(&format!("update bench1 set dummy1='updated {i}'"))?;
        }
        Ok(())
    })?;

    // ---- left outer joins of the table with itself
    let join = "from bench1 as a left outer join bench1 as b on (a.id2=b.id3)";
    for (group, q) in [
        ("outer_join_on_key", format!("select count(*) {join}")),
        (
            "outer_join",
            format!("select count(a.dummy1),count(b.dummy1) {join}"),
        ),
        (
            "outer_join_found",
            format!("select count(a.dummy1),count(b.dummy1) {join} where b.id3 is not null"),
        ),
        (
            "outer_join_not_found",
            format!("select count(a.dummy1),count(b.dummy1) {join} where b.id3 is null"),
        ),
    ] {
        s.timed(group, |s| {
            for _ in 0..small {
                s.rows(&q)?;
            }
            Ok(())
        })?;
    }

    // ---- WHERE id IN (1..n), and the same ids through a join
    s.exec(&s.create_sql(
        "bench2",
        &strings(&["id int NOT NULL"]),
        &strings(&["primary key (id)"]),
    ))?;
    let max_tests = ((QUERY_SIZE as u64 - 50) / 6).min(l);
    for (from, to) in [
        (1, 10),
        (11, 100.min(max_tests)),
        (101, 1000.min(max_tests)),
    ] {
        if from >= to {
            continue;
        }
        let list = (1..=to).map(|i| i.to_string()).collect::<Vec<_>>();
        let q_in = format!(
            "SELECT bench1.* FROM bench1 WHERE id IN ({})",
            list.join(",")
        );
        for i in from..=to {
            s.exec(&format!("insert into bench2 values({i})"))?;
        }
        let q_join = "SELECT bench1.* FROM bench2 left outer join bench1 on (bench1.id=bench2.id)";
        for (group, q) in [("select_in", q_in.as_str()), ("select_join_in", q_join)] {
            s.timed(group, |s| {
                for _ in 0..range {
                    let n = s.rows(q)?;
                    s.expect_rows(q, n, to);
                }
                Ok(())
            })?;
        }
    }
    s.exec("DROP TABLE bench2")?;

    // ---- INSERT … SELECT into a 1-key and a 2-key copy
    s.exec(&s.create_sql(
        "bench2",
        &bench_columns,
        &strings(&["primary key (id,id2)"]),
    ))?;
    s.exec(&s.create_sql(
        "bench3",
        &bench_columns,
        &strings(&["primary key (id,id2)", "index index_id3 (id3)"]),
    ))?;
    s.timed("insert_select_1_key", |s| {
        s.exec("INSERT INTO bench2 SELECT * from bench1")
    })?;
    s.timed("insert_select_2_keys", |s| {
        s.exec("INSERT INTO bench3 SELECT * from bench1")
    })?;
    s.timed("drop_table", |s| {
        s.exec("DROP TABLE bench2")?;
        s.exec("DROP TABLE bench3")
    })?;

    // ---- deletes
    s.timed("delete_key", |s| {
        for i in (0..l as usize).step_by(10) {
            s.exec(&format!(
                "delete from bench1 where id3={}",
                l + keys.random[i]
            ))?;
        }
        Ok(())
    })?;
    s.timed("delete_range", |s| {
        for k in 0..10 {
            s.exec(&format!(
                "delete from bench1 where id3 >= 0 and id3 <= {}",
                l * k / 10
            ))?;
        }
        s.exec(&format!("delete from bench1 where id3 >= 0 and id3 <= {l}"))?;
        s.exec(&format!(
            "delete from bench1 where id >= {l} and id <= {}",
            2 * l
        ))?;
        s.exec(&format!("delete from bench1 where id3 < {total}"))?;
        Ok(())
    })?;
    s.exec("drop table bench1")?;

    // ---- a table with 16 keys, the first of 16 parts
    many_keys(s, &keys, c.many_keys)?;

    // ---- multi-row inserts
    s.exec("drop table if exists bench1")?;
    s.exec(&s.create_sql(
        "bench1",
        &bench_columns,
        &strings(&["primary key (id,id2)", "index index_id3 (id3)"]),
    ))?;
    s.timed("multiple_value_insert", |s| {
        insert_batched(
            s,
            "insert into bench1 values ",
            (0..l).map(|i| format!("({i},{i},{i},'EFGHIJKLM')")),
        )
    })?;
    s.timed("drop_table", |s| s.exec("drop table bench1"))?;
    s.disconnect();
    Ok(())
}

/// Columns (`field1 tinyint`, `field_search tinyint`, …, `field16 char(6)`) and keys of the
/// 16-key table: `primary key (field1..field16)`, then one index per other column.
pub fn many_keys_table() -> (Vec<String>, Vec<String>) {
    let mut fields = strings(&[
        "field1 tinyint not null",
        "field_search tinyint not null",
        "field2 mediumint not null",
        "field3 smallint not null",
        "field4 char(16) not null",
        "field5 integer not null",
        "field6 float not null",
        "field7 double not null",
    ]);
    fields.extend((8..=16).map(|i| format!("field{i} char(6) not null")));
    let parts = (1..=16)
        .map(|i| format!("field{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut keys = vec![
        format!("primary key ({parts})"),
        "index index2 (field_search)".to_string(),
    ];
    keys.extend((3..=16).map(|i| format!("index index{i} (field{i})")));
    (fields, keys)
}

/// Row `i` of the 16-key table (`(i&127, i&127, rand, …)`, `rand` = `random[i]`).
pub fn many_keys_row(i: u64, rand: u64, fast: bool) -> String {
    let id = i & 127;
    // sql-bench's two loops differ here: 32766 in the multi-row one
    let low = i & if fast { 32766 } else { 32767 };
    let mut r = format!("({id},{id},{rand},{low},'ABCDEF{rand}',0,{rand},{rand}.0");
    for _ in 8..=16 {
        r.push_str(&format!(",'{rand}'"));
    }
    r.push(')');
    r
}

fn many_keys(s: &mut Session, keys: &Keys, rows: u64) -> Result<(), Error> {
    let fast = s.spec.fast_insert;
    let (fields, index) = many_keys_table();
    s.exec(&s.create_sql("bench1", &fields, &index))?;
    s.timed("insert_key", |s| {
        let values = (0..rows).map(|i| many_keys_row(i, keys.random[i as usize], fast));
        if fast {
            insert_batched(s, "insert into bench1 values ", values)
        } else {
            for v in values {
                s.exec(&format!("insert into bench1 values {v}"))?;
            }
            Ok(())
        }
    })?;
    s.timed("update_of_primary_key_many_keys", |s| {
        for i in 0..256 {
            s.exec(&format!(
                "update bench1 set field5=1 where field_search={i}"
            ))?;
        }
        Ok(())
    })?;
    s.timed("delete_big_many_keys", |s| {
        for i in 0..128 {
            s.exec(&format!("delete from bench1 where field_search = {i}"))?;
        }
        Ok(())
    })?;
    s.timed("delete_all_many_keys", |s| {
        s.exec("delete from bench1 where field1 > 0")
    })?;
    s.exec("drop table bench1")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_a_permutation_and_deterministic() {
        for l in [100u64, 1000, 12345] {
            let k = Keys::new(l);
            assert_eq!(k.random.len() as u64, l + 1);
            assert_eq!(k.random[l as usize], 0);
            let mut sorted = k.random[..l as usize].to_vec();
            sorted.sort();
            assert_eq!(sorted, (l..2 * l).collect::<Vec<_>>());
            // shuffled, not the identity
            let fixed = (0..l as usize)
                .filter(|&i| k.random[i] == i as u64 + l)
                .count();
            assert!(fixed < l as usize / 2, "{fixed} of {l} unmoved");
            assert_eq!(k.random, Keys::new(l).random);
        }
        // the same as sql-bench's Perl (its shuffle, then its duplicate-key loop) for L=100
        let mut k = Keys::new(100);
        assert_eq!(
            k.random[..10],
            [193, 119, 123, 118, 166, 111, 161, 158, 179, 138]
        );
        let dups: Vec<u64> = (0..5).map(|i| k.next(i, 300)).collect();
        assert_eq!(dups, [73, 66, 31, 68, 65]);
    }

    #[test]
    fn counts_per_scale() {
        let full = InsertCounts::at(Scale::Full);
        assert_eq!(
            (
                full.loop_count,
                full.small_loop,
                full.range_loop,
                full.many_keys,
                full.read_key
            ),
            (100_000, 10, 500, 100_000, 100_000)
        );
        let st = InsertCounts::at(Scale::SmallTest);
        assert_eq!(
            (
                st.loop_count,
                st.small_loop,
                st.range_loop,
                st.many_keys,
                st.read_key
            ),
            (1000, 10, 10, 100, 10)
        );
        let d = InsertCounts::at(Scale::Divisor(10_000));
        assert_eq!((d.loop_count, d.range_loop, d.many_keys), (100, 1, 100));
    }

    #[test]
    fn range_conditions_expect_sql_bench_counts() {
        let q = range_queries("id3", 100);
        assert_eq!(q.len(), 20);
        let rows: Vec<u64> = q.iter().map(|(_, n)| *n).collect();
        assert_eq!(
            rows,
            [6, 2, 2, 2, 5, 2, 5, 10, 0, 1, 3, 2, 6, 9, 11, 10, 2, 3, 3, 3]
        );
        assert_eq!(q[1].0, "select * from bench1 where id3>=299 or id3<1");
        assert_eq!(
            q[6].0,
            "select * from bench1 where (id3>0 and id3<2) or (id3>= 50 and id3 <= 52) or id3 = 49"
        );
        assert!(q.iter().all(|(s, _)| !s.contains("!id!")));
    }

    #[test]
    fn or_lists_and_their_in_form() {
        let mut k = Keys::new(100);
        let (or, inl) = or_and_in(&mut k, "id", 0, 400);
        assert_eq!((or.as_str(), inl.as_str()), ("id=1", "id IN (1)"));
        let (or, inl) = or_and_in(&mut k, "id", 12, 400);
        assert_eq!(or.matches(" or ").count(), 11);
        assert_eq!(inl.matches(',').count(), 11);
        assert!(inl.starts_with("id IN (1,") && inl.ends_with(')'));
    }

    #[test]
    fn many_keys_rows_fit_the_table() {
        let (fields, keys) = many_keys_table();
        assert_eq!(fields.len(), 17);
        assert_eq!(keys.len(), 16);
        assert!(keys[0].starts_with("primary key (field1,field2,"));
        assert!(keys[0].ends_with("field16)"));
        let row = many_keys_row(200, 123456, false);
        assert_eq!(row.matches(',').count() + 1, 17, "{row}");
        assert!(row.starts_with("(72,72,123456,200,'ABCDEF123456',0,123456,123456.0,'123456'"));
        assert!(many_keys_row(32767, 5, true).contains(",32766,"));
    }
}
