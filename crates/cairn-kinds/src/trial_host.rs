//! A trial's host settings (`io-scheduler`, `transparent-hugepages`, `sysctl`, `sysfs` in its
//! trials block, in `TrialStepDef::host`): checked before anything runs (`cairn check`: the
//! file exists, the value is one it offers, it is writable, cairn runs as root), set after
//! the trial takes the machine's measurement lock and before its server starts, restored
//! after the server stops — or when the trial fails or is cancelled, by the guard's drop.
//! The host settings are the machine's whatever runtime runs the server, so both the
//! container and the process runtime take them; the I/O scheduler is that of the disk
//! holding the server's data: the container engine's data root (`DockerRootDir`), or the
//! temp directory where the process runtime makes its datadirs.

use std::path::PathBuf;

use cairn_engine::error::{failed, StepError};
use cairn_engine::{CheckError, Env};
use cairn_exec::host_settings::{self, HostSettingsGuard};
use cairn_exec::runtime::Runtimes;
use cairn_graph::Step;
use serde_json::{json, Value};

use crate::server_run::ServerDef;

/// The directory holding a server's data on this machine: the engine's data root for the
/// `docker` executor (its default where the engine cannot be asked), the temp directory
/// for the `process` one.
pub fn data_dir(runtimes: &Runtimes, sdef: &ServerDef) -> PathBuf {
    if sdef.executor_or_default() == "process" {
        return std::env::temp_dir();
    }
    runtimes
        .container_engine()
        .and_then(|d| d.root_dir().map_err(|e| e.to_string()))
        .unwrap_or_else(|_| PathBuf::from("/var/lib/docker"))
}

/// Why the trial's servers do not run on this machine, whose settings cairn sets: a
/// container engine reached over the network (`DOCKER_HOST=tcp://…`).
fn elsewhere(sdef: &ServerDef) -> Option<String> {
    if sdef.executor_or_default() == "process" {
        return None;
    }
    let engine = cairn_exec::docker::docker_host();
    (!engine.starts_with("unix://")).then(|| {
        format!(
            "the container engine is not on this machine (DOCKER_HOST={engine}): host settings are set where cairn runs, and its servers run elsewhere"
        )
    })
}

/// [`data_dir`] when a setting needs it (the I/O scheduler: its disk), else empty — so a
/// trial setting only a sysctl never asks the container engine.
fn data_dir_if_needed(
    runtimes: &Runtimes,
    sdef: &ServerDef,
    settings: &[cairn_defs::HostSettingDef],
) -> PathBuf {
    if settings
        .iter()
        .any(|s| s.knob == cairn_defs::HostKnob::IoScheduler)
    {
        data_dir(runtimes, sdef)
    } else {
        PathBuf::new()
    }
}

/// `cairn check`: whether this machine can set each of the trial's host settings. The error
/// names the setting and its value (`io-scheduler=cfq`), where the plan writes it.
pub fn check(step: &Step) -> Result<(), CheckError> {
    let def = step.trial_def().map_err(|e| CheckError::new("", "", e))?;
    if def.host.is_empty() {
        return Ok(());
    }
    if let Some(why) = elsewhere(&def.server) {
        let s = &def.host[0];
        return Err(CheckError::new(
            "host",
            format!("{}={}", s.knob.describe(), s.value),
            why,
        ));
    }
    // every trial of a plan asks the same engine: ask it once
    static CHECKED_DATA: std::sync::OnceLock<(String, PathBuf)> = std::sync::OnceLock::new();
    let executor = def.server.executor_or_default().to_string();
    let data = match CHECKED_DATA.get() {
        Some((e, d)) if *e == executor => d.clone(),
        _ => {
            let d = data_dir_if_needed(Runtimes::registered(), &def.server, &def.host);
            if !d.as_os_str().is_empty() {
                let _ = CHECKED_DATA.set((executor, d.clone()));
            }
            d
        }
    };
    for s in &def.host {
        host_settings::check(&s.knob, &s.value, &data).map_err(|e| {
            CheckError::new("host", format!("{}={}", s.knob.describe(), s.value), e)
        })?;
    }
    Ok(())
}

/// Set the trial's host settings (it holds the measurement lock); the guard restores them.
pub fn apply(ctx: &Env<'_>, step: &Step, sdef: &ServerDef) -> Result<InPlace, StepError> {
    let def = step.trial_def().map_err(StepError::permanent)?;
    if def.host.is_empty() {
        return Ok(InPlace {
            guard: None,
            data: PathBuf::new(),
        });
    }
    if let Some(why) = elsewhere(sdef) {
        return Err(StepError::permanent(why));
    }
    let data = data_dir_if_needed(&crate::host(ctx).runtimes, sdef, &def.host);
    let guard = HostSettingsGuard::apply(&def.host, &data, ctx.run_id)
        .map_err(|e| StepError::permanent(format!("setting the host: {e}")))?;
    Ok(InPlace {
        guard: Some(guard),
        data,
    })
}

/// A trial's host settings in place (none for a trial without them).
pub struct InPlace {
    guard: Option<HostSettingsGuard>,
    data: PathBuf,
}

impl InPlace {
    /// Restore the settings after the trial and say what was in place, for its record
    /// (`extra.host_settings`; `None` without settings). A setting that could not be restored
    /// fails the trial: the machine is no longer what the next measurement expects.
    pub fn restore(mut self) -> Result<Option<Value>, StepError> {
        let Some(mut guard) = self.guard.take() else {
            return Ok(None);
        };
        let applied = guard.applied().to_vec();
        let leftovers = std::mem::take(&mut guard.leftovers);
        let errors = guard.restore();
        if !errors.is_empty() {
            return Err(failed(format!(
                "the host settings could not all be restored after the trial: {}; `cairn clean` tries again",
                errors.join("; ")
            )));
        }
        let mut record = json!({ "settings": applied, "restored": true });
        if !self.data.as_os_str().is_empty() {
            record["data_dir"] = json!(self.data);
        }
        if !leftovers.is_empty() {
            // the machine was found with a killed run's settings, put back before this trial
            record["restored_first"] = json!(leftovers);
        }
        Ok(Some(record))
    }
}
