//! A trial's efficiency figures: what the server spent per query in the measured window — CPU time (`server_cpu_us_per_query`, `server_cpu_s`) and context switches (`ctx_switches_per_query`) — read through the runtime's [`ResourceProbe`] before and after the window.
//!
//! The window is the workload's measured window, not its warmup: a run the clock ends is
//! read `warmup` seconds after the workload starts (by a timer thread, since drivers and
//! external tools keep their warmup to themselves; real-time where allowed, because a loaded
//! machine here kept normal threads off the CPU for seconds, and a reading that still comes
//! late gives no figure, with how late it was) and again when the workload returns; a
//! run a count ends, or one without warmup, from the workload's start. The queries divided
//! by are the server's `Questions` counted over the same span (read beside each reading), so
//! numerator and denominator cover the same time even where the span's start is off by a
//! client's connect time; without them, the driver's `queries`. At each end the CPU counters
//! are read first (a file read, on time) and the `Questions` after (a connection and a query);
//! if those reads lag the counters by more than max(0.5 s, a tenth of the window) in all, the
//! two would count different spans, and the per-query figures are absent with the lags said
//! (`server_cpu_s` stays). The record (`extra.efficiency`)
//! says where each number came from, and why a figure is absent (a runtime that cannot read
//! its server, a machine without hardware counters for `instructions_per_query`).
//!
//! The machine around the server is read at the same two moments (`/proc/stat`, every CPU):
//! `other_cpu_pct` is the share of its CPU time busy with anything but the server, cairn's
//! own process (where native drivers run) and an external tool's client (its
//! `client_cpu_s`). Other work beside a trial (a compile, a neighbour's job) shows there,
//! while the server's own CPU figures barely move; the record's `machine` keeps the parts.
//!
//! Client CPU per query is the driver's own figure (`client_cpu_ms_per_1k_queries`, the same
//! number as µs per query): the driver measures its threads, or the tool's container.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cairn_defs::figures::{self, Figures};
use cairn_defs::ProfilesAsked;
use cairn_exec::host_cpu::{HostCpuDelta, HostCpuReading};
use cairn_exec::profiler::Recording;
use cairn_exec::usage::{ResourceProbe, UsageReading};
use cairn_workload::server::StatusSession;
use cairn_workload::waits::{Waits, WaitsRecording};
use cairn_workload::Target;
use serde_json::{json, Value};

/// The reading at the start of the window: the server's counters, then its `Questions`, and
/// how long the `Questions` took to read (the two are only comparable if that is short).
struct StartReading {
    usage: Result<UsageReading, String>,
    /// The whole machine's counters, read right after the server's.
    machine: Result<HostCpuReading, String>,
    questions: Option<f64>,
    at: Instant,
    questions_lag: Duration,
    /// How long after it was due the reading was taken (a timer thread a loaded machine did
    /// not schedule in time reads late, and its window misses the measured run's start).
    late: Duration,
    /// How the thread that took it was scheduled (for the record).
    timer: &'static str,
}

impl StartReading {
    /// Read the counters first (a file read: the window starts when it was due), then the
    /// server's `Questions` (a connection and a query, which a loaded machine can delay).
    fn take(
        probe: &Result<ResourceProbe, String>,
        status: Option<&mut StatusSession>,
        before: &BTreeMap<String, String>,
        due: Instant,
    ) -> StartReading {
        let at = Instant::now();
        let usage = probe
            .as_ref()
            .map_err(Clone::clone)
            .and_then(ResourceProbe::read);
        let machine = HostCpuReading::read();
        let questions = match status {
            Some(s) => s.read().ok().and_then(|s| questions(&s)),
            None => questions(before),
        };
        StartReading {
            usage,
            machine,
            questions,
            at,
            questions_lag: at.elapsed(),
            late: at.saturating_duration_since(due),
            timer: "this thread",
        }
    }
}

/// How far apart the CPU counters and the `Questions` of the window's two ends may be read
/// before per-query figures would divide one span's CPU by another span's queries: half a
/// second, or a tenth of the window if that is longer.
fn lag_allowed(window: Duration) -> Duration {
    Duration::from_millis(500).max(window / 10)
}

/// Where the window's first reading comes from.
enum Start {
    /// Taken already (no warmup to skip), with the profiles' recordings if any were asked.
    Taken(StartReading, Box<Profiling>),
    /// A timer thread takes it when the warmup ends, and starts the profiles' recordings
    /// then; a message ends it early. The thread hands back the status connection.
    Pending {
        thread: JoinHandle<(Option<StartReading>, StatusSession, Profiling)>,
        workload_done: mpsc::Sender<()>,
    },
}

/// The profiles being recorded over the window, each if asked, or why it could not start.
#[derive(Default)]
struct Profiling {
    cpu: Option<Result<Recording, String>>,
    waits: Option<Result<WaitsRecording, String>>,
}

/// Starts the profiles asked: at the window's start, after the warmup, so they are of the
/// measured window only. The server's on-CPU stacks (`cpu`) are sampled for its process; its
/// wait statistics (`waits`) are read on connections of their own to `status`.
fn start_profiles(
    probe: &Result<ResourceProbe, String>,
    status: &Target,
    asked: ProfilesAsked,
) -> Profiling {
    Profiling {
        cpu: asked.cpu.then(|| {
            probe
                .as_ref()
                .map_err(|e| format!("the server's process cannot be read: {e}"))
                .and_then(|p| Recording::start(p.pid()))
        }),
        waits: asked.waits.then(|| WaitsRecording::start(status)),
    }
}

/// Measures the server over one workload's measured window.
pub struct WindowMeter {
    probe: Result<ResourceProbe, String>,
    start: Start,
    from: &'static str,
    /// The status connection, while the timer thread does not hold it.
    session: Option<StatusSession>,
    /// Where the status connection goes (for a new one if the timer thread was lost).
    target: Target,
    /// The client runs outside cairn's process (an external tool's container): its CPU is
    /// the driver's `client_cpu_s`, not part of cairn's own.
    client_outside: bool,
}

/// The window's second reading, taken as the workload returned.
pub struct WindowEnd {
    session: StatusSession,
    /// The window's on-CPU recording, interrupted as the window ended, if it was asked (or
    /// why there is none).
    profile: Option<Result<Recording, String>>,
    /// The window's waits, if asked (or why there are none).
    waits: Option<Result<Waits, String>>,
    /// Why instructions were not counted, if they were not.
    instructions_absent: Option<String>,
    probe_error: Option<String>,
    start: Option<StartReading>,
    end: Option<UsageReading>,
    /// The whole machine's counters at the window's end.
    machine_end: Result<HostCpuReading, String>,
    client_outside: bool,
    at: Instant,
    from: &'static str,
}

/// `Questions` of a `SHOW GLOBAL STATUS` map.
fn questions(status: &BTreeMap<String, String>) -> Option<f64> {
    status.get("Questions").and_then(|v| v.parse().ok())
}

impl WindowMeter {
    /// Start measuring at a workload's start: `before` is the status read just before it,
    /// `warmup` what the workload declares (zero for none), `status` reaches the server for
    /// the readings at the warmup's end and after the workload (connected now, before the
    /// workload, so a reading costs a query and not a connect).
    /// With `profiles`, the server's on-CPU stacks are sampled and its waits read over the
    /// window too. `client_outside`: the workload's client runs outside cairn's process (an
    /// external tool), so the machine's other work is counted less its `client_cpu_s`.
    pub fn start(
        probe: Result<ResourceProbe, String>,
        before: &BTreeMap<String, String>,
        warmup: Duration,
        status: &Target,
        profiles: ProfilesAsked,
        client_outside: bool,
    ) -> WindowMeter {
        let mut session = StatusSession::open(status);
        // counting starts before the workload, so the connection threads it makes inherit it
        let probe = probe.map(ResourceProbe::count_instructions);
        // a probe that cannot read has no window to wait for: its record says why
        if warmup.is_zero() || probe.is_err() {
            let reading = StartReading::take(&probe, None, before, Instant::now());
            let start = Start::Taken(reading, Box::new(start_profiles(&probe, status, profiles)));
            return WindowMeter {
                probe,
                start,
                from: "workload start",
                session: Some(session),
                target: status.clone(),
                client_outside,
            };
        }
        let (workload_done, done) = mpsc::channel::<()>();
        let p = probe.clone();
        let target = status.clone();
        // due by the clock of this call: a thread that first runs late does not wait a whole
        // warmup more, and its reading says how late it came
        let due = Instant::now() + warmup;
        let thread = std::thread::spawn(move || {
            // a loaded machine can keep a woken thread of normal priority off the CPU for
            // seconds (seen here while an external tool's container and the server saturate
            // both cores): the one reading that must be on time asks to be real-time first
            let timer = cairn_exec::usage::prefer_realtime();
            match done.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let mut start =
                        StartReading::take(&p, Some(&mut session), &BTreeMap::new(), due);
                    start.timer = timer;
                    let recording = start_profiles(&p, &target, profiles);
                    (Some(start), session, recording)
                }
                // the workload ended (or failed) before its warmup did
                _ => (None, session, Profiling::default()),
            }
        });
        WindowMeter {
            probe,
            start: Start::Pending {
                thread,
                workload_done,
            },
            from: "warmup end (by the clock)",
            session: None,
            target: status.clone(),
            client_outside,
        }
    }

    /// Take the window's second reading: call as soon as the workload returns.
    pub fn stop(self) -> WindowEnd {
        let at = Instant::now();
        let (end, probe_error) = match &self.probe {
            Ok(p) => (p.read().ok(), None),
            Err(e) => (None, Some(e.clone())),
        };
        let machine_end = HostCpuReading::read();
        let (start, session, recording) = match self.start {
            Start::Taken(s, recording) => (Some(s), self.session, *recording),
            Start::Pending {
                thread,
                workload_done,
            } => {
                let _ = workload_done.send(());
                match thread.join() {
                    Ok((start, session, recording)) => (start, Some(session), recording),
                    Err(_) => (None, None, Profiling::default()),
                }
            }
        };
        // sampling ends with the window; perf's writing waits until the window's end is read
        let profile = recording.cpu.map(|r| {
            r.map(|mut r| {
                r.interrupt();
                r
            })
        });
        let waits = recording.waits.map(|w| w.and_then(WaitsRecording::stop));
        WindowEnd {
            profile,
            waits,
            instructions_absent: self
                .probe
                .as_ref()
                .map_or_else(|e| Some(e.clone()), ResourceProbe::instructions_absent),
            session: session.unwrap_or_else(|| StatusSession::open(&self.target)),
            probe_error,
            start,
            end,
            machine_end,
            client_outside: self.client_outside,
            at,
            from: self.from,
        }
    }
}

impl WindowEnd {
    /// The window's folded on-CPU stacks, if a profile was asked: taken once, after
    /// [`WindowEnd::status_after`] (folding them waits for perf to write its samples).
    pub fn take_profile(&mut self) -> Option<Result<String, String>> {
        self.profile.take().map(|r| r.and_then(Recording::stop))
    }

    /// The window's waits, if they were asked: taken once.
    pub fn take_waits(&mut self) -> Option<Result<Waits, String>> {
        self.waits.take()
    }

    /// `SHOW GLOBAL STATUS` after the workload, on the window's status connection, and when
    /// it returned (for [`WindowEnd::record`]).
    pub fn status_after(
        &mut self,
    ) -> Result<(BTreeMap<String, String>, Instant), cairn_workload::Error> {
        let status = self.session.read()?;
        Ok((status, Instant::now()))
    }

    /// Set the efficiency figures in `figures` and return what the record keeps about them;
    /// `after` is the status read after the workload (its `Questions` close the window),
    /// `after_read` when that read returned.
    pub fn record(
        &self,
        after: &BTreeMap<String, String>,
        after_read: Instant,
        figures: &mut Figures,
    ) -> Value {
        let instructions = json!({"absent": self
            .instructions_absent
            .clone()
            .unwrap_or_else(|| "the server's counters could not be read".into())});
        if let Some(e) = &self.probe_error {
            return json!({"absent": e, "instructions_per_query": instructions});
        }
        let Some(StartReading {
            usage: start_usage,
            machine: start_machine,
            questions: start_questions,
            at: start_at,
            questions_lag: start_lag,
            late,
            timer,
        }) = &self.start
        else {
            return json!({
                "absent": "the workload ended before its warmup did: no measured window to read",
                "instructions_per_query": instructions,
            });
        };
        let (start_usage, end) = match (start_usage, &self.end) {
            (Ok(s), Some(e)) => (s, e),
            (Err(e), _) => {
                return json!({"absent": format!("reading the server at the window's start: {e}"), "instructions_per_query": instructions})
            }
            (_, None) => {
                return json!({"absent": "the server's counters could not be read at the window's end", "instructions_per_query": instructions})
            }
        };
        let window = self.at.saturating_duration_since(*start_at);
        if *late > lag_allowed(window + *late) {
            // the window would have begun after the measured run's start (or its end): its
            // CPU and queries are not the run's, and a zero would pass for a real figure
            return json!({
                "absent": format!(
                    "the window's first reading came {:.2} s after the warmup's end (the machine did not run its timer in time), so the {:.2} s it covers are not the measured window",
                    late.as_secs_f64(), window.as_secs_f64()
                ),
                "window": {"from": self.from, "to": "workload end", "seconds": window.as_secs_f64(), "late_s": late.as_secs_f64(), "timer": timer},
                "instructions_per_query": instructions,
            });
        }
        let delta = end.since(start_usage);
        let end_lag = after_read.saturating_duration_since(self.at);
        let lag = json!({"start_s": start_lag.as_secs_f64(), "end_s": end_lag.as_secs_f64()});
        figures.set(&figures::SERVER_CPU_S, delta.cpu_s);
        let mut rec = json!({
            "window": {
                "from": self.from,
                "to": "workload end",
                "seconds": window.as_secs_f64(),
                "late_s": late.as_secs_f64(),
                "timer": timer,
            },
            "questions_lag": lag,
            "server": delta,
            "threads": end.threads,
        });
        if *start_lag + end_lag > lag_allowed(window) {
            // the queries would be another span's than the CPU: no per-query figure
            rec["absent"] = json!(format!(
                "per-query figures: the server's Questions were read {:.2} s after its CPU counters at the window's start and {:.2} s at its end (more than {:.2} s for a {:.2} s window), so they would not count the queries of the same span",
                start_lag.as_secs_f64(), end_lag.as_secs_f64(), lag_allowed(window).as_secs_f64(), window.as_secs_f64()
            ));
            rec["instructions_per_query"] = counted_but_not_per_query(
                delta.instructions,
                "not per query: the Questions of the window were read too late (see absent)",
                instructions,
            );
            rec["machine"] = self.machine_beside(start_machine, delta.cpu_s, None, figures);
            return rec;
        }
        let window_questions = start_questions
            .zip(questions(after))
            .map(|(a, b)| b - a)
            .filter(|q| *q > 0.0);
        let (queries, queries_from) = match window_questions {
            Some(q) => (Some(q), "Questions"),
            None => (
                figures.get(&figures::QUERIES).filter(|q| *q > 0.0),
                "driver",
            ),
        };
        let instructions = match (delta.instructions, queries) {
            (Some(n), Some(q)) => {
                figures.set(&figures::INSTRUCTIONS_PER_QUERY, n as f64 / q);
                json!({"from": COUNTED_FROM, "instructions": n})
            }
            (counted, _) => counted_but_not_per_query(
                counted,
                "not per query: neither the server's Questions nor the driver counted the window's queries",
                instructions,
            ),
        };
        if let Some(q) = queries {
            figures.set(&figures::SERVER_CPU_US_PER_QUERY, delta.cpu_s * 1e6 / q);
            figures.set(
                &figures::CTX_SWITCHES_PER_QUERY,
                delta.ctx_switches as f64 / q,
            );
        }
        rec["machine"] = self.machine_beside(start_machine, delta.cpu_s, queries, figures);
        rec["queries"] = json!(queries);
        rec["queries_from"] = json!(queries_from);
        rec["instructions_per_query"] = instructions;
        rec
    }
}

impl WindowEnd {
    /// The machine's CPU over the window beside the trial's: sets `other_cpu_pct` (the share
    /// busy with anything but the server, cairn's process — the native drivers' threads —
    /// and an external tool's client) and returns every part for the record, or why the
    /// machine could not be read. `queries`: the window's, for an external client whose CPU
    /// was measured only as a rate per query (its container's CPU covers the warmup too).
    fn machine_beside(
        &self,
        start: &Result<HostCpuReading, String>,
        server_cpu_s: f64,
        queries: Option<f64>,
        figures: &mut Figures,
    ) -> Value {
        let (start, end) = match (start, &self.machine_end) {
            (Ok(s), Ok(e)) => (s, e),
            (Err(e), _) | (_, Err(e)) => return json!({"absent": e}),
        };
        let machine = end.since(start);
        let (client_s, client_from) = if !self.client_outside {
            (None, None)
        } else if let Some(s) = figures.get(&figures::CLIENT_CPU_S) {
            (Some(s), Some("client_cpu_s"))
        } else {
            let per_1k = figures.get(&figures::CLIENT_CPU_MS_PER_1K_QUERIES);
            let s = per_1k.zip(queries).map(|(ms, q)| ms * q / 1e6);
            (
                s,
                s.map(|_| "client_cpu_ms_per_1k_queries × the window's queries"),
            )
        };
        let mut parts = json!({
            "from": "/proc/stat (every CPU; busy = the wall clock on every CPU less idle, iowait and steal) and /proc/self/stat",
            "cpus": machine.cpus,
            "wall_s": machine.wall_s,
            "busy_s": machine.busy_s(),
            "idle_s": machine.idle_s,
            "steal_s": machine.steal_s,
            "sampled_busy_s": machine.sampled_busy_s,
            "server_s": server_cpu_s,
            "cairn_s": machine.own_s,
            "external_client_s": client_s,
            "external_client_from": client_from,
        });
        if self.client_outside && client_s.is_none() {
            // the tool's CPU would pass for other work
            parts["absent"] = json!("the external client's CPU over the window is unknown, so the machine's other work cannot be told from it");
            return parts;
        }
        let trial_s = server_cpu_s + machine.own_s + client_s.unwrap_or(0.0);
        let other = machine.other_pct(trial_s);
        if let Some(pct) = other {
            figures.set(&figures::OTHER_CPU_PCT, pct);
        }
        parts["other_pct"] = json!(other);
        parts
    }
}

/// `other_cpu_pct` of a record made by the first reader of the machine (2026-12-06): it
/// took the busy time from `/proc/stat`'s tick-sampled fields, which fall short under a
/// server's many short sleeps, so its share read 0 where the machine did 3–5% other work.
/// Its parts are in the record (`machine`: `cpu_s` counted, `busy_s` sampled, the window's
/// `seconds`): they are read back into a [`HostCpuDelta`] — counted less sampled busy is
/// the idle and steal — whose share is the reader's now. `None` for any other record (the
/// figure stands as made).
pub fn other_cpu_pct_of_first_reader(efficiency: &Value) -> Option<f64> {
    let machine = efficiency.get("machine")?;
    if machine.get("wall_s").is_some() {
        return None;
    }
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let sampled_busy_s = num(machine, "busy_s")?;
    let cairn_s = num(machine, "cairn_s")?;
    let parts = HostCpuDelta {
        wall_s: num(&efficiency["window"], "seconds")?,
        cpus: machine.get("cpus").and_then(Value::as_u64)? as usize,
        idle_s: num(machine, "cpu_s")? - sampled_busy_s,
        steal_s: 0.0,
        sampled_busy_s,
        own_s: cairn_s,
    };
    let trial =
        num(machine, "server_s")? + cairn_s + num(machine, "external_client_s").unwrap_or(0.0);
    parts.other_pct(trial)
}

const COUNTED_FROM: &str = "perf_event, per server thread (inherited by new threads)";

/// What the record says of instructions counted over a window that has no per-query
/// figure: the count and why it is not per query — or, when nothing was counted, why not.
fn counted_but_not_per_query(counted: Option<u64>, why: &str, not_counted: Value) -> Value {
    match counted {
        Some(n) => json!({"absent": why, "from": COUNTED_FROM, "instructions": n}),
        None => not_counted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(q: u64) -> BTreeMap<String, String> {
        BTreeMap::from([("Questions".to_string(), q.to_string())])
    }

    /// A meter whose status connection goes nowhere (port 1): the tests hand it the
    /// closing status themselves.
    fn meter(
        probe: Result<ResourceProbe, String>,
        before: &BTreeMap<String, String>,
        warmup: Duration,
    ) -> WindowMeter {
        WindowMeter::start(
            probe,
            before,
            warmup,
            &Target::tcp("127.0.0.1", 1, "x"),
            ProfilesAsked::default(),
            false,
        )
    }

    #[test]
    fn figures_divide_by_the_questions_of_the_same_window() {
        // this test process stands in for the server: its counters are real
        let probe = ResourceProbe::process(std::process::id());
        let meter = meter(Ok(probe), &status(1000), Duration::ZERO);
        // spend some CPU in the window
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let end = meter.stop();
        let mut f = Figures::new();
        f.set(&figures::QUERIES, 7.0);
        let rec = end.record(&status(3000), Instant::now(), &mut f);
        assert_eq!(rec["queries"], json!(2000.0), "{rec}");
        assert_eq!(rec["queries_from"], "Questions");
        assert_eq!(rec["server"]["cpu_from"], "proc");
        let cpu = f.get(&figures::SERVER_CPU_S).unwrap();
        assert!(cpu > 0.0, "{rec}");
        assert_eq!(
            f.get(&figures::SERVER_CPU_US_PER_QUERY),
            Some(cpu * 1e6 / 2000.0)
        );
        assert!(f.contains(&figures::CTX_SWITCHES_PER_QUERY));
        assert!(rec["instructions_per_query"]["absent"].is_string());
        // the machine beside it: its CPUs counted, this process counted once as cairn's
        assert!(rec["machine"]["cpus"].as_u64().unwrap() >= 1, "{rec}");
        assert!(rec["machine"]["cairn_s"].as_f64().unwrap() > 0.0, "{rec}");
        assert_eq!(rec["machine"]["external_client_s"], Value::Null);
        let other = f.get(&figures::OTHER_CPU_PCT).unwrap();
        assert!((0.0..=100.0).contains(&other), "{rec}");
    }

    /// An external tool with a warmup measures its CPU only as a rate per query (its
    /// container's CPU covers the warmup too): the window's share is that rate times the
    /// window's queries; without either, the other work is not told.
    #[test]
    fn an_external_clients_rate_per_query_counts_over_the_windows_queries() {
        let external = |status_before: u64| {
            WindowMeter::start(
                Ok(ResourceProbe::process(std::process::id())),
                &status(status_before),
                Duration::ZERO,
                &Target::tcp("127.0.0.1", 1, "x"),
                ProfilesAsked::default(),
                true,
            )
            .stop()
        };
        let mut f = Figures::new();
        f.set(&figures::CLIENT_CPU_MS_PER_1K_QUERIES, 2000.0);
        let rec = external(1).record(&status(1001), Instant::now(), &mut f);
        assert_eq!(rec["machine"]["external_client_s"], json!(2.0), "{rec}");
        assert!(f.contains(&figures::OTHER_CPU_PCT), "{rec}");
        let mut unmeasured = Figures::new();
        let rec = external(1).record(&status(1001), Instant::now(), &mut unmeasured);
        assert!(rec["machine"]["absent"]
            .as_str()
            .unwrap()
            .contains("external client"));
        assert!(!unmeasured.contains(&figures::OTHER_CPU_PCT), "{rec}");
    }

    #[test]
    fn a_first_readers_share_is_re_read_from_its_parts() {
        // trial/flags/o2#3 of build-and-link: a 45.57 s window on 2 CPUs, 85.23 CPU-seconds
        // counted of which 50.08 sampled busy; server 33.46 s, cairn 18.22 s; recorded 0
        let first = json!({
            "window": {"seconds": 45.57111646},
            "machine": {"cpus": 2, "cpu_s": 85.23, "busy_s": 50.08, "server_s": 33.456023374,
                        "cairn_s": 18.22, "external_client_s": null, "other_pct": 0.0},
        });
        let pct = other_cpu_pct_of_first_reader(&first).unwrap();
        assert!((pct - 4.73).abs() < 0.01, "{pct}");
        // a record of the reader since (with `wall_s`) stands as made; one without parts too
        let now = json!({"window": {"seconds": 10.0}, "machine": {"wall_s": 10.0, "cpus": 2}});
        assert_eq!(other_cpu_pct_of_first_reader(&now), None);
        assert_eq!(other_cpu_pct_of_first_reader(&json!({"absent": "x"})), None);
    }

    #[test]
    fn an_external_clients_cpu_is_not_the_machines_other_work() {
        let probe = ResourceProbe::process(std::process::id());
        let mut end = WindowMeter::start(
            Ok(probe),
            &status(1),
            Duration::ZERO,
            &Target::tcp("127.0.0.1", 1, "x"),
            ProfilesAsked::default(),
            true,
        )
        .stop();
        // as if the machine had been busy 10 of its 20 CPU-seconds (a 10 s window on 2
        // CPUs, 10 idle), 4 of them the tool's
        let start = end.start.as_ref().unwrap().machine.clone();
        end.machine_end = start.map(|m| HostCpuReading {
            at: m.at + Duration::from_secs(10),
            idle_s: m.idle_s + 10.0,
            cpus: 2,
            ..m
        });
        let mut f = Figures::new();
        f.set(&figures::CLIENT_CPU_S, 4.0);
        let rec = end.record(&status(2), Instant::now(), &mut f);
        assert_eq!(rec["machine"]["external_client_s"], json!(4.0), "{rec}");
        assert_eq!(rec["machine"]["external_client_from"], "client_cpu_s");
        let server = f.get(&figures::SERVER_CPU_S).unwrap();
        let cairn = rec["machine"]["cairn_s"].as_f64().unwrap();
        let expected = (100.0 * (10.0 - 4.0 - server - cairn) / 20.0).max(0.0);
        let other = f.get(&figures::OTHER_CPU_PCT).unwrap();
        assert!(
            (other - expected).abs() < 1e-9,
            "{other} vs {expected}: {rec}"
        );
    }

    #[test]
    fn questions_read_long_after_the_counters_give_no_per_query_figure() {
        let probe = ResourceProbe::process(std::process::id());
        let meter = meter(Ok(probe), &status(1000), Duration::ZERO);
        let end = meter.stop();
        let mut f = Figures::new();
        f.set(&figures::QUERIES, 7.0);
        // the closing status read returned two seconds after the counters were read
        let rec = end.record(
            &status(3000),
            Instant::now() + Duration::from_secs(2),
            &mut f,
        );
        assert!(
            rec["absent"]
                .as_str()
                .unwrap()
                .contains("Questions were read"),
            "{rec}"
        );
        assert!(
            rec["questions_lag"]["end_s"].as_f64().unwrap() >= 2.0,
            "{rec}"
        );
        assert!(f.contains(&figures::SERVER_CPU_S));
        assert!(!f.contains(&figures::SERVER_CPU_US_PER_QUERY));
        assert!(!f.contains(&figures::CTX_SWITCHES_PER_QUERY));
    }

    #[test]
    fn instructions_counted_without_a_per_query_figure_keep_the_count_and_say_why() {
        let not_counted = json!({"absent": "this machine cannot count instructions"});
        let rec = counted_but_not_per_query(Some(1234), "not per query: late", not_counted.clone());
        assert_eq!(rec["instructions"], 1234);
        assert_eq!(rec["absent"], "not per query: late");
        assert_eq!(
            counted_but_not_per_query(None, "not per query: late", not_counted.clone()),
            not_counted
        );
    }

    #[test]
    fn without_questions_the_drivers_queries_count() {
        let probe = ResourceProbe::process(std::process::id());
        let meter = meter(Ok(probe), &BTreeMap::new(), Duration::ZERO);
        let mut f = Figures::new();
        f.set(&figures::QUERIES, 50.0);
        let rec = meter
            .stop()
            .record(&BTreeMap::new(), Instant::now(), &mut f);
        assert_eq!(rec["queries_from"], "driver");
        assert_eq!(rec["queries"], json!(50.0));
    }

    #[test]
    fn a_runtime_that_cannot_read_says_why_and_sets_nothing() {
        let meter = meter(
            Err("the `x` executor cannot read its server's resource usage".into()),
            &status(1),
            Duration::from_secs(3600),
        );
        let mut f = Figures::new();
        let rec = meter.stop().record(&status(2), Instant::now(), &mut f);
        assert!(rec["absent"].as_str().unwrap().contains("cannot read"));
        assert!(f.is_empty());
    }

    #[test]
    fn a_window_whose_first_reading_came_late_gives_no_figure() {
        let probe = ResourceProbe::process(std::process::id());
        let mut end = meter(Ok(probe), &status(1000), Duration::ZERO).stop();
        // as if the timer thread had been scheduled three seconds after the warmup's end
        if let Some(start) = end.start.as_mut() {
            start.late = Duration::from_secs(3);
        }
        let mut f = Figures::new();
        f.set(&figures::QUERIES, 50.0);
        let rec = end.record(&status(1001), Instant::now(), &mut f);
        assert!(
            rec["absent"].as_str().unwrap().contains("timer in time"),
            "{rec}"
        );
        assert_eq!(rec["window"]["late_s"], json!(3.0));
        assert!(!f.contains(&figures::SERVER_CPU_S), "{rec}");
        assert!(!f.contains(&figures::SERVER_CPU_US_PER_QUERY));
    }

    #[test]
    fn a_workload_that_ends_within_its_warmup_has_no_window() {
        let probe = ResourceProbe::process(std::process::id());
        // the timer waits an hour; the workload's end stops it at once
        let meter = meter(Ok(probe), &status(1), Duration::from_secs(3600));
        let mut f = Figures::new();
        let rec = meter.stop().record(&status(2), Instant::now(), &mut f);
        assert!(rec["absent"]
            .as_str()
            .unwrap()
            .contains("before its warmup"));
        assert!(f.is_empty());
    }
}
