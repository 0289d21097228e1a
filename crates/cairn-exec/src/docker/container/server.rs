//! Database server containers: the container lifecycle — create on the run's network, upload
//! the configuration (and a datadir snapshot), start, wait until the server answers, stop,
//! remove, archive the datadir.
//!
//! What the server program is comes from the spec's [`DbSystem`]: a server container runs, as
//! root, the system's start script (prepare the socket and data directories, initialise an
//! empty datadir, `exec` the server, which drops to its service user; as PID 1 of the
//! container its host PID is `State.Pid`). The system's configuration file is uploaded to
//! [`CONTAINER_CONFIG_DIR`] in the created container before it starts; the socket
//! directory is a host directory bind-mounted at [`CONTAINER_SOCKET_DIR`].
//!
//! Ready means (see [`crate::docker::container::readiness`]): from the host, a TCP connection to the container's
//! address receives the system's greeting, the unix socket in the host directory does too, and
//! the system's ping inside the container succeeds — bounded by `ready_timeout`. A server
//! that exits or does not answer in time is removed and reported with the last lines of its log.
//!
//! [`Connect::Tls`] adds a CA and server certificate made for this start (see [`crate::docker::container::tls`]):
//! the script waits for them before anything else, they are uploaded once the container has
//! its address (so the certificate can name it), and unencrypted TCP clients are refused.
//! `cpuset` and `memory` become the container's cgroup limits.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bollard::models::{ContainerCreateBody, EndpointSettings, HostConfig, NetworkingConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, StopContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};

use crate::docker::container::readiness::{greet_tcp, greet_unix};
use crate::docker::container::tls::{
    self, CA_FILE, CERT_FILE, CONTAINER_TLS_DIR, KEY_FILE, TLS_READY_MARKER,
};
use crate::docker::image::layer::{tar_files, LayerFile};
use crate::docker::{
    container_logs, exec_async, is_not_found, labels, remove_container_quiet, sanitize_name,
    Docker, DockerError, ExecOutput, Result, LABEL_RUN, LABEL_STEP,
};
use crate::netpath::Connect;
use crate::server_log::log_excerpt;
use crate::system::{self, DbSystem, Greeting, ServerLayout};
use crate::variant_checks::VariantChecks;

/// Where the socket directory is mounted inside the container.
pub const CONTAINER_SOCKET_DIR: &str = "/run/cairn";
/// The datadir inside the container.
pub const CONTAINER_DATADIR: &str = "/var/lib/cairn/data";
/// The directory holding the datadir: archives of it unpack here.
const DATADIR_PARENT: &str = "/var/lib/cairn";
/// Between two readiness probes of a starting server.
const POLL: Duration = Duration::from_millis(25);
/// The directory of the server's configuration file inside the container.
pub const CONTAINER_CONFIG_DIR: &str = "/etc/cairn";

/// How to start one server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Run id: network `cairn-<run>`, label `cairn.run=<run>`.
    pub run_id: String,
    /// Step id: label `cairn.step=<step>`, network alias, part of the container name.
    pub step_id: String,
    /// Image reference or id (with the system's server installed).
    pub image: String,
    /// The database system the image's server is.
    pub system: &'static dyn DbSystem,
    /// Configuration options (name, value; empty value = a bare flag), before cairn's own
    /// settings (see [`container_layout`]).
    pub options: Vec<(String, String)>,
    /// Host directory bind-mounted at [`CONTAINER_SOCKET_DIR`] (the socket appears here).
    pub socket_dir: PathBuf,
    /// Host directory for the datadir; `None` = inside the container (removed with it).
    pub data_dir: Option<PathBuf>,
    /// A datadir archive made by [`Docker::stop_server_archiving`] (a tar whose entries are
    /// `data/…`), unpacked into the container before the server starts: a dataset snapshot.
    pub datadir_archive: Option<PathBuf>,
    /// Extra environment, `KEY=VALUE` (e.g. `LD_PRELOAD=…`).
    pub env: Vec<String>,
    /// How long to wait for the server to answer.
    pub ready_timeout: Duration,
    /// Grace period between SIGTERM and SIGKILL on stop.
    pub stop_timeout: Duration,
    /// If set, create this password-less user `'<name>'@'%'` with all privileges once ready
    /// (for clients on the run's network, which cannot use socket authentication).
    pub tcp_user: Option<String>,
    /// How clients connect; [`Connect::Tls`] generates certificates and requires TLS on TCP.
    pub connect: Connect,
    /// CPUs the container may use (cgroup cpuset), e.g. `0-1` or `0,2`.
    pub cpuset: Option<String>,
    /// Memory limit in bytes (swap is limited to the same, i.e. none beyond it).
    pub memory: Option<u64>,
}

impl ServerSpec {
    /// A spec with defaults: the default system, 60 s ready timeout, 30 s stop grace, user
    /// `cairn` for TCP.
    pub fn new(
        run_id: &str,
        step_id: &str,
        image: &str,
        options: Vec<(String, String)>,
        socket_dir: PathBuf,
    ) -> Self {
        ServerSpec {
            run_id: run_id.into(),
            step_id: step_id.into(),
            image: image.into(),
            system: system::default_system(),
            options,
            socket_dir,
            data_dir: None,
            datadir_archive: None,
            env: Vec::new(),
            ready_timeout: Duration::from_secs(60),
            stop_timeout: Duration::from_secs(30),
            tcp_user: Some("cairn".into()),
            connect: Connect::default(),
            cpuset: None,
            memory: None,
        }
    }
}

/// A running server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Server {
    pub container_id: String,
    pub container_name: String,
    pub run_id: String,
    pub step_id: String,
    pub image: String,
    /// The run's network, `cairn-<run>`.
    pub network: String,
    /// The container's address on that network.
    pub ip: String,
    pub port: u16,
    /// The server's PID on the host (`State.Pid`), for `/proc/<pid>/…`.
    pub host_pid: u32,
    /// The socket, as a host path.
    pub socket_path: PathBuf,
    /// The server version from the protocol greeting.
    pub greeting_version: String,
    /// Time from container start until the server answered.
    pub ready_after: Duration,
    /// The TCP user created, if any.
    pub tcp_user: Option<String>,
    /// How clients are meant to connect.
    #[serde(default)]
    pub connect: Connect,
    /// For [`Connect::Tls`]: the CA certificate on the host (beside the socket), to verify
    /// the server with (`--ssl-ca`); inside the container it is at `/etc/cairn/tls/ca.pem`.
    #[serde(default)]
    pub tls_ca: Option<PathBuf>,
    /// The database system's name (see [`crate::system::by_name`]).
    #[serde(default = "default_system")]
    pub system: String,
    /// The host directory bind-mounted as the datadir, if any (else it is inside the
    /// container).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// The system's variant query's answer, asked in the readiness check (one exec into the
    /// container fewer per start), for [`Docker::variant_checks`].
    #[serde(default)]
    pub variant_row: Option<String>,
}

fn default_system() -> String {
    cairn_defs::server::DEFAULT_SYSTEM.to_string()
}

impl Server {
    /// `ip:port` of the server on the run's network.
    pub fn tcp_addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// The host directory holding the socket; bind it at [`CONTAINER_SOCKET_DIR`] to reach
    /// the server over its socket from another container.
    pub fn socket_dir(&self) -> &std::path::Path {
        self.socket_path
            .parent()
            .unwrap_or_else(|| std::path::Path::new("/"))
    }

    /// The database system the server is.
    pub fn db_system(&self) -> Result<&'static dyn DbSystem> {
        system::by_name(&self.system).map_err(DockerError::Invalid)
    }

    /// The socket as a client container sees it with [`Server::socket_dir`] bound at
    /// [`CONTAINER_SOCKET_DIR`].
    pub fn container_socket(&self) -> String {
        let name = self
            .socket_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{CONTAINER_SOCKET_DIR}/{name}")
    }

    /// For [`Connect::Tls`]: the host directory (inside [`Server::socket_dir`]) with a client
    /// certificate, its key and the CA under the names sysbench 1.0 reads
    /// ([`tls::CLIENT_DIR`]).
    pub fn tls_client_dir(&self) -> Option<PathBuf> {
        (self.connect == Connect::Tls).then(|| self.socket_dir().join(tls::CLIENT_DIR))
    }
}

pub use crate::docker::cleanup::CleanupReport;

/// Where a server's files are inside its container, and how it listens there.
pub fn container_layout(system: &dyn DbSystem, tls: bool) -> ServerLayout {
    ServerLayout {
        datadir: CONTAINER_DATADIR.into(),
        socket: format!("{CONTAINER_SOCKET_DIR}/{}", system.socket_name()),
        pid_file: format!("{CONTAINER_SOCKET_DIR}/server.pid"),
        log_file: None,
        listen: Some(("0.0.0.0".into(), system.default_port())),
        run_as: Some(system.service_user().into()),
        tls: tls.then(tls::container_tls_files),
        tmpdir: None,
    }
}

/// The configuration file's path inside the container.
fn container_config(system: &dyn DbSystem) -> String {
    format!("{CONTAINER_CONFIG_DIR}/{}", system.config_name())
}

fn container_name(run_id: &str, step_id: &str) -> String {
    format!("cairn-{}-{}", sanitize_name(run_id), sanitize_name(step_id))
}

/// The container's command: wait for the TLS files if any, then the system's start script.
fn start_script(system: &dyn DbSystem, tls: bool) -> String {
    let wait_tls = if tls {
        format!(
            "i=0\n\
             while [ ! -e {dir}/{TLS_READY_MARKER} ]; do\n\
               i=$((i+1)); if [ $i -gt 600 ]; then echo 'cairn: the TLS certificates never arrived'; exit 1; fi\n\
               sleep 0.05\n\
             done\n",
            dir = CONTAINER_TLS_DIR
        )
    } else {
        String::new()
    };
    let layout = container_layout(system, tls);
    let script = system.container_start_script(
        &container_config(system),
        &layout,
        tls.then_some(CONTAINER_TLS_DIR),
    );
    format!("set -e\n{wait_tls}{script}")
}

/// Stop a server's container (SIGTERM, SIGKILL after `grace`; already stopped is fine) and
/// return its exit code (-1 if the container is gone or has none).
async fn stop_container(api: &bollard::Docker, server: &Server, grace: Duration) -> Result<i64> {
    let opts = StopContainerOptionsBuilder::new()
        .t(grace.as_secs().min(i32::MAX as u64) as i32)
        .build();
    match api.stop_container(&server.container_id, Some(opts)).await {
        Ok(()) => {}
        // 304: already stopped
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 304, ..
        }) => {}
        Err(e) if is_not_found(&e) => return Ok(-1),
        Err(e) => {
            return Err(DockerError::api(format!("stop {}", server.container_name))(
                e,
            ))
        }
    }
    Ok(api
        .inspect_container(&server.container_id, None)
        .await
        .ok()
        .and_then(|i| i.state)
        .and_then(|s| s.exit_code)
        .unwrap_or(-1))
}

impl Docker {
    /// What the running `server` is ([`VariantChecks::read`] of its host process); the
    /// variant query's answer is the one its readiness check asked for, else asked now.
    pub fn variant_checks(&self, server: &Server, allocators: &[&str]) -> Result<VariantChecks> {
        let row = match &server.variant_row {
            Some(row) => row.clone(),
            None => self.sql(server, server.db_system()?.variant_query())?,
        };
        VariantChecks::read(&row, server.host_pid, allocators).map_err(DockerError::Invalid)
    }
}

impl Docker {
    /// Start a server as described; returns once it answers (see the module doc).
    pub fn start_server(&self, spec: &ServerSpec) -> Result<Server> {
        let t0 = Instant::now();
        // first, so a bad option starts nothing and leaves nothing behind
        let config = spec
            .system
            .config_file(
                &spec.options,
                &container_layout(spec.system, spec.connect == Connect::Tls),
            )
            .map_err(DockerError::Invalid)?;
        std::fs::create_dir_all(&spec.socket_dir).map_err(DockerError::io(format!(
            "create {}",
            spec.socket_dir.display()
        )))?;
        let socket_dir = spec
            .socket_dir
            .canonicalize()
            .map_err(DockerError::io(format!(
                "resolve {}",
                spec.socket_dir.display()
            )))?;
        let _ = std::fs::remove_file(socket_dir.join(spec.system.socket_name()));
        let data_dir = match &spec.data_dir {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .map_err(DockerError::io(format!("create {}", d.display())))?;
                Some(
                    d.canonicalize()
                        .map_err(DockerError::io(format!("resolve {}", d.display())))?,
                )
            }
            None => None,
        };
        let network = self.lease_network(&spec.run_id)?;
        let name = container_name(&spec.run_id, &spec.step_id);
        let api = &self.inner.api;

        let created =
            self.block_on(async {
                // A container of the same name from an earlier, killed attempt of this run.
                if let Ok(old) = api.inspect_container(&name, None).await {
                    let same_run = old
                        .config
                        .as_ref()
                        .and_then(|c| c.labels.as_ref())
                        .and_then(|l| l.get(LABEL_RUN))
                        .is_some_and(|r| *r == spec.run_id);
                    if same_run {
                        remove_container_quiet(api, &name).await?;
                    }
                }
                let mut binds = vec![format!("{}:{CONTAINER_SOCKET_DIR}", socket_dir.display())];
                if let Some(d) = &data_dir {
                    binds.push(format!("{}:{CONTAINER_DATADIR}", d.display()));
                }
                let mut endpoints = HashMap::new();
                endpoints.insert(
                    network.clone(),
                    EndpointSettings {
                        aliases: Some(vec![sanitize_name(&spec.step_id)]),
                        ..Default::default()
                    },
                );
                let body = ContainerCreateBody {
                    image: Some(spec.image.clone()),
                    cmd: Some(vec![
                        "/bin/sh".into(),
                        "-c".into(),
                        start_script(spec.system, spec.connect == Connect::Tls),
                    ]),
                    entrypoint: Some(vec![]),
                    env: Some(spec.env.clone()),
                    user: Some("root".into()),
                    hostname: Some(sanitize_name(&spec.step_id)),
                    labels: Some(labels([
                        (LABEL_RUN, spec.run_id.as_str()),
                        (LABEL_STEP, spec.step_id.as_str()),
                    ])),
                    stop_signal: Some(spec.system.stop_signal().into()),
                    host_config: Some(HostConfig {
                        network_mode: Some(network.clone()),
                        binds: Some(binds),
                        init: Some(false),
                        cpuset_cpus: spec.cpuset.clone(),
                        memory: spec.memory.map(|m| m.min(i64::MAX as u64) as i64),
                        memory_swap: spec.memory.map(|m| m.min(i64::MAX as u64) as i64),
                        ..Default::default()
                    }),
                    networking_config: Some(NetworkingConfig {
                        endpoints_config: Some(endpoints),
                    }),
                    ..Default::default()
                };
                let opts = CreateContainerOptionsBuilder::new().name(&name).build();
                let created =
                    api.create_container(Some(opts), body)
                        .await
                        .map_err(DockerError::api(format!(
                            "create server container {name} from {}",
                            spec.image
                        )))?;
                let cnf = [LayerFile {
                    path: format!(
                        "{}/{}",
                        CONTAINER_CONFIG_DIR.trim_start_matches("/etc/"),
                        spec.system.config_name()
                    ),
                    contents: config.into_bytes(),
                    mode: 0o644,
                }];
                let upload =
                    async {
                        let opts = UploadToContainerOptionsBuilder::new().path("/etc").build();
                        api.upload_to_container(
                            &created.id,
                            Some(opts),
                            bollard::body_full(tar_files(&cnf)?.into()),
                        )
                        .await
                        .map_err(DockerError::api(format!(
                            "upload the configuration into {name}"
                        )))?;
                        if let Some(archive) = &spec.datadir_archive {
                            let bytes = tokio::fs::read(archive).await.map_err(DockerError::io(
                                format!("read the datadir snapshot {}", archive.display()),
                            ))?;
                            // the parent directory must exist for the upload: make it by a first,
                            // tiny upload of just that directory
                            let (parent, leaf) =
                                DATADIR_PARENT.rsplit_once('/').expect("an absolute path");
                            let mut dir = tar::Builder::new(Vec::new());
                            let mut h = tar::Header::new_gnu();
                            h.set_entry_type(tar::EntryType::Directory);
                            h.set_mode(0o755);
                            h.set_size(0);
                            dir.append_data(&mut h, format!("{leaf}/"), std::io::empty())
                                .map_err(DockerError::io("tar a directory"))?;
                            let dir = dir
                                .into_inner()
                                .map_err(DockerError::io("tar a directory"))?;
                            let opts = UploadToContainerOptionsBuilder::new().path(parent).build();
                            api.upload_to_container(
                                &created.id,
                                Some(opts),
                                bollard::body_full(dir.into()),
                            )
                            .await
                            .map_err(DockerError::api(format!(
                                "create {DATADIR_PARENT} in {name}"
                            )))?;
                            let opts = UploadToContainerOptionsBuilder::new()
                                .path(DATADIR_PARENT)
                                .build();
                            api.upload_to_container(
                                &created.id,
                                Some(opts),
                                bollard::body_full(bytes.into()),
                            )
                            .await
                            .map_err(DockerError::api(format!(
                                "restore the datadir snapshot {} into {name}",
                                archive.display()
                            )))?;
                        }
                        api.start_container(&created.id, None)
                            .await
                            .map_err(DockerError::api(format!("start server container {name}")))
                    }
                    .await;
                if let Err(e) = upload {
                    let _ = remove_container_quiet(api, &created.id).await;
                    return Err(e);
                }
                Ok(created.id)
            });
        let id = match created {
            Ok(id) => id,
            Err(e) => {
                // nothing of this start may stay behind, the run's network included
                let _ = self.release_network(&network);
                return Err(e);
            }
        };
        let started = Instant::now();
        let tls_ca = if spec.connect == Connect::Tls {
            match self.install_tls(&id, &name, &network, spec, &socket_dir) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.block_on(async {
                        let _ = remove_container_quiet(api, &id).await;
                    });
                    let _ = self.release_network(&network);
                    return Err(e);
                }
            }
        } else {
            None
        };

        match self
            .wait_ready(spec, &id, &name, &network, &socket_dir, started)
            .map(|s| Server {
                tls_ca,
                data_dir: data_dir.clone(),
                ..s
            }) {
            Ok(mut server) => {
                server.ready_after = started.elapsed();
                tracing::info!(
                    "cairn: server {name} ({}) answers on {} after {:.2?} (start call total {:.2?})",
                    server.greeting_version,
                    server.tcp_addr(),
                    server.ready_after,
                    t0.elapsed()
                );
                Ok(server)
            }
            Err(e) => {
                self.block_on(async {
                    let _ = remove_container_quiet(api, &id).await;
                });
                let _ = self.release_network(&network);
                Err(e)
            }
        }
    }

    /// Make the TLS material once the container has its address, upload it (the start script
    /// waits for it), and write the CA beside the socket on the host; returns that host path.
    fn install_tls(
        &self,
        id: &str,
        name: &str,
        network: &str,
        spec: &ServerSpec,
        socket_dir: &std::path::Path,
    ) -> Result<PathBuf> {
        let api = &self.inner.api;
        let deadline = Instant::now() + Duration::from_secs(10);
        let ip = loop {
            let info = self
                .block_on(api.inspect_container(id, None))
                .map_err(DockerError::api(format!("inspect {name}")))?;
            let ip = info
                .network_settings
                .as_ref()
                .and_then(|n| n.networks.as_ref())
                .and_then(|n| n.get(network))
                .and_then(|e| e.ip_address.clone())
                .filter(|ip| !ip.is_empty());
            if let Some(ip) = ip {
                break ip;
            }
            if Instant::now() > deadline {
                return Err(DockerError::Invalid(format!(
                    "server {name} got no address on {network}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let alias = sanitize_name(&spec.step_id);
        let material = tls::generate(
            &format!("{} {}", spec.run_id, spec.step_id),
            &[alias, ip, "localhost".into(), "127.0.0.1".into()],
        )?;
        let file = |n: &str, contents: &str, mode: u32| LayerFile {
            path: format!("cairn/tls/{n}"),
            contents: contents.as_bytes().to_vec(),
            mode,
        };
        let files = [
            file(CA_FILE, &material.ca_pem, 0o644),
            file(CERT_FILE, &material.cert_pem, 0o644),
            file(KEY_FILE, &material.key_pem, 0o600),
            file(TLS_READY_MARKER, "", 0o644),
        ];
        self.block_on(async {
            let opts = UploadToContainerOptionsBuilder::new().path("/etc").build();
            api.upload_to_container(
                id,
                Some(opts),
                bollard::body_full(tar_files(&files)?.into()),
            )
            .await
            .map_err(DockerError::api(format!(
                "upload the TLS certificates into {name}"
            )))
        })?;
        let host_ca = socket_dir.join(CA_FILE);
        std::fs::write(&host_ca, &material.ca_pem)
            .map_err(DockerError::io(format!("write {}", host_ca.display())))?;
        write_client_files(&socket_dir.join(tls::CLIENT_DIR), &material)?;
        Ok(host_ca)
    }

    fn wait_ready(
        &self,
        spec: &ServerSpec,
        id: &str,
        name: &str,
        network: &str,
        socket_dir: &std::path::Path,
        started: Instant,
    ) -> Result<Server> {
        let api = &self.inner.api;
        let not_ready = |reason: String| -> DockerError {
            let log_tail = self
                .block_on(container_logs(api, id, None))
                .map(|o| log_excerpt(&o.tail(usize::MAX), 30))
                .unwrap_or_else(|e| format!("(no log: {e})"));
            DockerError::ServerNotReady {
                name: name.to_string(),
                reason,
                log_tail,
            }
        };
        let system = spec.system;
        let port = system.default_port();
        let socket_path = socket_dir.join(system.socket_name());
        let mut last = String::from("not tried yet");
        let mut tcp_answer: Option<Greeting> = None;
        let mut version: Option<String> = None;
        loop {
            if started.elapsed() > spec.ready_timeout {
                return Err(not_ready(format!(
                    "no answer within {:.0?} (last: {last})",
                    spec.ready_timeout
                )));
            }
            let info = self
                .block_on(api.inspect_container(id, None))
                .map_err(DockerError::api(format!("inspect {name}")))?;
            let state = info.state.clone().unwrap_or_default();
            if state.running != Some(true) {
                let code = state.exit_code.unwrap_or(-1);
                // let the log catch up
                std::thread::sleep(Duration::from_millis(100));
                return Err(not_ready(format!("the container exited with code {code}")));
            }
            let ip = info
                .network_settings
                .as_ref()
                .and_then(|n| n.networks.as_ref())
                .and_then(|n| n.get(network))
                .and_then(|e| e.ip_address.clone())
                .filter(|ip| !ip.is_empty());
            let Some(ip) = ip else {
                last = format!("no address on {network} yet");
                std::thread::sleep(POLL);
                continue;
            };
            // 1. TCP from the host: any protocol packet means the server listens (an error
            //    packet such as 1130 "host not allowed" too). Once answered, not asked again,
            //    so the server log does not fill with aborted connections.
            if tcp_answer.is_none() {
                let addr: SocketAddr = format!("{ip}:{port}")
                    .parse()
                    .map_err(|e| DockerError::Invalid(format!("container address {ip}: {e}")))?;
                match greet_tcp(system, addr) {
                    Ok(g) => tcp_answer = Some(g),
                    Err(e) => last = format!("tcp {addr}: {e}"),
                }
            }
            // 2. the unix socket in the host directory: a handshake with the version
            if tcp_answer.is_some() && version.is_none() {
                match greet_unix(system, &socket_path) {
                    Ok(Greeting::Handshake { version: v }) => version = Some(v),
                    Ok(Greeting::Error { code, message }) => {
                        last = format!("socket: error {code}: {message}")
                    }
                    Err(e) => last = format!("socket: {e}"),
                }
            }
            // 3. a client inside the container: the statement creating the TCP user where
            //    there is one (it succeeds only against a server that answers, so it is the
            //    ping, and one exec fewer), else the system's ping
            if let Some(version) = &version {
                // with the variant query after it, whose answer the variant checks use
                let argv = match &spec.tcp_user {
                    Some(user) => system.sql_argv(
                        &container_config(system),
                        &format!(
                            "{}; {}",
                            system.create_user_sql(user, spec.connect == Connect::Tls),
                            system.variant_query()
                        ),
                    ),
                    None => system.ping_argv(&container_config(system)),
                };
                let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                let ping = self.exec(id, &argv, None)?;
                if ping.exit_code == 0 {
                    let mut server = Server {
                        container_id: id.to_string(),
                        container_name: name.to_string(),
                        run_id: spec.run_id.clone(),
                        step_id: spec.step_id.clone(),
                        image: spec.image.clone(),
                        network: network.to_string(),
                        ip,
                        port,
                        host_pid: state.pid.unwrap_or(0) as u32,
                        socket_path,
                        greeting_version: version.clone(),
                        ready_after: Duration::ZERO,
                        tcp_user: None,
                        connect: spec.connect,
                        tls_ca: None,
                        system: system.name().to_string(),
                        data_dir: None,
                        variant_row: spec.tcp_user.is_some().then(|| ping.stdout.clone()),
                    };
                    if let Some(user) = &spec.tcp_user {
                        server.tcp_user = Some(user.replace(['\'', '\\'], ""));
                    }
                    return Ok(server);
                }
                last = format!("{}: {}", argv[0], ping.tail(3));
            }
            // short: a restored server answers within a second, and every poll saved is
            // setup time saved per trial
            std::thread::sleep(POLL);
        }
    }

    /// Run SQL through the system's client inside the server container (socket, as the
    /// administrator); returns the rows tab-separated, without column names.
    pub fn sql(&self, server: &Server, sql: &str) -> Result<String> {
        let system = server.db_system()?;
        let argv = system.sql_argv(&container_config(system), sql);
        let cmd: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = self.exec(&server.container_id, &cmd, None)?;
        Ok(out.check(&cmd, &server.container_name)?.stdout)
    }

    /// Whether the server's container is still running (a crashed server's is not).
    pub fn server_running(&self, server: &Server) -> Result<bool> {
        self.block_on(async {
            match self
                .inner
                .api
                .inspect_container(&server.container_id, None)
                .await
            {
                Ok(info) => Ok(info.state.and_then(|s| s.running).unwrap_or(false)),
                Err(e) if is_not_found(&e) => Ok(false),
                Err(e) => Err(DockerError::api(format!(
                    "inspect {}",
                    server.container_name
                ))(e)),
            }
        })
    }

    /// The last `tail` lines of a server's log (`None` = all).
    pub fn server_log(&self, server: &Server, tail: Option<usize>) -> Result<ExecOutput> {
        self.block_on(container_logs(&self.inner.api, &server.container_id, tail))
    }

    /// Stop a server (SIGTERM, SIGKILL after `grace`), remove its container, and remove the
    /// run's network if nothing else uses it. Returns the server's exit code.
    pub fn stop_server(&self, server: &Server, grace: Duration) -> Result<i64> {
        let api = &self.inner.api;
        let code = self.block_on(async {
            let code = stop_container(api, server, grace).await;
            // removed whatever the stop said (a crashed server's container is still there)
            remove_container_quiet(api, &server.container_id).await?;
            code
        });
        // the lease ends on every path, or the network would outlive the run
        let released = self.release_network(&server.network);
        let code = code?;
        released?;
        Ok(code)
    }

    /// Stop a server cleanly (SIGTERM; the server flushes and closes its files), write its
    /// datadir as a tar archive to `dest` (entries `data/…`, ownership kept; from the host
    /// directory if the datadir is one, else through the Engine's archive API), then remove the
    /// container and, if unused, the network. A server that does not exit with 0 within
    /// `grace` is an error (its datadir would not be a clean snapshot). Returns the archive size.
    pub fn stop_server_archiving(
        &self,
        server: &Server,
        grace: Duration,
        dest: &std::path::Path,
    ) -> Result<u64> {
        let api = &self.inner.api;
        let r = self.block_on(async {
            let code = stop_container(api, server, grace).await?;
            if code != 0 {
                let log = container_logs(api, &server.container_id, Some(30))
                    .await
                    .map(|o| o.tail(30))
                    .unwrap_or_default();
                return Err(DockerError::Invalid(format!(
                    "server {} did not shut down cleanly (exit code {code}); its log ends with:\n{log}",
                    server.container_name
                )));
            }
            if let Some(dir) = &server.data_dir {
                // the datadir is on the host: archive it from there, not through the engine
                return crate::datadir::archive(dir, dest)
                    .map_err(DockerError::io(format!("archive {}", dir.display())));
            }
            let mut file = tokio::fs::File::create(dest)
                .await
                .map_err(DockerError::io(format!("create {}", dest.display())))?;
            let opts = bollard::query_parameters::DownloadFromContainerOptionsBuilder::new()
                .path(CONTAINER_DATADIR)
                .build();
            let mut stream = api.download_from_container(&server.container_id, Some(opts));
            let mut size = 0u64;
            while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
                let chunk = chunk.map_err(DockerError::api(format!(
                    "archive the datadir of {}",
                    server.container_name
                )))?;
                size += chunk.len() as u64;
                tokio::io::AsyncWriteExt::write_all(&mut file, &chunk)
                    .await
                    .map_err(DockerError::io(format!("write {}", dest.display())))?;
            }
            file.sync_all()
                .await
                .map_err(DockerError::io(format!("sync {}", dest.display())))?;
            Ok(size)
        });
        self.block_on(async {
            let _ = remove_container_quiet(api, &server.container_id).await;
        });
        self.release_network(&server.network)?;
        r
    }

    /// Run a command in a server container (convenience over [`Docker::exec`]).
    pub fn server_exec(&self, server: &Server, cmd: &[&str]) -> Result<ExecOutput> {
        self.block_on(exec_async(&self.inner.api, &server.container_id, cmd, None))
    }
}

/// The client files of a TLS server (see [`Server::tls_client_dir`]); the key is private to
/// its owner, like the rest of the socket directory's contents.
fn write_client_files(dir: &std::path::Path, material: &tls::TlsMaterial) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir).map_err(DockerError::io(format!("create {}", dir.display())))?;
    for (name, contents, mode) in [
        (tls::CLIENT_CA_FILE, &material.ca_pem, 0o644),
        (tls::CLIENT_CERT_FILE, &material.client_cert_pem, 0o644),
        (tls::CLIENT_KEY_FILE, &material.client_key_pem, 0o600),
    ] {
        let path = dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&path)
            .map_err(DockerError::io(format!("write {}", path.display())))?;
        std::io::Write::write_all(&mut f, contents.as_bytes())
            .map_err(DockerError::io(format!("write {}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_start_waits_for_tls_then_runs_the_systems_script() {
        let mariadb = system::by_name("mariadb").unwrap();
        let plain = start_script(mariadb, false);
        assert!(plain.starts_with("set -e\nmkdir -p /run/cairn /var/lib/cairn/data\n"));
        assert!(plain.contains("--defaults-file=/etc/cairn/my.cnf"));
        let tls = start_script(mariadb, true);
        assert!(tls.contains("/etc/cairn/tls/ready"));
        assert!(tls.contains("chmod 600 /etc/cairn/tls/server-key.pem"));
        let cnf = mariadb
            .config_file(&[], &container_layout(mariadb, true))
            .unwrap();
        assert!(cnf.contains("port = 3306\nbind-address = 0.0.0.0\nuser = mysql\n"));
        assert!(cnf.contains("ssl_ca = /etc/cairn/tls/ca.pem"));
    }

    #[test]
    fn names() {
        assert_eq!(container_name("r1", "trial/3"), "cairn-r1-trial-3");
    }
}
