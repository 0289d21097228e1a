//! The ratio of medians (variant / baseline) with a seeded percentile-bootstrap 95% CI.
//!
//! Each resample draws, with replacement, a sample of the baseline's size from the baseline
//! and one of the variant's size from the variant (the two groups are resampled apart: they
//! were measured apart), and takes the ratio of their medians. The CI is the 2.5% and 97.5%
//! quantiles of those ratios (percentile method; a ratio's percentile interval is the same on
//! the log scale, so it needs no transformation).
//!
//! **Reproducible by construction.** The generator is PCG-64 (`rand_pcg`, whose output
//! stream is stable across releases) started from the caller's seed, and indices are drawn
//! by this module's own unbiased bounded draw, so no library's choice of sampling algorithm
//! can change a CI. Both samples are sorted before resampling, so the order in which the
//! caller lists the passes does not matter either: the same values, settings and seed give a
//! bit-identical result on every machine and re-render.

use rand_core::Rng;
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use crate::sample::{
    check_positive, median_in_place, median_of_sorted, quantile_of_sorted, sorted,
};
use crate::summary::{Interval, CONFIDENCE};
use crate::StatsError;

/// How the bootstrap runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapSettings {
    /// Number of resamples; 10 000 keeps the CI's ends steady to about 0.1% of the ratio.
    pub resamples: u32,
    /// The seed of the resampling. Reports should derive it from something stable (e.g.
    /// the study's seed), never from the clock.
    pub seed: u64,
}

impl Default for BootstrapSettings {
    fn default() -> Self {
        BootstrapSettings {
            resamples: 10_000,
            seed: 0,
        }
    }
}

/// The ratio of the variant's median to the baseline's, with its bootstrap CI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioEstimate {
    /// median(variant) / median(baseline).
    pub ratio: f64,
    /// The percentile-bootstrap interval (level [`CONFIDENCE`]).
    pub ci: Interval,
    pub resamples: u32,
    pub seed: u64,
}

/// The ratio of medians with its seeded bootstrap 95% CI. Both samples need positive values.
pub fn median_ratio(
    baseline: &[f64],
    variant: &[f64],
    settings: BootstrapSettings,
) -> Result<RatioEstimate, StatsError> {
    median_ratio_at(baseline, variant, settings, CONFIDENCE)
}

/// [`median_ratio`] with a CI of coverage `level` (a sequential design's look asks for more
/// than 95%: [`crate::sequential`]).
pub fn median_ratio_at(
    baseline: &[f64],
    variant: &[f64],
    settings: BootstrapSettings,
    level: f64,
) -> Result<RatioEstimate, StatsError> {
    check_positive(baseline, "baseline")?;
    check_positive(variant, "variant")?;
    check_resamples(settings)?;
    let (ratio, ratios) = median_ratio_draws(baseline, variant, settings);
    Ok(estimate(ratio, ratios, settings, level))
}

/// The ratio of medians and its `settings.resamples` bootstrap draws (unsorted), from
/// samples already checked.
pub(crate) fn median_ratio_draws(
    baseline: &[f64],
    variant: &[f64],
    settings: BootstrapSettings,
) -> (f64, Vec<f64>) {
    // resample from sorted copies: the result must not depend on the order of the passes
    let (baseline, variant) = (sorted(baseline), sorted(variant));
    let ratio = median_of_sorted(&variant) / median_of_sorted(&baseline);
    let mut rng = generator(settings.seed);
    let mut baseline_draw = vec![0.0; baseline.len()];
    let mut variant_draw = vec![0.0; variant.len()];
    let ratios: Vec<f64> = (0..settings.resamples)
        .map(|_| {
            resample(&mut rng, &baseline, &mut baseline_draw);
            resample(&mut rng, &variant, &mut variant_draw);
            median_in_place(&mut variant_draw) / median_in_place(&mut baseline_draw)
        })
        .collect();
    (ratio, ratios)
}

/// The median of within-block ratios (each pair: variant / baseline of the same block) with
/// its seeded percentile-bootstrap CI, resampling the pairs (so each resample keeps a pair
/// together: the block's shared conditions stay out of the ratio). Values must be positive.
pub fn paired_median_ratio(
    pairs: &[(f64, f64)],
    settings: BootstrapSettings,
) -> Result<RatioEstimate, StatsError> {
    paired_median_ratio_at(pairs, settings, CONFIDENCE)
}

/// [`paired_median_ratio`] with a CI of coverage `level`.
pub fn paired_median_ratio_at(
    pairs: &[(f64, f64)],
    settings: BootstrapSettings,
    level: f64,
) -> Result<RatioEstimate, StatsError> {
    let baseline: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let variant: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    check_positive(&baseline, "baseline")?;
    check_positive(&variant, "variant")?;
    check_resamples(settings)?;
    let (ratio, medians) = paired_median_ratio_draws(pairs, settings);
    Ok(estimate(ratio, medians, settings, level))
}

/// The median of within-block ratios and its `settings.resamples` bootstrap draws
/// (unsorted), from pairs already checked.
pub(crate) fn paired_median_ratio_draws(
    pairs: &[(f64, f64)],
    settings: BootstrapSettings,
) -> (f64, Vec<f64>) {
    // the statistic depends on the ratios only: resample them, sorted (order-free)
    let ratios = sorted(&pairs.iter().map(|(b, v)| v / b).collect::<Vec<_>>());
    let ratio = median_of_sorted(&ratios);
    let mut rng = generator(settings.seed);
    let mut draw = vec![0.0; ratios.len()];
    let medians: Vec<f64> = (0..settings.resamples)
        .map(|_| {
            resample(&mut rng, &ratios, &mut draw);
            median_in_place(&mut draw)
        })
        .collect();
    (ratio, medians)
}

/// A bootstrap needs enough resamples to place the interval's ends.
pub(crate) fn check_resamples(settings: BootstrapSettings) -> Result<(), StatsError> {
    if settings.resamples < 100 {
        return Err(StatsError::Setting(format!(
            "a bootstrap needs at least 100 resamples to place a 95% interval, not {}",
            settings.resamples
        )));
    }
    Ok(())
}

/// The estimate `ratio` with the percentile interval of coverage `level` of its bootstrap
/// `draws`.
pub(crate) fn estimate(
    ratio: f64,
    mut draws: Vec<f64>,
    settings: BootstrapSettings,
    level: f64,
) -> RatioEstimate {
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    RatioEstimate {
        ratio,
        ci: Interval {
            low: quantile_of_sorted(&draws, tail),
            high: quantile_of_sorted(&draws, 1.0 - tail),
            level,
        },
        resamples: settings.resamples,
        seed: settings.seed,
    }
}

/// PCG-64 started from `seed`, spelled out (state and stream) rather than through
/// `SeedableRng::seed_from_u64`, whose seed expansion is not promised to stay the same.
pub(crate) fn generator(seed: u64) -> Pcg64 {
    // one fixed stream for every seed; the seed sets the state
    const STREAM: u128 = 0x0a02_bdbf_7bb3_c0a7_ac28_fa16_a64a_bf96;
    Pcg64::new(
        u128::from(seed) ^ 0xcafe_f00d_d15e_a5e5_0000_0000_0000_0000,
        STREAM,
    )
}

/// Fills `draw` with values of `sample` drawn uniformly with replacement.
fn resample(rng: &mut Pcg64, sample: &[f64], draw: &mut [f64]) {
    for slot in draw.iter_mut() {
        *slot = sample[bounded(rng, sample.len() as u64) as usize];
    }
}

/// A uniform integer in `0..bound` (Lemire's multiply-and-reject: unbiased, and fixed here so
/// the stream of indices never changes under us).
fn bounded(rng: &mut Pcg64, bound: u64) -> u64 {
    debug_assert!(bound > 0);
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(bound);
        if (product as u64) >= threshold {
            return (product >> 64) as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_draws_are_uniform_and_in_range() {
        let mut rng = generator(7);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[bounded(&mut rng, 6) as usize] += 1;
        }
        // 10 000 expected each; 5 standard deviations is ±456
        assert!(
            counts.iter().all(|c| (9_544..=10_456).contains(c)),
            "{counts:?}"
        );
    }

    #[test]
    fn the_generator_stream_is_pinned() {
        // if this changes, every stored report's CIs would change on re-render
        let mut rng = generator(0);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        let mut again = generator(0);
        let second: Vec<u64> = (0..3).map(|_| again.next_u64()).collect();
        assert_eq!(first, second);
        assert_ne!(
            first,
            (0..3).map(|_| generator(1).next_u64()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn identical_inputs_and_seed_give_identical_bits() {
        let baseline = [3200.0, 3841.0, 3350.0, 3411.0, 3390.0];
        let variant = [4237.0, 4067.0, 4022.0, 4100.0, 3990.0];
        let settings = BootstrapSettings {
            resamples: 2_000,
            seed: 42,
        };
        let one = median_ratio(&baseline, &variant, settings).unwrap();
        let two = median_ratio(&baseline, &variant, settings).unwrap();
        assert_eq!(one.ci.low.to_bits(), two.ci.low.to_bits());
        assert_eq!(one.ci.high.to_bits(), two.ci.high.to_bits());
        let other_seed = median_ratio(
            &baseline,
            &variant,
            BootstrapSettings {
                seed: 43,
                ..settings
            },
        )
        .unwrap();
        assert_eq!(other_seed.ratio, one.ratio);
        assert!(one.ci.low <= one.ratio && one.ratio <= one.ci.high);
    }

    #[test]
    fn ratios_need_positive_values_and_enough_resamples() {
        let err = median_ratio(&[0.0, 1.0], &[1.0, 2.0], BootstrapSettings::default());
        assert!(matches!(
            err,
            Err(StatsError::NotPositive {
                what: "baseline",
                ..
            })
        ));
        let err = median_ratio(
            &[1.0, 2.0],
            &[1.0, 2.0],
            BootstrapSettings {
                resamples: 10,
                seed: 0,
            },
        );
        assert!(matches!(err, Err(StatsError::Setting(_))));
    }
}
