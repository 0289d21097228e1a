//! `cairn profile PLAN CELL` and `cairn diff-profile PLAN A B`: the on-CPU profiles that
//! trials of a `profile "cpu"` block recorded, merged over the passes of a cell — its top
//! functions, or the functions whose share of the CPU changed most between two cells, with
//! their CPU time per transaction. With `--waits`, the same of the wait events a
//! `profile "waits"` block recorded (µs waited, in place of samples).

use std::fmt::Write as _;
use std::path::Path;

use cairn_analysis::profile::{differences, Profile, Side};
use cairn_engine::Status;
use cairn_graph::StepKind;
use cairn_store::Record;

use crate::args::Cli;
use crate::context::{self, Exit};
use crate::{BAD_INPUT, FAILED, OK};

/// Which of a trial's profiles a command reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// On-CPU stacks (`profile "cpu"`).
    Cpu,
    /// Wait events (`profile "waits"`).
    Waits,
}

impl Of {
    pub fn new(waits: bool) -> Of {
        if waits {
            Of::Waits
        } else {
            Of::Cpu
        }
    }

    fn waits(self) -> bool {
        self == Of::Waits
    }

    /// The record's output.
    fn output(self) -> &'static str {
        match self {
            Of::Cpu => cairn_kinds::trial_profile::PROFILE,
            Of::Waits => cairn_kinds::trial_profile::WAITS,
        }
    }

    /// Its description in the record (`extra.<what>`).
    fn what(self) -> &'static str {
        match self {
            Of::Cpu => "profile",
            Of::Waits => "waits",
        }
    }

    /// What the block must ask for.
    fn asks(self) -> &'static str {
        match self {
            Of::Cpu => "cpu",
            Of::Waits => "waits",
        }
    }
}

/// The merged profile of the trials an address selects, and what they did meanwhile.
struct CellProfile {
    label: String,
    profile: Profile,
    /// Transactions (sysbench's events, else queries) over the profiled windows.
    work: f64,
    /// The sampling frequency, for samples → CPU seconds (a million for waits, whose
    /// "samples" are µs).
    frequency_hz: f64,
    passes: usize,
}

impl CellProfile {
    /// CPU µs per transaction that `samples` stand for.
    fn us_per_work(&self, samples_per_work: Option<f64>) -> String {
        samples_per_work.map_or("-".into(), |s| {
            format!("{:.1}", s / self.frequency_hz * 1e6)
        })
    }
}

/// Reads and merges the profiles of every finished trial `selector` matches (a cell: its
/// passes). A trial without a profile is an error that says why it has none.
fn cell_profile(cli: &Cli, path: &Path, selector: &str, of: Of) -> Result<CellProfile, Exit> {
    let (_plan, graph) = context::load_graph(path)?;
    let sel = context::selectors(&[selector.to_string()])?.remove(0);
    let store = context::open_store(&cli.results)?;
    let machine = context::Machine::new(context::cache_dir(cli.cache.as_deref()));
    let fp = machine.fingerprint(&graph);
    let all = cairn_engine::statuses(&graph, &machine.env(&graph, &store, &fp), &[], false);
    let trials: Vec<_> = graph
        .steps
        .iter()
        // a cell's address names all its passes (`…[threads=4]` for `…[threads=4]#1`, `#2`)
        .filter(|s| {
            s.kind == StepKind::TRIAL
                && (sel.matches(s)
                    || s.address
                        .strip_prefix(selector)
                        .is_some_and(|pass| pass.starts_with('#')))
        })
        .collect();
    if trials.is_empty() {
        eprintln!(
            "error: `{selector}` names no trial of {} (see `cairn plan -v {}`)",
            path.display(),
            path.display()
        );
        return Err(Exit(BAD_INPUT));
    }
    let mut cell = CellProfile {
        label: selector.to_string(),
        profile: Profile::default(),
        work: 0.0,
        frequency_hz: if of.waits() {
            1e6
        } else {
            f64::from(cairn_exec::profiler::FREQUENCY_HZ)
        },
        passes: 0,
    };
    for step in trials {
        let st = &all[step.id];
        let record = match (&st.status, &st.key) {
            (Status::Cached, Some(k)) => store.get_record(k).map_err(context::fail(FAILED))?,
            // an adaptive pass its rule did not need: nothing measured, nothing to read
            (Status::NotNeeded, _) => continue,
            _ => None,
        };
        let Some(record) = record else {
            eprintln!(
                "error: {} has no result for its current definition yet; run `cairn run {}`",
                step.address,
                path.display()
            );
            return Err(Exit(FAILED));
        };
        add_trial(&store, &record, &mut cell, of)?;
    }
    Ok(cell)
}

fn add_trial(
    store: &cairn_store::Store,
    record: &Record,
    cell: &mut CellProfile,
    of: Of,
) -> Result<(), Exit> {
    // a record without `extra.profile` (a block that asks for none): indexing a map by a
    // missing key panics, so read it as null
    let described = record
        .extra
        .get(of.what())
        .unwrap_or(&serde_json::Value::Null);
    let Some(blob) = record.outputs.get(of.output()) else {
        let why = described["absent"].as_str().map_or_else(
            || {
                format!(
                    "its trials block asks for no {} (add `profile \"{}\"` to it)",
                    of.what(),
                    of.asks()
                )
            },
            str::to_string,
        );
        eprintln!("error: {} has no {}: {why}", record.address, of.what());
        return Err(Exit(FAILED));
    };
    let text = store.read_blob(blob).map_err(context::fail(FAILED))?;
    let profile = Profile::parse_folded(&String::from_utf8_lossy(&text))
        .map_err(|e| context::fail(FAILED)(format!("{}: {e}", record.address)))?;
    cell.profile.merge(&profile);
    if let (false, Some(hz)) = (of.waits(), described["frequency_hz"].as_f64()) {
        cell.frequency_hz = hz;
    }
    let figures = record
        .extra
        .get("figures")
        .unwrap_or(&serde_json::Value::Null);
    cell.work += figures["events"]
        .as_f64()
        .or_else(|| figures["queries"].as_f64())
        .unwrap_or(0.0);
    cell.passes += 1;
    Ok(())
}

fn passes(n: usize) -> String {
    if n == 1 {
        "1 pass".into()
    } else {
        format!("{n} passes")
    }
}

/// `cairn profile`: the cell's top functions by their own samples.
pub fn profile(cli: &Cli, path: &Path, cell: &str, top: usize, of: Of) -> Result<i32, Exit> {
    let c = cell_profile(cli, path, cell, of)?;
    let samples = c.profile.samples();
    let mut out = if of.waits() {
        format!(
            "{}: {} µs waited over {}, {:.0} transactions\n",
            c.label,
            samples,
            passes(c.passes),
            c.work
        )
    } else {
        format!(
            "{}: {} samples over {} ({} at {} Hz), {:.0} transactions\n",
            c.label,
            samples,
            passes(c.passes),
            cairn_exec::profiler::EVENT,
            c.frequency_hz,
            c.work
        )
    };
    let _ = writeln!(
        out,
        "{:>7} {:>7} {:>9}  {}",
        "self %",
        "total %",
        "µs/tx",
        if of.waits() { "wait event" } else { "function" }
    );
    for (name, s) in c.profile.top(top) {
        let per_work = (c.work > 0.0).then(|| s.own as f64 / c.work);
        let _ = writeln!(
            out,
            "{:>7.2} {:>7.2} {:>9}  {name}",
            100.0 * s.own as f64 / samples.max(1) as f64,
            100.0 * s.total as f64 / samples.max(1) as f64,
            c.us_per_work(per_work)
        );
    }
    print!("{out}");
    Ok(OK)
}

/// `cairn diff-profile`: the functions whose share of the CPU changed most from cell `a`
/// (the baseline) to cell `b`.
pub fn diff_profile(
    cli: &Cli,
    path: &Path,
    a: &str,
    b: &str,
    top: usize,
    of: Of,
) -> Result<i32, Exit> {
    let base = cell_profile(cli, path, a, of)?;
    let variant = cell_profile(cli, path, b, of)?;
    let (unit, per, item) = if of.waits() {
        ("µs waited", "µs waited per transaction", "wait event")
    } else {
        ("samples", "CPU µs per transaction", "function")
    };
    let changes = differences(
        Side {
            profile: &base.profile,
            work: base.work,
        },
        Side {
            profile: &variant.profile,
            work: variant.work,
        },
        top,
    );
    let mut out = format!(
        "{} (A: {} {unit}, {}) against {} (B: {} {unit}, {}); self % of each side's {unit}, {per}\n",
        base.label,
        base.profile.samples(),
        passes(base.passes),
        variant.label,
        variant.profile.samples(),
        passes(variant.passes)
    );
    let _ = writeln!(
        out,
        "{:>7} {:>7} {:>8} {:>9} {:>9}  {item}",
        "A %", "B %", "Δ pts", "A µs/tx", "B µs/tx"
    );
    for c in &changes {
        let _ = writeln!(
            out,
            "{:>7.2} {:>7.2} {:>+8.2} {:>9} {:>9}  {}",
            100.0 * c.baseline_share,
            100.0 * c.variant_share,
            100.0 * c.share_change(),
            base.us_per_work(c.baseline_per_work),
            variant.us_per_work(c.variant_per_work),
            c.function
        );
    }
    print!("{out}");
    Ok(OK)
}
