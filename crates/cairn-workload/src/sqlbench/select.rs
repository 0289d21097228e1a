//! sql-bench's test-select: selects on keys of many parts — a table keyed by `(region, idn)`, `(region, rev_idn)` and `(region, grp, idn)`, queried with sums, long OR lists, MIN/MAX, COUNT, GROUP BY and COUNT(DISTINCT).
//!
//! Rows: `idn` 0..L, `rev_idn` L-1..0, `region` 'A'..'F' by `idn % 6`, `grp` = `grp_no_key` =
//! `idn*3 % groups`, inserted one per statement (the second half with a column list).
//! Groups, in order: `insert`, `select_cache`, `select_cache2`, `select_big`,
//! `select_range`, `min_max_on_key`, `count_on_key`, `count_group_on_key_parts`,
//! `count_group`, `count_group_order_group`, `count_group_order_null`,
//! `count_group_with_order`, `count_distinct_key_prefix`, `count_distinct`,
//! `count_distinct_2`, `count_distinct_group_on_key`, `count_distinct_group_on_key_parts`,
//! `count_distinct_group`, `count_distinct_big`.
//!
//! The GROUP BY groups ([`GROUP_BY`]) each send one statement `medium_loop` times (700 at
//! `small-test`). `count_group_on_key_parts` groups the keyed `grp`; the other four group
//! the unkeyed `grp_no_key` and differ only in their ORDER BY: none (`count_group`), the
//! grouped column (`count_group_order_group`), `ORDER BY NULL` (`count_group_order_null`),
//! the count (`count_group_with_order`). These follow MariaDB's test-select (10.11);
//! MySQL's has `count_group_on_key_parts` only.

use serde::{Deserialize, Serialize};

use super::session::Session;
use super::Scale;
use crate::Error;

/// sql-bench's `$opt_regions`.
const REGIONS: u64 = 6;
/// OR terms per `select_range` query (sql-bench's `$columns` for MySQL's limits).
const COLUMNS: u64 = 500;

/// The GROUP BY groups and their one statement each, in test-select's order; each runs
/// `medium_loop` times.
pub const GROUP_BY: [(&str, &str); 5] = [
    (
        "count_group_on_key_parts",
        "select grp,count(*) from bench1 group by grp",
    ),
    (
        "count_group",
        "select grp_no_key,count(*) from bench1 group by grp_no_key",
    ),
    // the same grouping, ordered by the grouped column: the order MariaDB's GROUP BY returns
    // its groups in anyway
    (
        "count_group_order_group",
        "select grp_no_key,count(*) from bench1 group by grp_no_key order by grp_no_key",
    ),
    // and with that order asked away; sql-bench runs this group only where the server's
    // limits have `order_by_null`, which its `db_MySQL` limits (MySQL and MariaDB, the servers
    // this port speaks to) set
    (
        "count_group_order_null",
        "select grp_no_key,count(*) from bench1 group by grp_no_key order by null",
    ),
    (
        "count_group_with_order",
        "select grp_no_key,count(*) as cnt from bench1 group by grp_no_key order by cnt",
    ),
];

/// test-select's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectCounts {
    /// `$opt_loop_count`: rows, and loops of the cache, MIN/MAX and COUNT groups.
    pub rows: u64,
    /// `$opt_medium_loop_count`: loops of the GROUP BY and DISTINCT groups.
    pub medium_loop: u64,
    /// `$opt_small_loop_count`: loops of `select_big` and `select_range`.
    pub small_loop: u64,
    /// `$opt_groups`: distinct `grp` values.
    pub groups: u64,
}

impl SelectCounts {
    pub fn at(scale: Scale) -> Self {
        SelectCounts {
            rows: scale.pick(10_000, 1000, 100, 100),
            medium_loop: scale.pick(7000, 700, 10, 1),
            small_loop: scale.pick(10, 1, 1, 1),
            groups: scale.pick(100, 10, 10, 100).max(1),
        }
    }
}

fn region(i: u64) -> char {
    (b'A' + i as u8) as char
}

/// The long OR conditions of `select_range` for loop `i` (sql-bench's `$or_part`, its IN
/// form and `$or_part2`), drawing from its running `$tmpvar`.
pub fn range_conditions(tmpvar: &mut u64, i: u64, groups: u64) -> (String, String, String) {
    let r = region(i % (REGIONS + 1));
    let mut grps = vec![1];
    let mut or2 = String::from("region='A' and grp=1");
    for j in 1..COLUMNS {
        *tmpvar ^= (*tmpvar + 63 + j) * 3 % 100_000;
        let g = *tmpvar % groups;
        grps.push(g);
        or2.push_str(&format!(
            " or region='{}' and grp={g}",
            region(*tmpvar % REGIONS)
        ));
    }
    let or = grps
        .iter()
        .map(|g| format!("grp={g}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let list = grps
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    (
        format!("region='{r}' and ({or})"),
        format!("region='{r}' and (grp IN ({list}))"),
        or2,
    )
}

pub(crate) fn run(s: &mut Session) -> Result<(), Error> {
    let c = SelectCounts::at(s.spec.scale);
    let (l, m, g) = (c.rows, c.medium_loop, c.groups);
    s.connect()?;
    s.exec("drop table if exists bench1")?;
    let columns = [
        "region char(1) NOT NULL",
        "idn integer(6) NOT NULL",
        "rev_idn integer(6) NOT NULL",
        "grp integer(6) NOT NULL",
        "grp_no_key integer(6) NOT NULL",
    ]
    .map(String::from);
    let keys = [
        "primary key (region,idn)",
        "unique (region,rev_idn)",
        "unique (region,grp,idn)",
    ]
    .map(String::from);
    s.exec(&s.create_sql("bench1", &columns, &keys))?;

    s.timed("insert", |s| {
        let mut head = "insert into bench1 values (";
        for id in 0..l {
            let grp = id * 3 % g;
            let r = region(id % REGIONS);
            s.exec(&format!("{head}'{r}',{id},{},{grp},{grp})", l - 1 - id))?;
            if 2 * id == l {
                head = "insert into bench1 (region,idn,rev_idn,grp,grp_no_key) values (";
            }
        }
        Ok(())
    })?;

    // ---- the same aggregate again and again (a query cache would answer it), then varied
    s.rows("select sum(idn+1000),sum(rev_idn-1000) from bench1")?;
    s.timed("select_cache", |s| {
        for _ in 0..l {
            s.rows("select sum(idn+100),sum(rev_idn-100) from bench1")?;
        }
        Ok(())
    })?;
    s.timed("select_cache2", |s| {
        for t in 0..l {
            s.rows(&format!("select sum(idn+{t}),sum(rev_idn-{t}) from bench1"))?;
        }
        Ok(())
    })?;

    s.timed("select_big", |s| {
        for i in 0..c.small_loop {
            let grp = i * 11 % g;
            // one region more than there are, to test misses
            let r = region(i % (REGIONS + 1));
            for w in [
                format!("region='{r}'"),
                format!("region='{r}' and idn={i}"),
                format!("region='{r}' and rev_idn={i}"),
                format!("region='{r}' and grp={grp}"),
                format!("region>='B' and region<='C' and grp={grp}"),
                format!("region>='B' and region<='E' and grp={grp}"),
                format!("grp={grp}"),
            ] {
                s.rows(&format!("select idn from bench1 where {w}"))?;
            }
        }
        Ok(())
    })?;

    s.timed("select_range", |s| {
        let mut tmpvar = 0;
        for i in 0..c.small_loop {
            let (or, inlist, or2) = range_conditions(&mut tmpvar, i, g);
            let q_in = format!("select * from bench1 where {inlist}");
            let in_rows = s.rows(&q_in)?;
            for _ in 0..10 {
                let q = format!("select * from bench1 where {or}");
                let n = s.rows(&q)?;
                s.expect_rows(&q_in, in_rows, n);
                s.rows(&format!("select * from bench1 where {or2}"))?;
                s.rows(&format!("select * from bench1 where ({or}) and idn < 50"))?;
                s.rows(&format!(
                    "select * from bench1 where (({or}) or (region='A' and grp < 10)) and region <='B'"
                ))?;
            }
        }
        Ok(())
    })?;

    s.timed("min_max_on_key", |s| {
        for t in 0..l {
            let grp = t * 3 % g;
            let r = region(t % REGIONS);
            for q in [
                "select min(region) from bench1".to_string(),
                "select max(region) from bench1".to_string(),
                "select min(region),max(region) from bench1".to_string(),
                format!("select min(rev_idn) from bench1 where region='{r}'"),
                format!("select max(grp) from bench1 where region='{r}'"),
                format!("select max(idn) from bench1 where region='{r}' and grp={grp}"),
                format!("select max(region) from bench1 where region<'{r}'"),
            ] {
                s.rows(&q)?;
            }
        }
        Ok(())
    })?;
    s.timed("count_on_key", |s| {
        for t in 0..l {
            let grp = t * 3 % g;
            let r = region(t % REGIONS);
            for w in [
                format!("region='{r}'"),
                format!("region='{r}' and grp={grp}"),
                format!("region>'{r}'"),
                format!("region<='{r}'"),
                format!("region='{r}' and grp>{grp}"),
            ] {
                s.rows(&format!("select count(*) from bench1 where {w}"))?;
            }
        }
        Ok(())
    })?;

    // ---- GROUP BY: every grp value is present (3 and the group count are coprime)
    let present = g.min(l);
    for (group, q) in GROUP_BY {
        s.timed(group, |s| {
            for _ in 0..m {
                let n = s.rows(q)?;
                if g % 3 != 0 {
                    s.expect_rows(q, n, present);
                }
            }
            Ok(())
        })?;
    }

    for (group, q, loops) in [
        (
            "count_distinct_key_prefix",
            "select count(distinct region) from bench1",
            m,
        ),
        (
            "count_distinct",
            "select count(distinct grp) from bench1",
            m,
        ),
        (
            "count_distinct_2",
            "select count(distinct grp),count(distinct rev_idn) from bench1",
            m,
        ),
        (
            "count_distinct_group_on_key",
            "select region,count(distinct idn) from bench1 group by region",
            m,
        ),
        (
            "count_distinct_group_on_key_parts",
            "select grp,count(distinct idn) from bench1 group by grp",
            m,
        ),
        (
            "count_distinct_group",
            "select grp,count(distinct rev_idn) from bench1 group by grp",
            m,
        ),
        (
            "count_distinct_big",
            "select idn,count(distinct region) from bench1 group by idn",
            m.div_ceil(10),
        ),
    ] {
        s.timed(group, |s| {
            for _ in 0..loops {
                s.rows(q)?;
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
            SelectCounts::at(Scale::Full),
            SelectCounts {
                rows: 10_000,
                medium_loop: 7000,
                small_loop: 10,
                groups: 100
            }
        );
        assert_eq!(
            SelectCounts::at(Scale::SmallTest),
            SelectCounts {
                rows: 1000,
                medium_loop: 700,
                small_loop: 1,
                groups: 10
            }
        );
        assert_eq!(SelectCounts::at(Scale::Divisor(1000)).rows, 100);
    }

    #[test]
    fn group_by_groups_in_sql_bench_order_with_vocabulary_figures() {
        let names: Vec<&str> = GROUP_BY.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            names,
            [
                "count_group_on_key_parts",
                "count_group",
                "count_group_order_group",
                "count_group_order_null",
                "count_group_with_order",
            ]
        );
        // all but the first group the unkeyed column, and differ only after it
        for (_, q) in &GROUP_BY[1..] {
            assert!(
                q.starts_with("select grp_no_key,count(*)") && q.contains(" group by grp_no_key"),
                "{q}"
            );
        }
        assert!(GROUP_BY[3].1.ends_with(" order by null"));
        // each group is a figure `select_<group>_s` of the vocabulary
        for (g, _) in GROUP_BY {
            let name = format!("select_{}_s", super::super::snake(g));
            assert_eq!(
                cairn_defs::figures::lookup(&name),
                Some(&cairn_defs::figures::OPERATION_SECONDS.figure),
                "{name}"
            );
        }
    }

    #[test]
    fn range_conditions_have_500_terms_in_both_forms() {
        let mut t = 0;
        let (or, inlist, or2) = range_conditions(&mut t, 6, 100);
        assert!(or.starts_with("region='G' and (grp=1 or grp="), "{or}");
        assert_eq!(or.matches(" or ").count(), 499);
        assert_eq!(inlist.matches(',').count(), 499);
        assert!(inlist.starts_with("region='G' and (grp IN (1,") && inlist.ends_with("))"));
        assert_eq!(or2.matches(" or ").count(), 499);
        assert!(or2.starts_with("region='A' and grp=1 or region='"));
        // $tmpvar runs on
        let mut t2 = t;
        let again = range_conditions(&mut t2, 6, 100);
        assert_ne!(again.0, or);
        let mut t3 = 0;
        assert_eq!(range_conditions(&mut t3, 6, 100).0, or, "deterministic");
    }
}
