//! Drift and outliers in one cell's passes: a monotone trend across the passes in run order (the Mann–Kendall test, exact) and passes far from the rest (modified z-scores from the median absolute deviation).
//!
//! Both are flags, never filters: a report shows them beside the data, which stays whole.
//!
//! **Drift.** Kendall's S counts, over every pair of passes, whether the later one is higher
//! (+1) or lower (−1). Under no trend every order of the passes is equally likely, so the
//! exact two-sided p is the share of the n! orders whose |S| is at least the observed one
//! (the number of orders with k inversions is the Mahonian number; tied pairs count 0, which
//! makes the test conservative). The smallest p it can give is 2/n!: from 5 passes on
//! (2/120 ≈ 0.017) it can flag a trend at α = 0.05; with 4 or fewer it never does. Above
//! [`EXACT_UP_TO`] passes the normal approximation (variance n(n−1)(2n+5)/18, continuity
//! corrected) is used.
//!
//! **Outliers** (Iglewicz and Hoaglin, 1993): a pass whose modified z-score
//! 0.6745·(x − median)/MAD exceeds [`OUTLIER_Z`] in magnitude. Needs at least
//! [`OUTLIER_MIN_PASSES`] passes and a MAD above 0 (identical passes have no outliers).

use serde::{Deserialize, Serialize};

use crate::sample::median_in_place;

/// Passes up to which the trend test's p is exact.
pub const EXACT_UP_TO: usize = 40;
/// The modified z-score beyond which a pass is an outlier (Iglewicz and Hoaglin's 3.5).
pub const OUTLIER_Z: f64 = 3.5;
/// Fewest passes in which an outlier is looked for.
pub const OUTLIER_MIN_PASSES: usize = 5;
/// The significance at which a cell's passes are flagged as drifting (tables, reports,
/// `cairn results`).
pub const DRIFT_ALPHA: f64 = 0.05;

/// A monotone trend of a cell's passes in run order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Kendall's S: concordant minus discordant pairs (negative: the passes fall).
    pub s: i64,
    /// Kendall's τ = S / (n(n−1)/2).
    pub tau: f64,
    /// The two-sided p of no trend.
    pub p_value: f64,
    pub passes: usize,
}

impl Trend {
    /// Whether the later passes are lower.
    pub fn falling(&self) -> bool {
        self.s < 0
    }
}

/// The Mann–Kendall trend of `values` (in run order); `None` for fewer than 3 values.
pub fn trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match values[j].partial_cmp(&values[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let p_value = if n <= EXACT_UP_TO {
        exact_p(n, s)
    } else {
        let var = (n * (n - 1) * (2 * n + 5)) as f64 / 18.0;
        let z = (s.abs() as f64 - 1.0).max(0.0) / var.sqrt();
        (2.0 * normal_upper(z)).min(1.0)
    };
    Some(Trend {
        s,
        tau: s as f64 / pairs as f64,
        p_value,
        passes: n,
    })
}

/// `trend(values)` when it is significant at `alpha`.
pub fn drift(values: &[f64], alpha: f64) -> Option<Trend> {
    trend(values).filter(|t| t.p_value < alpha)
}

/// P(|S| ≥ |s|) over the n! equally likely orders: S = N − 2k for an order with k
/// inversions, N = n(n−1)/2.
fn exact_p(n: usize, s: i64) -> f64 {
    let max = n * (n - 1) / 2;
    // counts[k]: orders of the first m items with k inversions (Mahonian numbers)
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for m in 2..=n {
        let mut next = vec![0.0f64; max + 1];
        for (k, slot) in next.iter_mut().enumerate() {
            *slot = (0..m.min(k + 1)).map(|j| counts[k - j]).sum();
        }
        counts = next;
    }
    let total: f64 = counts.iter().sum();
    let at_least: f64 = counts
        .iter()
        .enumerate()
        .filter(|(k, _)| (max as i64 - 2 * *k as i64).abs() >= s.abs())
        .map(|(_, c)| c)
        .sum();
    (at_least / total).min(1.0)
}

/// P(Z > z) of the standard normal (Abramowitz and Stegun 7.1.26 through erfc).
fn normal_upper(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// The indices of the passes of `values` that lie far from the rest (see the module docs).
pub fn outliers(values: &[f64]) -> Vec<usize> {
    if values.len() < OUTLIER_MIN_PASSES {
        return Vec::new();
    }
    let median = median_in_place(&mut values.to_vec());
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    let mad = median_in_place(&mut deviations);
    // identical passes (or a NaN) have no spread to measure distance by
    if mad.is_nan() || mad <= 0.0 {
        return Vec::new();
    }
    values
        .iter()
        .enumerate()
        .filter(|(_, v)| (0.6745 * (*v - median) / mad).abs() > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_of_a_perfect_order_is_two_over_n_factorial() {
        let t = trend(&[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!((t.s, t.tau), (-10, -1.0));
        assert!((t.p_value - 2.0 / 120.0).abs() < 1e-12, "{}", t.p_value);
        assert!(t.falling());
        // four passes can never reach 0.05: 2/24
        let t = trend(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((t.p_value - 2.0 / 24.0).abs() < 1e-12);
        assert!(drift(&[1.0, 2.0, 3.0, 4.0], 0.05).is_none());
        assert!(trend(&[1.0, 2.0]).is_none());
    }

    /// Kendall's exact null distribution for n = 4 (Kendall 1938): P(S ≥ 4) = 4/24.
    #[test]
    fn exact_p_matches_kendalls_table() {
        // S = 4 for n = 4: one inversion away from a perfect order (k = 1), 3 such orders
        let t = trend(&[1.0, 2.0, 4.0, 3.0]).unwrap();
        assert_eq!(t.s, 4);
        // P(|S| >= 4) = P(k <= 1) + P(k >= 5) = (1 + 3 + 3 + 1) / 24
        assert!((t.p_value - 8.0 / 24.0).abs() < 1e-12, "{}", t.p_value);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_p_where_both_apply() {
        // a noisy rising series of 40 passes: exact vs approximate
        let values: Vec<f64> = (0..40)
            .map(|i| i as f64 + 6.0 * ((i * 7919 % 13) as f64 - 6.0))
            .collect();
        let exact = trend(&values).unwrap();
        let n = values.len();
        let var = (n * (n - 1) * (2 * n + 5)) as f64 / 18.0;
        let z = (exact.s.abs() as f64 - 1.0) / var.sqrt();
        let approx = 2.0 * normal_upper(z);
        assert!(
            (exact.p_value - approx).abs() < 0.01,
            "{} vs {approx}",
            exact.p_value
        );
    }

    /// The quickstart's case: passes 5 and 6 lower than the first four.
    #[test]
    fn drift_and_an_outlier_are_flagged_and_clean_passes_show_neither() {
        let falling = [402.0, 399.0, 396.0, 391.0, 386.0, 380.0];
        let d = drift(&falling, 0.05).expect("a falling trend");
        assert!(d.falling() && d.p_value < 0.01, "{d:?}");
        assert!(outliers(&falling).is_empty());

        let one_far = [395.0, 397.0, 394.0, 396.0, 309.0, 395.0];
        assert_eq!(outliers(&one_far), [4]);
        assert!(drift(&one_far, 0.05).is_none());

        let clean = [395.0, 398.0, 393.0, 397.0, 394.0, 396.0];
        assert!(drift(&clean, 0.05).is_none());
        assert!(outliers(&clean).is_empty());
        // identical passes: no spread, nothing flagged
        assert!(outliers(&[1.0; 6]).is_empty());
    }
}
