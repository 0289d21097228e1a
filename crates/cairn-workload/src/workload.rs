//! One entry point for every driver: a plan's resolved dataset and workload definitions → typed specs → load or run → an [`Outcome`] with headline figures.
//!
//! The definitions are `cairn-defs`' typed [`DatasetDef`] and [`WorkloadDef`], as
//! `cairn-graph` puts them into step keys (durations already in seconds). Each driver turns
//! its part into a typed spec and rejects what it does not know with a message naming the
//! parameter, so a bad plan fails before any server starts.

use cairn_defs::figures::{self as fig, Figures};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::any::Any;

use crate::cpu::CpuTime;
use crate::drivers::{self, Loadable, Runnable};
use crate::metrics::Metrics;
use crate::oltp::StopCheck;
use crate::rand::{Distribution, SpecialParams, PARETO_H, ZIPFIAN_EXP};
use crate::{Error, Protocol, Target};

// The definitions are the typed ones the resolver writes into keys (`cairn-defs`),
// re-exported so drivers and their callers name them from here.
pub use cairn_defs::{DatasetDef, Props, WorkloadDef};

/// Most client threads (sysbench `threads`, super-smack `clients`) a workload may ask for:
/// one OS thread and one connection each. Above it a plan is refused at `cairn check`;
/// below it, a machine that cannot start that many threads fails the trial with the cause.
pub const MAX_CLIENTS: u32 = 10_000;

/// Most connections a dataset loads with at once (`parallel`).
pub const MAX_LOAD_PARALLEL: u32 = 256;

/// What a workload run measured, in a driver-independent shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Flat figures for tables, analyses and claims, under the shared names of
    /// [`cairn_defs::figures`] (`tps`, `qps`, `latency_p95_ms`, `errors`, …).
    pub figures: Figures,
    /// One line for a person: the figures that matter for this driver.
    pub headline: String,
    /// The driver's full measurements (series, histograms, per-test times, …).
    pub detail: Value,
}

/// Runs an external tool (e.g. the image's `sysbench`) where it can reach the server, for
/// adapters; provided by the executor (a client container on the server's network).
pub trait ToolRunner: Sync {
    /// Run `argv`; how the tool must reach the server is [`ToolRunner::server`]. A tool
    /// still running after `limit` is killed (a hung tool must not hang the trial).
    fn run(
        &self,
        argv: &[String],
        limit: Option<std::time::Duration>,
    ) -> Result<ToolOutput, String>;
    /// How the tool reaches the server, as seen from where it runs.
    fn server(&self) -> ToolEndpoint;
}

/// How an external tool reaches the server: the way the plan's server says clients connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolEndpoint {
    Tcp {
        host: String,
        port: u16,
    },
    /// The server's unix socket, at `path` where the tool runs.
    Socket {
        path: String,
    },
    /// TCP with TLS. The tool runs in a directory holding a CA certificate, a client
    /// certificate and its key under the names sysbench 1.0's `--mysql-ssl=on` loads
    /// (`cacert.pem`, `client-cert.pem`, `client-key.pem`).
    Tls {
        host: String,
        port: u16,
    },
}

/// What an external tool printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
    /// CPU time the tool used (e.g. its client container's), if the runner measured it.
    pub client_cpu: Option<CpuTime>,
}

/// Where and how a workload runs.
pub struct RunContext<'a> {
    pub target: &'a Target,
    /// `true` = stop now (Ctrl-C): the run fails with [`Error::Stopped`].
    pub stop: StopCheck<'a>,
    /// For adapters of external tools; `None` where none can run.
    pub tools: Option<&'a dyn ToolRunner>,
}

/// A dataset ready to load: what its generator ([`Driver::dataset`](drivers::Driver::dataset)) made of the plan's
/// definition.
#[derive(Debug)]
pub struct Dataset {
    generator: &'static str,
    spec: Box<dyn Loadable>,
}

/// What loading a dataset did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub seconds: f64,
    /// Rows written, all tables.
    pub rows: u64,
    /// The generator's own report.
    pub detail: Value,
}

impl Dataset {
    /// The dataset its generator makes of `def`; unknown generators and parameters are
    /// errors naming them.
    pub fn from_def(def: &DatasetDef) -> Result<Dataset, Error> {
        let Some(driver) = drivers::driver(&def.generator) else {
            return Err(Error::Invalid(format!(
                "datasets of generator `{}` are not supported yet",
                def.generator
            )));
        };
        let mut p = Params::new("dataset", &def.props);
        let spec = driver.dataset(&mut p)?;
        p.finish()?;
        Ok(Dataset {
            generator: driver.name(),
            spec,
        })
    }

    /// The name of the driver that generates it.
    pub fn generator(&self) -> &'static str {
        self.generator
    }

    /// The generator's own spec, if it is a `T` (a driver reads its own datasets' sizes).
    pub fn spec<T: Loadable>(&self) -> Option<&T> {
        (self.spec.as_ref() as &dyn Any).downcast_ref()
    }

    /// Whether a server speaking `protocol` can hold it; the error names the generator (a
    /// `Param` of the dataset, so `cairn check` points at it).
    pub fn supports(&self, protocol: Protocol) -> Result<(), Error> {
        self.spec.supports(protocol)
    }

    /// The database the dataset lives in (and workloads connect to).
    pub fn database(&self) -> &str {
        self.spec.database()
    }

    /// Create and fill the dataset's tables in `target`'s database.
    pub fn load(&self, target: &Target) -> Result<LoadReport, Error> {
        self.spec.load(target)
    }
}

/// A workload ready to run: what its driver ([`Driver::workload`](drivers::Driver::workload)) made of the plan's
/// definition at one matrix point.
#[derive(Debug)]
pub struct Workload {
    spec: Box<dyn Runnable>,
}

impl Workload {
    /// A workload of a spec made directly (tests, benchmarks).
    pub fn new(spec: impl Runnable) -> Workload {
        Workload {
            spec: Box::new(spec),
        }
    }

    /// The typed workload of `def` against `dataset` (which gives e.g. sysbench's
    /// `--tables`/`--table-size`). The trial's pass index seeds the generators.
    pub fn from_def(
        def: &WorkloadDef,
        dataset: Option<&Dataset>,
        seed: u64,
    ) -> Result<Self, Error> {
        let Some(driver) = drivers::driver(&def.driver) else {
            return Err(Error::Invalid(format!(
                "workloads of driver `{}` are not supported yet",
                def.driver
            )));
        };
        let mut p = Params::new("workload", &def.params);
        let w = Workload {
            spec: driver.workload(def, dataset, seed, &mut p)?,
        };
        // the bound on the whole run (the trial's watchdog): longer than what the clock
        // declares, or every run would be stopped before its end
        if let Some(t) = p.opt_duration(TIMEOUT)? {
            let too_short = match w.declared_run() {
                Some((warmup, window)) => t <= warmup + window,
                None => t.is_zero(),
            };
            if too_short {
                return Err(p.error(
                    TIMEOUT,
                    format!(
                        "workload parameter `{TIMEOUT}` ({} s) must be longer than the run's warmup and duration: it stops a run that stalls",
                        t.as_secs_f64()
                    ),
                ));
            }
        }
        p.finish()?;
        Ok(w)
    }

    /// The driver's own spec, if it is a `T`.
    pub fn spec<T: Runnable>(&self) -> Option<&T> {
        (self.spec.as_ref() as &dyn Any).downcast_ref()
    }

    /// Whether it can run against a server speaking `protocol`: sysbench's OLTP tests
    /// (native or external) run against every server; super-smack and sql-bench speak only
    /// MySQL's protocol. The error names the driver (a `Param` of the driver node, so
    /// `cairn check` points at it).
    pub fn supports(&self, protocol: Protocol) -> Result<(), Error> {
        self.spec.supports(protocol)
    }

    /// The declared lengths of a run that the clock ends: its warmup and its measured
    /// window. `None` for runs that end after a count (events, rounds, a test suite).
    pub fn declared_run(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        self.spec.declared_run()
    }

    /// Whether an external tool runs it (the server's runtime must run tools).
    pub fn runs_external_tool(&self) -> bool {
        self.spec.runs_external_tool()
    }

    /// The external tool's own bound on a run, if it has one.
    pub fn tool_limit(&self) -> Option<std::time::Duration> {
        self.spec.tool_limit()
    }

    /// Run it; fails with the cause if the server dies or the caller stops it.
    pub fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        self.spec.run(cx)
    }
}

/// The figures of an OLTP run: `tps`, `qps`, latency (min, mean, percentiles, max), queries
/// by type, errors, client CPU; with a rate, the target and the queueing (`queue_p99_ms`,
/// `unstarted`, …).
pub fn oltp_outcome(m: &Metrics) -> Outcome {
    let t = &m.measured.totals;
    let l = &m.measured.latency;
    let cpu = m.measured.client_cpu.total_s();
    let queries = t.queries.total();
    let mut f = Figures::new();
    f.set(&fig::TPS, m.tps);
    f.set(&fig::QPS, m.qps);
    f.set(&fig::EVENTS, t.events as f64);
    f.set(&fig::QUERIES, queries as f64);
    f.set(&fig::READS, t.queries.read as f64);
    f.set(&fig::WRITES, t.queries.write as f64);
    f.set(&fig::OTHER_QUERIES, t.queries.other as f64);
    f.set(&fig::DEADLOCKS, t.errors.deadlock as f64);
    f.set(&fig::RETRIES, t.retries as f64);
    if m.rate > 0 {
        f.set(&fig::RATE, m.rate as f64);
        f.set(&fig::QUEUE_P99_MS, m.measured.queue.p99_ms);
        f.set(&fig::QUEUE_MAX_MS, m.measured.queue.max_ms);
        f.set(&fig::UNSTARTED, t.unstarted as f64);
        let backlog = m.series.iter().filter(|s| !s.warmup).map(|s| s.backlog);
        f.set(&fig::BACKLOG_MAX, backlog.max().unwrap_or(0) as f64);
    }
    f.set(&fig::SECONDS, m.measured.seconds);
    f.set(&fig::LATENCY_MIN_MS, l.min_ms);
    f.set(&fig::LATENCY_MEAN_MS, l.mean_ms);
    f.set(&fig::LATENCY_P50_MS, l.p50_ms);
    f.set(&fig::LATENCY_P95_MS, l.p95_ms);
    f.set(&fig::LATENCY_P99_MS, l.p99_ms);
    f.set(&fig::LATENCY_P999_MS, l.p999_ms);
    f.set(&fig::LATENCY_MAX_MS, l.max_ms);
    f.set(&fig::ERRORS, t.errors.total() as f64);
    f.set(&fig::RECONNECTS, t.reconnects as f64);
    f.set(&fig::CLIENT_CPU_S, cpu);
    if queries > 0 {
        f.set(
            &fig::CLIENT_CPU_MS_PER_1K_QUERIES,
            cpu * 1e6 / queries as f64,
        );
    }
    let rate = if m.rate > 0 {
        format!(" at rate {}/s ({} unstarted)", m.rate, t.unstarted)
    } else {
        String::new()
    };
    Outcome {
        headline: format!(
            "{:.1} tps, {:.1} qps, p95 {:.2} ms, {} errors{rate}",
            m.tps,
            m.qps,
            l.p95_ms,
            t.errors.total()
        ),
        figures: f,
        detail: serde_json::to_value(m).expect("serialises"),
    }
}

/// The workload parameter that bounds a whole run (any driver): a run still going after it
/// is stopped and its trial fails.
pub const TIMEOUT: &str = "timeout";

/// The plan's `timeout` of a workload, if it set one (checked by [`Workload::from_def`]).
pub fn timeout_of(def: &WorkloadDef) -> Result<Option<std::time::Duration>, Error> {
    Params::new("workload", &def.params).opt_duration(TIMEOUT)
}

/// Typed access to `key=value` parameters; every key must be used (unknown ones are errors).
pub struct Params<'a> {
    what: &'static str,
    props: &'a Props,
    used: Vec<&'a str>,
}

impl<'a> Params<'a> {
    pub fn new(what: &'static str, props: &'a Props) -> Self {
        Params {
            what,
            props,
            used: Vec::new(),
        }
    }

    fn get(&mut self, name: &str) -> Option<&'a Value> {
        let (k, v) = self.props.get_key_value(name)?;
        self.used.push(k.as_str());
        Some(v)
    }

    pub fn has(&self, name: &str) -> bool {
        self.props.contains_key(name)
    }

    fn bad(&self, name: &str, want: &str, v: &Value) -> Error {
        self.error(
            name,
            format!("{} parameter `{name}` must be {want}, not {v}", self.what),
        )
    }

    /// An error about parameter `name` (the plan can point at it).
    pub fn error(&self, name: &str, message: String) -> Error {
        Error::Param {
            what: self.what,
            name: name.to_string(),
            message,
        }
    }

    pub fn opt_u64(&mut self, name: &str) -> Result<Option<u64>, Error> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.bad(name, "a whole number ≥ 0", v)),
        }
    }

    pub fn u64(&mut self, name: &str, default: u64) -> Result<u64, Error> {
        Ok(self.opt_u64(name)?.unwrap_or(default))
    }

    pub fn u32(&mut self, name: &str, default: u32) -> Result<u32, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| self.bad(name, "a whole number below 2^32", v)),
        }
    }

    /// A whole number from `min` to `max` (the error names the bounds).
    pub fn u32_within(
        &mut self,
        name: &str,
        default: u32,
        min: u32,
        max: u32,
    ) -> Result<u32, Error> {
        let Some(v) = self.get(name) else {
            return Ok(default);
        };
        match v.as_u64() {
            Some(n) if (min as u64..=max as u64).contains(&n) => Ok(n as u32),
            _ if max == u32::MAX => Err(self.bad(name, &format!("a whole number ≥ {min}"), v)),
            _ => Err(self.bad(name, &format!("a whole number from {min} to {max}"), v)),
        }
    }

    /// A plain SQL identifier (letters, digits, `_`; a storage engine's name): it goes into
    /// SQL as it is.
    pub fn identifier(&mut self, name: &str, default: &str) -> Result<String, Error> {
        let s = self.string(name, default)?;
        crate::conn::check_identifier(&s).map_err(|_| {
            self.error(
                name,
                format!(
                    "{} parameter `{name}` must be a plain identifier (letters, digits, `_`, at most 64 characters), not {s:?}",
                    self.what
                ),
            )
        })?;
        Ok(s)
    }

    pub fn bool(&mut self, name: &str, default: bool) -> Result<bool, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| self.bad(name, "#true or #false", v)),
        }
    }

    /// One of `choices` (the error lists them).
    pub fn choice<'c>(
        &mut self,
        name: &str,
        choices: &[&'c str],
        default: &'c str,
    ) -> Result<&'c str, Error> {
        let Some(v) = self.get(name) else {
            return Ok(default);
        };
        let found = v.as_str().and_then(|s| choices.iter().find(|c| **c == s));
        match found {
            Some(c) => Ok(c),
            None => {
                let listed: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
                Err(self.bad(name, &format!("one of {}", listed.join(", ")), v))
            }
        }
    }

    pub fn string(&mut self, name: &str, default: &str) -> Result<String, Error> {
        match self.get(name) {
            None => Ok(default.to_string()),
            Some(v) => v
                .as_str()
                .map(String::from)
                .ok_or_else(|| self.bad(name, "a string", v)),
        }
    }

    /// Seconds, if given (the plan normalises durations to seconds).
    pub fn opt_duration(&mut self, name: &str) -> Result<Option<std::time::Duration>, Error> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
                .map(Some)
                .ok_or_else(|| self.bad(name, "a duration", v)),
        }
    }

    /// Seconds (the plan normalises durations to seconds).
    pub fn duration(&mut self, name: &str, default_s: f64) -> Result<std::time::Duration, Error> {
        let s = match self.get(name) {
            None => default_s,
            Some(v) => v
                .as_f64()
                .filter(|s| *s >= 0.0 && s.is_finite())
                .ok_or_else(|| self.bad(name, "a duration", v))?,
        };
        Ok(std::time::Duration::from_secs_f64(s))
    }

    /// A duration above zero, in seconds.
    pub fn positive_duration(
        &mut self,
        name: &str,
        default_s: f64,
    ) -> Result<std::time::Duration, Error> {
        let d = self.duration(name, default_s)?;
        if d.is_zero() {
            let v = self.props.get(name).cloned().unwrap_or_default();
            return Err(self.bad(name, "a duration above 0", &v));
        }
        Ok(d)
    }

    /// A number (whole or not).
    pub fn f64(&mut self, name: &str, default: f64) -> Result<f64, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| self.bad(name, "a number", v)),
        }
    }

    /// A sysbench `--rand-type` name, with sysbench's default parameters; `pareto` takes
    /// `pareto-h` (sysbench's `--rand-pareto-h`, default 0.2), `zipfian` takes `zipfian-exp`
    /// (`--rand-zipfian-exp`, default 0.8), which are errors beside another distribution.
    pub fn distribution(&mut self, name: &str) -> Result<Option<Distribution>, Error> {
        const H: &str = "pareto-h";
        const EXP: &str = "zipfian-exp";
        let Some(v) = self.get(name) else {
            for p in [H, EXP] {
                if self.has(p) {
                    return Err(self.misplaced(p, name, "its default"));
                }
            }
            return Ok(None);
        };
        let d = match v.as_str() {
            Some("uniform") => Distribution::Uniform,
            Some("gaussian") => Distribution::Gaussian { iter: 12 },
            Some("special") => Distribution::Special(SpecialParams::default()),
            Some("pareto") => Distribution::Pareto {
                h: self.f64(H, PARETO_H)?,
            },
            Some("zipfian") => Distribution::Zipfian {
                exp: self.f64(EXP, ZIPFIAN_EXP)?,
            },
            _ => return Err(self.bad(name, "uniform, gaussian, special, pareto or zipfian", v)),
        };
        for (p, applies) in [(H, "pareto"), (EXP, "zipfian")] {
            if self.has(p) && v.as_str() != Some(applies) {
                return Err(self.misplaced(p, name, v.as_str().unwrap_or_default()));
            }
        }
        d.validate()
            .map_err(|m| Error::Invalid(format!("{} parameter `{name}`: {m}", self.what)))?;
        Ok(Some(d))
    }

    fn misplaced(&self, param: &str, name: &str, what: &str) -> Error {
        let applies = if param.starts_with("pareto") {
            "pareto"
        } else {
            "zipfian"
        };
        Error::Invalid(format!(
            "{} parameter `{param}` applies only to `{name}=\"{applies}\"`, not to {what}",
            self.what
        ))
    }

    /// Fails on the first parameter nobody asked for.
    pub fn finish(self) -> Result<(), Error> {
        match self.props.keys().find(|k| !self.used.contains(&k.as_str())) {
            None => Ok(()),
            // a run that a count ends has no first seconds to leave out
            Some(k) if k == "warmup" && self.what == "workload" => Err(self.error(
                k,
                "unknown workload parameter `warmup` here: this driver's runs end after a count, not a duration, so there are no first seconds to leave out; to let the server settle after its start, write `settle \"60s\"` in the trials block".into(),
            )),
            Some(k) => Err(self.error(k, format!("unknown {} parameter `{k}` here", self.what))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::{OltpSpec, OltpTest};
    use crate::SysbenchDataset;
    use serde_json::json;

    fn props(v: Value) -> Props {
        v.as_object().unwrap().clone()
    }

    /// The drivers implemented here are the ones the plan language names (cairn-defs'
    /// `DRIVERS`, the one list): each has workloads (sql-bench makes its own tables, so not
    /// every driver has datasets), and no other is known.
    #[test]
    fn every_listed_driver_is_implemented_and_no_other() {
        let unsupported = |e: Error| e.to_string().contains("not supported yet");
        for driver in cairn_defs::driver_names() {
            let w = Workload::from_def(
                &WorkloadDef {
                    driver: driver.into(),
                    test: "no-such-test".into(),
                    ..WorkloadDef::default()
                },
                None,
                0,
            );
            assert!(!w.is_err_and(unsupported), "{driver}'s workloads");
        }
        let w = Workload::from_def(
            &WorkloadDef {
                driver: "hammerdb".into(),
                ..WorkloadDef::default()
            },
            None,
            0,
        );
        assert!(w.is_err_and(unsupported));
    }

    #[test]
    fn sysbench_dataset_and_read_only() {
        let ds = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"tables": 4, "rows": 1000, "engine": "MyISAM"})),
        })
        .unwrap();
        let s = ds.spec::<SysbenchDataset>().expect("a sysbench dataset");
        assert_eq!(
            (s.tables, s.table_size, s.engine.as_str()),
            (4, 1000, "MyISAM")
        );
        assert!(!s.secondary_id, "id is the primary key unless asked");
        let xid = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"id-index": "secondary"})),
        })
        .unwrap();
        let x = xid.spec::<SysbenchDataset>().expect("a sysbench dataset");
        assert!(x.secondary_id);
        let w = Workload::from_def(
            &WorkloadDef {
                driver: "sysbench".into(),
                test: "oltp_read_only".into(),
                driver_props: Props::new(),
                params: props(json!({"threads": 8, "duration": 5.0, "warmup": 1.5})),
            },
            Some(&ds),
            7,
        )
        .unwrap();
        let o = w.spec::<OltpSpec>().expect("an OLTP workload");
        assert_eq!(o.test, OltpTest::ReadOnly);
        assert_eq!((o.tables, o.table_size, o.threads), (4, 1000, 8));
        assert_eq!(o.time, Some(std::time::Duration::from_secs(5)));
        assert_eq!(o.warmup, std::time::Duration::from_millis(1500));
        assert_eq!(o.seed, 7);
    }

    fn sysbench_ds() -> Dataset {
        Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"tables": 2, "rows": 500})),
        })
        .unwrap()
    }

    fn oltp(test: &str, params: Value) -> Result<OltpSpec, Error> {
        let def = WorkloadDef {
            driver: "sysbench".into(),
            test: test.into(),
            driver_props: Props::new(),
            params: props(params),
        };
        Workload::from_def(&def, Some(&sysbench_ds()), 3)
            .map(|w| w.spec::<OltpSpec>().expect("an OLTP workload").clone())
    }

    #[test]
    fn read_write_write_only_rate_and_mix_parameters() {
        let o = oltp("oltp_read_write", json!({"threads": 4, "rate": 250})).unwrap();
        assert_eq!((o.test, o.rate, o.threads), (OltpTest::ReadWrite, 250, 4));
        assert_eq!(
            (o.index_updates, o.non_index_updates, o.delete_inserts),
            (1, 1, 1)
        );
        let o = oltp(
            "oltp_write_only",
            json!({"index-updates": 2, "non-index-updates": 0, "delete-inserts": 3,
                   "skip-trx": true, "max-retries": 50, "range-selects": false}),
        )
        .unwrap();
        assert_eq!(o.test, OltpTest::WriteOnly);
        assert_eq!(o.rate, 0, "unlimited by default");
        assert_eq!(
            (o.index_updates, o.non_index_updates, o.delete_inserts),
            (2, 0, 3)
        );
        assert!(o.skip_trx && !o.range_selects);
        assert_eq!(o.max_retries, 50);
        let e = oltp("oltp_insert", json!({})).unwrap_err();
        assert!(e.to_string().contains("oltp_write_only"), "{e}");
        let e = oltp("oltp_read_write", json!({"rate": -1})).unwrap_err();
        assert!(e.to_string().contains("`rate` must be"), "{e}");
        let e = oltp("oltp_read_write", json!({"rate": 10, "rates": 1})).unwrap_err();
        assert!(e.to_string().contains("`rates`"), "{e}");
    }

    #[test]
    fn pareto_and_zipfian_distributions() {
        let o = oltp("oltp_read_write", json!({"distribution": "pareto"})).unwrap();
        assert_eq!(o.rand, Distribution::Pareto { h: 0.2 });
        let o = oltp(
            "oltp_read_only",
            json!({"distribution": "pareto", "pareto-h": 0.1}),
        )
        .unwrap();
        assert_eq!(o.rand, Distribution::Pareto { h: 0.1 });
        let o = oltp("oltp_point_select", json!({"distribution": "zipfian"})).unwrap();
        assert_eq!(o.rand, Distribution::Zipfian { exp: 0.8 });
        let o = oltp(
            "oltp_point_select",
            json!({"distribution": "zipfian", "zipfian-exp": 1}),
        )
        .unwrap();
        assert_eq!(o.rand, Distribution::Zipfian { exp: 1.0 });
        let e = oltp(
            "oltp_point_select",
            json!({"distribution": "uniform", "zipfian-exp": 1}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("applies only to"), "{e}");
        let e = oltp("oltp_point_select", json!({"pareto-h": 0.3})).unwrap_err();
        assert!(e.to_string().contains("`pareto-h` applies only"), "{e}");
        let e = oltp(
            "oltp_point_select",
            json!({"distribution": "pareto", "pareto-h": 1.0}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("between 0 and 1"), "{e}");
        let e = oltp("oltp_point_select", json!({"distribution": "zipf"})).unwrap_err();
        assert!(e.to_string().contains("pareto or zipfian"), "{e}");
        // datasets draw k the same way
        let ds = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"distribution": "zipfian", "zipfian-exp": 0.5})),
        })
        .unwrap();
        let s = ds.spec::<SysbenchDataset>().expect("a sysbench dataset");
        assert_eq!(s.k_distribution, Distribution::Zipfian { exp: 0.5 });
    }

    #[test]
    fn outcome_figures_have_shared_names_and_add_rate_ones() {
        let mut m = Metrics::default();
        let plain = oltp_outcome(&m).figures;
        for f in [
            &fig::TPS,
            &fig::QPS,
            &fig::EVENTS,
            &fig::QUERIES,
            &fig::SECONDS,
            &fig::LATENCY_MIN_MS,
            &fig::LATENCY_MEAN_MS,
            &fig::LATENCY_P50_MS,
            &fig::LATENCY_P95_MS,
            &fig::LATENCY_P99_MS,
            &fig::LATENCY_P999_MS,
            &fig::LATENCY_MAX_MS,
            &fig::ERRORS,
            &fig::RECONNECTS,
            &fig::CLIENT_CPU_S,
            &fig::WRITES,
        ] {
            assert!(plain.contains(f), "{f} missing from {plain:?}");
        }
        assert!(!plain.contains(&fig::RATE));
        m.rate = 100;
        m.measured.totals.unstarted = 4;
        m.measured.totals.queries.read = 1;
        let o = oltp_outcome(&m);
        assert_eq!(o.figures[&fig::RATE], 100.0);
        assert_eq!(o.figures[&fig::UNSTARTED], 4.0);
        assert!(o.headline.contains("rate 100/s"), "{}", o.headline);
        // with a rate and queries, every figure it can emit: all in the vocabulary
        assert!(o.figures.contains(&fig::CLIENT_CPU_MS_PER_1K_QUERIES));
        assert_eq!(o.figures.outside_vocabulary(), Vec::<&str>::new());
    }

    #[test]
    fn a_warmup_for_a_count_ended_driver_points_at_settle() {
        let ds = Dataset::from_def(&DatasetDef {
            generator: "smack".into(),
            props: props(json!({"rows": 100})),
        })
        .unwrap();
        let w = WorkloadDef {
            driver: "smack".into(),
            test: "select_index".into(),
            driver_props: Props::new(),
            params: props(json!({"clients": 2, "rounds": 10, "warmup": 2.0})),
        };
        let e = Workload::from_def(&w, Some(&ds), 0).unwrap_err();
        assert!(
            matches!(&e, Error::Param { name, .. } if name == "warmup"),
            "{e:?}"
        );
        assert!(e.to_string().contains("`settle \"60s\"`"), "{e}");
    }

    #[test]
    fn a_timeout_bounds_any_workload_and_must_outlast_its_clock() {
        let def = |params: Value| WorkloadDef {
            driver: "sysbench".into(),
            test: "oltp_point_select".into(),
            driver_props: Props::new(),
            params: props(params),
        };
        let ds = sysbench_ds();
        let ok = def(json!({"duration": 5.0, "warmup": 1.0, "timeout": 60.0}));
        Workload::from_def(&ok, Some(&ds), 0).unwrap();
        assert_eq!(
            timeout_of(&ok).unwrap(),
            Some(std::time::Duration::from_secs(60))
        );
        assert_eq!(timeout_of(&def(json!({}))).unwrap(), None);
        // a timeout the clock reaches first would stop every run before its end
        let short = def(json!({"duration": 5.0, "warmup": 1.0, "timeout": 6.0}));
        let e = Workload::from_def(&short, Some(&ds), 0).unwrap_err();
        assert!(
            matches!(&e, Error::Param { name, .. } if name == "timeout"),
            "{e:?}"
        );
        assert!(e
            .to_string()
            .contains("longer than the run's warmup and duration"));
        // a run an event count ends takes any positive timeout
        let events = def(json!({"events": 100, "timeout": 1.0}));
        Workload::from_def(&events, Some(&ds), 0).unwrap();
        let zero = def(json!({"events": 100, "timeout": 0.0}));
        assert!(Workload::from_def(&zero, Some(&ds), 0).is_err());
        let e = timeout_of(&def(json!({"timeout": "soon"}))).unwrap_err();
        assert!(
            e.to_string().contains("`timeout` must be a duration"),
            "{e}"
        );
    }

    #[test]
    fn unknown_and_mistyped_parameters_are_named() {
        let ds = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"tables": 1})),
        })
        .unwrap();
        let def = |params: Value| WorkloadDef {
            driver: "sysbench".into(),
            test: "oltp_point_select".into(),
            driver_props: Props::new(),
            params: props(params),
        };
        let e = Workload::from_def(&def(json!({"clients": 3})), Some(&ds), 0).unwrap_err();
        assert!(e.to_string().contains("`clients`"), "{e}");
        let e = Workload::from_def(&def(json!({"threads": "x"})), Some(&ds), 0).unwrap_err();
        assert!(e.to_string().contains("`threads` must be"), "{e}");
        let e = Workload::from_def(&def(json!({})), None, 0).unwrap_err();
        assert!(e.to_string().contains("needs a sysbench dataset"), "{e}");
        let e = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"tabels": 1})),
        })
        .unwrap_err();
        assert!(e.to_string().contains("`tabels`"), "{e}");
    }
}
