//! sysbench's OLTP schema and data (`sbtest1..N`), created and loaded the way sysbench 1.0's `oltp_common.lua` `prepare` does, tables in parallel.
//!
//! Per table, as sysbench: `CREATE TABLE sbtestN (id INTEGER NOT NULL AUTO_INCREMENT,
//! k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT ''
//! NOT NULL, PRIMARY KEY (id)) ENGINE = <engine>`; then multi-row
//! `INSERT INTO sbtestN(k, c, pad) VALUES (…),(…)` statements of at most `insert_bytes`
//! (sysbench's bulk-insert buffer is 512 KiB) in autocommit mode, ids from AUTO_INCREMENT;
//! then `CREATE INDEX k_N ON sbtestN(k)`. Each row draws, in sysbench's order, `c` (10 groups
//! of 11 digits joined by `-`, 119 characters), `pad` (5 groups, 59 characters), then `k` in
//! `[1, table_size]` from the configured distribution. The generator is seeded per table
//! from [`SysbenchDataset::seed`], so a table's contents do not depend on `parallel`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use crate::conn::{check_identifier, Target};
use crate::rand::{Distribution, Rng};
use crate::Error;

/// `get_c_value()`: 10 groups of 11 digits, 119 characters.
pub const C_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// `get_pad_value()`: 5 groups of 11 digits, 59 characters.
pub const PAD_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########";

/// What to create: sysbench's `--tables`, `--table-size`, `--mysql-storage-engine`, `--create-secondary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysbenchDataset {
    pub tables: u32,
    /// Rows per table (`--table-size`, sysbench's default 10000).
    pub table_size: u32,
    /// Storage engine, e.g. `InnoDB` or `MyISAM`.
    pub engine: String,
    /// Create the secondary index `k_N` after loading (sysbench's default: yes).
    pub create_secondary: bool,
    /// Distribution of `k`. sysbench draws it with `sb_rand`, i.e. its default `--rand-type`
    /// (`special` in 1.0); the default here is `uniform`, see [`Distribution`].
    pub k_distribution: Distribution,
    pub seed: u64,
    /// Tables loaded at once, one connection each (sysbench 1.0: `--threads` of `prepare`).
    pub parallel: u32,
    /// Largest multi-row INSERT statement, in bytes.
    pub insert_bytes: usize,
    /// Drop existing `sbtestN` tables first (sysbench fails if they exist).
    pub replace: bool,
}

impl SysbenchDataset {
    /// `tables` × `table_size` InnoDB rows with sysbench's other defaults.
    pub fn new(tables: u32, table_size: u32) -> Self {
        SysbenchDataset {
            tables,
            table_size,
            engine: "InnoDB".into(),
            create_secondary: true,
            k_distribution: Distribution::Uniform,
            seed: 0,
            parallel: 4,
            insert_bytes: 512 * 1024,
            replace: false,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        check_identifier(&self.engine)?;
        if self.tables == 0 || self.parallel == 0 {
            return Err(Error::Invalid(
                "tables and parallel must be at least 1".into(),
            ));
        }
        if self.insert_bytes < 1024 {
            return Err(Error::Invalid("insert_bytes must be at least 1024".into()));
        }
        Ok(())
    }
}

/// How one table was loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableLoad {
    pub table: u32,
    pub rows: u64,
    pub insert_statements: u64,
    pub insert_bytes: u64,
    pub insert_s: f64,
    pub index_s: f64,
}

/// What [`load_sysbench`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SysbenchLoad {
    pub tables: Vec<TableLoad>,
    pub elapsed_s: f64,
}

/// The `CREATE TABLE` statement of table `n`.
pub fn create_table_sql(n: u32, engine: &str) -> String {
    format!(
        "CREATE TABLE sbtest{n}(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) ENGINE = {engine}"
    )
}

/// Appends one row `(k, 'c', 'pad')`, drawing c, pad and k in sysbench's order.
pub fn push_row(rng: &mut Rng, table_size: u32, k_dist: &Distribution, out: &mut Vec<u8>) {
    out.extend_from_slice(b"(");
    let mut c = Vec::with_capacity(C_TEMPLATE.len() + PAD_TEMPLATE.len());
    rng.fill_template(C_TEMPLATE, &mut c);
    let split = c.len();
    rng.fill_template(PAD_TEMPLATE, &mut c);
    let k = k_dist.sample(rng, 1, table_size);
    out.extend_from_slice(k.to_string().as_bytes());
    out.extend_from_slice(b", '");
    out.extend_from_slice(&c[..split]);
    out.extend_from_slice(b"', '");
    out.extend_from_slice(&c[split..]);
    out.extend_from_slice(b"')");
}

/// Creates the database if needed, then creates and loads `sbtest1..tables`,
/// `parallel` tables at a time. The first error stops the others and is returned.
pub fn load_sysbench(target: &Target, spec: &SysbenchDataset) -> Result<SysbenchLoad, Error> {
    spec.validate()?;
    target.ensure_database()?;
    let start = Instant::now();
    let next = AtomicU32::new(1);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<TableLoad, Error>>> = Mutex::new(Vec::new());
    let workers = spec.parallel.min(spec.tables);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut conn = match target.connect() {
                    Ok(c) => c,
                    Err(e) => {
                        failed.store(true, Ordering::SeqCst);
                        results.lock().unwrap().push(Err(e));
                        return;
                    }
                };
                while !failed.load(Ordering::SeqCst) {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n > spec.tables {
                        break;
                    }
                    let r = load_table(&mut conn, spec, n);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    results.lock().unwrap().push(r);
                }
            });
        }
    });
    let mut tables = Vec::new();
    for r in results.into_inner().unwrap() {
        tables.push(r?);
    }
    tables.sort_by_key(|t| t.table);
    Ok(SysbenchLoad {
        tables,
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

fn load_table(conn: &mut mysql::Conn, spec: &SysbenchDataset, n: u32) -> Result<TableLoad, Error> {
    let sql = |what: String| move |e| Error::sql(what, e);
    if spec.replace {
        conn.query_drop(format!("DROP TABLE IF EXISTS sbtest{n}"))
            .map_err(sql(format!("drop sbtest{n}")))?;
    }
    conn.query_drop(create_table_sql(n, &spec.engine))
        .map_err(sql(format!("create sbtest{n}")))?;

    let t = Instant::now();
    let head = format!("INSERT INTO sbtest{n}(k, c, pad) VALUES");
    let mut rng = Rng::for_stream(spec.seed, n as u64);
    let mut buf: Vec<u8> = Vec::with_capacity(spec.insert_bytes + 256);
    let mut row = Vec::with_capacity(256);
    let (mut statements, mut bytes) = (0u64, 0u64);
    let mut flush = |buf: &mut Vec<u8>| -> Result<(), Error> {
        // the buffer holds only ASCII: digits, dashes, quotes, commas, parentheses
        let q = std::str::from_utf8(buf).expect("ASCII");
        conn.query_drop(q)
            .map_err(|e| Error::sql(format!("insert into sbtest{n}"), e))?;
        statements += 1;
        bytes += buf.len() as u64;
        buf.clear();
        Ok(())
    };
    for _ in 0..spec.table_size {
        row.clear();
        push_row(&mut rng, spec.table_size, &spec.k_distribution, &mut row);
        if !buf.is_empty() && buf.len() + 1 + row.len() > spec.insert_bytes {
            flush(&mut buf)?;
        }
        if buf.is_empty() {
            buf.extend_from_slice(head.as_bytes());
        } else {
            buf.push(b',');
        }
        buf.extend_from_slice(&row);
    }
    if !buf.is_empty() {
        flush(&mut buf)?;
    }
    let insert_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if spec.create_secondary {
        conn.query_drop(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"))
            .map_err(sql(format!("create index k_{n}")))?;
    }
    Ok(TableLoad {
        table: n,
        rows: spec.table_size as u64,
        insert_statements: statements,
        insert_bytes: bytes,
        insert_s,
        index_s: t.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_sysbench_lengths() {
        assert_eq!(C_TEMPLATE.len(), 119);
        assert_eq!(PAD_TEMPLATE.len(), 59);
        assert_eq!(C_TEMPLATE.split(|&b| b == b'-').count(), 10);
        assert_eq!(PAD_TEMPLATE.split(|&b| b == b'-').count(), 5);
    }

    #[test]
    fn rows_are_deterministic_and_well_formed() {
        let d = Distribution::Uniform;
        let (mut a, mut b) = (Rng::for_stream(1, 2), Rng::for_stream(1, 2));
        let (mut ra, mut rb) = (Vec::new(), Vec::new());
        push_row(&mut a, 1000, &d, &mut ra);
        push_row(&mut b, 1000, &d, &mut rb);
        assert_eq!(ra, rb);
        let s = String::from_utf8(ra).unwrap();
        // (k, 'c', 'pad')
        let inner = s.strip_prefix('(').unwrap().strip_suffix(')').unwrap();
        let parts: Vec<&str> = inner.split(", ").collect();
        assert_eq!(parts.len(), 3, "{s}");
        let k: u32 = parts[0].parse().unwrap();
        assert!((1..=1000).contains(&k));
        assert_eq!(parts[1].len(), 119 + 2);
        assert_eq!(parts[2].len(), 59 + 2);
    }

    #[test]
    fn create_table_matches_sysbench() {
        let q = create_table_sql(3, "MyISAM");
        assert!(q.starts_with("CREATE TABLE sbtest3("));
        assert!(q.contains("id INTEGER NOT NULL AUTO_INCREMENT"));
        assert!(q.contains("k INTEGER DEFAULT '0' NOT NULL"));
        assert!(q.contains("c CHAR(120) DEFAULT '' NOT NULL"));
        assert!(q.contains("pad CHAR(60) DEFAULT '' NOT NULL"));
        assert!(q.ends_with("PRIMARY KEY (id)\n) ENGINE = MyISAM"));
    }

    #[test]
    fn bad_engine_is_rejected() {
        let mut s = SysbenchDataset::new(1, 10);
        s.engine = "InnoDB; DROP".into();
        assert!(s.validate().is_err());
    }
}
