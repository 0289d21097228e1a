//! Step kinds behind one trait: whether a kind's steps can run here, whether a record of one
//! can still serve, and how to perform one. The scheduler and the status report hold a
//! [`Registry`] and never name a kind; the kinds themselves live in `cairn-kinds`.
//!
//! Adding a kind of step: a type that implements [`Kind`], registered in `cairn-kinds`'
//! standard registry (plus, if the plan language gains a node for it, its parser in
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

/// Why a record found under a step's key cannot serve on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// A stable word for what is missing, e.g. `image_missing`, `snapshot_missing`.
    pub what: &'static str,
    /// For a person: what to do about it is implied (the step runs again).
    pub why: String,
}

/// What a kind's check found wrong with a step's definition, before anything runs: which
/// part of the definition (`what`: `option`, `env`, `server`, `dataset`, `driver`,
/// `workload`, `analysis`, `claim`, `property` of a `step "…" kind="…"`, … and the `name`
/// under it; both empty when no one part is to blame) and why. The CLI places it at that
/// part of the plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CheckError {
    pub what: &'static str,
    pub name: String,
    pub message: String,
}

impl CheckError {
    pub fn new(what: &'static str, name: impl Into<String>, message: impl Into<String>) -> Self {
        CheckError {
            what,
            name: name.into(),
            message: message.into(),
        }
    }
}

/// A note on a step for `cairn plan`, of its kind's own making: the engine carries it and
/// never reads it (an image's package changes, a source build coming). In JSON it is a
/// reason like the engine's own: `{"reason": "<note>", …details}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Note {
    /// A stable word for the note, e.g. `packages_changed`, `source_build`.
    #[serde(rename = "reason")]
    pub note: &'static str,
    /// For a person: one line.
    #[serde(skip)]
    pub text: String,
    /// Its details, as the kind put them.
    #[serde(flatten)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// One kind of step.
pub trait Kind: Send + Sync {
    /// Check the step's definition before anything runs (`cairn check`, `plan`, `run`): what
    /// would fail it for its parameters fails here, naming the parameter where it can.
    fn check(&self, _graph: &StepGraph, _step: &Step) -> Result<(), CheckError> {
        Ok(())
    }

    /// Why a step of this kind cannot run on this machine now (no container engine, no
    /// such server runtime), or `None` when it can. A step that would run is then blocked;
    /// one served from the store needs nothing.
    fn unavailable(&self, _env: &Env<'_>, _step: &Step) -> Option<String> {
        None
    }

    /// What the step's design cannot do whatever is measured, said by `check`, `plan` and
    /// `run` before anything is (a claim over many values whose passes can never decide it
    /// at the level each value is checked at). Each is a warning, not an error.
    fn design_warnings(&self, _graph: &StepGraph, _step: &Step) -> Vec<String> {
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

    /// The campaign `record` was measured in — the study and the machine instance (since
    /// its boot) that made it — for a measurement compared with others (`Step::together`),
    /// which must be measured in one campaign with them; `None` for any other step.
    fn campaign(&self, _record: &Record) -> Option<String> {
        None
    }

    /// The campaign a step of this kind measured in this run belongs to (as
    /// [`Kind::campaign`] names it).
    fn campaign_now(&self, _env: &Env<'_>) -> Option<String> {
        None
    }

    /// Notes on a cached record for `cairn plan` (e.g. an image's package changes).
    fn notes(&self, _record: &Record) -> Vec<Note> {
        Vec::new()
    }

    /// Notes for `cairn plan` on a step that will run (e.g. a source build is coming, and
    /// how long the last similar one took).
    fn coming(&self, _env: &Env<'_>, _step: &Step) -> Vec<Note> {
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

/// The kinds a run can perform, by the graph's step kind, and the rule that decides whether
/// a conditional pass runs.
#[derive(Default)]
pub struct Registry {
    kinds: HashMap<StepKind, Box<dyn Kind>>,
    /// The kinds a plan may declare steps of with `step "…" kind="…"`.
    plan_steps: Vec<StepKind>,
    passes: Option<Box<dyn crate::adaptive::PassRule>>,
}

impl Registry {
    /// No kinds at all (tests register fakes).
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// This registry with `kind` performing the graph's `step_kind` steps (replacing any).
    pub fn with(mut self, step_kind: StepKind, kind: impl Kind + 'static) -> Registry {
        self.kinds.insert(step_kind, Box::new(kind));
        self
    }

    /// This registry with `kind` performing `step_kind` steps that plans declare themselves:
    /// `step "name" kind="<name>" key=value …`, the properties its definition (the route
    /// for a new kind that needs no node of its own in the plan language).
    pub fn with_plan_step(mut self, step_kind: StepKind, kind: impl Kind + 'static) -> Registry {
        self.plan_steps.retain(|k| k.as_str() != step_kind.as_str());
        self.plan_steps.push(step_kind);
        self.with(step_kind, kind)
    }

    /// The kinds plans may declare steps of (`step "…" kind="…"`), with their code versions.
    pub fn plan_step_kinds(&self) -> &[StepKind] {
        &self.plan_steps
    }

    /// This registry deciding conditional passes with `rule` (without one, every pass runs).
    pub fn with_pass_rule(mut self, rule: impl crate::adaptive::PassRule + 'static) -> Registry {
        self.passes = Some(Box::new(rule));
        self
    }

    /// The kind that performs `step`, if any can.
    pub fn get(&self, step: &Step) -> Option<&dyn Kind> {
        self.kinds.get(&step.kind).map(Box::as_ref)
    }

    /// The rule deciding conditional passes, if any.
    pub fn pass_rule(&self) -> Option<&dyn crate::adaptive::PassRule> {
        self.passes.as_deref()
    }

    /// The step kinds it performs, by name, sorted.
    pub fn kind_names(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.kinds.keys().map(|k| k.as_str()).collect();
        v.sort_unstable();
        v
    }
}
