//! A lazily connected Docker Engine handle that a run context owns: it connects on first use
//! and remembers the outcome, so a run without containers never needs an engine and a run
//! with them connects once.

use std::sync::{Arc, Mutex, OnceLock};

use super::Docker;

/// Connects to `$DOCKER_HOST` (see [`Docker::connect`]) on the first [`DockerConnection::get`];
/// later calls return the same handle or the same error. Clones share the connection.
#[derive(Clone, Default)]
pub struct DockerConnection {
    cell: Arc<OnceLock<Result<Docker, String>>>,
    /// What to do once, right after the connection is made (a run sweeps what killed runs
    /// left in the engine: only a run that uses the engine pays for it).
    on_connect: Arc<Mutex<Option<OnConnect>>>,
}

type OnConnect = Box<dyn FnOnce(&Docker) + Send>;

impl DockerConnection {
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection that is already made (tests, or a caller that connected itself).
    pub fn with(docker: Docker) -> Self {
        let cell = OnceLock::new();
        let _ = cell.set(Ok(docker));
        DockerConnection {
            cell: Arc::new(cell),
            on_connect: Arc::default(),
        }
    }

    /// Run `f` once with the engine, right after the connection is made (at once if it is
    /// made already).
    pub fn on_connect(&self, f: impl FnOnce(&Docker) + Send + 'static) {
        match self.cell.get() {
            Some(Ok(d)) => f(d),
            Some(Err(_)) => {}
            None => *self.on_connect.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f)),
        }
    }

    /// Whether a connection has been made (without making one).
    pub fn is_connected(&self) -> bool {
        matches!(self.cell.get(), Some(Ok(_)))
    }

    /// The engine handle; the error names the engine address and says how to start one.
    pub fn get(&self) -> Result<Docker, String> {
        self.get_ref().cloned().map_err(str::to_string)
    }

    /// As [`DockerConnection::get`], borrowing the handle the connection holds.
    pub fn get_ref(&self) -> Result<&Docker, &str> {
        self.cell
            .get_or_init(|| {
                let connected = Docker::connect().map_err(|e| e.to_string());
                if let Ok(d) = &connected {
                    let hook = self
                        .on_connect
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    if let Some(f) = hook {
                        f(d);
                    }
                }
                connected
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

impl std::fmt::Debug for DockerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.cell.get() {
            None => "not connected yet",
            Some(Ok(_)) => "connected",
            Some(Err(_)) => "unavailable",
        };
        f.debug_tuple("DockerConnection").field(&state).finish()
    }
}
