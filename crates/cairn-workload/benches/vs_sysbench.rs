//! cairn's native OLTP driver against sysbench 1.0 (Debian's `/usr/bin/sysbench`), on one
//! MariaDB server from the shared test image: same dataset, same threads, same duration and
//! warmup, same `--rand-type=uniform`, both clients on this host over TCP as user `cairn`.
//!
//! Run with `cargo bench -p cairn-workload --bench vs_sysbench` (or `just bench`).
//!
//! For every test × thread count the two clients run **interleaved** (A B, B A, A B, …) and
//! the table shows medians over the rounds, the spread (min–max), the throughput ratio
//! ours/sysbench and the client CPU ratio (per round pair, so slow drifts of the machine's
//! load cancel; median and range over the pairs), client CPU per 1,000 queries, and the
//! driver's aims (tps ratio ≥ 1 everywhere, CPU per query ≤ 0.7× at 2 threads) met or missed:
//! - ours: `getrusage(RUSAGE_SELF)` around the run, i.e. the whole client (connect, prepare,
//!   threads, warmup and measured window), and the client threads' own figure from
//!   `Metrics` (`RUSAGE_THREAD`, warmup + measured, no connect/prepare) beside it;
//! - sysbench: the child's rusage from `wait4` (the whole process: start-up, Lua, connect,
//!   prepare, warmup, measured window).
//!
//! The queries each client sent are its own count (ours: `Metrics`; sysbench: the sum of its
//! checkpoint and final reports), cross-checked against the server's `Com_*` counters; the
//! rows the server read per event (`Innodb_rows_read`) are printed for both, to show the two
//! do the same work.
//!
//! sysbench 1.0 has no `--warmup-time`: its warmup is `--report-checkpoints=W` with
//! `--time=W+T` (the checkpoint dumps and resets the counters; the final report covers the
//! last T seconds).
//!
//! Then dataset loading: cairn's loader against `sysbench oltp_read_only prepare` for the
//! same tables × rows and parallelism, each into a fresh database, interleaved. cairn's loads
//! go to a second server, the same but for the load-only settings a dataset step's server
//! runs with (`DbSystem::load_options`): a dataset step's procedure against sysbench's.
//!
//! Environment (defaults in brackets):
//! `CAIRN_BENCH_TABLES` [4], `CAIRN_BENCH_TABLE_SIZE` [10000], `CAIRN_BENCH_THREADS` [1,2,4],
//! `CAIRN_BENCH_TESTS` [oltp_point_select,oltp_read_only], `CAIRN_BENCH_TIME` [5] and
//! `CAIRN_BENCH_WARMUP` [1] seconds per round, `CAIRN_BENCH_ROUNDS` [3] rounds per client
//! (0 skips the OLTP part), `CAIRN_BENCH_LOAD_TABLES` [4], `CAIRN_BENCH_LOAD_SIZE` [100000],
//! `CAIRN_BENCH_LOAD_PARALLEL` [4], `CAIRN_BENCH_LOAD_REPS` [3] (0 skips loading),
//! `CAIRN_BENCH_SYSBENCH` [/usr/bin/sysbench], `CAIRN_BENCH_SERVER` (the server's `my.cnf`
//! options, `name=value` separated by commas) [innodb_buffer_pool_size=1G,
//! innodb_log_file_size=1G]: the redo log holds a whole load, so that loading times measure
//! the loaders and not checkpoint flushing (with MariaDB's default 96 MiB redo log, loads of
//! ~80 MiB stall on it, through the test container's storage driver, for both loaders alike).

use std::collections::HashMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use cairn_exec::docker::Connect;
use cairn_exec::system;
use cairn_testkit::start_mariadb;
use cairn_workload::cpu::CpuTime;
use cairn_workload::{
    load_sysbench, run_oltp, Distribution, OltpSpec, OltpTest, SysbenchDataset, Target,
};
use mysql::prelude::Queryable;

fn env<T: FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not valid")),
        _ => default,
    }
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

struct Config {
    tables: u32,
    table_size: u32,
    threads: Vec<u32>,
    tests: Vec<OltpTest>,
    time_s: u64,
    warmup_s: u64,
    rounds: u32,
    load_tables: u32,
    load_size: u32,
    load_parallel: u32,
    load_reps: u32,
    sysbench: String,
    server: Vec<(String, String)>,
}

impl Config {
    fn from_env() -> Self {
        let tests = env_list("CAIRN_BENCH_TESTS", "oltp_point_select,oltp_read_only")
            .iter()
            .map(|t| match t.as_str() {
                "oltp_point_select" | "point_select" => OltpTest::PointSelect,
                "oltp_read_only" | "read_only" => OltpTest::ReadOnly,
                other => panic!("CAIRN_BENCH_TESTS: unknown test {other:?}"),
            })
            .collect();
        let threads = env_list("CAIRN_BENCH_THREADS", "1,2,4")
            .iter()
            .map(|t| t.parse().expect("CAIRN_BENCH_THREADS: numbers"))
            .collect();
        Config {
            tables: env("CAIRN_BENCH_TABLES", 4),
            table_size: env("CAIRN_BENCH_TABLE_SIZE", 10_000),
            threads,
            tests,
            time_s: env("CAIRN_BENCH_TIME", 5),
            warmup_s: env("CAIRN_BENCH_WARMUP", 1),
            rounds: env("CAIRN_BENCH_ROUNDS", 3),
            load_tables: env("CAIRN_BENCH_LOAD_TABLES", 4),
            load_size: env("CAIRN_BENCH_LOAD_SIZE", 100_000),
            load_parallel: env("CAIRN_BENCH_LOAD_PARALLEL", 4),
            load_reps: env("CAIRN_BENCH_LOAD_REPS", 3),
            sysbench: env("CAIRN_BENCH_SYSBENCH", "/usr/bin/sysbench".to_string()),
            server: env_list(
                "CAIRN_BENCH_SERVER",
                "innodb_buffer_pool_size=1G,innodb_log_file_size=1G",
            )
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                None => (kv.clone(), String::new()),
            })
            .collect(),
        }
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

// ---------------------------------------------------------------------------------------
// sysbench as a child process

/// What a sysbench child printed and used.
struct ChildRun {
    stdout: String,
    cpu: CpuTime,
    wall_s: f64,
}

/// Runs `sysbench args…`, returning its output and its own rusage (`wait4`).
fn run_child(program: &str, args: &[String]) -> Result<ChildRun, String> {
    let t = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let mut err_pipe = child.stderr.take().expect("stderr piped");
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout piped")
        .read_to_string(&mut stdout)
        .map_err(|e| format!("read sysbench's output: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: the zeroed rusage is ours to fill; `pid` is our child, not yet reaped (the
    // `Child` is never waited on, so std does not reap it either).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = loop {
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break rc;
    };
    let wall_s = t.elapsed().as_secs_f64();
    let stderr = stderr.join().unwrap_or_default();
    if rc != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!(
            "{program} {} failed (status {status:#x}):\n{stdout}\n{stderr}",
            args.join(" ")
        ));
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Ok(ChildRun {
        stdout,
        cpu: CpuTime {
            user_s: secs(ru.ru_utime),
            system_s: secs(ru.ru_stime),
        },
        wall_s,
    })
}

fn sysbench_common(target: &Target, tables: u32, table_size: u32, threads: u32) -> Vec<String> {
    vec![
        "--db-driver=mysql".into(),
        format!("--mysql-host={}", target.host),
        format!("--mysql-port={}", target.port),
        format!("--mysql-user={}", target.user),
        "--mysql-password=".into(),
        format!("--mysql-db={}", target.database),
        format!("--tables={tables}"),
        format!("--table-size={table_size}"),
        format!("--threads={threads}"),
        "--rand-type=uniform".into(),
    ]
}

/// One "SQL statistics" block of a sysbench report.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Report {
    read: u64,
    other: u64,
    queries: u64,
    transactions: u64,
    tps: f64,
    qps: f64,
    ignored_errors: u64,
    total_time_s: f64,
}

/// The `N (X per sec.)` after `key:` on a line: `(N, X)`.
fn count_and_rate(rest: &str) -> Option<(u64, f64)> {
    let n = rest.split_whitespace().next()?.parse().ok()?;
    let open = rest.find('(')?;
    let rate = rest[open + 1..].split_whitespace().next()?.parse().ok()?;
    Some((n, rate))
}

/// Every statistics block of sysbench 1.0's output (checkpoint reports, then the final
/// one), in order. Lines are matched by their trimmed key, so column widths do not matter.
fn parse_sysbench(out: &str) -> Result<Vec<Report>, String> {
    let mut blocks: Vec<Report> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for line in out.lines() {
        let l = line.trim();
        if l == "SQL statistics:" {
            blocks.push(Report::default());
            seen.clear();
            continue;
        }
        let Some(cur) = blocks.last_mut() else {
            continue;
        };
        let Some((key, rest)) = l.split_once(':') else {
            continue;
        };
        let rest = rest.trim();
        let bad = || format!("cannot parse sysbench's line {line:?}");
        match key {
            "read" => cur.read = rest.parse().map_err(|_| bad())?,
            "other" => cur.other = rest.parse().map_err(|_| bad())?,
            "transactions" => {
                (cur.transactions, cur.tps) = count_and_rate(rest).ok_or_else(bad)?;
            }
            "queries" => (cur.queries, cur.qps) = count_and_rate(rest).ok_or_else(bad)?,
            "ignored errors" => cur.ignored_errors = count_and_rate(rest).ok_or_else(bad)?.0,
            "total time" => {
                cur.total_time_s = rest.trim_end_matches('s').parse().map_err(|_| bad())?
            }
            _ => continue,
        }
        seen.push(key);
    }
    if blocks.is_empty() {
        return Err(format!("no statistics in sysbench's output:\n{out}"));
    }
    if !["transactions", "queries", "total time"]
        .iter()
        .all(|k| seen.contains(k))
    {
        return Err(format!(
            "incomplete final report in sysbench's output:\n{out}"
        ));
    }
    Ok(blocks)
}

// ---------------------------------------------------------------------------------------
// server counters

const COUNTERS: [&str; 8] = [
    "Com_select",
    "Com_begin",
    "Com_commit",
    "Com_rollback",
    "Com_stmt_execute",
    "Com_stmt_prepare",
    "Rows_read",
    "Rows_sent",
];

/// The server's CPU seconds so far (`/proc/<pid>/stat` utime + stime of mariadbd).
fn server_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // the fields after the parenthesised command name; utime and stime are fields 14, 15
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    f.iter().sum::<u64>() as f64 / tck
}

fn status(c: &mut mysql::Conn) -> HashMap<String, u64> {
    let list = COUNTERS.map(|k| format!("'{k}'")).join(",");
    c.query::<(String, String), _>(format!(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
    ))
    .expect("SHOW GLOBAL STATUS")
    .into_iter()
    .filter_map(|(k, v)| v.parse().ok().map(|v| (k, v)))
    .collect()
}

fn delta(a: &HashMap<String, u64>, b: &HashMap<String, u64>, k: &str) -> u64 {
    b.get(k).copied().unwrap_or(0) - a.get(k).copied().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// one round of one client

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Ours,
    Sysbench,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Ours => "ours",
            Client::Sysbench => "sysbench",
        }
    }
}

/// One client's round.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// Events per second over the measured window.
    tps: f64,
    /// Whole client's CPU per 1,000 queries (all queries it sent, warmup included).
    cpu_ms_per_kq: f64,
    /// The user-mode part of it.
    user_ms_per_kq: f64,
    /// Client threads only (ours; `Metrics`).
    thread_cpu_ms_per_kq: Option<f64>,
    /// Queries the client counted over the whole run / what the server counted.
    queries: u64,
    server_queries: u64,
    events: u64,
    stmt_executes: u64,
    rows_read: u64,
    rows_sent: u64,
    /// The server's CPU over the whole run.
    server_cpu_s: f64,
}

struct Bench<'a> {
    cfg: &'a Config,
    target: &'a Target,
    admin: mysql::Conn,
    server_pid: u32,
}

impl Bench<'_> {
    fn round(&mut self, client: Client, test: OltpTest, threads: u32, seed: u64) -> Sample {
        let cfg = self.cfg;
        let before = status(&mut self.admin);
        let server0 = server_cpu_s(self.server_pid);
        let mut s = match client {
            Client::Ours => {
                let mut spec = OltpSpec::new(
                    test,
                    cfg.tables,
                    cfg.table_size,
                    threads,
                    Duration::from_secs(cfg.time_s),
                );
                spec.warmup = Duration::from_secs(cfg.warmup_s);
                spec.rand = Distribution::Uniform;
                spec.seed = seed;
                let cpu0 = CpuTime::process();
                let m = run_oltp(self.target, &spec).unwrap_or_else(|e| panic!("ours: {e}"));
                let cpu = CpuTime::process().since(&cpu0);
                let (w, t) = (&m.warmup.totals, &m.measured.totals);
                let queries = w.queries.total() + t.queries.total();
                let mut thread_cpu = m.warmup.client_cpu;
                thread_cpu.add(&m.measured.client_cpu);
                assert_eq!(w.errors.total() + t.errors.total(), 0, "ours: errors");
                Sample {
                    tps: m.tps,
                    cpu_ms_per_kq: cpu.total_s() * 1e6 / queries as f64,
                    user_ms_per_kq: cpu.user_s * 1e6 / queries as f64,
                    thread_cpu_ms_per_kq: Some(thread_cpu.total_s() * 1e6 / queries as f64),
                    queries,
                    server_queries: 0,
                    events: w.events + t.events,
                    stmt_executes: 0,
                    rows_read: 0,
                    rows_sent: 0,
                    server_cpu_s: 0.0,
                }
            }
            Client::Sysbench => {
                let mut args = vec![test.name().to_string()];
                args.extend(sysbench_common(
                    self.target,
                    cfg.tables,
                    cfg.table_size,
                    threads,
                ));
                args.push(format!("--time={}", cfg.warmup_s + cfg.time_s));
                if cfg.warmup_s > 0 {
                    args.push(format!("--report-checkpoints={}", cfg.warmup_s));
                }
                args.push("--report-interval=0".into());
                args.push("run".into());
                let run = run_child(&cfg.sysbench, &args).unwrap_or_else(|e| panic!("{e}"));
                let reports = parse_sysbench(&run.stdout).unwrap_or_else(|e| panic!("{e}"));
                let expect = if cfg.warmup_s > 0 { 2 } else { 1 };
                assert_eq!(
                    reports.len(),
                    expect,
                    "sysbench reports (checkpoint + final):\n{}",
                    run.stdout
                );
                let last = reports.last().unwrap();
                // the final report's rates are over the time since the checkpoint (its
                // "total time" counts from the start)
                let window = last.transactions as f64 / last.tps;
                assert!(
                    (window - cfg.time_s as f64).abs() < 0.5,
                    "sysbench's final rates should cover the measured {} s, not {window} s:\n{}",
                    cfg.time_s,
                    run.stdout
                );
                let queries: u64 = reports.iter().map(|r| r.queries).sum();
                let events: u64 = reports.iter().map(|r| r.transactions).sum();
                assert_eq!(
                    reports.iter().map(|r| r.ignored_errors).sum::<u64>(),
                    0,
                    "sysbench: errors"
                );
                Sample {
                    tps: last.tps,
                    cpu_ms_per_kq: run.cpu.total_s() * 1e6 / queries as f64,
                    user_ms_per_kq: run.cpu.user_s * 1e6 / queries as f64,
                    thread_cpu_ms_per_kq: None,
                    queries,
                    server_queries: 0,
                    events,
                    stmt_executes: 0,
                    rows_read: 0,
                    rows_sent: 0,
                    server_cpu_s: 0.0,
                }
            }
        };
        s.server_cpu_s = server_cpu_s(self.server_pid) - server0;
        let after = status(&mut self.admin);
        s.server_queries = ["Com_select", "Com_begin", "Com_commit", "Com_rollback"]
            .iter()
            .map(|k| delta(&before, &after, k))
            .sum();
        s.stmt_executes = delta(&before, &after, "Com_stmt_execute");
        s.rows_read = delta(&before, &after, "Rows_read");
        s.rows_sent = delta(&before, &after, "Rows_sent");
        s
    }
}

// ---------------------------------------------------------------------------------------
// statistics and printing

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// `median ±half-range%` of `v`.
fn med_spread(v: &[f64], decimals: usize) -> String {
    let m = median(v);
    let (lo, hi) = spread(v);
    let pct = if m > 0.0 {
        (hi - lo) / 2.0 / m * 100.0
    } else {
        0.0
    };
    format!("{m:.decimals$} ±{pct:.0}%")
}

struct Cell {
    test: OltpTest,
    threads: u32,
    ours: Vec<Sample>,
    sb: Vec<Sample>,
}

/// Per round pair (the two clients' rounds run back to back), `f(ours) / f(sysbench)`.
fn pair_ratios(c: &Cell, f: fn(&Sample) -> f64) -> Vec<f64> {
    c.ours.iter().zip(&c.sb).map(|(o, s)| f(o) / f(s)).collect()
}

/// `median [min–max]` of per-pair ratios.
fn ratio_range(r: &[f64]) -> String {
    let (lo, hi) = spread(r);
    format!("{:.2} [{lo:.2}–{hi:.2}]", median(r))
}

fn print_oltp(cells: &[Cell]) {
    println!();
    println!("OLTP: medians over the rounds ±half their min–max spread; ratios ours/sysbench per round pair, median [min–max];");
    println!("client CPU (user+sys, and user alone) in ms per 1,000 queries, whole client process; CPU ratio < 1 = ours cheaper");
    println!(
        "{:<18} {:>3} | {:>14} {:>14} | {:>17} | {:>11} {:>11} {:>17} | {:>10} {:>10} {:>17}",
        "test",
        "thr",
        "tps ours",
        "tps sysbench",
        "tps ratio",
        "cpu ours",
        "cpu sysb",
        "cpu ratio",
        "user ours",
        "user sysb",
        "user ratio",
    );
    println!("{}", "-".repeat(160));
    for c in cells {
        let col = |v: &[Sample], f: fn(&Sample) -> f64| v.iter().map(f).collect::<Vec<_>>();
        println!(
            "{:<18} {:>3} | {:>14} {:>14} | {:>17} | {:>11} {:>11} {:>17} | {:>10} {:>10} {:>17}",
            c.test.name(),
            c.threads,
            med_spread(&col(&c.ours, |s| s.tps), 0),
            med_spread(&col(&c.sb, |s| s.tps), 0),
            ratio_range(&pair_ratios(c, |s| s.tps)),
            med_spread(&col(&c.ours, |s| s.cpu_ms_per_kq), 1),
            med_spread(&col(&c.sb, |s| s.cpu_ms_per_kq), 1),
            ratio_range(&pair_ratios(c, |s| s.cpu_ms_per_kq)),
            med_spread(&col(&c.ours, |s| s.user_ms_per_kq), 1),
            med_spread(&col(&c.sb, |s| s.user_ms_per_kq), 1),
            ratio_range(&pair_ratios(c, |s| s.user_ms_per_kq)),
        );
    }
    // the driver's aims, read off the same medians (a median meeting an aim while the range
    // straddles it is shown as such: the range is printed beside it)
    let tps: Vec<String> = cells
        .iter()
        .map(|c| {
            let r = median(&pair_ratios(c, |s| s.tps));
            format!(
                "{} {}: {r:.2}{}",
                c.test.name().trim_start_matches("oltp_"),
                c.threads,
                if r >= 1.0 { "" } else { " (missed)" }
            )
        })
        .collect();
    println!();
    println!(
        "aim tps ratio ≥ 1.00 (median) at every point: {}",
        tps.join(", ")
    );
    let cpu: Vec<String> = cells
        .iter()
        .filter(|c| c.threads == 2)
        .map(|c| {
            let r = median(&pair_ratios(c, |s| s.cpu_ms_per_kq));
            format!(
                "{}: {r:.2}{}",
                c.test.name().trim_start_matches("oltp_"),
                if r <= 0.7 { "" } else { " (missed)" }
            )
        })
        .collect();
    if !cpu.is_empty() {
        println!(
            "aim client CPU per query ≤ 0.70× sysbench's at 2 threads: {}",
            cpu.join(", ")
        );
    }
    println!();
    println!("same work? per event, all rounds: queries counted by the client / by the server (Com_select+begin+commit+rollback), Com_stmt_execute, Rows_read/Rows_sent; server CPU ms per 1k queries; ours: its client threads' CPU alone (Metrics, RUSAGE_THREAD) ms per 1k queries");
    for c in cells {
        let per = |v: &[Sample]| {
            let ev: u64 = v.iter().map(|s| s.events).sum();
            let f = |x: u64| x as f64 / ev.max(1) as f64;
            let q: u64 = v.iter().map(|s| s.server_queries).sum();
            let server: f64 = v.iter().map(|s| s.server_cpu_s).sum();
            let thr = median(
                &v.iter()
                    .filter_map(|s| s.thread_cpu_ms_per_kq)
                    .collect::<Vec<_>>(),
            );
            let thr = if thr.is_nan() {
                String::new()
            } else {
                format!(" threads {thr:.1}")
            };
            format!(
                "queries {:.2}/{:.2} execs {:.2} rows {:.1}/{:.1} server {:.1}{thr}",
                f(v.iter().map(|s| s.queries).sum()),
                f(q),
                f(v.iter().map(|s| s.stmt_executes).sum()),
                f(v.iter().map(|s| s.rows_read).sum()),
                f(v.iter().map(|s| s.rows_sent).sum()),
                server * 1e6 / q.max(1) as f64,
            )
        };
        println!(
            "  {:<18} {:>2} thr  ours: {}  |  sysbench: {}",
            c.test.name(),
            c.threads,
            per(&c.ours),
            per(&c.sb)
        );
    }
}

// ---------------------------------------------------------------------------------------
// dataset loading

#[derive(Debug, Clone, Copy)]
struct LoadSample {
    wall_s: f64,
    cpu_s: f64,
    server_cpu_s: f64,
}

fn drop_database(admin: &mut mysql::Conn, db: &str) {
    admin
        .query_drop(format!("DROP DATABASE IF EXISTS `{db}`"))
        .expect("drop database");
}

fn check_loaded(admin: &mut mysql::Conn, db: &str, tables: u32, rows: u32) {
    for n in 1..=tables {
        let (count, max): (u64, u64) = admin
            .query_first(format!("SELECT COUNT(*), MAX(id) FROM `{db}`.sbtest{n}"))
            .expect("count")
            .expect("a row");
        assert_eq!((count, max), (rows as u64, rows as u64), "{db}.sbtest{n}");
        let idx: Option<String> = admin
            .query_first(format!(
                "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='{db}' AND TABLE_NAME='sbtest{n}' AND INDEX_NAME='k_{n}'"
            ))
            .expect("index");
        assert!(idx.is_some(), "{db}.sbtest{n} lacks k_{n}");
    }
}

fn load_round(
    cfg: &Config,
    target: &Target,
    admin: &mut mysql::Conn,
    server_pid: u32,
    client: Client,
    rep: u32,
) -> LoadSample {
    let db = format!("load_{}_{rep}", client.name());
    drop_database(admin, &db);
    let mut t = target.clone();
    t.database = db.clone();
    if client == Client::Sysbench {
        // sysbench expects the database to exist
        admin
            .query_drop(format!("CREATE DATABASE `{db}`"))
            .expect("create database");
    }
    let server0 = server_cpu_s(server_pid);
    let mut s = match client {
        Client::Ours => {
            let mut spec = SysbenchDataset::new(cfg.load_tables, cfg.load_size);
            spec.parallel = cfg.load_parallel;
            spec.seed = rep as u64;
            let cpu0 = CpuTime::process();
            let start = Instant::now();
            load_sysbench(&t, &spec).unwrap_or_else(|e| panic!("our loader: {e}"));
            LoadSample {
                wall_s: start.elapsed().as_secs_f64(),
                cpu_s: CpuTime::process().since(&cpu0).total_s(),
                server_cpu_s: 0.0,
            }
        }
        Client::Sysbench => {
            let mut args = vec!["oltp_read_only".to_string()];
            args.extend(sysbench_common(
                &t,
                cfg.load_tables,
                cfg.load_size,
                cfg.load_parallel,
            ));
            args.push("prepare".into());
            let run = run_child(&cfg.sysbench, &args).unwrap_or_else(|e| panic!("{e}"));
            LoadSample {
                wall_s: run.wall_s,
                cpu_s: run.cpu.total_s(),
                server_cpu_s: 0.0,
            }
        }
    };
    s.server_cpu_s = server_cpu_s(server_pid) - server0;
    check_loaded(admin, &db, cfg.load_tables, cfg.load_size);
    drop_database(admin, &db);
    s
}

fn print_load(cfg: &Config, ours: &[LoadSample], sb: &[LoadSample]) {
    let wall = |v: &[LoadSample]| v.iter().map(|s| s.wall_s).collect::<Vec<_>>();
    let cpu = |v: &[LoadSample]| v.iter().map(|s| s.cpu_s).collect::<Vec<_>>();
    let ratios: Vec<f64> = ours
        .iter()
        .zip(sb)
        .map(|(o, s)| s.wall_s / o.wall_s)
        .collect();
    let (lo, hi) = spread(&ratios);
    println!();
    println!(
        "dataset loading: {} tables × {} rows, {} at a time, fresh database each, {} interleaved repetitions",
        cfg.load_tables, cfg.load_size, cfg.load_parallel, ours.len()
    );
    println!(
        "{:<10} | {:>14} | {:>14} | {:>14} | {:>9}",
        "", "wall s", "client cpu s", "server cpu s", "rows/s"
    );
    let rows = (cfg.load_tables as u64 * cfg.load_size as u64) as f64;
    for (name, v) in [("ours", ours), ("sysbench", sb)] {
        let server: Vec<f64> = v.iter().map(|s| s.server_cpu_s).collect();
        println!(
            "{:<10} | {:>14} | {:>14} | {:>14} | {:>9.0}",
            name,
            med_spread(&wall(v), 2),
            med_spread(&cpu(v), 2),
            med_spread(&server, 2),
            rows / median(&wall(v)),
        );
    }
    println!(
        "speed-up (sysbench s / ours s, per pair): median {:.2}× [{:.2}–{:.2}]",
        median(&ratios),
        lo,
        hi
    );
}

// ---------------------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported
    let cfg = Config::from_env();
    let version = Command::new(&cfg.sysbench)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (install Debian's sysbench package)", cfg.sysbench));
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    println!(
        "vs_sysbench: {version}; tables {} × {} rows; threads {:?}; {} s warmup + {} s per round, {} rounds per client; load avg {} ({} CPUs)",
        cfg.tables,
        cfg.table_size,
        cfg.threads,
        cfg.warmup_s,
        cfg.time_s,
        cfg.rounds,
        loadavg(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let started = Instant::now();
    let mut options: Vec<(&str, &str)> =
        vec![("skip-name-resolve", ""), ("max_connections", "200")];
    options.extend(cfg.server.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let server = start_mariadb("vs-sysbench", &options, Connect::Tcp);
    let target = Target::tcp(&server.server.ip, server.server.port, "cairn");
    println!(
        "server: {} at {}:{} (MariaDB {}), options {}",
        server.server.container_name,
        target.host,
        target.port,
        server.server.greeting_version,
        options
            .iter()
            .map(|(k, v)| if v.is_empty() {
                k.to_string()
            } else {
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut admin = target.connect_no_db().expect("admin connection");

    // cairn's loads go to a server like it plus the load-only settings a dataset step's
    // server runs with (`DbSystem::load_options`): what a dataset step does, against
    // `sysbench prepare` on the plain server
    let load_options = system::by_name("mariadb")
        .expect("a known system")
        .load_options();
    let mut loader = (cfg.load_reps > 0).then(|| {
        let mut o = options.clone();
        o.extend(load_options.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let s = start_mariadb("vs-sysbench-load", &o, Connect::Tcp);
        println!(
            "cairn's loads: {} with the load settings {}",
            s.server.container_name,
            load_options
                .iter()
                .map(|(k, v)| if v.is_empty() {
                    k.to_string()
                } else {
                    format!("{k}={v}")
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let t = Target::tcp(&s.server.ip, s.server.port, "cairn");
        let a = t.connect_no_db().expect("admin connection");
        (s, t, a)
    });

    let mut load = (Vec::new(), Vec::new());
    for rep in 0..cfg.load_reps {
        let order = if rep % 2 == 0 {
            [Client::Ours, Client::Sysbench]
        } else {
            [Client::Sysbench, Client::Ours]
        };
        for client in order {
            let s = match (client, loader.as_mut()) {
                (Client::Ours, Some((ls, lt, la))) => {
                    load_round(&cfg, lt, la, ls.server.host_pid, client, rep)
                }
                _ => load_round(
                    &cfg,
                    &target,
                    &mut admin,
                    server.server.host_pid,
                    client,
                    rep,
                ),
            };
            println!(
                "  load rep {rep} {:<8}: {:.2} s, client cpu {:.2} s, server cpu {:.2} s (load avg {})",
                client.name(),
                s.wall_s,
                s.cpu_s,
                s.server_cpu_s,
                loadavg()
            );
            match client {
                Client::Ours => load.0.push(s),
                Client::Sysbench => load.1.push(s),
            }
        }
    }

    // its idle server out of the OLTP rounds' way
    drop(loader);
    let mut cells = Vec::new();
    if cfg.rounds > 0 {
        let t = Instant::now();
        let mut ds = SysbenchDataset::new(cfg.tables, cfg.table_size);
        ds.replace = true;
        load_sysbench(&target, &ds).expect("load the OLTP dataset");
        println!("OLTP dataset loaded in {:.1?}", t.elapsed());
        let mut bench = Bench {
            cfg: &cfg,
            target: &target,
            admin,
            server_pid: server.server.host_pid,
        };
        // untimed: warm both clients' code paths and the server's caches
        bench.round(Client::Ours, OltpTest::ReadOnly, 2, 999);
        for &test in &cfg.tests {
            for &threads in &cfg.threads {
                let mut cell = Cell {
                    test,
                    threads,
                    ours: Vec::new(),
                    sb: Vec::new(),
                };
                for round in 0..cfg.rounds {
                    let order = if round % 2 == 0 {
                        [Client::Ours, Client::Sysbench]
                    } else {
                        [Client::Sysbench, Client::Ours]
                    };
                    for client in order {
                        let s = bench.round(client, test, threads, round as u64 + 1);
                        println!(
                            "  {} {threads} thr round {round} {:<8}: tps {:>9.1}  cpu {:>6.1} ms/1kq (load avg {})",
                            test.name(),
                            client.name(),
                            s.tps,
                            s.cpu_ms_per_kq,
                            loadavg()
                        );
                        match client {
                            Client::Ours => cell.ours.push(s),
                            Client::Sysbench => cell.sb.push(s),
                        }
                    }
                }
                cells.push(cell);
            }
        }
    }

    println!();
    println!(
        "=== cairn native driver vs {version} — {} tables × {} rows, --rand-type=uniform, {} s warmup + {} s × {} rounds each, interleaved ===",
        cfg.tables, cfg.table_size, cfg.warmup_s, cfg.time_s, cfg.rounds
    );
    if !cells.is_empty() {
        print_oltp(&cells);
    }
    if !load.0.is_empty() {
        print_load(&cfg, &load.0, &load.1);
    }
    println!();
    println!(
        "finished in {:.0?}; load avg now {} ({} CPUs)",
        started.elapsed(),
        loadavg(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    drop(server);
}
