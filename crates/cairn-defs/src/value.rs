//! The scalar values a plan writes (options, properties, parameters) as they appear in
//! definitions: plain JSON scalars.
//!
//! A plan's values are booleans, integers, floats and strings, and serialise untagged, so a
//! `serde_json::Value` holds them with the same JSON text; definitions use it so that this
//! crate needs no plan parser.

use serde_json::{Map, Value};

/// `key=value` properties or parameters, sorted by key.
pub type Props = Map<String, Value>;

/// A scalar as a person (or a config file) writes it: strings without quotes, numbers and
/// booleans as in the plan (`2.0` becomes `2`, as the plan's own values display). `None` for
/// null, arrays and objects, which no plan value produces.
pub fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            i.to_string()
        } else if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            // a float: Rust's shortest round-trip display, like the plan's `Value::Float`
            n.as_f64().map(|f| f.to_string()).unwrap_or_default()
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_read_as_written() {
        assert_eq!(value_text(&json!("256M")).as_deref(), Some("256M"));
        assert_eq!(value_text(&json!(512)).as_deref(), Some("512"));
        assert_eq!(value_text(&json!(2.0)).as_deref(), Some("2"));
        assert_eq!(value_text(&json!(0.5)).as_deref(), Some("0.5"));
        assert_eq!(value_text(&json!(false)).as_deref(), Some("false"));
        assert_eq!(value_text(&json!(null)), None);
    }
}
