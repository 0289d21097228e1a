//! The adaptive-passes rule driven like the engine will drive it: one block at a time, a
//! pass for every point that asks for one, until none does.

mod common;

use cairn_analysis::adaptive::{next_passes, Action, PassDecision, PassRule, Why};
use common::Noise;

const RULE: PassRule = PassRule {
    min: 3,
    max: 12,
    until_ci: Some(0.02),
};

/// Runs blocks until no point asks for another pass; each point's source is normal noise of
/// the given CV. Returns the passes each point got and every block's decisions.
fn run(rule: &PassRule, cvs: &[f64], seed: u64) -> (Vec<usize>, Vec<Vec<PassDecision<usize>>>) {
    let mut noise = Noise::new(seed);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cvs.len()];
    let mut log = Vec::new();
    loop {
        let decisions = next_passes(
            rule,
            samples.iter().enumerate().map(|(i, s)| (i, s.as_slice())),
        )
        .unwrap();
        let wanted: Vec<usize> = decisions
            .iter()
            .filter(|d| d.action == Action::AnotherPass)
            .map(|d| d.point)
            .collect();
        log.push(decisions);
        if wanted.is_empty() {
            break;
        }
        for point in wanted {
            samples[point].extend(noise.sample(1, 1000.0, cvs[point]));
        }
        assert!(log.len() <= rule.max + 1, "the rule never stopped");
    }
    (samples.iter().map(Vec::len).collect(), log)
}

#[test]
fn a_noisy_source_stops_at_max_and_a_quiet_one_at_min() {
    // point 0: CV 10% (noisy), point 1: CV 0.2% (quiet), point 2: CV 2% (in between)
    let (passes, log) = run(&RULE, &[0.10, 0.002, 0.02], 5);
    assert_eq!(passes[0], 12);
    assert_eq!(passes[1], 3);
    assert!((4..12).contains(&passes[2]), "{passes:?}");

    let last = log.last().unwrap();
    assert_eq!(last[0].why, Why::ReachedMaxNoisy);
    assert!(last[0].ci_half_width.unwrap() > 0.02);
    assert_eq!(last[1].why, Why::TargetMet);
    assert_eq!(last[2].why, Why::TargetMet);
    // the first blocks fill up to min, whatever the noise
    assert!(log[0]
        .iter()
        .all(|d| d.why == Why::BelowMin && d.ci_half_width.is_none()));
    assert!(log[1].iter().all(|d| d.why == Why::BelowMin));
    // every decision records the CI half-width it was based on once there is one
    for block in &log[2..] {
        assert!(block.iter().all(|d| d.ci_half_width.is_some()));
    }
}

#[test]
fn the_noisy_and_quiet_ends_hold_for_any_seed() {
    for seed in 0..50 {
        let (passes, _) = run(&RULE, &[0.10, 0.002], seed);
        assert_eq!(passes, vec![12, 3], "seed {seed}");
    }
}

#[test]
fn without_a_target_points_stop_at_min() {
    let rule = PassRule {
        until_ci: None,
        ..RULE
    };
    let (passes, log) = run(&rule, &[0.10, 0.002], 1);
    assert_eq!(passes, vec![3, 3]);
    assert!(log.last().unwrap().iter().all(|d| d.why == Why::NoTarget));
}

#[test]
fn a_single_pass_cannot_estimate_its_ci() {
    let rule = PassRule {
        min: 1,
        max: 5,
        until_ci: Some(0.02),
    };
    let one = [1000.0];
    let same = [1000.0, 1000.0];
    let decisions = next_passes(&rule, [("one", &one[..]), ("same", &same[..])]).unwrap();
    assert_eq!(
        (decisions[0].action, decisions[0].why),
        (Action::AnotherPass, Why::NoEstimate)
    );
    assert_eq!(
        (
            decisions[1].action,
            decisions[1].why,
            decisions[1].ci_half_width
        ),
        (Action::Stop, Why::TargetMet, Some(0.0))
    );
}

#[test]
fn the_half_width_is_the_t_interval_relative_to_the_mean() {
    // R: t.test(c(3200, 3841, 3350))$conf.int -> 2630.794 4296.540, mean 3463.667:
    // relative half-width 832.873 / 3463.667 = 0.24046
    let sample = [3200.0, 3841.0, 3350.0];
    let decisions = next_passes(&RULE, [("quickstart", &sample[..])]).unwrap();
    let width = decisions[0].ci_half_width.unwrap();
    assert!((width - 0.24046).abs() < 1e-4, "{width}");
    assert_eq!(decisions[0].why, Why::AboveTarget);
}

#[test]
fn rules_that_cannot_be_followed_are_refused() {
    let empty: [(u8, &[f64]); 0] = [];
    for (rule, needle) in [
        (PassRule { min: 0, ..RULE }, "min must be at least 1"),
        (PassRule { max: 2, ..RULE }, "max (2) is below min (3)"),
        (
            PassRule {
                until_ci: Some(0.0),
                ..RULE
            },
            "until-ci",
        ),
    ] {
        let err = next_passes(&rule, empty).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    let bad = [1.0, f64::NAN];
    assert!(next_passes(&RULE, [(0, &bad[..])]).is_err());
}
