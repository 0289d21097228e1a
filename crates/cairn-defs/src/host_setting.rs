//! Host settings a trial is measured under — the I/O scheduler of the disk holding the
//! server's data, transparent huge pages, a sysctl, any sysfs file — as a trials block
//! declares them (`io-scheduler "none" "mq-deadline"`): factors of the trials, each value in
//! the trial's key, set before its server starts and restored after it stops.

use serde::{Deserialize, Serialize};

/// What a host setting sets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKnob {
    /// `/sys/block/<disk>/queue/scheduler` of the disk holding the server's data.
    IoScheduler,
    /// `/sys/kernel/mm/transparent_hugepage/enabled`.
    TransparentHugepages,
    /// A sysctl by its dotted name (`vm.swappiness`: `/proc/sys/vm/swappiness`).
    Sysctl(String),
    /// A file under `/sys`, by its absolute path.
    Sysfs(String),
}

impl HostKnob {
    /// The plan's node for it, as messages name it.
    pub fn node(&self) -> &'static str {
        match self {
            HostKnob::IoScheduler => "io-scheduler",
            HostKnob::TransparentHugepages => "transparent-hugepages",
            HostKnob::Sysctl(_) => "sysctl",
            HostKnob::Sysfs(_) => "sysfs",
        }
    }

    /// How a message names it: `io-scheduler`, `sysctl vm.swappiness`.
    pub fn describe(&self) -> String {
        match self {
            HostKnob::Sysctl(n) | HostKnob::Sysfs(n) => format!("{} {n}", self.node()),
            _ => self.node().to_string(),
        }
    }
}

/// One host setting of a trial: what, and the value it is measured at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HostSettingDef {
    pub knob: HostKnob,
    /// The text written to the setting's file, and read back (the selected word of a
    /// `a [b] c` choice list).
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_serialise_readably() {
        let s = |k: HostKnob| serde_json::to_string(&k).unwrap();
        assert_eq!(s(HostKnob::IoScheduler), r#""io-scheduler""#);
        assert_eq!(
            s(HostKnob::Sysctl("vm.swappiness".into())),
            r#"{"sysctl":"vm.swappiness"}"#
        );
    }
}
