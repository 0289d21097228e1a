//! Matrix expansion: parameter axes → the points of their cartesian product, and the
//! human addresses of expanded steps (`load[size=s,threads=2]#3`).

use std::collections::BTreeMap;

use cairn_plan::{Param, Value};

/// Every point of the product of `axes`, in declaration order (first axis slowest).
/// No axes → one empty point.
pub fn points(axes: &[Param]) -> Vec<BTreeMap<String, Value>> {
    let mut out = vec![BTreeMap::new()];
    for axis in axes {
        let mut next = Vec::with_capacity(out.len() * axis.values.len());
        for point in &out {
            for v in &axis.values {
                let mut p = point.clone();
                p.insert(axis.name.value.clone(), v.value.clone());
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// `name`, `name[a=1,b=x]`, with `#pass` appended when the step has several passes.
/// Only axes with more than one value appear, so a one-valued setting stays quiet.
pub fn address(
    name: &str,
    point: &BTreeMap<String, Value>,
    shown_axes: &[&str],
    pass: u32,
    passes: u32,
) -> String {
    let mut s = name.to_string();
    let shown: Vec<String> = point
        .iter()
        .filter(|(k, _)| shown_axes.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !shown.is_empty() {
        s.push('[');
        s.push_str(&shown.join(","));
        s.push(']');
    }
    if passes > 1 {
        s.push('#');
        s.push_str(&pass.to_string());
    }
    s
}

/// Names of the axes with more than one value.
pub fn varying_axes(axes: &[Param]) -> Vec<&str> {
    axes.iter()
        .filter(|a| a.values.len() > 1)
        .map(|a| a.name.value.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_plan::{Loc, SourceId, Sp};

    fn sp<T>(v: T) -> Sp<T> {
        Sp::new(
            v,
            Loc {
                source: SourceId(0),
                span: (0, 0).into(),
            },
        )
    }

    fn axis(name: &str, vals: &[i64]) -> Param {
        Param {
            name: sp(name.to_string()),
            values: vals.iter().map(|v| sp(Value::Int(*v))).collect(),
        }
    }

    #[test]
    fn product_in_declaration_order() {
        let p = points(&[axis("a", &[1, 2]), axis("b", &[3, 4, 5])]);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0]["a"], Value::Int(1));
        assert_eq!(p[0]["b"], Value::Int(3));
        assert_eq!(p[5]["a"], Value::Int(2));
        assert_eq!(p[5]["b"], Value::Int(5));
        assert_eq!(points(&[]).len(), 1);
    }

    #[test]
    fn addresses_show_only_varying_axes_and_passes() {
        let axes = [axis("threads", &[1, 2]), axis("rows", &[10])];
        let p = &points(&axes)[1];
        assert_eq!(
            address("x", p, &varying_axes(&axes), 2, 3),
            "x[threads=2]#2"
        );
        assert_eq!(address("x", p, &[], 1, 1), "x");
    }
}
