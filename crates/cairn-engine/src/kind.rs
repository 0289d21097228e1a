//! Step kinds behind one trait: what a kind of step needs, whether a record of it can still
//! serve on this machine, and how to perform it. The scheduler and the status report hold a
//! [`Registry`] and never name a kind.
//!
//! Adding a kind of step: a module with a type that implements [`Kind`], and one line in
//! [`Registry::standard`] (plus, if the plan language gains a node for it, its parser in
//! `cairn-plan` and its resolution into steps in `cairn-graph`).

use std::collections::HashMap;

use cairn_graph::{Step, StepGraph, StepKind};
use cairn_store::Record;

use crate::context::Env;
use crate::error::StepError;
use crate::execute::{Built, Done};

/// Where a step runs in the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Beside other build steps, up to `--jobs` at once.
    Build,
    /// Alone: nothing else runs while it does (measurements), in the seeded order.
    Exclusive,
}

/// Something of this machine a step cannot run without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// The container engine (images are built in it).
    ContainerEngine,
    /// The server runtime of this name (`docker`, `process`), for steps that start a server.
    ServerRuntime(String),
}

impl Requirement {
    /// Whether it is met through the container engine (measurements that need it record
    /// the engine's version in their fingerprint).
    pub fn in_container_engine(&self, runtimes: &cairn_exec::runtime::Runtimes) -> bool {
        match self {
            Requirement::ContainerEngine => true,
            Requirement::ServerRuntime(name) => {
                runtimes.get(name).is_ok_and(|r| r.uses_container_engine())
            }
        }
    }
}

/// Why a record found under a step's key cannot serve on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// A stable word for what is missing, e.g. `image_missing`, `snapshot_missing`.
    pub what: &'static str,
    /// For a person: what to do about it is implied (the step runs again).
    pub why: String,
}

/// One kind of step.
pub trait Kind: Send + Sync {
    /// Check the step's definition before anything runs (`cairn check`, `plan`, `run`): what
    /// would fail it for its parameters fails here, naming the parameter where it can.
    fn check(&self, _graph: &StepGraph, _step: &Step) -> Result<(), cairn_workload::Error> {
        Ok(())
    }

    /// What the step needs of this machine; a step whose requirement is not met is blocked.
    fn requires(&self, _step: &Step) -> Vec<Requirement> {
        Vec::new()
    }

    /// Which lane the step runs in: measurements alone, everything else beside each other.
    fn lane(&self, step: &Step) -> Lane {
        if step.measure {
            Lane::Exclusive
        } else {
            Lane::Build
        }
    }

    /// Whether `record` (under the step's key, its blobs present) can stand for the step's
    /// result here, from what the record itself says: e.g. the plan's lock accepts the
    /// packages the image recorded, a trial's window did not stall. Asked of every step
    /// found in the store.
    fn accepts(&self, _env: &Env<'_>, _record: &Record) -> Result<(), Unusable> {
        Ok(())
    }

    /// Whether what `record` made is still on this machine for a step that reads it: e.g.
    /// the image is still in the engine, the snapshot still in the cache. Asked only when a
    /// step that reads it is about to run, so a run whose every step is served from the
    /// store needs neither the engine nor the cache; when it says no, the step runs again.
    fn present(&self, _env: &Env<'_>, _record: &Record) -> Result<(), Unusable> {
        Ok(())
    }

    /// Notes on a cached record for `cairn plan` (e.g. an image's package changes).
    fn notes(&self, _record: &Record) -> Vec<crate::status::Reason> {
        Vec::new()
    }

    /// Notes for `cairn plan` on a step that will run (e.g. a source build is coming, and
    /// how long the last similar one took).
    fn coming(&self, _env: &Env<'_>, _step: &Step) -> Vec<crate::status::Reason> {
        Vec::new()
    }

    /// Do the step's work: its outputs go into the store, and come back with the record's
    /// `extra`. Recording is the caller's job (blobs first, record last).
    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError>;
}

/// The kinds a run can perform, by the graph's step kind.
#[derive(Default)]
pub struct Registry {
    kinds: HashMap<StepKind, Box<dyn Kind>>,
}

impl Registry {
    /// No kinds at all (tests register fakes).
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// Every kind cairn can perform today.
    pub fn standard() -> Registry {
        Registry::empty()
            .with(StepKind::Command, crate::command_step::CommandKind)
            .with(StepKind::Image, crate::image_step::ImageKind)
            .with(StepKind::Dataset, crate::dataset_step::DatasetKind)
            .with(StepKind::Trial, crate::trial_step::TrialKind)
            .with(StepKind::Analysis, crate::analysis_step::AnalysisKind)
            .with(StepKind::Claim, crate::claim_step::ClaimKind)
            .with(StepKind::Report, crate::report_step::ReportKind)
    }

    /// This registry with `kind` performing the graph's `step_kind` steps (replacing any).
    pub fn with(mut self, step_kind: StepKind, kind: impl Kind + 'static) -> Registry {
        self.kinds.insert(step_kind, Box::new(kind));
        self
    }

    /// The kind that performs `step`, if any can.
    pub fn get(&self, step: &Step) -> Option<&dyn Kind> {
        self.kinds.get(&step.kind).map(Box::as_ref)
    }
}
