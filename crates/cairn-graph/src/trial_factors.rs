//! The points a trials block measures: its workload's matrix times the block's own factors —
//! its host settings (`io-scheduler "none" "mq-deadline"`, `sysctl "vm.swappiness" 10 60`)
//! and its CPUs (`cpus 1 2`). A factor's value is a parameter of the trial (its address,
//! `params`, what tables, `where`, plots and claims select by) and goes into its own field of
//! the trial's definition (`TrialStepDef::host`, `cpus`, `cpuset`), never into the workload's
//! parameters: the driver does not see it, and a block without factors resolves exactly as
//! before.

use std::collections::BTreeMap;

use cairn_defs::HostSettingDef;
use cairn_plan::trial_cpus::{self, CpuChoice};
use cairn_plan::{Param, Trials, Value, Workload};

use crate::expand;

/// The block's axes written as parameters: the workload's, then its host settings'.
fn axes(t: &Trials, w: &Workload) -> Vec<Param> {
    w.params.iter().chain(t.host_axes()).cloned().collect()
}

/// Every point of block `t`: the workload's matrix points times its host settings' values,
/// each once per CPU choice.
pub fn trial_points(t: &Trials, w: &Workload) -> Vec<BTreeMap<String, Value>> {
    trial_cpus::with_factor(t, expand::points(&axes(t, w)))
        .into_iter()
        // a tie (`tie "threads" to="cpus"`) measures only the points it pairs
        .filter(|p| cairn_plan::trial_ties::keeps(t, p))
        .collect()
}

/// The names of the axes its addresses show (those with more than one value): the
/// workload's, its host settings', then its CPUs.
pub fn shown_axes(t: &Trials, w: &Workload) -> Vec<String> {
    let axes = axes(t, w);
    let mut shown: Vec<String> = expand::varying_axes(&axes)
        .into_iter()
        .map(String::from)
        .collect();
    if t.cpus.len() > 1 {
        shown.push(trial_cpus::FACTOR.to_string());
    }
    shown
}

/// The workload's own part of a trial point: what its driver is given.
pub fn workload_point(w: &Workload, point: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    point
        .iter()
        .filter(|(k, _)| w.params.iter().any(|p| p.name.value == **k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The host settings of a trial point, in the order the block writes them.
pub fn host_settings(t: &Trials, point: &BTreeMap<String, Value>) -> Vec<HostSettingDef> {
    t.host
        .iter()
        .filter_map(|h| {
            Some(HostSettingDef {
                knob: h.knob.value.clone(),
                value: point.get(&h.axis.name.value)?.to_string(),
            })
        })
        .collect()
}

/// The number of CPUs block `t` gives the server at `point`, if its factor says a count.
pub fn cpu_count(t: &Trials, point: &BTreeMap<String, Value>) -> Option<u32> {
    match &trial_cpus::choice_at(t, point)?.value {
        CpuChoice::Count(n) => Some(*n),
        CpuChoice::Set { .. } => None,
    }
}

/// The cpuset block `t` gives the server at `point`, if its factor names a set.
pub fn cpu_set(t: &Trials, point: &BTreeMap<String, Value>) -> Option<String> {
    match &trial_cpus::choice_at(t, point)?.value {
        CpuChoice::Set { cpus, .. } => Some(cpus.clone()),
        CpuChoice::Count(_) => None,
    }
}
