//! The `server` part of dataset and trial definitions: how a database server is configured,
//! whatever system it is and whichever executor starts it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A plan's `server` after `extends` is merged, as it goes into the keys of the datasets and
/// trials that use it. The server's name and image are not in it: the name never reaches a
/// key, the image is an input of the step.
///
/// Serialises every field, absent ones as `null` (that is how keys have always held them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDef {
    /// Server options (`option key=value …`; later wins), by name: booleans, numbers and
    /// strings as the plan wrote them. An empty string is a bare flag.
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
    /// Environment variables of the server process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The memory allocator to preload: `system`, `tcmalloc` or `jemalloc`; `None` = system.
    pub allocator: Option<String>,
    /// How clients reach the server: `tcp`, `socket` or `tls`; `None` = tcp.
    pub connect: Option<String>,
    /// CPUs the server may run on, as a cpuset (`"0-1"`, `"2,3"`).
    pub cpus: Option<String>,
    /// Memory limit of the server, bytes.
    pub memory: Option<u64>,
    /// What starts the server: `docker` (a container, the default) or `process` (on the host).
    pub executor: Option<String>,
    /// The database system the server is (`mariadb`, `mysql`, `postgresql`); `None` =
    /// [`DEFAULT_SYSTEM`].
    /// Left out of the JSON when absent, so the keys of definitions made before systems
    /// could be named do not change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Where a trial's clients run relative to the server: `loopback` (in the server's
    /// network namespace), `bridge` (another container on the run's network) or `host`;
    /// `None` = each driver's own place (the native driver on the host, external tools on
    /// the bridge). Left out of the JSON when absent (older keys unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// An emulated link on the server's network interface; left out when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkDef>,
    /// `profile "cpu"`: its trials record the server's on-CPU profile. Absent when it asks
    /// for none, so no other server's key changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// `link rate=… delay=…`: tc netem on the server's interface (its replies cross it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkDef {
    /// A rate as tc spells it, e.g. `100mbit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// A delay as tc spells it, e.g. `2ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
}

/// The allocator of a server that names none.
pub const DEFAULT_ALLOCATOR: &str = "system";
/// The allocators a server can ask for (`allocator "…"`): the plan's choices and the ones
/// the runtimes can preload.
pub const ALLOCATORS: &[&str] = &[DEFAULT_ALLOCATOR, "tcmalloc", "jemalloc"];
/// How clients reach a server that does not say.
pub const DEFAULT_CONNECT: &str = Connect::Tcp.as_str();
/// The executor of a server that names none.
pub const DEFAULT_EXECUTOR: &str = "docker";
/// The database system of a server that names none.
pub const DEFAULT_SYSTEM: &str = "mariadb";

impl ServerDef {
    /// The executor that starts it: the one named, else [`DEFAULT_EXECUTOR`].
    pub fn executor_or_default(&self) -> &str {
        self.executor.as_deref().unwrap_or(DEFAULT_EXECUTOR)
    }

    /// The allocator asked for: the one named, else [`DEFAULT_ALLOCATOR`].
    pub fn allocator_or_default(&self) -> &str {
        self.allocator.as_deref().unwrap_or(DEFAULT_ALLOCATOR)
    }

    /// The database system: the one named, else [`DEFAULT_SYSTEM`].
    pub fn system_or_default(&self) -> &str {
        self.system.as_deref().unwrap_or(DEFAULT_SYSTEM)
    }

    /// How clients connect: the way named, else [`DEFAULT_CONNECT`].
    pub fn connect_or_default(&self) -> &str {
        self.connect.as_deref().unwrap_or(DEFAULT_CONNECT)
    }
}

/// How clients reach a server. The server always listens on its socket and on TCP; this says
/// what clients are meant to use, and `Tls` also makes TCP require TLS.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Connect {
    /// The server's unix socket (for a container: in the bind-mounted host directory).
    Socket,
    /// Plain TCP (for a container: to its address on the run's network).
    #[default]
    Tcp,
    /// TCP with TLS (a CA and server certificate generated per start); plain TCP is refused.
    Tls,
}

impl Connect {
    /// `socket`, `tcp` or `tls`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Connect::Socket => "socket",
            Connect::Tcp => "tcp",
            Connect::Tls => "tls",
        }
    }

    /// Every way, in the order plans list them.
    pub const ALL: [Connect; 3] = [Connect::Socket, Connect::Tcp, Connect::Tls];

    /// Their names: what a plan's `connect "…"` may say.
    pub fn names() -> Vec<&'static str> {
        Connect::ALL.iter().map(|c| c.as_str()).collect()
    }
}

impl std::str::FromStr for Connect {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Connect::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown connect `{s}`: expected {}",
                    quoted(&Connect::names())
                )
            })
    }
}

/// Where a trial's clients run relative to its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientPath {
    /// In the server's own network namespace: TCP over its loopback interface.
    Loopback,
    /// In another container on the run's network: TCP across the bridge.
    Bridge,
    /// On the host: TCP from the host into the container's address.
    Host,
}

impl ClientPath {
    /// `loopback`, `bridge` or `host`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClientPath::Loopback => "loopback",
            ClientPath::Bridge => "bridge",
            ClientPath::Host => "host",
        }
    }

    /// Every place, in the order plans list them.
    pub const ALL: [ClientPath; 3] = [ClientPath::Loopback, ClientPath::Bridge, ClientPath::Host];

    /// Their names: what a plan's `client "…"` may say.
    pub fn names() -> Vec<&'static str> {
        ClientPath::ALL.iter().map(|c| c.as_str()).collect()
    }
}

impl std::str::FromStr for ClientPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ClientPath::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown client path `{s}`: expected {}",
                    quoted(&ClientPath::names())
                )
            })
    }
}

/// `"a", "b" or "c"`.
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_fields_serialise_as_null_and_defaults_apply() {
        let d = ServerDef::default();
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"options":{},"env":{},"allocator":null,"connect":null,"cpus":null,"memory":null,"executor":null}"#
        );
        assert_eq!(d.system_or_default(), "mariadb");
        let pg = ServerDef {
            system: Some("postgresql".into()),
            ..ServerDef::default()
        };
        assert!(serde_json::to_string(&pg)
            .unwrap()
            .ends_with(r#""executor":null,"system":"postgresql"}"#));
        assert_eq!(
            (
                d.allocator_or_default(),
                d.connect_or_default(),
                d.executor_or_default()
            ),
            ("system", "tcp", "docker")
        );
    }

    #[test]
    fn reads_what_older_definitions_hold() {
        let d: ServerDef = serde_json::from_value(json!({
            "options": {"max_connections": 512, "performance_schema": false},
            "allocator": "jemalloc", "connect": "tls", "cpus": null,
            "memory": 4294967296u64, "executor": "process",
        }))
        .unwrap();
        assert!(d.env.is_empty());
        assert_eq!(d.options["max_connections"], json!(512));
        assert_eq!(d.memory, Some(4 << 30));
        assert_eq!(d.connect_or_default(), "tls");
    }
}
