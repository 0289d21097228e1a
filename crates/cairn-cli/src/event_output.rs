//! Reporters for engine events: an indicatif progress view on a terminal, plain log
//! lines otherwise, and JSON lines with `--json`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use cairn_engine::{Event, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

/// `eprintln!` that never panics: once the terminal is gone (SIGHUP) or whoever read stderr
/// closed the pipe, the run still has to stop its servers and exit cleanly, so a line that
/// cannot be written is dropped.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The reporter for a render from recorded results (`cairn report`), where every trial is
/// cached: a cached step's line (with its headline) and an adaptive pass's decision only
/// with `-v`, so the output is the run's one summary line and the outcome.
pub fn pick_for_render(json: bool, verbose: u8) -> Box<dyn Reporter> {
    if json {
        Box::new(JsonLines)
    } else if std::io::stderr().is_terminal() {
        Box::new(Progress::new(verbose, BTreeMap::new(), verbose > 0))
    } else {
        Box::new(LogLines {
            verbose,
            started: Instant::now(),
            served_lines: verbose > 0,
        })
    }
}

/// The reporter of a run: JSON lines, a progress bar on a terminal, log lines otherwise; with
/// each step's estimated time (`cairn_engine::budget`) for the progress
/// bar's ETA; with none, the bar estimates from its own rate. `budget` is asked only when
/// the bar is shown (it reads the study's names log, and records the log lacks).
pub fn pick_with_budget(
    json: bool,
    verbose: u8,
    budget: impl FnOnce() -> BTreeMap<String, Duration>,
) -> Box<dyn Reporter> {
    if json {
        Box::new(JsonLines)
    } else if std::io::stderr().is_terminal() {
        Box::new(Progress::new(verbose, budget(), true))
    } else {
        Box::new(LogLines {
            verbose,
            started: Instant::now(),
            served_lines: true,
        })
    }
}

fn ms(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1e3)
    }
}

/// `: <headline>` when the step has one (a trial's figures), else nothing.
fn with_headline(h: Option<&str>) -> String {
    h.map_or_else(String::new, |h| format!(": {h}"))
}

fn summary_line(s: &cairn_engine::RunSummary) -> String {
    let not_needed = if s.not_needed > 0 {
        format!(", {} not needed", s.not_needed)
    } else {
        String::new()
    };
    let anew = if s.measured_anew > 0 {
        format!(
            " ({} of them measured anew, to be measured together with what they are compared with)",
            s.measured_anew
        )
    } else {
        String::new()
    };
    format!(
        "{} steps: {} ran{anew}, {} cached, {} failed, {} skipped{not_needed} in {:.0} ms{}",
        s.selected,
        s.ran,
        s.cached,
        s.failed,
        s.skipped,
        s.elapsed_ms,
        if s.cancelled { " (interrupted)" } else { "" }
    )
}

/// The run's last line: how much of its wall time (`wall`, the whole command) the
/// measurements spent measuring — warmup and measured windows — and what the rest (building,
/// restoring, starting and stopping servers, analyses, reports) cost. Nothing when nothing
/// measured (all cached, or no trials).
pub(crate) fn efficiency(json: bool, s: &cairn_engine::RunSummary, wall: Duration) {
    if s.measuring_ms <= 0.0 {
        return;
    }
    let wall_ms = wall.as_secs_f64() * 1e3;
    let line = efficiency_line(s.measuring_ms, wall_ms);
    if json {
        println!(
            "{}",
            json!({"event": "efficiency", "measuring_ms": s.measuring_ms, "wall_ms": wall_ms,
                   "engine_ms": s.elapsed_ms, "share": s.measuring_ms / wall_ms,
                   "wall_per_measuring": wall_ms / s.measuring_ms})
        );
    } else {
        println!("{line}");
    }
}

/// `measuring: 240.0 s of 252.1 s wall (95.2%); wall / measuring 1.05, the rest 12.1 s`.
pub(crate) fn efficiency_line(measuring_ms: f64, wall_ms: f64) -> String {
    format!(
        "measuring: {:.1} s of {:.1} s wall ({:.1}%); wall / measuring {:.2}, the rest (setup: builds, restores, server starts and stops, analyses) {:.1} s",
        measuring_ms / 1e3,
        wall_ms / 1e3,
        100.0 * measuring_ms / wall_ms,
        wall_ms / measuring_ms,
        (wall_ms - measuring_ms) / 1e3
    )
}

/// `needed  trial/ro/a#3: tps CI ±4.1% (target 2%) after 2 passes: CI half-width above the
/// target` — an adaptive decision and the CI behind it.
pub(crate) fn decision_line(d: &cairn_engine::adaptive::Decision) -> String {
    if let Some(look) = &d.look {
        // `until="decided"`: the look, and the questions behind the decision
        return format!(
            "{} {}: after {} passes per side, {look}: {}",
            if d.needed { "needed " } else { "not needed" },
            d.step,
            d.passes,
            d.why
        );
    }
    let ci = d.ci_half_width.map_or_else(
        || "not estimable".to_string(),
        |w| format!("±{:.2}%", w * 100.0),
    );
    let target = d
        .until_ci
        .map_or_else(String::new, |t| format!(" (target {}%)", t * 100.0));
    format!(
        "{} {}: {} CI {ci}{target} after {} passes: {}",
        if d.needed { "needed " } else { "not needed" },
        d.step,
        d.metric,
        d.passes,
        d.why
    )
}

/// Plain lines on stderr, for logs and CI.
pub struct LogLines {
    verbose: u8,
    started: Instant,
    /// Whether a cached step with a headline, and an adaptive pass's decision, have their
    /// lines without `-v` (not in a render from recorded results).
    served_lines: bool,
}

impl Reporter for LogLines {
    fn event(&mut self, e: &Event<'_>) {
        let t = self.started.elapsed().as_secs_f64();
        match e {
            Event::RunStarted { total } => say!("[{t:7.2}s] checking {total} steps"),
            Event::StepCached {
                step,
                headline: Some(h),
                ..
            } if self.served_lines || self.verbose > 0 => {
                say!("[{t:7.2}s] cached  {}: {h}", step.address)
            }
            Event::StepCached { step, .. } if self.verbose > 0 => {
                say!("[{t:7.2}s] cached  {}", step.address)
            }
            Event::StepUnserved { step, why } => {
                say!("[{t:7.2}s] rerun   {}: {why}", step.address)
            }
            Event::MeasuredAnew { step, why } => {
                say!("[{t:7.2}s] anew    {}: {why}", step.address)
            }
            Event::StepStarted { step, key } if self.verbose > 0 => {
                say!("[{t:7.2}s] start   {} ({})", step.address, &key[..12])
            }
            Event::StepFinished {
                step,
                elapsed,
                headline,
                ..
            } => say!(
                "[{t:7.2}s] done    {} ({}){}",
                step.address,
                ms(*elapsed),
                with_headline(*headline)
            ),
            Event::StepFailed { step, error, .. } => {
                say!("[{t:7.2}s] FAILED  {}: {error}", step.address)
            }
            Event::StepRetrying {
                step,
                attempt,
                error,
                ..
            } => say!(
                "[{t:7.2}s] retry   {} (try {attempt}) after a {} failure: {error}",
                step.address,
                error.class.as_str()
            ),
            Event::StepSkipped { step, because } => {
                say!("[{t:7.2}s] skipped {}: {because}", step.address)
            }
            Event::StepPhase { step, phase } => {
                say!("[{t:7.2}s] phase   {}: {phase}", step.address)
            }
            Event::PassDecided { decision, .. } if self.served_lines || self.verbose > 0 => {
                say!("[{t:7.2}s] {}", decision_line(decision))
            }
            Event::RunFinished { summary } => say!("[{t:7.2}s] {}", summary_line(summary)),
            _ => {}
        }
    }
}

/// One JSON object per event on stdout.
pub struct JsonLines;

impl Reporter for JsonLines {
    fn event(&mut self, e: &Event<'_>) {
        let v = match e {
            Event::RunStarted { total } => json!({"event": "run_started", "total": total}),
            Event::StepCached {
                step,
                key,
                headline,
            } => {
                json!({"event": "step_cached", "step": step.address, "kind": step.kind.as_str(), "key": key, "headline": headline})
            }
            Event::StepUnserved { step, why } => {
                json!({"event": "step_unserved", "step": step.address, "kind": step.kind.as_str(), "why": why})
            }
            Event::MeasuredAnew { step, why } => {
                json!({"event": "measured_anew", "step": step.address, "kind": step.kind.as_str(), "why": why})
            }
            Event::StepStarted { step, key } => {
                json!({"event": "step_started", "step": step.address, "kind": step.kind.as_str(), "key": key})
            }
            Event::StepFinished {
                step,
                key,
                elapsed,
                command,
                headline,
            } => json!({
                "event": "step_finished", "step": step.address, "kind": step.kind.as_str(),
                "key": key, "elapsed_ms": elapsed.as_secs_f64() * 1e3,
                "command_ms": command.map(|c| c.as_secs_f64() * 1e3),
                "headline": headline,
            }),
            Event::StepFailed { step, key, error } => json!({
                "event": "step_failed", "step": step.address, "kind": step.kind.as_str(),
                "key": key, "error": error.message(), "class": error.class,
                "causes": error.chain,
            }),
            Event::StepRetrying {
                step,
                key,
                attempt,
                error,
            } => json!({
                "event": "step_retrying", "step": step.address, "kind": step.kind.as_str(),
                "key": key, "attempt": attempt, "error": error.message(), "class": error.class,
            }),
            Event::StepSkipped { step, because } => {
                json!({"event": "step_skipped", "step": step.address, "because": because})
            }
            Event::StepPhase { step, phase } => {
                json!({"event": "step_phase", "step": step.address, "kind": step.kind.as_str(), "phase": phase})
            }
            Event::PassDecided { step, decision } => {
                json!({"event": "pass_decided", "step": step.address, "decision": decision})
            }
            Event::RunFinished { summary } => json!({"event": "run_finished", "summary": summary}),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
    }
}

/// A progress bar on a terminal: steps done/total, current step, elapsed, ETA.
pub struct Progress {
    bar: ProgressBar,
    verbose: u8,
    /// Whether a cached step with a headline, and an adaptive pass's decision, have their
    /// lines without `-v` (not in a render from recorded results).
    served_lines: bool,
    /// Estimated time of each step not yet done (cached, finished, failed, skipped or not
    /// needed take theirs off); empty: the bar's own rate-based ETA.
    left: BTreeMap<String, Duration>,
    /// The step running now and since when (its estimate counts down while it runs).
    running: Option<(String, Instant)>,
}

impl Progress {
    fn new(verbose: u8, budget: BTreeMap<String, Duration>, served_lines: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let template = if budget.is_empty() {
            "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA {eta}  {wide_msg}"
        } else {
            "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA ~{prefix}  {wide_msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress {
            bar,
            verbose,
            served_lines,
            left: budget,
            running: None,
        }
    }

    /// Takes `address` off what is left and shows the time the rest should take.
    fn settle(&mut self, address: &str) {
        self.left.remove(address);
        if self.running.as_ref().is_some_and(|(a, _)| a == address) {
            self.running = None;
        }
        self.show_eta();
    }

    fn show_eta(&self) {
        if self.left.is_empty() && self.running.is_none() {
            self.bar.set_prefix("0s");
            return;
        }
        let mut left: Duration = self.left.values().sum();
        if let Some((address, since)) = &self.running {
            // the running step's estimate counts down, never below nothing
            let own = self.left.get(address).copied().unwrap_or_default();
            left -= own.min(since.elapsed());
        }
        self.bar.set_prefix(cairn_engine::budget::human(left));
    }
}

impl Reporter for Progress {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::RunStarted { total } => {
                self.bar.set_length(*total as u64);
                self.show_eta();
            }
            Event::StepCached { step, headline, .. } => {
                self.settle(&step.address);
                match headline {
                    Some(h) if self.served_lines || self.verbose > 0 => {
                        self.bar.println(format!("cached  {}: {h}", step.address))
                    }
                    _ if self.verbose > 0 => self.bar.println(format!("cached  {}", step.address)),
                    _ => {}
                }
                self.bar.inc(1)
            }
            Event::StepUnserved { step, why } => {
                self.bar.println(format!("rerun   {}: {why}", step.address));
                self.bar.dec(1)
            }
            Event::MeasuredAnew { step, why } => {
                self.bar.println(format!("anew    {}: {why}", step.address))
            }
            Event::StepStarted { step, .. } => {
                self.running = Some((step.address.clone(), Instant::now()));
                self.show_eta();
                self.bar.set_message(step.address.clone())
            }
            Event::StepFinished {
                step,
                elapsed,
                headline,
                ..
            } => {
                self.settle(&step.address);
                self.bar.println(format!(
                    "done    {} ({}){}",
                    step.address,
                    ms(*elapsed),
                    with_headline(*headline)
                ));
                self.bar.inc(1)
            }
            Event::StepFailed { step, error, .. } => {
                self.settle(&step.address);
                self.bar
                    .println(format!("FAILED  {}: {error}", step.address));
                self.bar.inc(1)
            }
            Event::StepRetrying {
                step,
                attempt,
                error,
                ..
            } => self.bar.println(format!(
                "retry   {} (try {attempt}) after a {} failure: {error}",
                step.address,
                error.class.as_str()
            )),
            Event::StepSkipped { step, because } => {
                self.settle(&step.address);
                self.bar
                    .println(format!("skipped {}: {because}", step.address));
                self.bar.inc(1)
            }
            Event::StepPhase { step, phase } => {
                self.bar.set_message(format!("{} ({phase})", step.address))
            }
            Event::PassDecided { step, decision } => {
                if self.served_lines || self.verbose > 0 {
                    self.bar.println(decision_line(decision));
                }
                if !decision.needed {
                    self.settle(&step.address);
                    self.bar.inc(1)
                }
            }
            Event::RunFinished { summary } => {
                self.bar.finish_and_clear();
                say!("{}", summary_line(summary));
            }
        }
    }
}
