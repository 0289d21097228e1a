//! Comparisons and their verdicts on synthetic samples whose answer is known, including the
//! honest "inconclusive" of three passes and the byte-identical output of a seeded run.

mod common;

use cairn_analysis::bootstrap::BootstrapSettings;
use cairn_analysis::compare::{compare, Criteria, Reason, Verdict};
use cairn_defs::figures::Direction;
use common::Noise;
use proptest::prelude::*;

const SYSTEM_4_THREADS: [f64; 3] = [3200.0, 3841.0, 3350.0];
const JEMALLOC_4_THREADS: [f64; 3] = [4237.0, 4067.0, 4022.0];

#[test]
fn three_passes_each_are_inconclusive_however_far_apart() {
    // the quickstart at 4 threads: jemalloc's tps is ~21% above system's in every pass, yet
    // 3 vs 3 cannot reach p < 0.05, so the verdict must not be "faster"
    let c = compare(
        &SYSTEM_4_THREADS,
        &JEMALLOC_4_THREADS,
        Direction::HigherIsBetter,
        &Criteria::default(),
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert_eq!(
        c.reason,
        Reason::TooFewPasses {
            min_p: 0.1,
            alpha: 0.05
        }
    );
    assert_eq!(c.test.p_value, 0.1);
    assert!((c.ratio.ratio - 4067.0 / 3350.0).abs() < 1e-12);
    // the passes needed are stated: at least the 4 a rank test needs, and more for a 5%
    // difference at this noise (pooled CV ~7%)
    let needed = c.passes_needed;
    assert_eq!(needed.difference, 0.05);
    assert!(
        (needed.pooled_cv.unwrap() - 0.0712).abs() < 1e-3,
        "{needed:?}"
    );
    let n = needed.per_variant.unwrap();
    assert!((20..=40).contains(&n), "{needed:?}");
    assert!(needed
        .to_string()
        .starts_with(&format!("about {n} passes per variant")));

    // very different and quiet: still inconclusive; resolving the difference seen (>20%)
    // needs only the rank test's minimum, 4
    let resolve_big = Criteria {
        resolve: Some(0.2),
        ..Criteria::default()
    };
    let c = compare(
        &[100.0, 100.5, 99.5],
        &[200.0, 201.0, 199.0],
        Direction::HigherIsBetter,
        &resolve_big,
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert_eq!(c.passes_needed.per_variant, Some(4));
}

#[test]
fn four_passes_each_can_decide_in_the_figures_direction() {
    let low = [100.0, 101.0, 99.0, 100.5];
    let high = [120.0, 121.0, 119.0, 120.5];
    let verdict = |direction| {
        compare(&low, &high, direction, &Criteria::default())
            .unwrap()
            .verdict
    };
    assert_eq!(verdict(Direction::HigherIsBetter), Verdict::Faster);
    assert_eq!(verdict(Direction::LowerIsBetter), Verdict::Slower);
    assert_eq!(verdict(Direction::Neither), Verdict::Higher);
    let c = compare(&high, &low, Direction::HigherIsBetter, &Criteria::default()).unwrap();
    assert_eq!(c.verdict, Verdict::Slower);
    assert!(matches!(c.reason, Reason::Shifted { .. }));
    assert!(c.ratio.ci.high < 1.0);
}

#[test]
fn no_significant_difference_needs_a_narrow_ci() {
    // twelve quiet passes each (CV 0.5%) of the same source: the CI sits inside ±5%
    let mut noise = Noise::new(1);
    let baseline = noise.sample(12, 1000.0, 0.005);
    let variant = noise.sample(12, 1000.0, 0.005);
    let c = compare(
        &baseline,
        &variant,
        Direction::HigherIsBetter,
        &Criteria::default(),
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::NoSignificantDifference, "{c:?}");
    assert_eq!(c.reason, Reason::WithinBand { band: 0.05 });

    // the same source made noisy (CV 20%): p is large but a 5% difference is not ruled out
    let baseline = noise.sample(6, 1000.0, 0.2);
    let variant = noise.sample(6, 1000.0, 0.2);
    let c = compare(
        &baseline,
        &variant,
        Direction::HigherIsBetter,
        &Criteria::default(),
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    assert!(
        matches!(c.reason, Reason::BandNotRuledOut { .. }),
        "{:?}",
        c.reason
    );
    assert!(c.passes_needed.per_variant.unwrap() > 6);
}

#[test]
fn identical_inputs_and_seed_give_byte_identical_output() {
    let mut noise = Noise::new(9);
    let baseline = noise.sample(10, 500.0, 0.05);
    let variant = noise.sample(10, 520.0, 0.05);
    let criteria = Criteria {
        bootstrap: BootstrapSettings {
            resamples: 5_000,
            seed: 2026,
        },
        ..Criteria::default()
    };
    let json = |c: &Criteria| {
        serde_json::to_string(&compare(&baseline, &variant, Direction::HigherIsBetter, c).unwrap())
            .unwrap()
    };
    assert_eq!(json(&criteria), json(&criteria));
    let other_seed = Criteria {
        bootstrap: BootstrapSettings {
            seed: 2027,
            ..criteria.bootstrap
        },
        ..criteria
    };
    assert_ne!(json(&criteria), json(&other_seed));
}

#[test]
fn the_order_of_the_passes_does_not_matter() {
    let mut noise = Noise::new(11);
    let baseline = noise.sample(9, 500.0, 0.05);
    let variant = noise.sample(7, 530.0, 0.05);
    let (mut baseline_reversed, mut variant_rotated) = (baseline.clone(), variant.clone());
    baseline_reversed.reverse();
    variant_rotated.rotate_left(3);
    let json = |b: &[f64], v: &[f64]| {
        serde_json::to_string(
            &compare(b, v, Direction::HigherIsBetter, &Criteria::default()).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        json(&baseline, &variant),
        json(&baseline_reversed, &variant_rotated)
    );
}

#[test]
fn the_bootstrap_stream_is_pinned() {
    // Literal bits of one CI: a change here (a new rand_pcg stream, another index draw or
    // quantile rule) would re-render every stored report differently, so it must be a
    // deliberate one.
    // even sizes of irregular values: resampled medians average two values, so nearly every
    // resample's ratio is distinct and any change of the stream moves the CI's ends
    // (plain arithmetic, no libm, so the inputs are the same bits everywhere)
    let baseline: Vec<f64> = (0..8)
        .map(|i| 100.0 + ((i * 37) % 17) as f64 * 1.37)
        .collect();
    let variant: Vec<f64> = (0..8)
        .map(|i| 110.0 + ((i * 53) % 19) as f64 * 1.29)
        .collect();
    let c = compare(
        &baseline,
        &variant,
        Direction::HigherIsBetter,
        &Criteria {
            bootstrap: BootstrapSettings {
                resamples: 1_000,
                seed: 7,
            },
            ..Criteria::default()
        },
    )
    .unwrap();
    let bits = (c.ratio.ci.low.to_bits(), c.ratio.ci.high.to_bits());
    assert_eq!(bits, PINNED_CI_BITS);
}

/// The CI above: [1.0388612160769495, 1.233901957238593].
const PINNED_CI_BITS: (u64, u64) = (0x3ff0_9f2c_f042_21f2, 0x3ff3_be0f_fa8c_f65d);

#[test]
fn bad_criteria_are_refused() {
    let bad = Criteria {
        alpha: 1.5,
        ..Criteria::default()
    };
    let err = compare(&[1.0, 2.0], &[1.0, 2.0], Direction::HigherIsBetter, &bad).unwrap_err();
    assert!(err.to_string().contains("alpha"), "{err}");
    let err = compare(&[], &[1.0], Direction::HigherIsBetter, &Criteria::default()).unwrap_err();
    assert_eq!(err.to_string(), "the baseline sample has no values");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the values, three passes or fewer on a side never give a decided verdict,
    /// p-values stay within [min_p, 1], and the CI is ordered.
    #[test]
    fn small_samples_never_decide(
        baseline in prop::collection::vec(1.0f64..1e6, 1..=3),
        variant in prop::collection::vec(1.0f64..1e6, 1..=3),
    ) {
        let criteria = Criteria {
            bootstrap: BootstrapSettings { resamples: 200, seed: 1 },
            ..Criteria::default()
        };
        let c = compare(&baseline, &variant, Direction::HigherIsBetter, &criteria).unwrap();
        prop_assert_eq!(c.verdict, Verdict::Inconclusive);
        prop_assert!(c.test.min_p <= c.test.p_value && c.test.p_value <= 1.0);
        prop_assert!(c.ratio.ci.low <= c.ratio.ci.high);
    }

    /// Swapping the sides mirrors the comparison: the same p, U turned around, the
    /// opposite verdict.
    #[test]
    fn swapping_sides_mirrors_the_verdict(
        baseline in prop::collection::vec(1.0f64..100.0, 4..=8),
        variant in prop::collection::vec(1.0f64..100.0, 4..=8),
    ) {
        let criteria = Criteria {
            bootstrap: BootstrapSettings { resamples: 200, seed: 1 },
            ..Criteria::default()
        };
        let there = compare(&baseline, &variant, Direction::HigherIsBetter, &criteria).unwrap();
        let back = compare(&variant, &baseline, Direction::HigherIsBetter, &criteria).unwrap();
        prop_assert!((there.test.p_value - back.test.p_value).abs() < 1e-12);
        let product = (baseline.len() * variant.len()) as f64;
        prop_assert!((there.test.u + back.test.u - product).abs() < 1e-9);
        if there.verdict == Verdict::Faster {
            prop_assert_ne!(back.verdict, Verdict::Faster);
        }
    }
}

/// Blocks that differ a lot (nodes of different speed, drift between passes) widen both
/// samples so far that an unpaired comparison cannot see a steady 5% gain; paired within
/// the blocks, the gain is plain — and six pairs are the fewest that can show it.
#[test]
fn pairing_within_blocks_sees_through_block_effects() {
    let blocks = [100.0, 180.0, 130.0, 240.0, 90.0, 160.0, 210.0];
    let wobble = [1.001, 0.999, 1.002, 0.998, 1.0005, 1.0015, 0.9995];
    let pairs: Vec<(f64, f64)> = blocks
        .iter()
        .zip(wobble)
        .map(|(b, w)| (*b, b * 1.05 * w))
        .collect();
    let criteria = Criteria::default();
    let (baseline, variant): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let unpaired = compare(&baseline, &variant, Direction::HigherIsBetter, &criteria).unwrap();
    assert_eq!(unpaired.verdict, Verdict::Inconclusive, "{unpaired:?}");
    let paired = cairn_analysis::compare_paired(
        &pairs,
        "node and pass",
        Direction::HigherIsBetter,
        &criteria,
    )
    .unwrap();
    assert_eq!(paired.verdict, Verdict::Faster, "{paired:?}");
    assert!(
        paired.ratio.ci.low > 1.04 && paired.ratio.ci.high < 1.06,
        "{paired:?}"
    );
    let p = paired.paired.as_ref().unwrap();
    assert_eq!((p.pairs, p.blocks.as_str()), (7, "node and pass"));
    // five pairs cannot reach 0.05 whatever they show
    let five = cairn_analysis::compare_paired(
        &pairs[..5],
        "node and pass",
        Direction::HigherIsBetter,
        &criteria,
    )
    .unwrap();
    assert_eq!(five.verdict, Verdict::Inconclusive);
    assert!(
        matches!(five.reason, Reason::TooFewPasses { .. }),
        "{five:?}"
    );
}
