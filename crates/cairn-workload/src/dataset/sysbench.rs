//! sysbench's OLTP schema and data (`sbtest1..N`), the tables and rows sysbench 1.0's `oltp_common.lua` `prepare` creates, loaded faster, tables in parallel.
//!
//! Per table, as sysbench: `CREATE TABLE sbtestN (id INTEGER NOT NULL AUTO_INCREMENT,
//! k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT ''
//! NOT NULL, PRIMARY KEY (id)) ENGINE = <engine>` (with `KEY xid (id)` in place of the
//! primary key for sysbench's `--secondary`, [`SysbenchDataset::secondary_id`]); then the
//! rows, ids from AUTO_INCREMENT; then `CREATE INDEX k_N ON sbtestN(k)`. Each row draws, in sysbench's order, `c` (10 groups
//! of 11 digits joined by `-`, 119 characters), `pad` (5 groups, 59 characters), then `k` in
//! `[1, table_size]` from the configured distribution. The generator is seeded per table
//! from [`SysbenchDataset::seed`], so a table's contents do not depend on `parallel` or on
//! how the rows are sent.
//!
//! How the rows are sent ([`LoadMethod`]): by default `LOAD DATA LOCAL INFILE` streamed from
//! memory (the server parses it much more cheaply than SQL), falling back to sysbench's
//! multi-row `INSERT INTO sbtestN(k, c, pad) VALUES (…),(…)` if the server refuses local
//! files (INSERT statements carry at most 512 KiB of rows, sysbench's bulk-insert buffer).
//! A LOAD DATA statement streams a whole table (or `insert_bytes` of it), generated as it is
//! sent, so memory stays small whatever the table size; ids are sent explicitly (`1..N`, what
//! AUTO_INCREMENT gives sysbench: LOAD DATA would reserve ids in batches and leave gaps
//! between statements). Every statement commits on its own, as sysbench's do. (Measured
//! against the alternatives, see `benches/vs_sysbench.rs`: a table in one transaction with
//! `unique_checks=0, foreign_key_checks=0`, MariaDB's InnoDB bulk-insert path, was slower
//! here than one autocommit LOAD DATA statement, and so was a fixed-width row format.)

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use crate::conn::{check_identifier, Target};
use crate::rand::{Distribution, Rng};
use crate::Error;

/// Most bytes of rows in one INSERT statement: sysbench's bulk-insert buffer (512 KiB), well
/// below any server's `max_allowed_packet`.
pub const INSERT_BYTES: usize = 512 * 1024;

/// `get_c_value()`: 10 groups of 11 digits, 119 characters.
pub const C_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// `get_pad_value()`: 5 groups of 11 digits, 59 characters.
pub const PAD_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########";

/// What to create: sysbench's `--tables`, `--table-size`, `--mysql-storage-engine`,
/// `--create-secondary`, `--secondary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysbenchDataset {
    pub tables: u32,
    /// Rows per table (`--table-size`, sysbench's default 10000).
    pub table_size: u32,
    /// Storage engine, e.g. `InnoDB` or `MyISAM`.
    pub engine: String,
    /// Create the secondary index `k_N` after loading (sysbench's default: yes).
    pub create_secondary: bool,
    /// Index `id` with a secondary key `xid` in place of the PRIMARY KEY (sysbench's
    /// `--secondary`, 0.4's `--oltp-secondary-index`): InnoDB then clusters the rows on a
    /// hidden row id, and every lookup by `id` reads two indexes. Not serialised when off,
    /// so the specs recorded before it existed read the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secondary_id: bool,
    /// Distribution of `k`. sysbench draws it with `sb_rand`, i.e. its default `--rand-type`
    /// (`special` in 1.0); the default here is `uniform`, see [`Distribution`].
    pub k_distribution: Distribution,
    pub seed: u64,
    /// Tables loaded at once, one connection each (sysbench 1.0: `--threads` of `prepare`).
    pub parallel: u32,
    /// Most bytes of rows one statement carries (default 1 GiB: a LOAD DATA statement per
    /// table up to about 5 million rows); INSERT statements are further capped at
    /// [`INSERT_BYTES`].
    pub insert_bytes: usize,
    /// Drop existing `sbtestN` tables first (sysbench fails if they exist).
    pub replace: bool,
    /// How rows are sent.
    #[serde(default)]
    pub method: LoadMethod,
}

/// How the loader sends rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadMethod {
    /// `LOAD DATA LOCAL INFILE` streamed from memory (tab-separated); INSERT statements
    /// instead if the server refuses local files.
    #[default]
    LoadData,
    /// Multi-row `INSERT … VALUES` statements, as sysbench sends.
    Insert,
    /// PostgreSQL's `COPY … FROM STDIN` (text format: the lines LOAD DATA reads), the
    /// only way rows reach a PostgreSQL server (see [`crate::pgsql::dataset`]).
    Copy,
}

impl SysbenchDataset {
    /// `tables` × `table_size` InnoDB rows with sysbench's other defaults.
    pub fn new(tables: u32, table_size: u32) -> Self {
        SysbenchDataset {
            tables,
            table_size,
            engine: "InnoDB".into(),
            create_secondary: true,
            secondary_id: false,
            k_distribution: Distribution::Uniform,
            seed: 0,
            parallel: 4,
            insert_bytes: 1 << 30,
            replace: false,
            method: LoadMethod::LoadData,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
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
    /// How the rows were sent (`load_data` may have fallen back to `insert`).
    #[serde(default)]
    pub method: LoadMethod,
    /// Statements that carried rows (INSERT or LOAD DATA).
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

/// The `CREATE TABLE` statement of table `n`; `secondary_id`: `id` under `KEY xid` in place
/// of the PRIMARY KEY, as sysbench's `--secondary` writes it.
pub fn create_table_sql(n: u32, engine: &str, secondary_id: bool) -> String {
    let id_index = if secondary_id {
        "KEY xid"
    } else {
        "PRIMARY KEY"
    };
    format!(
        "CREATE TABLE sbtest{n}(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {id_index} (id)\n) ENGINE = {engine}"
    )
}

/// One row's values, drawn in sysbench's order: `c`, `pad`, then `k`.
struct Row {
    k: u32,
    /// `c` (119 bytes) then `pad` (59 bytes)
    c_pad: Vec<u8>,
}

impl Row {
    fn new() -> Self {
        Row {
            k: 0,
            c_pad: Vec::with_capacity(C_TEMPLATE.len() + PAD_TEMPLATE.len()),
        }
    }

    fn draw(&mut self, rng: &mut Rng, table_size: u32, k_dist: &Distribution) {
        self.c_pad.clear();
        rng.fill_template(C_TEMPLATE, &mut self.c_pad);
        rng.fill_template(PAD_TEMPLATE, &mut self.c_pad);
        self.k = k_dist.sample(rng, 1, table_size);
    }

    fn c(&self) -> &[u8] {
        &self.c_pad[..C_TEMPLATE.len()]
    }

    fn pad(&self) -> &[u8] {
        &self.c_pad[C_TEMPLATE.len()..]
    }

    /// `(k, 'c', 'pad')`, a row of a multi-row INSERT.
    fn push_values(&self, out: &mut Vec<u8>) {
        out.push(b'(');
        push_u32(self.k, out);
        out.extend_from_slice(b", '");
        out.extend_from_slice(self.c());
        out.extend_from_slice(b"', '");
        out.extend_from_slice(self.pad());
        out.extend_from_slice(b"')");
    }

    /// `id<TAB>k<TAB>c<TAB>pad<LF>`, a line for LOAD DATA.
    fn push_line(&self, id: u32, out: &mut Vec<u8>) {
        push_u32(id, out);
        out.push(b'\t');
        push_u32(self.k, out);
        out.push(b'\t');
        out.extend_from_slice(self.c());
        out.push(b'\t');
        out.extend_from_slice(self.pad());
        out.push(b'\n');
    }
}

/// Appends `v` in decimal.
fn push_u32(mut v: u32, out: &mut Vec<u8>) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends one row `(k, 'c', 'pad')`, drawing c, pad and k in sysbench's order.
pub fn push_row(rng: &mut Rng, table_size: u32, k_dist: &Distribution, out: &mut Vec<u8>) {
    let mut row = Row::new();
    row.draw(rng, table_size, k_dist);
    row.push_values(out);
}

/// Creates the database if needed, then creates and loads `sbtest1..tables`,
/// `parallel` tables at a time. The first error stops the others and is returned.
pub fn load_sysbench(target: &Target, spec: &SysbenchDataset) -> Result<SysbenchLoad, Error> {
    spec.validate()?;
    target.ensure_database()?;
    if target.protocol == crate::Protocol::Postgresql {
        return crate::pgsql::dataset::load(target, spec);
    }
    let start = Instant::now();
    let next = AtomicU32::new(1);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<TableLoad, Error>>> = Mutex::new(Vec::new());
    let workers = spec.parallel.min(spec.tables);
    // a loader that cannot start or panics stops the others and fails the load
    crate::threads::run_threads(
        workers,
        "load",
        |_| {
            let mut conn = match target.connect() {
                Ok(c) => c,
                Err(e) => {
                    failed.store(true, Ordering::SeqCst);
                    results.lock().unwrap().push(Err(e));
                    return;
                }
            };
            let mut method = spec.method;
            while !failed.load(Ordering::SeqCst) {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n > spec.tables {
                    break;
                }
                let r = load_table(&mut conn, spec, n, &mut method);
                if r.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                results.lock().unwrap().push(r);
            }
        },
        || failed.store(true, Ordering::SeqCst),
    )?;
    let mut tables = Vec::new();
    for r in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        tables.push(r?);
    }
    tables.sort_by_key(|t| t.table);
    Ok(SysbenchLoad {
        tables,
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

/// The server refuses `LOAD DATA LOCAL` (ER_NOT_ALLOWED_COMMAND, MariaDB's
/// ER_LOAD_INFILE_CAPABILITY_DISABLED, MySQL's ER_CLIENT_LOCAL_FILES_DISABLED).
fn local_infile_refused(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::MySqlError(m) if [1148, 4166, 3948].contains(&m.code))
}

/// A table's rows, drawn one at a time; a row that did not fit into a statement is kept
/// for the next one.
pub(crate) struct Rows {
    rng: Rng,
    row: Row,
    table_size: u32,
    k_dist: Distribution,
    /// Rows drawn so far; the current row's id.
    drawn: u64,
    /// The current row was drawn but not sent.
    carry: bool,
    line: Vec<u8>,
    /// Rows and bytes the last statement carried.
    pub(crate) last: (u64, u64),
}

impl Rows {
    pub(crate) fn new(spec: &SysbenchDataset, n: u32) -> Self {
        Rows {
            rng: Rng::for_stream(spec.seed, n as u64),
            row: Row::new(),
            table_size: spec.table_size,
            k_dist: spec.k_distribution,
            drawn: 0,
            carry: false,
            line: Vec::with_capacity(256),
            last: (0, 0),
        }
    }

    /// Rows acknowledged by the server so far, i.e. not pending in `carry`.
    pub(crate) fn sent(&self) -> u64 {
        self.drawn - u64::from(self.carry)
    }

    /// Feeds rows to `out` in `method`'s format until `budget` bytes would be exceeded (at
    /// least one row) or every row is drawn; records the count in `last`.
    pub(crate) fn fill(
        &mut self,
        method: LoadMethod,
        budget: usize,
        out: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let (mut rows, mut bytes) = (0u64, 0usize);
        loop {
            if !self.carry {
                if self.drawn == self.table_size as u64 {
                    break;
                }
                self.row.draw(&mut self.rng, self.table_size, &self.k_dist);
                self.drawn += 1;
            }
            self.line.clear();
            match method {
                LoadMethod::Insert => {
                    if rows > 0 {
                        self.line.push(b',');
                    }
                    self.row.push_values(&mut self.line);
                }
                LoadMethod::LoadData | LoadMethod::Copy => {
                    self.row.push_line(self.drawn as u32, &mut self.line)
                }
            }
            if rows > 0 && bytes + self.line.len() > budget {
                self.carry = true;
                break;
            }
            self.carry = false;
            out(&self.line)?;
            rows += 1;
            bytes += self.line.len();
        }
        self.last = (rows, bytes as u64);
        Ok(())
    }
}

fn load_table(
    conn: &mut mysql::Conn,
    spec: &SysbenchDataset,
    n: u32,
    method: &mut LoadMethod,
) -> Result<TableLoad, Error> {
    let sql = |what: String| move |e| Error::sql(what, e);
    if spec.replace {
        conn.query_drop(format!("DROP TABLE IF EXISTS sbtest{n}"))
            .map_err(sql(format!("drop sbtest{n}")))?;
    }
    conn.query_drop(create_table_sql(n, &spec.engine, spec.secondary_id))
        .map_err(sql(format!("create sbtest{n}")))?;

    let t = Instant::now();
    let rows = Arc::new(Mutex::new(Rows::new(spec, n)));
    if *method == LoadMethod::LoadData {
        let (rows, budget) = (rows.clone(), spec.insert_bytes);
        conn.set_local_infile_handler(Some(mysql::LocalInfileHandler::new(move |_, w| {
            use std::io::Write;
            rows.lock()
                .unwrap()
                .fill(LoadMethod::LoadData, budget, &mut |l| w.write_all(l))
        })));
    }
    let load_data = format!(
        "LOAD DATA LOCAL INFILE 'sbtest{n}' INTO TABLE sbtest{n} \
         FIELDS TERMINATED BY '\\t' ESCAPED BY '' LINES TERMINATED BY '\\n' (id, k, c, pad)"
    );
    let insert_head = format!("INSERT INTO sbtest{n}(k, c, pad) VALUES");
    let insert_budget = spec.insert_bytes.min(INSERT_BYTES) - insert_head.len();
    let mut insert = Vec::with_capacity(INSERT_BYTES + 256);
    let (mut statements, mut bytes) = (0u64, 0u64);
    loop {
        let sent = rows.lock().unwrap().sent();
        if sent == spec.table_size as u64 {
            break;
        }
        let result = match *method {
            LoadMethod::Copy => {
                return Err(Error::Invalid(
                    "COPY loads PostgreSQL tables, not MariaDB's".into(),
                ))
            }
            LoadMethod::LoadData => conn.query_drop(&load_data),
            LoadMethod::Insert => {
                insert.clear();
                insert.extend_from_slice(insert_head.as_bytes());
                rows.lock()
                    .unwrap()
                    .fill(LoadMethod::Insert, insert_budget, &mut |l| {
                        insert.extend_from_slice(l);
                        Ok(())
                    })
                    .expect("writes to memory");
                // only ASCII: digits, dashes, quotes, commas, parentheses
                conn.query_drop(std::str::from_utf8(&insert).expect("ASCII"))
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if *method == LoadMethod::LoadData && local_infile_refused(&e) => {
                tracing::debug!("LOAD DATA LOCAL refused ({e}); sending INSERT statements");
                conn.set_local_infile_handler(None);
                *method = LoadMethod::Insert;
                // draw the rows again from the last acknowledged one
                let mut fresh = Rows::new(spec, n);
                for _ in 0..sent {
                    fresh
                        .row
                        .draw(&mut fresh.rng, spec.table_size, &spec.k_distribution);
                }
                fresh.drawn = sent;
                *rows.lock().unwrap() = fresh;
                continue;
            }
            Err(e) => return Err(Error::sql(format!("load rows into sbtest{n}"), e)),
        }
        let (carried, carried_bytes) = rows.lock().unwrap().last;
        // every row must have arrived intact (LOAD DATA only warns about bad ones)
        if conn.affected_rows() != carried || conn.warnings() != 0 {
            return Err(Error::Invalid(format!(
                "sbtest{n}: the server took {} of {carried} rows, with {} warnings",
                conn.affected_rows(),
                conn.warnings()
            )));
        }
        statements += 1;
        bytes += carried_bytes;
    }
    conn.set_local_infile_handler(None);
    let insert_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if spec.create_secondary {
        conn.query_drop(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"))
            .map_err(sql(format!("create index k_{n}")))?;
    }
    Ok(TableLoad {
        table: n,
        rows: spec.table_size as u64,
        method: *method,
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
    fn statements_split_rows_without_losing_or_reordering_any() {
        let mut spec = SysbenchDataset::new(1, 50);
        spec.seed = 3;
        let all = |method, budget| {
            let mut rows = Rows::new(&spec, 1);
            let mut statements = Vec::new();
            while rows.sent() < 50 {
                let mut out = Vec::new();
                rows.fill(method, budget, &mut |l| {
                    out.extend_from_slice(l);
                    Ok(())
                })
                .unwrap();
                assert!(rows.last.0 >= 1 && rows.last.1 == out.len() as u64);
                assert!(out.len() <= budget || rows.last.0 == 1);
                statements.push(out);
            }
            statements
        };
        let one = all(LoadMethod::LoadData, 1 << 20);
        assert_eq!(one.len(), 1);
        let many = all(LoadMethod::LoadData, 1000);
        assert!(many.len() > 5, "{}", many.len());
        assert_eq!(many.concat(), one[0]);
        let text = String::from_utf8(one[0].clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 50);
        for (i, l) in lines.iter().enumerate() {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f[0], (i + 1).to_string());
            assert!((1..=50).contains(&f[1].parse::<u32>().unwrap()));
            assert_eq!((f[2].len(), f[3].len()), (119, 59));
        }
        // INSERT rows: the same values, comma-separated within a statement
        let ins = all(LoadMethod::Insert, 1000);
        let first = String::from_utf8(ins[0].clone()).unwrap();
        let (k, c) = (
            lines[0].split('\t').nth(1).unwrap(),
            lines[0].split('\t').nth(2).unwrap(),
        );
        assert!(first.starts_with(&format!("({k}, '{c}', '")), "{first}");
        assert!(!first.starts_with(',') && first.contains("),("));
    }

    #[test]
    fn decimal_digits() {
        for v in [0, 7, 10, 99_999, u32::MAX] {
            let mut out = Vec::new();
            push_u32(v, &mut out);
            assert_eq!(out, v.to_string().as_bytes());
        }
    }

    #[test]
    fn create_table_matches_sysbench() {
        let q = create_table_sql(3, "MyISAM", false);
        assert!(q.starts_with("CREATE TABLE sbtest3("));
        assert!(q.contains("id INTEGER NOT NULL AUTO_INCREMENT"));
        assert!(q.contains("k INTEGER DEFAULT '0' NOT NULL"));
        assert!(q.contains("c CHAR(120) DEFAULT '' NOT NULL"));
        assert!(q.contains("pad CHAR(60) DEFAULT '' NOT NULL"));
        assert!(q.ends_with("PRIMARY KEY (id)\n) ENGINE = MyISAM"));
        // sysbench's --secondary: the same table, id under a secondary key
        let q2 = create_table_sql(3, "MyISAM", true);
        assert_eq!(q2, q.replace("PRIMARY KEY (id)", "KEY xid (id)"));
    }

    #[test]
    fn a_spec_without_a_secondary_id_serialises_as_before_it_existed() {
        let spec = SysbenchDataset::new(1, 10);
        let json = serde_json::to_value(&spec).unwrap();
        assert!(json.get("secondary_id").is_none(), "{json}");
        let mut on = spec.clone();
        on.secondary_id = true;
        let json = serde_json::to_value(&on).unwrap();
        assert_eq!(json["secondary_id"], true);
        let back: SysbenchDataset = serde_json::from_value(json).unwrap();
        assert_eq!(back, on);
    }

    #[test]
    fn bad_engine_is_rejected() {
        let mut s = SysbenchDataset::new(1, 10);
        s.engine = "InnoDB; DROP".into();
        assert!(s.validate().is_err());
    }
}
