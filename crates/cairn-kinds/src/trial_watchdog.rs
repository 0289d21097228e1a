//! The trial's watchdog: how long each phase of a trial may wait on its server, and the rule that a measured window which overran its declared duration is a stalled server, never a measurement.
//!
//! A paused or hung server does not fail a statement, it just never answers; a run that
//! waits for it either hangs or, once the server resumes, records the stall as if it were
//! throughput (a 2 s trial "measured" over 62 s). So every phase is bounded:
//! - server start by the ready timeout, the variant checks by the runtime's calls;
//! - the status reads before and after the workload wait at most [`STATUS_TIMEOUT`] for an
//!   answer (they take milliseconds on a live server);
//! - the workload's connections wait at most [`Watchdog::io_timeout`] for one answer (for a
//!   timed run its length and margin, at most the drivers' default), and the whole run is
//!   stopped once [`Watchdog::expired`]: after its warmup, duration and margin plus a setup
//!   allowance for a timed run, after the workload's `timeout` where the plan sets one, or
//!   [`COUNT_RUN_TIMEOUT`] for a run a count ends. An external tool's container is killed at
//!   the same deadline;
//! - what a timed run measured is checked against [`check_window`]: a window longer than its
//!   declared duration by more than [`overrun_margin`] fails the trial;
//! - the stop of the server is bounded by the runtime's stop grace (a paused container is
//!   killed after it).
//!
//! A trial the watchdog ends fails with the cause and the server's log tail, and a failed
//! trial is never recorded: the next run measures it again.

use std::time::{Duration, Instant};

use cairn_workload::conn::IO_TIMEOUT;
use cairn_workload::{Dataset, Workload};

/// Longest wait for one answer to a status read (`SHOW GLOBAL STATUS`/`VARIABLES`) or the
/// database's creation around the workload.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(15);

/// The least a measured window may overrun its declared duration by before it is taken to
/// be a stall: the last events in flight finish after the clock ran out, and a loaded
/// machine adds scheduling delays.
pub const MIN_OVERRUN: Duration = Duration::from_secs(2);

/// Time the client threads get to connect and prepare their statements before the clock
/// starts, on top of the declared length: generous, since hundreds of threads may connect
/// to a loaded server, and a timed driver ends its run itself — this deadline is only the
/// backstop for a server that answers, but far too slowly (the io timeout catches one that
/// does not answer).
const SETUP_ALLOWANCE: Duration = Duration::from_secs(60);

/// How far a measured window may run beyond its declared duration: the larger of
/// [`MIN_OVERRUN`] and a quarter of the duration.
pub fn overrun_margin(declared: Duration) -> Duration {
    (declared / 4).max(MIN_OVERRUN)
}

/// The rule: a measured window of `measured_s` seconds for a declared `declared` is a
/// measurement only if it is at most `declared + overrun_margin(declared)` long. The error
/// says by how much it overran.
pub fn check_window(declared: Duration, measured_s: f64) -> Result<(), String> {
    let margin = overrun_margin(declared);
    let limit = (declared + margin).as_secs_f64();
    if measured_s.is_finite() && measured_s <= limit {
        return Ok(());
    }
    Err(format!(
        "the measured window ran {measured_s:.1} s for a declared {:.1} s, more than the {:.1} s \
         allowed beyond it: the server stalled during the workload, so this is no measurement",
        declared.as_secs_f64(),
        margin.as_secs_f64()
    ))
}

/// Why a trial recorded before this rule existed is no measurement: its timed window
/// overran its declared duration beyond the margin (`definition` is the record's trial
/// definition, `figures` its `extra.figures`). `None` when it is fine, or when the record
/// says too little to tell. A cached trial this names is not served: it runs again.
pub fn recorded_overrun(
    definition: &serde_json::Value,
    figures: &serde_json::Value,
) -> Option<String> {
    let def: cairn_defs::TrialStepDef = serde_json::from_value(definition.clone()).ok()?;
    // the declared window does not depend on the dataset's size: any dataset of the
    // generator the driver needs will do
    let dataset = Dataset::from_def(&cairn_workload::DatasetDef {
        generator: def.workload.driver.clone(),
        props: Default::default(),
    })
    .ok();
    let workload = Workload::from_def(&def.workload, dataset.as_ref(), 0).ok()?;
    let (_, window) = workload.declared_run()?;
    let measured = figures.get(cairn_defs::figures::SECONDS.name)?.as_f64()?;
    check_window(window, measured).err()
}

/// The bound on a workload whose length nothing declares (an events, rounds or test-suite
/// count ends it) and whose plan sets no `timeout`: generous, but not forever.
pub const COUNT_RUN_TIMEOUT: Duration = Duration::from_secs(3600);

/// The bounds of one trial's workload phase.
#[derive(Debug, Clone)]
pub struct Watchdog {
    /// The declared measured window, if the clock ends the run.
    pub window: Option<Duration>,
    /// Longest wait for one answer on the workload's connections (sql-bench bounds its
    /// statements with its own `statement-timeout`).
    pub io_timeout: Duration,
    /// How long the whole workload phase may take, and where that bound comes from.
    pub bound: Duration,
    bound_from: &'static str,
    started: Instant,
}

impl Watchdog {
    /// Bounds for `workload`, starting now; `timeout` is the plan's workload `timeout`.
    pub fn start(workload: &Workload, timeout: Option<Duration>) -> Watchdog {
        let declared = workload.declared_run();
        // no single answer may take longer than the run may overrun in total
        let io_timeout = match declared {
            Some((warmup, window)) => warmup + window + overrun_margin(window),
            None => timeout.unwrap_or(COUNT_RUN_TIMEOUT),
        }
        .min(IO_TIMEOUT);
        // an external tool's own limit: it starts a container and connects, more than a
        // native driver's threads
        let external_limit = workload.tool_limit();
        let (bound, bound_from) = match (timeout, external_limit, declared) {
            (Some(t), _, _) => (t, "the workload's `timeout`"),
            (None, Some(limit), _) => (limit, "the external tool's limit"),
            (None, None, Some((warmup, window))) => (
                // the io timeout fires first for a server that stops answering; this
                // catches one that answers, but far too slowly
                SETUP_ALLOWANCE + warmup + window + overrun_margin(window),
                "its warmup and duration, with the margin",
            ),
            (None, None, None) => (COUNT_RUN_TIMEOUT, "the default for a run a count ends"),
        };
        Watchdog {
            window: declared.map(|(_, window)| window),
            io_timeout,
            bound,
            bound_from,
            started: Instant::now(),
        }
    }

    /// When the workload phase is taken to be stalled as a whole.
    pub fn deadline(&self) -> Instant {
        self.started + self.bound
    }

    /// Whether the workload phase has run past its deadline.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline()
    }

    /// Seconds since the phase started, for messages.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The run's declared length, for messages.
    pub fn declared(&self) -> String {
        match self.window {
            Some(w) => format!("declared {:.1} s", w.as_secs_f64()),
            None => "no declared length".to_string(),
        }
    }

    /// The phase's declared length and bounds, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}; no answer may take over {:.1} s, the run over {:.1} s ({})",
            self.declared(),
            self.io_timeout.as_secs_f64(),
            self.bound.as_secs_f64(),
            self.bound_from
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn the_margin_is_two_seconds_or_a_quarter_of_the_duration() {
        assert_eq!(overrun_margin(secs(1.0)), secs(2.0));
        assert_eq!(overrun_margin(secs(8.0)), secs(2.0));
        assert_eq!(overrun_margin(secs(60.0)), secs(15.0));
    }

    #[test]
    fn a_window_within_the_margin_is_a_measurement() {
        assert!(check_window(secs(2.0), 2.0).is_ok());
        assert!(
            check_window(secs(2.0), 1.5).is_ok(),
            "an events limit ends early"
        );
        assert!(
            check_window(secs(2.0), 4.0).is_ok(),
            "exactly at the margin"
        );
        assert!(check_window(secs(60.0), 74.9).is_ok());
    }

    #[test]
    fn a_window_beyond_the_margin_is_a_stall() {
        // the reported case: a 2 s trial paused for 60 s
        let e = check_window(secs(2.0), 61.9).unwrap_err();
        assert!(e.contains("ran 61.9 s for a declared 2.0 s"), "{e}");
        assert!(e.contains("the server stalled"), "{e}");
        assert!(check_window(secs(2.0), 4.01).is_err());
        assert!(check_window(secs(60.0), 75.1).is_err());
        assert!(check_window(secs(2.0), f64::NAN).is_err());
    }

    #[test]
    fn a_recorded_trial_that_overran_is_no_measurement() {
        let def = |params: serde_json::Value| {
            serde_json::json!({
                "server": cairn_defs::ServerDef::default(),
                "workload": {"driver": "sysbench", "test": "oltp_point_select",
                             "driver_props": {}, "params": params},
            })
        };
        let figures = |seconds: f64| serde_json::json!({"tps": 35.5, "seconds": seconds});
        // the reported case: 2 s declared, 61.9 s measured
        let two = def(serde_json::json!({"duration": 2.0}));
        let why = recorded_overrun(&two, &figures(61.9)).expect("an overrun");
        assert!(why.contains("ran 61.9 s for a declared 2.0 s"), "{why}");
        assert_eq!(recorded_overrun(&two, &figures(2.01)), None);
        // sysbench's default duration is 10 s
        assert!(recorded_overrun(&def(serde_json::json!({})), &figures(30.0)).is_some());
        // a run an event count ends declares no window; a record without the figure tells nothing
        let events = def(serde_json::json!({"events": 100}));
        assert_eq!(recorded_overrun(&events, &figures(61.9)), None);
        assert_eq!(recorded_overrun(&two, &serde_json::json!({})), None);
        assert_eq!(
            recorded_overrun(&serde_json::json!({}), &figures(61.9)),
            None
        );
    }

    #[test]
    fn a_timed_workload_gets_bounds_from_its_duration_and_warmup() {
        let mut spec = cairn_workload::OltpSpec::new(
            cairn_workload::OltpTest::PointSelect,
            1,
            10,
            1,
            secs(2.0),
        );
        spec.warmup = secs(1.0);
        let w = Watchdog::start(&Workload::new(spec.clone()), None);
        assert_eq!(w.window, Some(secs(2.0)));
        assert_eq!(w.io_timeout, secs(5.0), "3 s run + 2 s margin");
        assert_eq!(w.bound, secs(65.0), "60 s setup + 3 s run + 2 s margin");
        assert!(!w.expired());
        assert!(w.describe().contains("declared 2.0 s"), "{}", w.describe());

        // a long run: no single answer waits longer than the drivers' default
        spec.time = Some(secs(600.0));
        let w = Watchdog::start(&Workload::new(spec.clone()), None);
        assert_eq!(w.io_timeout, IO_TIMEOUT);

        // the plan's timeout bounds the whole run
        let w = Watchdog::start(&Workload::new(spec.clone()), Some(secs(900.0)));
        assert_eq!(w.bound, secs(900.0));
        assert!(w.describe().contains("`timeout`"), "{}", w.describe());
    }

    #[test]
    fn a_run_a_count_ends_is_bounded_too() {
        let mut spec = cairn_workload::OltpSpec::new(
            cairn_workload::OltpTest::PointSelect,
            1,
            10,
            1,
            secs(2.0),
        );
        spec.time = None;
        spec.events = Some(100);
        let w = Watchdog::start(&Workload::new(spec.clone()), None);
        assert_eq!(w.window, None);
        assert_eq!(w.bound, COUNT_RUN_TIMEOUT);
        assert_eq!(w.io_timeout, IO_TIMEOUT);
        assert!(!w.expired());
        assert!(
            w.describe().contains("no declared length"),
            "{}",
            w.describe()
        );

        // a short timeout also shortens the wait for one answer
        let w = Watchdog::start(&Workload::new(spec.clone()), Some(secs(30.0)));
        assert_eq!((w.bound, w.io_timeout), (secs(30.0), secs(30.0)));
        let w = Watchdog::start(&Workload::new(spec), Some(Duration::ZERO));
        assert!(w.expired(), "a phase past its deadline has expired");
    }
}
