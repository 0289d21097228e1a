//! Many comparisons at once (a claim over a suite's operations): Holm's step-down
//! correction, so that the chance of any false "holds" among m comparisons stays at α.
//!
//! The p-values in increasing order are tested at α/m, α/(m−1), …, α; the first one that
//! misses its level stops the procedure, and it and every later one are not significant.

/// Each comparison's Holm level (α/(m − i) for the one of rank i, 0-based, in increasing
/// order of p; ties in input order) and whether the step-down finds it significant.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<(f64, bool)> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut out = vec![(alpha, false); m];
    let mut stopped = false;
    for (rank, &i) in order.iter().enumerate() {
        let level = alpha / (m - rank) as f64;
        stopped = stopped || p_values[i] > level;
        out[i] = (level, !stopped);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_steps_down_and_stops_at_the_first_miss() {
        // levels 0.05/3, 0.05/2, 0.05 in order of p
        let r = holm(&[0.03, 0.001, 0.01], 0.05);
        assert_eq!(r[1], (0.05 / 3.0, true));
        assert_eq!(r[2], (0.025, true));
        assert_eq!(r[0], (0.05, true));
        // 0.03 misses 0.05/2: it and the later 0.04 (below its own 0.05) are not significant
        let r = holm(&[0.04, 0.001, 0.03], 0.05);
        assert_eq!(
            r.iter().map(|x| x.1).collect::<Vec<_>>(),
            [false, true, false]
        );
    }
}
