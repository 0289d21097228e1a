//! What a run is given from outside, passed rather than global: the store, the study, this
//! machine's fingerprint and local directories, the step kinds, the server runtimes (with the
//! container engine) and the run's cancellation. Two runs (or two executors) in one process
//! each have their own.

use std::path::Path;

use cairn_exec::cancel::CancelToken;
use cairn_exec::docker::Docker;
use cairn_exec::process::WorkDirs;
use cairn_exec::runtime::Runtimes;
use cairn_graph::Fingerprint;
use cairn_store::Store;

use crate::kind::{Registry, Requirement};

/// A run's (or a status report's) view of the world.
pub struct Env<'a> {
    pub study: &'a str,
    pub store: &'a Store,
    /// This machine's fingerprint: measurement keys carry it.
    pub fingerprint: &'a Fingerprint,
    /// The exact facts of this machine behind the fingerprint (recorded beside each
    /// measurement as `extra.machine`, never keyed); `null` when not probed.
    pub machine: &'a serde_json::Value,
    /// The kinds of step this run can perform.
    pub kinds: &'a Registry,
    /// The machine-local cache directory (dataset snapshots, debootstrap downloads).
    pub cache_root: &'a Path,
    /// Where command steps get their working directories (reused from step to step).
    pub work: &'a WorkDirs,
    /// The Debian mirror for base images, if given (`--mirror`); else the environment or apt.
    pub mirror: Option<&'a str>,
    /// The plan's lock: the package versions its images must have (`cairn lock`).
    pub lock: Option<&'a cairn_defs::Lock>,
    /// This process's run id: containers and networks it starts carry it as a label.
    pub run_id: &'a str,
    /// The server runtimes by name, with the lazily connected container engine they share
    /// and the run's cancellation (set when the run is to stop, e.g. Ctrl-C; steps poll it).
    pub runtimes: &'a Runtimes,
}

impl Env<'_> {
    /// Whether this machine offers `need` now; the error says why not and what to do.
    pub fn available(&self, need: &Requirement) -> Result<(), String> {
        match need {
            Requirement::ContainerEngine => self
                .container_engine()
                .map(|_| ())
                .map_err(|e| format!("image steps need a running Docker Engine: {e}")),
            Requirement::ServerRuntime(name) => self.runtimes.get(name)?.available(),
        }
    }

    /// The container engine, connected on first use; the error says how to start one. The
    /// throwaway containers it creates (image layers, probes) carry this run's label.
    pub fn container_engine(&self) -> Result<Docker, String> {
        self.runtimes
            .container_engine()
            .map(|d| d.for_run(self.run_id))
    }

    /// The run's cancellation.
    pub fn cancel(&self) -> &CancelToken {
        self.runtimes.cancel()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel().is_cancelled()
    }
}
