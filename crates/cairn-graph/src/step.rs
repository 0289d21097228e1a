//! One resolved step: what it is, what it needs, and the definition that goes into its key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use cairn_defs::{DatasetStepDef, ImageDef, ServerDef, TrialStepDef};
use cairn_plan::{Loc, Value};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Index of a step in [`crate::StepGraph::steps`].
pub type StepId = usize;

/// What kind of work a step is, by name. The kinds cairn ships are the constants below; a
/// crate may make another with [`StepKind::new`] and register a `Kind` under it (the engine
/// finds a step's kind in its registry by this value, and nothing else in the engine, the
/// graph's counts or the CLI names a kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepKind {
    name: &'static str,
    code: &'static str,
}

impl StepKind {
    /// A user's own command (`step` node), run on the host.
    pub const COMMAND: StepKind = StepKind::new("command", "command/1");
    pub const IMAGE: StepKind = StepKind::new("image", "image/1");
    // 2: the loading server runs with load-only settings (`DbSystem::load_options`)
    pub const DATASET: StepKind = StepKind::new("dataset", "dataset/2");
    pub const TRIAL: StepKind = StepKind::new("trial", "trial/1");
    // 2: a table's cells flag drift (Mann–Kendall across passes) and outlying passes, and
    // comparisons across campaigns are inconclusive
    // 3: a campaign is the run that measured a pass (with the study and the boot), no longer
    // every run of a study on one boot
    // 4: a comparison's bootstrap is seeded from its samples (a claim and its table's cell
    // print one CI); plots show every pass, per-series colours and log₂ thread axes
    pub const ANALYSIS: StepKind = StepKind::new("analysis", "analysis/4");
    // 2: sides measured in different campaigns (or on different classes of machine) leave a
    // claim undecided
    // 3: classes of machine are checked too, and a campaign is the run that measured a pass
    // 4: the bootstrap is seeded from the samples, as a table's cell is
    // 5: a claim states its meaning in words (`meaning`); bands (`about`, `tolerance`); sides
    // may name cells (`server[k=v]`, `block:server`)
    // 10: a claim over operations prints its α with three significant digits; `==` within
    // 11: a member of a claim over many fails only at α/m (a failure of any one counts)
    pub const CLAIM: StepKind = StepKind::new("claim", "claim/11");
    // 2: report.html, series.csv and the plot files joined the outputs
    // 3: data.json's trials say which campaign measured each
    // 4: data.json's campaigns name the run
    // 5: the intro's passes come from the trials; a claim's passes needed are said once
    // 6: a scaling table's reference point reads "×1 (reference)", not a CI around 1
    // 7: a headline first, the design (workload, dataset, driver, options, pass rule, dates),
    // data quality once, reasons in the HTML, CIs with their coverage; data.csv's layout
    // 8: a claim's line says its meaning; the design lists the plan's parameters
    pub const REPORT: StepKind = StepKind::new("report", "report/13");

    /// A kind called `name` whose code is at `code_version` (e.g. `"sleep/1"`): bump it when
    /// what the kind does changes meaningfully, and every key of that kind changes.
    pub const fn new(name: &'static str, code_version: &'static str) -> Self {
        StepKind {
            name,
            code: code_version,
        }
    }

    /// The kind's name, as addresses and selectors (`kind:trial`) spell it.
    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// Version of the code that performs this kind of step (part of every key).
    pub fn code_version(self) -> &'static str {
        self.code
    }
}

impl Serialize for StepKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
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
    /// Fully resolved definition (after defaults and `extends`), without names: the JSON of
    /// the kind's typed definition (`cairn_defs`), as it goes into the key. Read it with
    /// [`Step::image_def`], [`Step::dataset_def`], [`Step::trial_def`] or [`Step::def`].
    pub definition: serde_json::Value,
    /// Version of the code that performs this step, as it goes into the key: the kind's
    /// [`StepKind::code_version`], for trials with the driver's version once it is above 1
    /// ([`cairn_defs::trial_code`]).
    pub code: String,
    pub inputs: Vec<Input>,
    pub command: Option<CommandSpec>,
    /// The adaptive-passes rule of its trials block (`passes min max until-ci`), on every
    /// pass of such a block; never part of the key (a pass's key knows only its index, so
    /// raising `max` adds passes and keeps the earlier ones cached).
    pub adaptive: Option<AdaptivePasses>,
    /// The measurements this one is compared with (a trials block at one matrix point: every
    /// server, every pass), which must be measured together, in one campaign: the scheduler
    /// measures anew those of another campaign when some of them run (never in a key).
    pub together: Option<String>,
    /// [`crate::key::definition_key`]: blake3 of the definitions of this step and its
    /// ancestors — never their outputs, never the machine — so the same step is recognised
    /// across machines and rebuilds (filled by `resolve`).
    pub definition_key: String,
    /// Where it was declared, for diagnostics.
    pub loc: Loc,
}

/// The rule a trials block's passes follow (`passes min=3 max=12 until-ci="2%"`), and the
/// point a pass belongs to, so the scheduler can gather the passes before it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptivePasses {
    pub min: u32,
    pub max: u32,
    /// Target relative CI half-width (0.02 = 2%).
    pub until_ci: Option<f64>,
    /// `until="decided"`: the point's passes go on while a question the plan's tables and
    /// claims ask of its matrix point is undecided (the registry's rule decides).
    pub until_decided: bool,
    /// The figure whose CI is watched.
    pub metric: String,
    /// The point (one variant at one matrix point): the address without its `#pass`.
    pub point: String,
}

impl Step {
    /// A pass beyond its block's `min`: it runs only when the adaptive rule says its point
    /// needs it (the scheduler decides when its turn comes).
    pub fn is_conditional(&self) -> bool {
        self.adaptive.as_ref().is_some_and(|a| self.pass > a.min)
    }

    /// The definition read as `T`; the error names the step and what does not fit.
    pub fn def<T: DeserializeOwned>(&self) -> Result<T, String> {
        T::deserialize(&self.definition)
            .map_err(|e| format!("the definition of {}: {e}", self.address))
    }

    /// The definition of an image step (base or layer).
    pub fn image_def(&self) -> Result<ImageDef, String> {
        self.expect_kind(StepKind::IMAGE)?;
        self.def()
    }

    /// The definition of a dataset step (what to load, into which server).
    pub fn dataset_def(&self) -> Result<DatasetStepDef, String> {
        self.expect_kind(StepKind::DATASET)?;
        self.def()
    }

    /// The definition of a trial step (which server, which workload point).
    pub fn trial_def(&self) -> Result<TrialStepDef, String> {
        self.expect_kind(StepKind::TRIAL)?;
        self.def()
    }

    /// The server of a dataset or trial step; `None` for steps of other kinds, which start
    /// no server.
    pub fn server_def(&self) -> Result<Option<ServerDef>, String> {
        Ok(match self.kind {
            StepKind::DATASET => Some(self.dataset_def()?.server),
            StepKind::TRIAL => Some(self.trial_def()?.server),
            _ => None,
        })
    }

    fn expect_kind(&self, kind: StepKind) -> Result<(), String> {
        if self.kind == kind {
            Ok(())
        } else {
            Err(format!(
                "{} is a {} step, not a {} step",
                self.address,
                self.kind.as_str(),
                kind.as_str()
            ))
        }
    }
}
