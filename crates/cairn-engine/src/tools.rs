//! External tools next to a trial's server (`tool="external"`): a [`ToolRunner`] that runs them in a client container from the server's image on the server's run network.
//!
//! The client container carries the run's label like the server, so a killed run's cleanup
//! removes it, and `cairn_exec::docker::Docker::run_client` removes it itself on every
//! path (Ctrl-C included). The tool reaches the server at its address on that network, port
//! 3306, as the password-less TCP user `cairn` the server was started with.

use std::time::Duration;

use cairn_exec::docker::{ClientSpec, Docker, Server};
use cairn_workload::cpu::CpuTime;
use cairn_workload::workload::{ToolOutput, ToolRunner};

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

    fn server(&self) -> (String, u16) {
        (self.server.ip.clone(), self.server.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_join_the_servers_run_network_and_image() {
        let server: Server = serde_json::from_value(serde_json::json!({
            "container_id": "c0ffee", "container_name": "cairn-r1-trial-1",
            "run_id": "r1", "step_id": "trial/1", "image": "cairn/mariadb-bookworm:k",
            "network": "cairn-r1", "ip": "172.18.0.2", "port": 3306, "host_pid": 42,
            "socket_path": "/tmp/cairn-x/mysqld.sock", "greeting_version": "10.11.11-MariaDB",
            "ready_after": {"secs": 1, "nanos": 0}, "tcp_user": "cairn",
        }))
        .unwrap();
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
    }
}
