//! Typed events the engine emits while running; reporters (progress bar, log lines,
//! JSON) turn them into output. Only the engine's coordinating thread emits them.

use std::time::Duration;

use cairn_graph::Step;

use crate::error::StepError;

#[derive(Debug)]
pub enum Event<'a> {
    /// `total` selected steps, of which the engine will check each against the store.
    RunStarted {
        total: usize,
    },
    StepCached {
        step: &'a Step,
        key: &'a str,
        /// The recorded headline (a trial's figures), if the step has one.
        headline: Option<&'a str>,
    },
    /// A step served from its record runs after all: what it made is gone from this
    /// machine (`why`) and a step that reads it is about to run. Its `StepStarted` follows.
    StepUnserved {
        step: &'a Step,
        why: &'a str,
    },
    /// A measurement served from its record runs after all, to be measured together with
    /// those it is compared with (`why`; see [`crate::together`]). Its `StepStarted` follows.
    MeasuredAnew {
        step: &'a Step,
        why: &'a str,
    },
    StepStarted {
        step: &'a Step,
        key: &'a str,
    },
    StepFinished {
        step: &'a Step,
        key: &'a str,
        elapsed: Duration,
        /// Time the step's own command took (its child process), if it ran one.
        command: Option<Duration>,
        /// One line for a person (a trial's figures), if the step has one.
        headline: Option<&'a str>,
    },
    /// A running step entered a phase (a source build: `fetch`, `check-flags`, `configure`,
    /// `build`, `install`).
    StepPhase {
        step: &'a Step,
        phase: &'a str,
    },
    /// It failed for good (its class is permanent, or a transient failure used up its tries).
    StepFailed {
        step: &'a Step,
        key: &'a str,
        error: &'a StepError,
    },
    /// It failed transiently and runs again; `attempt` is the try about to start (2, 3, …).
    StepRetrying {
        step: &'a Step,
        key: &'a str,
        attempt: u32,
        error: &'a StepError,
    },
    /// Not run because an input failed (with `--keep-going`) or the run stopped.
    StepSkipped {
        step: &'a Step,
        because: &'a str,
    },
    /// The adaptive rule decided on a conditional pass at its turn: it runs (a
    /// `StepStarted` follows) or is not needed (nothing follows; it is not recorded).
    PassDecided {
        step: &'a Step,
        decision: &'a crate::adaptive::Decision,
    },
    RunFinished {
        summary: &'a crate::RunSummary,
    },
}

pub trait Reporter {
    fn event(&mut self, event: &Event<'_>);
}

/// A reporter that drops everything (tests, benchmarks).
pub struct Silent;

impl Reporter for Silent {
    fn event(&mut self, _: &Event<'_>) {}
}
