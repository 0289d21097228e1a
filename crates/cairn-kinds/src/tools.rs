//! External tools next to a trial's server (`tool="external"`): cairn_workload's
//! [`ToolRunner`] over any [`RunningServer`] whose runtime can run tools beside it.
//!
//! Where the tool runs and how it reaches the server is the runtime's business (for the Docker
//! runtime: a client container from the server's image on its run network, removed on every
//! path, Ctrl-C included); this adapter translates between the two vocabularies, and kills a
//! tool still running at the trial watchdog's deadline.

use std::time::{Duration, Instant};

use cairn_exec::runtime::{Address, RunningServer};
use cairn_workload::cpu::CpuTime;
use cairn_workload::workload::{ToolEndpoint, ToolOutput, ToolRunner};

/// Runs tools beside a running server.
pub struct RuntimeTools<'a> {
    server: &'a dyn RunningServer,
    endpoint: ToolEndpoint,
    /// No tool runs past this (the trial's watchdog); `None` = only the tool's own limit.
    deadline: Option<Instant>,
}

impl<'a> RuntimeTools<'a> {
    /// Tools beside `server`; `None` if its runtime cannot run them.
    pub fn new(server: &'a dyn RunningServer) -> Option<Self> {
        let endpoint = tool_endpoint(server.tool_endpoint()?);
        Some(RuntimeTools {
            server,
            endpoint,
            deadline: None,
        })
    }

    /// Kill any tool still running at `deadline`, whatever limit it asks for.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The shorter of the tool's own `limit` and the time left until the deadline.
    fn limit(&self, limit: Option<Duration>) -> Option<Duration> {
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        match (limit, left) {
            (Some(l), Some(left)) => Some(l.min(left)),
            (l, left) => l.or(left),
        }
    }
}

/// The workload's name for where a tool reaches the server.
fn tool_endpoint(address: Address) -> ToolEndpoint {
    match address {
        Address::Tcp { host, port } => ToolEndpoint::Tcp { host, port },
        Address::Socket { path } => ToolEndpoint::Socket { path },
        Address::Tls { host, port, .. } => ToolEndpoint::Tls { host, port },
    }
}

impl ToolRunner for RuntimeTools<'_> {
    fn run(&self, argv: &[String], limit: Option<Duration>) -> Result<ToolOutput, String> {
        let out = self.server.run_tool(argv, self.limit(limit))?;
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
        self.endpoint.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use cairn_exec::docker::ClientCpu;
    use cairn_exec::runtime::{Endpoint, ToolRun};
    use cairn_exec::variant_checks::VariantChecks;

    use super::*;

    /// A server whose runtime runs tools (or not) and echoes their argv.
    struct Fake {
        tools: Option<Address>,
    }

    thread_local! {
        /// The limit the last `run_tool` was given.
        static LIMIT: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
    }

    impl RunningServer for Fake {
        fn runtime(&self) -> &'static str {
            "fake"
        }
        fn endpoint(&self) -> Endpoint {
            unimplemented!("not used by the adapter")
        }
        fn variant_checks(&self, _: &[&str]) -> Result<VariantChecks, String> {
            Err("fake".into())
        }
        fn is_running(&mut self) -> bool {
            true
        }
        fn log_tail(&self) -> String {
            String::new()
        }
        fn log(&self) -> String {
            String::new()
        }
        fn ready_after(&self) -> Duration {
            Duration::ZERO
        }
        fn stop(self: Box<Self>) -> Result<(), String> {
            Ok(())
        }
        fn stop_archiving(self: Box<Self>, _: &Path) -> Result<u64, String> {
            Ok(0)
        }
        fn tool_endpoint(&self) -> Option<Address> {
            self.tools.clone()
        }
        fn run_tool(&self, argv: &[String], limit: Option<Duration>) -> Result<ToolRun, String> {
            LIMIT.set(limit);
            Ok(ToolRun {
                exit_code: 3,
                stdout: argv.join(" "),
                stderr: String::new(),
                cpu: Some(ClientCpu {
                    user_s: 1.0,
                    system_s: 0.5,
                }),
            })
        }
    }

    #[test]
    fn runs_tools_where_the_runtime_can() {
        assert!(RuntimeTools::new(&Fake { tools: None }).is_none());
        let fake = Fake {
            tools: Some(Address::Tls {
                host: "172.18.0.2".into(),
                port: 3306,
                ca: None,
            }),
        };
        let tools = RuntimeTools::new(&fake).unwrap();
        assert_eq!(
            tools.server(),
            ToolEndpoint::Tls {
                host: "172.18.0.2".into(),
                port: 3306
            }
        );
        let out = tools.run(&["sysbench".into(), "run".into()], None).unwrap();
        assert_eq!((out.exit_code, out.stdout.as_str()), (3, "sysbench run"));
        assert_eq!(out.client_cpu.map(|c| c.user_s + c.system_s), Some(1.5));
    }

    #[test]
    fn a_tool_is_killed_at_the_watchdogs_deadline() {
        let fake = Fake {
            tools: Some(Address::Tcp {
                host: "h".into(),
                port: 3306,
            }),
        };
        let hour = Duration::from_secs(3600);
        let tools = RuntimeTools::new(&fake).unwrap();
        tools.run(&["sysbench".into()], Some(hour)).unwrap();
        assert_eq!(LIMIT.get(), Some(hour), "no deadline: the tool's own limit");
        let tools = RuntimeTools::new(&fake)
            .unwrap()
            .with_deadline(Instant::now() + Duration::from_secs(60));
        tools.run(&["sysbench".into()], Some(hour)).unwrap();
        let limit = LIMIT.get().expect("a limit");
        assert!(limit <= Duration::from_secs(60), "{limit:?}");
        // an events run asks for no limit: the deadline still bounds it
        tools.run(&["sysbench".into()], None).unwrap();
        assert!(LIMIT.get().is_some_and(|l| l <= Duration::from_secs(60)));
    }

    #[test]
    fn socket_paths_pass_through() {
        assert_eq!(
            tool_endpoint(Address::Socket {
                path: "/run/cairn/mysqld.sock".into()
            }),
            ToolEndpoint::Socket {
                path: "/run/cairn/mysqld.sock".into()
            }
        );
    }
}
