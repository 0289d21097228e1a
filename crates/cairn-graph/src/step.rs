//! One resolved step: what it is, what it needs, and the definition that goes into its key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use cairn_plan::{Loc, Value};
use serde::Serialize;

/// Index of a step in [`crate::StepGraph::steps`].
pub type StepId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A user's own command (`step` node), run on the host.
    Command,
    Image,
    Dataset,
    Trial,
    Analysis,
    Claim,
    Report,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Command => "command",
            StepKind::Image => "image",
            StepKind::Dataset => "dataset",
            StepKind::Trial => "trial",
            StepKind::Analysis => "analysis",
            StepKind::Claim => "claim",
            StepKind::Report => "report",
        }
    }

    /// Version of the code that performs this kind of step. Bump it when what the
    /// executor does for the kind changes meaningfully: every key of that kind changes.
    pub fn code_version(self) -> &'static str {
        match self {
            StepKind::Command => "command/1",
            StepKind::Image => "image/1",
            StepKind::Dataset => "dataset/1",
            StepKind::Trial => "trial/1",
            StepKind::Analysis => "analysis/1",
            StepKind::Claim => "claim/1",
            StepKind::Report => "report/1",
        }
    }

    pub fn parse(s: &str) -> Option<StepKind> {
        Some(match s {
            "command" | "step" => StepKind::Command,
            "image" => StepKind::Image,
            "dataset" => StepKind::Dataset,
            "trial" => StepKind::Trial,
            "analysis" => StepKind::Analysis,
            "claim" => StepKind::Claim,
            "report" => StepKind::Report,
            _ => return None,
        })
    }
}

/// A file from the plan's directory that a command step declared as `input`.
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Path relative to the plan directory (and to the step's working directory).
    pub rel: String,
    pub abs: PathBuf,
    pub digest: String,
}

/// What the process executor needs to run a command step.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub run: String,
    pub env: BTreeMap<String, String>,
    pub files: Vec<InputFile>,
    pub outputs: Vec<String>,
    pub timeout: Option<Duration>,
    pub params: BTreeMap<String, Value>,
}

/// An edge: this step reads `from`'s outputs under the directory `mount`.
#[derive(Debug, Clone)]
pub struct Input {
    pub from: StepId,
    /// Directory (relative to the working directory) the outputs appear under.
    /// Part of the key: moving outputs elsewhere changes what the command sees.
    pub mount: String,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub id: StepId,
    pub kind: StepKind,
    /// The declaring node's name (`step "load"` → "load").
    pub name: String,
    /// Unique human address, e.g. `load[threads=2]#3` or `trial/ro/system[threads=8]#1`.
    pub address: String,
    /// Measurements run in the exclusive lane and carry the machine fingerprint in their key.
    pub measure: bool,
    /// 1-based pass index.
    pub pass: u32,
    /// Parameters of this matrix point.
    pub params: BTreeMap<String, Value>,
    /// Fully resolved definition (after defaults and `extends`), without names.
    pub definition: serde_json::Value,
    pub inputs: Vec<Input>,
    pub command: Option<CommandSpec>,
    /// Where it was declared, for diagnostics.
    pub loc: Loc,
}
