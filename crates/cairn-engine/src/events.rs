//! Typed events the engine emits while running; reporters (progress bar, log lines,
//! JSON) turn them into output. Only the engine's coordinating thread emits them.

use std::time::Duration;

use cairn_graph::Step;

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
    StepFailed {
        step: &'a Step,
        key: &'a str,
        error: &'a str,
    },
    /// Not run because an input failed (with `--keep-going`) or the run stopped.
    StepSkipped {
        step: &'a Step,
        because: &'a str,
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
