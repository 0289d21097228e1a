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

use crate::dataset::sysbench::{load_sysbench, SysbenchDataset};
use crate::metrics::Metrics;
use crate::oltp::{run_oltp_until, OltpSpec, OltpTest, StopCheck};
use crate::rand::{Distribution, SpecialParams};
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
    /// Run `argv`; the host and port the tool must use are in [`ToolRunner::server`].
    fn run(&self, argv: &[String]) -> Result<ToolOutput, String>;
    /// How the tool reaches the server: (host, port).
    fn server(&self) -> (String, u16);
}

/// What an external tool printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
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
        }
    }
}

/// A workload ready to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Oltp(OltpSpec),
    SqlBench(SqlBenchSpec),
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
                let test = match def.test.as_str() {
                    "oltp_point_select" => OltpTest::PointSelect,
                    "oltp_read_only" => OltpTest::ReadOnly,
                    other => {
                        return Err(Error::Invalid(format!(
                            "sysbench test `{other}` is not supported: use oltp_point_select or oltp_read_only"
                        )))
                    }
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
                s.range_size = p.u32("range-size", 100)?;
                if let Some(d) = p.distribution("distribution")? {
                    s.rand = d;
                }
                s.seed = seed;
                let mut d = Params::new("driver", &def.driver_props);
                s.prepared = d.bool("prepared", true)?;
                d.finish()?;
                Workload::Oltp(s)
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
            Workload::SqlBench(spec) => Ok(run_sqlbench_until(cx.target, spec, cx.stop)?.outcome()),
        }
    }
}

/// The figures of an OLTP run: `tps`, `qps`, latency percentiles, errors, client CPU.
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
    Outcome {
        headline: format!(
            "{:.1} tps, {:.1} qps, p95 {:.2} ms, {} errors",
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
        Error::Invalid(format!(
            "{} parameter `{name}` must be {want}, not {v}",
            self.what
        ))
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

    /// A sysbench `--rand-type` name, with sysbench's default parameters.
    pub fn distribution(&mut self, name: &str) -> Result<Option<Distribution>, Error> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        match v.as_str() {
            Some("uniform") => Ok(Some(Distribution::Uniform)),
            Some("gaussian") => Ok(Some(Distribution::Gaussian { iter: 12 })),
            Some("special") => Ok(Some(Distribution::Special(SpecialParams::default()))),
            _ => Err(self.bad(name, "uniform, gaussian or special", v)),
        }
    }

    /// Fails on the first parameter nobody asked for.
    pub fn finish(self) -> Result<(), Error> {
        match self.props.keys().find(|k| !self.used.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(Error::Invalid(format!(
                "unknown {} parameter `{k}` here",
                self.what
            ))),
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
        let Dataset::Sysbench(s) = &ds;
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
            panic!("an OLTP workload")
        };
        assert_eq!(o.test, OltpTest::ReadOnly);
        assert_eq!((o.tables, o.table_size, o.threads), (4, 1000, 8));
        assert_eq!(o.time, Some(std::time::Duration::from_secs(5)));
        assert_eq!(o.warmup, std::time::Duration::from_millis(1500));
        assert_eq!(o.seed, 7);
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
