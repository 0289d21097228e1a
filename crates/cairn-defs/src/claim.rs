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
    /// `for="most"` or `for="all"`.
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub quantifier: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
