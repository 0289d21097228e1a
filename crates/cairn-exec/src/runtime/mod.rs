//! Server runtimes behind one trait: where a database server runs (a Docker container, a host
//! process, later e.g. a cluster node) is a [`ServerRuntime`]; a started server is a
//! [`RunningServer`]. What the server program is comes from a [`DbSystem`], so runtimes never
//! name a database system.
//!
//! [`Runtimes`] is the registry a run context owns: the runtimes by name, the run's
//! [`CancelToken`] and the lazily connected container engine they share.

pub mod docker;
pub mod host;

use std::path::Path;
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::docker::{ClientCpu, Docker, DockerConnection};
use crate::system::DbSystem;
use crate::usage::ResourceProbe;
use crate::variant_checks::VariantChecks;

pub use crate::netpath::{ClientPath, Connect, Link};

/// Where a server runs.
pub trait ServerRuntime: Send + Sync {
    /// The name definitions use (`executor "…"`), e.g. `docker`, `process`.
    fn name(&self) -> &'static str;
    /// Whether servers can start here; the error says what is missing and how to fix it.
    fn available(&self) -> Result<(), String>;
    /// Whether its servers run in the container engine (measurements then record the
    /// engine's version as their runtime in the machine fingerprint).
    fn uses_container_engine(&self) -> bool {
        false
    }
    /// What this runtime cannot do for a server asked for so, before anything starts:
    /// `cairn check` asks, and every dataset and trial before its start. The refusal names
    /// the definition's field at fault. The default refuses nothing.
    fn refuses(&self, _ask: &ServerAsk<'_>) -> Result<(), Refusal> {
        Ok(())
    }
    /// Whether external tools (`tool "external"` sysbench) can run beside its servers; the
    /// error says why not. The default: they can.
    fn runs_tools(&self) -> Result<(), String> {
        Ok(())
    }
    /// The library to `LD_PRELOAD` for `allocator` where the server runs (in `image`, if the
    /// runtime runs images); `None` for `system`. Looked up once per (image, allocator) per
    /// runtime instance.
    fn allocator_library(
        &self,
        image: Option<&str>,
        allocator: &str,
    ) -> Result<Option<String>, String>;
    /// The output of `system`'s [`crate::system::DbSystem::variables_script`] where the
    /// server would run (in `image`, if the runtime runs images): what option names it
    /// takes. `None`: this runtime cannot tell (its options' names are not checked). The
    /// default cannot.
    fn variables_output(
        &self,
        _image: Option<&str>,
        _system: &dyn crate::system::DbSystem,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }
    /// Start a server and wait until it answers (bounded by `spec.ready_timeout`; the error
    /// carries the server's log tail). Limits the runtime cannot honour are refused.
    fn start(&self, spec: &ServerStart<'_>) -> Result<Box<dyn RunningServer>, String>;
}

/// What a server definition asks of the runtime that starts it, for
/// [`ServerRuntime::refuses`].
#[derive(Debug, Clone, Copy)]
pub struct ServerAsk<'a> {
    /// The database system the server is.
    pub system: &'static dyn DbSystem,
    /// How clients connect.
    pub connect: Connect,
    /// Where its clients run; `None` = each driver's own place.
    pub client: Option<ClientPath>,
    /// The emulated link on its network interface, if any.
    pub link: Option<&'a Link>,
    /// The cpuset it is limited to, if any.
    pub cpus: Option<&'a str>,
    /// The memory limit in bytes, if any.
    pub memory: Option<u64>,
}

/// Why a runtime cannot start a server as asked: the definition's field at fault (`cpus`,
/// `memory`, `connect`, `client`, `link`, `executor`) and the reason, for a diagnostic at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            field,
            message: message.into(),
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct ServerStart<'a> {
    /// The run (labels, network names, cleanup of a killed run).
    pub run_id: &'a str,
    /// The step the server belongs to.
    pub step_id: &'a str,
    /// The image to run, for runtimes that run images.
    pub image: Option<&'a str>,
    /// The database system the server is.
    pub system: &'static dyn DbSystem,
    /// Configuration options (name, value text; empty = a bare flag), in order.
    pub options: Vec<(String, String)>,
    /// The server's environment (e.g. `LD_PRELOAD`).
    pub env: Vec<(String, String)>,
    /// How clients connect.
    pub connect: Connect,
    /// CPUs the server may use (e.g. `0-1`), if the runtime can limit them.
    pub cpus: Option<String>,
    /// Memory limit in bytes, if the runtime can limit it.
    pub memory: Option<u64>,
    /// A datadir archive to start from (a dataset snapshot); `None` = a fresh datadir.
    pub snapshot: Option<&'a Path>,
    pub ready_timeout: Duration,
    /// Grace between SIGTERM and SIGKILL when stopping.
    pub stop_grace: Duration,
    /// The run's cancellation.
    pub cancel: CancelToken,
    /// A short host directory for the socket and server files (sockets have a 108-byte path
    /// limit); it must outlive the server.
    pub socket_dir: &'a Path,
}

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A unix socket.
    Socket {
        path: String,
    },
    Tcp {
        host: String,
        port: u16,
    },
    /// TCP with TLS; `ca` verifies the server (a host path), when the client needs it.
    Tls {
        host: String,
        port: u16,
        ca: Option<std::path::PathBuf>,
    },
}

/// How a client on this host reaches a server, and as which password-less user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub address: Address,
    pub user: String,
}

/// Where the native driver runs for a trial's client path ([`RunningServer::place_clients`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeClient {
    /// The network namespace its threads enter (`/proc/<pid>/ns/net`); `None` = cairn's own.
    pub netns: Option<std::path::PathBuf>,
    /// How it connects from there.
    pub endpoint: Endpoint,
    /// The path in words, for the record, e.g. "threads in the server container's network
    /// namespace → 127.0.0.1:3306".
    pub native: String,
    /// Where external tools run, in words.
    pub external: String,
}

/// What an external tool run beside a server did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolRun {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
    /// CPU time of the tool, if measured.
    pub cpu: Option<ClientCpu>,
}

/// How a server's datadir was restored from a dataset snapshot, for the trial's record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Restore {
    /// Where the datadir is: `host directory` (restored on the host and bind-mounted).
    pub how: String,
    /// Time the restore took, ms (before the server's start).
    pub ms: f64,
    /// What the restore wrote, where the runtime counted it.
    pub restored: Option<crate::datadir::Restored>,
}

/// A started server. Dropping it without [`RunningServer::stop`] still removes it.
pub trait RunningServer: Send + Sync {
    /// The runtime that started it (recorded as the executor).
    fn runtime(&self) -> &'static str;
    /// How a client on this host connects.
    fn endpoint(&self) -> Endpoint;
    /// What runs: version, build machine, word size, and whether each of `allocators`
    /// (library name fragments) is mapped into the server process.
    fn variant_checks(&self, allocators: &[&str]) -> Result<VariantChecks, String>;
    /// Whether the server still runs (a crash shows here).
    fn is_running(&mut self) -> bool;
    /// The last lines of the server's log, for errors.
    fn log_tail(&self) -> String;
    /// The whole server log, for the record.
    fn log(&self) -> String;
    /// How long the server took to answer after its start.
    fn ready_after(&self) -> Duration;
    /// How its datadir was restored from the snapshot, where the runtime restored it itself
    /// (`None`: no snapshot, or unpacked in a way the runtime does not time).
    fn restore(&self) -> Option<Restore> {
        None
    }
    /// Stop (SIGTERM, SIGKILL after the grace) and remove it.
    fn stop(self: Box<Self>) -> Result<(), String>;
    /// Remove it without waiting for a clean shutdown (SIGKILL at once): for a server whose
    /// datadir is thrown away, where the flush of a clean shutdown is time spent for nothing.
    fn discard(self: Box<Self>) -> Result<(), String> {
        self.stop()
    }
    /// Stop cleanly and write the datadir to `dest` as a snapshot archive (entries `data/…`);
    /// returns its size. An unclean shutdown is an error.
    fn stop_archiving(self: Box<Self>, dest: &Path) -> Result<u64, String>;
    /// How a tool run by [`RunningServer::run_tool`] reaches the server, where it runs;
    /// `None` if this runtime cannot run tools.
    fn tool_endpoint(&self) -> Option<Address>;
    /// Run an external tool beside the server, killed after `limit`.
    fn run_tool(&self, argv: &[String], limit: Option<Duration>) -> Result<ToolRun, String>;
    /// A reader of the server's CPU time and context switches (for efficiency figures
    /// around a measured window); the error says why this runtime cannot read them.
    fn resource_probe(&self) -> Result<ResourceProbe, String> {
        Err(format!(
            "the `{}` executor cannot read its server's resource usage",
            self.runtime()
        ))
    }
    /// The CPUs the server's process may run on, as the kernel says (its affinity): what a
    /// cpuset really gave it. The default cannot tell.
    fn cpu_affinity(&self) -> Result<Vec<u32>, String> {
        Err(format!(
            "the `{}` executor cannot read its server's CPU affinity",
            self.runtime()
        ))
    }
    /// Pin the external tools of [`RunningServer::run_tool`] to cpuset `cpus` from now on
    /// (the trials' `cpus` factor keeps clients off the server's CPUs). The default cannot.
    fn pin_tools(&mut self, cpus: &str) -> Result<(), String> {
        Err(format!(
            "the `{}` executor cannot pin its tools to CPUs {cpus}",
            self.runtime()
        ))
    }
    /// Put this trial's clients at `path` — the native driver (the returned place) and the
    /// external tools of [`RunningServer::run_tool`] from now on — and the `link`, if any, on
    /// the server's interface. A runtime whose clients can only be where the server is
    /// answers `host` only (the default).
    fn place_clients(
        &mut self,
        path: ClientPath,
        link: Option<&Link>,
    ) -> Result<NativeClient, String> {
        if path != ClientPath::Host || link.is_some() {
            return Err(format!(
                "the `{}` executor runs its server on this host: its clients can only be on the host, without a link",
                self.runtime()
            ));
        }
        Ok(NativeClient {
            netns: None,
            endpoint: self.endpoint(),
            native: "cairn's threads on the host".into(),
            external: "none".into(),
        })
    }
}

/// The server runtimes of a run, by name, with the run's cancel token and container engine.
pub struct Runtimes {
    cancel: CancelToken,
    engine: DockerConnection,
    runtimes: Vec<Box<dyn ServerRuntime>>,
}

impl Runtimes {
    /// `docker` and `process`, sharing `cancel` and a container engine connected on first use.
    pub fn new(cancel: CancelToken) -> Self {
        Self::with_engine(cancel, DockerConnection::new())
    }

    /// As [`Runtimes::new`] with a given engine connection.
    pub fn with_engine(cancel: CancelToken, engine: DockerConnection) -> Self {
        let mut r = Runtimes {
            cancel: cancel.clone(),
            engine: engine.clone(),
            runtimes: Vec::new(),
        };
        r.add(Box::new(docker::DockerRuntime::new(engine)));
        r.add(Box::new(host::HostRuntime::new()));
        r
    }

    /// The runtimes cairn registers, for what needs their names and rules without starting
    /// a server (`cairn check`): made once, never connected to an engine.
    pub fn registered() -> &'static Runtimes {
        static REGISTERED: std::sync::OnceLock<Runtimes> = std::sync::OnceLock::new();
        REGISTERED.get_or_init(|| Runtimes::new(CancelToken::new()))
    }

    /// Add (or replace, by name) a runtime.
    pub fn add(&mut self, runtime: Box<dyn ServerRuntime>) {
        self.runtimes.retain(|r| r.name() != runtime.name());
        self.runtimes.push(runtime);
    }

    /// The runtime called `name`; the error lists the known ones.
    pub fn get(&self, name: &str) -> Result<&dyn ServerRuntime, String> {
        self.runtimes
            .iter()
            .find(|r| r.name() == name)
            .map(|r| r.as_ref())
            .ok_or_else(|| {
                format!(
                    "unknown executor `{name}`: known executors are {}",
                    self.names().join(", ")
                )
            })
    }

    /// The runtimes' names, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.runtimes.iter().map(|r| r.name()).collect()
    }

    /// The container engine (image steps and cleanup use it too); the error says how to
    /// start one.
    pub fn container_engine(&self) -> Result<Docker, String> {
        self.engine.get()
    }

    /// The shared, lazily connected container engine.
    pub fn engine_connection(&self) -> &DockerConnection {
        &self.engine
    }

    /// The run's cancellation.
    pub fn cancel(&self) -> &CancelToken {
        &self.cancel
    }
}

impl std::fmt::Debug for Runtimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtimes")
            .field("runtimes", &self.names())
            .field("engine", &self.engine)
            .field("cancel", &self.cancel)
            .finish()
    }
}

/// A per-runtime cache of allocator lookups, keyed by (image, allocator).
#[derive(Debug, Default)]
pub(crate) struct AllocatorCache {
    map: std::sync::Mutex<std::collections::BTreeMap<(String, String), Option<String>>>,
}

impl AllocatorCache {
    /// The cached answer for (`image`, `allocator`), else `look_up`'s (cached if it succeeds).
    pub(crate) fn get_or(
        &self,
        image: &str,
        allocator: &str,
        look_up: impl FnOnce() -> Result<Option<String>, String>,
    ) -> Result<Option<String>, String> {
        let key = (image.to_string(), allocator.to_string());
        let lock = || self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(hit) = lock().get(&key) {
            return Ok(hit.clone());
        }
        // not held while looking up: a lookup may start a container
        let found = look_up()?;
        lock().insert(key, found.clone());
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    impl ServerRuntime for Fake {
        fn name(&self) -> &'static str {
            "cluster"
        }
        fn available(&self) -> Result<(), String> {
            Ok(())
        }
        fn allocator_library(&self, _: Option<&str>, _: &str) -> Result<Option<String>, String> {
            Ok(None)
        }
        fn start(&self, _: &ServerStart<'_>) -> Result<Box<dyn RunningServer>, String> {
            Err("a fake".into())
        }
    }

    #[test]
    fn registry_finds_runtimes_and_names_the_known_ones() {
        let mut r = Runtimes::new(CancelToken::new());
        // the registry is the one list: every name it gives resolves, the two cairn always
        // had among them (another registered runtime must not break this test)
        for name in r.names() {
            assert_eq!(r.get(name).unwrap().name(), name);
        }
        assert!(r.names().starts_with(&["docker", "process"]));
        let e = r.get("kubernetes").map(|_| ()).unwrap_err();
        assert!(
            e.contains("`kubernetes`") && e.contains(&r.names().join(", ")),
            "{e}"
        );
        // another runtime joins without touching the others
        r.add(Box::new(Fake));
        assert_eq!(r.get("cluster").unwrap().name(), "cluster");
        assert!(r
            .get("nope")
            .map(|_| ())
            .unwrap_err()
            .ends_with(", cluster"));
    }

    #[test]
    fn allocator_lookups_are_cached_per_image_and_allocator() {
        let c = AllocatorCache::default();
        let calls = std::cell::Cell::new(0);
        let look = || {
            calls.set(calls.get() + 1);
            Ok(Some("/lib/libjemalloc.so.2".to_string()))
        };
        assert_eq!(
            c.get_or("i", "jemalloc", look).unwrap().as_deref(),
            Some("/lib/libjemalloc.so.2")
        );
        assert_eq!(
            c.get_or("i", "jemalloc", look).unwrap().as_deref(),
            Some("/lib/libjemalloc.so.2")
        );
        assert_eq!(calls.get(), 1);
        c.get_or("j", "jemalloc", look).unwrap();
        assert_eq!(calls.get(), 2);
        assert!(c.get_or("k", "x", || Err("no".into())).is_err());
    }
}
