//! Client containers: run one command (e.g. the image's `sysbench`) in a throwaway container on a server's run network, collect its output and CPU time, and remove it on every path.
//!
//! A client container is labelled [`LABEL_RUN`]`=<run>` like the servers, so the cleanup of
//! a killed run ([`Docker::cleanup_stale`]) removes it too. While it runs,
//! its [`ClientSpec::cancel`] token is polled: Ctrl-C (or the optional timeout) kills and
//! removes it at once.
//!
//! CPU time: with [`ClientSpec::measure_cpu`] the command runs under `/bin/sh`, which, once
//! the command has exited, prints the container's own cgroup CPU counters to stderr after a
//! marker line — cgroup v2's `cpu.stat` (`user_usec`, `system_usec`) or, on a cgroup v1
//! engine, `cpuacct.usage_user`/`cpuacct.usage_sys` (nanoseconds). They cover every process
//! of the container, i.e. the tool (and the negligible shell). The Engine's stats API is not
//! used: it has nothing left to say once the container has exited, and sampling it while the
//! command runs would miss the end. The marker block is removed from the returned stderr.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;
use bollard::models::{ContainerCreateBody, EndpointSettings, HostConfig, NetworkingConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;

use crate::docker::{
    container_logs, labels, nonce, remove_container_quiet, removing_container, sanitize_name,
    wait_exit, Docker, DockerError, LABEL_RUN, LABEL_STEP,
};

/// The line after which the wrapper prints the cgroup CPU counters.
const CPU_MARKER: &str = "@@cairn-client-cpu@@";

/// How often a running client checks for Ctrl-C and its timeout.
const POLL: Duration = Duration::from_millis(100);

/// Runs `"$@"`, keeps its exit code, then prints the cgroup's CPU counters (v2, else v1).
const CPU_WRAPPER: &str = r#""$@"
rc=$?
{
  echo '@@cairn-client-cpu@@'
  if [ -r /sys/fs/cgroup/cpu.stat ] && grep -q '^user_usec' /sys/fs/cgroup/cpu.stat; then
    cat /sys/fs/cgroup/cpu.stat
  else
    for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct; do
      if [ -r "$d/cpuacct.usage_user" ]; then
        echo "user_ns $(cat "$d/cpuacct.usage_user")"
        echo "system_ns $(cat "$d/cpuacct.usage_sys")"
        break
      fi
    done
  fi
} >&2
exit $rc
"#;

/// One command to run in a client container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSpec {
    /// Labels the container `cairn.run=<run>` (cleanup of a killed run finds it).
    pub run_id: String,
    /// Also labels it `cairn.step=<step>`, if set.
    pub step_id: Option<String>,
    /// Image reference or id holding the tool.
    pub image: String,
    /// The network to attach to (the server's run network, `cairn-<run>`), or a network
    /// mode that is not a network: `host`, or `container:<id>` (another container's
    /// network namespace, e.g. the server's, to reach it over loopback).
    pub network: String,
    /// The command; the image's entrypoint is not used.
    pub argv: Vec<String>,
    /// Environment, `KEY=VALUE`.
    pub env: Vec<String>,
    /// Bind mounts, `HOST:CONTAINER` (e.g. a server's socket directory).
    pub binds: Vec<String>,
    /// The command's working directory; the image's by default.
    pub working_dir: Option<String>,
    /// Kill the container after this long; `None` = wait for it (Ctrl-C still ends it).
    pub timeout: Option<Duration>,
    /// Run under `/bin/sh` and read the container's cgroup CPU time at the end (see the
    /// module doc); the image must have `/bin/sh`.
    pub measure_cpu: bool,
    /// The run's cancellation, polled while the container runs.
    pub cancel: CancelToken,
    /// CPUs the container may use (cgroup cpuset), e.g. `1` or `2-3`; `None` = any.
    pub cpuset: Option<String>,
}

impl ClientSpec {
    /// `argv` from `image` on `network`, for run `run_id`, CPU measured, no timeout.
    pub fn new(run_id: &str, image: &str, network: &str, argv: Vec<String>) -> Self {
        ClientSpec {
            run_id: run_id.into(),
            step_id: None,
            image: image.into(),
            network: network.into(),
            argv,
            env: Vec::new(),
            binds: Vec::new(),
            working_dir: None,
            timeout: None,
            measure_cpu: true,
            cancel: CancelToken::new(),
            cpuset: None,
        }
    }
}

/// CPU time the client container used, all its processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientCpu {
    pub user_s: f64,
    pub system_s: f64,
}

impl ClientCpu {
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

/// What a client container did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientOutput {
    pub exit_code: i64,
    pub stdout: String,
    /// Its stderr, without the CPU block the wrapper appended.
    pub stderr: String,
    /// `None` if not measured or the counters could not be read.
    pub cpu: Option<ClientCpu>,
    /// From the container's start until it exited.
    pub elapsed: Duration,
}

/// Why a client run did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// Ctrl-C: the container was killed and removed.
    #[error("stopped: the client container from {image} was killed")]
    Cancelled { image: String },
    /// The timeout ran out: the container was killed and removed.
    #[error(
        "`{cmd}` in a client container from {image} did not finish within {timeout:?}; killed"
    )]
    Timeout {
        cmd: String,
        image: String,
        timeout: Duration,
    },
}

/// Whether a network mode names a network to join (not `host` or `container:<id>`).
fn is_network(mode: &str) -> bool {
    mode != "host" && !mode.starts_with("container:")
}

/// A container that only holds a network namespace on a run's network (`sleep infinity`
/// from the server's image), for the native driver's threads to enter: a client "in another
/// container on the bridge". Removed by [`Docker::remove_netns_holder`], or with its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetnsHolder {
    pub container_id: String,
    /// Its PID on the host: its namespace is `/proc/<pid>/ns/net`.
    pub host_pid: u32,
}

impl Docker {
    /// Start a [`NetnsHolder`] from `image` on `network`, labelled with the run and step.
    pub fn start_netns_holder(
        &self,
        run_id: &str,
        step_id: &str,
        image: &str,
        network: &str,
    ) -> Result<NetnsHolder, DockerError> {
        let api = &self.inner.api;
        self.block_on(async {
            let name = format!("cairn-{}-netns-{}", sanitize_name(run_id), nonce());
            let body = ContainerCreateBody {
                image: Some(image.to_string()),
                cmd: Some(vec!["sleep".into(), "infinity".into()]),
                entrypoint: Some(vec![]),
                labels: Some(labels([(LABEL_RUN, run_id), (LABEL_STEP, step_id)])),
                host_config: Some(HostConfig {
                    network_mode: Some(network.to_string()),
                    init: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let opts = CreateContainerOptionsBuilder::new().name(&name).build();
            let id = api
                .create_container(Some(opts), body)
                .await
                .map_err(DockerError::api(format!("create {name} from {image}")))?
                .id;
            let started = async {
                api.start_container(&id, None)
                    .await
                    .map_err(DockerError::api(format!("start {name}")))?;
                let pid = api
                    .inspect_container(&id, None)
                    .await
                    .map_err(DockerError::api(format!("inspect {name}")))?
                    .state
                    .and_then(|s| s.pid)
                    .filter(|p| *p > 0)
                    .ok_or_else(|| DockerError::Invalid(format!("{name} has no PID")))?;
                Ok(pid as u32)
            }
            .await;
            match started {
                Ok(host_pid) => Ok(NetnsHolder {
                    container_id: id,
                    host_pid,
                }),
                Err(e) => {
                    let _ = remove_container_quiet(api, &id).await;
                    Err(e)
                }
            }
        })
    }

    /// Remove a [`NetnsHolder`] (killed at once: it holds nothing but the namespace).
    pub fn remove_netns_holder(&self, holder: &NetnsHolder) -> Result<(), DockerError> {
        let api = &self.inner.api;
        self.block_on(remove_container_quiet(api, &holder.container_id))
    }

    /// Run `spec.argv` in a throwaway container from `spec.image` on `spec.network`, wait for
    /// it, and return its exit code, output and CPU time. The container is removed on every
    /// path: success, error, timeout and Ctrl-C.
    pub fn run_client(&self, spec: &ClientSpec) -> Result<ClientOutput, ClientError> {
        if spec.argv.is_empty() {
            return Err(DockerError::Invalid("a client container needs a command".into()).into());
        }
        let api = &self.inner.api;
        self.block_on(async {
            let name = format!("cairn-{}-client-{}", sanitize_name(&spec.run_id), nonce());
            let cmd = if spec.measure_cpu {
                let mut c = vec![
                    "/bin/sh".to_string(),
                    "-c".into(),
                    CPU_WRAPPER.into(),
                    "cairn-client".into(),
                ];
                c.extend(spec.argv.iter().cloned());
                c
            } else {
                spec.argv.clone()
            };
            let mut label_pairs = labels([(LABEL_RUN, spec.run_id.as_str())]);
            if let Some(step) = &spec.step_id {
                label_pairs.insert(LABEL_STEP.into(), step.clone());
            }
            let body = ContainerCreateBody {
                image: Some(spec.image.clone()),
                cmd: Some(cmd),
                entrypoint: Some(vec![]),
                env: (!spec.env.is_empty()).then(|| spec.env.clone()),
                labels: Some(label_pairs),
                working_dir: spec.working_dir.clone(),
                host_config: Some(HostConfig {
                    network_mode: Some(spec.network.clone()),
                    binds: (!spec.binds.is_empty()).then(|| spec.binds.clone()),
                    init: Some(false),
                    cpuset_cpus: spec.cpuset.clone(),
                    ..Default::default()
                }),
                networking_config: is_network(&spec.network).then(|| NetworkingConfig {
                    endpoints_config: Some(HashMap::from([(
                        spec.network.clone(),
                        EndpointSettings::default(),
                    )])),
                }),
                ..Default::default()
            };
            let opts = CreateContainerOptionsBuilder::new().name(&name).build();
            let id = api
                .create_container(Some(opts), body)
                .await
                .map_err(DockerError::api(format!(
                    "create client container {name} from {}",
                    spec.image
                )))?
                .id;
            let r = run_started(api, &id, &name, spec).await;
            // every path: the container goes (a force-remove also kills a running one)
            removing_container(api, &id, r).await
        })
    }
}

async fn run_started(
    api: &bollard::Docker,
    id: &str,
    name: &str,
    spec: &ClientSpec,
) -> Result<ClientOutput, ClientError> {
    if spec.cancel.is_cancelled() {
        return Err(ClientError::Cancelled {
            image: spec.image.clone(),
        });
    }
    api.start_container(id, None)
        .await
        .map_err(DockerError::api(format!("start client container {name}")))?;
    let t0 = Instant::now();
    let wait = wait_exit(api, id);
    tokio::pin!(wait);
    let code = loop {
        tokio::select! {
            code = &mut wait => break code?,
            _ = tokio::time::sleep(POLL) => {
                if spec.cancel.is_cancelled() {
                    return Err(ClientError::Cancelled { image: spec.image.clone() });
                }
                if let Some(t) = spec.timeout.filter(|t| t0.elapsed() > *t) {
                    return Err(ClientError::Timeout {
                        cmd: spec.argv.join(" "),
                        image: spec.image.clone(),
                        timeout: t,
                    });
                }
            }
        }
    };
    let elapsed = t0.elapsed();
    let logs = container_logs(api, id, None).await?;
    let (stderr, cpu) = if spec.measure_cpu {
        split_cpu(&logs.stderr)
    } else {
        (logs.stderr, None)
    };
    Ok(ClientOutput {
        exit_code: code,
        stdout: logs.stdout,
        stderr,
        cpu,
        elapsed,
    })
}

/// The stderr before the wrapper's marker, and the CPU counters after it.
fn split_cpu(stderr: &str) -> (String, Option<ClientCpu>) {
    // the last marker: the tool's own output cannot fake the block that follows it
    let Some(at) = stderr.rfind(CPU_MARKER) else {
        return (stderr.to_string(), None);
    };
    let (before, block) = stderr.split_at(at);
    let mut user = None;
    let mut system = None;
    for line in block.lines().skip(1) {
        let mut w = line.split_whitespace();
        let (Some(k), Some(v)) = (w.next(), w.next()) else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        match k {
            "user_usec" => user = Some(v as f64 / 1e6),
            "system_usec" => system = Some(v as f64 / 1e6),
            "user_ns" => user = Some(v as f64 / 1e9),
            "system_ns" => system = Some(v as f64 / 1e9),
            _ => {}
        }
    }
    let cpu = match (user, system) {
        (Some(user_s), Some(system_s)) => Some(ClientCpu { user_s, system_s }),
        _ => None,
    };
    (before.to_string(), cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_block_of_either_cgroup_version() {
        let v2 = "warning\n@@cairn-client-cpu@@\nusage_usec 1500000\nuser_usec 1200000\nsystem_usec 300000\nnr_periods 0\n";
        let (rest, cpu) = split_cpu(v2);
        assert_eq!(rest, "warning\n");
        let cpu = cpu.unwrap();
        assert_eq!((cpu.user_s, cpu.system_s), (1.2, 0.3));
        let v1 = "@@cairn-client-cpu@@\nuser_ns 20000000\nsystem_ns 4000000\n";
        let (rest, cpu) = split_cpu(v1);
        assert_eq!(rest, "");
        assert!((cpu.unwrap().total_s() - 0.024).abs() < 1e-12);
        // no counters readable: the marker goes, the CPU is unknown
        assert_eq!(split_cpu("x\n@@cairn-client-cpu@@\n"), ("x\n".into(), None));
        assert_eq!(split_cpu("plain"), ("plain".into(), None));
    }
}
