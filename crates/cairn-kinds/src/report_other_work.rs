//! The report's line on the machine's other work: how much of its CPU something other than each trial's server and client used during the measured windows (`other_cpu_pct`), so a reader can tell a quiet machine from a busy one.
//!
//! The figure is read by every trial since cairn records it; trials measured before have
//! none, and the line says how many passes it covers. A pass beside other work is kept in
//! every figure, as outliers are: it is what this machine did at that moment, and dropping
//! it would hide the noise the statistics must show.

use cairn_defs::figures;
use cairn_report::document::{Inline, Item};

use crate::trial_points::TrialPoint;

/// Other work above this share of the machine's CPU (every CPU over the window) flags a
/// pass: on 2 CPUs, a fifth of one core.
const BUSY_PCT: f64 = 10.0;

/// How many flagged passes the line names, the busiest first.
const NAMED: usize = 5;

/// The line for the Data quality section, or `None` when no trial read the machine.
pub fn other_work(trials: &[TrialPoint]) -> Option<Item> {
    let mut read: Vec<(f64, &TrialPoint)> = trials
        .iter()
        .filter_map(|t| t.figures.get(&figures::OTHER_CPU_PCT).map(|p| (p, t)))
        .collect();
    if read.is_empty() {
        return None;
    }
    let covered = if read.len() == trials.len() {
        format!("{} passes", read.len())
    } else {
        format!(
            "{} of {} passes; the others were measured before cairn read it",
            read.len(),
            trials.len()
        )
    };
    read.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.address.cmp(&b.1.address))
    });
    let busy: Vec<&(f64, &TrialPoint)> = read.iter().filter(|(p, _)| *p > BUSY_PCT).collect();
    if busy.is_empty() {
        return Some(Item::new(
            Inline::plain(format!(
                "the machine was otherwise quiet: work other than each trial's server and client used at most {:.1}% of its CPU during a measured window (",
                read[0].0
            ))
            .code(figures::OTHER_CPU_PCT.name)
            .text(format!(", {covered})")),
        ));
    }
    let mut text = Inline::plain(format!(
        "⚠ other work on the machine: in {} of {} passes something other than the trial's server and client used more than {BUSY_PCT}% of the machine's CPU during the measured window (",
        busy.len(),
        read.len()
    ))
    .code(figures::OTHER_CPU_PCT.name)
    .text(format!("; {covered}): "));
    for (i, (pct, t)) in busy.iter().take(NAMED).enumerate() {
        if i > 0 {
            text = text.text(", ");
        }
        text = text.code(&t.address).text(format!(" {pct:.1}%"));
    }
    if busy.len() > NAMED {
        text = text.text(format!(" and {} more", busy.len() - NAMED));
    }
    Some(Item::new(text.text(
        ". They are kept in every figure: such a pass ran slower for a reason outside the plan (other processes, or the kernel's work for the connection's path), and its cell is noisier for it.",
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_defs::figures::Figures;

    fn trial(address: &str, other: Option<f64>) -> TrialPoint {
        let mut figures = Figures::new();
        figures.set(&figures::TOTAL_S, 30.0);
        if let Some(p) = other {
            figures.set(&figures::OTHER_CPU_PCT, p);
        }
        TrialPoint {
            address: address.into(),
            figures,
            ..TrialPoint::default()
        }
    }

    fn text(item: Item) -> String {
        cairn_report::markdown::inline(&item.text)
    }

    #[test]
    fn trials_that_never_read_the_machine_say_nothing() {
        assert!(other_work(&[trial("trial/a/x#1", None)]).is_none());
    }

    #[test]
    fn a_quiet_machine_says_its_largest_share() {
        let line = text(
            other_work(&[
                trial("trial/a/x#1", Some(1.25)),
                trial("trial/a/x#2", Some(3.04)),
                trial("trial/a/y#1", None),
            ])
            .unwrap(),
        );
        assert!(line.contains("otherwise quiet"), "{line}");
        assert!(line.contains("at most 3.0%"), "{line}");
        assert!(line.contains("2 of 3 passes"), "{line}");
    }

    #[test]
    fn busy_passes_are_named_busiest_first() {
        let mut trials: Vec<TrialPoint> = (1..=8)
            .map(|i| trial(&format!("trial/a/x#{i}"), Some(10.0 + f64::from(i))))
            .collect();
        trials.push(trial("trial/a/y#1", Some(2.0)));
        let line = text(other_work(&trials).unwrap());
        assert!(line.starts_with("⚠ other work"), "{line}");
        assert!(line.contains("in 8 of 9 passes"), "{line}");
        assert!(
            line.contains("`trial/a/x#8` 18.0%, `trial/a/x#7` 17.0%"),
            "{line}"
        );
        assert!(line.contains(" and 3 more"), "{line}");
        assert!(!line.contains("y#1"), "{line}");
    }
}
