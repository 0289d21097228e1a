//! The bundle's layout and its manifest, `bundle.json` (always the archive's first entry).
//!
//! ```text
//! bundle.json                    this manifest
//! plan/<files>                   the plan files (root, imports, the files its steps read), the lock
//! store/records/<key>.json       the record of every step of the study
//! store/blobs/<aa>/<digest>      every blob those records name
//! report/<study>/<files>         the rendered report, if it was rendered
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The manifest's name and format version.
pub const MANIFEST: &str = "bundle.json";
pub const FORMAT: &str = "cairn-bundle/1";

/// One file of the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub blake3: String,
    pub size: u64,
}

/// One step of the study and the record that holds its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEntry {
    pub address: String,
    pub kind: String,
    /// The record's key; `None` for a conditional pass the adaptive rule did not need.
    pub key: Option<String>,
    pub definition_key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub study: String,
    /// The root plan file, relative to the bundle (`plan/<name>.kdl`).
    pub plan: String,
    pub cairn_version: String,
    pub created: String,
    /// Every file but the manifest: path → digest and size.
    pub files: BTreeMap<String, FileEntry>,
    /// Every step in the plan's order.
    pub steps: Vec<StepEntry>,
    /// Addresses of the plan's `step`s: commands that run on the host.
    pub host_steps: Vec<String>,
    /// The sum of the files' sizes: unpacking refuses to write much more.
    pub total_bytes: u64,
    /// The value of each plan parameter (`param`) the study was bundled with: verifying
    /// reads the plan with them, and `cairn reproduce` runs it with them (`--set` overrides).
    /// Absent for a plan without parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
}

/// What an unpacked bundle may hold beyond the declared bytes (the manifest itself and tar
/// padding are not files; this is slack for neither).
pub const SIZE_SLACK: u64 = 1 << 20;
/// The largest manifest read.
pub const MANIFEST_LIMIT: u64 = 64 << 20;
