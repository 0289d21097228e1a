//! The workload drivers behind one seam: what each implements ([`Driver`]; what it makes, [`Runnable`] and [`Loadable`]) and the one registry of them ([`REGISTERED`]).
//!
//! Adding a driver takes its module here, one line in [`REGISTERED`], and its name and code
//! version in `cairn_defs::DRIVERS`, the list the plan language reads; a test holds the two
//! lists equal. Nothing outside this directory names a driver.

mod smack;
mod sqlbench;
mod sysbench;

use std::any::Any;
use std::fmt::Debug;
use std::time::Duration;

use crate::workload::{Dataset, LoadReport, Outcome, Params, RunContext, WorkloadDef};
use crate::{Error, Protocol, Target};

/// Every driver cairn runs, in `cairn_defs::DRIVERS` order.
pub static REGISTERED: &[&dyn Driver] = &[&sysbench::Sysbench, &smack::Smack, &sqlbench::SqlBench];

/// The registered driver named `name`.
pub fn driver(name: &str) -> Option<&'static dyn Driver> {
    REGISTERED.iter().copied().find(|d| d.name() == name)
}

/// A workload driver: turns a plan's definitions into what it loads and runs, and rejects
/// what it does not know with a message naming the parameter (before any server starts).
pub trait Driver: Sync {
    /// The node name plans use (`sysbench`), as listed in `cairn_defs::DRIVERS`.
    fn name(&self) -> &'static str;

    /// A dataset this driver generates, from the dataset node's parameters `p` (every one
    /// must be used; the caller fails on the rest). Drivers that make no datasets (sql-bench
    /// creates its own tables) keep this refusal.
    fn dataset(&self, p: &mut Params<'_>) -> Result<Box<dyn Loadable>, Error> {
        let _ = p;
        Err(Error::Invalid(format!(
            "datasets of generator `{}` are not supported yet",
            self.name()
        )))
    }

    /// The workload of `def` (its test and driver properties; its parameters are `p`)
    /// against `dataset`; `seed` (the trial's pass index) seeds its generators.
    fn workload(
        &self,
        def: &WorkloadDef,
        dataset: Option<&Dataset>,
        seed: u64,
        p: &mut Params<'_>,
    ) -> Result<Box<dyn Runnable>, Error>;
}

/// A workload ready to run.
pub trait Runnable: Debug + Send + Sync + Any {
    /// Run it; fails with the cause if the server dies or the caller stops it.
    fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error>;

    /// Whether it can run against a server speaking `protocol`; the error names the driver
    /// (see [`mysql_protocol_only`]).
    fn supports(&self, protocol: Protocol) -> Result<(), Error>;

    /// The declared lengths of a run the clock ends: its warmup and its measured window.
    /// `None` for runs that end after a count (events, rounds, a test suite).
    fn declared_run(&self) -> Option<(Duration, Duration)> {
        None
    }

    /// Whether an external tool runs it (in a place of its own, not cairn's threads): the
    /// server's runtime must be able to run tools.
    fn runs_external_tool(&self) -> bool {
        false
    }

    /// The external tool's own bound on a run, if it has one.
    fn tool_limit(&self) -> Option<Duration> {
        None
    }
}

/// A dataset ready to load.
pub trait Loadable: Debug + Send + Sync + Any {
    /// The database it lives in (and its workloads connect to).
    fn database(&self) -> &str;

    /// Whether a server speaking `protocol` can hold it; the error names the generator.
    fn supports(&self, protocol: Protocol) -> Result<(), Error>;

    /// Create and fill its tables in `target`'s database.
    fn load(&self, target: &Target) -> Result<LoadReport, Error>;
}

/// What a loader reports of its load: its time and rows, and its own report as `detail`.
pub fn load_report(seconds: f64, rows: u64, detail: &impl serde::Serialize) -> LoadReport {
    LoadReport {
        seconds,
        rows,
        detail: serde_json::to_value(detail).expect("serialises"),
    }
}

/// The refusal of a workload whose driver speaks only MySQL's protocol: a `Param` of the
/// driver node, so `cairn check` points at it.
pub fn mysql_protocol_only(driver: &str, protocol: Protocol) -> Result<(), Error> {
    if protocol == Protocol::Mysql {
        return Ok(());
    }
    Err(Error::Param {
        what: "driver",
        name: driver.into(),
        message: format!(
            "the {driver} workload needs a MariaDB or MySQL server, not a {} one: it speaks only MySQL's protocol and SQL",
            protocol.as_str()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drivers registered here are the ones the plan language names (cairn-defs'
    /// `DRIVERS`, with their code versions), in the same order.
    #[test]
    fn the_registry_is_the_plan_languages_list() {
        let here: Vec<&str> = REGISTERED.iter().map(|d| d.name()).collect();
        assert_eq!(here, cairn_defs::driver_names());
        assert!(driver("sysbench").is_some());
        assert!(driver("hammerdb").is_none());
    }
}
