//! The machine fingerprint that measurement keys carry, so results from different
//! machines are never mixed silently. Probing lives in `cairn-exec`; this is the value.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cpu_model: String,
    pub cores: u32,
    pub threads: u32,
    pub memory_bytes: u64,
    pub kernel: String,
    /// e.g. "host" for the process executor, "docker 20.10.24" for containers.
    pub runtime: String,
}
