//! The client's network path to a server: how clients connect ([`Connect`]: socket, TCP,
//! TLS; defined with the plan's names in cairn-defs), where a trial's clients run relative to the server
//! ([`ClientPath`]: in its network namespace over loopback, in another container on the
//! bridge, on the host), an emulated link on the server's interface ([`Link`]: tc netem), and
//! running the native driver's threads inside another network namespace ([`run_in_netns`]).
//!
//! Why threads and not a container for the native driver: cairn measures with its own
//! threads, and a Linux thread can enter a network namespace (`setns(CLONE_NEWNET)`) without
//! touching the rest of the process; the threads it then starts (the driver's clients) are
//! born in that namespace, and every socket they open belongs to it. The filesystem stays the
//! host's, so a socket path or a TLS CA on the host is still found.

use std::path::Path;

// The names of both are the plan's (`connect "…"`, `client "…"`): their one list is in
// cairn-defs, which the parser reads.
pub use cairn_defs::server::{ClientPath, Connect};

/// An emulated link on the server's interface, so the server's replies leave at most at
/// `rate` and `delay` later (one way: each request/reply round trip takes `delay` more). A
/// rate alone is a token bucket (tc `tbf`); a delay needs tc `netem`, which some kernels
/// lack (`CONFIG_NET_SCH_NETEM`): then the link fails at the trial's start, saying so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Link {
    /// tc's spelling, e.g. `100mbit`.
    pub rate: Option<String>,
    /// tc's spelling, e.g. `2ms`.
    pub delay: Option<String>,
}

/// The rate units tc reads (bits and bytes per second), longest first.
const RATE_UNITS: [&str; 8] = ["gbit", "mbit", "kbit", "gbps", "mbps", "kbps", "bit", "bps"];
/// The time units tc reads.
const DELAY_UNITS: [&str; 3] = ["us", "ms", "s"];

/// `text` as a positive decimal number followed by one of `units`.
fn number_with_unit(text: &str, units: &[&str]) -> bool {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    !digits.is_empty()
        && digits.len() <= 12
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.parse::<f64>().is_ok_and(|v| v > 0.0)
        && units.contains(&unit)
}

impl Link {
    /// A link from a plan's `rate` and `delay`; the error names the bad one.
    pub fn new(rate: Option<&str>, delay: Option<&str>) -> Result<Link, (&'static str, String)> {
        if rate.is_none() && delay.is_none() {
            return Err((
                "link",
                "a `link` needs a `rate` (e.g. \"100mbit\") or a `delay` (e.g. \"2ms\")".into(),
            ));
        }
        if let Some(r) = rate.filter(|r| !number_with_unit(r, &RATE_UNITS)) {
            return Err((
                "rate",
                format!("link rate {r:?} is not a rate: write a number and kbit, mbit, gbit (bits/s) or kbps, mbps, gbps (bytes/s), e.g. \"100mbit\""),
            ));
        }
        if let Some(d) = delay.filter(|d| !number_with_unit(d, &DELAY_UNITS)) {
            return Err((
                "delay",
                format!(
                    "link delay {d:?} is not a delay: write a number and us, ms or s, e.g. \"2ms\""
                ),
            ));
        }
        Ok(Link {
            rate: rate.map(str::to_string),
            delay: delay.map(str::to_string),
        })
    }

    /// tc's qdisc and its arguments: `netem delay … [rate …]` with a delay, else `tbf rate …
    /// burst … latency 50ms` (a burst of 10 ms at the rate, at least 16 KiB).
    pub fn qdisc_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        match (&self.delay, &self.rate) {
            (Some(d), rate) => {
                a.extend(["netem".to_string(), "delay".into(), d.clone()]);
                if let Some(r) = rate {
                    a.extend(["rate".to_string(), r.clone()]);
                }
            }
            (None, Some(r)) => {
                let burst = (bytes_per_s(r) / 100.0).max(16384.0) as u64;
                a.extend([
                    "tbf".to_string(),
                    "rate".into(),
                    r.clone(),
                    "burst".into(),
                    format!("{burst}b"),
                    "latency".into(),
                    "50ms".into(),
                ]);
            }
            (None, None) => {}
        }
        a
    }

    /// Put the link on interface `dev` in the network namespace of process `pid` (the
    /// server): `nsenter --net=/proc/<pid>/ns/net tc qdisc replace dev <dev> root …`.
    /// The qdisc goes with the namespace when the server's container is removed.
    pub fn apply(&self, pid: u32, dev: &str) -> Result<(), String> {
        let qdisc = self.qdisc_args();
        let mut cmd = std::process::Command::new("nsenter");
        cmd.arg(format!("--net=/proc/{pid}/ns/net"))
            .args(["tc", "qdisc", "replace", "dev", dev, "root"])
            .args(&qdisc);
        let out = cmd.output().map_err(|e| {
            format!("cannot run nsenter/tc for the link (install util-linux and iproute2): {e}")
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let hint = if qdisc[0] == "netem" && stderr.contains("qdisc kind is unknown") {
                " (this kernel has no netem, CONFIG_NET_SCH_NETEM: a link `delay` cannot be emulated on this machine; a `rate` alone can)"
            } else {
                ""
            };
            return Err(format!(
                "tc refused the link `{}`: {}{hint}",
                qdisc.join(" "),
                stderr.trim()
            ));
        }
        Ok(())
    }
}

/// A checked rate (see [`Link::new`]) in bytes per second; tc's k, m and g are 1000s.
fn bytes_per_s(rate: &str) -> f64 {
    let digits = rate.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: f64 = digits.parse().unwrap_or(0.0);
    let unit = &rate[digits.len()..];
    let scale = match unit.chars().next() {
        Some('k') => 1e3,
        Some('m') => 1e6,
        Some('g') => 1e9,
        _ => 1.0,
    };
    let bits = unit.ends_with("bit");
    n * scale / if bits { 8.0 } else { 1.0 }
}

/// Run `work` on a thread that first enters the network namespace `netns` (e.g.
/// `/proc/<pid>/ns/net`); the threads `work` starts are born there. The calling thread and
/// the rest of the process stay where they are. A panic in `work` is resumed here.
pub fn run_in_netns<T: Send>(netns: &Path, work: impl FnOnce() -> T + Send) -> Result<T, String> {
    use std::os::fd::AsRawFd;
    let ns = std::fs::File::open(netns)
        .map_err(|e| format!("cannot open the network namespace {}: {e}", netns.display()))?;
    std::thread::scope(|s| {
        let t = s.spawn(|| {
            // SAFETY: setns on an open namespace file changes only this thread's namespace
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(format!(
                    "cannot enter the network namespace {} (needs CAP_SYS_ADMIN: run as root): {}",
                    netns.display(),
                    std::io::Error::last_os_error()
                ));
            }
            Ok(work())
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
    fn paths_read_and_print() {
        for p in ["loopback", "bridge", "host"] {
            assert_eq!(p.parse::<ClientPath>().unwrap().as_str(), p);
        }
        assert!("lan"
            .parse::<ClientPath>()
            .unwrap_err()
            .contains("\"bridge\""));
    }

    #[test]
    fn links_are_checked_and_become_netem_arguments() {
        let l = Link::new(Some("100mbit"), Some("2ms")).unwrap();
        assert_eq!(l.qdisc_args(), ["netem", "delay", "2ms", "rate", "100mbit"]);
        assert_eq!(
            Link::new(None, Some("0.5ms")).unwrap().qdisc_args(),
            ["netem", "delay", "0.5ms"]
        );
        // a rate alone: a token bucket whose burst is 10 ms at the rate (at least 16 KiB)
        assert_eq!(
            Link::new(Some("1gbit"), None).unwrap().qdisc_args(),
            ["tbf", "rate", "1gbit", "burst", "1250000b", "latency", "50ms"]
        );
        assert_eq!(
            Link::new(Some("1mbit"), None).unwrap().qdisc_args()[4],
            "16384b"
        );
        assert_eq!(bytes_per_s("8kbps"), 8000.0);
        assert_eq!(Link::new(None, None).unwrap_err().0, "link");
        for bad in ["fast", "100", "100 mbit", "-1mbit", "0mbit", "1e9bit"] {
            assert_eq!(Link::new(Some(bad), None).unwrap_err().0, "rate", "{bad}");
        }
        for bad in ["2", "2 ms", "2min", "ms"] {
            assert_eq!(Link::new(None, Some(bad)).unwrap_err().0, "delay", "{bad}");
        }
    }

    #[test]
    fn a_thread_in_this_namespace_runs_and_panics_come_back() {
        let me = Path::new("/proc/self/ns/net");
        // entering one's own namespace needs the same privilege as any other
        match run_in_netns(me, || 7) {
            Ok(v) => assert_eq!(v, 7),
            Err(e) => assert!(e.contains("CAP_SYS_ADMIN"), "{e}"),
        }
        assert!(run_in_netns(Path::new("/nonexistent/ns"), || ())
            .unwrap_err()
            .contains("cannot open"));
    }
}
