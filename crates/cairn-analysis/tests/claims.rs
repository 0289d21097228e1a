//! Claim checks on samples with a known answer: holds only when the whole CI supports the
//! claim and the shift is significant; noisy or too-short data is inconclusive, never holds.

mod common;

use cairn_analysis::claim::{
    check_claim, check_claim_on, Claim, ClaimCheck, ClaimDirection, ClaimReason, ClaimVerdict,
    Samples,
};
use cairn_analysis::compare::{compare, Comparison, Criteria, Verdict};
use cairn_analysis::StatsError;
use cairn_defs::figures::Direction;
use common::Noise;

const FASTER_BY_10: Claim = Claim {
    direction: ClaimDirection::Faster,
    at_least: 0.10,
    at_most: None,
};

fn comparison(baseline: &[f64], variant: &[f64], direction: Direction) -> Comparison {
    compare(baseline, variant, direction, &Criteria::default()).unwrap()
}

#[test]
fn three_passes_each_leave_a_claim_inconclusive_with_passes_needed() {
    // the quickstart at 4 threads: jemalloc ~21% above system in every pass
    let c = comparison(
        &[3200.0, 3841.0, 3350.0],
        &[4237.0, 4067.0, 4022.0],
        Direction::HigherIsBetter,
    );
    let check = check_claim(&c, FASTER_BY_10).unwrap();
    assert_eq!(check.verdict, ClaimVerdict::Inconclusive);
    assert!(matches!(check.reason, ClaimReason::TooFewPasses { .. }));
    assert_eq!(
        check.reason.to_string(),
        "too few passes: the smallest p-value the rank test can give is 0.100, not below α = 0.05"
    );
    // the passes that would decide it rest on the distance from the estimate to the bound
    // (1.1), not on the claimed size from none
    assert!(check.passes_needed.to_bound);
    let distance = check.speedup / 1.1 - 1.0;
    assert!((check.passes_needed.difference - distance).abs() < 1e-12);
    let n = check.passes_needed.per_variant.unwrap();
    assert!(n >= 4, "{:?}", check.passes_needed);
    assert!(
        check
            .passes_needed
            .to_string()
            .contains("passes per variant would decide it at the observed noise"),
        "{}",
        check.passes_needed
    );
    assert_eq!(check.claim.to_string(), "faster by at least 10%");
}

/// The word-size case: an estimate of 1.29 against a claimed 1.20, its CI reaching below
/// the bound. Eight passes were run; the passes that would decide it are more than eight
/// (they must bring the CI from 1.29 past 1.20), never the five that would tell 20% from
/// none.
#[test]
fn passes_needed_answer_the_claims_question_not_a_difference_from_none() {
    let mut noise = Noise::new(21);
    let baseline = noise.sample(8, 1000.0, 0.12);
    let variant: Vec<f64> = noise
        .sample(8, 1000.0, 0.12)
        .iter()
        .map(|v| v * 1.29)
        .collect();
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let by_20 = Claim {
        direction: ClaimDirection::Faster,
        at_least: 0.20,
        at_most: None,
    };
    let check = check_claim(&c, by_20).unwrap();
    if check.verdict == ClaimVerdict::Inconclusive {
        let n = check.passes_needed.per_variant.expect("estimable");
        assert!(n > 8, "{:?}", check.passes_needed);
    }
    let from_none = cairn_analysis::compare::passes_needed(&c.baseline, &c.variant, 0.20, 0.05);
    assert!(
        check.passes_needed.per_variant > from_none.per_variant,
        "{:?} vs {:?}",
        check.passes_needed,
        from_none
    );
    // an estimate exactly on the bound cannot be decided by any number of passes
    let on = cairn_analysis::compare::passes_to_decide(&c.baseline, &c.variant, 1.2, 1.2, 0.05);
    assert_eq!(on.per_variant, None);
    assert!(on.to_string().starts_with("no number of passes"), "{on}");
}

#[test]
fn a_clear_difference_holds_or_fails_by_its_size() {
    // eight quiet passes each, the variant 25% faster in throughput
    let mut noise = Noise::new(3);
    let baseline = noise.sample(8, 1000.0, 0.01);
    let variant = noise.sample(8, 1250.0, 0.01);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let verdict = |claim| check_claim(&c, claim).unwrap().verdict;
    assert_eq!(verdict(FASTER_BY_10), ClaimVerdict::Holds);
    assert_eq!(
        verdict(Claim {
            direction: ClaimDirection::Faster,
            at_least: 0.0,
            at_most: None,
        }),
        ClaimVerdict::Holds
    );
    assert_eq!(
        verdict(Claim {
            direction: ClaimDirection::Faster,
            at_least: 0.40,
            at_most: None,
        }),
        ClaimVerdict::Fails
    );
    assert_eq!(
        verdict(Claim {
            direction: ClaimDirection::Slower,
            at_least: 0.0,
            at_most: None,
        }),
        ClaimVerdict::Fails
    );
}

#[test]
fn times_are_read_as_speed_ups() {
    // sql-bench seconds (lower is better): 10 s against 8 s is a speed-up of 1.25
    let mut noise = Noise::new(4);
    let baseline = noise.sample(8, 10.0, 0.01);
    let variant = noise.sample(8, 8.0, 0.01);
    let c = comparison(&baseline, &variant, Direction::LowerIsBetter);
    let check = check_claim(&c, FASTER_BY_10).unwrap();
    assert_eq!(check.verdict, ClaimVerdict::Holds, "{check:?}");
    assert!((check.speedup - 1.0 / check.ratio).abs() < 1e-12);
    assert!(check.speedup_ci.low > 1.1 && check.speedup_ci.high < 1.4);
    assert_eq!(check.threshold, 1.1);
    // slower by at least 10% of the same data: the whole CI contradicts it
    let slower = Claim {
        direction: ClaimDirection::Slower,
        at_least: 0.10,
        at_most: None,
    };
    assert_eq!(
        check_claim(&c, slower).unwrap().verdict,
        ClaimVerdict::Fails
    );
}

/// Verdicts of "faster by at least 10%" over 200 studies of 6 passes each under 30% noise
/// with the given true speed-up: (holds, inconclusive, fails).
fn noisy_verdicts(true_speedup: f64) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for study in 0..200 {
        let mut noise = Noise::new(100 + study);
        let baseline = noise.sample(6, 1000.0, 0.3);
        let variant = noise.sample(6, 1000.0 * true_speedup, 0.3);
        let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
        match check_claim(&c, FASTER_BY_10).unwrap().verdict {
            ClaimVerdict::Holds => counts.0 += 1,
            ClaimVerdict::Inconclusive => counts.1 += 1,
            ClaimVerdict::Fails => counts.2 += 1,
        }
    }
    counts
}

#[test]
fn noisy_data_is_inconclusive_never_holds_or_fails() {
    // 6 passes at 30% noise cannot resolve 10% (that takes over a hundred): whatever the
    // truth and whatever the CI happened to be, the claim is inconclusive — a false claim
    // never holds, a true one never fails
    for true_speedup in [1.0, 1.15, 1.3] {
        assert_eq!(
            noisy_verdicts(true_speedup),
            (0, 200, 0),
            "true speed-up {true_speedup}"
        );
    }
}

#[test]
fn a_claim_waits_for_the_passes_its_size_needs() {
    // quickstart-like noise (CV 7%), a true 30% speed-up: 5 passes each separate the samples
    // (significant), but resolving 10% at this noise takes about 9, so the claim waits;
    // at 12 passes each it holds
    let mut noise = Noise::new(8);
    let baseline = noise.sample(12, 1000.0, 0.07);
    let variant = noise.sample(12, 1300.0, 0.07);
    let early = comparison(&baseline[..5], &variant[..5], Direction::HigherIsBetter);
    let check = check_claim(&early, FASTER_BY_10).unwrap();
    assert_eq!(check.verdict, ClaimVerdict::Inconclusive, "{check:?}");
    let ClaimReason::TooNoisy { passes, needed } = check.reason else {
        panic!("{:?}", check.reason)
    };
    assert_eq!(passes, 5);
    assert!(needed.unwrap() > 5, "{needed:?}");
    assert!(check
        .reason
        .to_string()
        .starts_with("too noisy: 5 passes per variant"));

    let full = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let check = check_claim(&full, FASTER_BY_10).unwrap();
    assert_eq!(check.verdict, ClaimVerdict::Holds, "{check:?}");
    assert!(check.passes_needed.per_variant.unwrap() <= 12);
}

#[test]
fn a_claim_needs_a_direction_and_a_sane_size() {
    let low = [100.0, 101.0, 99.0, 100.5];
    let high = [120.0, 121.0, 119.0, 120.5];
    let c = comparison(&low, &high, Direction::Neither);
    assert_eq!(check_claim(&c, FASTER_BY_10), Err(StatsError::NoDirection));
    let c = comparison(&low, &high, Direction::HigherIsBetter);
    let bad = Claim {
        direction: ClaimDirection::Slower,
        at_least: 1.5,
        at_most: None,
    };
    assert!(matches!(check_claim(&c, bad), Err(StatsError::Setting(_))));
}

/// "about 25% faster, give or take 10%": the band [1.15, 1.35] of the speed-up.
fn band(direction: ClaimDirection, at_least: f64, at_most: f64) -> Claim {
    Claim {
        direction,
        at_least,
        at_most: Some(at_most),
    }
}

#[test]
fn a_band_holds_inside_fails_outside_and_is_inconclusive_across_an_edge() {
    // eight quiet passes each, the variant 25% above in throughput
    let mut noise = Noise::new(3);
    let baseline = noise.sample(8, 1000.0, 0.01);
    let variant = noise.sample(8, 1250.0, 0.01);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let check = |claim| check_claim(&c, claim).unwrap();
    let about_25 = check(band(ClaimDirection::Faster, 0.15, 0.35));
    assert_eq!(about_25.verdict, ClaimVerdict::Holds, "{about_25:?}");
    assert_eq!(about_25.limit, Some(1.35));
    assert_eq!(about_25.claim.to_string(), "faster by 15% to 35%");
    // about 50%: the whole CI lies below the band
    let about_50 = check(band(ClaimDirection::Faster, 0.40, 0.60));
    assert_eq!(about_50.verdict, ClaimVerdict::Fails);
    assert_eq!(about_50.reason, ClaimReason::Contradicted);
    // about 10%: the whole CI lies above the band — a band fails on its far side too
    let about_10 = check(band(ClaimDirection::Faster, 0.05, 0.15));
    assert_eq!(about_10.verdict, ClaimVerdict::Fails);
    // a band whose edge cuts the CI
    let lo = about_25.speedup_ci.low;
    let across = check(band(ClaimDirection::Faster, 0.10, lo - 1.0 + 0.005));
    assert_eq!(across.verdict, ClaimVerdict::Inconclusive, "{across:?}");
    assert_eq!(across.reason, ClaimReason::Straddles);
    // slower by about 20%: the data are faster, the whole CI outside
    assert_eq!(
        check(band(ClaimDirection::Slower, 0.10, 0.30)).verdict,
        ClaimVerdict::Fails
    );
}

#[test]
fn a_band_on_times_is_read_as_a_speed_up() {
    // seconds: 10 s against 8 s is 25% faster (speed-up 1.25), and 8 s against 10 s is 20%
    // slower (speed-up 0.8)
    let mut noise = Noise::new(4);
    let ten = noise.sample(8, 10.0, 0.01);
    let eight = noise.sample(8, 8.0, 0.01);
    let faster = comparison(&ten, &eight, Direction::LowerIsBetter);
    let v = check_claim(&faster, band(ClaimDirection::Faster, 0.15, 0.35)).unwrap();
    assert_eq!(v.verdict, ClaimVerdict::Holds, "{v:?}");
    assert_eq!(
        check_claim(&faster, band(ClaimDirection::Slower, 0.15, 0.35))
            .unwrap()
            .verdict,
        ClaimVerdict::Fails
    );
    let slower = comparison(&eight, &ten, Direction::LowerIsBetter);
    let v = check_claim(&slower, band(ClaimDirection::Slower, 0.10, 0.30)).unwrap();
    assert_eq!(v.verdict, ClaimVerdict::Holds, "{v:?}");
    assert_eq!(v.limit, Some(0.7));
}

/// "A stripped binary is up to 4% faster": a band from no difference to 4% (about 2% ± 2%).
/// It holds on a clear small gain inside it, fails when the variant is slower or far
/// faster, and stays inconclusive on no difference at all — the CI then straddles the
/// band's edge at ×1, which the data cannot clear.
#[test]
fn a_band_from_no_difference_claims_a_direction_and_a_limit() {
    let up_to_4 = band(ClaimDirection::Faster, 0.0, 0.04);
    assert_eq!(up_to_4.to_string(), "faster by 0% to 4%");
    let mut noise = Noise::new(41);
    let o2 = noise.sample(10, 40.0, 0.002);
    let verdict = |secs: f64, noise: &mut Noise| {
        let variant = noise.sample(10, secs, 0.002);
        check_on(&o2, &variant, Direction::LowerIsBetter, up_to_4)
    };
    let gain_2 = verdict(40.0 / 1.02, &mut noise);
    assert_eq!(gain_2.verdict, ClaimVerdict::Holds, "{gain_2:?}");
    let slower = verdict(41.0, &mut noise);
    assert_eq!(slower.verdict, ClaimVerdict::Fails, "{slower:?}");
    let gain_10 = verdict(40.0 / 1.10, &mut noise);
    assert_eq!(gain_10.verdict, ClaimVerdict::Fails, "{gain_10:?}");
    let same = check_on(&o2, &o2, Direction::LowerIsBetter, up_to_4);
    assert_eq!(same.verdict, ClaimVerdict::Inconclusive, "{same:?}");
}

/// "About the same" (within 5% either way) holds on equal figures measured precisely, with
/// no significant shift to show (it claims none); fails on a 15% gain or loss; and stays
/// inconclusive where the CI reaches past an edge or the noise is too large for the band.
#[test]
fn the_same_holds_inside_its_band_without_a_shift_and_fails_outside_either_edge() {
    let within_5 = Claim::same(0.05, 0.05);
    assert_eq!(
        within_5.to_string(),
        "the same, from 5% slower to 5% faster"
    );
    let mut noise = Noise::new(43);
    let base = noise.sample(10, 1000.0, 0.005);
    let verdict = |tps: f64, sd: f64, noise: &mut Noise| {
        let variant = noise.sample(10, tps, sd);
        check_on(&base, &variant, Direction::HigherIsBetter, within_5)
    };
    let equal = verdict(1000.0, 0.005, &mut noise);
    assert_eq!(equal.verdict, ClaimVerdict::Holds, "{equal:?}");
    // a small real gain, well inside the band, still holds: "the same" within 5%
    let near = verdict(1020.0, 0.005, &mut noise);
    assert_eq!(near.verdict, ClaimVerdict::Holds, "{near:?}");
    let faster = verdict(1150.0, 0.005, &mut noise);
    assert_eq!(faster.verdict, ClaimVerdict::Fails, "{faster:?}");
    let slower = verdict(850.0, 0.005, &mut noise);
    assert_eq!(slower.verdict, ClaimVerdict::Fails, "{slower:?}");
    let at_edge = verdict(1050.0, 0.005, &mut noise);
    assert_eq!(at_edge.verdict, ClaimVerdict::Inconclusive, "{at_edge:?}");
    let noisy = verdict(1000.0, 0.15, &mut noise);
    assert_eq!(noisy.verdict, ClaimVerdict::Inconclusive, "{noisy:?}");
    // on a time, the band is the speed-up's: 1/1.05 to 1/0.95 of the baseline's seconds
    let secs = Claim::same(1.0 - 1.0 / 1.05, 1.0 / 0.95 - 1.0);
    let t_base = noise.sample(10, 40.0, 0.005);
    let t_same = noise.sample(10, 40.2, 0.005);
    let t = check_on(&t_base, &t_same, Direction::LowerIsBetter, secs);
    assert_eq!(t.verdict, ClaimVerdict::Holds, "{t:?}");
    assert!(matches!(
        check_claim(
            &comparison(&base, &base, Direction::HigherIsBetter),
            Claim::same(0.0, 0.05)
        ),
        Err(StatsError::Setting(_))
    ));
}

#[test]
fn a_noisy_band_is_inconclusive_and_a_reversed_band_is_refused() {
    let c = comparison(
        &[3200.0, 3841.0, 3350.0],
        &[4237.0, 4067.0, 4022.0],
        Direction::HigherIsBetter,
    );
    let v = check_claim(&c, band(ClaimDirection::Faster, 0.15, 0.25)).unwrap();
    assert_eq!(v.verdict, ClaimVerdict::Inconclusive);
    assert!(matches!(
        check_claim(&c, band(ClaimDirection::Faster, 0.3, 0.2)),
        Err(StatsError::Setting(_))
    ));
}

/// A claim of a shift of any size ("pg is ahead") asks what the comparison answers: on
/// passes where the comparison is decided (here "slower", 4 passes each at 7% noise, a true
/// 20% loss) the claim is decided the same way — never "inconclusive, too noisy" beside a
/// table that says "slower" on the same passes.
#[test]
fn a_claim_of_any_shift_is_decided_as_its_comparison_is() {
    let mut noise = Noise::new(21);
    let baseline = noise.sample(4, 1000.0, 0.07);
    let variant = noise.sample(4, 800.0, 0.07);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    let ahead = Claim {
        direction: ClaimDirection::Faster,
        at_least: 0.0,
        at_most: None,
    };
    let behind = Claim {
        direction: ClaimDirection::Slower,
        ..ahead
    };
    assert_eq!(check_claim(&c, ahead).unwrap().verdict, ClaimVerdict::Fails);
    assert_eq!(
        check_claim(&c, behind).unwrap().verdict,
        ClaimVerdict::Holds
    );
}

/// When the comparison finds no shift either way, a claim of a shift of any size is
/// inconclusive for the comparison's reason — the rank test's p — not for the size guard's
/// "needs about N passes to resolve the claimed size": such a claim has no size.
#[test]
fn an_undecided_claim_of_any_shift_gives_the_comparisons_reason() {
    let mut noise = Noise::new(5);
    let baseline = noise.sample(6, 1000.0, 0.3);
    let variant = noise.sample(6, 1000.0, 0.3);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    assert!(
        !matches!(c.verdict, Verdict::Faster | Verdict::Slower),
        "{c:?}"
    );
    let ahead = Claim {
        direction: ClaimDirection::Faster,
        at_least: 0.0,
        at_most: None,
    };
    let check = check_claim(&c, ahead).unwrap();
    assert_eq!(check.verdict, ClaimVerdict::Inconclusive);
    assert_eq!(
        check.reason,
        ClaimReason::Undecided {
            verdict: c.verdict,
            why: c.reason
        }
    );
    let text = check.reason.to_string();
    assert!(text.starts_with("the comparison finds "), "{text}");
    assert!(text.contains("(p "), "{text}");
}

fn check_on(baseline: &[f64], variant: &[f64], direction: Direction, claim: Claim) -> ClaimCheck {
    let c = comparison(baseline, variant, direction);
    check_claim_on(&c, claim, Samples { baseline, variant }).unwrap()
}

/// The word-size case: sysbench's 64-bit build ×1.6 of the 32-bit one on five passes at 8%
/// noise, against a claimed 10–15%. Five passes cannot size the CI to the band's ±2.5%, but
/// the speed-up lies far beyond the band's far edge: the rank test against that edge decides
/// it (fails), where the CI alone leaves it "too noisy".
#[test]
fn a_speed_up_far_outside_the_claim_is_decided_by_the_rank_test_on_few_passes() {
    let mut noise = Noise::new(31);
    let baseline = noise.sample(5, 2750.0, 0.08);
    let variant = noise.sample(5, 4500.0, 0.08);
    let about_12 = band(ClaimDirection::Faster, 0.10, 0.15);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let alone = check_claim(&c, about_12).unwrap();
    assert_eq!(alone.verdict, ClaimVerdict::Inconclusive, "{alone:?}");
    assert!(matches!(alone.reason, ClaimReason::TooNoisy { .. }));

    let check = check_on(&baseline, &variant, Direction::HigherIsBetter, about_12);
    assert_eq!(check.verdict, ClaimVerdict::Fails, "{check:?}");
    let ClaimReason::RanksBeyond { edge, p } = check.reason else {
        panic!("{:?}", check.reason)
    };
    assert!((edge - 1.15).abs() < 1e-12, "{edge}");
    assert!(p < 0.05, "{p}");
    let text = check.reason.to_string();
    assert!(
        text.contains("the ratio beyond ×1.150 (p = 0.008)"),
        "{text}"
    );
    // "at least 30% faster" on the same data: inside the open claim, above its only edge
    let at_least_30 = Claim::at_least(ClaimDirection::Faster, 0.3);
    let holds = check_on(&baseline, &variant, Direction::HigherIsBetter, at_least_30);
    assert_eq!(holds.verdict, ClaimVerdict::Holds, "{holds:?}");
    // seconds read as speed-ups: the same data as times, 64-bit taking 1/1.6 of the time
    let secs = |xs: &[f64]| xs.iter().map(|x| 1e4 / x).collect::<Vec<_>>();
    let times = check_on(
        &secs(&baseline),
        &secs(&variant),
        Direction::LowerIsBetter,
        about_12,
    );
    assert_eq!(times.verdict, ClaimVerdict::Fails, "{times:?}");
    // the edge as the ratio of seconds the reader sees: 1 / 1.15
    let ClaimReason::RanksBeyond { edge, .. } = times.reason else {
        panic!("{:?}", times.reason)
    };
    assert!((edge - 1.0 / 1.15).abs() < 1e-12, "{edge}");
}

/// Far above an open claim's edge on noisy passes: the CI alone is "too noisy", the rank
/// test against the edge finds the speed-up above it, and the claim holds.
#[test]
fn a_speed_up_far_inside_an_open_claim_holds_by_the_rank_test() {
    let mut noise = Noise::new(33);
    let baseline = noise.sample(5, 1000.0, 0.15);
    let variant = noise.sample(5, 1800.0, 0.15);
    let by_20 = Claim::at_least(ClaimDirection::Faster, 0.2);
    let c = comparison(&baseline, &variant, Direction::HigherIsBetter);
    let alone = check_claim(&c, by_20).unwrap();
    assert!(
        matches!(alone.reason, ClaimReason::TooNoisy { .. }),
        "{alone:?}"
    );
    let check = check_on(&baseline, &variant, Direction::HigherIsBetter, by_20);
    assert_eq!(check.verdict, ClaimVerdict::Holds, "{check:?}");
    assert!(matches!(check.reason, ClaimReason::RanksInside { .. }));
    assert!(check
        .reason
        .to_string()
        .contains("rank tests against the claimed size agree"));
}

/// A speed-up near the claim's edge stays undecided on few passes: the rank test against the
/// edge cannot tell it apart, so "too noisy" stands.
#[test]
fn a_speed_up_near_the_claims_edge_stays_too_noisy() {
    let mut noise = Noise::new(32);
    let baseline = noise.sample(5, 1000.0, 0.07);
    let variant = noise.sample(5, 1120.0, 0.07);
    let check = check_on(&baseline, &variant, Direction::HigherIsBetter, FASTER_BY_10);
    assert_eq!(check.verdict, ClaimVerdict::Inconclusive, "{check:?}");
    assert!(matches!(check.reason, ClaimReason::TooNoisy { .. }));
}

/// With the rank test deciding where the CI alone cannot, a false claim still almost never
/// holds and a true one almost never fails: over 200 studies of 6 passes at 30% noise, the
/// wrong verdicts stay within the test's error rate (α/2 per side: 5 of 200 expected at
/// most), and most studies stay inconclusive.
#[test]
fn the_rank_test_keeps_noisy_claims_mostly_undecided_and_rarely_wrong() {
    for (true_speedup, claim_is_true) in [(1.0, false), (0.9, false), (1.25, true), (1.4, true)] {
        let mut counts = (0, 0, 0);
        for study in 0..200 {
            let mut noise = Noise::new(100 + study);
            let baseline = noise.sample(6, 1000.0, 0.3);
            let variant = noise.sample(6, 1000.0 * true_speedup, 0.3);
            match check_on(&baseline, &variant, Direction::HigherIsBetter, FASTER_BY_10).verdict {
                ClaimVerdict::Holds => counts.0 += 1,
                ClaimVerdict::Inconclusive => counts.1 += 1,
                ClaimVerdict::Fails => counts.2 += 1,
            }
        }
        let wrong = if claim_is_true { counts.2 } else { counts.0 };
        assert!(wrong <= 5, "true speed-up {true_speedup}: {counts:?}");
        assert!(counts.1 >= 150, "true speed-up {true_speedup}: {counts:?}");
    }
}
