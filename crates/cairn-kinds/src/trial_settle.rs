//! A trial's settle window (`settle "60s"` of its trials block): after the server is ready
//! and before the first run, it sits idle, and cairn records what it did meanwhile — its CPU
//! time (the runtime's [`ResourceProbe`], as for the efficiency figures) and its status
//! counters — and whether it was idle. A server that was busy is flagged in the record,
//! never hidden; the trial still runs (a server that finishes its start-up work late is
//! what a settle window is for, and the record says it did not finish in time).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cairn_exec::usage::ResourceProbe;
use cairn_workload::server::{status_deltas, StatusSession};
use cairn_workload::Target;
use serde_json::{json, Value};

/// The most CPU an idle server may use over its settle window: 5% of one CPU. A server
/// done with its start-up work uses well under 1%; purge, a buffer pool loading its dump or
/// a checkpoint show as several percent.
pub const IDLE_CPU_SHARE: f64 = 0.05;

/// Status counters that move whether or not the server works: they say nothing of idleness.
const CLOCKS: &[&str] = &["Uptime", "Uptime_since_flush_status"];

/// What the settle window saw, for the trial's record (`extra.settle`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The window as it was: from the first reading to the last.
    pub seconds: f64,
    /// The server's CPU seconds over the window, if the runtime could read them (and why
    /// not).
    pub cpu_s: Result<f64, String>,
    /// Queries others than cairn's two status reads sent (MySQL-family `Questions`;
    /// PostgreSQL's transactions in the dataset's database), if the status has them.
    pub client_queries: Option<f64>,
    /// The status counters that moved over the window (clocks left out).
    pub moved: BTreeMap<String, f64>,
}

impl Settled {
    /// CPU seconds per second of window.
    pub fn cpu_share(&self) -> Option<f64> {
        let cpu = self.cpu_s.as_ref().ok()?;
        (self.seconds > 0.0).then(|| cpu / self.seconds)
    }

    /// Why the server was not idle, `None` if it was (as far as the readings can tell).
    pub fn not_idle(&self) -> Option<String> {
        let mut why = Vec::new();
        if let Some(share) = self.cpu_share().filter(|s| *s > IDLE_CPU_SHARE) {
            why.push(format!(
                "it used {:.1}% of a CPU (idle is at most {:.0}%)",
                share * 100.0,
                IDLE_CPU_SHARE * 100.0
            ));
        }
        if let Some(q) = self.client_queries.filter(|q| *q > 0.0) {
            why.push(format!(
                "it answered {q} queries besides cairn's status reads"
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The record's `extra.settle`.
    pub fn record(&self, declared: Duration) -> Value {
        let mut v = json!({
            "declared_s": declared.as_secs_f64(),
            "seconds": self.seconds,
            "idle": self.not_idle().is_none(),
            "client_queries": self.client_queries,
            "status_moved": self.moved,
        });
        match &self.cpu_s {
            Ok(cpu) => {
                v["server_cpu_s"] = json!(cpu);
                v["cpu_share"] = json!(self.cpu_share());
            }
            Err(why) => v["server_cpu_absent"] = json!(why),
        }
        if let Some(why) = self.not_idle() {
            v["not_idle"] = json!(why);
        }
        v
    }
}

/// Queries others sent between two status readings taken on one connection: MySQL-family
/// `Questions` less the closing `SHOW GLOBAL STATUS`, which counts itself; PostgreSQL's
/// committed and rolled back transactions in the dataset's database (cairn reads from
/// another database). `None` when the status has neither.
pub fn client_queries(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Option<f64> {
    let delta = |k: &str| -> Option<f64> {
        let a: f64 = after.get(k)?.parse().ok()?;
        let b: f64 = before.get(k)?.parse().ok()?;
        Some(a - b)
    };
    if let Some(q) = delta("Questions") {
        return Some((q - 1.0).max(0.0));
    }
    let commits = delta("xact_commit")?;
    Some(commits + delta("xact_rollback").unwrap_or(0.0))
}

/// Let the server sit idle for `window`, reading it at both ends; `cancelled` ends the wait
/// early (the caller then stops). A status read that fails is the error.
pub fn settle(
    window: Duration,
    probe: Result<ResourceProbe, String>,
    status: &Target,
    cancelled: &dyn Fn() -> bool,
) -> Result<Settled, cairn_workload::Error> {
    let mut session = StatusSession::open(status);
    let before = session.read()?;
    let start = probe
        .as_ref()
        .map_err(Clone::clone)
        .and_then(ResourceProbe::read);
    let t0 = Instant::now();
    while t0.elapsed() < window && !cancelled() {
        std::thread::sleep((window - t0.elapsed().min(window)).min(Duration::from_millis(100)));
    }
    let end = probe
        .as_ref()
        .map_err(Clone::clone)
        .and_then(ResourceProbe::read);
    let seconds = t0.elapsed().as_secs_f64();
    let after = session.read()?;
    let cpu_s = match (start, end) {
        (Ok(s), Ok(e)) => Ok(e.since(&s).cpu_s),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let mut moved = status_deltas(&before, &after);
    moved.retain(|k, _| !CLOCKS.contains(&k.as_str()));
    Ok(Settled {
        seconds,
        cpu_s,
        client_queries: client_queries(&before, &after),
        moved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn settled(cpu_s: f64, client_queries: Option<f64>) -> Settled {
        Settled {
            seconds: 10.0,
            cpu_s: Ok(cpu_s),
            client_queries,
            moved: BTreeMap::new(),
        }
    }

    #[test]
    fn cairns_own_status_read_is_not_a_client_query() {
        let b = status(&[("Questions", "7"), ("Uptime", "3")]);
        assert_eq!(
            client_queries(&b, &status(&[("Questions", "8")])),
            Some(0.0)
        );
        assert_eq!(
            client_queries(&b, &status(&[("Questions", "20")])),
            Some(12.0)
        );
        let pg = status(&[("xact_commit", "5"), ("xact_rollback", "1")]);
        let pg2 = status(&[("xact_commit", "9"), ("xact_rollback", "1")]);
        assert_eq!(client_queries(&pg, &pg2), Some(4.0));
        assert_eq!(client_queries(&b, &pg2), None);
    }

    #[test]
    fn a_busy_settle_is_flagged_with_why() {
        let idle = settled(0.1, Some(0.0));
        assert_eq!(idle.not_idle(), None);
        assert_eq!(idle.record(Duration::from_secs(10))["idle"], true);
        let busy = settled(3.0, Some(0.0));
        let why = busy.not_idle().unwrap();
        assert!(why.contains("30.0% of a CPU"), "{why}");
        let r = busy.record(Duration::from_secs(10));
        assert_eq!(r["idle"], false);
        assert_eq!(r["cpu_share"], 0.3);
        assert!(settled(0.0, Some(3.0))
            .not_idle()
            .unwrap()
            .contains("3 queries"));
        // a runtime that cannot read CPU time still says what the status saw
        let unread = Settled {
            cpu_s: Err("no probe".into()),
            ..settled(0.0, Some(0.0))
        };
        let r = unread.record(Duration::from_secs(10));
        assert_eq!(r["server_cpu_absent"], "no probe");
        assert_eq!(r["idle"], true);
    }
}
