//! The factors of a trials block beyond its workload's matrix — its host settings
//! (`io-scheduler "none" "mq-deadline"`, `sysctl "vm.swappiness" 10 60`) — as axes of its
//! trials: their values multiply the workload's points, appear in the trials' addresses and
//! `params` (where tables, `where`, plots and claims read them), and go into the trial's own
//! definition (`TrialStepDef::host`), never into the workload's (the driver must not see
//! them). A block without them resolves exactly as before.

use std::collections::BTreeMap;

use cairn_defs::HostSettingDef;
use cairn_plan::{Param, Trials, Value, Workload};

use crate::expand;

/// Every axis of the block's trials: the workload's, then its host settings'.
fn axes(t: &Trials, w: &Workload) -> Vec<Param> {
    w.params.iter().chain(t.host_axes()).cloned().collect()
}

/// The block's trial points: the workload's matrix points times its host settings' values.
pub(crate) fn trial_points(t: &Trials, w: &Workload) -> Vec<BTreeMap<String, Value>> {
    expand::points(&axes(t, w))
}

/// The names of the axes its addresses show (those with more than one value).
pub(crate) fn shown_axes(t: &Trials, w: &Workload) -> Vec<String> {
    expand::varying_axes(&axes(t, w))
        .into_iter()
        .map(String::from)
        .collect()
}

/// The workload's own part of a trial point: what its driver is given.
pub(crate) fn workload_point(
    w: &Workload,
    point: &BTreeMap<String, Value>,
) -> BTreeMap<String, Value> {
    point
        .iter()
        .filter(|(k, _)| w.params.iter().any(|p| p.name.value == **k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The host settings of a trial point, in the order the block writes them.
pub(crate) fn host_settings(t: &Trials, point: &BTreeMap<String, Value>) -> Vec<HostSettingDef> {
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
