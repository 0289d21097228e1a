//! A dataset's or trial's database server, from its resolved `server` definition: started in a container (Docker) or as a host process, checked to be the variant it claims, and stopped — or archived as a dataset snapshot.
//!
//! The same definition drives both executors: `option`s become the `my.cnf`, `env` and
//! `allocator` the server's environment (the allocator resolved to the library in the image
//! or on the host and preloaded), `connect` how clients reach it, `cpus`/`memory` the
//! container's cgroup limits. After start, [`LiveServer::verify`] records what the server is
//! (version, word size of the running binary, mapped allocator) and fails when it is not
//! what the plan asked for — a trial never measures the wrong variant silently.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cairn_exec::docker::allocator::{host_allocator_library, maps_fragment};
use cairn_exec::docker::server::render_my_cnf;
use cairn_exec::docker::{allocator_library, Connect, Docker, Server, ServerSpec, VariantChecks};
use cairn_exec::host_server::{self, HostServer, HostServerSpec};
use cairn_plan::Value;
use cairn_workload::Target;
use serde::{Deserialize, Serialize};

use crate::image_step::ImageOutput;

/// The `server` part of a dataset's or trial's definition (see `cairn-graph`'s `ServerDef`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ServerDef {
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub allocator: Option<String>,
    pub connect: Option<String>,
    pub cpus: Option<String>,
    pub memory: Option<u64>,
    pub executor: Option<String>,
}

impl ServerDef {
    /// Whether it runs in a container (the default) rather than as a host process.
    pub fn uses_docker(&self) -> bool {
        self.executor.as_deref() != Some("process")
    }

    /// The `my.cnf` options as (name, value) text; `#true`/`#false` become `ON`/`OFF`, an
    /// empty string a bare flag.
    pub fn cnf_options(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::Bool(true) => "ON".to_string(),
                    Value::Bool(false) => "OFF".to_string(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect()
    }

    fn connect(&self) -> Result<Connect, String> {
        self.connect.as_deref().unwrap_or("tcp").parse()
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
}

enum Kind {
    Docker {
        docker: &'static Docker,
        server: Server,
    },
    Host {
        server: HostServer,
    },
}

/// A running server. Dropping it without [`LiveServer::stop`] still removes it.
pub struct LiveServer {
    kind: Option<Kind>,
    /// Short host directory for the socket (and TLS CA); held so it lives as long as the
    /// server, removed when it is dropped.
    _dir: tempfile::TempDir,
    allocator: String,
    preload: Option<String>,
    connect: Connect,
    ready_after: Duration,
}

const STOP_GRACE: Duration = Duration::from_secs(60);

/// Libraries whose presence in the server's memory map tells which allocator runs.
const ALLOCATOR_FRAGMENTS: [&str; 2] = ["libtcmalloc", "libjemalloc"];

impl LiveServer {
    /// Start the server and wait until it answers (bounded; the server's log tail is in the
    /// error if it does not).
    pub fn start(req: &StartRequest<'_>) -> Result<LiveServer, String> {
        let def = req.def;
        let connect = def.connect()?;
        let allocator = def.allocator.clone().unwrap_or_else(|| "system".into());
        // sockets have a 108-byte path limit: keep the directory short
        let dir = tempfile::Builder::new()
            .prefix("cairn-")
            .tempdir_in(std::env::temp_dir())
            .map_err(|e| format!("cannot make a server directory: {e}"))?;
        let mut env: BTreeMap<String, String> = req
            .image
            .map(|i| i.env.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(def.env.clone())
            .collect();
        let (kind, preload, ready_after) = if def.uses_docker() {
            let d = crate::image_step::docker().map_err(str::to_string)?;
            let image = req.image.ok_or_else(|| {
                "a server run by the Docker executor needs an `image`".to_string()
            })?;
            let preload = image_allocator(d, &image.reference, &allocator)?;
            add_preload(&mut env, preload.as_deref());
            let mut spec = ServerSpec::new(
                req.run_id,
                req.step_id,
                &image.reference,
                render_my_cnf(&def.cnf_options()),
                dir.path().into(),
            );
            spec.env = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            spec.connect = connect;
            spec.cpuset = def.cpus.clone();
            spec.memory = def.memory;
            spec.datadir_archive = req.snapshot.map(Path::to_path_buf);
            spec.ready_timeout = req.ready_timeout;
            spec.stop_timeout = STOP_GRACE;
            let server = d.start_server(&spec).map_err(|e| e.to_string())?;
            let ready = server.ready_after;
            (Kind::Docker { docker: d, server }, preload, ready)
        } else {
            if def.cpus.is_some() || def.memory.is_some() {
                return Err(
                    "`cpus` and `memory` limits need the Docker executor (cgroups); remove them or drop `executor \"process\"`"
                        .into(),
                );
            }
            if connect == Connect::Tls {
                return Err("`connect \"tls\"` needs the Docker executor; the process executor's server listens on its socket".into());
            }
            let preload = host_allocator_library(&allocator).map_err(|e| e.to_string())?;
            add_preload(&mut env, preload.as_deref());
            let mut spec = HostServerSpec::new(dir.path().join("server"));
            spec.options = def.cnf_options();
            spec.env = env.into_iter().collect();
            spec.ready_timeout = req.ready_timeout;
            spec.datadir_archive = req.snapshot.map(Path::to_path_buf);
            if connect == Connect::Tcp {
                spec.tcp_port = Some(free_port()?);
            }
            let server = host_server::start(&spec).map_err(|e| e.to_string())?;
            let ready = server.ready_after;
            (Kind::Host { server }, preload, ready)
        };
        Ok(LiveServer {
            kind: Some(kind),
            _dir: dir,
            allocator,
            preload,
            connect,
            ready_after,
        })
    }

    /// How the workload reaches the server, as a user with all privileges, in `database`.
    pub fn target(&self, database: &str) -> Target {
        let mut t = match self.kind.as_ref().expect("running") {
            Kind::Docker { server, .. } => match self.connect {
                Connect::Socket => {
                    Target::socket(&server.socket_path.display().to_string(), "cairn")
                }
                Connect::Tcp | Connect::Tls => {
                    let mut t = Target::tcp(&server.ip, server.port, "cairn");
                    t.tls_ca = server.tls_ca.clone();
                    t
                }
            },
            // the process executor's server runs as this user: root over the socket
            Kind::Host { server } => match server.tcp_port {
                Some(port) if self.connect == Connect::Tcp => {
                    Target::tcp("127.0.0.1", port, "root")
                }
                _ => Target::socket(&server.socket.display().to_string(), "root"),
            },
        };
        t.database = database.to_string();
        t
    }

    /// Check what runs: version, word size, allocator. Fails if the requested allocator is
    /// not mapped into the server, or another allocator is where none was asked for.
    pub fn verify(&self) -> Result<Verification, String> {
        let checks = match self.kind.as_ref().expect("running") {
            Kind::Docker { docker, server } => docker
                .variant_checks(server, &ALLOCATOR_FRAGMENTS)
                .map_err(|e| format!("checking the server variant: {e}"))?,
            Kind::Host { server } => server
                .variant_checks(&ALLOCATOR_FRAGMENTS)
                .map_err(|e| format!("checking the server variant: {e}"))?,
        };
        let mapped: Vec<&str> = checks
            .allocators
            .iter()
            .filter(|a| a.mapped)
            .map(|a| a.library.as_str())
            .collect();
        match &self.preload {
            Some(lib) => {
                let want = maps_fragment(lib);
                if !checks
                    .allocators
                    .iter()
                    .any(|a| a.mapped && a.paths.iter().any(|p| p.contains(want)))
                {
                    return Err(format!(
                        "variant check failed: allocator `{}` was requested ({lib} preloaded) but it is not mapped into {} (pid {}); mapped allocators: {mapped:?}",
                        self.allocator, checks.process_name, checks.host_pid
                    ));
                }
            }
            None if self.allocator == "system" && !mapped.is_empty() => {
                return Err(format!(
                    "variant check failed: the system allocator was requested but {mapped:?} is mapped into {} (an LD_PRELOAD in the image or `env`?)",
                    checks.process_name
                ));
            }
            None => {}
        }
        Ok(Verification {
            executor: if self.is_docker() {
                "docker"
            } else {
                "process"
            }
            .into(),
            allocator: self.allocator.clone(),
            preload: self.preload.clone(),
            checks,
            ready_ms: self.ready_after.as_secs_f64() * 1e3,
        })
    }

    /// Where external tools (`tool="external"`) run beside this server: a client container
    /// from its image on its run network, connecting as `cairn` the way the server's
    /// `connect` says. `None` for the process executor.
    pub fn tool_runner(&self) -> Option<crate::tools::DockerTools> {
        match self.kind.as_ref()? {
            Kind::Docker { docker, server } => Some(crate::tools::DockerTools::new(docker, server)),
            _ => None,
        }
    }

    fn is_docker(&self) -> bool {
        matches!(self.kind, Some(Kind::Docker { .. }))
    }

    /// Whether the server is still running (a crash shows here).
    pub fn is_running(&mut self) -> bool {
        match self.kind.as_mut() {
            Some(Kind::Docker { docker, server }) => docker.server_running(server).unwrap_or(false),
            Some(Kind::Host { server }) => server.is_running(),
            None => false,
        }
    }

    /// The last lines of the server's log (for errors).
    pub fn log_tail(&self) -> String {
        match self.kind.as_ref() {
            Some(Kind::Docker { docker, server }) => docker
                .server_log(server, Some(400))
                .map(|o| cairn_exec::docker::server::log_excerpt(&o.tail(usize::MAX), 30))
                .unwrap_or_else(|e| format!("(no log: {e})")),
            Some(Kind::Host { server }) => server.log_tail(),
            None => String::new(),
        }
    }

    /// The whole server log, for the record.
    pub fn log(&self) -> String {
        match self.kind.as_ref() {
            Some(Kind::Docker { docker, server }) => docker
                .server_log(server, None)
                .map(|o| o.tail(usize::MAX))
                .unwrap_or_default(),
            Some(Kind::Host { server }) => std::fs::read_to_string(&server.log).unwrap_or_default(),
            None => String::new(),
        }
    }

    /// Stop the server and remove it.
    pub fn stop(mut self) -> Result<(), String> {
        match self.kind.take() {
            Some(Kind::Docker { docker, server }) => docker
                .stop_server(&server, STOP_GRACE)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Some(Kind::Host { server }) => server
                .stop(STOP_GRACE)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// Stop cleanly and write the datadir to `dest` as a snapshot archive; returns its size.
    pub fn stop_archiving(mut self, dest: &Path) -> Result<u64, String> {
        match self.kind.take() {
            Some(Kind::Docker { docker, server }) => docker
                .stop_server_archiving(&server, STOP_GRACE, dest)
                .map_err(|e| e.to_string()),
            Some(Kind::Host { server }) => server
                .stop_archiving(STOP_GRACE, dest)
                .map_err(|e| e.to_string()),
            None => Err("the server is not running".into()),
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        // an error path: remove the server without waiting for a clean shutdown
        if let Some(Kind::Docker { docker, server }) = self.kind.take() {
            let _ = docker.stop_server(&server, Duration::from_secs(1));
        }
        // a host server is killed by HostServer's own Drop
    }
}

/// The library to preload for `allocator` in `image`, looked up once per image and allocator
/// in this process (each lookup starts a container: the trials of a study ask again and again).
fn image_allocator(d: &Docker, image: &str, allocator: &str) -> Result<Option<String>, String> {
    type Cache = std::sync::Mutex<BTreeMap<(String, String), Option<String>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let key = (image.to_string(), allocator.to_string());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(hit.clone());
    }
    let lib = allocator_library(d, image, allocator).map_err(|e| e.to_string())?;
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, lib.clone());
    Ok(lib)
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

/// A free TCP port on 127.0.0.1 (for a host server's `connect "tcp"`).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_preload() {
        let def: ServerDef = serde_json::from_value(serde_json::json!({
            "options": {"innodb_buffer_pool_size": "256M", "max_connections": 512,
                        "skip-name-resolve": "", "performance_schema": false},
            "env": {}, "allocator": "jemalloc", "connect": "tcp",
            "cpus": null, "memory": null, "executor": null,
        }))
        .unwrap();
        assert!(def.uses_docker());
        assert_eq!(
            def.cnf_options(),
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
}
