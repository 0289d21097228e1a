//! The sysbench driver: sysbench-compatible datasets and the OLTP tests, run by cairn's own threads (`tool="native"`, the default) or by the image's sysbench program (`tool="external"`).

use std::time::Duration;

use super::{Driver, Loadable, Runnable};
use crate::dataset::sysbench::{load_sysbench, SysbenchDataset};
use crate::external::ExternalSysbench;
use crate::oltp::{run_oltp_until, OltpSpec, OltpTest};
use crate::workload::{
    oltp_outcome, Dataset, LoadReport, Outcome, Params, RunContext, WorkloadDef, MAX_CLIENTS,
    MAX_LOAD_PARALLEL,
};
use crate::{Error, Protocol, Target};

pub struct Sysbench;

impl Driver for Sysbench {
    fn name(&self) -> &'static str {
        "sysbench"
    }

    fn dataset(&self, p: &mut Params<'_>) -> Result<Box<dyn Loadable>, Error> {
        // every sysbench workload needs at least one table of at least one row
        let mut s = SysbenchDataset::new(
            p.u32_within("tables", 1, 1, u32::MAX)?,
            p.u32_within("rows", 10_000, 1, u32::MAX)?,
        );
        s.engine = p.identifier("engine", "InnoDB")?;
        s.create_secondary = p.bool("secondary", true)?;
        s.secondary_id = p.choice("id-index", &["primary", "secondary"], "primary")? == "secondary";
        s.seed = p.u64("seed", 0)?;
        s.parallel = p.u32_within("parallel", 4, 1, MAX_LOAD_PARALLEL)?;
        if let Some(d) = p.distribution("distribution")? {
            s.k_distribution = d;
        }
        // what the loader checks again before it loads
        s.validate()?;
        Ok(Box::new(s))
    }

    fn workload(
        &self,
        def: &WorkloadDef,
        dataset: Option<&Dataset>,
        seed: u64,
        p: &mut Params<'_>,
    ) -> Result<Box<dyn Runnable>, Error> {
        let Some(test) = OltpTest::from_name(&def.test) else {
            return Err(Error::Invalid(format!(
                "sysbench test `{}` is not supported: use oltp_point_select, oltp_read_only, oltp_read_write or oltp_write_only",
                def.test
            )));
        };
        let Some(ds) = dataset.and_then(Dataset::spec::<SysbenchDataset>) else {
            return Err(Error::Invalid(format!(
                "sysbench `{}` needs a sysbench dataset (`dataset \"…\" {{ sysbench tables=… rows=… }}`)",
                def.test
            )));
        };
        let mut s = OltpSpec::new(
            test,
            ds.tables,
            ds.table_size,
            p.u32_within("threads", 1, 1, MAX_CLIENTS)?,
            Duration::from_secs(10),
        );
        s.time = Some(p.duration("duration", 10.0)?);
        if let Some(n) = p.opt_u64("events")? {
            s.events = Some(n);
            if !p.has("duration") {
                s.time = None;
            }
        }
        s.warmup = p.duration("warmup", 0.0)?;
        s.report_interval = p.positive_duration("report-interval", 1.0)?;
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
        let tool = d.choice("tool", &["native", "external"], "native")?;
        d.finish()?;
        // what the driver checks again before it runs
        s.validate()?;
        if tool == "external" {
            let given: Vec<&str> = def.params.keys().map(String::as_str).collect();
            Ok(Box::new(ExternalSysbench::new(s, &given)?))
        } else {
            Ok(Box::new(s))
        }
    }
}

impl Loadable for SysbenchDataset {
    fn database(&self) -> &str {
        "sbtest"
    }

    fn supports(&self, _: Protocol) -> Result<(), Error> {
        Ok(())
    }

    fn load(&self, target: &Target) -> Result<LoadReport, Error> {
        let r = load_sysbench(target, self)?;
        let rows = self.tables as u64 * self.table_size as u64;
        Ok(super::load_report(r.elapsed_s, rows, &r))
    }
}

/// sysbench's OLTP tests run by cairn's own threads, against every server.
impl Runnable for OltpSpec {
    fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        let m = run_oltp_until(cx.target, self, cx.stop)?;
        Ok(oltp_outcome(&m))
    }

    fn supports(&self, _: Protocol) -> Result<(), Error> {
        Ok(())
    }

    fn declared_run(&self) -> Option<(Duration, Duration)> {
        self.time.map(|t| (self.warmup, t))
    }
}

/// sysbench's OLTP tests run by the image's sysbench, against every server.
impl Runnable for ExternalSysbench {
    fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        ExternalSysbench::run(self, cx)
    }

    fn supports(&self, _: Protocol) -> Result<(), Error> {
        Ok(())
    }

    fn declared_run(&self) -> Option<(Duration, Duration)> {
        self.spec.declared_run()
    }

    fn runs_external_tool(&self) -> bool {
        true
    }

    fn tool_limit(&self) -> Option<Duration> {
        self.limit()
    }
}
