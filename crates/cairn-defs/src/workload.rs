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
}

/// Code version of each driver, in one table. Bump a driver's number when what it measures
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
const DRIVER_CODE_VERSIONS: &[(&str, u32)] = &[("sysbench", 2), ("smack", 1), ("sqlbench", 2)];

/// The code version of `driver` from [`DRIVER_CODE_VERSIONS`]. Bump it when what the driver
/// measures or records changes. A driver the table does not list has never been bumped: 1.
pub fn driver_code_version(driver: &str) -> u32 {
    DRIVER_CODE_VERSIONS
        .iter()
        .find(|(d, _)| *d == driver)
        .map_or(1, |&(_, v)| v)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_one_adds_nothing() {
        assert_eq!(trial_code("trial/1", "sysbench", 1), "trial/1");
        assert_eq!(trial_code("trial/1", "sysbench", 2), "trial/1+sysbench/2");
        assert_eq!(trial_code("trial/2", "smack", 3), "trial/2+smack/3");
    }

    #[test]
    fn every_driver_is_listed_and_unknown_ones_are_at_one() {
        for d in ["sysbench", "smack", "sqlbench"] {
            assert!(DRIVER_CODE_VERSIONS.iter().any(|(n, _)| *n == d), "{d}");
            assert!(driver_code_version(d) >= 1);
        }
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
        };
        let v = serde_json::to_value(&def).unwrap();
        assert_eq!(v["workload"]["params"]["clients"], 4);
        assert_eq!(serde_json::from_value::<TrialStepDef>(v).unwrap(), def);
    }
}
