//! Probe the host for the machine fingerprint: CPU model, cores/threads, memory, kernel.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    pub cpu_model: String,
    pub cores: u32,
    pub threads: u32,
    pub memory_bytes: u64,
    pub kernel: String,
}

pub fn probe() -> HostFacts {
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
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    HostFacts {
        cpu_model,
        cores,
        threads,
        memory_bytes,
        kernel,
    }
}
