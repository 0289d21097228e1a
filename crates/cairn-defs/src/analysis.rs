//! Analysis definitions: which analysis a plan's `analysis` node asks for (`table`,
//! `compare`, `plot`, `scaling`) and its properties, with typed reads of the properties the
//! analyses know.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::value::Props;

/// The definition of an analysis step, e.g. `table metric="tps" rows="server"`.
///
/// Serialises as `{"kind","props"}`, as analysis keys have always held it. The properties
/// stay a free map: an analysis checks them against the trials it reads (and names a
/// property it does not take), which a fixed set of fields could not report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnalysisDef {
    /// The analysis node's kind as the plan wrote it: `table`, `compare`, `plot` or
    /// `scaling`.
    pub kind: String,
    /// The kind node's properties, e.g. `metric`, `rows`, `columns`, `baseline`.
    #[serde(default)]
    pub props: Props,
    /// The sequential design of the trials it reads (`passes … until="decided"`): its
    /// comparisons decide at the level of the look their passes stand at. Absent otherwise,
    /// so analyses of other plans keep their keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// `servers "a" "b"`: the only servers whose trials it reads (empty: every server's).
    /// The graph gives it only those trials; the definition says so for the report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// `where threads=8 …`: the parameter values of the only trials it reads.
    #[serde(default, skip_serializing_if = "Props::is_empty")]
    pub filter: Props,
    /// `exclude threads=64 server="pg"`, one map per `exclude`: the cells it leaves out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<Props>,
}

/// The looks of `passes min max until="decided"`: after every block from `min` to `max`
/// passes per side (the design itself is `cairn_analysis::sequential`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequential {
    pub min: u32,
    pub max: u32,
}

impl AnalysisDef {
    /// `metric`: the figure shown (`tps`).
    pub fn metric(&self) -> Option<&str> {
        self.text("metric")
    }

    /// `rows`: the dimension down a table (`server`, `trials`, `node` or a parameter).
    pub fn rows(&self) -> Option<&str> {
        self.text("rows")
    }

    /// `columns`: the dimension across a table.
    pub fn columns(&self) -> Option<&str> {
        self.text("columns")
    }

    /// `facet`: a third dimension of a table, one table per value (`cpus`).
    pub fn facet(&self) -> Option<&str> {
        self.text("facet")
    }

    /// `baseline`: the server the others are compared with.
    pub fn baseline(&self) -> Option<&str> {
        self.text("baseline")
    }

    /// `x`: the dimension along a chart's x axis.
    pub fn x(&self) -> Option<&str> {
        self.text("x")
    }

    /// `style`: how a chart draws its series (`line`, `bar`).
    pub fn style(&self) -> Option<&str> {
        self.text("style")
    }

    /// `paired`: `Ok(false)` when absent; `Err` holds a value that is not a boolean.
    pub fn paired(&self) -> Result<bool, &Value> {
        match self.props.get("paired") {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(other),
        }
    }

    /// The first property (in name order) that `accepted` does not list.
    pub fn unaccepted_prop(&self, accepted: &[&str]) -> Option<&str> {
        self.props
            .keys()
            .map(String::as_str)
            .find(|k| !accepted.contains(k))
    }

    /// A property that names something; a value of another type reads as absent, as if the
    /// plan had not written it (the analysis then asks for it or takes its default).
    fn text(&self, name: &str) -> Option<&str> {
        self.props.get(name).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(kind: &str, props: Value) -> AnalysisDef {
        AnalysisDef {
            kind: kind.into(),
            props: props.as_object().unwrap().clone(),
            ..AnalysisDef::default()
        }
    }

    #[test]
    fn serialises_as_kind_and_props() {
        let d = def("table", json!({"metric": "tps", "rows": "server"}));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"kind":"table","props":{"metric":"tps","rows":"server"}}"#
        );
        let back: AnalysisDef = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn typed_reads_of_the_properties() {
        let d = def(
            "table",
            json!({"metric": "tps", "columns": 4, "baseline": "system", "paired": true}),
        );
        assert_eq!(d.metric(), Some("tps"));
        assert_eq!(d.columns(), None, "a number does not name a dimension");
        assert_eq!((d.rows(), d.x(), d.style()), (None, None, None));
        assert_eq!(d.baseline(), Some("system"));
        assert_eq!(d.paired(), Ok(true));
        assert_eq!(def("plot", json!({})).paired(), Ok(false));
        assert_eq!(
            def("table", json!({"paired": "yes"})).paired(),
            Err(&json!("yes"))
        );
        assert_eq!(
            d.unaccepted_prop(&["metric", "baseline", "paired"]),
            Some("columns")
        );
        assert_eq!(
            d.unaccepted_prop(&["metric", "columns", "baseline", "paired"]),
            None
        );
    }
}
