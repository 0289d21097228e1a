//! The `docker` runtime: servers in containers on the run's network, external tools in
//! client containers beside them (from the server's image, on its network).

use std::path::Path;
use std::time::Duration;

use super::{
    Address, AllocatorCache, ClientPath, Connect, Endpoint, Link, NativeClient, Refusal,
    RunningServer, ServerAsk, ServerRuntime, ServerStart, ToolRun,
};
use crate::cancel::CancelToken;
use crate::docker::container::server::CONTAINER_SOCKET_DIR;
use crate::docker::container::tls::CLIENT_DIR;
use crate::docker::{
    allocator, ClientSpec, Docker, DockerConnection, NetnsHolder, Server, ServerSpec,
};
use crate::server_log::log_excerpt;
use crate::usage::ResourceProbe;
use crate::variant_checks::VariantChecks;

/// Grace when a server is dropped without a stop (an error path): no clean shutdown needed.
const DROP_GRACE: Duration = Duration::from_secs(1);

/// Servers in Docker containers.
#[derive(Debug)]
pub struct DockerRuntime {
    engine: DockerConnection,
    allocators: AllocatorCache,
    /// A lease on each run's network, taken at the run's first server and released when
    /// the runtime (the run's context) goes: the network is made once per run, not once per
    /// trial (creating and removing one costs about half a second).
    run_networks: std::sync::Mutex<Vec<(Docker, String)>>,
}

impl DockerRuntime {
    pub fn new(engine: DockerConnection) -> Self {
        DockerRuntime {
            engine,
            allocators: AllocatorCache::default(),
            run_networks: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Hold `run_id`'s network for as long as this runtime lives.
    fn hold_run_network(&self, docker: &Docker, run_id: &str) -> Result<(), String> {
        let name = crate::docker::network_name(run_id);
        let mut held = self.run_networks.lock().unwrap_or_else(|p| p.into_inner());
        if !held.iter().any(|(_, n)| *n == name) {
            let n = docker.lease_network(run_id).map_err(|e| e.to_string())?;
            held.push((docker.clone(), n));
        }
        Ok(())
    }
}

impl Drop for DockerRuntime {
    fn drop(&mut self) {
        let held = std::mem::take(
            self.run_networks
                .get_mut()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (docker, network) in held {
            let _ = docker.release_network(&network);
        }
    }
}

/// The smallest memory limit a container may have (Docker's minimum).
const MIN_MEMORY: u64 = 6 * 1024 * 1024;

impl ServerRuntime for DockerRuntime {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn available(&self) -> Result<(), String> {
        self.engine.get().map(|_| ())
    }

    fn uses_container_engine(&self) -> bool {
        true
    }

    fn refuses(&self, ask: &ServerAsk<'_>) -> Result<(), Refusal> {
        if ask.link.is_some() {
            let why = if ask.connect == Connect::Socket {
                Some("its clients connect over the socket, which crosses no network")
            } else if ask.client == Some(ClientPath::Loopback) {
                Some("loopback clients do not cross the server's network interface")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Refusal::new(
                    "link",
                    format!("a `link` cannot apply: {why}"),
                ));
            }
        }
        // the container engine refuses less ("Minimum memory limit allowed is 6MB")
        if let Some(bytes) = ask.memory.filter(|b| *b < MIN_MEMORY) {
            return Err(Refusal::new(
                "memory",
                format!("`memory` is {bytes} bytes; a server container needs at least 6M"),
            ));
        }
        Ok(())
    }

    fn allocator_library(
        &self,
        image: Option<&str>,
        allocator: &str,
    ) -> Result<Option<String>, String> {
        let image = image.ok_or("a server run by the Docker executor needs an `image`")?;
        self.allocators.get_or(image, allocator, || {
            let d = self.engine.get()?;
            allocator::allocator_library(&d, image, allocator).map_err(|e| e.to_string())
        })
    }

    fn variables_output(
        &self,
        image: Option<&str>,
        system: &dyn crate::system::DbSystem,
    ) -> Result<Option<String>, String> {
        let image = image.ok_or("a server run by the Docker executor needs an `image`")?;
        let Some(script) = system.variables_script() else {
            return Ok(None);
        };
        let docker = self.engine.get()?;
        if docker.image_id(image).map_err(|e| e.to_string())?.is_none() {
            return Err(format!(
                "image `{image}` is not in the container engine (the next run builds it again)"
            ));
        }
        let cmd = ["/bin/sh", "-c", script.as_str()];
        let out = docker
            .run_once(image, &cmd)
            .and_then(|o| o.check(&cmd, image))
            .map_err(|e| format!("listing the option names of {}: {e}", system.name()))?;
        Ok(Some(out.stdout))
    }

    fn start(&self, s: &ServerStart<'_>) -> Result<Box<dyn RunningServer>, String> {
        let image = s
            .image
            .ok_or("a server run by the Docker executor needs an `image`")?;
        let docker = self.engine.get()?;
        self.hold_run_network(&docker, s.run_id)?;
        let mut spec = ServerSpec::new(
            s.run_id,
            s.step_id,
            image,
            s.options.clone(),
            s.socket_dir.to_path_buf(),
        );
        spec.system = s.system;
        spec.env = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        spec.connect = s.connect;
        spec.cpuset = s.cpus.clone();
        spec.memory = s.memory;
        spec.ready_timeout = s.ready_timeout;
        spec.stop_timeout = s.stop_grace;
        let (datadir, restore) = if host_datadirs() {
            let (dir, restore) = host_datadir(s)?;
            spec.data_dir = Some(dir.path().join("data"));
            (Some(dir), restore)
        } else {
            spec.datadir_archive = s.snapshot.map(Path::to_path_buf);
            (None, None)
        };
        let server = docker.start_server(&spec).map_err(|e| e.to_string())?;
        Ok(Box::new(DockerServer {
            docker,
            server: Some(server),
            _datadir: datadir,
            restore,
            stop_grace: s.stop_grace,
            cancel: s.cancel.clone(),
            clients: None,
            holder: None,
            tool_cpus: None,
        }))
    }
}

/// Whether servers get their datadir in a host directory (bind-mounted) rather than inside
/// the container: only as root, since the server's service user owns the files and only
/// root can remove them afterwards. A host directory is restored from a snapshot on the
/// host ([`crate::datadir::restore`]: a read of the archive from the page cache, only the
/// non-zero blocks written) instead of being uploaded through the Engine's archive API into
/// the container's storage driver, and the server's I/O goes to the host's filesystem
/// directly, not through the storage driver (e.g. fuse-overlayfs).
fn host_datadirs() -> bool {
    // SAFETY: geteuid has no preconditions
    unsafe { libc::geteuid() == 0 }
}

/// A host directory for a server's datadir (`<dir>/data`), named by the run so that a
/// killed run's is swept like its socket directory; the snapshot restored into it, if any.
fn host_datadir(
    s: &ServerStart<'_>,
) -> Result<(tempfile::TempDir, Option<super::Restore>), String> {
    let dir = tempfile::Builder::new()
        .prefix(&crate::docker::cleanup::socket_dir_prefix(s.run_id))
        .tempdir_in(std::env::temp_dir())
        .map_err(|e| format!("cannot make a datadir directory: {e}"))?;
    let Some(snapshot) = s.snapshot else {
        return Ok((dir, None));
    };
    let t = std::time::Instant::now();
    let restored = crate::datadir::restore(snapshot, dir.path()).map_err(|e| {
        format!(
            "restoring the datadir snapshot {} into {}: {e}",
            snapshot.display(),
            dir.path().display()
        )
    })?;
    Ok((
        dir,
        Some(super::Restore {
            how: "host directory".into(),
            ms: t.elapsed().as_secs_f64() * 1e3,
            restored: Some(restored),
        }),
    ))
}

/// A server container. Dropped without a stop, it is removed at once.
pub struct DockerServer {
    docker: Docker,
    /// `None` once stopped.
    server: Option<Server>,
    /// The host directory holding the datadir, removed after the server (fields drop after
    /// `Drop::drop` ran).
    _datadir: Option<tempfile::TempDir>,
    /// How the datadir was restored from a snapshot, if it was.
    restore: Option<super::Restore>,
    stop_grace: Duration,
    cancel: CancelToken,
    /// Where this trial's clients run, once placed; `None` = each driver's own place (the
    /// native driver on the host, tools on the bridge).
    clients: Option<ClientPath>,
    /// The container whose network namespace the native driver enters for
    /// [`ClientPath::Bridge`].
    holder: Option<NetnsHolder>,
    /// The cpuset external tools are pinned to, once pinned; `None` = anywhere.
    tool_cpus: Option<String>,
}

/// The server's network interface in its container (the run network's).
const SERVER_DEV: &str = "eth0";

impl DockerServer {
    fn server(&self) -> &Server {
        self.server
            .as_ref()
            .expect("a server is running until stopped")
    }

    fn remove_holder(&mut self) {
        if let Some(h) = self.holder.take() {
            let _ = self.docker.remove_netns_holder(&h);
        }
    }
}

impl RunningServer for DockerServer {
    fn runtime(&self) -> &'static str {
        "docker"
    }

    fn endpoint(&self) -> Endpoint {
        let server = self.server();
        let user = server.tcp_user.clone().unwrap_or_else(|| "cairn".into());
        let address = match server.connect {
            Connect::Socket => Address::Socket {
                path: server.socket_path.display().to_string(),
            },
            Connect::Tcp => Address::Tcp {
                host: server.ip.clone(),
                port: server.port,
            },
            Connect::Tls => Address::Tls {
                host: server.ip.clone(),
                port: server.port,
                ca: server.tls_ca.clone(),
            },
        };
        Endpoint { address, user }
    }

    fn place_clients(
        &mut self,
        path: ClientPath,
        link: Option<&Link>,
    ) -> Result<NativeClient, String> {
        let server = self.server().clone();
        if let Some(link) = link {
            if path == ClientPath::Loopback || server.connect == Connect::Socket {
                return Err(
                    "a link shapes the server's network interface: loopback and socket clients do not cross it"
                        .into(),
                );
            }
            link.apply(server.host_pid, SERVER_DEV)?;
        }
        let mut endpoint = self.endpoint();
        let socket = server.connect == Connect::Socket;
        // how the connection goes from there: a socket is reached through the filesystem,
        // whatever the network namespace
        let over = |tcp: &str| {
            if socket {
                "over the unix socket".to_string()
            } else {
                format!("over TCP {tcp}")
            }
        };
        let (netns, native, external) = match path {
            ClientPath::Loopback => {
                endpoint.address = loopback(endpoint.address);
                (
                    Some(format!("/proc/{}/ns/net", server.host_pid).into()),
                    format!(
                        "cairn's threads in the server container's network namespace, {}",
                        over("to 127.0.0.1")
                    ),
                    format!(
                        "a container sharing the server container's network namespace, {}",
                        over("to 127.0.0.1")
                    ),
                )
            }
            ClientPath::Bridge => {
                self.remove_holder();
                let holder = self
                    .docker
                    .start_netns_holder(
                        &server.run_id,
                        &server.step_id,
                        &server.image,
                        &server.network,
                    )
                    .map_err(|e| e.to_string())?;
                let ns = format!("/proc/{}/ns/net", holder.host_pid);
                self.holder = Some(holder);
                (
                    Some(ns.into()),
                    format!(
                        "cairn's threads in another container's network namespace on {}, {}",
                        server.network,
                        over("across the bridge")
                    ),
                    format!(
                        "another container on {}, {}",
                        server.network,
                        over("across the bridge")
                    ),
                )
            }
            ClientPath::Host => (
                None,
                format!(
                    "cairn's threads on the host, {}",
                    over("to the container's address")
                ),
                format!(
                    "a container in the host's network namespace, {}",
                    over("to the container's address")
                ),
            ),
        };
        self.clients = Some(path);
        Ok(NativeClient {
            netns,
            endpoint,
            native,
            external,
        })
    }

    fn variant_checks(&self, allocators: &[&str]) -> Result<VariantChecks, String> {
        self.docker
            .variant_checks(self.server(), allocators)
            .map_err(|e| e.to_string())
    }

    fn is_running(&mut self) -> bool {
        self.server
            .as_ref()
            .is_some_and(|s| self.docker.server_running(s).unwrap_or(false))
    }

    fn log_tail(&self) -> String {
        self.docker
            .server_log(self.server(), Some(400))
            .map(|o| log_excerpt(&o.tail(usize::MAX), 30))
            .unwrap_or_else(|e| format!("(no log: {e})"))
    }

    fn log(&self) -> String {
        self.docker
            .server_log(self.server(), None)
            .map(|o| o.tail(usize::MAX))
            .unwrap_or_default()
    }

    fn ready_after(&self) -> Duration {
        self.server().ready_after
    }

    fn restore(&self) -> Option<super::Restore> {
        self.restore.clone()
    }

    fn stop(mut self: Box<Self>) -> Result<(), String> {
        self.remove_holder();
        let server = self.server.take().expect("stopped once");
        self.docker
            .stop_server(&server, self.stop_grace)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn discard(mut self: Box<Self>) -> Result<(), String> {
        self.remove_holder();
        let server = self.server.take().expect("stopped once");
        self.docker
            .stop_server(&server, Duration::ZERO)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn stop_archiving(mut self: Box<Self>, dest: &Path) -> Result<u64, String> {
        self.remove_holder();
        let server = self.server.take().expect("stopped once");
        self.docker
            .stop_server_archiving(&server, self.stop_grace, dest)
            .map_err(|e| e.to_string())
    }

    fn tool_endpoint(&self) -> Option<Address> {
        Some(tool_address(self.server(), self.clients))
    }

    fn run_tool(&self, argv: &[String], limit: Option<Duration>) -> Result<ToolRun, String> {
        let mut spec = client_spec(self.server(), self.clients, argv, limit);
        spec.cancel = self.cancel.clone();
        spec.cpuset = self.tool_cpus.clone();
        let out = self.docker.run_client(&spec).map_err(|e| e.to_string())?;
        Ok(ToolRun {
            exit_code: out.exit_code,
            stdout: out.stdout,
            stderr: out.stderr,
            cpu: out.cpu,
        })
    }

    /// The affinity of the container's first process (the server, or the script that
    /// starts it): what the container's cpuset gave it.
    fn cpu_affinity(&self) -> Result<Vec<u32>, String> {
        let pid = self.server().host_pid;
        if pid == 0 {
            return Err("the engine reported no host PID for the server container".into());
        }
        crate::cpu_sets::affinity_of(pid)
    }

    fn pin_tools(&mut self, cpus: &str) -> Result<(), String> {
        crate::cpu_sets::parse_list(cpus)?;
        self.tool_cpus = Some(cpus.to_string());
        Ok(())
    }

    /// CPU from the container's cgroup (every process in it), switches from the server
    /// process's threads; where the container's cgroup cannot be read from here (another
    /// cgroup namespace), CPU from the server process alone.
    fn resource_probe(&self) -> Result<ResourceProbe, String> {
        let pid = self.server().host_pid;
        if pid == 0 {
            return Err("the engine reported no host PID for the server container".into());
        }
        Ok(
            ResourceProbe::container(pid, std::path::Path::new("/sys/fs/cgroup"))
                .unwrap_or_else(|_| ResourceProbe::process(pid)),
        )
    }
}

impl Drop for DockerServer {
    fn drop(&mut self) {
        self.remove_holder();
        // an error path: remove the server without waiting for a clean shutdown
        if let Some(server) = self.server.take() {
            let _ = self.docker.stop_server(&server, DROP_GRACE);
        }
    }
}

/// A TCP or TLS address at the server's loopback interface instead (a socket is a socket).
fn loopback(address: Address) -> Address {
    let host = "127.0.0.1".to_string();
    match address {
        Address::Tcp { port, .. } => Address::Tcp { host, port },
        Address::Tls { port, ca, .. } => Address::Tls { host, port, ca },
        socket => socket,
    }
}

/// The network mode of a client container at `path`: the server's run network (the bridge,
/// also where no path was placed), the server container's namespace, or the host's.
fn client_network(server: &Server, path: Option<ClientPath>) -> String {
    match path {
        Some(ClientPath::Loopback) => format!("container:{}", server.container_id),
        Some(ClientPath::Host) => "host".into(),
        Some(ClientPath::Bridge) | None => server.network.clone(),
    }
}

/// The client container that runs `argv` beside `server`: from its image, on its run network
/// (or where `path` puts it), labelled with its run and step; for socket and TLS clients the
/// server's socket directory bound where the server has it (TLS: in its client certificate
/// directory, where sysbench 1.0 reads its TLS files from the working directory).
fn client_spec(
    server: &Server,
    path: Option<ClientPath>,
    argv: &[String],
    limit: Option<Duration>,
) -> ClientSpec {
    let mut spec = ClientSpec::new(
        &server.run_id,
        &server.image,
        &client_network(server, path),
        argv.to_vec(),
    );
    spec.step_id = Some(server.step_id.clone());
    spec.timeout = limit;
    if server.connect != Connect::Tcp {
        spec.binds = vec![format!(
            "{}:{CONTAINER_SOCKET_DIR}",
            server.socket_dir().display()
        )];
    }
    if server.connect == Connect::Tls {
        spec.working_dir = Some(format!("{CONTAINER_SOCKET_DIR}/{CLIENT_DIR}"));
    }
    spec
}

/// How a client container at `path` reaches `server` (see [`client_spec`] for the mounts).
fn tool_address(server: &Server, path: Option<ClientPath>) -> Address {
    let host = match path {
        Some(ClientPath::Loopback) => "127.0.0.1".to_string(),
        _ => server.ip.clone(),
    };
    let port = server.port;
    match server.connect {
        Connect::Tcp => Address::Tcp { host, port },
        Connect::Socket => Address::Socket {
            path: server.container_socket(),
        },
        Connect::Tls => Address::Tls {
            host,
            port,
            ca: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_json() -> Server {
        serde_json::from_value(serde_json::json!({
            "container_id": "c0ffee", "container_name": "cairn-r1-trial-1",
            "run_id": "r1", "step_id": "trial/1", "image": "cairn/mariadb-bookworm:k",
            "network": "cairn-r1", "ip": "172.18.0.2", "port": 3306, "host_pid": 42,
            "socket_path": "/tmp/cairn-x/mysqld.sock", "greeting_version": "10.11.11-MariaDB",
            "ready_after": {"secs": 1, "nanos": 0}, "tcp_user": "cairn",
        }))
        .unwrap()
    }

    #[test]
    fn clients_join_the_servers_run_network_and_image() {
        let server = server_json();
        assert_eq!(server.system, "mariadb", "the default system");
        let limit = Some(Duration::from_secs(70));
        let spec = client_spec(
            &server,
            None,
            &["sysbench".into(), "--version".into()],
            limit,
        );
        assert_eq!(spec.timeout, limit, "a hung tool is killed");
        assert_eq!(
            (spec.run_id.as_str(), spec.step_id.as_deref()),
            ("r1", Some("trial/1"))
        );
        assert_eq!(
            (spec.image.as_str(), spec.network.as_str()),
            ("cairn/mariadb-bookworm:k", "cairn-r1")
        );
        assert_eq!(spec.argv, ["sysbench", "--version"]);
        assert!(spec.measure_cpu);
        assert!(spec.binds.is_empty() && spec.working_dir.is_none());
        assert_eq!(
            tool_address(&server, None),
            Address::Tcp {
                host: "172.18.0.2".into(),
                port: 3306
            }
        );
    }

    #[test]
    fn clients_at_a_path_join_the_servers_namespace_or_the_hosts() {
        let server = server_json();
        let argv = ["sysbench".to_string()];
        let spec = client_spec(&server, Some(ClientPath::Loopback), &argv, None);
        assert_eq!(spec.network, "container:c0ffee");
        assert_eq!(
            tool_address(&server, Some(ClientPath::Loopback)),
            Address::Tcp {
                host: "127.0.0.1".into(),
                port: 3306
            }
        );
        let spec = client_spec(&server, Some(ClientPath::Host), &argv, None);
        assert_eq!(spec.network, "host");
        let spec = client_spec(&server, Some(ClientPath::Bridge), &argv, None);
        assert_eq!(spec.network, "cairn-r1");
        assert_eq!(
            loopback(Address::Tls {
                host: "172.18.0.2".into(),
                port: 3306,
                ca: None
            }),
            Address::Tls {
                host: "127.0.0.1".into(),
                port: 3306,
                ca: None
            }
        );
    }

    #[test]
    fn socket_and_tls_clients_see_the_servers_socket_directory() {
        let mut server = server_json();
        server.connect = Connect::Socket;
        let spec = client_spec(&server, None, &["sysbench".into()], None);
        assert_eq!(spec.binds, ["/tmp/cairn-x:/run/cairn"]);
        assert_eq!(spec.working_dir, None);
        assert_eq!(
            tool_address(&server, None),
            Address::Socket {
                path: "/run/cairn/mysqld.sock".into()
            }
        );
        server.connect = Connect::Tls;
        let spec = client_spec(&server, None, &["sysbench".into()], None);
        assert_eq!(spec.binds, ["/tmp/cairn-x:/run/cairn"]);
        assert_eq!(spec.working_dir.as_deref(), Some("/run/cairn/client-tls"));
    }
}
