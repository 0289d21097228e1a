//! A lazily connected Docker Engine handle that a run context owns: it connects on first use
//! and remembers the outcome, so a run without containers never needs an engine and a run
//! with them connects once.

use std::sync::{Arc, OnceLock};

use super::Docker;

/// Connects to `$DOCKER_HOST` (see [`Docker::connect`]) on the first [`DockerConnection::get`];
/// later calls return the same handle or the same error. Clones share the connection.
#[derive(Clone, Default)]
pub struct DockerConnection {
    cell: Arc<OnceLock<Result<Docker, String>>>,
}

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
        }
    }

    /// The engine handle; the error names the engine address and says how to start one.
    pub fn get(&self) -> Result<Docker, String> {
        self.get_ref().cloned().map_err(str::to_string)
    }

    /// As [`DockerConnection::get`], borrowing the handle the connection holds.
    pub fn get_ref(&self) -> Result<&Docker, &str> {
        self.cell
            .get_or_init(|| Docker::connect().map_err(|e| e.to_string()))
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
