//! Report definitions: what a plan's `report` node puts into the report's key — its title
//! and the format it names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The definition of a report step. Which analyses it shows are its inputs, not part of it.
///
/// Serialises as `{"format","title"}`, `format` null when the plan names none, as report
/// keys have always held it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportDef {
    /// `format "markdown"` or `"html"`, as the plan wrote it. Every format is rendered
    /// whichever is named; it is in the key as the plan's own words.
    pub format: Option<String>,
    /// The study's title (its name when it has none): the report's heading, so retitling
    /// re-renders the report and nothing else.
    pub title: String,
    /// Declared reuse (`measured-by`): each trials block whose measurements another study
    /// made, with that study's name, for the report to say so. Absent when there is none, so
    /// the keys of other reports do not depend on it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reused: BTreeMap<String, String>,
    /// The pass rule of each trials block, as the plan resolved it, for the report's design
    /// section (what the rule was, beside the passes it chose).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passes: BTreeMap<String, PassRule>,
    /// The dataset each trials block loads (blocks without one are absent), for the design
    /// section.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub datasets: BTreeMap<String, crate::DatasetDef>,
    /// The plan's parameters (`param`) with the value the plan was read with and the
    /// default, for the design section. Whether `--set` gave the value is not here: the
    /// default and the same value given explicitly are one report. Absent without `param`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, ParamValue>,
}

/// A plan parameter's value and its declared default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParamValue {
    pub value: String,
    pub default: String,
}

/// A trials block's `passes`: at least `min`, at most `max`, and what decides in between.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassRule {
    pub min: u32,
    pub max: u32,
    /// `until-ci`: the relative half-width of the watched figure's CI that ends a point's passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ci: Option<f64>,
    /// `until="decided"`: a point's passes go on while a question asked of it is undecided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub until_decided: bool,
    /// The figure `until-ci` watches.
    pub metric: String,
}

impl PassRule {
    /// The rule for a reader: `4 to 12 passes per cell: after 4, another …`.
    pub fn describe(&self) -> String {
        if self.max <= self.min {
            let s = if self.min == 1 { "" } else { "es" };
            return format!("{} pass{s} per cell, a fixed number", self.min);
        }
        let more = if self.until_decided {
            "another pass of a point while a comparison or claim at that point is undecided, under a sequential design that keeps the error rates over every look".to_string()
        } else if let Some(ci) = self.until_ci {
            format!(
                "another pass of a point until the CI of its median `{}` is within ±{}%",
                self.metric,
                ci * 100.0
            )
        } else {
            return format!(
                "{} passes per cell (the passes beyond {} up to {} are never needed: no `until`)",
                self.min, self.min, self.max
            );
        };
        format!(
            "{} to {} passes per cell: after {}, {more}",
            self.min, self.max, self.min
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_null_when_absent() {
        let r = ReportDef {
            format: None,
            title: "Allocators".into(),
            reused: BTreeMap::new(),
            passes: BTreeMap::new(),
            datasets: BTreeMap::new(),
            params: BTreeMap::new(),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"format":null,"title":"Allocators"}"#);
        assert_eq!(serde_json::from_str::<ReportDef>(&text).unwrap(), r);
    }

    #[test]
    fn pass_rules_read_as_a_sentence() {
        let rule = |min, max, until_decided, until_ci| PassRule {
            min,
            max,
            until_ci,
            until_decided,
            metric: "tps".into(),
        };
        assert_eq!(
            rule(3, 3, false, None).describe(),
            "3 passes per cell, a fixed number"
        );
        assert!(rule(4, 12, true, None)
            .describe()
            .starts_with("4 to 12 passes per cell: after 4, another pass of a point while"));
        assert!(rule(3, 9, false, Some(0.02))
            .describe()
            .ends_with("CI of its median `tps` is within ±2%"));
    }
}
