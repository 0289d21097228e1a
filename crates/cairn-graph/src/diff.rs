//! Field-level differences between two JSON values, for `explain`: path, old → new.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Dotted path, e.g. `definition.env.FOO` or `definition.params.threads`.
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// Every leaf that differs between `old` and `new`, in path order.
pub fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk(String::new(), Some(old), Some(new), &mut out);
    out
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(path: String, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                walk(join(&path, k), a.get(k), b.get(k), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Change {
            path,
            old: a.cloned(),
            new: b.cloned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_changed_added_removed_leaves() {
        let a = json!({"run": "x", "env": {"A": "1", "B": "2"}});
        let b = json!({"run": "y", "env": {"A": "1", "C": "3"}});
        let d = diff(&a, &b);
        let paths: Vec<_> = d.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["env.B", "env.C", "run"]);
        assert_eq!(d[2].old, Some(json!("x")));
        assert_eq!(d[2].new, Some(json!("y")));
    }
}
