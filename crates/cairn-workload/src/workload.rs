//! One entry point for every driver: a plan's resolved dataset and workload definitions → typed specs → load or run → an [`Outcome`] with headline figures.
//!
//! The definitions arrive as the JSON that `cairn-graph` puts into step keys
//! (`{"generator","props"}` for datasets, `{"driver","test","driver_props","params"}` for
//! workloads; durations already in seconds). Each driver turns its part into a typed spec
//! and rejects what it does not know with a message naming the parameter, so a bad plan
//! fails before any server starts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cpu::CpuTime;
use crate::dataset::sysbench::{load_sysbench, SysbenchDataset};
use crate::external::ExternalSysbench;
use crate::metrics::Metrics;
use crate::oltp::{run_oltp_until, OltpSpec, OltpTest, StopCheck};
use crate::rand::{Distribution, SpecialParams, PARETO_H, ZIPFIAN_EXP};
use crate::smack::{
    load_smack, run_select_index_until, smack_outcome, DictionaryOrder, SmackDataset, SmackSpec,
};
use crate::sqlbench::{run_sqlbench_until, SqlBenchSpec};
use crate::{Error, Target};

/// `key=value` properties or parameters, as resolved by the plan.
pub type Props = Map<String, Value>;

/// A dataset step's definition: `sysbench tables=4 rows=10000 engine="InnoDB"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetDef {
    pub generator: String,
    #[serde(default)]
    pub props: Props,
}

/// A trial's workload definition at one point of its matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadDef {
    /// `sysbench` | `smack` | `sqlbench`
    pub driver: String,
    /// e.g. `oltp_read_only`
    pub test: String,
    /// Properties of the driver node, e.g. `tool="external"`.
    #[serde(default)]
    pub driver_props: Props,
    /// `threads`, `duration` (seconds), `warmup`, … with one value each.
    #[serde(default)]
    pub params: Props,
}

/// What a workload run measured, in a driver-independent shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Flat figures for tables, analyses and claims (`tps`, `qps`, `p95_ms`, `errors`, …).
    pub figures: BTreeMap<String, f64>,
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

/// A dataset ready to load.
#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    Sysbench(SysbenchDataset),
    Smack(SmackDataset),
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
    pub fn from_def(def: &DatasetDef) -> Result<Dataset, Error> {
        let mut p = Params::new("dataset", &def.props);
        let ds = match def.generator.as_str() {
            "sysbench" => {
                let mut s = SysbenchDataset::new(p.u32("tables", 1)?, p.u32("rows", 10_000)?);
                s.engine = p.string("engine", "InnoDB")?;
                s.create_secondary = p.bool("secondary", true)?;
                s.seed = p.u64("seed", 0)?;
                s.parallel = p.u32("parallel", 4)?;
                if let Some(d) = p.distribution("distribution")? {
                    s.k_distribution = d;
                }
                Dataset::Sysbench(s)
            }
            "smack" => {
                let mut s = SmackDataset::new(p.u32("rows", crate::smack::dataset::DEFAULT_ROWS)?);
                s.words = p.opt_u64("words")?.map(|w| w.min(u32::MAX as u64) as u32);
                s.file_size_equiv = p.u64("file-size-equiv", s.file_size_equiv)?;
                if p.has("engine") {
                    s.engine = Some(p.string("engine", "")?);
                }
                s.seed = p.u64("seed", 0)?;
                s.parallel = p.u32("parallel", 4)?;
                s.validate()?;
                Dataset::Smack(s)
            }
            other => {
                return Err(Error::Invalid(format!(
                    "datasets of generator `{other}` are not supported yet"
                )))
            }
        };
        p.finish()?;
        Ok(ds)
    }

    /// The database the dataset lives in (and workloads connect to).
    pub fn database(&self) -> &str {
        match self {
            Dataset::Sysbench(_) => "sbtest",
            Dataset::Smack(_) => "smack",
        }
    }

    /// Create and fill the dataset's tables in `target`'s database.
    pub fn load(&self, target: &Target) -> Result<LoadReport, Error> {
        match self {
            Dataset::Sysbench(s) => {
                let r = load_sysbench(target, s)?;
                Ok(LoadReport {
                    seconds: r.elapsed_s,
                    rows: s.tables as u64 * s.table_size as u64,
                    detail: serde_json::to_value(&r).expect("serialises"),
                })
            }
            Dataset::Smack(s) => {
                let r = load_smack(target, s)?;
                Ok(LoadReport {
                    seconds: r.elapsed_s,
                    rows: r.rows,
                    detail: serde_json::to_value(&r).expect("serialises"),
                })
            }
        }
    }
}

/// A workload ready to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Oltp(OltpSpec),
    Smack(SmackSpec),
    SqlBench(SqlBenchSpec),
    /// The image's own sysbench (`tool="external"`), run through [`RunContext::tools`].
    ExternalSysbench(ExternalSysbench),
}

impl Workload {
    /// The typed workload of `def` against `dataset` (which gives e.g. sysbench's
    /// `--tables`/`--table-size`). The trial's pass index seeds the generators.
    pub fn from_def(
        def: &WorkloadDef,
        dataset: Option<&Dataset>,
        seed: u64,
    ) -> Result<Self, Error> {
        let mut p = Params::new("workload", &def.params);
        let w = match def.driver.as_str() {
            "sysbench" => {
                let Some(test) = OltpTest::from_name(&def.test) else {
                    return Err(Error::Invalid(format!(
                        "sysbench test `{}` is not supported: use oltp_point_select, oltp_read_only, oltp_read_write or oltp_write_only",
                        def.test
                    )));
                };
                let Some(Dataset::Sysbench(ds)) = dataset else {
                    return Err(Error::Invalid(format!(
                        "sysbench `{}` needs a sysbench dataset (`dataset \"…\" {{ sysbench tables=… rows=… }}`)",
                        def.test
                    )));
                };
                let mut s = OltpSpec::new(
                    test,
                    ds.tables,
                    ds.table_size,
                    p.u32("threads", 1)?,
                    std::time::Duration::from_secs(10),
                );
                s.time = Some(p.duration("duration", 10.0)?);
                if let Some(n) = p.opt_u64("events")? {
                    s.events = Some(n);
                    if !p.has("duration") {
                        s.time = None;
                    }
                }
                s.warmup = p.duration("warmup", 0.0)?;
                s.report_interval = p.duration("report-interval", 1.0)?;
                s.range_size = p.u32("range-size", s.range_size)?;
                s.range_selects = p.bool("range-selects", s.range_selects)?;
                s.point_selects = p.u32("point-selects", s.point_selects)?;
                s.simple_ranges = p.u32("simple-ranges", s.simple_ranges)?;
                s.sum_ranges = p.u32("sum-ranges", s.sum_ranges)?;
                s.order_ranges = p.u32("order-ranges", s.order_ranges)?;
                s.distinct_ranges = p.u32("distinct-ranges", s.distinct_ranges)?;
                s.index_updates = p.u32("index-updates", s.index_updates)?;
                s.non_index_updates = p.u32("non-index-updates", s.non_index_updates)?;
                s.delete_inserts = p.u32("delete-inserts", s.delete_inserts)?;
                s.skip_trx = p.bool("skip-trx", s.skip_trx)?;
                s.max_retries = p.u32("max-retries", s.max_retries)?;
                s.rate = p.u32("rate", 0)?;
                if let Some(d) = p.distribution("distribution")? {
                    s.rand = d;
                }
                s.seed = seed;
                let mut d = Params::new("driver", &def.driver_props);
                s.prepared = d.bool("prepared", true)?;
                let tool = d.string("tool", "native")?;
                match tool.as_str() {
                    "native" => {}
                    "external" => {}
                    other => {
                        return Err(d.error(
                            "tool",
                            format!("driver parameter `tool` must be \"native\" or \"external\", not {other:?}"),
                        ))
                    }
                }
                d.finish()?;
                if tool == "external" {
                    let given: Vec<&str> = def.params.keys().map(String::as_str).collect();
                    Workload::ExternalSysbench(ExternalSysbench::new(s, &given)?)
                } else {
                    Workload::Oltp(s)
                }
            }
            "smack" => {
                if def.test != "select_index" {
                    return Err(Error::Invalid(format!(
                        "smack test `{}` is not supported: use select_index",
                        def.test
                    )));
                }
                let Some(Dataset::Smack(ds)) = dataset else {
                    return Err(Error::Invalid(
                        "smack `select_index` needs a smack dataset (`dataset \"…\" { smack rows=… }`)"
                            .into(),
                    ));
                };
                let mut s =
                    SmackSpec::new(ds.clone(), p.u32("clients", 10)?, p.u64("rounds", 1000)?);
                s.report_interval = p.duration("report-interval", 1.0)?;
                s.seed = seed;
                let mut d = Params::new("driver", &def.driver_props);
                s.queries_per_round = d.u32("queries-per-round", 2)?;
                s.dictionary = match d.string("dictionary", "rand")?.as_str() {
                    "rand" => DictionaryOrder::Rand,
                    "seq" => DictionaryOrder::Seq,
                    other => {
                        return Err(Error::Invalid(format!(
                            "driver parameter `dictionary` must be rand or seq, not {other:?}"
                        )))
                    }
                };
                d.finish()?;
                Workload::Smack(s)
            }
            "sqlbench" => Workload::SqlBench(SqlBenchSpec::from_def(def, &mut p)?),
            other => {
                return Err(Error::Invalid(format!(
                    "workloads of driver `{other}` are not supported yet"
                )))
            }
        };
        p.finish()?;
        Ok(w)
    }

    /// Run it; fails with the cause if the server dies or the caller stops it.
    pub fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        match self {
            Workload::Oltp(spec) => {
                let m = run_oltp_until(cx.target, spec, cx.stop)?;
                Ok(oltp_outcome(&m))
            }
            Workload::Smack(spec) => {
                let r = run_select_index_until(cx.target, spec, cx.stop)?;
                Ok(smack_outcome(&r))
            }
            Workload::SqlBench(spec) => Ok(run_sqlbench_until(cx.target, spec, cx.stop)?.outcome()),
            Workload::ExternalSysbench(x) => x.run(cx),
        }
    }
}

/// The figures of an OLTP run: `tps`, `qps`, latency percentiles, queries by type, errors,
/// client CPU; with a rate, the target and the queueing (`queue_p99_ms`, `unstarted`).
pub fn oltp_outcome(m: &Metrics) -> Outcome {
    let t = &m.measured.totals;
    let l = &m.measured.latency;
    let cpu = m.measured.client_cpu.total_s();
    let queries = t.queries.total();
    let mut f = BTreeMap::new();
    f.insert("tps".into(), m.tps);
    f.insert("qps".into(), m.qps);
    f.insert("events".into(), t.events as f64);
    f.insert("queries".into(), queries as f64);
    f.insert("reads".into(), t.queries.read as f64);
    f.insert("writes".into(), t.queries.write as f64);
    f.insert("other_queries".into(), t.queries.other as f64);
    f.insert("deadlocks".into(), t.errors.deadlock as f64);
    f.insert("retries".into(), t.retries as f64);
    if m.rate > 0 {
        f.insert("rate".into(), m.rate as f64);
        f.insert("queue_p99_ms".into(), m.measured.queue.p99_ms);
        f.insert("queue_max_ms".into(), m.measured.queue.max_ms);
        f.insert("unstarted".into(), t.unstarted as f64);
        let backlog = m.series.iter().filter(|s| !s.warmup).map(|s| s.backlog);
        f.insert("backlog_max".into(), backlog.max().unwrap_or(0) as f64);
    }
    f.insert("seconds".into(), m.measured.seconds);
    f.insert("mean_ms".into(), l.mean_ms);
    f.insert("p50_ms".into(), l.p50_ms);
    f.insert("p95_ms".into(), l.p95_ms);
    f.insert("p99_ms".into(), l.p99_ms);
    f.insert("p999_ms".into(), l.p999_ms);
    f.insert("max_ms".into(), l.max_ms);
    f.insert("errors".into(), t.errors.total() as f64);
    f.insert("reconnects".into(), t.reconnects as f64);
    f.insert("client_cpu_s".into(), cpu);
    if queries > 0 {
        f.insert(
            "client_cpu_ms_per_1k_queries".into(),
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

    pub fn bool(&mut self, name: &str, default: bool) -> Result<bool, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| self.bad(name, "#true or #false", v)),
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
            Some(k) => Err(self.error(k, format!("unknown {} parameter `{k}` here", self.what))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: Value) -> Props {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn sysbench_dataset_and_read_only() {
        let ds = Dataset::from_def(&DatasetDef {
            generator: "sysbench".into(),
            props: props(json!({"tables": 4, "rows": 1000, "engine": "MyISAM"})),
        })
        .unwrap();
        let Dataset::Sysbench(s) = &ds else {
            panic!("{ds:?}")
        };
        assert_eq!(
            (s.tables, s.table_size, s.engine.as_str()),
            (4, 1000, "MyISAM")
        );
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
        let Workload::Oltp(o) = w else {
            panic!("{w:?}")
        };
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
        Workload::from_def(&def, Some(&sysbench_ds()), 3).map(|w| {
            let Workload::Oltp(o) = w else {
                panic!("an OLTP workload")
            };
            o
        })
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
        let Dataset::Sysbench(s) = ds else {
            panic!("a sysbench dataset")
        };
        assert_eq!(s.k_distribution, Distribution::Zipfian { exp: 0.5 });
    }

    #[test]
    fn outcome_figures_keep_their_names_and_add_rate_ones() {
        let mut m = Metrics::default();
        let names = |m: &Metrics| oltp_outcome(m).figures.into_keys().collect::<Vec<_>>();
        let plain = names(&m);
        for k in [
            "tps",
            "qps",
            "events",
            "queries",
            "seconds",
            "mean_ms",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "p999_ms",
            "max_ms",
            "errors",
            "reconnects",
            "client_cpu_s",
            "writes",
        ] {
            assert!(plain.iter().any(|n| n == k), "{k} missing from {plain:?}");
        }
        assert!(!plain.iter().any(|n| n == "rate"));
        m.rate = 100;
        m.measured.totals.unstarted = 4;
        let o = oltp_outcome(&m);
        assert_eq!(o.figures["rate"], 100.0);
        assert_eq!(o.figures["unstarted"], 4.0);
        assert!(o.headline.contains("rate 100/s"), "{}", o.headline);
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
