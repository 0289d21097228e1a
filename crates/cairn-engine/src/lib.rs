//! cairn-engine: decides which steps are cached, runs the stale ones in dependency order
//! (builds in parallel, measurements alone in their own lane) and emits typed events.

pub mod cache;
pub mod dataset_step;
pub mod events;
pub mod execute;
pub mod image_step;
pub mod order;
pub mod run;
pub mod server_run;
pub mod status;
pub mod tools;
pub mod trial_step;

pub use events::{Event, Reporter};
pub use run::{run, RunOptions, RunSummary};
pub use status::{explain, statuses, Reason, Status, StepStatus};
