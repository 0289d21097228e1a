//! External tools next to a trial's server (`tool="external"`): a [`ToolRunner`] that runs them in a client container from the server's image on the server's run network.
//!
//! The client container carries the run's label like the server, so a killed run's cleanup
//! removes it, and `cairn_exec::docker::Docker::run_client` removes it itself on every
//! path (Ctrl-C included). The tool reaches the server the way the plan's server says
//! clients connect, as the password-less user `cairn` the server was started with: over TCP
//! at its address on that network, port 3306; over its socket, the server's socket directory
//! bind-mounted where the server has it; or over TLS, in that directory's client
//! certificate directory (sysbench 1.0 reads its TLS files from the working directory).

use std::time::Duration;

use cairn_exec::docker::server::{CONTAINER_SOCKET_DIR, SOCKET_NAME};
use cairn_exec::docker::tls::CLIENT_DIR;
use cairn_exec::docker::{ClientSpec, Connect, Docker, Server};
use cairn_workload::cpu::CpuTime;
use cairn_workload::workload::{ToolEndpoint, ToolOutput, ToolRunner};

/// Runs tools in client containers beside a Docker server.
#[derive(Debug, Clone)]
pub struct DockerTools {
    docker: &'static Docker,
    server: Server,
}

impl DockerTools {
    /// Tools from `server`'s image, on its network, pointed at its address.
    pub fn new(docker: &'static Docker, server: &Server) -> Self {
        DockerTools {
            docker,
            server: server.clone(),
        }
    }
}

/// The client container that runs `argv` beside `server`.
fn client_spec(server: &Server, argv: &[String], limit: Option<Duration>) -> ClientSpec {
    let mut spec = ClientSpec::new(
        &server.run_id,
        &server.image,
        &server.network,
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

impl ToolRunner for DockerTools {
    fn run(&self, argv: &[String], limit: Option<Duration>) -> Result<ToolOutput, String> {
        let out = self
            .docker
            .run_client(&client_spec(&self.server, argv, limit))
            .map_err(|e| e.to_string())?;
        Ok(ToolOutput {
            exit_code: out.exit_code,
            stdout: out.stdout,
            stderr: out.stderr,
            client_cpu: out.cpu.map(|c| CpuTime {
                user_s: c.user_s,
                system_s: c.system_s,
            }),
        })
    }

    fn server(&self) -> ToolEndpoint {
        endpoint(&self.server)
    }
}

/// How a client container reaches `server` (see [`client_spec`] for the mounts).
fn endpoint(server: &Server) -> ToolEndpoint {
    let (host, port) = (server.ip.clone(), server.port);
    match server.connect {
        Connect::Tcp => ToolEndpoint::Tcp { host, port },
        Connect::Socket => ToolEndpoint::Socket {
            path: format!("{CONTAINER_SOCKET_DIR}/{SOCKET_NAME}"),
        },
        Connect::Tls => ToolEndpoint::Tls { host, port },
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
        let limit = Some(Duration::from_secs(70));
        let spec = client_spec(&server, &["sysbench".into(), "--version".into()], limit);
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
            endpoint(&server),
            ToolEndpoint::Tcp {
                host: "172.18.0.2".into(),
                port: 3306
            }
        );
    }

    #[test]
    fn socket_and_tls_clients_see_the_servers_socket_directory() {
        let mut server = server_json();
        server.connect = Connect::Socket;
        let spec = client_spec(&server, &["sysbench".into()], None);
        assert_eq!(spec.binds, ["/tmp/cairn-x:/run/cairn"]);
        assert_eq!(spec.working_dir, None);
        assert_eq!(
            endpoint(&server),
            ToolEndpoint::Socket {
                path: "/run/cairn/mysqld.sock".into()
            }
        );
        server.connect = Connect::Tls;
        let spec = client_spec(&server, &["sysbench".into()], None);
        assert_eq!(spec.binds, ["/tmp/cairn-x:/run/cairn"]);
        assert_eq!(spec.working_dir.as_deref(), Some("/run/cairn/client-tls"));
    }
}
