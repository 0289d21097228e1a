//! The Mann–Whitney U test (Wilcoxon rank-sum): does one variant's sample tend to lie above
//! or below the baseline's, with no assumption about the shape of either distribution.
//!
//! - **Exact for small samples** (n₁ + n₂ ≤ [`EXACT_LIMIT`]): the p-value is counted over
//!   every way of splitting the pooled values into the two groups (the permutation
//!   distribution of the rank sum), by dynamic programming over doubled mid-ranks. Without
//!   ties this is the classical exact U distribution — R's `wilcox.test(x, y)` gives the same
//!   p-values; with ties it is the exact conditional (permutation) test on mid-ranks, as
//!   `coin::wilcox_test(distribution = "exact")` computes it, where R would fall back to
//!   the normal approximation.
//! - **Normal approximation for larger samples**, with the tie correction of the variance and
//!   a continuity correction (R's `wilcox.test(x, y, exact = FALSE)`).
//!
//! The two-sided p-value is `P(|W - E[W]| ≥ |w - E[W]|)` for the rank sum `W` (for the
//! symmetric no-ties distribution: twice the smaller tail, as R reports it).
//!
//! Every result also carries `min_p`: the smallest p-value these sample sizes (and this tie
//! pattern) can give at all. With 3 vs 3 it is 2/20 = 0.1, so no outcome of 3 passes each can
//! be significant at 0.05 — [`mod@crate::compare`] turns that into "inconclusive", never into
//! "no difference".

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::sample::check;
use crate::StatsError;

/// The largest n₁ + n₂ for which p-values are counted exactly. Counts stay below
/// C(50, 25) ≈ 1.3·10¹⁴ < 2⁵³, so they are exact in an `f64`, and the table has at most
/// 50 × 2551 cells (variant size + 1 rows, one column per doubled rank sum up to n(n+1)).
pub const EXACT_LIMIT: usize = 50;

/// How a p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PMethod {
    /// Counted over every split of the pooled sample (exact; exact conditional with ties).
    Exact,
    /// Normal approximation with tie and continuity corrections.
    Normal,
}

/// The outcome of a Mann–Whitney test of a variant against a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    pub n_baseline: usize,
    pub n_variant: usize,
    /// U of the variant: the number of (variant, baseline) pairs where the variant's value is
    /// larger, ties counting one half. `n_variant · n_baseline / 2` means no shift.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The smallest two-sided p-value these sample sizes and ties can give.
    pub min_p: f64,
    pub method: PMethod,
    /// Whether the pooled sample has tied values.
    pub ties: bool,
}

impl MannWhitney {
    /// Whether the ranks point to the variant above the baseline (U above its no-shift
    /// centre).
    pub fn says_higher(&self) -> bool {
        self.u > (self.n_baseline * self.n_variant) as f64 / 2.0
    }
}

/// Tests whether `variant` is shifted against `baseline` (two-sided).
pub fn mann_whitney(baseline: &[f64], variant: &[f64]) -> Result<MannWhitney, StatsError> {
    check(baseline, "baseline")?;
    check(variant, "variant")?;
    let ranks = Ranks::of(baseline, variant);
    let n_baseline = baseline.len();
    let n_variant = variant.len();
    let n = n_baseline + n_variant;
    // U = W - n_v(n_v+1)/2, with W the variant's rank sum; in doubled units everything is an
    // integer
    let u = (ranks.variant_doubled_sum as f64 - (n_variant * (n_variant + 1)) as f64) / 2.0;
    let (p_value, min_p, method) = if n <= EXACT_LIMIT {
        let (p, min_p) = exact_p(&ranks.doubled, n_variant, ranks.variant_doubled_sum);
        (p, min_p, PMethod::Exact)
    } else {
        let (p, min_p) = normal_p(u, n_baseline, n_variant, ranks.tie_term);
        (p, min_p, PMethod::Normal)
    };
    Ok(MannWhitney {
        n_baseline,
        n_variant,
        u,
        p_value,
        min_p,
        method,
        ties: ranks.tie_term > 0.0,
    })
}

/// The smallest two-sided p-value an exact test of `n_baseline` vs `n_variant` values without
/// ties can reach: `2 / C(n, n_variant)` (only the two most extreme splits are as extreme).
pub fn min_exact_p(n_baseline: usize, n_variant: usize) -> f64 {
    (2.0 / binomial_coefficient(n_baseline + n_variant, n_variant)).min(1.0)
}

/// The smallest two-sided p-value [`mann_whitney`] can give for `n_baseline` against
/// `n_variant` values without ties: [`min_exact_p`] up to [`EXACT_LIMIT`] values in all,
/// the normal approximation's beyond (as the test computes its p there).
pub fn min_p_without_ties(n_baseline: usize, n_variant: usize) -> f64 {
    if n_baseline + n_variant <= EXACT_LIMIT {
        min_exact_p(n_baseline, n_variant)
    } else {
        normal_p(0.0, n_baseline, n_variant, 0.0).1
    }
}

/// The smallest number of passes per side at which a test of equal-sized samples can give
/// p < `alpha`: 4 for α = 0.05 (min p = 2/70 ≈ 0.029), 5 for α = 0.01 (2/252 ≈ 0.008).
pub fn min_passes_for(alpha: f64) -> usize {
    (1..)
        .find(|&n| min_exact_p(n, n) < alpha)
        .expect("min_exact_p falls towards zero as n grows")
}

/// C(n, k) as an `f64` (exact while it stays below 2⁵³).
fn binomial_coefficient(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The pooled sample's doubled mid-ranks (integers: a tie over ranks a..=b gets a + b).
struct Ranks {
    /// Doubled mid-rank of every pooled value, in pooled order (baseline first).
    doubled: Vec<u64>,
    /// Sum of the variant's doubled mid-ranks.
    variant_doubled_sum: u64,
    /// Σ (t³ - t) over groups of t tied values (0 without ties).
    tie_term: f64,
}

impl Ranks {
    fn of(baseline: &[f64], variant: &[f64]) -> Ranks {
        let pooled: Vec<(f64, bool)> = baseline
            .iter()
            .map(|v| (*v, false))
            .chain(variant.iter().map(|v| (*v, true)))
            .collect();
        let mut order: Vec<usize> = (0..pooled.len()).collect();
        order.sort_by(|a, b| pooled[*a].0.total_cmp(&pooled[*b].0));
        let mut doubled = vec![0u64; pooled.len()];
        let mut tie_term = 0.0;
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            while end + 1 < order.len() && pooled[order[end + 1]].0 == pooled[order[start]].0 {
                end += 1;
            }
            // 1-based ranks start+1 ..= end+1 share the mid-rank; doubled: their sum of ends
            let doubled_mid_rank = (start + 1 + end + 1) as u64;
            for &index in &order[start..=end] {
                doubled[index] = doubled_mid_rank;
            }
            let t = (end - start + 1) as f64;
            tie_term += t * t * t - t;
            start = end + 1;
        }
        let variant_doubled_sum = doubled
            .iter()
            .zip(&pooled)
            .filter(|(_, (_, is_variant))| *is_variant)
            .map(|(rank, _)| rank)
            .sum();
        Ranks {
            doubled,
            variant_doubled_sum,
            tie_term,
        }
    }
}

/// Exact two-sided p-value and the smallest attainable one, by counting the splits of the
/// pooled doubled ranks into a group of `k` (the variant's size) for every rank sum.
fn exact_p(doubled: &[u64], k: usize, observed: u64) -> (f64, f64) {
    let max_sum: u64 = doubled.iter().sum();
    let width = max_sum as usize + 1;
    // ways[j][s]: subsets of j of the ranks seen so far with doubled sum s
    let mut ways = vec![vec![0.0f64; width]; k + 1];
    ways[0][0] = 1.0;
    for (seen, &rank) in doubled.iter().enumerate() {
        let rank = rank as usize;
        // backwards over j, so every rank is used at most once
        for j in (1..=k.min(seen + 1)).rev() {
            let (smaller, larger) = ways.split_at_mut(j);
            let from = &smaller[j - 1];
            for s in (rank..width).rev() {
                larger[0][s] += from[s - rank];
            }
        }
    }
    let counts = &ways[k];
    let total: f64 = counts.iter().sum();
    // E[W] in doubled units is k·(n+1): the mean doubled rank is n+1
    let expected = (k * (doubled.len() + 1)) as i128;
    let deviation = |s: usize| (s as i128 - expected).abs();
    let observed_deviation = deviation(observed as usize);
    let mut as_extreme = 0.0;
    let mut largest_deviation = 0;
    for (s, count) in counts.iter().enumerate().filter(|(_, c)| **c > 0.0) {
        if deviation(s) >= observed_deviation {
            as_extreme += count;
        }
        largest_deviation = largest_deviation.max(deviation(s));
    }
    let most_extreme: f64 = counts
        .iter()
        .enumerate()
        .filter(|(s, c)| **c > 0.0 && deviation(*s) == largest_deviation)
        .map(|(_, c)| c)
        .sum();
    (
        (as_extreme / total).min(1.0),
        (most_extreme / total).min(1.0),
    )
}

/// Normal-approximation two-sided p-value of U (tie-corrected variance, continuity
/// correction) and the one of the most extreme U (0).
fn normal_p(u: f64, n_baseline: usize, n_variant: usize, tie_term: f64) -> (f64, f64) {
    let (n1, n2) = (n_baseline as f64, n_variant as f64);
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        // every value tied: nothing to tell the samples apart
        return (1.0, 1.0);
    }
    let sd = variance.sqrt();
    let standard = Normal::new(0.0, 1.0).expect("the standard normal");
    let p_of = |u: f64| {
        let distance = (u - mean).abs();
        let z = (distance - 0.5).max(0.0) / sd;
        (2.0 * standard.sf(z)).min(1.0)
    };
    (p_of(u), p_of(0.0))
}

/// Pairs up to this many (non-zero) are tested exactly; more by the normal approximation.
pub const SIGNED_RANK_EXACT_LIMIT: usize = 60;

/// The outcome of a Wilcoxon signed-rank test of paired differences (variant against the
/// baseline of the same block).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignedRank {
    /// Pairs with a difference (zero differences are dropped, as Wilcoxon did).
    pub n: usize,
    /// Pairs whose difference was zero.
    pub zeros: usize,
    /// The sum of the ranks of the positive differences (mid-ranks for ties);
    /// `n·(n+1)/4` means no shift.
    pub v: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// The smallest two-sided p-value this many pairs (and ties) can give: `2 / 2^n`.
    pub min_p: f64,
    pub method: PMethod,
    /// Whether the absolute differences have ties.
    pub ties: bool,
}

impl SignedRank {
    /// Whether the ranks point to the variant above the baseline.
    pub fn says_higher(&self) -> bool {
        self.v > (self.n * (self.n + 1)) as f64 / 4.0
    }
}

/// Tests whether paired `differences` (variant minus baseline, here of log values) are
/// centred away from zero (two-sided). Exact up to [`SIGNED_RANK_EXACT_LIMIT`] non-zero pairs
/// — counted over every assignment of signs to the (doubled mid-)ranks, the exact conditional
/// test with ties (R's `wilcox.test(x, paired = TRUE)` without ties) — above it the normal
/// approximation with tie and continuity corrections.
pub fn signed_rank(differences: &[f64]) -> Result<SignedRank, StatsError> {
    check(differences, "differences")?;
    let nonzero: Vec<f64> = differences.iter().copied().filter(|d| *d != 0.0).collect();
    let zeros = differences.len() - nonzero.len();
    let n = nonzero.len();
    if n == 0 {
        return Ok(SignedRank {
            n,
            zeros,
            v: 0.0,
            p_value: 1.0,
            min_p: 1.0,
            method: PMethod::Exact,
            ties: false,
        });
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| nonzero[*a].abs().total_cmp(&nonzero[*b].abs()));
    let mut doubled = vec![0u64; n];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < n {
        let mut end = start;
        while end + 1 < n && nonzero[order[end + 1]].abs() == nonzero[order[start]].abs() {
            end += 1;
        }
        for &index in &order[start..=end] {
            doubled[index] = (start + 1 + end + 1) as u64;
        }
        let t = (end - start + 1) as f64;
        tie_term += t * t * t - t;
        start = end + 1;
    }
    let positive: u64 = doubled
        .iter()
        .zip(&nonzero)
        .filter(|(_, d)| **d > 0.0)
        .map(|(r, _)| r)
        .sum();
    let total: u64 = doubled.iter().sum();
    let (p_value, min_p, method) = if n <= SIGNED_RANK_EXACT_LIMIT {
        // ways[s]: sign assignments whose positive doubled ranks sum to s
        let mut ways = vec![0.0f64; total as usize + 1];
        ways[0] = 1.0;
        for &r in &doubled {
            for s in (r as usize..ways.len()).rev() {
                ways[s] += ways[s - r as usize];
            }
        }
        let all: f64 = ways.iter().sum();
        // E in doubled units is total/2; compare twice the deviations to stay in integers
        let deviation = |s: u64| (2 * s as i128 - total as i128).abs();
        let observed = deviation(positive);
        let as_extreme: f64 = ways
            .iter()
            .enumerate()
            .filter(|(s, c)| **c > 0.0 && deviation(*s as u64) >= observed)
            .map(|(_, c)| c)
            .sum();
        // the most extreme sums are 0 and `total` (every sign alike), one way each
        (
            (as_extreme / all).min(1.0),
            (2.0 / all).min(1.0),
            PMethod::Exact,
        )
    } else {
        let nf = n as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let variance = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
        let standard = Normal::new(0.0, 1.0).expect("the standard normal");
        let p_of = |v: f64| {
            let z = ((v - mean).abs() - 0.5).max(0.0) / variance.sqrt();
            (2.0 * standard.sf(z)).min(1.0)
        };
        (p_of(positive as f64 / 2.0), p_of(0.0), PMethod::Normal)
    };
    Ok(SignedRank {
        n,
        zeros,
        v: positive as f64 / 2.0,
        p_value,
        min_p,
        method,
        ties: tie_term > 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    fn exact(baseline: &[f64], variant: &[f64]) -> MannWhitney {
        let result = mann_whitney(baseline, variant).unwrap();
        assert_eq!(result.method, PMethod::Exact);
        result
    }

    /// The two-sided exact p-value for every U of n₁ = n₂ = n without ties, from the count
    /// table of the U distribution (the number of partitions of U into at most n parts of at
    /// most n: the classical table).
    fn table_p(counts: &[u64], u: usize) -> f64 {
        let total: u64 = counts.iter().sum();
        let lower: u64 = counts[..=u].iter().sum();
        let upper: u64 = counts[u..].iter().sum();
        (2.0 * lower.min(upper) as f64 / total as f64).min(1.0)
    }

    /// Variant samples of n values (1..=2n split) whose U against the rest is `u`: the
    /// variant takes ranks 1..n, then its largest rank moves up by u.
    fn split_with_u(n: usize, u: usize) -> (Vec<f64>, Vec<f64>) {
        let mut variant_ranks: Vec<usize> = (1..=n).collect();
        let mut left = u;
        for i in (0..n).rev() {
            // each variant value can pass at most the n baseline values
            let step = left.min(n);
            variant_ranks[i] += step;
            left -= step;
        }
        assert_eq!(left, 0);
        let baseline: Vec<f64> = (1..=2 * n)
            .filter(|r| !variant_ranks.contains(r))
            .map(|r| r as f64)
            .collect();
        let variant: Vec<f64> = variant_ranks.iter().map(|r| *r as f64).collect();
        (baseline, variant)
    }

    #[test]
    fn exact_small_n_matches_the_u_tables() {
        // counts of U for n1 = n2 = 3 (total C(6,3) = 20), 4 (70), 5 (252)
        let tables: [(usize, &[u64]); 3] = [
            (3, &[1, 1, 2, 3, 3, 3, 3, 2, 1, 1]),
            (4, &[1, 1, 2, 3, 5, 5, 7, 7, 8, 7, 7, 5, 5, 3, 2, 1, 1]),
            (
                5,
                &[
                    1, 1, 2, 3, 5, 7, 9, 11, 14, 16, 18, 19, 20, 20, 19, 18, 16, 14, 11, 9, 7, 5,
                    3, 2, 1, 1,
                ],
            ),
        ];
        for (n, counts) in tables {
            for u in 0..counts.len() {
                let (baseline, variant) = split_with_u(n, u);
                let result = exact(&baseline, &variant);
                assert_eq!(result.u, u as f64, "n = {n}");
                assert!(
                    close(result.p_value, table_p(counts, u), 1e-12),
                    "n = {n}, U = {u}: {} vs {}",
                    result.p_value,
                    table_p(counts, u)
                );
                assert!(!result.ties);
            }
        }
    }

    #[test]
    fn exact_matches_r_wilcox_test() {
        // R: wilcox.test(c(4, 5, 6), c(1, 2, 3))  W = 9, p-value = 0.1
        let r = exact(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert_eq!((r.u, r.p_value), (9.0, 0.1));
        // R: wilcox.test(c(3, 5, 6), c(1, 2, 4))  W = 8, p-value = 0.2
        assert!(close(
            exact(&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]).p_value,
            0.2,
            1e-12
        ));
        // R: wilcox.test(5:8, 1:4)  W = 16, p-value = 0.02857
        let r = exact(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!(close(r.p_value, 2.0 / 70.0, 1e-12));
        // R: wilcox.test(c(4, 5, 7, 8), c(1, 2, 3, 6))  W = 14, p-value = 0.1143
        let r = exact(&[1.0, 2.0, 3.0, 6.0], &[4.0, 5.0, 7.0, 8.0]);
        assert_eq!(r.u, 14.0);
        assert!(close(r.p_value, 8.0 / 70.0, 1e-12));
        // R: wilcox.test(6:10, 1:5)  W = 25, p-value = 0.007937
        let r = exact(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!(close(r.p_value, 0.007_937, 1e-6));
        // unequal sizes, R: wilcox.test(c(10, 11, 12), c(1, 2, 3, 4, 5))  W = 15, p-value = 0.03571
        let r = exact(&[1.0, 2.0, 3.0, 4.0, 5.0], &[10.0, 11.0, 12.0]);
        assert_eq!(r.u, 15.0);
        assert!(close(r.p_value, 0.035_714, 1e-6));
        // the quickstart at 4 threads: system vs jemalloc, 3 vs 3, fully separated
        let r = exact(&[3200.0, 3841.0, 3350.0], &[4237.0, 4067.0, 4022.0]);
        assert_eq!((r.u, r.p_value, r.min_p), (9.0, 0.1, 0.1));
    }

    #[test]
    fn the_smallest_p_of_small_samples() {
        assert_eq!(min_exact_p(3, 3), 0.1);
        assert!(close(min_exact_p(4, 4), 0.028_571, 1e-6));
        assert!(close(min_exact_p(3, 4), 2.0 / 35.0, 1e-12));
        assert_eq!(min_passes_for(0.05), 4);
        assert_eq!(min_passes_for(0.01), 5);
        assert_eq!(min_passes_for(0.2), 3);
        // what the test itself reports as its smallest p, exact and approximated
        for (b, v) in [(4, 4), (3, 5), (25, 25), (26, 26), (40, 30)] {
            let baseline: Vec<f64> = (0..b).map(|i| i as f64).collect();
            let variant: Vec<f64> = (b..b + v).map(|i| i as f64).collect();
            let r = mann_whitney(&baseline, &variant).unwrap();
            assert!(
                close(min_p_without_ties(b, v), r.min_p, 1e-12),
                "{b} vs {v}"
            );
        }
    }

    #[test]
    fn exact_with_ties_counts_the_permutations() {
        // pooled 1, 2, 2, 3: doubled mid-ranks 2, 5, 5, 8. Variant {2, 3} = 5 + 8 = 13;
        // E = 2·5 = 10; the six splits have sums 7, 7, 10, 10, 13, 13: |dev| >= 3 in 4 of 6
        let r = exact(&[1.0, 2.0], &[2.0, 3.0]);
        assert!(r.ties);
        assert_eq!(r.u, 3.5);
        assert!(close(r.p_value, 4.0 / 6.0, 1e-12));
        assert!(close(r.min_p, 4.0 / 6.0, 1e-12));
        // all values tied: nothing tells the samples apart
        let r = exact(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]);
        assert_eq!((r.p_value, r.min_p, r.u), (1.0, 1.0, 4.5));
    }

    #[test]
    fn normal_approximation_for_large_samples() {
        // x = 1..=30, y = x + 15.5: no ties, U_y = 795, mean 450, var = 900·61/12 = 4575;
        // z = (795 - 450 - 0.5)/√4575 = 5.09323; p = 2·(1 - Φ(z)) = 3.5201e-7
        // (R: wilcox.test(y, x, exact = FALSE)$p.value)
        let x: Vec<f64> = (1..=30).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| v + 15.5).collect();
        let r = mann_whitney(&x, &y).unwrap();
        assert_eq!(r.method, PMethod::Normal);
        assert_eq!(r.u, 795.0);
        assert!(close(r.p_value / 3.5201e-7, 1.0, 1e-3), "{}", r.p_value);
        assert!(r.min_p < 1e-10);
    }

    #[test]
    fn normal_and_exact_agree_near_the_limit() {
        // 25 vs 25 is still exact: the approximation must be close to it there
        for shift in [0.0, 3.5, 6.5, 9.5] {
            let x: Vec<f64> = (0..25).map(|i| f64::from(i) * 1.5).collect();
            let y: Vec<f64> = x.iter().map(|v| v + shift + 0.25).collect();
            let exact = mann_whitney(&x, &y).unwrap();
            let ranks = Ranks::of(&x, &y);
            let (approx, _) = normal_p(exact.u, 25, 25, ranks.tie_term);
            assert!(
                close(exact.p_value, approx, 0.01 + 0.05 * exact.p_value),
                "shift {shift}: exact {} vs normal {approx}",
                exact.p_value
            );
        }
    }

    #[test]
    #[allow(clippy::approx_constant)] // 3.14 is a datum of R's example, not π
    fn signed_rank_matches_r_wilcox_test_paired() {
        // R: wilcox.test(c(1.83,0.50,1.62,2.48,1.68,1.88,1.55,3.06,1.30),
        //                c(0.878,0.647,0.598,2.05,1.06,1.29,1.06,3.14,1.29), paired = TRUE)
        // V = 40, p-value = 0.03906
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let d: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a - b).collect();
        let t = signed_rank(&d).unwrap();
        assert_eq!(t.n, 9);
        assert_eq!(t.v, 40.0);
        assert!(close(t.p_value, 0.03906, 1e-4), "{t:?}");
        assert!(t.says_higher());
        assert!(close(t.min_p, 2.0 / 512.0, 1e-12));
    }

    #[test]
    fn signed_rank_small_samples_and_zeros() {
        // five pairs, all up: the most extreme outcome, p = 2/32 = 0.0625, never below 0.05
        let t = signed_rank(&[0.1, 0.2, 0.3, 0.4, 0.5]).unwrap();
        assert!(close(t.p_value, 0.0625, 1e-12), "{t:?}");
        assert_eq!(t.min_p, t.p_value);
        // six: 2/64
        let t = signed_rank(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]).unwrap();
        assert!(close(t.p_value, 0.03125, 1e-12));
        // zeros are dropped; all zero tells nothing
        let t = signed_rank(&[0.0, 0.0, 0.1]).unwrap();
        assert_eq!((t.n, t.zeros), (1, 2));
        assert_eq!(signed_rank(&[0.0, 0.0]).unwrap().p_value, 1.0);
        // symmetric: no shift
        let t = signed_rank(&[-0.1, 0.1, -0.2, 0.2]).unwrap();
        assert!(close(t.p_value, 1.0, 1e-12), "{t:?}");
        assert!(!t.says_higher());
    }

    #[test]
    fn signed_rank_normal_and_exact_agree_near_the_limit() {
        let d: Vec<f64> = (0..SIGNED_RANK_EXACT_LIMIT)
            .map(|i| {
                if i % 3 == 0 {
                    -(i as f64 + 1.0)
                } else {
                    i as f64 + 1.0
                }
            })
            .collect();
        let exact = signed_rank(&d).unwrap();
        let mut more = d.clone();
        more.push(1000.0);
        let normal = signed_rank(&more).unwrap();
        assert_eq!(exact.method, PMethod::Exact);
        assert_eq!(normal.method, PMethod::Normal);
        assert!(
            exact.p_value < 0.05 && normal.p_value < 0.05,
            "{exact:?} {normal:?}"
        );
    }
}
