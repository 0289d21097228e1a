//! Dataset definitions: what a generator loads, and the dataset step that loads it into one
//! server and snapshots the result.

use serde::{Deserialize, Serialize};

use crate::server::ServerDef;
use crate::value::Props;

/// A plan's `dataset`: its generator node, e.g. `sysbench tables=4 rows=10000 engine="InnoDB"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetDef {
    /// The generator node's name: `sysbench`, `smack` or `sqlbench`.
    pub generator: String,
    /// The generator node's properties, e.g. `tables`, `rows`, `engine`.
    #[serde(default)]
    pub props: Props,
}

/// The definition of a dataset step: one dataset loaded into one server. The server is part
/// of it because the snapshot depends on the server's build and options.
///
/// Serialises as `{"generator","props","server"}` (the dataset's fields flattened beside the
/// server), as dataset keys have always held it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetStepDef {
    /// What to load.
    #[serde(flatten)]
    pub dataset: DatasetDef,
    /// The server it is loaded into.
    pub server: ServerDef,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_dataset_is_flattened_beside_the_server() {
        let def = DatasetStepDef {
            dataset: DatasetDef {
                generator: "sysbench".into(),
                props: json!({"tables": 2, "rows": 1000})
                    .as_object()
                    .unwrap()
                    .clone(),
            },
            server: ServerDef::default(),
        };
        let v = serde_json::to_value(&def).unwrap();
        assert_eq!(v["generator"], "sysbench");
        assert_eq!(v["props"]["rows"], 1000);
        assert_eq!(v["server"]["executor"], json!(null));
        assert_eq!(v.as_object().unwrap().len(), 3);
        let back: DatasetStepDef = serde_json::from_value(v).unwrap();
        assert_eq!(back, def);
    }
}
