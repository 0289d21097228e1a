//! The summary of one sample — one figure of one variant at one matrix point over its passes:
//! n, median, mean, min, max, standard deviation, coefficient of variation and 95% intervals
//! for the median and the mean.
//!
//! - **Median CI: distribution-free, from order statistics.** Benchmark samples are skewed
//!   (a pass hit by a noisy neighbour is slow, never "negatively slow"), so an interval that
//!   assumes normality would be wrong in the tails. The interval `[x(k), x(n-k+1)]` covers the
//!   median with probability `1 - 2·P(B ≤ k-1)`, `B ~ Binomial(n, ½)`, whatever the
//!   distribution. We take the narrowest such interval whose coverage is at least 95% and
//!   state its actual coverage (e.g. 96.9% for n = 6). It exists only from n = 6 on: with
//!   five values even `[min, max]` covers the median with probability 1 - 2/32 = 93.75%,
//!   so below six passes the median has no 95% interval and the summary says so (`None`).
//! - **Mean CI: Student t**, `mean ± t(0.975, n-1) · s/√n`, from n = 2 on. It is what the
//!   adaptive-passes rule watches (see [`crate::adaptive`]).

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, StudentsT};

use crate::sample::{
    check, coefficient_of_variation, mean, median_of_sorted, sample_std_dev, sorted,
};
use crate::StatsError;

/// The confidence level of every interval this crate states.
pub const CONFIDENCE: f64 = 0.95;

/// A confidence interval and the probability with which it covers what it estimates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// The coverage: 0.95 where the method hits it exactly, more where the method can only
    /// reach it in steps (order statistics).
    pub level: f64,
}

impl Interval {
    /// Whether `value` lies inside, ends included.
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// The summary of one sample. Spreads and intervals that a sample this small cannot give
/// are `None`, never a made-up number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (divisor n - 1); from two values on.
    pub std_dev: Option<f64>,
    /// Standard deviation / |mean|; from two values on, and not for a zero mean.
    pub cv: Option<f64>,
    /// The distribution-free interval of the median; from six values on.
    pub median_ci: Option<Interval>,
    /// The Student t interval of the mean; from two values on.
    pub mean_ci: Option<Interval>,
}

/// Summarises one sample. `what` names it in errors ("baseline", "variant", a point's name).
pub fn summarize(sample: &[f64], what: &'static str) -> Result<Summary, StatsError> {
    check(sample, what)?;
    let values = sorted(sample);
    Ok(Summary {
        n: values.len(),
        median: median_of_sorted(&values),
        mean: mean(&values),
        min: values[0],
        max: values[values.len() - 1],
        std_dev: sample_std_dev(&values),
        cv: coefficient_of_variation(&values),
        median_ci: median_interval(&values),
        mean_ci: mean_interval(&values),
    })
}

/// The narrowest order-statistic interval `[x(k), x(n-k+1)]` covering the median with at
/// least [`CONFIDENCE`]; `None` below six values.
fn median_interval(sorted: &[f64]) -> Option<Interval> {
    let n = sorted.len();
    let binomial = Binomial::new(0.5, n as u64).expect("p = 0.5 is a valid probability");
    let tail = (1.0 - CONFIDENCE) / 2.0;
    // k = the number of values cut from each end, plus one; the largest k whose tail
    // probability P(B <= k-1) stays within (1 - CONFIDENCE)/2
    let mut k: u64 = 0;
    while k < n as u64 / 2 && binomial.cdf(k) <= tail {
        k += 1;
    }
    if k == 0 {
        return None;
    }
    let level = 1.0 - 2.0 * binomial.cdf(k - 1);
    let k = k as usize;
    Some(Interval {
        low: sorted[k - 1],
        high: sorted[n - k],
        level,
    })
}

/// The Student t interval of the mean; `None` below two values.
fn mean_interval(sample: &[f64]) -> Option<Interval> {
    let half_width = mean_half_width(sample)?;
    let mean = mean(sample);
    Some(Interval {
        low: mean - half_width,
        high: mean + half_width,
        level: CONFIDENCE,
    })
}

/// Half the width of the Student t interval of the mean: `t(0.975, n-1) · s/√n`.
pub(crate) fn mean_half_width(sample: &[f64]) -> Option<f64> {
    let sd = sample_std_dev(sample)?;
    let n = sample.len() as f64;
    Some(t_quantile(n - 1.0) * sd / n.sqrt())
}

/// The two-sided [`CONFIDENCE`] quantile of Student's t with `freedom` degrees of freedom.
pub(crate) fn t_quantile(freedom: f64) -> f64 {
    StudentsT::new(0.0, 1.0, freedom)
        .expect("degrees of freedom are positive")
        .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn the_quickstart_sample_summarised() {
        // the quickstart's system allocator at 4 threads (issue 10)
        let s = summarize(&[3200.0, 3841.0, 3350.0], "system").unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 3350.0, 3200.0, 3841.0));
        assert!(close(s.mean, 3_463.666_666_666_667, 1e-9));
        // R: sd(c(3200, 3841, 3350)) = 335.2765
        assert!(close(s.std_dev.unwrap(), 335.2765, 1e-4));
        assert!(close(s.cv.unwrap(), 0.096_798, 1e-6));
        // R: t.test(c(3200, 3841, 3350))$conf.int = 2630.794 4296.540
        let ci = s.mean_ci.unwrap();
        assert!(
            close(ci.low, 2630.794, 1e-3) && close(ci.high, 4296.540, 1e-3),
            "{ci:?}"
        );
        // three values: no order-statistic interval reaches 95%
        assert_eq!(s.median_ci, None);
    }

    #[test]
    fn median_interval_from_order_statistics() {
        // n = 6: [x(1), x(6)], coverage 1 - 2/64
        let s = summarize(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], "x").unwrap();
        let ci = s.median_ci.unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 6.0));
        assert!(close(ci.level, 1.0 - 2.0 / 64.0, 1e-12));
        // n = 5: even [min, max] covers only 93.75%
        assert_eq!(
            summarize(&[1.0, 2.0, 3.0, 4.0, 5.0], "x")
                .unwrap()
                .median_ci,
            None
        );
        // n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so k = 2: [x(2), x(9)]
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = summarize(&ten, "x").unwrap().median_ci.unwrap();
        assert_eq!((ci.low, ci.high), (2.0, 9.0));
        assert!(close(ci.level, 1.0 - 22.0 / 1024.0, 1e-12));
        // n = 20: the textbook interval [x(6), x(15)] (coverage 95.86%)
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = summarize(&twenty, "x").unwrap().median_ci.unwrap();
        assert_eq!((ci.low, ci.high), (6.0, 15.0));
        assert!(close(ci.level, 0.958_611, 1e-6));
    }

    #[test]
    fn one_value_has_no_spread() {
        let s = summarize(&[42.0], "x").unwrap();
        assert_eq!(
            (s.median, s.mean, s.std_dev, s.cv),
            (42.0, 42.0, None, None)
        );
        assert_eq!((s.median_ci, s.mean_ci), (None, None));
    }

    #[test]
    fn a_zero_mean_has_no_coefficient_of_variation() {
        let s = summarize(&[-1.0, 1.0], "x").unwrap();
        assert_eq!(s.cv, None);
        assert!(s.std_dev.is_some());
    }
}
