//! The points a trials block measures: its workload's matrix times the block's own factors
//! (`cpus 1 2`). A factor's value is a parameter of the trial (its address, `params`, what
//! tables and claims select by) and goes into its own field of the trial's definition, never
//! into the workload's parameters: the driver does not see it, and a block without factors
//! resolves exactly as before.

use std::collections::BTreeMap;

use cairn_plan::trial_cpus::{self, CpuChoice};
use cairn_plan::{Trials, Value, Workload};

use crate::expand;

/// Every point of block `t`: the workload's matrix points, each once per CPU count.
pub fn trial_points(t: &Trials, w: &Workload) -> Vec<BTreeMap<String, Value>> {
    trial_cpus::with_factor(t, expand::points(&w.params))
}

/// The axes with more than one value (shown in addresses): the workload's, then the block's
/// factors.
pub fn varying_axes<'a>(t: &Trials, w: &'a Workload) -> Vec<&'a str> {
    let mut axes = expand::varying_axes(&w.params);
    if t.cpus.len() > 1 {
        axes.push(trial_cpus::FACTOR);
    }
    axes
}

/// The workload's part of a point of block `t`: without the block's factors.
pub fn workload_point(t: &Trials, point: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let mut p = point.clone();
    if !t.cpus.is_empty() {
        p.remove(trial_cpus::FACTOR);
    }
    p
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
