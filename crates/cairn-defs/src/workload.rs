//! Workload definitions, the trial step that runs one against one server, and the code
//! version of each driver (which goes into trial keys).

use serde::{Deserialize, Serialize};

use crate::server::ServerDef;
use crate::value::Props;

/// A trial's workload at one point of its matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadDef {
    /// The driver: `sysbench`, `smack` or `sqlbench`.
    pub driver: String,
    /// The driver node's argument, e.g. `oltp_read_only`.
    pub test: String,
    /// Properties of the driver node, e.g. `tool="external"`.
    #[serde(default)]
    pub driver_props: Props,
    /// The matrix point: `threads`, `duration` (seconds), `warmup`, … with one value each.
    #[serde(default)]
    pub params: Props,
}

/// The definition of a trial step: one workload point measured on one server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialStepDef {
    /// The server measured.
    pub server: ServerDef,
    /// What runs against it.
    pub workload: WorkloadDef,
    /// The study that measures it. A measurement is that study's observation of a machine
    /// at a moment, so two studies whose trials are defined alike never share one (images
    /// and datasets they share freely): neither adopts the other's passes as its own, and
    /// measuring one never changes the other's results. (Empty in a record made before
    /// trials were keyed by their study.)
    #[serde(default)]
    pub study: String,
    /// The server's name in the design, when another server of its trials block has the
    /// same definition and image (an A/A study calibrating the machine's noise): each is
    /// then a cell of its own, measured on its own, not one trial under one key. Absent
    /// otherwise, so the keys of every other trial do not depend on names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// Its block's `settle` and `runs`; absent when it declares neither (the keys of every
    /// other trial stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<crate::lifecycle::LifecycleDef>,
    /// The host settings it is measured under (the trials block's `io-scheduler`, `sysctl`,
    /// …): absent when it declares none, so no other trial's key changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host: Vec<crate::host_setting::HostSettingDef>,
    /// The number of CPUs the server is measured on (the trials block's `cpus` factor): the
    /// trial gives its server a cpuset of that many of the machine's CPUs. Absent without
    /// the factor, so no other trial's key changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// The CPUs the server is measured on, a cpuset (a named set of the `cpus` factor,
    /// `cores="0,2"`: the name is the trial's parameter, the CPUs are its key's). Absent
    /// without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<String>,
    /// The clients run on the server's own CPUs (the block's `cpus … clients="with-server"`):
    /// the whole benchmark on the factor's CPUs. Absent otherwise (the clients on the CPUs
    /// the server does not get), so no other trial's key changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clients_with_server: bool,
    /// What the trial profiles over its measured window (the trials block's `profile`: of
    /// [`PROFILES`], the ones asked in that order joined by `+`, as [`profile_value`] writes
    /// them): absent when it asks for none, so no other trial's key changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// What a trials block's `profile` may name: the one list (the plan parser's check reads it).
/// `cpu`: the server's on-CPU stacks over the measured window, sampled by `perf`.
/// `waits`: what the server's sessions waited on over the window (MariaDB and MySQL: the
/// performance schema's wait summaries, the schema switched on for the trial; PostgreSQL:
/// `pg_stat_activity` sampled).
pub const PROFILES: &[&str] = &["cpu", "waits"];

/// The value a definition keeps for the profiles asked: each once, in [`PROFILES`]' order,
/// joined by `+` (`cpu`, `waits`, `cpu+waits`); `None` for none.
pub fn profile_value<'a>(asked: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let asked: Vec<&str> = asked.into_iter().collect();
    let kept: Vec<&str> = PROFILES
        .iter()
        .copied()
        .filter(|p| asked.contains(p))
        .collect();
    (!kept.is_empty()).then(|| kept.join("+"))
}

/// The profiles a trial asks for, from its definition's value ([`profile_value`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProfilesAsked {
    /// On-CPU stacks (`cpu`).
    pub cpu: bool,
    /// Wait statistics (`waits`).
    pub waits: bool,
}

impl ProfilesAsked {
    /// Read a definition's value (`None`: nothing asked).
    pub fn of(value: Option<&str>) -> ProfilesAsked {
        let has = |p: &str| value.is_some_and(|v| v.split('+').any(|x| x == p));
        ProfilesAsked {
            cpu: has("cpu"),
            waits: has("waits"),
        }
    }

    /// Whether anything is asked.
    pub fn any(self) -> bool {
        self.cpu || self.waits
    }
}

/// A workload driver as plans name it (`sysbench "oltp_read_only"`, a dataset's
/// `sysbench tables=…`) with the version of its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driver {
    /// The node name of its workloads and datasets.
    pub name: &'static str,
    /// See [`DRIVERS`].
    pub code_version: u32,
}

/// Every driver cairn runs, with its code version: the one list of them (the plan parser's
/// driver nodes come from here; cairn-workload implements each, and a test there holds its
/// drivers to this list). Bump a driver's number when what it measures
/// or records changes (a different query mix, a new figure, a fixed timer): the keys of that
/// driver's trials change, so exactly those trials run again, and no other.
///
/// A driver at version 1 adds nothing to a key (keys made before drivers had versions stay
/// valid); see [`trial_code`].
///
/// sysbench 2: the native OLTP driver reads result sets off the socket without decoding rows
/// (`oltp/wire.rs`) — the same queries and rows, but a lighter client, which on a shared CPU
/// leaves the server more of it: its trials measure again.
///
/// sqlbench 2: test-select sends MariaDB's `count_group_order_group` and
/// `count_group_order_null` groups (two more GROUP BY queries, `medium_loop` times each):
/// the `select` test's and the run's seconds cover more work, and two figures are new.
pub const DRIVERS: &[Driver] = &[
    Driver {
        name: "sysbench",
        code_version: 2,
    },
    Driver {
        name: "smack",
        code_version: 1,
    },
    Driver {
        name: "sqlbench",
        code_version: 2,
    },
];

/// The drivers' names, in [`DRIVERS`] order.
pub fn driver_names() -> Vec<&'static str> {
    DRIVERS.iter().map(|d| d.name).collect()
}

/// The code version of `driver` from [`DRIVERS`]. Bump it when what the driver measures or
/// records changes. A driver the table does not list has never been bumped: 1.
pub fn driver_code_version(driver: &str) -> u32 {
    DRIVERS
        .iter()
        .find(|d| d.name == driver)
        .map_or(1, |d| d.code_version)
}

/// The `code` of a trial's key: the trial kind's version (`trial/1`), followed by
/// `+<driver>/<version>` once the driver's version is above 1 (`trial/1+sysbench/2`).
pub fn trial_code(kind_version: &str, driver: &str, driver_version: u32) -> String {
    if driver_version <= 1 {
        kind_version.to_string()
    } else {
        format!("{kind_version}+{driver}/{driver_version}")
    }
}

/// The version of how a profiled trial samples its server's CPU (2: every CPU sampled and
/// the server's process kept; 1 attached to the server's threads, which cost a
/// context-switching server half its throughput).
pub const PROFILER_VERSION: u32 = 2;

/// The version of how a trial reads its server's waits (the options it sets, the tables it
/// reads, the sampling).
pub const WAITS_VERSION: u32 = 1;

/// A profiled trial's code: its kind's and driver's, and that of each profile it takes
/// (`profile`: its definition's value, [`profile_value`]).
pub fn profiled_code(code: &str, profile: &str) -> String {
    let asked = ProfilesAsked::of(Some(profile));
    let mut code = code.to_string();
    if asked.cpu {
        code.push_str(&format!("+profiler/{PROFILER_VERSION}"));
    }
    if asked.waits {
        code.push_str(&format!("+waits/{WAITS_VERSION}"));
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_keep_one_order_and_read_back() {
        assert_eq!(
            profile_value(["waits", "cpu", "waits"]).as_deref(),
            Some("cpu+waits")
        );
        assert_eq!(profile_value(["cpu"]).as_deref(), Some("cpu"));
        assert_eq!(profile_value([]), None);
        let both = ProfilesAsked::of(Some("cpu+waits"));
        assert!(both.cpu && both.waits);
        assert_eq!(
            ProfilesAsked::of(Some("waits")),
            ProfilesAsked {
                cpu: false,
                waits: true
            }
        );
        assert_eq!(ProfilesAsked::of(None), ProfilesAsked::default());
    }

    #[test]
    fn version_one_adds_nothing() {
        assert_eq!(trial_code("trial/1", "sysbench", 1), "trial/1");
        assert_eq!(trial_code("trial/1", "sysbench", 2), "trial/1+sysbench/2");
        assert_eq!(trial_code("trial/2", "smack", 3), "trial/2+smack/3");
    }

    #[test]
    fn every_driver_has_a_version_and_unknown_ones_are_at_one() {
        for d in driver_names() {
            assert!(driver_code_version(d) >= 1);
        }
        assert_eq!(driver_code_version("sysbench"), 2);
        assert_eq!(driver_code_version("no-such-driver"), 1);
    }

    #[test]
    fn a_trial_definition_round_trips() {
        let def = TrialStepDef {
            server: ServerDef::default(),
            workload: WorkloadDef {
                driver: "smack".into(),
                test: "select_index".into(),
                driver_props: Props::new(),
                params: serde_json::json!({"clients": 4})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
            study: "word-size".into(),
            replica: None,
            lifecycle: None,
            host: Vec::new(),
            cpus: None,
            cpuset: None,
            clients_with_server: false,
            profile: None,
        };
        let v = serde_json::to_value(&def).unwrap();
        assert_eq!(v["study"], "word-size");
        assert_eq!(v["workload"]["params"]["clients"], 4);
        // no replica, no field: keys made before replicas existed stay valid
        assert!(v.get("replica").is_none());
        assert!(v.get("lifecycle").is_none());
        // no CPU factor, no field: keys made before the factor stay valid
        assert!(v.get("cpus").is_none());
        assert!(v.get("cpuset").is_none());
        assert!(v.get("clients_with_server").is_none());
        // unprofiled, no field: keys made before profiles stay valid
        assert!(v.get("profile").is_none());
        assert_eq!(serde_json::from_value::<TrialStepDef>(v).unwrap(), def);
        // a record made before trials were keyed by their study still reads
        let mut old = serde_json::to_value(&def).unwrap();
        old.as_object_mut().unwrap().remove("study");
        let read: TrialStepDef = serde_json::from_value(old).unwrap();
        assert_eq!(read.study, "");
    }
}
