//! cairn-defs: the resolved definitions of steps — written once by the resolver (into keys)
//! and read by every executor — the named figures that every driver reports, and the lock
//! file (`lock`) that holds a study's images to the package versions it was resolved to.
//!
//! Nothing here runs anything; it depends only on serde. Every definition serialises to
//! exactly the JSON that goes into a step's key, so a field added here must be optional and
//! skipped when absent, or every existing key changes.

pub mod analysis;
pub mod claim;
pub mod dataset;
pub mod figures;
pub mod host_setting;
pub mod image;
pub mod lifecycle;
pub mod lock;
pub mod report;
pub mod server;
pub mod value;
pub mod workload;

pub use analysis::{AnalysisDef, Sequential};
pub use claim::ClaimDef;
pub use dataset::{DatasetDef, DatasetStepDef};
pub use host_setting::{HostKnob, HostSettingDef};
pub use image::{Debian, ImageDef, LayerDef};
pub use lifecycle::LifecycleDef;
pub use lock::{Lock, LockedImage, VersionMismatch};
pub use report::{ParamValue, PassRule, ReportDef};
pub use server::{LinkDef, ServerDef};
pub use value::{value_text, Props};
pub use workload::{
    driver_code_version, driver_names, profile_value, profiled_code, trial_code, Driver,
    ProfilesAsked, TrialStepDef, WorkloadDef, DRIVERS,
};
