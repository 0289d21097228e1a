//! The `process` runtime: the system's server program installed on this host, in a private
//! directory, for users without Docker. It listens on its socket (and on 127.0.0.1 for
//! `connect "tcp"`); it cannot limit CPUs or memory, serve TLS, or run external tools.

use std::path::Path;
use std::time::Duration;

use super::{
    Address, AllocatorCache, ClientPath, Connect, Endpoint, Refusal, RunningServer, ServerAsk,
    ServerRuntime, ServerStart, ToolRun,
};
use crate::allocator::host_allocator_library;
use crate::host_server::{self, HostServer, HostServerSpec};
use crate::system;
use crate::usage::ResourceProbe;
use crate::variant_checks::VariantChecks;

/// Servers as host processes.
#[derive(Debug, Default)]
pub struct HostRuntime {
    allocators: AllocatorCache,
}

impl HostRuntime {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The limits and connections a host server cannot honour, as the error the plan's author
/// sees: asked by [`ServerRuntime::refuses`] before anything runs, and again by every start
/// (whose server's own start checks the installed programs itself).
fn refuse_settings(cpus: bool, memory: bool, connect: Connect) -> Result<(), Refusal> {
    let limits = "`cpus` and `memory` limits need the Docker executor (cgroups); remove them or drop `executor \"process\"`";
    if cpus {
        return Err(Refusal::new("cpus", limits));
    }
    if memory {
        return Err(Refusal::new("memory", limits));
    }
    if connect == Connect::Tls {
        return Err(Refusal::new(
            "connect",
            "`connect \"tls\"` needs the Docker executor; the process executor's server listens on its socket",
        ));
    }
    Ok(())
}

/// Why the process executor runs no external tools beside its server (also what its
/// [`ServerRuntime::runs_tools`] says, so `cairn check` refuses it before a run would).
const NO_TOOLS: &str =
    "this runtime cannot run external tools: `tool \"external\"` needs the Docker executor";

impl ServerRuntime for HostRuntime {
    fn name(&self) -> &'static str {
        "process"
    }

    fn available(&self) -> Result<(), String> {
        let system = system::default_system();
        host_server::check_installed(system).map_err(|e| e.to_string())
    }

    fn refuses(&self, ask: &ServerAsk<'_>) -> Result<(), Refusal> {
        let system = ask.system.name();
        if !ask.system.runs_on_host() {
            return Err(Refusal::new(
                "executor",
                format!(
                    "the process executor does not start {system} servers: use the Docker executor"
                ),
            ));
        }
        if let Some(path) = ask.client.filter(|p| *p != ClientPath::Host) {
            return Err(Refusal::new(
                "client",
                format!(
                    "a server of the `process` executor runs on this host: its clients can only be on the host, not `{}`",
                    path.as_str()
                ),
            ));
        }
        if ask.link.is_some() {
            return Err(Refusal::new(
                "link",
                "a `link` cannot apply: a server of the `process` executor has no network interface of its own to shape",
            ));
        }
        refuse_settings(ask.cpus.is_some(), ask.memory.is_some(), ask.connect)?;
        // the system's programs on this host, and that they are its own (a host MariaDB's
        // `mysqld` is no MySQL): refused here, named, rather than by the server's first start
        host_server::check_installed(ask.system)
            .map_err(|e| Refusal::new("executor", e.to_string()))
    }

    fn runs_tools(&self) -> Result<(), String> {
        Err(NO_TOOLS.into())
    }

    fn allocator_library(
        &self,
        _image: Option<&str>,
        allocator: &str,
    ) -> Result<Option<String>, String> {
        // the host's own libraries: an image does not matter
        self.allocators
            .get_or("", allocator, || host_allocator_library(allocator))
    }

    fn start(&self, s: &ServerStart<'_>) -> Result<Box<dyn RunningServer>, String> {
        refuse_settings(s.cpus.is_some(), s.memory.is_some(), s.connect).map_err(|r| r.message)?;
        let mut spec = HostServerSpec::new(s.socket_dir.join("server"));
        spec.system = s.system;
        spec.options = s.options.clone();
        spec.env = s.env.clone();
        spec.ready_timeout = s.ready_timeout;
        spec.datadir_archive = s.snapshot.map(Path::to_path_buf);
        spec.cancel = s.cancel.clone();
        if s.connect == Connect::Tcp {
            spec.tcp_port = Some(free_port()?);
        }
        let server = host_server::start(&spec).map_err(|e| e.to_string())?;
        Ok(Box::new(HostProcessServer {
            server: Some(server),
            connect: s.connect,
            stop_grace: s.stop_grace,
        }))
    }
}

/// A host server process; dropped without a stop, it is killed (by [`HostServer`]'s drop).
pub struct HostProcessServer {
    /// `None` once stopped.
    server: Option<HostServer>,
    connect: Connect,
    stop_grace: Duration,
}

impl HostProcessServer {
    fn server(&self) -> &HostServer {
        self.server
            .as_ref()
            .expect("a server is running until stopped")
    }
}

impl RunningServer for HostProcessServer {
    fn runtime(&self) -> &'static str {
        "process"
    }

    /// The server runs as this user: its system's administrator over the socket or 127.0.0.1.
    fn endpoint(&self) -> Endpoint {
        let server = self.server();
        let address = match server.tcp_port {
            Some(port) if self.connect == Connect::Tcp => Address::Tcp {
                host: "127.0.0.1".into(),
                port,
            },
            _ => Address::Socket {
                path: server.socket.display().to_string(),
            },
        };
        Endpoint {
            address,
            user: server.system().admin_user().into(),
        }
    }

    fn variant_checks(&self, allocators: &[&str]) -> Result<VariantChecks, String> {
        self.server()
            .variant_checks(allocators)
            .map_err(|e| e.to_string())
    }

    fn is_running(&mut self) -> bool {
        self.server.as_mut().is_some_and(HostServer::is_running)
    }

    fn log_tail(&self) -> String {
        self.server
            .as_ref()
            .map(HostServer::log_tail)
            .unwrap_or_default()
    }

    fn log(&self) -> String {
        self.server
            .as_ref()
            .and_then(|s| std::fs::read_to_string(&s.log).ok())
            .unwrap_or_default()
    }

    fn ready_after(&self) -> Duration {
        self.server().ready_after
    }

    fn stop(mut self: Box<Self>) -> Result<(), String> {
        let server = self.server.take().expect("stopped once");
        server
            .stop(self.stop_grace)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn discard(mut self: Box<Self>) -> Result<(), String> {
        let server = self.server.take().expect("stopped once");
        server
            .stop(Duration::ZERO)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn stop_archiving(mut self: Box<Self>, dest: &Path) -> Result<u64, String> {
        let server = self.server.take().expect("stopped once");
        server
            .stop_archiving(self.stop_grace, dest)
            .map_err(|e| e.to_string())
    }

    fn tool_endpoint(&self) -> Option<Address> {
        None
    }

    fn run_tool(&self, _argv: &[String], _limit: Option<Duration>) -> Result<ToolRun, String> {
        Err(NO_TOOLS.into())
    }

    /// The server process (it shares this host's cgroup, so only its own `/proc` counts).
    fn resource_probe(&self) -> Result<ResourceProbe, String> {
        Ok(ResourceProbe::process(self.server().pid))
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
    use crate::cancel::CancelToken;

    #[test]
    fn host_servers_refuse_what_they_cannot_do() {
        let dir = std::path::Path::new("/nonexistent");
        let mut s = ServerStart {
            run_id: "r",
            step_id: "s",
            image: None,
            system: system::by_name("mariadb").unwrap(),
            options: Vec::new(),
            env: Vec::new(),
            connect: Connect::Socket,
            cpus: Some("0".into()),
            memory: None,
            snapshot: None,
            ready_timeout: Duration::from_secs(1),
            stop_grace: Duration::from_secs(1),
            cancel: CancelToken::new(),
            socket_dir: dir,
        };
        let e = HostRuntime::new().start(&s).map(|_| ()).unwrap_err();
        assert!(e.contains("need the Docker executor"), "{e}");
        s.cpus = None;
        s.connect = Connect::Tls;
        let e = HostRuntime::new().start(&s).map(|_| ()).unwrap_err();
        assert!(e.contains("`connect \"tls\"`"), "{e}");
    }
}
