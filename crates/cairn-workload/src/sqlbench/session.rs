//! One sql-bench test's bookkeeping: its connections, every statement it sends (tallied by the `Com_*` counter it moves), its timed operation groups and the wrong results it saw.
//!
//! Every statement goes through [`Session`], which asks the stop check first, so a run can
//! be ended between any two statements; any server or connection error ends the test with
//! the statement that failed (there are no retries: a benchmark that silently reconnects
//! would time something else).

use std::collections::BTreeMap;
use std::time::Instant;

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Statement, Value};

use super::report::{GroupReport, TestReport};
use super::SqlBenchSpec;
use crate::cpu::CpuTime;
use crate::oltp::StopCheck;
use crate::{Error, Target};

/// MariaDB's ER_DUP_ENTRY, which test-insert's `insert_duplicates` expects.
pub(crate) const ER_DUP_ENTRY: u16 = 1062;

/// Wrong-result messages kept per test (the count goes on).
const KEEP_MESSAGES: usize = 20;

/// The `Com_*` status counter (without the prefix) a statement increments, from its leading
/// keywords; `None` for statements this suite never sends.
pub fn com_counter(sql: &str) -> Option<&'static str> {
    // the leading keywords decide; a statement can be a megabyte of VALUES
    let sql = sql.trim_start();
    let head = sql.char_indices().nth(80).map_or(sql, |(i, _)| &sql[..i]);
    let lower = head.to_ascii_lowercase();
    let mut words = lower.split_whitespace();
    let first = words.next()?;
    let second = words.next().unwrap_or("");
    Some(match first {
        "select" => "select",
        // `INSERT INTO t SELECT …` has its own counter; a VALUES list never holds " select "
        "insert" if !lower.contains(" values") && lower.contains(" select ") => "insert_select",
        "insert" => "insert",
        "update" => "update",
        "delete" => "delete",
        "truncate" => "truncate",
        "alter" if second == "table" => "alter_table",
        "create" if matches!(second, "table" | "temporary") => "create_table",
        "create" if matches!(second, "index" | "unique") => "create_index",
        "drop" if matches!(second, "table" | "temporary") => "drop_table",
        "drop" if second == "index" => "drop_index",
        "set" => "set_option",
        "commit" => "commit",
        "rollback" => "rollback",
        _ => return None,
    })
}

/// The group being timed.
struct Open {
    name: String,
    start: Instant,
    cpu: CpuTime,
    statements: u64,
    rows: u64,
    wrong: u64,
    count: Option<u64>,
}

/// A test's connection(s) and everything it measured so far.
pub(crate) struct Session<'a> {
    pub target: &'a Target,
    pub spec: &'a SqlBenchSpec,
    stop: StopCheck<'a>,
    pub test: &'static str,
    conn: Option<Conn>,
    tally: BTreeMap<&'static str, u64>,
    statements: u64,
    groups: Vec<GroupReport>,
    open: Option<Open>,
    messages: Vec<String>,
    wrong: u64,
    started: Instant,
    cpu: CpuTime,
}

/// What a text statement returned.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub rows: u64,
    pub affected: u64,
    /// The first row, as text (NULL = `None`), when asked for.
    pub first: Option<Vec<Option<String>>>,
}

impl Reply {
    /// Column `i` of the first row as a number (`None` if absent, NULL or not a number).
    pub fn num(&self, i: usize) -> Option<f64> {
        self.first.as_ref()?.get(i)?.as_ref()?.parse().ok()
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

/// The start of a statement, for error messages (some are hundreds of kilobytes long).
fn head(sql: &str) -> String {
    let cut: String = sql.chars().take(100).collect();
    if cut.len() < sql.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

impl<'a> Session<'a> {
    pub fn new(
        target: &'a Target,
        spec: &'a SqlBenchSpec,
        stop: StopCheck<'a>,
        test: &'static str,
    ) -> Self {
        Session {
            target,
            spec,
            stop,
            test,
            conn: None,
            tally: BTreeMap::new(),
            statements: 0,
            groups: Vec::new(),
            open: None,
            messages: Vec::new(),
            wrong: 0,
            started: Instant::now(),
            cpu: CpuTime::thread(),
        }
    }

    fn check_stop(&self) -> Result<(), Error> {
        if (self.stop)() {
            Err(Error::Stopped)
        } else {
            Ok(())
        }
    }

    fn count(&mut self, counter: &'static str) {
        *self.tally.entry(counter).or_default() += 1;
    }

    /// A new connection to the target's database (counted as one `Connections`).
    pub fn new_conn(&mut self) -> Result<Conn, Error> {
        self.check_stop()?;
        let t = self.spec.statement_timeout;
        let opts = OptsBuilder::from_opts(self.target.opts(true, 0))
            .read_timeout(Some(t))
            .write_timeout(Some(t));
        let conn = Conn::new(opts).map_err(|e| Error::connect(self.target, e))?;
        self.count("connections");
        Ok(conn)
    }

    /// Opens the test's main connection (closing an earlier one).
    pub fn connect(&mut self) -> Result<(), Error> {
        self.conn = None;
        self.conn = Some(self.new_conn()?);
        Ok(())
    }

    /// Closes the main connection.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    fn fail(&self, sql: &str, e: mysql::Error) -> Error {
        let group = self
            .open
            .as_ref()
            .map(|g| format!(" {}", g.name))
            .unwrap_or_default();
        Error::sql(format!("{}{group}: {}", self.test, head(sql)), e)
    }

    fn sent(&mut self, sql: &str) {
        let counter = com_counter(sql)
            .unwrap_or_else(|| panic!("sqlbench sends a statement it cannot classify: {sql}"));
        self.count(counter);
        self.statements += 1;
        if let Some(g) = &mut self.open {
            g.statements += 1;
        }
    }

    fn got_rows(&mut self, rows: u64) {
        if let Some(g) = &mut self.open {
            g.rows += rows;
        }
    }

    /// Sends `sql` as a text query on `conn`, reading every row.
    pub fn query_on(
        &mut self,
        conn: &mut Conn,
        sql: &str,
        want_first: bool,
    ) -> Result<Reply, Error> {
        self.check_stop()?;
        self.sent(sql);
        let mut reply = Reply::default();
        let mut res = conn.query_iter(sql).map_err(|e| self.fail(sql, e))?;
        reply.affected = res.affected_rows();
        for row in res.by_ref() {
            let row = row.map_err(|e| self.fail(sql, e))?;
            if want_first && reply.first.is_none() {
                reply.first = Some(row.unwrap().iter().map(text).collect());
            }
            reply.rows += 1;
        }
        drop(res);
        self.got_rows(reply.rows);
        Ok(reply)
    }

    fn main_conn(&mut self) -> Conn {
        self.conn
            .take()
            .expect("a sqlbench test sends statements only while connected")
    }

    fn query(&mut self, sql: &str, want_first: bool) -> Result<Reply, Error> {
        let mut conn = self.main_conn();
        let r = self.query_on(&mut conn, sql, want_first);
        self.conn = Some(conn);
        r
    }

    /// Runs a statement, fetching (and counting) whatever rows it returns; `Ok` = rows.
    pub fn rows(&mut self, sql: &str) -> Result<u64, Error> {
        Ok(self.query(sql, false)?.rows)
    }

    /// As [`Session::rows`], keeping the first row for checks.
    pub fn first(&mut self, sql: &str) -> Result<Reply, Error> {
        self.query(sql, true)
    }

    /// Runs a statement that returns no rows; `Ok` = affected rows.
    pub fn exec(&mut self, sql: &str) -> Result<u64, Error> {
        Ok(self.query(sql, false)?.affected)
    }

    /// Runs a statement that must fail with `code` (a success is a wrong result, another
    /// error ends the test).
    pub fn exec_expecting(&mut self, sql: &str, code: u16) -> Result<(), Error> {
        self.check_stop()?;
        self.sent(sql);
        let mut conn = self.main_conn();
        let r = conn.query_drop(sql);
        self.conn = Some(conn);
        match r {
            Err(mysql::Error::MySqlError(e)) if e.code == code => Ok(()),
            Err(e) => Err(self.fail(sql, e)),
            Ok(()) => {
                self.wrong(format!("'{}' succeeded; expected error {code}", head(sql)));
                Ok(())
            }
        }
    }

    /// Prepares `sql` on the server (`COM_STMT_PREPARE`).
    pub fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.check_stop()?;
        let mut conn = self.main_conn();
        let r = conn.prep(sql);
        self.conn = Some(conn);
        self.count("stmt_prepare");
        r.map_err(|e| self.fail(sql, e))
    }

    /// Executes a prepared statement (`COM_STMT_EXECUTE`), reading every row; `Ok` = rows.
    pub fn execute(
        &mut self,
        stmt: &Statement,
        params: Vec<Value>,
        what: &str,
    ) -> Result<u64, Error> {
        self.check_stop()?;
        self.sent(what);
        self.count("stmt_execute");
        let mut conn = self.main_conn();
        let r = (|| -> Result<u64, mysql::Error> {
            let mut res = conn.exec_iter(stmt, params)?;
            let mut rows = 0;
            for row in res.by_ref() {
                row?;
                rows += 1;
            }
            Ok(rows)
        })();
        self.conn = Some(conn);
        let rows = r.map_err(|e| self.fail(what, e))?;
        self.got_rows(rows);
        Ok(rows)
    }

    /// Deallocates a prepared statement (`COM_STMT_CLOSE`, which has no reply).
    pub fn close(&mut self, stmt: Statement, what: &str) -> Result<(), Error> {
        let mut conn = self.main_conn();
        let r = conn.close(stmt);
        self.conn = Some(conn);
        self.count("stmt_close");
        r.map_err(|e| self.fail(what, e))
    }

    /// Starts timing operation group `name` (sql-bench's "Time for `name` (…)").
    pub fn start(&mut self, name: &str) {
        debug_assert!(self.open.is_none(), "group {name} inside another");
        self.open = Some(Open {
            name: name.to_string(),
            start: Instant::now(),
            cpu: CpuTime::thread(),
            statements: 0,
            rows: 0,
            wrong: 0,
            count: None,
        });
    }

    /// The group's count, where it is not its statements (e.g. connections).
    pub fn set_count(&mut self, n: u64) {
        if let Some(g) = &mut self.open {
            g.count = Some(n);
        }
    }

    /// Stops the clock of the open group; a group that appears twice in a test (as in
    /// sql-bench, e.g. big-tables' two `select_many_fields`) adds up.
    pub fn end(&mut self) {
        let g = self.open.take().expect("a group is open");
        let cpu = CpuTime::thread().since(&g.cpu);
        let seconds = g.start.elapsed().as_secs_f64();
        let count = g.count.unwrap_or(g.statements);
        if let Some(r) = self.groups.iter_mut().find(|r| r.name == g.name) {
            r.seconds += seconds;
            r.user_s += cpu.user_s;
            r.system_s += cpu.system_s;
            r.count += count;
            r.statements += g.statements;
            r.rows += g.rows;
            r.wrong_results += g.wrong;
        } else {
            self.groups.push(GroupReport {
                name: g.name,
                seconds,
                user_s: cpu.user_s,
                system_s: cpu.system_s,
                count,
                statements: g.statements,
                rows: g.rows,
                wrong_results: g.wrong,
            });
        }
    }

    /// Times `f` as group `name`.
    pub fn timed<T>(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.start(name);
        let r = f(self)?;
        self.end();
        Ok(r)
    }

    /// Records a wrong result (sql-bench prints a warning and marks the operation with `?`).
    pub fn wrong(&mut self, message: String) {
        self.wrong += 1;
        if let Some(g) = &mut self.open {
            g.wrong += 1;
        }
        if self.messages.len() < KEEP_MESSAGES {
            self.messages.push(message);
        }
    }

    /// Records a wrong result unless `got == want`.
    pub fn expect_rows(&mut self, sql: &str, got: u64, want: u64) {
        if got != want {
            self.wrong(format!("'{}' returned {got} rows, not {want}", head(sql)));
        }
    }

    /// `CREATE TABLE name (columns…, keys…)` with the spec's engine, as sql-bench's
    /// `$server->create` writes it (`--create-options=ENGINE=…`).
    pub fn create_sql(&self, table: &str, columns: &[String], keys: &[String]) -> String {
        let mut q = format!("create table {table} (");
        q.push_str(
            &columns
                .iter()
                .chain(keys)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(","),
        );
        q.push(')');
        if let Some(e) = &self.spec.engine {
            q.push_str(&format!(" ENGINE={e}"));
        }
        q
    }

    /// The test's report.
    pub fn finish(self) -> TestReport {
        assert!(self.open.is_none(), "a group was left open");
        let cpu = CpuTime::thread().since(&self.cpu);
        TestReport {
            name: self.test.to_string(),
            seconds: self.started.elapsed().as_secs_f64(),
            user_s: cpu.user_s,
            system_s: cpu.system_s,
            groups: self.groups,
            statements: self.statements,
            server_counters: self
                .tally
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            wrong_results: self.wrong,
            messages: self.messages,
            skipped: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_map_to_their_com_counters() {
        let c = |s| com_counter(s).unwrap();
        assert_eq!(c("select 1"), "select");
        assert_eq!(c("  SELECT * from bench1"), "select");
        assert_eq!(c("insert into bench1 values (1,2)"), "insert");
        assert_eq!(
            c("insert into t (a) values ('x select y')"),
            "insert",
            "a VALUES list is never INSERT … SELECT"
        );
        assert_eq!(
            c("INSERT INTO bench2 SELECT * from bench1"),
            "insert_select"
        );
        assert_eq!(c("update bench1 set a=1"), "update");
        assert_eq!(c("delete from bench1"), "delete");
        assert_eq!(c("create table x (a int)"), "create_table");
        assert_eq!(c("CREATE INDEX i ON t (a)"), "create_index");
        assert_eq!(c("DROP INDEX i ON t"), "drop_index");
        assert_eq!(c("drop table bench1"), "drop_table");
        assert_eq!(c("DROP TABLE IF EXISTS a,b"), "drop_table");
        assert_eq!(c("ALTER TABLE bench ADD i9 integer"), "alter_table");
        assert_eq!(c("SET autocommit=0"), "set_option");
        assert_eq!(c("COMMIT"), "commit");
        assert_eq!(c("ROLLBACK"), "rollback");
        let big = format!("insert into t values {}", "(1,'a select b'),".repeat(1000));
        assert_eq!(c(&big), "insert");
        assert_eq!(com_counter("show status"), None);
        assert_eq!(com_counter(""), None);
    }

    #[test]
    fn long_statements_are_cut_in_messages() {
        let long = "x".repeat(500);
        assert_eq!(head(&long).chars().count(), 101);
        assert_eq!(head("select 1"), "select 1");
    }
}
