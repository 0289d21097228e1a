//! What a sql-bench run measured, and its renderings: flat figures, a one-line headline, and sql-bench's `RUN-` summary (per-test totals, then the "Totals per operation" table) to set beside published results.

use std::collections::BTreeMap;

use cairn_defs::figures::{self as fig, Figures};
use serde::{Deserialize, Serialize};

use crate::workload::Outcome;

/// The sql-bench version whose tests and output format this suite follows.
pub const SQL_BENCH_VERSION: &str = "2.15";

/// One operation group of a test: sql-bench's "Time for `name` (`count`): …" line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupReport {
    /// sql-bench's name, e.g. `select_diff_key`, `connect+select_1_row`.
    pub name: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Client CPU (this thread) while the group ran.
    pub user_s: f64,
    pub system_s: f64,
    /// The number sql-bench prints in parentheses and sums in the RUN file's `tests`
    /// column: statements sent, or connections for the connect groups.
    pub count: u64,
    /// SQL statements sent (text queries and prepared-statement executions).
    pub statements: u64,
    /// Rows the statements returned.
    pub rows: u64,
    /// Results that differed from what sql-bench checks for.
    pub wrong_results: u64,
}

/// One test (one `test-*` script).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestReport {
    /// sql-bench's name: `insert`, `alter-table`, …
    pub name: String,
    /// Wall-clock seconds of the whole test ("Total time"), setup and cleanup included.
    pub seconds: f64,
    pub user_s: f64,
    pub system_s: f64,
    /// In the order they first ran.
    pub groups: Vec<GroupReport>,
    /// SQL statements sent by the whole test.
    pub statements: u64,
    /// What the test should have moved on the server, by `SHOW GLOBAL STATUS` name without
    /// its `Com_` prefix (`select`, `insert`, `create_table`, `stmt_execute`, …), plus
    /// `connections` for `Connections`.
    pub server_counters: BTreeMap<String, u64>,
    pub wrong_results: u64,
    /// The first wrong results, described.
    pub messages: Vec<String>,
    /// Why the test did not run (sql-bench's "Test skipped because …").
    pub skipped: Option<String>,
}

impl TestReport {
    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&GroupReport> {
        self.groups.iter().find(|g| g.name == name)
    }
}

/// A whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SqlBenchReport {
    /// `small`, `small-test`, `full` or `1/N`.
    pub scale: String,
    /// The run's options as sql-bench would show them (`--create-options=ENGINE=…`, …).
    pub arguments: String,
    /// `Server version:` (as sql-bench: `VERSION()` with `-` as spaces).
    pub server_version: String,
    /// `Running tests on:` (`uname`: system, release, machine).
    pub machine: String,
    /// `Date of test:` (UTC).
    pub date: String,
    /// In the order they ran.
    pub tests: Vec<TestReport>,
    /// Seconds of all tests.
    pub total_s: f64,
    pub wrong_results: u64,
}

/// A figure name: lower case, anything but letters and digits as one `_`
/// (`connect+select_1_row` → `connect_select_1_row`, `alter-table` → `alter_table`).
pub fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// sql-bench's `timestr(…, "all")`, with fractional wall-clock seconds (as `--hires`).
fn timestr(seconds: f64, user_s: f64, system_s: f64) -> String {
    format!(
        "{seconds:5.2} wallclock secs ({user_s:5.2} usr {system_s:5.2} sys + {:5.2} cusr {:5.2} csys = {:5.2} CPU)",
        0.0,
        0.0,
        user_s + system_s
    )
}

impl SqlBenchReport {
    /// Tests that ran (not skipped).
    fn ran(&self) -> impl Iterator<Item = &TestReport> {
        self.tests.iter().filter(|t| t.skipped.is_none())
    }

    /// `<test>_s` per test and `<test>_<group>_s` per operation group (the vocabulary's
    /// [`OPERATION_SECONDS`](fig::OPERATION_SECONDS) family), `total_s`, `errors` (wrong
    /// results).
    pub fn figures(&self) -> Figures {
        let mut f = Figures::new();
        for t in self.ran() {
            let test = snake(&t.name);
            f.set_member(&fig::OPERATION_SECONDS, &test, t.seconds);
            for g in &t.groups {
                let group = format!("{test}_{}", snake(&g.name));
                f.set_member(&fig::OPERATION_SECONDS, &group, g.seconds);
            }
        }
        f.set(&fig::TOTAL_S, self.total_s);
        f.set(&fig::ERRORS, self.wrong_results as f64);
        f
    }

    /// `insert 12.3 s, select 4.1 s, … total 40.2 s`.
    pub fn headline(&self) -> String {
        let mut parts: Vec<String> = self
            .tests
            .iter()
            .map(|t| match t.skipped {
                None => format!("{} {:.1} s", t.name, t.seconds),
                Some(_) => format!("{} skipped", t.name),
            })
            .collect();
        parts.push(format!("total {:.1} s", self.total_s));
        let mut h = parts.join(", ");
        if self.wrong_results > 0 {
            h.push_str(&format!(" ({} wrong results)", self.wrong_results));
        }
        h
    }

    /// The run in the layout of sql-bench's `run-all-tests --log` file (`output/RUN-…`):
    /// a header, one "Total time" line per test, then the seconds of every operation summed
    /// over the tests (sorted by name, as sql-bench does), ending with TOTALS. Operations
    /// with wrong results end with `?`.
    pub fn run_summary(&self) -> String {
        let mut out = String::new();
        let mut line = |s: &str| {
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&format!(
            "Benchmark DBD suite: {SQL_BENCH_VERSION} (cairn sqlbench, native mysql driver)"
        ));
        line(&format!("Date of test:        {}", self.date));
        line(&format!("Running tests on:    {}", self.machine));
        line(&format!("Arguments:           {}", self.arguments));
        line("Comments:            ");
        line("Limits from:         ");
        line(&format!("Server version:      {}", self.server_version));
        line("Optimization:        None");
        line("Hardware:            ");
        line("");
        for t in &self.tests {
            match &t.skipped {
                Some(why) => line(&format!("{}: {why}", t.name)),
                None => line(&format!(
                    "{}: Total time: {}",
                    t.name,
                    timestr(t.seconds, t.user_s, t.system_s)
                )),
            }
        }
        line("");
        line(&format!(
            "All {} test executed successfully",
            self.tests.len()
        ));
        if self.wrong_results > 0 {
            line("Tests with didn't return the correct result have a ? at end of line");
        }

        // operation → (seconds, usr, sys, tests, wrong)
        let mut ops: BTreeMap<&str, (f64, f64, f64, u64, bool)> = BTreeMap::new();
        for g in self.ran().flat_map(|t| &t.groups) {
            let e = ops.entry(g.name.as_str()).or_default();
            e.0 += g.seconds;
            e.1 += g.user_s;
            e.2 += g.system_s;
            e.3 += g.count;
            e.4 |= g.wrong_results > 0;
        }
        if !ops.is_empty() {
            line("");
            line("Totals per operation:");
            line("Operation             seconds     usr     sys     cpu   tests");
            let row = |name: &str, s: f64, u: f64, y: f64, n: u64, flag: &str| {
                let name: String = name.chars().take(35).collect();
                format!(
                    "{name:<35} {s:7.2} {u:7.2} {y:7.2} {:7.2} {n:7} {flag}",
                    u + y
                )
            };
            let mut total = (0.0, 0.0, 0.0, 0u64, String::new());
            for (name, (s, u, y, n, wrong)) in &ops {
                let flag = if *wrong { "?" } else { "" };
                line(&row(name, *s, *u, *y, *n, flag));
                total.0 += s;
                total.1 += u;
                total.2 += y;
                total.3 += n;
                total.4.push_str(flag);
            }
            line(&row("TOTALS", total.0, total.1, total.2, total.3, &total.4));
        }
        out
    }

    /// The driver-independent outcome: [`figures`](Self::figures),
    /// [`headline`](Self::headline), and as detail the report with its
    /// [`run_summary`](Self::run_summary) text.
    pub fn outcome(&self) -> Outcome {
        let mut detail = serde_json::to_value(self).expect("serialises");
        detail["run_summary"] = self.run_summary().into();
        Outcome {
            figures: self.figures(),
            headline: self.headline(),
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, seconds: f64, count: u64) -> GroupReport {
        GroupReport {
            name: name.into(),
            seconds,
            user_s: 0.5,
            system_s: 0.25,
            count,
            statements: count,
            rows: 0,
            wrong_results: 0,
        }
    }

    fn sample() -> SqlBenchReport {
        let insert = TestReport {
            name: "insert".into(),
            seconds: 12.34,
            user_s: 1.0,
            system_s: 0.5,
            groups: vec![
                group("insert", 10.0, 300),
                group("select_big", 1.0, 10),
                group("connect+select_1_row", 0.5, 7),
            ],
            ..Default::default()
        };
        let select = TestReport {
            name: "select".into(),
            seconds: 4.06,
            groups: vec![GroupReport {
                wrong_results: 1,
                ..group("select_big", 2.0, 70)
            }],
            wrong_results: 1,
            ..Default::default()
        };
        let alter = TestReport {
            name: "alter-table".into(),
            seconds: 1.0,
            groups: vec![group("alter_table_add", 1.0, 992)],
            ..Default::default()
        };
        let trx = TestReport {
            name: "transactions".into(),
            skipped: Some("Test skipped because the database doesn't support transactions".into()),
            ..Default::default()
        };
        SqlBenchReport {
            scale: "small".into(),
            arguments: "--scale=small".into(),
            server_version: "MariaDB 10.11.18 MariaDB 0+deb12u1".into(),
            machine: "Linux 6.1.0 x86_64".into(),
            date: "2025-01-02 03:04:05".into(),
            tests: vec![alter, insert, select, trx],
            total_s: 17.4,
            wrong_results: 1,
        }
    }

    #[test]
    fn snake_case_names() {
        assert_eq!(snake("connect+select_1_row"), "connect_select_1_row");
        assert_eq!(snake("create_MANY_tables"), "create_many_tables");
        assert_eq!(snake("alter-table"), "alter_table");
        assert_eq!(snake("select_column+column"), "select_column_column");
        assert_eq!(snake("create+drop"), "create_drop");
        assert_eq!(snake("drop table"), "drop_table");
        assert_eq!(snake("+x+"), "x");
    }

    #[test]
    fn figures_per_test_and_group() {
        let f = sample().figures();
        assert_eq!(f["insert_s"], 12.34);
        assert_eq!(f["insert_insert_s"], 10.0);
        assert_eq!(f["insert_connect_select_1_row_s"], 0.5);
        assert_eq!(f["select_select_big_s"], 2.0);
        assert_eq!(f["alter_table_s"], 1.0);
        assert_eq!(f["alter_table_alter_table_add_s"], 1.0);
        assert_eq!(f["total_s"], 17.4);
        assert_eq!(f["errors"], 1.0);
        assert!(!f.names().any(|k| k.starts_with("transactions")), "{f:?}");
        assert_eq!(f.outside_vocabulary(), Vec::<&str>::new());
    }

    #[test]
    fn headline_lists_tests_then_total() {
        assert_eq!(
            sample().headline(),
            "alter-table 1.0 s, insert 12.3 s, select 4.1 s, transactions skipped, total 17.4 s (1 wrong results)"
        );
    }

    #[test]
    fn run_summary_has_sql_bench_layout() {
        let s = sample().run_summary();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("Benchmark DBD suite: 2.15"));
        assert_eq!(lines[1], "Date of test:        2025-01-02 03:04:05");
        assert_eq!(
            lines[6],
            "Server version:      MariaDB 10.11.18 MariaDB 0+deb12u1"
        );
        assert!(lines.contains(
            &"insert: Total time: 12.34 wallclock secs ( 1.00 usr  0.50 sys +  0.00 cusr  0.00 csys =  1.50 CPU)"
        ), "{s}");
        assert!(lines.contains(
            &"transactions: Test skipped because the database doesn't support transactions"
        ));
        assert!(lines.contains(&"All 4 test executed successfully"));
        let table = s.split("Totals per operation:\n").nth(1).expect("table");
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(
            rows[0],
            "Operation             seconds     usr     sys     cpu   tests"
        );
        // sorted by name in byte order ('+' before '_'), same names summed over tests
        let names: Vec<&str> = rows[1..]
            .iter()
            .map(|r| r.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "alter_table_add",
                "connect+select_1_row",
                "insert",
                "select_big",
                "TOTALS"
            ]
        );
        assert_eq!(
            rows[4],
            format!(
                "{:<35} {:7.2} {:7.2} {:7.2} {:7.2} {:7} ?",
                "select_big", 3.0, 1.0, 0.5, 1.5, 80
            )
        );
        assert_eq!(
            rows[5],
            format!(
                "{:<35} {:7.2} {:7.2} {:7.2} {:7.2} {:7} ?",
                "TOTALS", 14.5, 2.5, 1.25, 3.75, 1379
            )
        );
        // what sql-bench's compare-results parses: "<op> <seconds> … <tests>"
        for r in &rows[1..] {
            let f: Vec<&str> = r.split_whitespace().collect();
            assert!(f.len() >= 6, "{r}");
            assert!(f[1..6].iter().all(|x| x.parse::<f64>().is_ok()), "{r}");
        }
    }

    #[test]
    fn outcome_carries_figures_headline_and_summary() {
        let r = sample();
        let o = r.outcome();
        assert_eq!(o.figures, r.figures());
        assert_eq!(o.headline, r.headline());
        assert_eq!(o.detail["run_summary"].as_str().unwrap(), r.run_summary());
        assert_eq!(o.detail["tests"][1]["groups"][0]["name"], "insert");
        let back: SqlBenchReport = serde_json::from_value(o.detail).unwrap();
        assert_eq!(back, r);
    }
}
