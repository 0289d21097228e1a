//! CPU sets on this machine, for the trials' `cpus` factor: which CPUs cairn may hand out,
//! a cpuset of N of them (or a named set) for a trial's server with the rest for its
//! clients, a server's
//! cpuset checked against them, and the affinity a process really runs with, read back.
//!
//! The CPUs cairn may hand out are those its own process may run on (`Cpus_allowed_list`
//! of `/proc/self/status`: the machine's online CPUs, or fewer under a cpuset or a Slurm
//! allocation), no more than the cgroup CPU limit cairn runs under allows.

use std::fmt::Write as _;

/// The highest CPU number a cpuset may name here (the kernel's limit is far lower on any
/// machine cairn measures on); bounds what a plan's `"0-99999"` expands to.
const MAX_CPU: u32 = 65_535;

/// `0-2,4` → `[0, 1, 2, 4]` (sorted, each once). Empty parts and reversed ranges are errors.
pub fn parse_list(list: &str) -> Result<Vec<u32>, String> {
    let number = |s: &str| -> Result<u32, String> {
        let s = s.trim();
        match s.parse::<u32>() {
            Ok(n) if n <= MAX_CPU && !s.starts_with('+') => Ok(n),
            _ => Err(format!("`{s}` is not a CPU number")),
        }
    };
    let mut out = Vec::new();
    for part in list.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("the range `{}` runs backwards", part.trim()));
                }
                out.extend(a..=b);
            }
            None => out.push(number(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `[0, 1, 2, 4]` → `0-2,4`, the kernel's and the container engine's spelling.
pub fn format_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

/// The CPUs cairn may hand out on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Usable {
    /// The CPU numbers cairn's process may run on.
    pub cpus: Vec<u32>,
    /// The cgroup CPU limit cairn runs under, in CPUs, if one is set.
    pub quota: Option<f64>,
}

impl Usable {
    /// This machine's, as cairn's process sees it now.
    pub fn here() -> Usable {
        let cpus = allowed_list(std::path::Path::new("/proc/self/status"))
            .ok()
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                (0..n as u32).collect()
            });
        Usable {
            cpus,
            quota: crate::machine::cgroup_cpu_limit(),
        }
    }

    /// The most CPUs a server may be given: every usable CPU, no more than the quota
    /// (rounded up: a quota of 1.5 CPUs spreads over two).
    pub fn most(&self) -> usize {
        let quota = self
            .quota
            .filter(|q| q.is_finite() && *q > 0.0)
            .map_or(usize::MAX, |q| q.ceil() as usize);
        self.cpus.len().min(quota)
    }

    /// In words, for a refusal: `2 CPUs (0-1)`, and the quota when it is what limits.
    pub fn describe(&self) -> String {
        let n = self.cpus.len();
        let mut s = format!(
            "{n} CPU{} ({})",
            if n == 1 { "" } else { "s" },
            format_list(&self.cpus)
        );
        if self.most() < n {
            let _ = write!(
                s,
                " under a cgroup limit of {} CPUs",
                self.quota.unwrap_or(0.0)
            );
        }
        s
    }

    /// Whether cpuset `set` names only CPUs cairn may hand out; the error says which not.
    pub fn check_cpuset(&self, set: &str) -> Result<(), String> {
        let asked = parse_list(set)?;
        let missing: Vec<u32> = asked
            .iter()
            .copied()
            .filter(|c| !self.cpus.contains(c))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the cpuset \"{set}\" names CPU {} that this machine does not give cairn (it gives {})",
            format_list(&missing),
            self.describe()
        ))
    }

    /// Where a trial's server on `count` CPUs and its clients run: the server on the first
    /// `count` usable CPUs, the clients on the rest (or on the server's when none are
    /// left). The error says why this machine cannot give `count`.
    pub fn place(&self, count: u32) -> Result<Placement, String> {
        let n = count as usize;
        if n == 0 {
            return Err("a server needs at least 1 CPU".into());
        }
        if n > self.most() {
            return Err(format!(
                "{count} CPUs are more than this machine gives cairn: {}",
                self.describe()
            ));
        }
        let (server, rest) = self.cpus.split_at(n);
        Ok(Placement {
            count,
            server: server.to_vec(),
            clients: (!rest.is_empty()).then(|| rest.to_vec()),
        })
    }

    /// Where a trial's server on exactly the CPUs of `set` and its clients run: the clients
    /// on the usable CPUs outside it (or on the server's when none are left).
    pub fn place_set(&self, set: &str) -> Result<Placement, String> {
        self.check_cpuset(set)?;
        let server = parse_list(set)?;
        let rest: Vec<u32> = self
            .cpus
            .iter()
            .copied()
            .filter(|c| !server.contains(c))
            .collect();
        Ok(Placement {
            count: server.len() as u32,
            server,
            clients: (!rest.is_empty()).then_some(rest),
        })
    }
}

/// A trial's server cpuset and where its clients run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The number of CPUs asked for.
    pub count: u32,
    /// The server's CPUs.
    pub server: Vec<u32>,
    /// The clients' CPUs (the rest, or the server's own when asked); `None`: no CPU is
    /// left, they run unpinned, sharing the server's.
    pub clients: Option<Vec<u32>>,
}

impl Placement {
    /// The server's cpuset, as the container engine takes it.
    pub fn server_cpuset(&self) -> String {
        format_list(&self.server)
    }

    /// The clients' cpuset, if they are pinned (to CPUs of their own, or to the server's).
    pub fn clients_cpuset(&self) -> Option<String> {
        self.clients.as_deref().map(format_list)
    }

    /// The same server CPUs with the clients pinned to them too: the whole benchmark on the
    /// server's CPUs, as on a machine with only those.
    pub fn with_clients_on_the_server(self) -> Placement {
        Placement {
            clients: Some(self.server.clone()),
            ..self
        }
    }
}

/// The `Cpus_allowed_list` of a `/proc/<pid>/status` file.
fn allowed_list(status: &std::path::Path) -> Result<Vec<u32>, String> {
    let text = std::fs::read_to_string(status)
        .map_err(|e| format!("cannot read {}: {e}", status.display()))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| format!("{} has no Cpus_allowed_list", status.display()))?;
    parse_list(line)
}

/// The CPUs process `pid` may run on, as the kernel says (`/proc/<pid>/status`): what a
/// container's cpuset really gave its process.
pub fn affinity_of(pid: u32) -> Result<Vec<u32>, String> {
    allowed_list(
        &std::path::Path::new("/proc")
            .join(pid.to_string())
            .join("status"),
    )
}

/// The CPUs the calling thread may run on.
pub fn thread_affinity() -> Result<Vec<u32>, String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills at most its size
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Err(format!(
            "cannot read this thread's CPU affinity: {}",
            std::io::Error::last_os_error()
        ));
    }
    let bits = 8 * size as u32;
    Ok((0..bits)
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect())
}

/// Run `work` on a thread of its own pinned to `cpus` — every thread it starts inherits the
/// pin, so a driver's client threads run there — and hand back its result with the
/// affinity the thread had, read back after the pin.
pub fn run_pinned<T: Send>(
    cpus: &[u32],
    work: impl FnOnce() -> T + Send,
) -> Result<(T, Vec<u32>), String> {
    std::thread::scope(|s| {
        let t = s.spawn(|| {
            // SAFETY: as in thread_affinity; CPU_SET stays within the set for numbers below
            // its size, which parse_list's bound and the check below keep
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            for &c in cpus {
                if c as usize >= 8 * size {
                    return Err(format!("CPU {c} is beyond what a thread can be pinned to"));
                }
                unsafe { libc::CPU_SET(c as usize, &mut set) };
            }
            if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
                return Err(format!(
                    "cannot pin the clients to CPUs {}: {}",
                    format_list(cpus),
                    std::io::Error::last_os_error()
                ));
            }
            let pinned = thread_affinity()?;
            Ok((work(), pinned))
        });
        match t.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_as_the_kernel_spells_them() {
        assert_eq!(parse_list("0-2,4").unwrap(), [0, 1, 2, 4]);
        assert_eq!(parse_list(" 3,1,1 \n").unwrap(), [1, 3]);
        assert_eq!(format_list(&[4, 0, 1, 2]), "0-2,4");
        assert_eq!(format_list(&[1]), "1");
        for bad in ["", "a", "2-1", "0,,1", "-1", "99999999"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    fn two() -> Usable {
        Usable {
            cpus: vec![0, 1],
            quota: None,
        }
    }

    #[test]
    fn the_server_gets_the_first_cpus_and_the_clients_the_rest_or_share() {
        let one = two().place(1).unwrap();
        assert_eq!(one.server_cpuset(), "0");
        assert_eq!(one.clients_cpuset().as_deref(), Some("1"));
        let both = two().place(2).unwrap();
        assert_eq!(both.server_cpuset(), "0-1");
        assert_eq!(both.clients_cpuset(), None, "shared");
        let together = two().place(1).unwrap().with_clients_on_the_server();
        assert_eq!(together.server_cpuset(), "0");
        assert_eq!(
            together.clients_cpuset().as_deref(),
            Some("0"),
            "pinned with it"
        );
        let e = two().place(3).unwrap_err();
        assert!(e.contains("gives cairn: 2 CPUs (0-1)"), "{e}");
        assert!(two().place(0).is_err());
    }

    #[test]
    fn a_named_set_is_the_servers_and_the_clients_get_the_others() {
        let four = Usable {
            cpus: vec![0, 1, 2, 3],
            quota: None,
        };
        let cores = four.place_set("0,2").unwrap();
        assert_eq!((cores.count, cores.server_cpuset()), (2, "0,2".to_string()));
        assert_eq!(cores.clients_cpuset().as_deref(), Some("1,3"));
        assert_eq!(four.place_set("0-3").unwrap().clients, None);
        assert!(four.place_set("4").is_err());
    }

    #[test]
    fn a_quota_below_the_cpus_limits_the_count() {
        let capped = Usable {
            cpus: vec![0, 1, 2, 3],
            quota: Some(1.5),
        };
        assert_eq!(capped.most(), 2);
        assert!(capped.place(2).is_ok());
        let e = capped.place(3).unwrap_err();
        assert!(e.contains("cgroup limit of 1.5"), "{e}");
    }

    #[test]
    fn a_cpuset_naming_cpus_the_machine_lacks_is_refused() {
        assert!(two().check_cpuset("0-1").is_ok());
        let e = two().check_cpuset("0-63").unwrap_err();
        assert!(e.contains("CPU 2-63"), "{e}");
        assert!(two().check_cpuset("x").is_err());
    }

    #[test]
    fn a_pinned_thread_and_its_children_run_where_pinned() {
        let here = thread_affinity().unwrap();
        let first = here[0];
        let (child, pinned) = run_pinned(&[first], || {
            std::thread::spawn(thread_affinity).join().unwrap().unwrap()
        })
        .unwrap();
        assert_eq!(pinned, [first]);
        assert_eq!(child, [first], "a thread started there inherits the pin");
        // the caller's own affinity is untouched
        assert_eq!(thread_affinity().unwrap(), here);
        assert_eq!(
            affinity_of(std::process::id()).unwrap(),
            Usable::here().cpus
        );
    }
}
