//! Statistics of benchmark samples: what cairn's analysis steps compute from the figures of
//! recorded trials. Pure computation — no I/O, no engine, no clock — so every result is a
//! function of its inputs and a seed, and a report renders byte-identically every time.
//!
//! A *sample* is the values of one figure (e.g. `tps`) for one variant at one matrix point,
//! one value per pass (in any order: no result depends on it). From samples the crate computes:
//!
//! | what | where | method |
//! |---|---|---|
//! | summary: n, median, mean, min, max, sd, CV, 95% CIs | [`summary`] | median CI from order statistics (distribution-free, from n = 6), mean CI Student t |
//! | ratio of medians variant / baseline, 95% CI | [`bootstrap`] | seeded percentile bootstrap (PCG-64, 10 000 resamples by default) |
//! | Mann–Whitney U, two-sided p | [`rank_test`] | exact permutation count for n₁ + n₂ ≤ 50 (ties included), else normal with tie and continuity corrections |
//! | verdict: faster / slower / no significant difference / inconclusive | [`mod@compare`] | rule below |
//! | passes needed to resolve a difference | [`compare::passes_needed`] | from the pooled CV, and at least what the rank test needs |
//! | claim check: holds / fails / inconclusive | [`claim`] | rule below |
//! | adaptive passes: which points need another pass | [`adaptive`] | relative t-CI half-width against `until-ci` |
//! | an effect published vs reproduced: consistent / differs / undecided | [`replication`] | the ratio of the two effects, bootstrap CI from both campaigns' resamples; rule in the module |
//! | many comparisons: Holm's step-down levels | [`multiple`] | α/(m − i) in increasing order of p |
//! | a trend: an effect grows / shrinks from one point to another: holds / fails / inconclusive | [`trend`] | the ratio of the two points' effects, bootstrap CI from both points' resamples; rule in the module |
//! | drift across passes in run order; outlying passes | [`drift`] | exact Mann–Kendall test; modified z-score from the MAD above 3.5 |
//! | a sequential design: looks, boundaries, when passes stop; its simulation | [`sequential`] | Lan–DeMets O'Brien–Fleming-type α spending, boundaries by numerical integration |
//!
//! # Honest small samples
//!
//! The verdict of a comparison ([`mod@compare`] has the full rule):
//! - **inconclusive** when the rank test cannot reach α at these sample sizes — with 3 vs 3
//!   passes the smallest two-sided exact p is 2/20 = 0.1, so three passes never decide,
//!   however far apart the values (4 vs 4: 2/70 ≈ 0.029 is the least for α = 0.05);
//! - **faster / slower** (in the figure's better direction) only when the rank test is
//!   significant *and* the ratio's bootstrap CI excludes 1 on the same side;
//! - **no significant difference** only when the test is not significant *and* the ratio's
//!   CI lies inside the equivalence band (±5% by default): the data rule a difference out;
//! - **inconclusive** otherwise (the evidence disagrees, or a difference is not ruled out).
//!
//! Every comparison states how many passes per variant the observed noise would need to
//! resolve a difference of a given size (the claim's, or the equivalence band's).
//!
//! A claim ("faster by at least 10%", [`claim`]) **holds** only if the whole CI of the
//! speed-up clears the claimed size and the comparison is significant in that direction;
//! it **fails** if the whole CI contradicts it; it is **inconclusive** otherwise, and always
//! when the passes are too few for the rank test or for the claim's size at the observed
//! noise — noisy data never holds.
//!
//! # Reproducible
//!
//! The bootstrap is the only randomness. It runs on PCG-64 from an explicit seed with this
//! crate's own index draw, from samples sorted with a total order, so the same values,
//! settings and seed give the same bits on every run; a test pins a CI's literal bits.

pub mod adaptive;
pub mod bootstrap;
pub mod claim;
pub mod compare;
pub mod drift;
mod error;
pub mod multiple;
pub mod profile;
pub mod rank_test;
pub mod replication;
mod sample;
pub mod sequential;
pub mod summary;
pub mod trend;

pub use adaptive::{next_passes, Action, PassDecision, PassRule, Why};
pub use bootstrap::{median_ratio, paired_median_ratio, BootstrapSettings, RatioEstimate};
pub use claim::{
    check_claim, check_claim_on, Claim, ClaimCheck, ClaimDirection, ClaimReason, ClaimVerdict,
    Samples,
};
pub use compare::{
    compare, compare_paired, passes_needed, Comparison, Criteria, Paired, PassesNeeded, Reason,
    Verdict,
};
pub use error::StatsError;
pub use rank_test::{mann_whitney, signed_rank, MannWhitney, PMethod, SignedRank};
pub use replication::{replicate, Agreement, AgreementReason, Effect, Replication};
pub use summary::{summarize, Interval, Summary, CONFIDENCE};
pub use trend::{check_trend, TrendCheck, TrendDirection, TrendReason};
