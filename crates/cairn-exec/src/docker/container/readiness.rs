//! Readiness probes from the host: does a server answer on a TCP address or a unix socket
//! with its system's greeting. Short timeouts: callers poll until their own deadline.

use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::system::{DbSystem, Greeting};

/// The greeting of the server at `addr`.
pub fn greet_tcp(system: &dyn DbSystem, addr: SocketAddr) -> Result<Greeting, String> {
    let mut s =
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok();
    system.greet(&mut s)
}

/// The greeting of the server listening on the socket `path`.
pub fn greet_unix(system: &dyn DbSystem, path: &Path) -> Result<Greeting, String> {
    let mut s = UnixStream::connect(path).map_err(|e| format!("{}: {e}", path.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok();
    system.greet(&mut s)
}
