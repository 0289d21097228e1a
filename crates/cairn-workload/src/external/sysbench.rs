//! The image's `sysbench` 1.0 as the OLTP driver (`sysbench "…" tool="external"`): the argv of an [`OltpSpec`], the run through a [`ToolRunner`], and its checked report (parsed by [`super::sysbench_report`]) turned into the native [`Metrics`] and shared figures.
//!
//! What maps how:
//! - every [`OltpSpec`] field becomes its sysbench option, `--rand-type` always explicit
//!   (sysbench 1.0 defaults to `special`, cairn to `uniform`), `--rand-seed` the pass index
//!   plus one (sysbench reads 0 as "seed from the clock");
//! - sysbench 1.0 has no `--warmup-time`: a warmup runs as `--time=<warmup + duration>`
//!   with `--report-checkpoints=<warmup>`, whose checkpoint report is the warmup's figures;
//!   sysbench resets its counters there, so the final report is the measured window;
//! - `--histogram=on`: percentiles other than the report's 95th come from sysbench's own
//!   latency histogram, read the way sysbench reads it (the first bucket whose cumulative
//!   count reaches `round(n · p / 100)`); its buckets are ~1.8% wide, coarser than the
//!   native HDR histogram's 3 significant digits;
//! - the series are sysbench's per-interval rates × the interval, rounded (sysbench prints
//!   rates, not counts); the raw interval lines are kept in the detail;
//! - sysbench counts ignored errors (1213, 1205, 1020: the event is restarted) but not by
//!   kind, so `errors` and `retries` are that count and `deadlocks` is absent; queueing
//!   delay and unstarted arrivals of a rate-limited run are not reported either;
//! - client CPU is the client container's, over the whole run: `client_cpu_s` only without
//!   a warmup, `client_cpu_ms_per_1k_queries` over all queries (warmup included).
//!
//! Options sysbench 1.0 cannot honour are rejected when the plan is read: `max-retries`
//! (sysbench restarts an ignored error's event without limit), the `zipfian` distribution
//! (1.1 only), fractional seconds, and a warmup with an `events` limit.

use std::time::Duration;

use cairn_defs::figures as fig;
use serde_json::{json, Value};

use super::sysbench_report::{parse_report, Report, Summary};
use super::{output_tail, ExternalError};
use crate::cpu::CpuTime;
use crate::metrics::{Interval, LatencySummary, Metrics, PhaseMetrics, QueryCounts, Totals};
use crate::oltp::OltpSpec;
use crate::rand::Distribution;
use crate::workload::{oltp_outcome, Outcome, RunContext, ToolEndpoint, ToolOutput, ToolRunner};
use crate::{Error, Protocol, Target};

/// The program the adapter runs.
pub const TOOL: &str = "sysbench";
/// The CA certificate in a TLS tool's working directory (see [`ToolEndpoint::Tls`]).
const TOOL_CA_FILE: &str = "cacert.pem";

/// The percentile sysbench's report and interval lines carry (`--percentile`).
const REPORT_PERCENTILE: u32 = 95;

/// The errors sysbench ignores (restarting the event), as cairn's native driver does:
/// deadlock, lock wait timeout, record changed.
const IGNORED_ERRORS: &str = "1213,1020,1205";

/// An OLTP workload run by the image's sysbench 1.0.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalSysbench {
    pub spec: OltpSpec,
}

fn param(name: &str, message: String) -> Error {
    Error::Param {
        what: "workload",
        name: name.to_string(),
        message,
    }
}

/// Whole seconds of `d`, or an error naming the parameter.
fn whole_seconds(d: Duration, name: &str, option: &str) -> Result<u64, Error> {
    if d.subsec_nanos() != 0 {
        return Err(param(
            name,
            format!(
                "workload parameter `{name}` is {} s, but sysbench 1.0's `{option}` takes whole seconds (tool=\"external\")",
                d.as_secs_f64()
            ),
        ));
    }
    Ok(d.as_secs())
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl ExternalSysbench {
    /// The external run of `spec`; `given` are the workload parameters the plan set (to
    /// reject those sysbench 1.0 cannot honour, naming them).
    pub fn new(spec: OltpSpec, given: &[&str]) -> Result<Self, Error> {
        if given.contains(&"max-retries") {
            return Err(param(
                "max-retries",
                "workload parameter `max-retries` applies to tool=\"native\" only: sysbench restarts the event of an ignored error (1213, 1205, 1020) without a limit".into(),
            ));
        }
        if let Distribution::Zipfian { .. } = spec.rand {
            return Err(param(
                "distribution",
                "sysbench 1.0 has no `zipfian` distribution (its --rand-type is uniform, gaussian, special or pareto); use tool=\"native\" or another distribution".into(),
            ));
        }
        if let Some(t) = spec.time {
            whole_seconds(t, "duration", "--time")?;
            if t.is_zero() && spec.events.is_none() {
                return Err(param(
                    "duration",
                    "workload parameter `duration` must be at least 1 s for sysbench (0 means no limit there)".into(),
                ));
            }
        }
        whole_seconds(spec.warmup, "warmup", "--report-checkpoints")?;
        whole_seconds(spec.report_interval, "report-interval", "--report-interval")?;
        if !spec.warmup.is_zero() && (spec.events.is_some() || spec.time.is_none()) {
            return Err(param(
                "warmup",
                "a warmup with tool=\"external\" needs a `duration` and no `events` limit: sysbench 1.0 has no --warmup-time, the warmup is a report checkpoint, and --events would count its events too".into(),
            ));
        }
        if spec.threads == 0 || spec.report_interval.is_zero() {
            return Err(Error::Invalid(
                "threads and report-interval must be at least 1".into(),
            ));
        }
        Ok(ExternalSysbench { spec })
    }

    /// Seconds sysbench runs: the warmup and the measured window (0 = no time limit).
    fn total_time_s(&self) -> u64 {
        self.spec
            .time
            .map_or(0, |t| t.as_secs() + self.spec.warmup.as_secs())
    }

    /// sysbench's command line for a run against `server` as `target`'s user, in its database.
    pub fn argv(&self, server: &ToolEndpoint, target: &Target) -> Vec<String> {
        let s = &self.spec;
        let mut a: Vec<String> = vec![TOOL.into(), s.test.name().into()];
        match target.protocol {
            Protocol::Mysql => {
                a.push("--db-driver=mysql".into());
                match server {
                    ToolEndpoint::Tcp { host, port } => a.extend([
                        format!("--mysql-host={host}"),
                        format!("--mysql-port={port}"),
                    ]),
                    // with a socket, libmariadb ignores the port and needs the host to be localhost
                    ToolEndpoint::Socket { path } => a.push(format!("--mysql-socket={path}")),
                    ToolEndpoint::Tls { host, port } => a.extend([
                        format!("--mysql-host={host}"),
                        format!("--mysql-port={port}"),
                        "--mysql-ssl=on".into(),
                    ]),
                }
                a.push(format!("--mysql-user={}", target.user));
                if let Some(p) = &target.password {
                    a.push(format!("--mysql-password={p}"));
                }
                a.extend([
                    format!("--mysql-db={}", target.database),
                    format!("--mysql-ignore-errors={IGNORED_ERRORS}"),
                ]);
            }
            Protocol::Postgresql => {
                if matches!(server, ToolEndpoint::Tls { .. }) {
                    // sysbench 1.0 has no pgsql TLS option, but its driver's libpq reads
                    // these: TLS or no connection, the server's certificate verified against
                    // the run's CA (in the tool's working directory) and the address it is
                    // reached at
                    a.splice(
                        0..0,
                        [
                            "env".to_string(),
                            "PGSSLMODE=verify-full".to_string(),
                            format!("PGSSLROOTCERT={TOOL_CA_FILE}"),
                        ],
                    );
                }
                a.push("--db-driver=pgsql".into());
                match server {
                    ToolEndpoint::Tcp { host, port } | ToolEndpoint::Tls { host, port } => a
                        .extend([
                            format!("--pgsql-host={host}"),
                            format!("--pgsql-port={port}"),
                        ]),
                    // libpq: a host that is a path is the socket's directory, and the port
                    // names the socket file (`.s.PGSQL.<port>`)
                    ToolEndpoint::Socket { path } => {
                        let (dir, file) = path.rsplit_once('/').unwrap_or((".", path));
                        let port = file.strip_prefix(".s.PGSQL.").unwrap_or("5432");
                        a.extend([
                            format!("--pgsql-host={}", if dir.is_empty() { "/" } else { dir }),
                            format!("--pgsql-port={port}"),
                        ]);
                    }
                }
                a.push(format!("--pgsql-user={}", target.user));
                if let Some(p) = &target.password {
                    a.push(format!("--pgsql-password={p}"));
                }
                // the pgsql driver ignores deadlocks, serialization failures and duplicate
                // keys by itself (there is no --pgsql-ignore-errors)
                a.push(format!("--pgsql-db={}", target.database));
            }
        }
        a.extend([
            format!(
                "--db-ps-mode={}",
                if s.prepared { "auto" } else { "disable" }
            ),
            format!("--tables={}", s.tables),
            format!("--table_size={}", s.table_size),
            format!("--threads={}", s.threads),
            format!("--time={}", self.total_time_s()),
        ]);
        if let Some(n) = s.events {
            a.push(format!("--events={n}"));
        }
        a.push(format!("--report-interval={}", s.report_interval.as_secs()));
        if !s.warmup.is_zero() {
            a.push(format!("--report-checkpoints={}", s.warmup.as_secs()));
        }
        if s.rate > 0 {
            a.push(format!("--rate={}", s.rate));
        }
        match s.rand {
            Distribution::Uniform => a.push("--rand-type=uniform".into()),
            Distribution::Gaussian { iter } => {
                a.push("--rand-type=gaussian".into());
                a.push(format!("--rand-spec-iter={iter}"));
            }
            Distribution::Special(p) => a.extend([
                "--rand-type=special".into(),
                format!("--rand-spec-iter={}", p.iter),
                format!("--rand-spec-pct={}", p.pct),
                format!("--rand-spec-res={}", p.res),
            ]),
            Distribution::Pareto { h } => {
                a.push("--rand-type=pareto".into());
                a.push(format!("--rand-pareto-h={h}"));
            }
            // rejected by `new`
            Distribution::Zipfian { exp } => a.push(format!("--rand-zipfian-exp={exp}")),
        }
        // sysbench's seed is a C int and 0 means "from the clock"
        a.push(format!("--rand-seed={}", s.seed % (i32::MAX as u64) + 1));
        a.extend([
            format!("--range_size={}", s.range_size),
            format!("--range_selects={}", on_off(s.range_selects)),
            format!("--point_selects={}", s.point_selects),
            format!("--simple_ranges={}", s.simple_ranges),
            format!("--sum_ranges={}", s.sum_ranges),
            format!("--order_ranges={}", s.order_ranges),
            format!("--distinct_ranges={}", s.distinct_ranges),
            format!("--index_updates={}", s.index_updates),
            format!("--non_index_updates={}", s.non_index_updates),
            format!("--delete_inserts={}", s.delete_inserts),
            format!("--skip_trx={}", on_off(s.skip_trx)),
            format!("--percentile={REPORT_PERCENTILE}"),
            "--histogram=on".into(),
            "run".into(),
        ]);
        a
    }

    /// How long sysbench may run before it is taken to hang: its time plus warmup, with a
    /// minute (or half as long again) to start, connect and report; none for an events limit.
    pub fn limit(&self) -> Option<std::time::Duration> {
        let run = self.spec.time? + self.spec.warmup;
        Some(run + (run / 2).max(std::time::Duration::from_secs(60)))
    }

    /// Run sysbench through `cx.tools` against `cx.target`'s user and database.
    pub fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        let tools: &dyn ToolRunner = cx.tools.ok_or(ExternalError::NoRunner { tool: TOOL })?;
        let argv = self.argv(&tools.server(), cx.target);
        if (cx.stop)() {
            return Err(Error::Stopped);
        }
        let out = match tools.run(&argv, self.limit()) {
            Ok(o) => o,
            Err(_) if (cx.stop)() => return Err(Error::Stopped),
            Err(message) => {
                return Err(ExternalError::Run {
                    tool: TOOL,
                    message,
                }
                .into())
            }
        };
        if (cx.stop)() {
            return Err(Error::Stopped);
        }
        if cx.target.protocol == Protocol::Postgresql {
            // the sessions' last counts reach pg_stat_database as their backends exit
            crate::pgsql::await_sessions_end(cx.target)?;
        }
        Ok(self.read(&out, &masked(&argv))?)
    }

    /// The outcome of sysbench's output `out` (of `argv`), checked against the spec.
    pub fn read(&self, out: &ToolOutput, argv: &[String]) -> Result<Outcome, ExternalError> {
        let tail = || output_tail(&out.stdout, &out.stderr);
        let errors: Vec<&str> = out
            .stdout
            .lines()
            .chain(out.stderr.lines())
            .filter(|l| l.starts_with("FATAL:") || l.starts_with("ALERT:"))
            .collect();
        // the first line naming an error (`FATAL: MySQL error: 1146 "Table … doesn't exist"`)
        // says more than the first line (`FATAL: mysql_stmt_prepare() failed`)
        if let Some(line) = errors
            .iter()
            .find(|l| l.to_ascii_lowercase().contains("error"))
            .or(errors.first())
        {
            return Err(ExternalError::Reported {
                tool: TOOL,
                line: line.trim().to_string(),
                tail: tail(),
            });
        }
        if out.exit_code != 0 {
            return Err(ExternalError::Failed {
                tool: TOOL,
                code: out.exit_code,
                tail: tail(),
            });
        }
        let report = parse_report(&out.stdout).map_err(|what| ExternalError::Unparsable {
            tool: TOOL,
            what,
            tail: tail(),
        })?;
        self.check(&report)
            .map_err(|what| ExternalError::Mismatch {
                tool: TOOL,
                what,
                tail: tail(),
            })?;
        Ok(self.outcome(&report, out, argv))
    }

    /// Whether `r` is the report of this spec's run.
    fn check(&self, r: &Report) -> Result<(), String> {
        let s = &self.spec;
        if !r.version.starts_with("1.0.") {
            return Err(format!(
                "this adapter reads sysbench 1.0's report; the image has sysbench {}",
                r.version
            ));
        }
        let want = |what: &str, got: String, want: String| {
            if got == want {
                Ok(())
            } else {
                Err(format!("{what}: asked for {want}, the report says {got}"))
            }
        };
        let opt = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
        want(
            "threads",
            opt(r.threads.map(u64::from)),
            s.threads.to_string(),
        )?;
        want(
            "rate",
            opt(r.rate),
            opt((s.rate > 0).then_some(s.rate as u64)),
        )?;
        want(
            "report interval (s)",
            opt(r.report_interval_s),
            s.report_interval.as_secs().to_string(),
        )?;
        let checkpoints: Vec<u64> = if s.warmup.is_zero() {
            vec![]
        } else {
            vec![s.warmup.as_secs()]
        };
        want(
            "report checkpoints (s)",
            format!("{:?}", r.checkpoints_s),
            format!("{checkpoints:?}"),
        )?;
        if r.checkpoints.len() != checkpoints.len() {
            return Err(format!(
                "{} checkpoint report(s) for checkpoints at {checkpoints:?} s (the run ended before the warmup did?)",
                r.checkpoints.len()
            ));
        }
        for iv in &r.intervals {
            if iv.latency_percentile != REPORT_PERCENTILE || iv.threads > s.threads {
                return Err(format!(
                    "the interval line at {} s has {} threads and the {}th latency percentile (asked: at most {} threads, the {REPORT_PERCENTILE}th)",
                    iv.end_s, iv.threads, iv.latency_percentile, s.threads
                ));
            }
        }
        let m = &r.summary;
        for (what, l) in std::iter::once(("final", &m.latency))
            .chain(r.checkpoints.iter().map(|c| ("checkpoint", &c.latency)))
        {
            if l.percentile != Some(REPORT_PERCENTILE) {
                return Err(format!(
                    "the {what} report's latency percentile is {:?}, asked for the {REPORT_PERCENTILE}th",
                    l.percentile
                ));
            }
        }
        if m.transactions != m.events {
            return Err(format!(
                "{} transactions but {} events: not an OLTP test",
                m.transactions, m.events
            ));
        }
        if m.read + m.write + m.other != m.total || m.total != m.queries {
            return Err(format!(
                "queries read {} + write {} + other {} do not add up to total {} (queries {})",
                m.read, m.write, m.other, m.total, m.queries
            ));
        }
        if let Some(n) = s.events {
            let exact = s.time.is_none();
            if m.events > n || (exact && m.events != n) {
                return Err(format!("{} events with an --events limit of {n}", m.events));
            }
        }
        self.check_mix(r)
    }

    /// The queries by type fit the test and its parameters: exactly `events × per event`
    /// without errors or checkpoints; otherwise the types that must be there are, and those
    /// that must not are not.
    fn check_mix(&self, r: &Report) -> Result<(), String> {
        let s = &self.spec;
        let m = &r.summary;
        let per = s.queries_per_event();
        let got = [m.read, m.write, m.other];
        let per_event = [per.read, per.write, per.other];
        // queries of events in flight at a checkpoint count before it, the events after
        let slack = if r.checkpoints.is_empty() {
            0
        } else {
            s.threads as u64
        };
        let exact = m.ignored_errors == 0 && m.reconnects == 0;
        let fits = got.iter().zip(per_event).all(|(&g, p)| {
            if p == 0 {
                g == 0
            } else if exact {
                g.abs_diff(m.events * p) <= slack * p
            } else {
                m.events == 0 || g > 0
            }
        });
        if fits {
            return Ok(());
        }
        Err(format!(
            "sysbench sent read {} / write {} / other {} queries for {} events, but {} with these parameters sends {} / {} / {} per event: another test ran, or an option was not applied",
            m.read,
            m.write,
            m.other,
            m.events,
            s.test.name(),
            per.read,
            per.write,
            per.other
        ))
    }

    /// Metrics and figures of a checked report.
    fn outcome(&self, r: &Report, out: &ToolOutput, argv: &[String]) -> Outcome {
        let s = &self.spec;
        let interval_s = s.report_interval.as_secs_f64();
        let warmup_s = s.warmup.as_secs_f64();
        let warmup = r.checkpoints.first();
        let series = r
            .intervals
            .iter()
            .map(|iv| {
                let n = |per_s: f64| (per_s * interval_s).round().max(0.0) as u64;
                Interval {
                    start_s: (iv.end_s - interval_s).max(0.0),
                    warmup: iv.end_s <= warmup_s + 1e-9 && warmup_s > 0.0,
                    events: n(iv.tps),
                    queries: n(iv.qps),
                    errors: n(iv.errors_ps),
                    reconnects: n(iv.reconnects_ps),
                    backlog: iv.queue_length.unwrap_or(0),
                }
            })
            .collect();
        let hist = Histogram::new(&r.histogram_ms);
        let whole_cpu = out.client_cpu;
        let measured_s = r.summary.total_time_s - warmup.map_or(0.0, |w| w.total_time_s);
        let measured_cpu = match (whole_cpu, warmup) {
            (Some(c), None) => c,
            _ => CpuTime::default(),
        };
        let m = Metrics {
            test: s.test.name().into(),
            threads: s.threads,
            report_interval_s: interval_s,
            rate: s.rate,
            series,
            warmup: warmup
                .map(|w| phase(w, w.total_time_s, None, CpuTime::default()))
                .unwrap_or_default(),
            measured: phase(&r.summary, measured_s.max(0.0), hist.as_ref(), measured_cpu),
            tps: r.summary.tps,
            qps: r.summary.qps,
        };

        let mut o = oltp_outcome(&m);
        let f = &mut o.figures;
        let mut unavailable: Vec<&str> = vec![
            "errors by kind (`deadlocks`): sysbench counts ignored errors only in total",
            "failed statements by type (`Totals::failed`)",
        ];
        f.remove(&fig::DEADLOCKS);
        let errors = r.summary.ignored_errors as f64;
        f.set(&fig::ERRORS, errors);
        f.set(&fig::RETRIES, errors);
        if hist.is_none() {
            for k in [
                &fig::LATENCY_P50_MS,
                &fig::LATENCY_P99_MS,
                &fig::LATENCY_P999_MS,
            ] {
                f.remove(k);
            }
            unavailable.push("percentiles but the 95th: sysbench printed no histogram");
        }
        if s.rate > 0 {
            for k in [&fig::QUEUE_P99_MS, &fig::QUEUE_MAX_MS, &fig::UNSTARTED] {
                f.remove(k);
            }
            unavailable.push("queueing delay and unstarted arrivals of the rate (`queue_p99_ms`, `queue_max_ms`, `unstarted`)");
        }
        let all_queries = r.summary.queries + warmup.map_or(0, |w| w.queries);
        match whole_cpu {
            Some(cpu) => {
                if warmup.is_some() {
                    f.remove(&fig::CLIENT_CPU_S);
                    unavailable.push("client CPU of the measured window alone (`client_cpu_s`): the container's CPU covers the warmup too");
                }
                if all_queries > 0 {
                    f.set(
                        &fig::CLIENT_CPU_MS_PER_1K_QUERIES,
                        cpu.total_s() * 1e6 / all_queries as f64,
                    );
                }
            }
            None => {
                f.remove(&fig::CLIENT_CPU_S);
                f.remove(&fig::CLIENT_CPU_MS_PER_1K_QUERIES);
                unavailable.push("client CPU: the tool runner did not measure it");
            }
        }
        if warmup.is_some() {
            unavailable.push(
                "warmup percentiles but the 95th: sysbench prints its histogram only at the end",
            );
        }
        let rate = if s.rate > 0 {
            format!(" at rate {}/s", s.rate)
        } else {
            String::new()
        };
        o.headline = format!(
            "{:.1} tps, {:.1} qps, p95 {:.2} ms, {} errors{rate} (sysbench {})",
            m.tps, m.qps, m.measured.latency.p95_ms, r.summary.ignored_errors, r.version
        );
        if let Value::Object(d) = &mut o.detail {
            d.insert(
                "tool".into(),
                json!({
                    "name": TOOL,
                    "version": r.version,
                    "argv": argv,
                    "exit_code": out.exit_code,
                    "client_cpu": whole_cpu,
                    "client_cpu_scope": "the client container, the whole run (warmup included)",
                    "unavailable": unavailable,
                    "series_counts": "sysbench's per-interval rates × the interval, rounded",
                    "histogram": "sysbench's buckets (1024, logarithmic from 0.001 ms to 100 s, ~1.8% wide), values in µs",
                    "report": r,
                    "stdout": out.stdout,
                    "stderr": out.stderr,
                }),
            );
        }
        o
    }
}

/// `argv` with the password hidden (for the record).
fn masked(argv: &[String]) -> Vec<String> {
    argv.iter()
        .map(|a| {
            if a.starts_with("--mysql-password=") {
                "--mysql-password=…".to_string()
            } else if a.starts_with("--pgsql-password=") {
                "--pgsql-password=…".to_string()
            } else {
                a.clone()
            }
        })
        .collect()
}

/// A phase's metrics from one of sysbench's summaries.
fn phase(s: &Summary, seconds: f64, hist: Option<&Histogram>, cpu: CpuTime) -> PhaseMetrics {
    let l = &s.latency;
    let p95 = l.percentile_ms.unwrap_or(0.0);
    let pct = |p: f64| hist.map_or(0.0, |h| h.percentile_ms(p));
    PhaseMetrics {
        seconds,
        totals: Totals {
            events: s.events,
            queries: QueryCounts {
                read: s.read,
                write: s.write,
                other: s.other,
            },
            retries: s.ignored_errors,
            reconnects: s.reconnects,
            ..Totals::default()
        },
        latency: LatencySummary {
            count: s.events,
            min_ms: l.min_ms,
            mean_ms: l.avg_ms,
            p50_ms: pct(50.0),
            p95_ms: p95,
            p99_ms: pct(99.0),
            p999_ms: pct(99.9),
            max_ms: l.max_ms,
        },
        histogram_us: hist.map_or_else(Vec::new, |h| {
            h.buckets
                .iter()
                .map(|&(ms, n)| [(ms * 1000.0).round() as u64, n])
                .collect()
        }),
        client_cpu: cpu,
        queue: LatencySummary::default(),
    }
}

/// sysbench's printed latency histogram.
struct Histogram {
    /// (bucket value in ms, count), ascending.
    buckets: Vec<(f64, u64)>,
    total: u64,
}

impl Histogram {
    fn new(buckets: &[(f64, u64)]) -> Option<Self> {
        let total = buckets.iter().map(|b| b.1).sum();
        (total > 0).then(|| Histogram {
            buckets: buckets.to_vec(),
            total,
        })
    }

    /// sysbench's rule: the first bucket whose cumulative count reaches
    /// `floor(n · p / 100 + 0.5)`.
    fn percentile_ms(&self, p: f64) -> f64 {
        let target = (self.total as f64 * p / 100.0 + 0.5).floor() as u64;
        let mut seen = 0;
        for &(ms, n) in &self.buckets {
            seen += n;
            if seen >= target {
                return ms;
            }
        }
        self.buckets.last().map_or(0.0, |b| b.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::OltpTest;
    use crate::rand::SpecialParams;

    // Real sysbench 1.0.20 output (the image's `sysbench`, captured by `tests/external_e2e.rs`
    // and the runs described beside each spec below).
    /// oltp_read_only, 2 × 1000 rows, 2 threads, `--time=4 --report-checkpoints=1`, seed 2.
    const READ_ONLY_WARMUP: &str = include_str!("testdata/read_only_warmup.txt");
    /// oltp_write_only on 20 rows with 8 threads for 3 s: 188 ignored deadlocks.
    const WRITE_ONLY_ERRORS: &str = include_str!("testdata/write_only_errors.txt");
    /// oltp_read_write, 2 threads, `--rate=30 --point_selects=3`, 3 s.
    const READ_WRITE_RATE: &str = include_str!("testdata/read_write_rate.txt");
    /// oltp_point_select, 2 threads, `--events=300 --time=0`.
    const POINT_SELECT_EVENTS: &str = include_str!("testdata/point_select_events.txt");
    /// oltp_read_only, 2 threads, `--time=4 --report-checkpoints=2 --percentile=99`.
    const READ_ONLY_P99: &str = include_str!("testdata/read_only_p99.txt");
    /// oltp_read_only with `--tables=3` where only 2 tables exist.
    const MISSING_TABLE: &str = include_str!("testdata/missing_table.txt");

    fn spec(test: OltpTest, tables: u32, rows: u32, threads: u32, secs: u64) -> OltpSpec {
        OltpSpec::new(test, tables, rows, threads, Duration::from_secs(secs))
    }

    fn read_only_warmup() -> ExternalSysbench {
        let mut s = spec(OltpTest::ReadOnly, 2, 1000, 2, 3);
        s.warmup = Duration::from_secs(1);
        s.seed = 1;
        ExternalSysbench::new(s, &[]).unwrap()
    }

    fn output(stdout: &str, cpu: Option<f64>) -> ToolOutput {
        ToolOutput {
            exit_code: 0,
            stdout: stdout.into(),
            stderr: String::new(),
            client_cpu: cpu.map(|s| CpuTime {
                user_s: s / 2.0,
                system_s: s / 2.0,
            }),
        }
    }

    #[test]
    fn the_driver_property_tool_chooses_it() {
        use crate::workload::{Dataset, DatasetDef, Props, Workload, WorkloadDef};
        use serde_json::json;
        let obj = |v: Value| -> Props { v.as_object().unwrap().clone() };
        let ds = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: obj(json!({"tables": 2, "rows": 100})),
        })
        .unwrap();
        let def = |tool: Value, params: Value| WorkloadDef {
            driver: "sysbench".into(),
            test: "oltp_read_only".into(),
            driver_props: obj(json!({"tool": tool, "prepared": false})),
            params: obj(params),
        };
        let w = Workload::from_def(&def(json!("external"), json!({"threads": 2})), Some(&ds), 5)
            .unwrap();
        let x = w.spec::<ExternalSysbench>().expect("an external sysbench");
        assert_eq!((x.spec.threads, x.spec.tables, x.spec.seed), (2, 2, 5));
        assert!(!x.spec.prepared);
        let w = Workload::from_def(&def(json!("native"), json!({})), Some(&ds), 0).unwrap();
        assert!(w.spec::<crate::OltpSpec>().is_some(), "{w:?}");
        let e = Workload::from_def(&def(json!("sysbench"), json!({})), Some(&ds), 0).unwrap_err();
        assert!(
            matches!(&e, Error::Param { what: "driver", name, .. } if name == "tool"),
            "{e:?}"
        );
        let e = Workload::from_def(
            &def(json!("external"), json!({"max-retries": 3})),
            Some(&ds),
            0,
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::Param { name, .. } if name == "max-retries"),
            "{e:?}"
        );
        // strictness is kept: unknown parameters are still named
        let e = Workload::from_def(&def(json!("external"), json!({"thread": 3})), Some(&ds), 0)
            .unwrap_err();
        assert!(e.to_string().contains("`thread`"), "{e}");
    }

    #[test]
    fn argv_carries_every_option_of_the_spec() {
        let mut s = spec(OltpTest::ReadWrite, 4, 5000, 8, 30);
        s.warmup = Duration::from_secs(5);
        s.rate = 200;
        s.prepared = false;
        s.skip_trx = true;
        s.range_selects = false;
        s.rand = Distribution::Special(SpecialParams::default());
        s.seed = 3;
        let x = ExternalSysbench::new(s, &[]).unwrap();
        let mut target = Target::tcp("ignored", 1, "cairn");
        target.database = "bench".into();
        target.password = Some("secret".into());
        let tcp = |host: &str, port| ToolEndpoint::Tcp {
            host: host.into(),
            port,
        };
        let a = x.argv(&tcp("10.1.2.3", 3306), &target);
        assert_eq!(a[..2], ["sysbench", "oltp_read_write"]);
        assert_eq!(a.last().unwrap(), "run");
        for o in [
            "--mysql-host=10.1.2.3",
            "--mysql-port=3306",
            "--mysql-user=cairn",
            "--mysql-password=secret",
            "--mysql-db=bench",
            "--db-ps-mode=disable",
            "--tables=4",
            "--table_size=5000",
            "--threads=8",
            "--time=35",
            "--report-checkpoints=5",
            "--report-interval=1",
            "--rate=200",
            "--rand-type=special",
            "--rand-spec-pct=1",
            "--rand-spec-res=75",
            "--rand-seed=4",
            "--range_selects=off",
            "--skip_trx=on",
            "--delete_inserts=1",
            "--percentile=95",
            "--histogram=on",
        ] {
            assert!(a.iter().any(|x| x == o), "{o} missing from {a:?}");
        }
        assert!(!a.iter().any(|x| x.starts_with("--events")));
        let m = masked(&a);
        assert!(m.contains(&"--mysql-password=…".to_string()));
        assert!(!m.iter().any(|x| x.contains("secret")));

        // an events limit alone: no time limit
        let mut s = spec(OltpTest::PointSelect, 1, 10, 1, 1);
        s.time = None;
        s.events = Some(1000);
        s.rand = Distribution::Pareto { h: 0.1 };
        let a = ExternalSysbench::new(s, &[])
            .unwrap()
            .argv(&tcp("h", 1), &target);
        for o in [
            "--time=0",
            "--events=1000",
            "--rand-type=pareto",
            "--rand-pareto-h=0.1",
            "--rand-seed=1",
        ] {
            assert!(a.iter().any(|x| x == o), "{o} missing from {a:?}");
        }
    }

    #[test]
    fn the_server_is_reached_the_way_the_plan_says() {
        let x = ExternalSysbench::new(spec(OltpTest::ReadOnly, 1, 10, 1, 10), &[]).unwrap();
        let target = Target::tcp("ignored", 1, "cairn");
        let socket = x.argv(
            &ToolEndpoint::Socket {
                path: "/run/cairn/mysqld.sock".into(),
            },
            &target,
        );
        assert!(socket.contains(&"--mysql-socket=/run/cairn/mysqld.sock".to_string()));
        assert!(!socket.iter().any(|a| a.starts_with("--mysql-host")
            || a.starts_with("--mysql-port")
            || a.starts_with("--mysql-ssl")));
        let tls = x.argv(
            &ToolEndpoint::Tls {
                host: "10.0.0.2".into(),
                port: 3306,
            },
            &target,
        );
        for o in [
            "--mysql-host=10.0.0.2",
            "--mysql-port=3306",
            "--mysql-ssl=on",
        ] {
            assert!(tls.iter().any(|x| x == o), "{o} missing from {tls:?}");
        }
        let mut pg = target.clone();
        pg.protocol = Protocol::Postgresql;
        let tls = x.argv(
            &ToolEndpoint::Tls {
                host: "10.0.0.2".into(),
                port: 5432,
            },
            &pg,
        );
        assert_eq!(
            tls[..5],
            [
                "env",
                "PGSSLMODE=verify-full",
                "PGSSLROOTCERT=cacert.pem",
                "sysbench",
                "oltp_read_only"
            ]
        );
        assert!(tls.iter().any(|a| a == "--pgsql-host=10.0.0.2"), "{tls:?}");
        let tcp = x.argv(
            &ToolEndpoint::Tcp {
                host: "10.0.0.2".into(),
                port: 5432,
            },
            &pg,
        );
        assert_eq!(tcp[0], "sysbench");
    }

    #[test]
    fn options_sysbench_cannot_honour_are_named() {
        let base = || spec(OltpTest::ReadOnly, 1, 10, 1, 10);
        let name = |e: Error| match e {
            Error::Param { name, message, .. } => (name, message),
            other => panic!("{other}"),
        };
        let (n, m) = name(ExternalSysbench::new(base(), &["threads", "max-retries"]).unwrap_err());
        assert_eq!(n, "max-retries");
        assert!(m.contains("without a limit"), "{m}");
        let mut s = base();
        s.rand = Distribution::zipfian();
        assert_eq!(
            name(ExternalSysbench::new(s, &[]).unwrap_err()).0,
            "distribution"
        );
        let mut s = base();
        s.time = Some(Duration::from_millis(2500));
        let (n, m) = name(ExternalSysbench::new(s, &[]).unwrap_err());
        assert_eq!(n, "duration");
        assert!(m.contains("2.5 s") && m.contains("whole seconds"), "{m}");
        let mut s = base();
        s.warmup = Duration::from_millis(500);
        assert_eq!(name(ExternalSysbench::new(s, &[]).unwrap_err()).0, "warmup");
        let mut s = base();
        s.report_interval = Duration::from_millis(100);
        assert_eq!(
            name(ExternalSysbench::new(s, &[]).unwrap_err()).0,
            "report-interval"
        );
        let mut s = base();
        s.warmup = Duration::from_secs(2);
        s.events = Some(100);
        let (n, m) = name(ExternalSysbench::new(s, &[]).unwrap_err());
        assert_eq!(n, "warmup");
        assert!(m.contains("--warmup-time"), "{m}");
        let mut s = base();
        s.time = Some(Duration::ZERO);
        assert_eq!(
            name(ExternalSysbench::new(s, &[]).unwrap_err()).0,
            "duration"
        );
    }

    #[test]
    fn read_only_with_a_warmup_checkpoint() {
        // the parse itself is pinned in `sysbench_report`'s tests; here: what it becomes
        let r = parse_report(READ_ONLY_WARMUP).unwrap();
        let w = &r.checkpoints[0];
        let x = read_only_warmup();
        let o = x
            .read(&output(READ_ONLY_WARMUP, Some(2.0)), &["sysbench".into()])
            .unwrap();
        let s = &r.summary;
        assert_eq!(o.figures[&fig::EVENTS], s.events as f64);
        assert_eq!(o.figures[&fig::TPS], s.tps);
        assert_eq!(o.figures[&fig::QPS], s.qps);
        assert_eq!(o.figures[&fig::READS], s.read as f64);
        assert_eq!(
            o.figures[&fig::LATENCY_P95_MS],
            s.latency.percentile_ms.unwrap()
        );
        assert_eq!(o.figures[&fig::LATENCY_MAX_MS], s.latency.max_ms);
        assert!((o.figures[&fig::SECONDS] - (s.total_time_s - 1.0002)).abs() < 1e-9);
        assert!(o.figures[&fig::LATENCY_P50_MS] <= o.figures[&fig::LATENCY_P95_MS]);
        assert!(o.figures[&fig::LATENCY_P99_MS] >= o.figures[&fig::LATENCY_P95_MS]);
        // the container's CPU covers the warmup: per query over both phases, no `client_cpu_s`
        let all = (s.queries + w.queries) as f64;
        assert!((o.figures[&fig::CLIENT_CPU_MS_PER_1K_QUERIES] - 2.0 * 1e6 / all).abs() < 1e-9);
        assert!(!o.figures.contains(&fig::CLIENT_CPU_S));
        assert!(o.headline.contains("sysbench 1.0.20"), "{}", o.headline);

        let m: Metrics = serde_json::from_value(o.detail.clone()).expect("still Metrics");
        assert_eq!(m.warmup.totals.events, 3086);
        assert_eq!(m.series.len(), 4);
        assert!(m.series[0].warmup && !m.series[1].warmup);
        assert_eq!(m.series[1].start_s, 1.0);
        assert_eq!(m.series[1].events, 3679);
        let hist: u64 = m.measured.histogram_us.iter().map(|b| b[1]).sum();
        assert_eq!(hist, r.histogram_ms.iter().map(|b| b.1).sum::<u64>());
        let tool = &o.detail["tool"];
        assert_eq!(tool["version"], "1.0.20");
        assert_eq!(tool["stdout"], READ_ONLY_WARMUP);
        assert!(tool["unavailable"].to_string().contains("deadlocks"));
    }

    #[test]
    fn figure_names_are_the_native_ones() {
        let mut some = Metrics::default();
        some.measured.totals.queries.read = 1;
        let native = oltp_outcome(&some).figures;
        let native: Vec<&str> = native.names().collect();
        let x = ExternalSysbench::new(spec(OltpTest::WriteOnly, 1, 20, 8, 3), &[]).unwrap();
        let o = x.read(&output(WRITE_ONLY_ERRORS, Some(0.5)), &[]).unwrap();
        let external: Vec<&str> = o.figures.names().collect();
        let absent: Vec<&str> = native
            .iter()
            .copied()
            .filter(|k| !o.figures.contains_named(k))
            .collect();
        assert_eq!(absent, ["deadlocks"], "external figures {external:?}");
        assert!(external.iter().all(|k| native.contains(k)), "{external:?}");
        assert_eq!(o.figures.outside_vocabulary(), Vec::<&str>::new());
    }

    #[test]
    fn ignored_errors_are_errors_and_retries() {
        let x = ExternalSysbench::new(spec(OltpTest::WriteOnly, 1, 20, 8, 3), &[]).unwrap();
        let o = x.read(&output(WRITE_ONLY_ERRORS, None), &[]).unwrap();
        assert_eq!(o.figures[&fig::ERRORS], 188.0);
        assert_eq!(o.figures[&fig::RETRIES], 188.0);
        assert_eq!(o.figures[&fig::WRITES], 15547.0);
        // rolled-back attempts make the mix inexact; sysbench still says what it sent
        assert_eq!(o.figures[&fig::OTHER_QUERIES], 7832.0);
        assert!(o.headline.contains("188 errors"), "{}", o.headline);
        assert!(!o.figures.contains(&fig::CLIENT_CPU_S), "not measured");
        let m: Metrics = serde_json::from_value(o.detail).unwrap();
        assert_eq!(
            m.series.iter().map(|i| i.errors).collect::<Vec<_>>(),
            [39, 71, 78]
        );
    }

    #[test]
    fn rate_limited_runs_keep_the_queue_lengths() {
        let mut s = spec(OltpTest::ReadWrite, 1, 20, 2, 3);
        s.rate = 30;
        s.point_selects = 3;
        let x = ExternalSysbench::new(s, &[]).unwrap();
        let r = parse_report(READ_WRITE_RATE).unwrap();
        assert_eq!(r.rate, Some(30));
        assert_eq!(
            r.intervals
                .iter()
                .map(|i| (i.queue_length, i.concurrency))
                .collect::<Vec<_>>(),
            [(Some(0), Some(0)), (Some(0), Some(0)), (Some(0), Some(1))]
        );
        let o = x.read(&output(READ_WRITE_RATE, Some(0.1)), &[]).unwrap();
        assert_eq!(o.figures[&fig::RATE], 30.0);
        assert_eq!(o.figures[&fig::BACKLOG_MAX], 0.0);
        assert_eq!(o.figures[&fig::EVENTS], 91.0);
        assert!(o.figures[&fig::CLIENT_CPU_S] > 0.0);
        for k in [&fig::QUEUE_P99_MS, &fig::QUEUE_MAX_MS, &fig::UNSTARTED] {
            assert!(!o.figures.contains(k), "{k}");
        }
        // the same report does not fit another rate, nor a run without one
        let mut other = x.clone();
        other.spec.rate = 0;
        let e = other.read(&output(READ_WRITE_RATE, None), &[]).unwrap_err();
        assert!(e.to_string().contains("rate: asked for none"), "{e}");
    }

    #[test]
    fn an_events_limit_without_intervals() {
        let mut s = spec(OltpTest::PointSelect, 1, 20, 2, 1);
        s.time = None;
        s.events = Some(300);
        let x = ExternalSysbench::new(s, &[]).unwrap();
        let o = x.read(&output(POINT_SELECT_EVENTS, None), &[]).unwrap();
        assert_eq!(o.figures[&fig::EVENTS], 300.0);
        assert_eq!(o.figures[&fig::READS], 300.0);
        let mut more = x.clone();
        more.spec.events = Some(301);
        let e = more
            .read(&output(POINT_SELECT_EVENTS, None), &[])
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("300 events with an --events limit of 301"),
            "{e}"
        );
    }

    #[test]
    fn percentiles_follow_sysbenchs_rule_on_its_histogram() {
        // this run printed its 99th percentile: the histogram must give the same bucket
        let r = parse_report(READ_ONLY_P99).unwrap();
        let l = &r.summary.latency;
        assert_eq!((l.percentile, l.percentile_ms), (Some(99), Some(0.86)));
        let h = Histogram::new(&r.histogram_ms).unwrap();
        assert_eq!(h.percentile_ms(99.0), 0.856);
        assert_eq!(h.percentile_ms(50.0), 0.556);
        assert_eq!(r.intervals[0].latency_percentile, 99);
        // …and it is not the report of a run asked for the 95th
        let mut s = spec(OltpTest::ReadOnly, 2, 1000, 2, 2);
        s.warmup = Duration::from_secs(2);
        let e = ExternalSysbench::new(s, &[])
            .unwrap()
            .read(&output(READ_ONLY_P99, None), &[])
            .unwrap_err();
        assert!(e.to_string().contains("99th latency percentile"), "{e}");
    }

    #[test]
    fn reports_of_another_run_are_mismatches() {
        let tail_ok = |e: &ExternalError| e.to_string().contains("Threads fairness");
        let mut x = read_only_warmup();
        x.spec.threads = 4;
        let e = x.read(&output(READ_ONLY_WARMUP, None), &[]).unwrap_err();
        assert!(matches!(e, ExternalError::Mismatch { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("threads: asked for 4, the report says 2"),
            "{e}"
        );
        assert!(tail_ok(&e), "{e}");

        let mut x = read_only_warmup();
        x.spec.test = OltpTest::ReadWrite;
        let e = x.read(&output(READ_ONLY_WARMUP, None), &[]).unwrap_err();
        assert!(e.to_string().contains("another test ran"), "{e}");

        let mut x = read_only_warmup();
        x.spec.point_selects = 9;
        let e = x.read(&output(READ_ONLY_WARMUP, None), &[]).unwrap_err();
        assert!(e.to_string().contains("13 / 0 / 2 per event"), "{e}");

        let mut x = read_only_warmup();
        x.spec.warmup = Duration::ZERO;
        let e = x.read(&output(READ_ONLY_WARMUP, None), &[]).unwrap_err();
        assert!(e.to_string().contains("report checkpoints"), "{e}");
    }

    #[test]
    fn failures_carry_sysbenchs_text() {
        let x = read_only_warmup();
        let e = x.read(&output(MISSING_TABLE, None), &[]).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ExternalError::Reported { .. }), "{msg}");
        assert!(
            msg.starts_with("`sysbench` reported an error: FATAL: MySQL error: 1146"),
            "{msg}"
        );
        assert!(msg.contains("Thread initialization failed!"), "{msg}");

        let bad_option = ToolOutput {
            exit_code: 1,
            stdout: "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n".into(),
            stderr: "invalid option: --warmup-time=1\n".into(),
            client_cpu: None,
        };
        let e = x.read(&bad_option, &[]).unwrap_err().to_string();
        assert!(e.contains("exited with code 1"), "{e}");
        assert!(e.ends_with("invalid option: --warmup-time=1"), "{e}");

        // cut off before its final report (e.g. killed)
        let cut = &READ_ONLY_WARMUP[..READ_ONLY_WARMUP.find("Latency histogram").unwrap()];
        let e = x.read(&output(cut, None), &[]).unwrap_err();
        assert!(matches!(e, ExternalError::Unparsable { .. }), "{e}");
        assert!(e.to_string().contains("no final report"), "{e}");
        assert!(e.to_string().contains("[ 4s ] thds: 2"), "{e}");

        for garbage in [
            "",
            "hello\nworld\n",
            "sysbench 1.0.20\n[ 1s ] something else\n",
        ] {
            let e = x.read(&output(garbage, None), &[]).unwrap_err();
            assert!(
                matches!(e, ExternalError::Unparsable { .. }),
                "{garbage:?}: {e}"
            );
        }
        let e = x
            .read(
                &output(&READ_ONLY_WARMUP.replace("1.0.20", "1.1.0"), None),
                &[],
            )
            .unwrap_err();
        assert!(e.to_string().contains("sysbench 1.1.0"), "{e}");
        let broken = READ_ONLY_WARMUP.replacen("total number of events", "events total", 2);
        let e = x.read(&output(&broken, None), &[]).unwrap_err();
        assert!(
            e.to_string().contains("no `total number of events:`"),
            "{e}"
        );
    }
}
