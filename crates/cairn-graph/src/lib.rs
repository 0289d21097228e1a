//! cairn-graph: turns a parsed [`cairn_plan::Plan`] into a DAG of steps, each with a
//! content key (blake3 over a canonical key struct). Pure: reads declared input files to
//! hash them, executes nothing.

pub mod diff;
pub mod expand;
pub mod fingerprint;
pub mod key;
mod lifecycle;
pub mod render;
pub mod resolve;
pub mod select;
pub mod step;
pub mod trial_factors;

pub use cairn_plan::Value;
pub use fingerprint::Fingerprint;
pub use key::{definition_key, step_key, KeyInput, StepKey, DEFINITION_KEY_SCHEMA, KEY_SCHEMA};
pub use resolve::{
    resolve, resolve_with_driver_versions, resolve_with_kinds, ResolveError, StepGraph,
};
pub use select::Selector;
pub use step::{AdaptivePasses, CommandSpec, InputFile, Step, StepId, StepKind};
