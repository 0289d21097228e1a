//! The sql-bench driver: MySQL's sql-bench suite (its tests create their own tables, so it has no datasets), MySQL's protocol only.

use super::{mysql_protocol_only, Driver, Runnable};
use crate::sqlbench::{run_sqlbench_until, SqlBenchSpec};
use crate::workload::{Dataset, Outcome, Params, RunContext, WorkloadDef};
use crate::{Error, Protocol};

pub struct SqlBench;

impl Driver for SqlBench {
    fn name(&self) -> &'static str {
        "sqlbench"
    }

    fn workload(
        &self,
        def: &WorkloadDef,
        _: Option<&Dataset>,
        _: u64,
        p: &mut Params<'_>,
    ) -> Result<Box<dyn Runnable>, Error> {
        Ok(Box::new(SqlBenchSpec::from_def(def, p)?))
    }
}

/// Ends after its test suite, not on the clock.
impl Runnable for SqlBenchSpec {
    fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        Ok(run_sqlbench_until(cx.target, self, cx.stop)?.outcome())
    }

    fn supports(&self, protocol: Protocol) -> Result<(), Error> {
        mysql_protocol_only("sqlbench", protocol)
    }
}
