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
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"format":null,"title":"Allocators"}"#);
        assert_eq!(serde_json::from_str::<ReportDef>(&text).unwrap(), r);
    }
}
