//! cairn-engine: decides which steps are cached, runs the stale ones in dependency order
//! (builds in parallel, measurements alone in their own lane) through the step kinds of a
//! [`Registry`], and emits typed events.

pub mod adaptive;
pub mod analysis_step;
pub mod budget;
pub mod build_check;
pub mod cache;
pub mod chart;
pub mod claim_step;
pub mod command_step;
pub mod context;
pub mod dataset_step;
pub mod error;
pub mod events;
pub mod execute;
pub mod fleet;
pub mod fleet_job;
pub mod image_step;
pub mod kind;
pub mod order;
pub mod plot_analysis;
pub mod progress;
pub mod report_html;
pub mod report_step;
pub mod run;
pub mod series_csv;
pub mod server_run;
pub mod slurm_fleet;
pub mod status;
pub mod tools;
pub mod trial_efficiency;
pub mod trial_points;
pub mod trial_step;
pub mod trial_watchdog;

pub use context::Env;
pub use error::{FailureClass, StepError};
pub use events::{Event, Reporter};
pub use kind::{Kind, Lane, Registry, Requirement, Unusable};
pub use run::{run, run_on, RetryPolicy, RunOptions, RunSummary};
pub use status::{explain, statuses, Reason, Status, StepStatus};
