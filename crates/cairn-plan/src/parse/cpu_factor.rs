//! CPUs in a plan: a trials block's `cpus 1 2 4` (a factor: the server measured on each
//! number of CPUs) and a server's `cpus "0-1"` (a fixed cpuset), told apart so that a bare
//! number on a server — CPU number 2, or two CPUs? — is never guessed.

use kdl::{KdlNode, KdlValue};

use super::{args, node_name, FileParser};
use crate::diagnostics::problem;
use crate::model::Sp;

/// The most CPUs a count may name: more than any machine cairn measures on has, few enough
/// that a typo (`cpus 10000`) is refused here rather than at the machine.
pub(crate) const MAX_CPU_COUNT: i128 = 4096;

impl FileParser<'_> {
    /// A trials block's `cpus 1 2 4`: one or more CPU counts (integers ≥ 1), each once.
    pub(super) fn cpu_counts(&mut self, node: &KdlNode) -> Vec<Sp<u32>> {
        self.props_only(node, &[]);
        self.no_children(node);
        let entries: Vec<_> = args(node).collect();
        if entries.is_empty() {
            let p = problem("missing", "`cpus` needs at least one number of CPUs")
                .label(self.name_loc(node), "no counts")
                .help("write `cpus 1 2` to measure the server on 1 and on 2 CPUs");
            self.push(p);
        }
        let mut counts: Vec<Sp<u32>> = Vec::new();
        for e in entries {
            if let KdlValue::String(set) = e.value() {
                let p = problem(
                    "bad_value",
                    format!("`cpus` of a trials block takes numbers of CPUs, not a cpuset ({set:?})"),
                )
                .label(self.loc(e.span()), "a cpuset")
                .help("write the number of CPUs (`cpus 1 2`); a fixed cpuset is a server's `cpus \"0-1\"`");
                self.push(p);
                continue;
            }
            let Some(n) = self.int_of(node_name(node), e, 1, MAX_CPU_COUNT) else {
                continue;
            };
            let n = Sp::new(n.value as u32, n.loc);
            if let Some(first) = counts.iter().find(|c| c.value == n.value) {
                let p = problem("duplicate", format!("`cpus` lists {} twice", n.value))
                    .label(n.loc, "listed again here")
                    .label(first.loc, "first listed here")
                    .help("each number of CPUs is one point of the block; use `passes` to repeat");
                self.push(p);
                continue;
            }
            counts.push(n);
        }
        counts
    }

    /// A server's `cpus "0-1"`: a cpuset, as a string. A bare number is refused: `cpus 2`
    /// could mean CPU number 2 (what a cpuset says) or two CPUs.
    pub(super) fn server_cpuset(&mut self, node: &KdlNode) -> Option<Sp<String>> {
        self.props_only(node, &[]);
        self.no_children(node);
        let e = self.single_arg(node)?;
        if let KdlValue::Integer(n) = e.value() {
            let p = problem(
                "bad_value",
                format!("a server's `cpus {n}` is ambiguous: CPU number {n}, or {n} CPUs?"),
            )
            .label(self.loc(e.span()), "a bare number")
            .help(format!(
                "write the cpuset as a string (`cpus \"{n}\"` is CPU number {n}), or give the number of CPUs as a factor of the trials block: `trials \"…\" {{ cpus {n} }}`"
            ));
            self.push(p);
            return None;
        }
        self.stringish(e)
    }
}
