//! Reporters for engine events: an indicatif progress view on a terminal, plain log
//! lines otherwise, and JSON lines with `--json`.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use cairn_engine::{Event, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

pub fn pick(json: bool, verbose: u8) -> Box<dyn Reporter> {
    if json {
        Box::new(JsonLines)
    } else if std::io::stderr().is_terminal() {
        Box::new(Progress::new(verbose))
    } else {
        Box::new(LogLines {
            verbose,
            started: Instant::now(),
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
    format!(
        "{} steps: {} ran, {} cached, {} failed, {} skipped in {:.0} ms{}",
        s.selected,
        s.ran,
        s.cached,
        s.failed,
        s.skipped,
        s.elapsed_ms,
        if s.cancelled { " (interrupted)" } else { "" }
    )
}

/// Plain lines on stderr, for logs and CI.
pub struct LogLines {
    verbose: u8,
    started: Instant,
}

impl Reporter for LogLines {
    fn event(&mut self, e: &Event<'_>) {
        let t = self.started.elapsed().as_secs_f64();
        match e {
            Event::RunStarted { total } => eprintln!("[{t:7.2}s] checking {total} steps"),
            Event::StepCached {
                step,
                headline: Some(h),
                ..
            } => eprintln!("[{t:7.2}s] cached  {}: {h}", step.address),
            Event::StepCached { step, .. } if self.verbose > 0 => {
                eprintln!("[{t:7.2}s] cached  {}", step.address)
            }
            Event::StepStarted { step, key } if self.verbose > 0 => {
                eprintln!("[{t:7.2}s] start   {} ({})", step.address, &key[..12])
            }
            Event::StepFinished {
                step,
                elapsed,
                headline,
                ..
            } => eprintln!(
                "[{t:7.2}s] done    {} ({}){}",
                step.address,
                ms(*elapsed),
                with_headline(*headline)
            ),
            Event::StepFailed { step, error, .. } => {
                eprintln!("[{t:7.2}s] FAILED  {}: {error}", step.address)
            }
            Event::StepSkipped { step, because } => {
                eprintln!("[{t:7.2}s] skipped {}: {because}", step.address)
            }
            Event::RunFinished { summary } => eprintln!("[{t:7.2}s] {}", summary_line(summary)),
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
                "key": key, "error": error,
            }),
            Event::StepSkipped { step, because } => {
                json!({"event": "step_skipped", "step": step.address, "because": because})
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
}

impl Progress {
    fn new(verbose: u8) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA {eta}  {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Progress { bar, verbose }
    }
}

impl Reporter for Progress {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::RunStarted { total } => self.bar.set_length(*total as u64),
            Event::StepCached { step, headline, .. } => {
                if let Some(h) = headline {
                    self.bar.println(format!("cached  {}: {h}", step.address));
                } else if self.verbose > 0 {
                    self.bar.println(format!("cached  {}", step.address));
                }
                self.bar.inc(1)
            }
            Event::StepStarted { step, .. } => self.bar.set_message(step.address.clone()),
            Event::StepFinished {
                step,
                elapsed,
                headline,
                ..
            } => {
                self.bar.println(format!(
                    "done    {} ({}){}",
                    step.address,
                    ms(*elapsed),
                    with_headline(*headline)
                ));
                self.bar.inc(1)
            }
            Event::StepFailed { step, error, .. } => {
                self.bar
                    .println(format!("FAILED  {}: {error}", step.address));
                self.bar.inc(1)
            }
            Event::StepSkipped { step, because } => {
                self.bar
                    .println(format!("skipped {}: {because}", step.address));
                self.bar.inc(1)
            }
            Event::RunFinished { summary } => {
                self.bar.finish_and_clear();
                eprintln!("{}", summary_line(summary));
            }
        }
    }
}
