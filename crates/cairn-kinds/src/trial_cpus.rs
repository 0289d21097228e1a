//! A trial under its block's `cpus` factor: the server pinned to that many of this machine's
//! CPUs, the clients to the CPUs left over (or sharing the server's), the server's affinity
//! read back once it runs — a trial whose server runs elsewhere than asked fails — and all of
//! it recorded (`extra.cpus`, `server.json`'s `cpus`).

use cairn_exec::cpu_sets::{format_list, Placement, Usable};
use cairn_graph::Step;
use serde_json::{json, Value};

use crate::server_run::{check_server, ServerDef};

/// The error of the factor's value, placed at it in the plan (the trials block's `cpus`).
fn factor_error(message: String) -> cairn_workload::Error {
    cairn_workload::Error::Param {
        what: "trials",
        name: cairn_plan::trial_cpus::FACTOR.to_string(),
        message,
    }
}

/// Where the trial's server and clients run on this machine, if its block has the factor;
/// the error says why this machine cannot give the count or the set.
pub fn placement(step: &Step) -> Result<Option<Placement>, cairn_workload::Error> {
    let def = step.trial_def().map_err(cairn_workload::Error::Invalid)?;
    let usable = Usable::here();
    let placement = match (def.cpus, &def.cpuset) {
        (Some(count), _) => usable.place(count),
        (None, Some(set)) => usable.place_set(set),
        (None, None) => return Ok(None),
    }
    .map_err(factor_error)?;
    Ok(Some(if def.clients_with_server {
        placement.with_clients_on_the_server()
    } else {
        placement
    }))
}

/// `sdef` with the cpuset of the trial's CPU count or named set, checked as its runtime would start it
/// (the `process` executor cannot pin a server); `sdef` unchanged without the factor.
pub fn pin_server(step: &Step, sdef: ServerDef) -> Result<ServerDef, cairn_workload::Error> {
    let Some(placement) = placement(step)? else {
        return Ok(sdef);
    };
    if let Some(own) = &sdef.cpus {
        // the plan refuses this at load; a definition made otherwise is held to the same
        return Err(cairn_workload::Error::Param {
            what: "server",
            name: "cpus".into(),
            message: format!(
                "the server has its own cpuset \"{own}\", and the trials' `cpus` factor gives it {} CPUs",
                placement.count
            ),
        });
    }
    let pinned = ServerDef {
        cpus: Some(placement.server_cpuset()),
        ..sdef
    };
    check_server(&pinned).map_err(|e| match e {
        cairn_workload::Error::Param {
            what: "server",
            name,
            message,
        } if name == "cpus" => factor_error(format!(
            "the trials' `cpus` factor pins the server to CPUs, which the `{}` executor cannot ({message})",
            pinned.executor_or_default()
        )),
        other => other,
    })?;
    Ok(pinned)
}

/// Where the trial's server and clients ran, read back.
#[derive(Debug, Clone)]
pub struct Pinned {
    placement: Placement,
    /// The server process's affinity, as the kernel reports it.
    server: Vec<u32>,
    /// The native driver's threads' affinity, read back once pinned (`None`: an external
    /// tool ran the workload, in a container of the clients' cpuset, or the clients shared).
    clients: Option<Vec<u32>>,
}

impl Pinned {
    /// The running server's affinity against the placement: a server that runs on other
    /// CPUs than asked would measure something else.
    pub fn verify(
        placement: Placement,
        live: &crate::server_run::LiveServer,
    ) -> Result<Pinned, String> {
        Pinned::read_back(placement, live.cpu_affinity()?)
    }

    /// The placement against the server's affinity `server` as the kernel reported it.
    fn read_back(placement: Placement, server: Vec<u32>) -> Result<Pinned, String> {
        if server != placement.server {
            return Err(format!(
                "the server was asked to run on CPUs {} and runs on {}: the container engine did not apply the cpuset",
                placement.server_cpuset(),
                format_list(&server)
            ));
        }
        Ok(Pinned {
            placement,
            server,
            clients: None,
        })
    }

    /// The clients' CPUs, if they have their own.
    pub fn clients_cpus(&self) -> Option<&[u32]> {
        self.placement.clients.as_deref()
    }

    /// The native driver's threads ran pinned to `cpus` (read back).
    pub fn clients_ran_on(&mut self, cpus: Vec<u32>) {
        self.clients = Some(cpus);
    }

    /// For the record (`extra.cpus`) and `server.json`: the count, the server's cpuset asked
    /// and read back, and where the clients ran.
    pub fn record(&self, external: bool) -> Value {
        let clients = match (self.placement.clients_cpuset(), external) {
            (None, _) => "shared".to_string(),
            (Some(set), true) => set,
            (Some(set), false) => self.clients.as_deref().map_or(set, format_list),
        };
        json!({
            "count": self.placement.count,
            "server": self.placement.server_cpuset(),
            "server_affinity": format_list(&self.server),
            "clients": clients,
            "clients_driver": if external { "a container of the tool" } else { "cairn's threads" },
            "machine": format_list(&Usable::here().cpus),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_defs::TrialStepDef;

    fn step(cpus: Option<u32>, sdef: ServerDef) -> Step {
        let plan = cairn_plan::parse_str(
            "t.kdl",
            r#"image "i" { debian suite="bookworm"; packages "mariadb-server" }
server "a" { image "i" }
workload "w" { sysbench "oltp_point_select"; threads 1 }
trials "t" { servers "a"; workload "w" }"#,
        )
        .unwrap();
        let g = cairn_graph::resolve(&plan).unwrap();
        let mut s = g
            .steps
            .into_iter()
            .find(|s| s.kind == cairn_graph::StepKind::TRIAL)
            .unwrap();
        let mut def: TrialStepDef = s.trial_def().unwrap();
        def.cpus = cpus;
        def.server = sdef;
        s.definition = serde_json::to_value(&def).unwrap();
        s
    }

    #[test]
    fn a_server_not_on_the_cpus_asked_fails_and_one_on_them_is_recorded() {
        let two = Usable {
            cpus: vec![0, 1],
            quota: None,
        };
        let e = Pinned::read_back(two.place(1).unwrap(), vec![0, 1]).unwrap_err();
        assert!(e.contains("asked to run on CPUs 0 and runs on 0-1"), "{e}");
        let mut ok = Pinned::read_back(two.place(1).unwrap(), vec![0]).unwrap();
        ok.clients_ran_on(vec![1]);
        let r = ok.record(false);
        assert_eq!(r["server_affinity"], "0");
        assert_eq!(r["clients"], "1");
        let shared = Pinned::read_back(two.place(2).unwrap(), vec![0, 1]).unwrap();
        assert_eq!(shared.record(false)["clients"], "shared");
        assert_eq!(shared.clients_cpus(), None);
    }

    #[test]
    fn without_the_factor_the_server_is_as_defined() {
        let s = step(None, ServerDef::default());
        assert!(placement(&s).unwrap().is_none());
        assert_eq!(
            pin_server(&s, ServerDef::default()).unwrap(),
            ServerDef::default()
        );
    }

    #[test]
    fn one_cpu_pins_the_server_to_the_first() {
        let s = step(Some(1), ServerDef::default());
        let first = Usable::here().cpus[0];
        let pinned = pin_server(&s, ServerDef::default()).unwrap();
        assert_eq!(pinned.cpus, Some(first.to_string()));
    }

    #[test]
    fn a_named_set_pins_the_server_to_its_cpus() {
        let last = *Usable::here().cpus.last().unwrap();
        let mut s = step(None, ServerDef::default());
        let mut def: TrialStepDef = s.trial_def().unwrap();
        def.cpuset = Some(last.to_string());
        s.definition = serde_json::to_value(&def).unwrap();
        let pinned = pin_server(&s, ServerDef::default()).unwrap();
        assert_eq!(pinned.cpus, Some(last.to_string()));
        def.cpuset = Some("65000".into());
        s.definition = serde_json::to_value(&def).unwrap();
        assert!(matches!(
            pin_server(&s, ServerDef::default()),
            Err(cairn_workload::Error::Param { what: "trials", .. })
        ));
    }

    #[test]
    fn a_count_beyond_the_machine_is_the_factors_error() {
        let s = step(Some(4096), ServerDef::default());
        match pin_server(&s, ServerDef::default()) {
            Err(cairn_workload::Error::Param {
                what,
                name,
                message,
            }) => {
                assert_eq!((what, name.as_str()), ("trials", "cpus"));
                assert!(
                    message.contains("more than this machine gives cairn"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_process_executor_cannot_pin_and_says_so_at_the_factor() {
        let process = ServerDef {
            executor: Some("process".into()),
            ..Default::default()
        };
        let s = step(Some(1), process.clone());
        match pin_server(&s, process) {
            Err(cairn_workload::Error::Param {
                what,
                name,
                message,
            }) => {
                assert_eq!((what, name.as_str()), ("trials", "cpus"));
                assert!(message.contains("Docker executor"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
