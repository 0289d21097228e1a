//! The workload drivers: sysbench-compatible datasets ([`dataset`]) and OLTP tests ([`oltp`]), super-smack ([`smack`]) and sql-bench ([`sqlbench`]), behind one seam and registry ([`drivers`]), with their metrics ([`metrics`]).
//!
//! Everything is blocking and thread-based: one OS thread and one connection per client,
//! as sysbench does. Nothing here knows about plans, the engine or the CLI.

pub mod conn;
pub mod cpu;
pub mod dataset;
pub mod drivers;
pub mod external;
pub mod metrics;
pub mod oltp;
pub mod pgsql;
pub mod rand;
pub mod server;
pub mod smack;
pub mod sqlbench;
pub mod threads;
pub mod waits;
pub mod workload;

pub use conn::{Protocol, Target};
pub use dataset::sysbench::{load_sysbench, SysbenchDataset, SysbenchLoad};
pub use metrics::{LatencySummary, Metrics, Totals};
pub use oltp::{run_oltp, OltpSpec, OltpTest};
pub use rand::Distribution;
pub use smack::{load_smack, run_select_index, SmackDataset, SmackRun, SmackSpec};
pub use sqlbench::{run_sqlbench, Scale, SqlBenchReport, SqlBenchSpec, SqlBenchTest};
pub use workload::{Dataset, DatasetDef, LoadReport, Outcome, RunContext, Workload, WorkloadDef};

/// Errors of the workload drivers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot connect to {target}: {source}")]
    Connect {
        target: String,
        #[source]
        source: mysql::Error,
    },
    #[error("{op}: {source}")]
    Sql {
        op: String,
        #[source]
        source: mysql::Error,
    },
    #[error("invalid parameters: {0}")]
    Invalid(String),
    /// One named parameter (of a workload, its driver node, or a dataset) is wrong; `what` is
    /// `workload`, `driver` or `dataset`, so a caller can point at it in the plan.
    #[error("{message}")]
    Param {
        what: &'static str,
        name: String,
        message: String,
    },
    /// A client thread gave up; the run fails with the cause.
    #[error("thread {thread}: {cause}")]
    Worker { thread: u32, cause: Box<Error> },
    #[error("gave up after {attempts} attempts of one event; last error: {last}")]
    RetriesExhausted {
        attempts: u32,
        #[source]
        last: mysql::Error,
    },
    /// A client or loader thread could not be started, or panicked; the run failed (and the
    /// other threads were stopped) instead of the process.
    #[error("{0}")]
    Thread(String),
    /// The caller asked the run to stop (e.g. Ctrl-C).
    #[error("stopped before the end")]
    Stopped,
    /// An external tool (`tool="external"`) failed, or its report is unreadable or not of
    /// the run asked for; the message carries the tool's output tail.
    #[error(transparent)]
    External(#[from] external::ExternalError),
    #[error("lost the connection ({lost}) and could not reconnect: {reconnect}")]
    ServerGone {
        lost: mysql::Error,
        reconnect: Box<Error>,
    },
    /// A PostgreSQL connection or statement failed (or got no answer in time).
    #[error("{op}: {source}")]
    Pg {
        op: String,
        #[source]
        source: pgsql::PgFailure,
    },
}

impl Error {
    pub(crate) fn connect(target: &Target, source: mysql::Error) -> Self {
        Error::Connect {
            target: target.describe(),
            source,
        }
    }

    pub(crate) fn sql(op: impl Into<String>, source: mysql::Error) -> Self {
        Error::Sql {
            op: op.into(),
            source,
        }
    }

    /// Whether the run ended because the server gave no answer within the connection's I/O
    /// timeout (it hangs or is paused), as opposed to an answer that was an error.
    pub fn is_no_answer(&self) -> bool {
        match self {
            Error::Connect { source, .. } | Error::Sql { source, .. } => {
                crate::oltp::errors::is_timeout(source)
            }
            Error::Worker { cause, .. } => cause.is_no_answer(),
            Error::Pg { source, .. } => source.is_no_answer(),
            _ => false,
        }
    }
}
