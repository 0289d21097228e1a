//! The time budget: how long the steps that will run should take, for `cairn plan` and the
//! progress bar's ETA of `cairn run`.
//!
//! Each step's estimate comes, in this order, from the recorded duration of its last run
//! (the study's address → key hint leads to a record, whose `duration_ms` is the time that
//! step took on this store's machine, even if its key has changed since), else, for a
//! trial, from its declared times: warmup + duration + [`SERVER_START`]; else, for a trial
//! that ends on a count (sql-bench's `scale`, super-smack's `rounds`: no `duration`), from
//! the recorded duration of another step of the same definition (another pass of its
//! point); else it is unknown and counted as such (a build never run before, a counted
//! trial none of whose passes ran). Conditional passes (beyond a
//! block's `min`) are summed apart: they run only if the adaptive rule needs them, so the
//! budget is a range from "none of them" to "all of them".

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_graph::Value;
use cairn_graph::{Step, StepGraph, StepKind};
use cairn_store::Store;
use serde::Serialize;

/// What starting (and stopping) a server adds to a trial's declared times when no earlier
/// run of it says better: a fresh datadir from a snapshot, the server's start and its stop.
pub const SERVER_START: Duration = Duration::from_secs(10);

/// Where one step's estimate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The recorded duration of an earlier run of the same step.
    Recorded,
    /// A trial's declared warmup + duration + server start.
    Declared,
}

/// The estimated wall time of the steps that will run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Budget {
    /// Steps that will surely run (everything but conditional passes).
    pub certain: Duration,
    /// Conditional passes, if the adaptive rule needs every one of them.
    pub conditional: Duration,
    /// How many estimates came from records, from declared times, and how many steps have
    /// none (they add nothing to the sums).
    pub recorded: usize,
    pub declared: usize,
    pub unknown: usize,
    /// Of the unknown, the trials that end on a count (no `duration`) with no recorded
    /// duration of their definition: `cairn plan` says so rather than count them as nothing.
    pub counted: usize,
    /// The estimate of each step that will run, by address (the progress bar's ETA).
    #[serde(skip)]
    pub per_step: BTreeMap<String, Duration>,
}

impl Budget {
    /// The most the run should take: every conditional pass included.
    pub fn at_most(&self) -> Duration {
        self.certain + self.conditional
    }
}

/// The budget of the steps of `graph` for which `will_run` is true; `recorded` gives a
/// step's recorded duration, if an earlier run of it is known.
pub fn estimate(
    graph: &StepGraph,
    will_run: &[bool],
    recorded: impl Fn(&Step) -> Option<Duration>,
) -> Budget {
    let mut b = Budget::default();
    // a trial's passes share its definition: one pass run says how long the others take
    let mut by_definition: BTreeMap<String, Duration> = BTreeMap::new();
    for step in graph.steps.iter().filter(|s| s.kind == StepKind::TRIAL) {
        if let Some(t) = recorded(step) {
            by_definition
                .entry(step.definition.to_string())
                .or_insert(t);
        }
    }
    for step in graph.steps.iter().filter(|s| will_run[s.id]) {
        let (time, source) = match recorded(step) {
            Some(t) => (t, Some(Source::Recorded)),
            None => match declared(step) {
                Some(t) => (t, Some(Source::Declared)),
                None if step.kind == StepKind::TRIAL => {
                    match by_definition.get(&step.definition.to_string()) {
                        Some(t) => (*t, Some(Source::Recorded)),
                        None => (Duration::ZERO, None),
                    }
                }
                None => (Duration::ZERO, None),
            },
        };
        match source {
            Some(Source::Recorded) => b.recorded += 1,
            Some(Source::Declared) => b.declared += 1,
            None => {
                b.unknown += 1;
                if step.kind == StepKind::TRIAL {
                    b.counted += 1;
                }
            }
        }
        if step.is_conditional() {
            b.conditional += time;
        } else {
            b.certain += time;
        }
        if source.is_some() {
            b.per_step.insert(step.address.clone(), time);
        }
    }
    b
}

/// A trial's declared time: warmup + duration (seconds in its matrix point) + server start;
/// `None` for other steps, or a trial whose length a count decides (no `duration`).
pub fn declared(step: &Step) -> Option<Duration> {
    if step.kind != StepKind::TRIAL {
        return None;
    }
    let seconds = |name: &str| match step.params.get(name) {
        Some(Value::Float(x)) => Some(*x),
        Some(Value::Int(i)) => Some(*i as f64),
        _ => None,
    };
    let run = seconds("duration")?;
    let warmup = seconds("warmup").unwrap_or(0.0);
    // its block's lifecycle: a settle window, then that many runs on the one start
    let lifecycle: cairn_defs::LifecycleDef = step
        .definition
        .get("lifecycle")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    let busy =
        (run + warmup) * f64::from(lifecycle.run_count()) + lifecycle.settle_s.unwrap_or(0.0);
    Some(Duration::from_secs_f64(busy.max(0.0)) + SERVER_START)
}

/// The recorded durations of the study's steps, by address: the last run of each address
/// the store remembers (whatever its key is now). The names log carries each run's duration;
/// only lines written before it did send us to the record.
pub fn recorded_durations(store: &Store, study: &str) -> BTreeMap<String, Duration> {
    let remembered = store.remembered(study).unwrap_or_default();
    remembered
        .into_iter()
        .filter_map(|(address, r)| {
            let ms = match r.duration_ms {
                Some(ms) => ms,
                None => store.get_record(&r.key).ok()??.duration_ms,
            };
            (ms.is_finite() && ms >= 0.0).then(|| (address, Duration::from_secs_f64(ms / 1e3)))
        })
        .collect()
}

/// `4m 10s`, `52s`, `1h 05m`: a duration for people, to the second.
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
