//! What a running server costs the machine: CPU time (user, system) and context switches, read from the host's `/proc` and the server's cgroup so a trial can take them before and after its measured window.
//!
//! A [`ResourceProbe`] is made by a runtime for one server (its host PID and, for a
//! container, the container's CPU cgroup) and is read from any thread ([`ResourceProbe::read`]);
//! the difference of two readings is a [`UsageDelta`].
//! - CPU: the cgroup's counters when the server has its own cgroup (a container: every
//!   process in it, cgroup v1 `cpuacct.usage_user`/`cpuacct.usage_sys` in ns or
//!   `cpuacct.stat` in ticks, v2 `cpu.stat` in µs); else `/proc/<pid>/stat` utime + stime,
//!   which counts every thread of the process, exited ones too.
//! - Context switches: `voluntary_ctxt_switches` + `nonvoluntary_ctxt_switches` of
//!   `/proc/<pid>/task/*/status`, summed over the threads alive at the reading (cgroups do
//!   not count them). A thread that exits inside the window takes its switches with it, so
//!   the figure is a lower bound when threads come and go (a server's connection threads
//!   live as long as the workload's connections).
//! - Instructions: hardware counters over the server's threads ([`crate::counters`]), opened
//!   by [`ResourceProbe::count_instructions`]; where the machine has none, the probe says why
//!   ([`ResourceProbe::instructions_absent`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::counters::{CountedEvent, ProcessCounters};

/// Where a server's CPU time is counted, when it has a cgroup of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CpuCgroup {
    /// A cgroup v1 `cpuacct` directory.
    V1(PathBuf),
    /// A cgroup v2 directory (with `cpu.stat`).
    V2(PathBuf),
}

/// Reads one server's resource usage; cheap, and safe to read from another thread.
#[derive(Clone)]
pub struct ResourceProbe {
    pid: u32,
    cpu_cgroup: Option<CpuCgroup>,
    proc_root: PathBuf,
    /// Instructions retired by the server's threads, once counting was asked for: the open
    /// counters (shared by the probe's clones), or why the machine cannot count them.
    instructions: Option<Result<Arc<Mutex<ProcessCounters>>, String>>,
}

impl std::fmt::Debug for ResourceProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceProbe")
            .field("pid", &self.pid)
            .field("cpu_cgroup", &self.cpu_cgroup)
            .field(
                "counting_instructions",
                &matches!(self.instructions, Some(Ok(_))),
            )
            .finish()
    }
}

/// One reading of a server's counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageReading {
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// `cgroup` or `proc`: where the CPU time was read.
    pub cpu_from: &'static str,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    /// Threads whose context switches were summed.
    pub threads: usize,
    /// Instructions retired since counting started, if counted.
    pub instructions: Option<u64>,
}

/// What a server used between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct UsageDelta {
    pub cpu_s: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Voluntary + involuntary.
    pub ctx_switches: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    /// `cgroup` or `proc`.
    pub cpu_from: &'static str,
    /// Instructions retired (hardware counters), where counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<u64>,
}

impl UsageReading {
    /// What was used from `before` to this reading (counters never go back; a thread that
    /// exited in between can make a sum of switches smaller: it counts as none).
    pub fn since(&self, before: &UsageReading) -> UsageDelta {
        let user = (self.cpu_user_s - before.cpu_user_s).max(0.0);
        let system = (self.cpu_system_s - before.cpu_system_s).max(0.0);
        let voluntary = self.ctx_voluntary.saturating_sub(before.ctx_voluntary);
        let involuntary = self.ctx_involuntary.saturating_sub(before.ctx_involuntary);
        UsageDelta {
            cpu_s: user + system,
            cpu_user_s: user,
            cpu_system_s: system,
            ctx_switches: voluntary + involuntary,
            ctx_voluntary: voluntary,
            ctx_involuntary: involuntary,
            cpu_from: self.cpu_from,
            instructions: self
                .instructions
                .zip(before.instructions)
                .map(|(a, b)| a.saturating_sub(b)),
        }
    }
}

impl ResourceProbe {
    /// A host process: CPU and switches from `/proc/<pid>`.
    pub fn process(pid: u32) -> ResourceProbe {
        ResourceProbe {
            pid,
            cpu_cgroup: None,
            proc_root: PathBuf::from("/proc"),
            instructions: None,
        }
    }

    /// A process with a cgroup of its own (a container's main process): CPU from the cgroup
    /// `/proc/<pid>/cgroup` names under `cgroup_root` (normally `/sys/fs/cgroup`), switches
    /// from `/proc/<pid>`. The error says why the cgroup cannot be read (e.g. it is the
    /// root cgroup, as seen from inside another container's cgroup namespace).
    pub fn container(pid: u32, cgroup_root: &Path) -> Result<ResourceProbe, String> {
        let proc_root = PathBuf::from("/proc");
        let file = proc_root.join(pid.to_string()).join("cgroup");
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("reading {}: {e}", file.display()))?;
        let cgroup = cpu_cgroup_of(&text, cgroup_root)?;
        Ok(ResourceProbe {
            pid,
            cpu_cgroup: Some(cgroup),
            proc_root,
            instructions: None,
        })
    }

    /// The server's host PID (what a profiler attaches to).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The same probe, counting the instructions the server's threads retire from now on
    /// (and those of threads they create), where the machine has hardware counters.
    pub fn count_instructions(mut self) -> ResourceProbe {
        self.instructions = Some(
            ProcessCounters::open(self.pid, CountedEvent::Instructions)
                .map(|c| Arc::new(Mutex::new(c))),
        );
        self
    }

    /// Why instructions are not counted, if they are not.
    pub fn instructions_absent(&self) -> Option<String> {
        match &self.instructions {
            None => Some("instructions were not counted for this server".into()),
            Some(Err(e)) => Some(e.clone()),
            Some(Ok(_)) => None,
        }
    }

    /// The server's counters now.
    pub fn read(&self) -> Result<UsageReading, String> {
        let dir = self.proc_root.join(self.pid.to_string());
        let (cpu_user_s, cpu_system_s, cpu_from) = match &self.cpu_cgroup {
            Some(c) => {
                let (u, s) = read_cgroup_cpu(c)?;
                (u, s, "cgroup")
            }
            None => {
                let stat = read(&dir.join("stat"))?;
                let (utime, stime) = parse_proc_stat_times(&stat)
                    .ok_or_else(|| format!("no utime/stime in {}/stat", dir.display()))?;
                let hz = clock_ticks_per_second();
                (utime as f64 / hz, stime as f64 / hz, "proc")
            }
        };
        let (ctx_voluntary, ctx_involuntary, threads) = read_thread_switches(&dir)?;
        let instructions = match &self.instructions {
            Some(Ok(c)) => Some(
                c.lock()
                    .map_err(|_| "instruction counters poisoned")?
                    .read()?,
            ),
            _ => None,
        };
        Ok(UsageReading {
            instructions,
            cpu_user_s,
            cpu_system_s,
            cpu_from,
            ctx_voluntary,
            ctx_involuntary,
            threads,
        })
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// `sysconf(_SC_CLK_TCK)`: the unit of `/proc/<pid>/stat` times and `cpuacct.stat`.
pub(crate) fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the system; no memory is touched
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// `utime` and `stime` (fields 14 and 15, in clock ticks) of a `/proc/<pid>/stat` line.
/// The command name (field 2) may hold spaces and parentheses: fields are counted after its
/// last `)`.
pub fn parse_proc_stat_times(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // after the name: state (3), ppid (4), … utime is field 14 = the 12th after the name
    let utime = fields.nth(11)?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a `/proc/…/status` file.
pub fn parse_status_switches(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        status.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|v| v.trim_start_matches(':').trim().parse::<u64>().ok())
        })
    };
    Some((
        field("voluntary_ctxt_switches")?,
        field("nonvoluntary_ctxt_switches")?,
    ))
}

/// Context switches summed over the threads of `/proc/<pid>/task/*`; a thread that exits
/// while they are read is skipped.
fn read_thread_switches(proc_dir: &Path) -> Result<(u64, u64, usize), String> {
    let tasks = proc_dir.join("task");
    let entries =
        std::fs::read_dir(&tasks).map_err(|e| format!("reading {}: {e}", tasks.display()))?;
    let (mut voluntary, mut involuntary, mut threads) = (0, 0, 0);
    for entry in entries.flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        if let Some((v, n)) = parse_status_switches(&status) {
            voluntary += v;
            involuntary += n;
            threads += 1;
        }
    }
    if threads == 0 {
        return Err(format!(
            "no thread's status readable in {}",
            tasks.display()
        ));
    }
    Ok((voluntary, involuntary, threads))
}

/// The CPU cgroup a `/proc/<pid>/cgroup` file names, under `root`: v1's `cpuacct`
/// hierarchy (mounted as `cpuacct` or `cpu,cpuacct`), else v2's unified one. The root cgroup
/// is refused: it counts the whole machine, not the server.
fn cpu_cgroup_of(proc_cgroup: &str, root: &Path) -> Result<CpuCgroup, String> {
    let mut unified = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "cpuacct") {
            if rel.is_empty() {
                return Err("the server's cpuacct cgroup is the root cgroup: it would count the whole machine".into());
            }
            for mount in ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"] {
                let dir = root.join(mount).join(rel);
                if dir.is_dir() {
                    return Ok(CpuCgroup::V1(dir));
                }
            }
            return Err(format!(
                "the server's cpuacct cgroup {path} is not under {}",
                root.display()
            ));
        }
        if controllers.is_empty() {
            unified = Some(rel.to_string());
        }
    }
    match unified {
        Some(rel) if !rel.is_empty() => {
            let dir = root.join(&rel);
            if dir.join("cpu.stat").is_file() {
                Ok(CpuCgroup::V2(dir))
            } else {
                Err(format!(
                    "no cpu.stat in the server's cgroup {}",
                    dir.display()
                ))
            }
        }
        Some(_) => {
            Err("the server's cgroup is the root cgroup: it would count the whole machine".into())
        }
        None => Err("the server is in no CPU cgroup".into()),
    }
}

/// User and system CPU seconds of a cgroup.
fn read_cgroup_cpu(cgroup: &CpuCgroup) -> Result<(f64, f64), String> {
    match cgroup {
        CpuCgroup::V1(dir) => {
            let ns = |name: &str| {
                std::fs::read_to_string(dir.join(name))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
            };
            if let (Some(user), Some(system)) = (ns("cpuacct.usage_user"), ns("cpuacct.usage_sys"))
            {
                return Ok((user as f64 / 1e9, system as f64 / 1e9));
            }
            // older kernels: only ticks
            let stat = read(&dir.join("cpuacct.stat"))?;
            let (user, system) = parse_cpuacct_stat(&stat)
                .ok_or_else(|| format!("no user/system in {}/cpuacct.stat", dir.display()))?;
            let hz = clock_ticks_per_second();
            Ok((user as f64 / hz, system as f64 / hz))
        }
        CpuCgroup::V2(dir) => {
            let stat = read(&dir.join("cpu.stat"))?;
            let (user, system) = parse_cpu_stat_v2(&stat)
                .ok_or_else(|| format!("no user_usec/system_usec in {}/cpu.stat", dir.display()))?;
            Ok((user as f64 / 1e6, system as f64 / 1e6))
        }
    }
}

fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next()? == key).then(|| w.next()?.parse().ok())?
    })
}

/// `user` and `system` ticks of a cgroup v1 `cpuacct.stat`.
pub fn parse_cpuacct_stat(text: &str) -> Option<(u64, u64)> {
    Some((keyed(text, "user")?, keyed(text, "system")?))
}

/// `user_usec` and `system_usec` of a cgroup v2 `cpu.stat`.
pub fn parse_cpu_stat_v2(text: &str) -> Option<(u64, u64)> {
    Some((keyed(text, "user_usec")?, keyed(text, "system_usec")?))
}

/// Make the calling thread real-time (`SCHED_FIFO`, the lowest priority), for a thread that
/// sleeps until a reading is due and must take it on time however busy the machine is; it
/// runs for a moment, so it takes nothing measurable from the server or the client. Returns
/// how the thread is scheduled now, for the record: `SCHED_FIFO`, or why it stays normal.
pub fn prefer_realtime() -> &'static str {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: 0 is the calling thread; the parameter is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        "SCHED_FIFO"
    } else {
        "normal (not allowed to be real-time)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_times_count_fields_after_the_name() {
        // a name with spaces and a parenthesis must not shift the fields
        let stat = "4242 (mariadbd (x) y) S 1 4242 4242 0 -1 4194560 2915 0 0 0 \
                    1234 567 0 0 20 0 37 0 12345 1800000000 40000 18446744073709551615";
        assert_eq!(parse_proc_stat_times(stat), Some((1234, 567)));
        assert_eq!(parse_proc_stat_times("garbage"), None);
    }

    #[test]
    fn status_switches_both_kinds() {
        let status = "Name:\tmariadbd\nThreads:\t37\nvoluntary_ctxt_switches:\t1500\n\
                      nonvoluntary_ctxt_switches:\t25\n";
        assert_eq!(parse_status_switches(status), Some((1500, 25)));
        assert_eq!(parse_status_switches("Name:\tx\n"), None);
    }

    #[test]
    fn cgroup_cpu_files_of_either_version() {
        assert_eq!(
            parse_cpuacct_stat("user 4211\nsystem 1802\n"),
            Some((4211, 1802))
        );
        let v2 = "usage_usec 1500000\nuser_usec 1200000\nsystem_usec 300000\nnr_periods 0\n";
        assert_eq!(parse_cpu_stat_v2(v2), Some((1_200_000, 300_000)));
        assert_eq!(parse_cpu_stat_v2("usage_usec 1\n"), None);
    }

    #[test]
    fn a_containers_cpu_cgroup_is_found_under_the_mount() {
        let root = tempfile::tempdir().unwrap();
        let id = "0123abcd";
        std::fs::create_dir_all(root.path().join("cpu,cpuacct/docker").join(id)).unwrap();
        let v1 = format!("12:cpu,cpuacct:/docker/{id}\n0::/\n");
        assert_eq!(
            cpu_cgroup_of(&v1, root.path()).unwrap(),
            CpuCgroup::V1(root.path().join("cpu,cpuacct/docker").join(id))
        );
        let v2dir = root.path().join(format!("system.slice/docker-{id}.scope"));
        std::fs::create_dir_all(&v2dir).unwrap();
        std::fs::write(v2dir.join("cpu.stat"), "user_usec 1\nsystem_usec 2\n").unwrap();
        let v2 = format!("0::/system.slice/docker-{id}.scope\n");
        assert_eq!(
            cpu_cgroup_of(&v2, root.path()).unwrap(),
            CpuCgroup::V2(v2dir.clone())
        );
        assert_eq!(
            read_cgroup_cpu(&CpuCgroup::V2(v2dir)).unwrap(),
            (1e-6, 2e-6)
        );
        // the root cgroup is the whole machine, not a server
        let e = cpu_cgroup_of("2:cpuacct:/\n", root.path()).unwrap_err();
        assert!(e.contains("root cgroup"), "{e}");
        assert!(cpu_cgroup_of("0::/\n", root.path()).is_err());
    }

    #[test]
    fn a_delta_never_goes_negative() {
        let a = UsageReading {
            cpu_user_s: 1.0,
            cpu_system_s: 0.5,
            cpu_from: "proc",
            ctx_voluntary: 100,
            ctx_involuntary: 10,
            threads: 3,
            instructions: Some(1000),
        };
        let b = UsageReading {
            cpu_user_s: 3.0,
            cpu_system_s: 1.0,
            ctx_voluntary: 90,
            ctx_involuntary: 30,
            instructions: Some(1500),
            ..a
        };
        let d = b.since(&a);
        assert_eq!(d.instructions, Some(500));
        assert_eq!((d.cpu_s, d.cpu_user_s, d.cpu_system_s), (2.5, 2.0, 0.5));
        assert_eq!(
            (d.ctx_voluntary, d.ctx_involuntary, d.ctx_switches),
            (0, 20, 20)
        );
    }

    #[test]
    fn this_process_can_be_read() {
        // the capability itself: our own /proc entry has both counters
        let probe = ResourceProbe::process(std::process::id());
        let r = probe.read().unwrap();
        assert_eq!(r.cpu_from, "proc");
        assert!(r.threads >= 1);
        assert!(r.ctx_voluntary + r.ctx_involuntary > 0);
    }
}
