//! The process executor's database server: a host-installed server program of a
//! [`DbSystem`] in a private datadir and socket, for users without Docker. Same lifecycle as
//! the container one — initialise, start, wait until it answers (log tail on failure), verify
//! the variant, stop — and the same [`VariantChecks`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use crate::cancel::CancelToken;
use crate::server_log::log_excerpt;
use crate::system::{self, DbSystem, ServerLayout};
use crate::variant_checks::VariantChecks;

#[derive(Debug, thiserror::Error)]
pub enum HostServerError {
    /// A program the system needs is missing; the message says what to install.
    #[error("{0}")]
    NotInstalled(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("initialising the datadir failed ({status}):\n{output}")]
    InstallDb { status: ExitStatus, output: String },
    #[error("the server exited before it answered ({status}); its log ends with:\n{log}")]
    Exited { status: ExitStatus, log: String },
    #[error("the server did not answer within {after:?}; its log ends with:\n{log}")]
    NotReady { after: Duration, log: String },
    #[error("query `{query}` failed: {output}")]
    Query { query: String, output: String },
    #[error("checking the running server: {0}")]
    Check(String),
    /// The configuration file cannot be written as asked (a bad option).
    #[error("{0}")]
    Config(String),
}

type Result<T> = std::result::Result<T, HostServerError>;

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> HostServerError {
    let context = context.into();
    move |source| HostServerError::Io { context, source }
}

/// How to start a host server.
#[derive(Debug, Clone)]
pub struct HostServerSpec {
    /// Private directory: `data/`, the socket, the configuration file and `error.log` go inside.
    pub base_dir: PathBuf,
    /// The database system whose host server program runs.
    pub system: &'static dyn DbSystem,
    /// `option key=value` entries of the server node, in order.
    pub options: Vec<(String, String)>,
    /// Extra environment (e.g. `LD_PRELOAD` for an allocator).
    pub env: Vec<(String, String)>,
    /// Also listen on 127.0.0.1 at this port (socket only when `None`).
    pub tcp_port: Option<u16>,
    pub ready_timeout: Duration,
    /// A datadir archive made by [`HostServer::stop_archiving`] (entries `data/…`), unpacked
    /// into an empty datadir before the server starts: a dataset snapshot.
    pub datadir_archive: Option<PathBuf>,
    /// The run's cancellation: the server's process group is registered with it.
    pub cancel: CancelToken,
}

impl HostServerSpec {
    pub fn new(base_dir: impl Into<PathBuf>) -> HostServerSpec {
        HostServerSpec {
            base_dir: base_dir.into(),
            system: system::default_system(),
            options: Vec::new(),
            env: Vec::new(),
            tcp_port: None,
            ready_timeout: Duration::from_secs(60),
            datadir_archive: None,
            cancel: CancelToken::new(),
        }
    }
}

/// A running host server. Stop it with [`HostServer::stop`]; dropping it kills it.
#[derive(Debug)]
pub struct HostServer {
    child: Option<Child>,
    pub pid: u32,
    pub socket: PathBuf,
    pub datadir: PathBuf,
    pub log: PathBuf,
    pub tcp_port: Option<u16>,
    pub ready_after: Duration,
    /// The configuration file (its client section reaches the server over the socket).
    pub config: PathBuf,
    system: &'static dyn DbSystem,
    cancel: CancelToken,
}

/// Where a host server's files are: all inside its private directory `base`.
fn host_layout(spec: &HostServerSpec, base: &Path) -> ServerLayout {
    let path = |p: PathBuf| p.display().to_string();
    ServerLayout {
        datadir: path(base.join("data")),
        socket: path(base.join(spec.system.socket_name())),
        pid_file: path(base.join("server.pid")),
        log_file: Some(path(base.join("error.log"))),
        listen: spec.tcp_port.map(|p| ("127.0.0.1".to_string(), p)),
        // servers refuse to run as root unless told to
        run_as: is_root().then(|| "root".to_string()),
        tls: None,
        tmpdir: Some(path(base.join("tmp"))),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

fn read_log(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    log_excerpt(&String::from_utf8_lossy(&text), 30)
}

/// Initialise the datadir (if empty), start the server, wait until it answers.
pub fn start(spec: &HostServerSpec) -> Result<HostServer> {
    let system = spec.system;
    check_installed(system)?;
    let base = std::path::absolute(&spec.base_dir).map_err(io("resolving the server directory"))?;
    let layout = host_layout(spec, &base);
    let datadir = PathBuf::from(&layout.datadir);
    let socket = PathBuf::from(&layout.socket);
    let log = base.join("error.log");
    let cnf = base.join(system.config_name());
    // before anything is made, so a bad option leaves nothing behind
    let config = system
        .config_file(&spec.options, &layout)
        .map_err(HostServerError::Config)?;
    std::fs::create_dir_all(&datadir).map_err(io(format!("creating {}", datadir.display())))?;
    if let Some(tmp) = &layout.tmpdir {
        std::fs::create_dir_all(tmp).map_err(io(format!("creating {tmp}")))?;
    }
    std::fs::write(&cnf, config).map_err(io(format!("writing {}", cnf.display())))?;

    let is_empty = |d: &Path| -> Result<bool> {
        Ok(std::fs::read_dir(d)
            .map_err(io("reading the datadir"))?
            .next()
            .is_none())
    };
    if let (Some(archive), true) = (&spec.datadir_archive, is_empty(&datadir)?) {
        crate::datadir::restore(archive, &base)
            .map_err(io(format!("unpacking the snapshot {}", archive.display())))?;
    }
    if is_empty(&datadir)? {
        let mut cmd = system
            .host_init_command(&cnf, is_root())
            .map_err(HostServerError::NotInstalled)?;
        let out = cmd
            .output()
            .map_err(io(format!("running {:?}", cmd.get_program())))?;
        if !out.status.success() {
            // the server's own complaint is in its error log, not in install-db's advice
            let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
            text.push_str(&std::fs::read_to_string(&log).unwrap_or_default());
            return Err(HostServerError::InstallDb {
                status: out.status,
                output: log_excerpt(&text, 30),
            });
        }
    }

    let started = Instant::now();
    let mut child = system
        .host_server_command(&cnf)
        .map_err(HostServerError::NotInstalled)?
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(io(format!("starting {}", system.process_name())))?;
    let pid = child.id();
    spec.cancel.register(pid as i32);
    let mut server = HostServer {
        child: None,
        pid,
        socket,
        datadir,
        log,
        tcp_port: spec.tcp_port,
        ready_after: Duration::ZERO,
        config: cnf.clone(),
        system,
        cancel: spec.cancel.clone(),
    };
    loop {
        if let Some(status) = child.try_wait().map_err(io("waiting for the server"))? {
            spec.cancel.unregister(pid as i32);
            return Err(HostServerError::Exited {
                status,
                log: read_log(&server.log),
            });
        }
        if server.socket.exists() && server.sql("SELECT 1").is_ok() {
            break;
        }
        if started.elapsed() > spec.ready_timeout {
            let _ = child.kill();
            let _ = child.wait();
            spec.cancel.unregister(pid as i32);
            return Err(HostServerError::NotReady {
                after: spec.ready_timeout,
                log: read_log(&server.log),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.ready_after = started.elapsed();
    server.child = Some(child);
    Ok(server)
}

impl HostServer {
    /// The database system the server is.
    pub fn system(&self) -> &'static dyn DbSystem {
        self.system
    }

    /// Run one SQL statement as the administrator over the socket; tab-separated rows.
    pub fn sql(&self, query: &str) -> Result<String> {
        let argv = self
            .system
            .sql_argv(&self.config.display().to_string(), query);
        let program = system::find_program(&argv[0]).ok_or_else(|| {
            HostServerError::NotInstalled(format!("no `{}` on this host", argv[0]))
        })?;
        let out = Command::new(program)
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(io(format!("running {}", argv[0])))?;
        if !out.status.success() {
            return Err(HostServerError::Query {
                query: query.to_string(),
                output: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// What the running server is: version, build machine, allocator, word size of the
    /// running binary and whether each of `allocators` is mapped into it.
    pub fn variant_checks(&self, allocators: &[&str]) -> Result<VariantChecks> {
        let row = self.sql(self.system.variant_query())?;
        VariantChecks::read(&row, self.pid, allocators).map_err(HostServerError::Check)
    }

    /// Stop: SIGTERM (a clean shutdown), SIGKILL after `grace`.
    pub fn stop(mut self, grace: Duration) -> Result<ExitStatus> {
        let mut child = self.child.take().expect("a started server has its child");
        // SAFETY: signalling the server process we started.
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        let status = loop {
            if let Some(s) = child.try_wait().map_err(io("waiting for the server"))? {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                break child.wait().map_err(io("waiting for the server"))?;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.cancel.unregister(self.pid as i32);
        Ok(status)
    }
}

impl HostServer {
    /// Stop cleanly (a non-zero exit is an error: the datadir would not be a clean snapshot)
    /// and write the datadir to `dest` as a tar archive with entries `data/…`. Returns its size.
    pub fn stop_archiving(self, grace: Duration, dest: &Path) -> Result<u64> {
        let datadir = self.datadir.clone();
        let log = self.log.clone();
        let status = self.stop(grace)?;
        if !status.success() {
            return Err(HostServerError::Exited {
                status,
                log: read_log(&log),
            });
        }
        let f = std::fs::File::create(dest).map_err(io(format!("creating {}", dest.display())))?;
        let mut b = tar::Builder::new(std::io::BufWriter::new(f));
        b.follow_symlinks(false);
        b.append_dir_all("data", &datadir)
            .map_err(io(format!("archiving {}", datadir.display())))?;
        let w = b
            .into_inner()
            .map_err(io(format!("finishing {}", dest.display())))?;
        let f = w.into_inner().map_err(|e| HostServerError::Io {
            context: format!("writing {}", dest.display()),
            source: e.into_error(),
        })?;
        f.sync_all()
            .map_err(io(format!("syncing {}", dest.display())))?;
        Ok(f.metadata().map(|m| m.len()).unwrap_or(0))
    }

    /// The last lines of the server's error log.
    pub fn log_tail(&self) -> String {
        read_log(&self.log)
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
}

/// Whether every host program `system` needs is installed, and is that system's (not
/// another system's program of the same name, [`DbSystem::check_host_program`]).
pub fn check_installed(system: &dyn DbSystem) -> Result<()> {
    for p in system.host_programs() {
        let Some(path) = system::find_program(p) else {
            return Err(HostServerError::NotInstalled(format!(
                "no `{p}` on this host: install {}, or use the Docker executor",
                system.host_install_hint()
            )));
        };
        system
            .check_host_program(p, &path)
            .map_err(HostServerError::NotInstalled)?;
    }
    Ok(())
}

impl Drop for HostServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            self.cancel.unregister(self.pid as i32);
        }
    }
}
