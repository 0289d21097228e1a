//! Small shared helpers over one sample: validation, sorting, median and moments.

use crate::StatsError;

/// Refuses an empty sample or one with NaN or infinities; `what` names the sample in the error.
pub(crate) fn check(sample: &[f64], what: &'static str) -> Result<(), StatsError> {
    if sample.is_empty() {
        return Err(StatsError::Empty { what });
    }
    match sample.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NotFinite {
            what,
            index,
            value: sample[index],
        }),
        None => Ok(()),
    }
}

/// Like [`check`], and every value must be above zero (the sample is one side of a ratio).
pub(crate) fn check_positive(sample: &[f64], what: &'static str) -> Result<(), StatsError> {
    check(sample, what)?;
    match sample.iter().position(|v| *v <= 0.0) {
        Some(index) => Err(StatsError::NotPositive {
            what,
            index,
            value: sample[index],
        }),
        None => Ok(()),
    }
}

/// A sorted copy. `total_cmp` gives one order for every input, so results never depend on
/// how the caller ordered its passes.
pub(crate) fn sorted(sample: &[f64]) -> Vec<f64> {
    let mut values = sample.to_vec();
    values.sort_by(f64::total_cmp);
    values
}

/// The median of a sorted, non-empty slice (the mean of the two middle values for even n).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median of a non-empty slice that may be reordered in place (no allocation: the
/// bootstrap calls this for every resample).
pub(crate) fn median_in_place(values: &mut [f64]) -> f64 {
    let n = values.len();
    let (_, upper_middle, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper_middle = *upper_middle;
    if n % 2 == 1 {
        upper_middle
    } else {
        // the largest value below the upper middle is the lower middle
        let lower_middle = values[..n / 2]
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .expect("even n >= 2 has a lower half");
        (lower_middle + upper_middle) / 2.0
    }
}

pub(crate) fn mean(sample: &[f64]) -> f64 {
    sample.iter().sum::<f64>() / sample.len() as f64
}

/// The sample standard deviation (divisor n - 1); `None` below two values.
pub(crate) fn sample_std_dev(sample: &[f64]) -> Option<f64> {
    if sample.len() < 2 {
        return None;
    }
    let mean = mean(sample);
    let squares: f64 = sample.iter().map(|v| (v - mean) * (v - mean)).sum();
    Some((squares / (sample.len() - 1) as f64).sqrt())
}

/// The coefficient of variation (standard deviation / |mean|); `None` below two values or
/// when the mean is zero (then a relative spread means nothing).
pub(crate) fn coefficient_of_variation(sample: &[f64]) -> Option<f64> {
    let sd = sample_std_dev(sample)?;
    let mean = mean(sample);
    if mean == 0.0 {
        None
    } else {
        Some(sd / mean.abs())
    }
}

/// Quantile `p` of a sorted, non-empty slice, interpolating between order statistics (R's
/// default, type 7), so a bootstrap CI does not jump with the number of resamples.
pub(crate) fn quantile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let below = h.floor() as usize;
    let above = h.ceil() as usize;
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_in_place_agrees_with_sorting() {
        for sample in [
            vec![3.0],
            vec![2.0, 1.0],
            vec![5.0, 1.0, 4.0, 2.0],
            vec![9.0, 9.0, 1.0, 7.0, 3.0, 3.0],
            vec![1.5, -2.0, 8.0, 0.0, 4.0],
        ] {
            let expected = median_of_sorted(&sorted(&sample));
            let mut scratch = sample.clone();
            assert_eq!(median_in_place(&mut scratch), expected, "{sample:?}");
        }
    }

    #[test]
    fn quantile_type_7_matches_r() {
        // R: quantile(c(1, 2, 3, 4, 10), c(0.025, 0.5, 0.975)) -> 1.1, 3, 9.4
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert!((quantile_of_sorted(&values, 0.025) - 1.1).abs() < 1e-12);
        assert_eq!(quantile_of_sorted(&values, 0.5), 3.0);
        assert!((quantile_of_sorted(&values, 0.975) - 9.4).abs() < 1e-12);
    }

    #[test]
    fn bad_samples_are_refused_with_their_place() {
        assert_eq!(
            check(&[], "baseline"),
            Err(StatsError::Empty { what: "baseline" })
        );
        let err = check(&[1.0, f64::NAN], "variant").unwrap_err();
        assert!(matches!(err, StatsError::NotFinite { index: 1, .. }));
        let err = check_positive(&[1.0, 0.0], "baseline").unwrap_err();
        assert!(matches!(err, StatsError::NotPositive { index: 1, .. }));
    }
}
