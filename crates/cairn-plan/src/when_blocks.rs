//! `when scale="large" { … }` at a file's top level: nodes a plan has only at some parameter
//! values (a claim on servers only the large scale measures, an import of its builds).
//!
//! A block whose conditions all hold is replaced by its nodes; any other block is dropped.
//! This runs after substitution, so a typo in a block the current values drop is still
//! reported, and before the file's nodes are read, so the kept nodes are read as if written
//! at the top level.

use kdl::{KdlDocument, KdlNode};

use crate::diagnostics::{problem, Reporter};
use crate::model::{PlanParam, SourceId};
use crate::params::{condition, loc, Readable};

/// Replaces each top-level `when` block of `doc` by its nodes when it holds, or removes it.
pub(crate) fn splice(
    r: &mut Reporter,
    id: SourceId,
    doc: &mut KdlDocument,
    params: &mut [PlanParam],
) {
    let nodes = std::mem::take(doc.nodes_mut());
    let mut kept = Vec::with_capacity(nodes.len());
    for node in nodes {
        if node.name().value() != "when" {
            kept.push(node);
            continue;
        }
        if let Some(mut inner) = block(r, id, &node, params) {
            splice(r, id, &mut inner, params);
            kept.extend(inner.nodes().iter().cloned());
        }
    }
    *doc.nodes_mut() = kept;
}

/// The nodes of one `when` block if every condition holds; `None` when one does not or the
/// block is malformed (reported).
fn block(
    r: &mut Reporter,
    id: SourceId,
    node: &KdlNode,
    params: &mut [PlanParam],
) -> Option<KdlDocument> {
    let at = loc(id, node.name().span());
    let example = "`when scale=\"large\" { claim … }`: nodes the plan has while `scale` is `large`";
    for e in node.entries().iter().filter(|e| e.name().is_none()) {
        let p = problem(
            "bad_value",
            "a `when` block takes parameters' values (`name=\"value\"`), not arguments",
        )
        .label(loc(id, e.span()), "not `name=\"value\"`")
        .help(example);
        r.push(p);
    }
    let conditions: Vec<_> = node
        .entries()
        .iter()
        .filter(|e| e.name().is_some())
        .collect();
    if conditions.is_empty() {
        let p = problem("missing", "a `when` block names no parameter value")
            .label(at, "needs at least one `name=\"value\"`")
            .help(example);
        r.push(p);
    }
    let Some(children) = node.children() else {
        let p = problem("missing", "a `when` block holds no nodes")
            .label(at, "needs `{ … }`")
            .help(example);
        r.push(p);
        return None;
    };
    for inner in children.nodes() {
        if inner.name().value() == "param" {
            let p = problem(
                "bad_value",
                "a parameter is declared at a file's top level, not inside a `when` block",
            )
            .label(loc(id, inner.name().span()), "declared inside `when`")
            .help("move it out of the block; a `param`'s own `when` gives it a default at some values");
            r.push(p);
        }
    }
    let mut holds = !conditions.is_empty();
    for c in conditions {
        // every condition is checked, even after one fails
        holds &= condition(r, id, c, params, Readable::InScope).unwrap_or(false);
    }
    let mut inner = children.clone();
    inner.nodes_mut().retain(|n| n.name().value() != "param");
    holds.then_some(inner)
}
