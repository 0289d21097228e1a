//! sysbench's OLTP tables in PostgreSQL, as sysbench 1.0's `oltp_common.lua` `prepare` makes
//! them with its `pgsql` driver, the rows sent with `COPY … FROM STDIN`.
//!
//! Per table: `CREATE TABLE sbtestN(id SERIAL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120)
//! DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))` (sysbench's
//! pgsql table: no engine clause); the rows — the same rows as for MariaDB, drawn by
//! [`crate::dataset::sysbench`]'s generator, ids `1..N` — in COPY's text format (tab-separated
//! lines; `c` and `pad` are digits and dashes, nothing to escape); then the `SERIAL`'s
//! sequence set to `N`, where sysbench's N inserts leave it; then `CREATE INDEX k_N ON
//! sbtestN(k)`. With [`SysbenchDataset::secondary_id`] the table has no primary key and `id`
//! gets `CREATE INDEX xid_N ON sbtestN(id)` after the rows (sysbench's `--secondary` writes
//! MySQL's inline `KEY xid (id)`, which PostgreSQL's CREATE TABLE does not take). The
//! dataset's `engine` does not apply (PostgreSQL has one table access
//! method here) and is ignored.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytes::Bytes;
use futures_util::SinkExt;

use super::{pg_error, PgConn, PgFailure};
use crate::dataset::sysbench::{LoadMethod, Rows, SysbenchDataset, SysbenchLoad, TableLoad};
use crate::{Error, Target};

/// Bytes of rows per COPY data message (the server's limit is 1 GB; the size only sets how
/// often the loader hands a chunk over).
const CHUNK: usize = 1 << 20;

/// sysbench's pgsql `CREATE TABLE` of table `n`; `secondary_id`: without the primary key
/// (`id` is indexed after the load).
pub fn create_table_sql(n: u32, secondary_id: bool) -> String {
    let primary_key = if secondary_id {
        ""
    } else {
        ",\n  PRIMARY KEY (id)"
    };
    format!(
        "CREATE TABLE sbtest{n}(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL{primary_key}\n)"
    )
}

/// Create and fill `sbtest1..tables`, `parallel` tables at a time (the database exists).
pub fn load(target: &Target, spec: &SysbenchDataset) -> Result<SysbenchLoad, Error> {
    let start = Instant::now();
    let next = AtomicU32::new(1);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<TableLoad, Error>>> = Mutex::new(Vec::new());
    let workers = spec.parallel.min(spec.tables);
    crate::threads::run_threads(
        workers,
        "load",
        |_| {
            // a table's COPY may take long: no I/O bound beyond the target's own
            let conn = match PgConn::connect(target) {
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
                let r = load_table(&conn, spec, n);
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

fn load_table(conn: &PgConn, spec: &SysbenchDataset, n: u32) -> Result<TableLoad, Error> {
    let run = |what: String, sql: &str| conn.batch(sql).map_err(|e| pg_error(what, e));
    if spec.replace {
        run(
            format!("drop sbtest{n}"),
            &format!("DROP TABLE IF EXISTS sbtest{n}"),
        )?;
    }
    run(
        format!("create sbtest{n}"),
        &create_table_sql(n, spec.secondary_id),
    )?;

    let t = Instant::now();
    let mut rows = Rows::new(spec, n);
    let mut bytes = 0u64;
    let copy = format!("COPY sbtest{n} (id, k, c, pad) FROM STDIN");
    let failed = |e: PgFailure| pg_error(format!("copy rows into sbtest{n}"), e);
    // each step bounded by the I/O timeout, not the whole table
    let mut sink = Box::pin(
        conn.wait(conn.client().copy_in::<_, Bytes>(copy.as_str()))
            .map_err(failed)?,
    );
    let mut chunk = Vec::with_capacity(CHUNK + 256);
    while rows.sent() < spec.table_size as u64 {
        chunk.clear();
        rows.fill(LoadMethod::Copy, CHUNK, &mut |l| {
            chunk.extend_from_slice(l);
            Ok(())
        })
        .expect("writes to memory");
        bytes += chunk.len() as u64;
        conn.wait(sink.send(Bytes::copy_from_slice(&chunk)))
            .map_err(failed)?;
    }
    let copied = conn.wait(sink.as_mut().finish()).map_err(failed)?;
    if copied != spec.table_size as u64 {
        return Err(Error::Invalid(format!(
            "sbtest{n}: the server took {copied} of {} rows",
            spec.table_size
        )));
    }
    // where sysbench's inserts leave the SERIAL's sequence
    run(
        format!("set the id sequence of sbtest{n}"),
        &format!("SELECT setval('sbtest{n}_id_seq', {})", spec.table_size),
    )?;
    let insert_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if spec.secondary_id {
        run(
            format!("create index xid_{n}"),
            &format!("CREATE INDEX xid_{n} ON sbtest{n}(id)"),
        )?;
    }
    if spec.create_secondary {
        run(
            format!("create index k_{n}"),
            &format!("CREATE INDEX k_{n} ON sbtest{n}(k)"),
        )?;
    }
    Ok(TableLoad {
        table: n,
        rows: spec.table_size as u64,
        method: LoadMethod::Copy,
        insert_statements: 1,
        insert_bytes: bytes,
        insert_s,
        index_s: t.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sysbench_pgsql_table() {
        let sql = create_table_sql(3, false);
        assert!(sql.starts_with("CREATE TABLE sbtest3(\n  id SERIAL,\n"));
        assert!(sql.ends_with("PRIMARY KEY (id)\n)"));
        assert!(!sql.contains("ENGINE"));
        // sysbench's --secondary: no primary key (id is indexed after the rows)
        let sql = create_table_sql(3, true);
        assert!(!sql.contains("PRIMARY KEY"), "{sql}");
        assert!(
            sql.ends_with("pad CHAR(60) DEFAULT '' NOT NULL\n)"),
            "{sql}"
        );
    }

    #[test]
    fn copy_lines_are_the_rows_of_the_mysql_loader() {
        let spec = SysbenchDataset::new(1, 3);
        let (mut a, mut b) = (Rows::new(&spec, 1), Rows::new(&spec, 1));
        let (mut copy, mut load) = (Vec::new(), Vec::new());
        a.fill(LoadMethod::Copy, usize::MAX, &mut |l| {
            copy.extend_from_slice(l);
            Ok(())
        })
        .unwrap();
        b.fill(LoadMethod::LoadData, usize::MAX, &mut |l| {
            load.extend_from_slice(l);
            Ok(())
        })
        .unwrap();
        assert_eq!(copy, load);
        let text = String::from_utf8(copy).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("1\t") && lines[2].starts_with("3\t"));
        assert_eq!(lines[1].split('\t').count(), 4);
    }
}
