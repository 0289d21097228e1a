//! A dataset's or trial's database server, from its resolved `server` definition: started by
//! the server runtime the definition names (`executor`, a container by default), checked to
//! be the variant it claims, and stopped — or archived as a dataset snapshot.
//!
//! The same definition drives every runtime: `option`s become the system's configuration
//! file, `env` and `allocator` the server's environment (the allocator resolved by the runtime
//! to the library where the server runs, and preloaded), `connect` how clients reach it,
//! `cpus`/`memory` the runtime's limits. After start, [`LiveServer::verify`] records what the
//! server is (version, word size of the running binary, mapped allocator) and fails when it is
//! not what the plan asked for — a trial never measures the wrong variant silently.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cairn_exec::allocator::maps_fragment;
use cairn_exec::runtime::{
    Address, ClientPath, Connect, Link, NativeClient, RunningServer, Runtimes, ServerAsk,
    ServerStart,
};
use cairn_exec::system::{self, DbSystem};
use cairn_exec::variant_checks::VariantChecks;
use cairn_workload::{Protocol, Target};
use serde::{Deserialize, Serialize};

use crate::image_step::ImageOutput;

pub use cairn_defs::ServerDef;

/// The database system a server definition names (`system`), else the default.
pub fn system_of(def: &ServerDef) -> Result<&'static dyn DbSystem, String> {
    system::by_name(def.system_or_default())
}

/// Where the definition puts a trial's clients; `None` = each driver's own place.
pub fn client_path(def: &ServerDef) -> Result<Option<ClientPath>, String> {
    def.client.as_deref().map(str::parse).transpose()
}

/// The definition's emulated link, checked; the error names the field.
fn link_of(def: &ServerDef) -> Result<Option<Link>, (&'static str, String)> {
    def.link
        .as_ref()
        .map(|l| Link::new(l.rate.as_deref(), l.delay.as_deref()))
        .transpose()
}

/// The client protocol of a server definition's system, for drivers that speak only some.
pub fn protocol_of(def: &ServerDef) -> Result<Protocol, cairn_workload::Error> {
    let system = system_of(def).map_err(cairn_workload::Error::Invalid)?;
    Protocol::of_system(system.client_protocol()).map_err(cairn_workload::Error::Invalid)
}

/// The configuration options as (name, value) text in `system`'s spelling: `#true`/`#false`
/// become its flag words (`ON`/`OFF` for MariaDB), an empty string a bare flag.
pub fn config_options(def: &ServerDef, system: &dyn DbSystem) -> Vec<(String, String)> {
    def.options
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::Bool(b) => system.flag_text(*b).to_string(),
                other => cairn_defs::value::value_text(other).unwrap_or_default(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Check a server definition before anything starts, for `cairn check` and for every
/// dataset and trial step that is about to start it (one path, the kinds' `check`): how
/// clients connect, its database system, each option as that system's configuration file
/// must hold it ([`DbSystem::check_option`]) and the environment. The error names the option
/// or variable (`Error::Param` with `what` = `option` or `env`), so the plan can point at it.
pub fn check_server(def: &ServerDef) -> Result<(), cairn_workload::Error> {
    let invalid = cairn_workload::Error::Invalid;
    let connect: Connect = def.connect_or_default().parse().map_err(invalid)?;
    let server_param = |name: &str, message: String| cairn_workload::Error::Param {
        what: "server",
        name: name.to_string(),
        message,
    };
    let system = system_of(def).map_err(|e| server_param("system", e))?;
    let protocol =
        Protocol::of_system(system.client_protocol()).map_err(|e| server_param("system", e))?;
    if connect == Connect::Tls && !protocol.native_tls() {
        // the dataset loader and the OLTP driver connect natively, and do not speak TLS in
        // this protocol yet: refused here rather than once the server is up
        return Err(server_param(
            "connect",
            format!(
                "`connect \"tls\"` with {}: cairn's native {} client (dataset loads, native workloads) does not speak TLS yet; use \"tcp\" or \"socket\"",
                system.name(),
                protocol.as_str()
            ),
        ));
    }
    let client = client_path(def).map_err(|e| server_param("client", e))?;
    let link = link_of(def).map_err(|(field, e)| server_param(field, e))?;
    // what the runtime cannot do for it: its own rules, named at the field they concern
    let runtime = Runtimes::registered()
        .get(def.executor_or_default())
        .map_err(|e| server_param("executor", e))?;
    let ask = ServerAsk {
        system,
        connect,
        client,
        link: link.as_ref(),
        cpus: def.cpus.as_deref(),
        memory: def.memory,
    };
    runtime
        .refuses(&ask)
        .map_err(|r| server_param(r.field, r.message))?;
    if let Some(cpus) = &def.cpus {
        check_cpuset(cpus).map_err(|e| server_param("cpus", e))?;
        // a CPU the machine lacks would fail the container's start, or pin nothing
        cairn_exec::cpu_sets::Usable::here()
            .check_cpuset(cpus)
            .map_err(|e| server_param("cpus", e))?;
    }
    for (key, value) in config_options(def, system) {
        system
            .check_option(&key, &value)
            .map_err(|e| cairn_workload::Error::Param {
                what: "option",
                message: if key.is_empty() {
                    format!("a server option (value {value:?}): {e}")
                } else {
                    format!("server option `{}`: {e}", key.escape_debug())
                },
                name: key,
            })?;
    }
    for (name, value) in &def.env {
        // the plan parser refuses these already; a definition made otherwise is held to the same
        if let Some(why) = cairn_plan::values::env_var_refusal(name, value) {
            return Err(cairn_workload::Error::Param {
                what: "env",
                message: format!("server environment variable `{name}` has {why}"),
                name: name.clone(),
            });
        }
    }
    Ok(())
}

/// A cgroup cpuset as the container engine takes it: CPU numbers and ranges, comma-separated
/// (`"0"`, `"0-3"`, `"0,2,4-5"`).
fn check_cpuset(cpus: &str) -> Result<(), String> {
    let number = |s: &str| !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit());
    let ok = cpus.split(',').all(|part| match part.split_once('-') {
        Some((a, b)) => number(a) && number(b) && a.parse::<u32>().ok() <= b.parse::<u32>().ok(),
        None => number(part),
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`cpus` must be CPU numbers and ranges, comma-separated (\"0-1\", \"0,2\"), not {cpus:?}"
        ))
    }
}

/// What to start.
pub struct StartRequest<'a> {
    pub def: &'a ServerDef,
    /// The image (Docker executor); `None` for the process executor.
    pub image: Option<&'a ImageOutput>,
    /// Labels the container: the run (for cleanup) and the step.
    pub run_id: &'a str,
    pub step_id: &'a str,
    /// A datadir archive to start from (a dataset snapshot); `None` = a fresh datadir.
    pub snapshot: Option<&'a Path>,
    /// How long to wait for the server to answer.
    pub ready_timeout: Duration,
    /// Options after the definition's own (they win): a dataset server's load-only
    /// settings ([`cairn_exec::system::DbSystem::load_options`]).
    pub extra_options: Vec<(String, String)>,
}

/// What a verified server is, recorded with every dataset and trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// `docker` or `process`.
    pub executor: String,
    /// The allocator asked for (`system` when none was named).
    pub allocator: String,
    /// The library preloaded for it, if any.
    pub preload: Option<String>,
    pub checks: VariantChecks,
    /// How long the server took to answer after its start, ms.
    pub ready_ms: f64,
    /// For an image with a source build: the running program confirmed as the one it built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build_check::RunningBuild>,
}

/// A running server. Dropping it without [`LiveServer::stop`] still removes it.
pub struct LiveServer {
    server: Option<Box<dyn RunningServer>>,
    /// Short host directory for the socket (and TLS CA); declared after the server so it is
    /// removed after it, when the server is dropped.
    _dir: tempfile::TempDir,
    allocator: String,
    preload: Option<String>,
    /// How native drivers speak to it (the system's client protocol).
    protocol: Protocol,
    /// The image's source build, if it has one (checked against the running program).
    build: Option<cairn_exec::docker::image::source_build::BuildFacts>,
    /// The system the plan names, which the running server must be.
    system: &'static dyn DbSystem,
}

const STOP_GRACE: Duration = Duration::from_secs(60);

/// Libraries whose presence in the server's memory map tells which allocator runs.
const ALLOCATOR_FRAGMENTS: [&str; 2] = ["libtcmalloc", "libjemalloc"];

impl LiveServer {
    /// Start the server with the runtime its definition names and wait until it answers
    /// (bounded; the server's log tail is in the error if it does not).
    pub fn start(runtimes: &Runtimes, req: &StartRequest<'_>) -> Result<LiveServer, String> {
        let def = req.def;
        let connect: Connect = def.connect_or_default().parse()?;
        let system = system_of(def)?;
        let runtime = runtimes.get(def.executor_or_default())?;
        let allocator = def.allocator_or_default().to_string();
        // sockets have a 108-byte path limit: keep the directory short; it names the run so
        // that what a killed run leaves is swept by a later run or `cairn clean`
        let dir = tempfile::Builder::new()
            .prefix(&cairn_exec::docker::cleanup::socket_dir_prefix(req.run_id))
            .tempdir_in(std::env::temp_dir())
            .map_err(|e| format!("cannot make a server directory: {e}"))?;
        let mut env: BTreeMap<String, String> = req
            .image
            .map(|i| i.env.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(def.env.clone())
            .collect();
        let image = req.image.map(|i| i.reference.as_str());
        let preload = runtime.allocator_library(image, &allocator)?;
        add_preload(&mut env, preload.as_deref());
        let server = runtime.start(&ServerStart {
            run_id: req.run_id,
            step_id: req.step_id,
            image,
            system,
            options: config_options(def, system)
                .into_iter()
                .chain(req.extra_options.iter().cloned())
                .collect(),
            env: env.into_iter().collect(),
            connect,
            cpus: def.cpus.clone(),
            memory: def.memory,
            snapshot: req.snapshot,
            ready_timeout: req.ready_timeout,
            stop_grace: STOP_GRACE,
            cancel: runtimes.cancel().clone(),
            socket_dir: dir.path(),
        })?;
        Ok(LiveServer {
            server: Some(server),
            _dir: dir,
            allocator,
            preload,
            protocol: Protocol::of_system(system.client_protocol())?,
            build: req.image.and_then(|i| i.build.clone()),
            system,
        })
    }

    fn running(&self) -> &dyn RunningServer {
        self.server.as_deref().expect("running until stopped")
    }

    /// Put the trial's clients where the definition says (`client`, `link`); `None` when
    /// it says nothing (each driver at its own place: the native driver on the host,
    /// external tools on the bridge).
    pub fn place_clients(&mut self, def: &ServerDef) -> Result<Option<NativeClient>, String> {
        let Some(path) = client_path(def)? else {
            return Ok(None);
        };
        let link = link_of(def).map_err(|(_, e)| e)?;
        let server = self.server.as_mut().expect("running until stopped");
        server.place_clients(path, link.as_ref()).map(Some)
    }

    /// How the workload reaches the server, as a user with all privileges, in `database`.
    pub fn target(&self, database: &str) -> Target {
        target_of(self.running().endpoint(), database, self.protocol)
    }

    /// How native drivers speak to it (its system's client protocol).
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
}

/// How a workload reaches `endpoint`, in `database`, speaking `protocol`.
pub fn target_of(
    endpoint: cairn_exec::runtime::Endpoint,
    database: &str,
    protocol: Protocol,
) -> Target {
    {
        let mut t = match endpoint.address {
            Address::Socket { path } => Target::socket(&path, &endpoint.user),
            Address::Tcp { host, port } => Target::tcp(&host, port, &endpoint.user),
            Address::Tls { host, port, ca } => {
                let mut t = Target::tcp(&host, port, &endpoint.user);
                t.tls_ca = ca;
                t
            }
        };
        t.database = database.to_string();
        t.protocol = protocol;
        t
    }
}

impl LiveServer {
    /// Check what runs: version, word size, allocator. Fails if the requested allocator is
    /// not mapped into the server, or another allocator is where none was asked for.
    pub fn verify(&self) -> Result<Verification, String> {
        let server = self.running();
        let checks = server
            .variant_checks(&ALLOCATOR_FRAGMENTS)
            .map_err(|e| format!("checking the server variant: {e}"))?;
        self.system.identify(&checks.version)?;
        check_allocator(&checks, &self.allocator, self.preload.as_deref())?;
        let build = self
            .build
            .as_ref()
            .map(|b| crate::build_check::confirm_running(b, checks.host_pid, &checks.binary))
            .transpose()?;
        Ok(Verification {
            executor: server.runtime().into(),
            allocator: self.allocator.clone(),
            preload: self.preload.clone(),
            checks,
            ready_ms: server.ready_after().as_secs_f64() * 1e3,
            build,
        })
    }

    /// Where external tools (`tool="external"`) run beside this server (for the Docker
    /// runtime: a client container from its image on its run network, connecting as `cairn`
    /// the way the server's `connect` says). `None` if its runtime cannot run tools.
    pub fn tool_runner(&self) -> Option<crate::tools::RuntimeTools<'_>> {
        crate::tools::RuntimeTools::new(self.running())
    }

    /// The CPUs the server's process may run on, as the kernel reports it.
    pub fn cpu_affinity(&self) -> Result<Vec<u32>, String> {
        self.running().cpu_affinity()
    }

    /// Pin the external tools run beside the server to cpuset `cpus`.
    pub fn pin_tools(&mut self, cpus: &str) -> Result<(), String> {
        self.server
            .as_mut()
            .expect("running until stopped")
            .pin_tools(cpus)
    }

    /// A reader of the server's CPU time and context switches, from its runtime.
    pub fn resource_probe(&self) -> Result<cairn_exec::usage::ResourceProbe, String> {
        self.running().resource_probe()
    }

    /// How the runtime restored the datadir from the snapshot, if it says.
    pub fn restore(&self) -> Option<cairn_exec::runtime::Restore> {
        self.running().restore()
    }

    /// Whether the server is still running (a crash shows here).
    pub fn is_running(&mut self) -> bool {
        self.server.as_mut().is_some_and(|s| s.is_running())
    }

    /// The last lines of the server's log (for errors).
    pub fn log_tail(&self) -> String {
        self.server
            .as_ref()
            .map(|s| s.log_tail())
            .unwrap_or_default()
    }

    /// The whole server log, for the record.
    pub fn log(&self) -> String {
        self.server.as_ref().map(|s| s.log()).unwrap_or_default()
    }

    /// Stop the server and remove it.
    pub fn stop(mut self) -> Result<(), String> {
        match self.server.take() {
            Some(s) => s.stop(),
            None => Ok(()),
        }
    }

    /// Remove the server without a clean shutdown: a trial's datadir is a throwaway copy of
    /// its snapshot, so the flush a clean stop waits for is wasted.
    pub fn discard(mut self) -> Result<(), String> {
        match self.server.take() {
            Some(s) => s.discard(),
            None => Ok(()),
        }
    }

    /// Stop cleanly and write the datadir to `dest` as a snapshot archive; returns its size.
    pub fn stop_archiving(mut self, dest: &Path) -> Result<u64, String> {
        match self.server.take() {
            Some(s) => s.stop_archiving(dest),
            None => Err("the server is not running".into()),
        }
    }
}

/// The allocator check of [`LiveServer::verify`]: the preloaded library must be mapped, and
/// where the system allocator was asked for, no other than the binary links itself (Debian's
/// MySQL links tcmalloc: that is its system allocator).
fn check_allocator(
    checks: &VariantChecks,
    allocator: &str,
    preload: Option<&str>,
) -> Result<(), String> {
    let mapped: Vec<&str> = checks
        .allocators
        .iter()
        .filter(|a| a.mapped)
        .map(|a| a.library.as_str())
        .collect();
    match preload {
        Some(lib) => {
            let want = maps_fragment(lib);
            if !checks
                .allocators
                .iter()
                .any(|a| a.mapped && a.paths.iter().any(|p| p.contains(want)))
            {
                return Err(format!(
                    "variant check failed: allocator `{allocator}` was requested ({lib} preloaded) but it is not mapped into {} (pid {}); mapped allocators: {mapped:?}",
                    checks.process_name, checks.host_pid
                ));
            }
        }
        None if allocator == "system" => {
            let loaded: Vec<&str> = checks
                .allocators
                .iter()
                .filter(|a| a.mapped && !a.linked)
                .map(|a| a.library.as_str())
                .collect();
            if !loaded.is_empty() {
                return Err(format!(
                    "variant check failed: the system allocator was requested but {loaded:?} is mapped into {} and its binary does not link it (an LD_PRELOAD in the image or `env`?)",
                    checks.process_name
                ));
            }
        }
        None => {}
    }
    Ok(())
}

/// `LD_PRELOAD` with `lib` first (kept if the plan set one too).
fn add_preload(env: &mut BTreeMap<String, String>, lib: Option<&str>) {
    if let Some(lib) = lib {
        let v = match env.get("LD_PRELOAD") {
            Some(old) if !old.is_empty() => format!("{lib}:{old}"),
            _ => lib.to_string(),
        };
        env.insert("LD_PRELOAD".into(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_exec::cancel::CancelToken;

    #[test]
    fn options_and_preload() {
        let def: ServerDef = serde_json::from_value(serde_json::json!({
            "options": {"innodb_buffer_pool_size": "256M", "max_connections": 512,
                        "skip-name-resolve": "", "performance_schema": false},
            "env": {}, "allocator": "jemalloc", "connect": "tcp",
            "cpus": null, "memory": null, "executor": null,
        }))
        .unwrap();
        assert_eq!(def.executor_or_default(), "docker");
        let mariadb = system::by_name("mariadb").unwrap();
        assert_eq!(
            config_options(&def, mariadb),
            [
                ("innodb_buffer_pool_size".to_string(), "256M".to_string()),
                ("max_connections".into(), "512".into()),
                ("performance_schema".into(), "OFF".into()),
                ("skip-name-resolve".into(), "".into()),
            ]
        );
        let mut env = BTreeMap::from([("LD_PRELOAD".to_string(), "/x.so".to_string())]);
        add_preload(&mut env, Some("/lib/libjemalloc.so.2"));
        assert_eq!(env["LD_PRELOAD"], "/lib/libjemalloc.so.2:/x.so");
    }

    #[test]
    fn server_check_names_the_bad_option_or_variable() {
        let mut def = ServerDef::default();
        def.options
            .insert("max_connections".into(), serde_json::json!(512));
        def.options
            .insert("performance_schema".into(), serde_json::json!(false));
        check_server(&def).unwrap();
        def.options.insert(
            "wait_timeout".into(),
            serde_json::json!("100\nmax_connections=7"),
        );
        match check_server(&def).unwrap_err() {
            cairn_workload::Error::Param {
                what,
                name,
                message,
            } => {
                assert_eq!((what, name.as_str()), ("option", "wait_timeout"));
                assert!(message.contains("line feed"), "{message}");
            }
            e => panic!("{e:?}"),
        }
        def.options.remove("wait_timeout");
        def.env.insert("A=B".into(), "1".into());
        let e = check_server(&def).unwrap_err();
        assert!(
            matches!(&e, cairn_workload::Error::Param { what: "env", .. }),
            "{e:?}"
        );
        def.env.clear();
        def.connect = Some("carrier-pigeon".into());
        assert!(check_server(&def).is_err());
        def.connect = None;
        for (cpus, ok) in [
            ("0", true),
            ("0-3", true),
            ("0,2,4-5", true),
            ("3-1", false),
            ("x", false),
            ("0,", false),
        ] {
            assert_eq!(check_cpuset(cpus).is_ok(), ok, "{cpus}");
        }
        // a cpuset is held to the CPUs this machine gives cairn
        let first = cairn_exec::cpu_sets::Usable::here().cpus[0];
        def.cpus = Some(first.to_string());
        assert!(check_server(&def).is_ok());
        def.cpus = Some("65000".into());
        let e = check_server(&def).unwrap_err();
        assert!(
            matches!(&e, cairn_workload::Error::Param { what: "server", name, .. } if name == "cpus"),
            "{e:?}"
        );
        def.cpus = Some("x".into());
        assert!(check_server(&def).is_err());
        def.cpus = Some(first.to_string());
        def.executor = Some("process".into());
        let e = check_server(&def).unwrap_err();
        assert!(
            matches!(&e, cairn_workload::Error::Param { what: "server", name, .. } if name == "cpus"),
            "{e:?}"
        );
        def.cpus = None;
        def.memory = Some(1 << 20);
        def.executor = None;
        assert!(check_server(&def)
            .unwrap_err()
            .to_string()
            .contains("at least 6M"));
    }

    #[test]
    fn an_unknown_executor_is_named_with_the_known_ones() {
        let def = ServerDef {
            executor: Some("kubernetes".into()),
            ..ServerDef::default()
        };
        let runtimes = Runtimes::new(CancelToken::new());
        let e = LiveServer::start(
            &runtimes,
            &StartRequest {
                def: &def,
                image: None,
                run_id: "r",
                step_id: "trial/1",
                snapshot: None,
                ready_timeout: Duration::from_secs(1),
                extra_options: Vec::new(),
            },
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            e.contains("`kubernetes`") && e.contains("docker, process"),
            "{e}"
        );
    }

    #[test]
    fn allocator_checks() {
        use cairn_exec::variant_checks::AllocatorCheck;
        let mut checks = VariantChecks {
            version: "10.11.11-MariaDB".into(),
            compile_machine: "x86_64".into(),
            malloc_library: "system".into(),
            word_size: 64,
            process_name: "mariadbd".into(),
            binary: "/usr/sbin/mariadbd".into(),
            host_pid: 7,
            allocators: vec![AllocatorCheck {
                library: "libjemalloc".into(),
                mapped: true,
                paths: vec!["/lib/libjemalloc.so.2".into()],
                linked: false,
            }],
        };
        check_allocator(&checks, "jemalloc", Some("/lib/libjemalloc.so.2")).unwrap();
        let e = check_allocator(&checks, "system", None).unwrap_err();
        assert!(e.contains("the system allocator was requested"), "{e}");
        // an allocator the binary links is its system allocator (Debian's MySQL: tcmalloc)
        checks.allocators[0].linked = true;
        check_allocator(&checks, "system", None).unwrap();
        checks.allocators[0].linked = false;
        checks.allocators[0].mapped = false;
        checks.allocators[0].paths.clear();
        check_allocator(&checks, "system", None).unwrap();
        let e = check_allocator(&checks, "jemalloc", Some("/lib/libjemalloc.so.2")).unwrap_err();
        assert!(e.contains("not mapped into mariadbd (pid 7)"), "{e}");
    }
}
