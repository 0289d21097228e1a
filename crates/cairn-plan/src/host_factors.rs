//! A trials block's host settings as factors (`io-scheduler "none" "mq-deadline"`,
//! `transparent-hugepages`, `sysctl "vm.swappiness" 10 60`, `sysfs "/sys/…" "a" "b"`): each is
//! an axis whose values multiply the workload's matrix points, named in addresses, tables,
//! `where` and claims like a workload parameter, but set on the host around the trial rather
//! than handed to the driver. Parsed in `parse/host_factor_nodes.rs`; what the machine can
//! set is checked by the trial kind (`cairn check`), not here.

use serde::{Deserialize, Serialize};

use crate::diagnostics::{problem, Reporter};
use crate::model::{Param, Plan, Sp, Trials, Value};

pub use cairn_defs::HostKnob;

/// One host setting of a trials block: what it sets, and its axis (name and values).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostFactor {
    pub knob: Sp<HostKnob>,
    pub axis: Param,
}

impl Trials {
    /// The axes its host settings add to its workload's matrix, in the order written.
    pub fn host_axes(&self) -> impl Iterator<Item = &Param> {
        self.host.iter().map(|h| &h.axis)
    }

    /// Every axis of its trials, each with its values where they are written: its workload's
    /// parameters, its host settings, then its `cpus` factor.
    pub(crate) fn axes<'p>(&'p self, plan: &'p Plan) -> Vec<(&'p str, Vec<Sp<Value>>)> {
        let workload = plan
            .workloads
            .iter()
            .find(|w| w.name.value == self.workload.value);
        let mut axes: Vec<(&str, Vec<Sp<Value>>)> = workload
            .into_iter()
            .flat_map(|w| &w.params)
            .chain(self.host_axes())
            .map(|p| (p.name.value.as_str(), p.values.clone()))
            .collect();
        if !self.cpus.is_empty() {
            let values = self
                .cpus
                .iter()
                .map(|c| Sp::new(c.value.value(), c.loc))
                .collect();
            axes.push((crate::trial_cpus::FACTOR, values));
        }
        axes
    }
}

/// Where block `t` writes the host setting's value `name` (`io-scheduler=cfq`, `sysctl
/// vm.swappiness=10`: [`HostKnob::describe`], `=`, the value), for a check's diagnostic.
pub fn value_loc(t: &Trials, name: &str) -> Option<crate::Loc> {
    t.host.iter().find_map(|h| {
        let knob = h.knob.value.describe();
        let value = name.strip_prefix(&knob)?.strip_prefix('=')?;
        h.axis
            .values
            .iter()
            .find(|v| v.value.to_string() == value)
            .map(|v| v.loc)
    })
}

/// Refuses a setting a block sets twice, and, at its name, a host setting's axis that its workload's matrix or another of its
/// host settings already names: one name would mean two things in addresses and `where`.
pub(crate) fn check_axis_names(plan: &Plan, r: &mut Reporter) {
    for t in &plan.trials {
        let workload = plan
            .workloads
            .iter()
            .find(|w| w.name.value == t.workload.value);
        for (i, h) in t.host.iter().enumerate() {
            if let Some(first) = t.host[..i].iter().find(|e| e.knob.value == h.knob.value) {
                r.push(
                    problem(
                        "duplicate",
                        format!(
                            "trials `{}` sets {} twice",
                            t.name.value,
                            h.knob.value.describe()
                        ),
                    )
                    .label(h.knob.loc, "set again here")
                    .label(first.knob.loc, "first set here")
                    .help("list every value it is measured at in one node"),
                );
                continue;
            }
            let name = &h.axis.name;
            let earlier = t.host[..i]
                .iter()
                .map(|e| (&e.axis.name, "another host setting of the block"))
                .chain(
                    workload
                        .into_iter()
                        .flat_map(|w| &w.params)
                        .map(|p| (&p.name, "a parameter of its workload")),
                )
                .find(|(other, _)| other.value == name.value);
            if let Some((other, what)) = earlier {
                r.push(
                    problem(
                        "duplicate",
                        format!(
                            "trials `{}`: the axis `{}` of its {} is already {what}",
                            t.name.value,
                            name.value,
                            h.knob.value.describe()
                        ),
                    )
                    .label(name.loc, "named again here")
                    .label(other.loc, "first named here")
                    .help("give the host setting another axis name with `as=\"…\"` (sysctl and sysfs), or drop one of the two"),
                );
            } else if [crate::trial_cpus::FACTOR, cairn_defs::lifecycle::RUN]
                .contains(&name.value.as_str())
            {
                // the block's CPU factor and its runs are dimensions of these names
                r.push(
                    problem(
                        "duplicate",
                        format!(
                            "trials `{}`: the axis `{}` of its {} is a name cairn gives the block's own dimensions (`cpus`, `run`)",
                            t.name.value,
                            name.value,
                            h.knob.value.describe()
                        ),
                    )
                    .label(name.loc, "named here")
                    .help("give the host setting another axis name with `as=\"…\"`"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trials(host: &str) -> Result<Trials, String> {
        let text = format!(
            r#"server "s" {{ executor "process"; }}
workload "w" {{ sysbench "oltp_point_select"; threads 1 }}
trials "t" {{ servers "s"; workload "w"; {host} }}"#
        );
        crate::parse_str("t.kdl", &text)
            .map(|p| p.trials[0].clone())
            .map_err(|e| crate::render(&e))
    }

    fn axes(t: &Trials) -> Vec<(String, Vec<String>)> {
        t.host_axes()
            .map(|a| {
                (
                    a.name.value.clone(),
                    a.values.iter().map(|v| v.value.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn each_setting_is_an_axis_named_for_what_it_sets() {
        let t = trials(
            r#"io-scheduler "none" "mq-deadline"
            transparent-hugepages "never"
            sysctl "vm.swappiness" 10 60
            sysfs "/sys/kernel/mm/transparent_hugepage/defrag" "always" "never"
            sysfs "/sys/block/vda/queue/nr_requests" 64 as="nr-requests""#,
        )
        .unwrap();
        let knobs: Vec<&HostKnob> = t.host.iter().map(|h| &h.knob.value).collect();
        assert_eq!(
            knobs,
            [
                &HostKnob::IoScheduler,
                &HostKnob::TransparentHugepages,
                &HostKnob::Sysctl("vm.swappiness".into()),
                &HostKnob::Sysfs("/sys/kernel/mm/transparent_hugepage/defrag".into()),
                &HostKnob::Sysfs("/sys/block/vda/queue/nr_requests".into()),
            ]
        );
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            axes(&t),
            [
                ("io-scheduler".into(), s(&["none", "mq-deadline"])),
                ("transparent-hugepages".into(), s(&["never"])),
                ("vm.swappiness".into(), s(&["10", "60"])),
                ("defrag".into(), s(&["always", "never"])),
                ("nr-requests".into(), s(&["64"])),
            ]
        );
    }

    #[test]
    fn a_block_without_settings_has_none() {
        assert!(trials("passes 1").unwrap().host.is_empty());
    }

    #[test]
    fn misuse_is_refused_where_it_is_written() {
        for (host, says) in [
            ("io-scheduler", "needs at least one value"),
            (
                r#"io-scheduler "none"; io-scheduler "kyber""#,
                "given twice",
            ),
            (r#"io-scheduler "none" as="x""#, "unknown property `as`"),
            (r#"sysctl "vm.swappiness""#, "needs at least one value"),
            ("sysctl", "needs a sysctl's name"),
            (r#"sysctl "vm..swappiness" 1"#, "not a sysctl's name"),
            (
                r#"sysfs "/proc/sys/vm/swappiness" 1"#,
                "not a file under /sys",
            ),
            (r#"sysfs "/sys/a/../b" 1"#, "not a file under /sys"),
            (r#"sysfs "/sys/a/1b" 1"#, "cannot name an axis"),
            (r#"sysctl "vm.swappiness" 1 as="a b""#, "not an axis name"),
            (r#"transparent-hugepages "a,b""#, "cannot be a value"),
            (r#"transparent-hugepages #true"#, "cannot be a value"),
            (
                r#"sysctl "vm.swappiness" 1 as="threads""#,
                "is already a parameter",
            ),
            (
                r#"sysctl "vm.swappiness" 1; sysctl "vm.swappiness" 2 as="b""#,
                "twice",
            ),
        ] {
            let e = trials(host).expect_err(host);
            assert!(e.contains(says), "{host}: {e}");
        }
    }
}
