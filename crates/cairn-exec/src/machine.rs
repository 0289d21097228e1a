//! Probe the host for the machine fingerprint: CPU model, cores/threads and SMT, memory,
//! kernel, CPU frequency governor and turbo, vulnerability mitigations, transparent huge
//! pages, the I/O schedulers of given disks and the cgroup CPU/memory limits that apply.
//! Everything is read from `/proc` and `/sys`; what is not visible here is `None`.
//! Which of these facts decide reuse and comparison (the class in measurement keys) is
//! `cairn_graph::Fingerprint`'s business, not this module's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

/// The exact facts of this machine, as probed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostFacts {
    pub cpu_model: String,
    /// Physical cores (distinct socket/core pairs; the thread count where they are absent).
    pub cores: u32,
    /// Hardware threads (logical CPUs).
    pub threads: u32,
    /// Whether SMT is on: `/sys/devices/system/cpu/smt/active`, else threads > cores.
    pub smt: bool,
    /// `MemTotal` in bytes.
    pub memory_bytes: u64,
    /// `osrelease`, with its build tag (e.g. `6.1.0-13-cloud-amd64`).
    pub kernel: String,
    /// `/proc/version`.
    pub kernel_build: String,
    /// `scaling_governor` of cpu0, where cpufreq is visible.
    pub cpu_governor: Option<String>,
    /// Turbo/boost allowed: `intel_pstate/no_turbo` (inverted) or `cpufreq/boost`.
    pub turbo: Option<bool>,
    /// `/sys/devices/system/cpu/vulnerabilities/*`: name → state.
    pub mitigations: BTreeMap<String, String>,
    /// The selected mode of `transparent_hugepage/enabled`.
    pub transparent_hugepages: Option<String>,
    /// The cgroup CPU limit of this process, in CPUs (`cpu.max` or `cfs_quota/period`).
    pub cgroup_cpus: Option<f64>,
    /// The cgroup memory limit of this process, in bytes.
    pub cgroup_memory_bytes: Option<u64>,
    /// Disk I/O schedulers of the paths asked about: label → scheduler.
    pub io_schedulers: BTreeMap<String, String>,
    /// `/proc/sys/kernel/random/boot_id`: this machine instance since its last boot. Two
    /// instances of one class (same fingerprint) can differ several-fold, so measurements
    /// compare as made together only within one boot (a campaign).
    pub boot_id: Option<String>,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The selected word of a sysfs choice list, `a [b] c` → `b`.
fn selected(list: &str) -> Option<String> {
    list.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .map(String::from)
}

/// Probes this host; `disks` are (label, path) pairs whose disk's I/O scheduler is recorded
/// (the store's, the container engine's).
pub fn probe(disks: &[(&str, &Path)]) -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|r| r.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let threads = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(1) as u32;
    // distinct (physical id, core id) pairs; falls back to threads when absent (VMs)
    let mut cores = std::collections::HashSet::new();
    let mut phys = "";
    for l in cpuinfo.lines() {
        if let Some((k, v)) = l.split_once(':') {
            match k.trim() {
                "physical id" => phys = v.trim(),
                "core id" => {
                    cores.insert(format!("{phys}/{}", v.trim()));
                }
                _ => {}
            }
        }
    }
    let cores = if cores.is_empty() {
        threads
    } else {
        cores.len() as u32
    };
    let smt = match read("/sys/devices/system/cpu/smt/active").as_deref() {
        Some("1") => true,
        Some("0") => false,
        _ => threads > cores,
    };
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let kernel_build = read("/proc/version").unwrap_or_default();
    let cpu_governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    let turbo = read("/sys/devices/system/cpu/intel_pstate/no_turbo")
        .map(|v| v == "0")
        .or_else(|| read("/sys/devices/system/cpu/cpufreq/boost").map(|v| v == "1"));
    let mut mitigations = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
        for e in rd.flatten() {
            if let Some(v) = read(e.path()) {
                mitigations.insert(e.file_name().to_string_lossy().into_owned(), v);
            }
        }
    }
    let transparent_hugepages =
        read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|l| selected(&l));
    let (cgroup_cpus, cgroup_memory_bytes) = cgroup_limits();
    let io_schedulers = disks
        .iter()
        .filter_map(|(label, path)| io_scheduler(path).map(|s| (label.to_string(), s)))
        .collect();
    HostFacts {
        cpu_model,
        cores,
        threads,
        smt,
        memory_bytes,
        kernel,
        kernel_build,
        cpu_governor,
        turbo,
        mitigations,
        transparent_hugepages,
        cgroup_cpus,
        cgroup_memory_bytes,
        io_schedulers,
        boot_id: boot_id(),
    }
}

/// This machine instance since its last boot (`/proc/sys/kernel/random/boot_id`).
pub fn boot_id() -> Option<String> {
    read("/proc/sys/kernel/random/boot_id")
}

/// The cgroup CPU limit of this process, in CPUs, where set.
pub fn cgroup_cpu_limit() -> Option<f64> {
    cgroup_limits().0
}

/// The CPU and memory limits of this process's cgroups (v2 unified, else v1), where set.
fn cgroup_limits() -> (Option<f64>, Option<u64>) {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut cpus = None;
    let mut mem = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            let dir = Path::new("/sys/fs/cgroup").join(path);
            if let Some(max) = read(dir.join("cpu.max")) {
                let mut w = max.split_whitespace();
                if let (Some(q), Some(p)) = (w.next(), w.next()) {
                    if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                        cpus = cpus.or(Some(q / p));
                    }
                }
            }
            if let Some(m) = read(dir.join("memory.max")).and_then(|m| m.parse().ok()) {
                mem = mem.or(Some(m));
            }
            continue;
        }
        for c in controllers.split(',') {
            let dir = Path::new("/sys/fs/cgroup").join(c).join(path);
            match c {
                "cpu" => {
                    let q = read(dir.join("cpu.cfs_quota_us")).and_then(|q| q.parse::<i64>().ok());
                    let p = read(dir.join("cpu.cfs_period_us")).and_then(|p| p.parse::<i64>().ok());
                    if let (Some(q), Some(p)) = (q, p) {
                        if q > 0 && p > 0 {
                            cpus = Some(q as f64 / p as f64);
                        }
                    }
                }
                "memory" => {
                    // v1 reports "no limit" as a huge page-aligned number
                    let m = read(dir.join("memory.limit_in_bytes"))
                        .and_then(|m| m.parse::<u64>().ok())
                        .filter(|&m| m < (1u64 << 60));
                    if m.is_some() {
                        mem = m;
                    }
                }
                _ => {}
            }
        }
    }
    (cpus, mem)
}

/// The I/O scheduler of the disk holding `path`, e.g. `none`, `mq-deadline`.
fn io_scheduler(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc_major(dev), libc_minor(dev));
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    // a partition's scheduler is its disk's
    let list =
        read(sys.join("queue/scheduler")).or_else(|| read(sys.join("../queue/scheduler")))?;
    selected(&list).or(Some(list))
}

fn libc_major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)
}

fn libc_minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_word_of_a_sysfs_list() {
        assert_eq!(
            selected("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected("none").as_deref(), None);
    }

    #[test]
    fn probing_twice_gives_the_same_facts() {
        let here = Path::new(".");
        assert_eq!(probe(&[("cwd", here)]), probe(&[("cwd", here)]));
    }

    #[test]
    fn device_numbers_split_like_glibc() {
        // makedev(254, 1) and makedev(259, 300)
        assert_eq!((libc_major(0xfe01), libc_minor(0xfe01)), (254, 1));
        let dev = (259u64 << 8) | (300 & 0xff) | ((300 & !0xff) << 12);
        assert_eq!((libc_major(dev), libc_minor(dev)), (259, 300));
    }
}
