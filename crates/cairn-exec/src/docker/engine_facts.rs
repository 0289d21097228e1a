//! What the container engine is — its version, which measurement keys carry as part of the
//! machine's class, and where it keeps its data — remembered per engine address in the
//! machine-local cache. A command that only reads results (a fully cached run, `results`,
//! `report`) then never waits for the engine, and still names the class its results were
//! measured under when the engine is stopped. The engine is asked again when its socket is
//! another one (the daemon restarted: an upgrade restarts it) or its address is not a
//! socket.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::connection::DockerConnection;

/// The file in the machine-local cache that holds what each engine address answered last.
pub const FACTS_FILE: &str = "engine-facts.json";

/// What is known of the engine at the current address.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineFacts {
    /// `Docker Engine 28.2.2 (linux/amd64)`, or `Docker Engine (unreachable)` when it never
    /// answered here.
    pub version: String,
    /// Where the engine keeps images and containers (its disk's I/O scheduler is a fact of
    /// the machine).
    pub root_dir: Option<PathBuf>,
    /// Where the facts come from.
    pub source: FactsSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactsSource {
    /// The engine answered just now.
    Asked,
    /// Remembered from the last answer; the engine's socket is the same one.
    Remembered,
    /// Remembered from the last answer; the engine does not answer now.
    LastSeen,
    /// It does not answer and never did here.
    Unreachable,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Remembered {
    /// The socket's identity when it answered (device, inode, change time), if a socket.
    socket: Option<String>,
    version: String,
    root_dir: Option<PathBuf>,
}

/// The identity of the engine's socket at `host` (`unix:///path`): it changes whenever the
/// daemon makes its socket anew, i.e. restarts. `None` for other addresses, or no socket.
fn socket_identity(host: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let path = host.strip_prefix("unix://")?;
    let m = std::fs::metadata(path).ok()?;
    Some(format!(
        "{}:{}:{}.{}",
        m.dev(),
        m.ino(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

fn read_all(file: &Path) -> BTreeMap<String, Remembered> {
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Whole or not at all; losing it only costs asking the engine next time.
fn write_all(file: &Path, all: &BTreeMap<String, Remembered>) {
    let Ok(bytes) = serde_json::to_vec_pretty(all) else {
        return;
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, file).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The facts of the engine `engine` connects to, from `cache`'s memory of it when its
/// socket is the one that answered last, else asked (and remembered).
pub fn engine_facts(cache: &Path, engine: &DockerConnection) -> EngineFacts {
    let host = super::docker_host();
    let file = cache.join(FACTS_FILE);
    let mut all = read_all(&file);
    let socket = socket_identity(&host);
    let known = all.get(&host).cloned();
    if let Some(k) = &known {
        if socket.is_some() && k.socket == socket {
            return EngineFacts {
                version: k.version.clone(),
                root_dir: k.root_dir.clone(),
                source: FactsSource::Remembered,
            };
        }
    }
    let asked = engine.get_ref().ok().and_then(|d| {
        let version = d.engine_version().ok()?;
        Some(Remembered {
            socket,
            version,
            root_dir: d.root_dir().ok(),
        })
    });
    match (asked, known) {
        (Some(a), _) => {
            let facts = EngineFacts {
                version: a.version.clone(),
                root_dir: a.root_dir.clone(),
                source: FactsSource::Asked,
            };
            all.insert(host, a);
            write_all(&file, &all);
            facts
        }
        (None, Some(k)) => EngineFacts {
            version: k.version,
            root_dir: k.root_dir,
            source: FactsSource::LastSeen,
        },
        (None, None) => EngineFacts {
            version: "Docker Engine (unreachable)".into(),
            root_dir: None,
            source: FactsSource::Unreachable,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_is_known_by_its_inode_and_change_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docker.sock");
        let host = format!("unix://{}", path.display());
        assert_eq!(socket_identity(&host), None, "no socket, no identity");
        let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let first = socket_identity(&host).unwrap();
        assert_eq!(socket_identity(&host).as_deref(), Some(first.as_str()));
        drop(_l);
        std::fs::remove_file(&path).unwrap();
        let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_ne!(
            socket_identity(&host).unwrap(),
            first,
            "a new socket is another"
        );
        assert_eq!(socket_identity("tcp://127.0.0.1:2375"), None);
    }

    #[test]
    fn facts_round_trip_through_the_cache_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FACTS_FILE);
        let mut all = BTreeMap::new();
        all.insert(
            "unix:///x".to_string(),
            Remembered {
                socket: Some("1:2:3.4".into()),
                version: "Docker Engine 28.2.2 (linux/amd64)".into(),
                root_dir: Some("/var/lib/docker".into()),
            },
        );
        write_all(&file, &all);
        assert_eq!(read_all(&file), all);
        std::fs::write(&file, "not json").unwrap();
        assert!(read_all(&file).is_empty(), "a damaged file is no memory");
    }
}
