//! cairn-plan: reads KDL plan files into a typed [`Plan`] whose values keep their source spans.

mod analysis_subset;
mod builds;
mod cache;
mod diagnostics;
mod fmt;
mod grammar;
pub mod host_factors;
mod imports;
pub mod lifecycle;
pub mod limits;
pub mod model;
mod params;
mod parse;
pub mod trial_cpus;
pub mod trial_ties;
mod validate;
pub mod values;
mod vocabulary;
mod when_blocks;

pub use cache::{load_cached, load_cached_with};
pub use diagnostics::{one_of, problem_at, render, PlanError, Problem};
pub use fmt::format_text;
pub use grammar::is_duration_param;
pub use grammar::{grammar, NodeSpec};
pub use host_factors::HostFactor;
pub use imports::{load, load_with, parse_str, parse_str_with};
pub use lifecycle::Lifecycle;
pub use model::*;
pub use params::Settings;
pub use vocabulary::{allowed_values, check_vocabulary, Vocabulary};
