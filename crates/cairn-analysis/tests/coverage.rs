//! Calibration over many simulated studies with a known truth: the bootstrap CI of the ratio
//! of medians covers the true ratio at about its stated 95%, and the rank test's false alarm
//! rate stays at about α when there is no difference.

mod common;

use cairn_analysis::bootstrap::{median_ratio, BootstrapSettings};
use cairn_analysis::rank_test::mann_whitney;
use common::Noise;

const STUDIES: u64 = 1000;

/// Fraction of `STUDIES` simulated studies (n passes per side, normal noise of `cv`, a true
/// ratio of medians of `ratio`) whose bootstrap CI covers the true ratio; each study has its
/// own data seed and bootstrap seed.
fn coverage(n: usize, cv: f64, ratio: f64) -> f64 {
    let covered = (0..STUDIES)
        .filter(|&study| {
            let mut noise = Noise::new(study);
            let baseline = noise.sample(n, 1000.0, cv);
            let variant = noise.sample(n, 1000.0 * ratio, cv);
            let settings = BootstrapSettings {
                resamples: 1000,
                seed: study,
            };
            median_ratio(&baseline, &variant, settings)
                .unwrap()
                .ci
                .contains(ratio)
        })
        .count();
    covered as f64 / STUDIES as f64
}

#[test]
fn the_ratio_ci_covers_a_known_ratio_at_about_95_percent() {
    for (n, cv, ratio) in [(12, 0.05, 1.1), (20, 0.10, 0.9)] {
        let rate = coverage(n, cv, ratio);
        eprintln!("COV n={n} cv={cv} ratio={ratio}: {rate}");
        assert!(
            (0.90..=0.98).contains(&rate),
            "n = {n}, cv = {cv}, ratio = {ratio}: coverage {rate}"
        );
    }
}

#[test]
fn the_rank_test_raises_false_alarms_at_about_alpha() {
    // no difference, 8 vs 8 (exact test): p < 0.05 in about 5% of studies — a little less,
    // since an exact test of discrete U is conservative
    let alarms = (0..STUDIES)
        .filter(|&study| {
            let mut noise = Noise::new(10_000 + study);
            let baseline = noise.sample(8, 1000.0, 0.05);
            let variant = noise.sample(8, 1000.0, 0.05);
            mann_whitney(&baseline, &variant).unwrap().p_value < 0.05
        })
        .count();
    let rate = alarms as f64 / STUDIES as f64;
    assert!((0.025..=0.075).contains(&rate), "false alarm rate {rate}");
}

#[test]
fn the_rank_test_sees_a_real_difference() {
    // a 10% shift at CV 5%, 8 vs 8: the test should find it nearly always
    let found = (0..STUDIES)
        .filter(|&study| {
            let mut noise = Noise::new(20_000 + study);
            let baseline = noise.sample(8, 1000.0, 0.05);
            let variant = noise.sample(8, 1100.0, 0.05);
            mann_whitney(&baseline, &variant).unwrap().p_value < 0.05
        })
        .count();
    assert!(
        found as f64 / STUDIES as f64 > 0.9,
        "power {found}/{STUDIES}"
    );
}
