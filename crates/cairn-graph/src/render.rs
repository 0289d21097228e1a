//! `cairn graph`: the step DAG as Graphviz dot or Mermaid text.

use crate::resolve::StepGraph;

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

pub fn dot(g: &StepGraph) -> String {
    let mut out = format!("digraph \"{}\" {{\n  rankdir=LR;\n", quote(&g.study));
    for s in &g.steps {
        let shape = if s.measure { "doubleoctagon" } else { "box" };
        out.push_str(&format!(
            "  n{} [label=\"{}\" shape={} tooltip=\"{}\"];\n",
            s.id,
            quote(&s.address),
            shape,
            s.kind.as_str()
        ));
    }
    for s in &g.steps {
        for i in &s.inputs {
            out.push_str(&format!("  n{} -> n{};\n", i.from, s.id));
        }
    }
    out.push_str("}\n");
    out
}

pub fn mermaid(g: &StepGraph) -> String {
    let mut out = String::from("flowchart LR\n");
    for s in &g.steps {
        let label = s.address.replace('"', "#quot;");
        if s.measure {
            out.push_str(&format!("  n{}{{{{\"{}\"}}}}\n", s.id, label));
        } else {
            out.push_str(&format!("  n{}[\"{}\"]\n", s.id, label));
        }
    }
    for s in &g.steps {
        for i in &s.inputs {
            out.push_str(&format!("  n{} --> n{}\n", i.from, s.id));
        }
    }
    out
}
