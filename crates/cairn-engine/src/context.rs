//! What a run is given from outside, passed rather than global: the store, the study, this
//! machine's fingerprint, the step kinds and the machine itself ([`Host`]). Two runs (or two
//! executors) in one process each have their own.

use std::any::Any;
use std::collections::HashMap;

use cairn_graph::{Fingerprint, Step, StepId};
use cairn_store::Store;

use crate::kind::Registry;

/// What the engine needs of the machine a run is on — whether the run is to stop — and, for
/// the step kinds, their own view of it (server runtimes, the container engine, the
/// machine-local directories), which the engine carries without reading.
pub trait Host: Send + Sync {
    /// Whether the run is to stop (Ctrl-C, SIGTERM): steps poll it.
    fn is_cancelled(&self) -> bool;

    /// The step kinds' view of this machine, for them to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// A run's (or a status report's) view of the world.
pub struct Env<'a> {
    pub study: &'a str,
    pub store: &'a Store,
    /// This machine's fingerprint: measurement keys carry it.
    pub fingerprint: &'a Fingerprint,
    /// For a command that only reads measurements (`report`, `bundle`): the machine class
    /// each measured step was measured on, where that is not `fingerprint` — a study measured
    /// in parts, on several machines. `None` for a run: it measures here.
    pub read_classes: Option<&'a HashMap<StepId, Fingerprint>>,
    /// The exact facts of this machine behind the fingerprint (recorded beside each
    /// measurement as `extra.machine`, never keyed); `null` when not probed.
    pub machine: &'a serde_json::Value,
    /// The kinds of step this run can perform.
    pub kinds: &'a Registry,
    /// The plan's lock: the package versions its images must have (`cairn lock`).
    pub lock: Option<&'a cairn_defs::Lock>,
    /// This process's run id: what it starts on the machine carries it as a label.
    pub run_id: &'a str,
    /// The machine.
    pub host: &'a dyn Host,
}

impl Env<'_> {
    pub fn is_cancelled(&self) -> bool {
        self.host.is_cancelled()
    }

    /// The fingerprint `step`'s key carries: the class it is read from
    /// ([`Env::read_classes`]), else this machine's.
    pub fn fingerprint_of(&self, step: &Step) -> &Fingerprint {
        self.read_classes
            .and_then(|m| m.get(&step.id))
            .unwrap_or(self.fingerprint)
    }
}
