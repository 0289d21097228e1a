//! Claim definitions: the finding a plan's `claim` node states — a figure, the matrix point,
//! the expected order of two servers and its size or tolerance.

use serde::{Deserialize, Serialize};

use crate::value::Props;

/// The definition of a claim step, e.g. `metric "tps"; where threads=4; expect "a > b" by="5%"`.
///
/// Serialises as `{"metric","where","expect","within"}` with `within` null when absent, as
/// claim keys have always held it, and `"by"` only when written (it came later: claims
/// without it keep their keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaimDef {
    /// The figure compared, as the plan wrote it (`tps`).
    pub metric: String,
    /// `where`: the matrix point the claim is at, e.g. `threads=4`.
    #[serde(rename = "where", default)]
    pub filter: Props,
    /// The expectation as written: two servers around `>`, `<`, `>=` or `<=`.
    pub expect: String,
    /// The tolerance of `>=` and `<=`, a fraction (`within="5%"` is 0.05).
    pub within: Option<f64>,
    /// The least size of `>` and `<`, a fraction (`by="5%"` is 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<f64>,
    /// A band's centre, a fraction (`about="50%"` is 0.5): the left side about that much
    /// above (`>`) or below (`<`) the right; with `tolerance`, its half-width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// The sequential design of the trials it reads, as for an analysis
    /// ([`crate::analysis::Sequential`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::analysis::Sequential>,
    /// `operations "select" …`: the claim is checked on each per-operation seconds figure of
    /// these tests (empty: every test), its `metric` then the family's (`<test>_s`); with
    /// `quantifier`, how many of them it must hold on. Absent for a claim about one figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<Vec<String>>,
    /// `for="most"` or `for="all"`: of the operations, or of the values of `over`.
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub quantifier: Option<String>,
    /// `over="io-scheduler"`: the claim is checked at each value of this parameter of its
    /// trials (one verdict per value), and `quantifier` says at how many it must hold.
    /// Absent for a claim at one point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// `trend="grows"` or `"shrinks"`: the gain of one side over the other along the
    /// parameter `x`, from its value `from` to `to` (absent: its lowest and highest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A fraction as a plan writes it as a percentage: `0.55` → `"55%"`. Rounded to a millionth
/// of a percent, because 0.55 × 100 is 55.00000000000001 in floating point.
pub fn percent_as_written(fraction: f64) -> String {
    format!("{}%", (fraction * 100.0 * 1e6).round() / 1e6)
}

/// The three words of an expectation `"a OP b"` (sides and operator, separated by spaces);
/// `None` unless it has exactly three.
pub fn expectation_words(text: &str) -> Option<[&str; 3]> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.try_into().ok()
}

/// A side of an expectation, `[block:]server[pins]`: its trials block, its server and what
/// follows its `[` (the pins and the closing `]`, as written), each as written.
pub fn side_parts(side: &str) -> (Option<&str>, &str, Option<&str>) {
    let (block, rest) = match side.split_once(':') {
        Some((block, rest)) => (Some(block), rest),
        None => (None, side),
    };
    match rest.split_once('[') {
        Some((server, pins)) => (block, server, Some(pins)),
        None => (block, rest, None),
    }
}

/// Which way a claim's operator points, as far as a band cares: a band sizes a difference,
/// so it goes with `>` or `<`, never with `>=`, `<=` or `==` (which claim none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandSide {
    /// `>`: the left side about that much higher.
    Above,
    /// `<`: the left side about that much lower.
    Below,
    /// `>=`, `<=`, `==`: a tolerance operator.
    NoDifference,
}

/// What a band (`about` ± `tolerance`) on a claim can get wrong. The rules live here once:
/// the plan's parser points at the spans of each, and the claim step refuses a definition
/// from anywhere else (a bundle's) by the same rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandProblem {
    /// `about` without `tolerance`: a band has a width.
    NoWidth,
    /// `tolerance` without `about`: a width without a centre.
    NoCentre,
    /// A band beside `by` or `within`: a claim has one size.
    SecondSize,
    /// The tolerance is wider than the centre (or the centre is not above 0): the band
    /// reaches past no difference, so it claims no direction.
    CrossesNoDifference,
    /// A band with a tolerance operator.
    NotADifference,
    /// `<` by `about + tolerance` of 100% or more: a figure cannot fall that far.
    BelowNothing,
}

impl BandProblem {
    /// The problem in words, with the band's numbers where they matter.
    pub fn message(self, about: f64, tolerance: f64) -> String {
        let pct = percent_as_written;
        match self {
            BandProblem::NoWidth => "`about` needs a `tolerance`: a band has a width".into(),
            BandProblem::NoCentre => "`tolerance` is the width of a band around `about`".into(),
            BandProblem::SecondSize => "a band (`about`, `tolerance`) is its claim's size".into(),
            BandProblem::CrossesNoDifference => format!(
                "a band of {} ± {} crosses no difference, so it claims no direction",
                pct(about),
                pct(tolerance)
            ),
            BandProblem::NotADifference => {
                "a band sizes a difference: it goes with `>` or `<`".into()
            }
            BandProblem::BelowNothing => format!(
                "`<` by {} ± {} reaches 100% or more below: a figure cannot fall that far",
                pct(about),
                pct(tolerance)
            ),
        }
    }

    /// The fix in a few words (the plan's diagnostics say more, beside the spans).
    pub fn remedy(self) -> &'static str {
        match self {
            BandProblem::NoWidth | BandProblem::NoCentre => {
                "write both about=\"50%\" and tolerance=\"10%\""
            }
            BandProblem::SecondSize => "drop `by`/`within`",
            BandProblem::CrossesNoDifference => "make the tolerance at most `about`",
            BandProblem::NotADifference => "write `>` or `<`",
            BandProblem::BelowNothing => "keep about + tolerance under 100%",
        }
    }
}

/// Every problem of a claim's band, in the order a reader fixes them; empty for a good band
/// and for a claim without one. `second_size`: the claim also has `by` or `within`.
pub fn band_problems(
    about: Option<f64>,
    tolerance: Option<f64>,
    second_size: bool,
    side: BandSide,
) -> Vec<BandProblem> {
    let (about, tolerance) = match (about, tolerance) {
        (None, None) => return Vec::new(),
        (Some(_), None) => return vec![BandProblem::NoWidth],
        (None, Some(_)) => return vec![BandProblem::NoCentre],
        (Some(a), Some(t)) => (a, t),
    };
    let mut problems = Vec::new();
    if second_size {
        problems.push(BandProblem::SecondSize);
    }
    if !(tolerance <= about && about > 0.0 && about.is_finite()) {
        problems.push(BandProblem::CrossesNoDifference);
    }
    match side {
        BandSide::NoDifference => problems.push(BandProblem::NotADifference),
        BandSide::Below if about + tolerance >= 1.0 => problems.push(BandProblem::BelowNothing),
        _ => {}
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_percentage_reads_as_the_plan_wrote_it() {
        assert_eq!(percent_as_written(0.55), "55%");
        assert_eq!(percent_as_written(0.075), "7.5%");
        assert_eq!(percent_as_written(0.0), "0%");
    }

    #[test]
    fn within_is_null_when_absent_and_by_is_left_out() {
        let mut c = ClaimDef {
            metric: "tps".into(),
            filter: json!({"threads": 4}).as_object().unwrap().clone(),
            expect: "a >= b".into(),
            ..ClaimDef::default()
        };
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"metric": "tps", "where": {"threads": 4}, "expect": "a >= b", "within": null})
        );
        c.expect = "a > b".into();
        c.by = Some(0.05);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["by"], json!(0.05));
        assert_eq!(v["within"], json!(null));
        assert_eq!(serde_json::from_value::<ClaimDef>(v).unwrap(), c);
    }

    #[test]
    fn a_band_needs_both_edges_one_size_a_direction_and_room_below() {
        use BandProblem::*;
        let above = BandSide::Above;
        assert_eq!(band_problems(None, None, true, above), vec![]);
        assert_eq!(band_problems(Some(0.5), Some(0.1), false, above), vec![]);
        assert_eq!(band_problems(Some(0.5), None, false, above), vec![NoWidth]);
        assert_eq!(band_problems(None, Some(0.1), false, above), vec![NoCentre]);
        assert_eq!(
            band_problems(Some(0.1), Some(0.2), true, BandSide::NoDifference),
            vec![SecondSize, CrossesNoDifference, NotADifference]
        );
        assert_eq!(
            band_problems(Some(0.6), Some(0.5), false, BandSide::Below),
            vec![BelowNothing]
        );
        assert_eq!(band_problems(Some(0.6), Some(0.5), false, above), vec![]);
        assert!(CrossesNoDifference
            .message(0.1, 0.2)
            .contains("10% ± 20% crosses no difference"));
    }
}
