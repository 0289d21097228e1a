//! cairn-kinds: the step kinds the engine core runs — a user's command, an image, a
//! dataset, a trial, an analysis, a claim and a report — each a type implementing
//! [`cairn_engine::Kind`], and the machine they run on ([`Host`]: the server runtimes with the
//! container engine, the working directories of commands, the machine-local cache). The
//! engine carries the host without reading it; each kind takes it back with [`host`].

pub mod adaptive;
pub mod analysis_step;
pub mod build_check;
pub mod claim_forms;
pub mod claim_step;
pub mod command_step;
pub mod data_csv;
pub mod dataset_step;
pub mod decided_rule;
pub mod image_step;
pub mod option_names;
pub mod plot_analysis;
pub mod profile_analysis;
pub mod report_document;
pub mod report_lifecycle;
pub mod report_other_work;
pub mod report_step;
pub mod series_csv;
pub mod series_plot;
pub mod server_run;
pub mod tools;
pub mod trial_cpus;
pub mod trial_efficiency;
pub mod trial_host;
pub mod trial_points;
pub mod trial_profile;
pub mod trial_runs;
pub mod trial_settle;
pub mod trial_step;
pub mod trial_watchdog;

use std::any::Any;
use std::path::PathBuf;

use cairn_engine::{Env, FailureClass, Registry, StepError};
use cairn_exec::cancel::CancelToken;
use cairn_exec::command_runner::WorkDirs;
use cairn_exec::docker::Docker;
use cairn_exec::runtime::Runtimes;
use cairn_graph::{Step, StepKind};

/// What the step kinds need of the machine a run is on.
pub struct Host {
    /// The server runtimes by name, with the lazily connected container engine they share
    /// with image steps, and the run's cancellation (Ctrl-C trips it; it ends the child
    /// process groups registered with it).
    pub runtimes: Runtimes,
    /// Where command steps get their working directories (reused from step to step).
    pub work: WorkDirs,
    /// The machine-local cache directory (dataset snapshots, debootstrap downloads).
    pub cache_root: PathBuf,
    /// The Debian mirror for base images, if given (`--mirror`); else the environment or apt.
    pub mirror: Option<String>,
}

impl Host {
    /// A host whose cache is `cache_root` (working directories under its `work/`), whose
    /// runs stop when `cancel` is tripped.
    pub fn new(cache_root: PathBuf, cancel: CancelToken) -> Host {
        Host {
            runtimes: Runtimes::new(cancel),
            work: WorkDirs::new(cache_root.join("work")),
            cache_root,
            mirror: None,
        }
    }

    /// The container engine, connected on first use; the error says how to start one.
    pub fn container_engine(&self) -> Result<Docker, String> {
        self.runtimes.container_engine()
    }

    /// The run's cancellation.
    pub fn cancel(&self) -> &CancelToken {
        self.runtimes.cancel()
    }
}

impl cairn_engine::Host for Host {
    fn is_cancelled(&self) -> bool {
        self.runtimes.cancel().is_cancelled()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The kinds' host of `env`: every run the CLI makes carries one.
pub fn host<'a>(env: &'a Env<'_>) -> &'a Host {
    env.host
        .as_any()
        .downcast_ref::<Host>()
        .expect("the step kinds run with cairn_kinds::Host as the engine's host")
}

/// The container engine, connected on first use, whose throwaway containers (image
/// layers, probes) carry this run's label; the error says how to start one.
pub fn container_engine(env: &Env<'_>) -> Result<Docker, String> {
    host(env).container_engine().map(|d| d.for_run(env.run_id))
}

/// Every kind cairn can perform today, and the rule for conditional passes.
pub fn standard_registry() -> Registry {
    Registry::empty()
        .with(StepKind::COMMAND, command_step::CommandKind)
        .with(StepKind::IMAGE, image_step::ImageKind)
        .with(StepKind::DATASET, dataset_step::DatasetKind)
        .with(StepKind::TRIAL, trial_step::TrialKind)
        .with(StepKind::ANALYSIS, analysis_step::AnalysisKind)
        .with(StepKind::CLAIM, claim_step::ClaimKind)
        .with(StepKind::REPORT, report_step::ReportKind)
        .with_pass_rule(adaptive::PassRules::default())
}

/// The kinds of [`standard_registry`] that plans declare steps of themselves
/// (`step "…" kind="…"`), with their code versions: what the plan's resolution and
/// `cairn check`'s vocabulary read.
pub fn plan_step_kinds() -> Vec<StepKind> {
    standard_registry().plan_step_kinds().to_vec()
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
    /// Why it is not met on `host` now, if it is not.
    pub fn unmet(&self, host: &Host) -> Option<String> {
        match self {
            Requirement::ContainerEngine => host
                .container_engine()
                .err()
                .map(|e| format!("image steps need a running Docker Engine: {e}")),
            Requirement::ServerRuntime(name) => {
                host.runtimes.get(name).and_then(|r| r.available()).err()
            }
        }
    }

    /// Whether it is met through the container engine (measurements that need it record
    /// the engine's version in their fingerprint).
    pub fn in_container_engine(&self, runtimes: &Runtimes) -> bool {
        match self {
            Requirement::ContainerEngine => true,
            Requirement::ServerRuntime(name) => {
                runtimes.get(name).is_ok_and(|r| r.uses_container_engine())
            }
        }
    }
}

/// What `step` needs of this machine, by its kind.
pub fn requirements(step: &Step) -> Vec<Requirement> {
    match step.kind {
        StepKind::IMAGE => vec![Requirement::ContainerEngine],
        StepKind::DATASET | StepKind::TRIAL => vec![dataset_step::server_runtime(step)],
        _ => Vec::new(),
    }
}

/// Whether a step uses the container engine on this machine (an image build, or a server in
/// a container): its measurements then carry the engine's version in the fingerprint.
pub fn uses_container_engine(runtimes: &Runtimes, step: &Step) -> bool {
    requirements(step)
        .iter()
        .any(|need| need.in_container_engine(runtimes))
}

/// A failed command of the process executor as a step's failure (cancelled when it was).
pub fn exec_error(e: cairn_exec::command_runner::ExecError) -> StepError {
    let class = match &e {
        cairn_exec::command_runner::ExecError::Cancelled => FailureClass::Cancelled,
        _ => FailureClass::Permanent,
    };
    StepError::from_error(class, &e)
}

/// A container engine's failure as a step's: transient when the engine could not be
/// reached or hiccuped ([`cairn_exec::docker::DockerError::is_transient`]), else permanent.
pub fn docker_error(e: cairn_exec::docker::DockerError) -> StepError {
    let class = if e.is_transient() {
        FailureClass::Transient
    } else {
        FailureClass::Permanent
    };
    StepError::from_error(class, &e)
}

/// A check error of a driver or database system, as the engine's: which part of the
/// definition, and why.
pub fn check_error(e: cairn_workload::Error) -> cairn_engine::CheckError {
    match e {
        cairn_workload::Error::Param {
            what,
            name,
            message,
        } => cairn_engine::CheckError::new(what, name, message),
        other => cairn_engine::CheckError::new("", "", other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exec_cancellation_is_a_cancellation() {
        let s = super::exec_error(cairn_exec::command_runner::ExecError::Cancelled);
        assert!(s.is_cancelled());
        let s = super::exec_error(cairn_exec::command_runner::ExecError::MissingOutput(
            "o".into(),
        ));
        assert_eq!(s.class, cairn_engine::FailureClass::Permanent);
    }
}
