//! The container engine (bollard): the connection and its facts, labels and the cleanup of
//! what a killed run left, here; image building in [`image`] (base images from debootstrap,
//! layers, source builds, manifests, shipping), server and client containers and their run
//! networks in [`container`]. The `docker` server runtime (`crate::runtime::docker`) starts
//! servers through it; what every runtime shares (client paths, variant checks) lives
//! outside this module.
//!
//! Everything talks to the Docker Engine API through bollard and is async inside; the public
//! API is blocking, because the engine that calls it is synchronous (rayon). [`Docker`] owns a
//! tokio runtime; it is cheap to clone and can be used from many threads at once.
//! Its methods must not be called from inside another tokio runtime (they `block_on`).
//!
//! Naming and labels:
//! - images are tagged `cairn/<name>:<tag>` with the tag derived from the caller's key
//!   ([`image_ref`]) and carry the label [`LABEL_KEY`]`=<full key>`;
//! - every container cairn creates (servers, client tools, throwaway build/probe containers)
//!   and every run network carries [`LABEL_RUN`]`=<run>` (server containers also
//!   [`LABEL_STEP`]`=<step>`), so one label query finds all of a run's containers and
//!   [`Docker::cleanup_stale`] can remove what a killed run left;
//! - throwaway build/probe containers are also named `cairn-build-<pid>-…`. The engine merges
//!   a committed container's labels into the image, so a layer's commit sets the run label
//!   to the empty string: containers made from a cairn image carry no run but their own.

pub mod allocator;
pub mod cleanup;
pub mod connection;
pub mod container;
pub mod engine_facts;
pub mod image;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;

pub use crate::netpath::Connect;
pub use allocator::allocator_library;
pub use cleanup::{clean_all, clean_runs, clean_stale, is_stale_run, this_run_id};
pub use connection::DockerConnection;
pub use container::client::{ClientCpu, ClientError, ClientOutput, ClientSpec, NetnsHolder};
pub use container::network::network_name;
pub use container::server::{CleanupReport, Server, ServerSpec};
pub use engine_facts::{engine_facts, EngineFacts};
pub use image::archive::{archive_versions, ArchiveVersions};
pub use image::base::{BaseImage, BaseSpec};
pub use image::layer::{LayerFile, LayerImage};
pub use image::manifest::{ImageManifest, InstalledPackage};
pub use image::mirror::{resolve_mirror, Mirror, MirrorOrigin, MIRROR_ENV};

/// Label holding the full key of the step that produced an image.
pub const LABEL_KEY: &str = "cairn.key";
/// Label holding the run id on containers and networks.
pub const LABEL_RUN: &str = "cairn.run";
/// Label holding the step id on containers.
pub const LABEL_STEP: &str = "cairn.step";
/// Label holding the parent image id of a layer.
pub const LABEL_PARENT: &str = "cairn.parent";

/// The Engine API version this host speaks (Docker 20.10); used if negotiation fails.
const FALLBACK_API_VERSION: &str = "1.41";

/// The engine address used when `DOCKER_HOST` is not set.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// The engine address a connection goes to: `$DOCKER_HOST`, else [`DEFAULT_DOCKER_HOST`].
pub fn docker_host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| DEFAULT_DOCKER_HOST.to_string())
}

/// How long [`Docker::connect`] waits for the engine to answer before giving up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long an engine on a local socket that accepted the connection may take to answer
/// the first requests. Where no engine runs, connecting fails at once (no socket file, or
/// nobody listening); an engine that accepted but is slow is busy (importing or committing
/// a large image on a loaded machine), not absent, and taking it for absent would block
/// every container step of the run.
pub const BUSY_ENGINE_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a read-only engine query is tried while it fails transiently (waits of
/// 0.25, 0.5, 1 and 2 s between the tries).
const QUERY_TRIES: u32 = 5;

/// What to do when no engine answers; part of [`DockerError::Unavailable`]'s message.
pub const START_ENGINE_HINT: &str = "start the Docker Engine with `sudo systemctl start docker` \
     (or run `sudo dockerd &`), or set DOCKER_HOST to one that is running";

/// Errors of the docker executor.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error("cannot reach the Docker Engine: {0}")]
    Connect(#[source] bollard::errors::Error),
    /// No engine answered at `host`: the message says how to start one.
    #[error("no Docker Engine answers at {host} ({reason}); {hint}", hint = START_ENGINE_HINT)]
    Unavailable { host: String, reason: String },
    #[error(
        "allocator \"{allocator}\" needs {library}, which image {image} does not have: \
         add the Debian package `{package}` to the image's packages"
    )]
    MissingAllocator {
        allocator: String,
        image: String,
        library: String,
        package: String,
    },
    #[error("docker {op}: {source}")]
    Api {
        op: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("{op}: {source}")]
    Io {
        op: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no Debian mirror found: {0}")]
    NoMirror(String),
    #[error("debootstrap failed ({status}); last lines:\n{log_tail}")]
    Debootstrap { status: String, log_tail: String },
    #[error(
        "`{cmd}` in {image} exited with code {code}; last lines of its output:\n{output_tail}"
    )]
    Command {
        cmd: String,
        image: String,
        code: i64,
        output_tail: String,
    },
    #[error(
        "server {name} did not become ready: {reason}\n--- last lines of the server log ---\n{log_tail}"
    )]
    ServerNotReady {
        name: String,
        reason: String,
        log_tail: String,
    },
    #[error("{0}")]
    Invalid(String),
}

impl DockerError {
    /// Whether trying again unchanged may succeed: the engine's API could not be reached,
    /// the connection broke or timed out, or the engine answered 5xx. What the engine refused
    /// on its merits (4xx) and everything cairn decided (a missing allocator, a failed
    /// command, a server that did not start) is not transient.
    pub fn is_transient(&self) -> bool {
        use bollard::errors::Error as B;
        match self {
            DockerError::Connect(source) | DockerError::Api { source, .. } => match source {
                B::DockerResponseServerError { status_code, .. } => *status_code >= 500,
                B::IOError { .. } | B::HyperResponseError { .. } | B::RequestTimeoutError => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether a command in a container from an image failed because of the image: the
    /// command ran and failed, or the engine could not start the container's process (a
    /// 4xx naming the OCI runtime: its program is not in the image). Not a connection
    /// problem or a busy engine, which say nothing about the image.
    pub fn is_image_unrunnable(&self) -> bool {
        use bollard::errors::Error as B;
        match self {
            DockerError::Command { .. } => true,
            DockerError::Api {
                source:
                    B::DockerResponseServerError {
                        status_code,
                        message,
                    },
                ..
            } => (400..500).contains(status_code) && message.contains("OCI runtime"),
            _ => false,
        }
    }

    pub(crate) fn api(op: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> Self {
        let op = op.into();
        move |source| DockerError::Api { op, source }
    }
    pub(crate) fn io(op: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let op = op.into();
        move |source| DockerError::Io { op, source }
    }
}

pub type Result<T, E = DockerError> = std::result::Result<T, E>;

/// True if a bollard error is an HTTP 404 from the engine.
pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// A blocking handle to the Docker Engine. Cheap to clone; usable from many threads.
#[derive(Clone)]
pub struct Docker {
    inner: Arc<Inner>,
    /// The run id its throwaway build containers are labelled with ([`LABEL_RUN`]):
    /// [`this_run_id`] unless [`Docker::for_run`] says otherwise.
    run_id: Arc<str>,
}

struct Inner {
    rt: tokio::runtime::Runtime,
    api: bollard::Docker,
    /// How many servers of this process are starting or running on each run network.
    /// The lock also serialises "create network if missing" (the engine allows duplicate
    /// names). A count, not the engine's list of attached containers, decides removal: a
    /// container that is created but not yet started is not listed as attached, so another
    /// step stopping its server at that moment would otherwise remove the network under it.
    network_leases: Mutex<HashMap<String, usize>>,
}

impl std::fmt::Debug for Docker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Docker")
            .field("api_version", &self.api_version())
            .finish_non_exhaustive()
    }
}

impl Docker {
    /// Connect to `$DOCKER_HOST` (default [`DEFAULT_DOCKER_HOST`]) and negotiate the API
    /// version. Without an engine this fails at once on a local socket (within
    /// [`CONNECT_TIMEOUT`] over TCP) with
    /// [`DockerError::Unavailable`], whose message says how to start one.
    pub fn connect() -> Result<Self> {
        Self::connect_to(&docker_host())
    }

    /// Connect to the engine at `host` (`unix:///path` or `tcp://host:port`); see [`Docker::connect`].
    pub fn connect_to(host: &str) -> Result<Self> {
        let unavailable = |reason: String| DockerError::Unavailable {
            host: host.to_string(),
            reason,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cairn-docker")
            .enable_all()
            .build()
            .map_err(DockerError::io("start the tokio runtime"))?;
        if let Some(path) = host.strip_prefix("unix://") {
            if !std::path::Path::new(path).exists() {
                return Err(unavailable(format!("{path} does not exist")));
            }
        }
        let api = {
            let _rt = rt.enter(); // the http connector wants a reactor
            bollard::Docker::connect_with_host(host).map_err(|e| unavailable(e.to_string()))?
        };
        let answer_within = if host.starts_with("unix://") {
            BUSY_ENGINE_TIMEOUT
        } else {
            CONNECT_TIMEOUT
        };
        let api = rt.block_on(async {
            match tokio::time::timeout(answer_within, api.clone().negotiate_version()).await {
                Ok(Ok(api)) => Ok(api),
                Ok(Err(e)) => {
                    tracing::warn!(
                        "API version negotiation failed ({e}); using {FALLBACK_API_VERSION}"
                    );
                    let v = bollard::ClientVersion {
                        major_version: 1,
                        minor_version: 41,
                    };
                    if host.starts_with("unix://") {
                        bollard::Docker::connect_with_unix(host, 120, &v)
                    } else {
                        bollard::Docker::connect_with_http(host, 120, &v)
                    }
                    .map_err(|e| unavailable(e.to_string()))
                }
                Err(_) => Err(unavailable(format!("no answer within {answer_within:?}"))),
            }
        })?;
        // Fail early with a clear message when the engine is not there.
        match rt.block_on(async { tokio::time::timeout(answer_within, api.ping()).await }) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(unavailable(e.to_string())),
            Err(_) => return Err(unavailable(format!("no answer within {answer_within:?}"))),
        }
        Ok(Docker {
            inner: Arc::new(Inner {
                rt,
                api,
                network_leases: Mutex::new(HashMap::new()),
            }),
            run_id: Arc::from(this_run_id()),
        })
    }

    /// The same connection, labelling the throwaway containers it creates (image layers,
    /// probes) with run `run_id`, as that run's servers are.
    pub fn for_run(&self, run_id: &str) -> Docker {
        Docker {
            inner: Arc::clone(&self.inner),
            run_id: Arc::from(run_id),
        }
    }

    /// The run id its throwaway containers carry as their [`LABEL_RUN`].
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The negotiated Engine API version, e.g. `1.41`.
    pub fn api_version(&self) -> String {
        let v = self.inner.api.client_version();
        format!("{}.{}", v.major_version, v.minor_version)
    }

    /// The engine's own version and OS/architecture, e.g. `Docker Engine 28.2.2 (linux/amd64)`
    /// (part of the machine fingerprint of measurements).
    pub fn engine_version(&self) -> Result<String> {
        let v = self.query(|| {
            self.block_on(self.inner.api.version())
                .map_err(DockerError::api("version"))
        })?;
        Ok(format!(
            "Docker Engine {} ({}/{})",
            v.version.unwrap_or_default(),
            v.os.unwrap_or_default(),
            v.arch.unwrap_or_default()
        ))
    }

    /// Where the engine keeps its images and containers (`DockerRootDir`), for the machine
    /// fingerprint's I/O scheduler of the engine's disk.
    pub fn root_dir(&self) -> Result<std::path::PathBuf> {
        let info = self
            .block_on(self.inner.api.info())
            .map_err(DockerError::api("info"))?;
        Ok(info
            .docker_root_dir
            .unwrap_or_else(|| "/var/lib/docker".into())
            .into())
    }

    /// The bollard client (for callers that need an API this module does not wrap).
    pub fn api(&self) -> &bollard::Docker {
        &self.inner.api
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.inner.rt.block_on(f)
    }

    /// A read-only query of the engine, tried again while it fails transiently (a busy
    /// engine, e.g. while another process commits a large image, may drop or time out a
    /// request): a cache check must not take an engine hiccup for a missing image, nor a
    /// fingerprint an unreadable version for another machine.
    fn query<T>(&self, mut once: impl FnMut() -> Result<T>) -> Result<T> {
        let mut wait = std::time::Duration::from_millis(250);
        let mut tries = 1;
        loop {
            match once() {
                Err(e) if e.is_transient() && tries < QUERY_TRIES => {
                    tracing::warn!("engine query failed ({e}); trying again in {wait:?}");
                    std::thread::sleep(wait);
                    wait *= 2;
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// Id of the image with this reference, if it exists.
    pub fn image_id(&self, reference: &str) -> Result<Option<String>> {
        self.query(|| {
            self.block_on(async {
                match self.inner.api.inspect_image(reference).await {
                    Ok(img) => Ok(img.id),
                    Err(e) if is_not_found(&e) => Ok(None),
                    Err(e) => Err(DockerError::api(format!("inspect image {reference}"))(e)),
                }
            })
        })
    }

    /// Remove an image by reference or id (`force` also removes it from stopped containers).
    pub fn remove_image(&self, reference: &str, force: bool) -> Result<()> {
        self.block_on(async {
            let opts = bollard::query_parameters::RemoveImageOptionsBuilder::new()
                .force(force)
                .build();
            match self
                .inner
                .api
                .remove_image(reference, Some(opts), None)
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if is_not_found(&e) => Ok(()),
                Err(e) => Err(DockerError::api(format!("remove image {reference}"))(e)),
            }
        })
    }

    /// Run `cmd` in a running container via the exec API; returns exit code and output.
    pub fn exec(&self, container: &str, cmd: &[&str], user: Option<&str>) -> Result<ExecOutput> {
        self.block_on(exec_async(&self.inner.api, container, cmd, user))
    }

    /// Run `cmd` in a throwaway container from `image` (no network, removed afterwards).
    pub fn run_once(&self, image: &str, cmd: &[&str]) -> Result<ExecOutput> {
        self.block_on(run_once_async(
            &self.inner.api,
            &self.run_id,
            image,
            cmd,
            None,
        ))
    }
}

/// Output of a command run in a container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
}

impl ExecOutput {
    /// Last `n` lines of stdout and stderr together (stderr last).
    pub fn tail(&self, n: usize) -> String {
        let mut s = self.stdout.clone();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr);
        tail_lines(&s, n)
    }

    /// `Ok(self)` if the exit code is 0, else a [`DockerError::Command`].
    pub fn check(self, cmd: &[&str], image: &str) -> Result<Self> {
        if self.exit_code == 0 {
            Ok(self)
        } else {
            Err(DockerError::Command {
                cmd: cmd.join(" "),
                image: image.to_string(),
                code: self.exit_code,
                output_tail: self.tail(30),
            })
        }
    }
}

/// The last `n` lines of `s`.
pub fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The image reference `cairn/<name>:<tag>` for a step key: the name lower-cased with
/// characters Docker does not allow replaced by `-`; the tag is the key's allowed
/// characters, at most 128 (a blake3 hex key, 64 characters, is used whole).
pub fn image_ref(name: &str, key: &str) -> String {
    format!("cairn/{}:{}", sanitize_name(name), key_tag(key))
}

pub(crate) fn sanitize_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '.' | '_' | '-') => c,
            _ => '-',
        })
        .collect();
    let s = s
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    if s.is_empty() {
        "unnamed".into()
    } else {
        s
    }
}

pub(crate) fn key_tag(key: &str) -> String {
    let s: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_start_matches(['.', '-']);
    let s = if s.is_empty() { "latest" } else { s };
    s.chars().take(128).collect()
}

/// A unique-enough suffix for throwaway container names.
pub(crate) fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{:x}-{}",
        std::process::id(),
        t & 0xffff_ffff,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) async fn exec_async(
    api: &bollard::Docker,
    container: &str,
    cmd: &[&str],
    user: Option<&str>,
) -> Result<ExecOutput> {
    let what = format!("exec `{}` in {container}", cmd.join(" "));
    let created = api
        .create_exec(
            container,
            CreateExecOptions {
                cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
                user: user.map(String::from),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            },
        )
        .await
        .map_err(DockerError::api(what.clone()))?;
    let mut out = ExecOutput::default();
    match api
        .start_exec(&created.id, None)
        .await
        .map_err(DockerError::api(what.clone()))?
    {
        StartExecResults::Attached { mut output, .. } => {
            while let Some(chunk) = output.next().await {
                collect_log(&mut out, chunk.map_err(DockerError::api(what.clone()))?);
            }
        }
        StartExecResults::Detached => {}
    }
    // The output stream ends when the process exits; the exit code may lag a moment.
    for _ in 0..100 {
        let info = api
            .inspect_exec(&created.id)
            .await
            .map_err(DockerError::api(what.clone()))?;
        if info.running != Some(true) {
            if let Some(code) = info.exit_code {
                out.exit_code = code;
                return Ok(out);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(DockerError::Invalid(format!(
        "{what}: no exit code after the output ended"
    )))
}

fn collect_log(out: &mut ExecOutput, chunk: LogOutput) {
    match chunk {
        LogOutput::StdErr { message } => out.stderr.push_str(&String::from_utf8_lossy(&message)),
        LogOutput::StdOut { message } | LogOutput::Console { message } => {
            out.stdout.push_str(&String::from_utf8_lossy(&message))
        }
        LogOutput::StdIn { .. } => {}
    }
}

/// Logs of a container (stdout and stderr), optionally only the last `tail` lines.
pub(crate) async fn container_logs(
    api: &bollard::Docker,
    container: &str,
    tail: Option<usize>,
) -> Result<ExecOutput> {
    let opts = LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .tail(&tail.map_or_else(|| "all".to_string(), |n| n.to_string()))
        .build();
    let mut out = ExecOutput::default();
    let mut logs = api.logs(container, Some(opts));
    while let Some(chunk) = logs.next().await {
        collect_log(
            &mut out,
            chunk.map_err(DockerError::api(format!("logs of {container}")))?,
        );
    }
    Ok(out)
}

/// Wait for a started container to exit; returns its exit code.
pub(crate) async fn wait_exit(api: &bollard::Docker, container: &str) -> Result<i64> {
    let mut wait = api.wait_container(container, None);
    let mut code = 0;
    while let Some(r) = wait.next().await {
        match r {
            Ok(resp) => code = resp.status_code,
            // bollard reports a non-zero exit status as an error
            Err(bollard::errors::Error::DockerContainerWaitError { code: c, .. }) => code = c,
            Err(e) => return Err(DockerError::api(format!("wait for {container}"))(e)),
        }
    }
    Ok(code)
}

/// Force-remove a container (and its anonymous volumes); a missing container is fine.
/// `outcome` of work in a throwaway container, after removing the container whatever the
/// outcome: the work's error first, else the removal's.
pub(crate) async fn removing_container<T, E: From<DockerError>>(
    api: &bollard::Docker,
    container: &str,
    outcome: std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let removed = remove_container_quiet(api, container).await;
    let value = outcome?;
    removed?;
    Ok(value)
}

pub(crate) async fn remove_container_quiet(api: &bollard::Docker, container: &str) -> Result<()> {
    let opts = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    match api.remove_container(container, Some(opts)).await {
        Ok(()) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        // 409: removal already in progress
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        }) => Ok(()),
        Err(e) => Err(DockerError::api(format!("remove container {container}"))(e)),
    }
}

/// Create (not start) a throwaway container named `cairn-build-…`, labelled with run `run_id`.
pub(crate) async fn create_build_container(
    api: &bollard::Docker,
    run_id: &str,
    image: &str,
    cmd: Vec<String>,
    env: Vec<String>,
    network: bool,
) -> Result<String> {
    let name = format!("cairn-build-{}", nonce());
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        cmd: Some(cmd),
        env: if env.is_empty() { None } else { Some(env) },
        user: Some("root".into()),
        labels: Some(labels([(LABEL_RUN, run_id)])),
        network_disabled: Some(!network),
        host_config: Some(HostConfig {
            network_mode: Some(if network { "bridge" } else { "none" }.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let opts = CreateContainerOptionsBuilder::new().name(&name).build();
    let created = api
        .create_container(Some(opts), body)
        .await
        .map_err(DockerError::api(format!("create container from {image}")))?;
    Ok(created.id)
}

pub(crate) async fn run_once_async(
    api: &bollard::Docker,
    run_id: &str,
    image: &str,
    cmd: &[&str],
    env: Option<Vec<String>>,
) -> Result<ExecOutput> {
    let id = create_build_container(
        api,
        run_id,
        image,
        cmd.iter().map(|s| s.to_string()).collect(),
        env.unwrap_or_default(),
        false,
    )
    .await?;
    let r = async {
        api.start_container(&id, None)
            .await
            .map_err(DockerError::api(format!("start container from {image}")))?;
        let code = wait_exit(api, &id).await?;
        let mut out = container_logs(api, &id, None).await?;
        out.exit_code = code;
        Ok(out)
    }
    .await;
    removing_container(api, &id, r).await
}

/// Labels as the engine wants them.
pub(crate) fn labels<const N: usize>(pairs: [(&str, &str); N]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_hiccups_are_transient_refusals_are_not() {
        let api = |status_code| DockerError::Api {
            op: "create".into(),
            source: bollard::errors::Error::DockerResponseServerError {
                status_code,
                message: "x".into(),
            },
        };
        assert!(api(500).is_transient());
        assert!(api(503).is_transient());
        assert!(!api(404).is_transient());
        assert!(!api(409).is_transient());
        let timeout = DockerError::Api {
            op: "inspect".into(),
            source: bollard::errors::Error::RequestTimeoutError,
        };
        assert!(timeout.is_transient());
        assert!(!DockerError::Invalid("bad".into()).is_transient());
    }

    #[test]
    fn an_image_is_unrunnable_when_its_command_fails_or_its_process_cannot_start() {
        let api = |status_code, message: &str| DockerError::Api {
            op: "start container".into(),
            source: bollard::errors::Error::DockerResponseServerError {
                status_code,
                message: message.into(),
            },
        };
        let oci = "failed to create shim task: OCI runtime create failed: exec: \"/bin/sh\": stat /bin/sh: no such file or directory: unknown";
        assert!(api(400, oci).is_image_unrunnable());
        assert!(!api(500, oci).is_image_unrunnable(), "the engine's trouble");
        assert!(!api(404, "no such image").is_image_unrunnable());
        let failed = DockerError::Command {
            cmd: "/bin/sh -c dpkg".into(),
            image: "x".into(),
            code: 1,
            output_tail: "exec /bin/sh: no such file or directory".into(),
        };
        assert!(failed.is_image_unrunnable());
        let timeout = DockerError::Api {
            op: "start".into(),
            source: bollard::errors::Error::RequestTimeoutError,
        };
        assert!(!timeout.is_image_unrunnable());
    }

    #[test]
    fn image_refs() {
        let key = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";
        assert_eq!(
            image_ref("mariadb-bookworm", key),
            format!("cairn/mariadb-bookworm:{key}")
        );
        assert_eq!(
            image_ref("MariaDB Bookworm/i386", "k:1"),
            "cairn/mariadb-bookworm-i386:k-1"
        );
        assert_eq!(image_ref("---", ".x"), "cairn/unnamed:x");
        assert_eq!(key_tag(&"a".repeat(300)).len(), 128);
    }

    #[test]
    fn tails() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
        let o = ExecOutput {
            exit_code: 1,
            stdout: "x".into(),
            stderr: "y\nz\n".into(),
        };
        assert_eq!(o.tail(2), "y\nz");
    }
}
