//! cairn-engine: the engine core. Decides which steps are cached, runs the stale ones in
//! dependency order (builds in parallel, measurements alone in their own lane) through the
//! step kinds of a [`Registry`], records their results, says why each step would run
//! (`statuses`, `explain`), and emits typed events. It knows no kind of step, no container
//! engine and no database: those are `cairn-kinds`' and `cairn-exec`'s.

pub mod adaptive;
pub mod budget;
pub mod cache;
pub mod context;
pub mod error;
pub mod events;
pub mod execute;
pub mod fleet;
pub mod kind;
pub mod order;
pub mod progress;
pub mod run;
pub mod status;
pub mod together;

pub use context::{Env, Host};
pub use error::{FailureClass, StepError};
pub use events::{Event, Reporter};
pub use kind::{CheckError, Kind, Lane, Note, Registry, Unusable};
pub use run::{run, run_on, RetryPolicy, RunOptions, RunSummary};
pub use status::{explain, statuses, Reason, Status, StepStatus};
