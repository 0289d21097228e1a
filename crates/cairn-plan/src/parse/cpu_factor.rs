//! CPUs in a plan: a trials block's `cpus 1 2 cores="0,2"` (a factor: the server measured
//! on each number of CPUs and each named set) and a server's `cpus "0-1"` (a fixed cpuset),
//! told apart so that a bare number on a server — CPU number 2, or two CPUs? — is never
//! guessed.

use kdl::{KdlNode, KdlValue};

use super::{args, node_name, prop_name, props, FileParser};
use crate::diagnostics::problem;
use crate::model::Sp;
use crate::trial_cpus::{ClientCpus, CpuChoice, CLIENTS};

/// The most CPUs a count may name: more than any machine cairn measures on has, few enough
/// that a typo (`cpus 10000`) is refused here rather than at the machine.
pub(crate) const MAX_CPU_COUNT: i128 = 4096;

/// Whether `set` is written as a cpuset: CPU numbers and ranges, comma-separated (`0`,
/// `0-3`, `0,2,4-5`). Whether the machine has them is `cairn check`'s question.
fn cpuset_syntax(set: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit());
    set.split(',').all(|part| match part.split_once('-') {
        Some((a, b)) => number(a) && number(b) && a.parse::<u32>().ok() <= b.parse::<u32>().ok(),
        None => number(part),
    })
}

/// Why `name` cannot name a set of CPUs: it is a parameter value in addresses
/// (`trial/t/s[cpus=cores]`) and must not read as a count.
fn bad_set_name(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("it is empty or holds a space or control character");
    }
    if name.contains(['/', '\\', '[', ']', '#', ',', '=']) {
        return Some("`/`, `\\`, `[`, `]`, `#`, `,` and `=` have a meaning in step addresses");
    }
    if name.parse::<f64>().is_ok() || name == "true" || name == "false" {
        return Some("it reads as a number or a boolean, as a count would");
    }
    None
}

impl FileParser<'_> {
    /// A trials block's `cpus 1 2 cores="0,2" clients="with-server"`: numbers of CPUs
    /// (integers ≥ 1) and named sets of CPUs, at least one, each once; and where the clients
    /// run, if the block says.
    pub(super) fn cpu_choices(
        &mut self,
        node: &KdlNode,
    ) -> (Vec<Sp<CpuChoice>>, Option<Sp<ClientCpus>>) {
        self.no_children(node);
        let entries: Vec<_> = args(node).collect();
        let (clients, sets): (Vec<_>, Vec<_>) = props(node).partition(|e| prop_name(e) == CLIENTS);
        let clients = clients.into_iter().last().and_then(|e| self.client_cpus(e));
        if entries.is_empty() && sets.is_empty() {
            let p = problem("missing", "`cpus` needs at least one number of CPUs")
                .label(self.name_loc(node), "no counts")
                .help("write `cpus 1 2` to measure the server on 1 and on 2 CPUs, or name sets of CPUs: `cpus siblings=\"0-1\" cores=\"0,2\"`");
            self.push(p);
        }
        let mut choices: Vec<Sp<CpuChoice>> = Vec::new();
        for e in entries {
            if let KdlValue::String(set) = e.value() {
                let p = problem(
                    "bad_value",
                    format!(
                        "`cpus` of a trials block takes numbers of CPUs, not a cpuset ({set:?})"
                    ),
                )
                .label(self.loc(e.span()), "a cpuset")
                .help(format!(
                    "write the number of CPUs (`cpus 1 2`), or name the set: `cpus cores={set:?}`"
                ));
                self.push(p);
                continue;
            }
            let Some(n) = self.int_of(node_name(node), e, 1, MAX_CPU_COUNT) else {
                continue;
            };
            self.push_choice(
                &mut choices,
                Sp::new(CpuChoice::Count(n.value as u32), n.loc),
            );
        }
        for e in sets {
            let name = prop_name(e).to_string();
            let Some(set) = self.string_of(e) else {
                continue;
            };
            if let Some(why) = bad_set_name(&name) {
                self.bad_value(
                    e,
                    format!("`{name}` cannot name a set of CPUs: {why}"),
                    None,
                );
                continue;
            }
            if !cpuset_syntax(&set.value) {
                self.bad_value(
                    e,
                    format!("set `{name}` is not a cpuset: {:?}", set.value),
                    Some("write CPU numbers and ranges, comma-separated: \"0-1\", \"0,2\"".into()),
                );
                continue;
            }
            let choice = CpuChoice::Set {
                name,
                cpus: set.value,
            };
            self.push_choice(&mut choices, Sp::new(choice, set.loc));
        }
        (choices, clients)
    }

    /// `clients="with-server"` or `clients="rest"` of a block's `cpus`.
    fn client_cpus(&mut self, e: &kdl::KdlEntry) -> Option<Sp<ClientCpus>> {
        let word = self.string_of(e)?;
        match ClientCpus::from_word(&word.value) {
            Some(c) => Some(Sp::new(c, word.loc)),
            None => {
                self.bad_value(
                    e,
                    format!(
                        "`clients` says where the clients run under `cpus`, not {:?}",
                        word.value
                    ),
                    Some("write `clients=\"with-server\"` (on the server's CPUs) or `clients=\"rest\"` (on the CPUs it does not get, the default); `clients` is not a name for a set of CPUs".into()),
                );
                None
            }
        }
    }

    /// Adds `c` unless the block lists it already (a count twice, a set's CPUs twice).
    fn push_choice(&mut self, choices: &mut Vec<Sp<CpuChoice>>, c: Sp<CpuChoice>) {
        let same = |a: &CpuChoice, b: &CpuChoice| match (a, b) {
            (CpuChoice::Count(x), CpuChoice::Count(y)) => x == y,
            (CpuChoice::Set { cpus: x, .. }, CpuChoice::Set { cpus: y, .. }) => x == y,
            _ => false,
        };
        if let Some(first) = choices.iter().find(|f| same(&f.value, &c.value)) {
            let what = match &c.value {
                CpuChoice::Count(n) => n.to_string(),
                CpuChoice::Set { cpus, .. } => format!("the set {cpus:?}"),
            };
            let p = problem("duplicate", format!("`cpus` lists {what} twice"))
                .label(c.loc, "listed again here")
                .label(first.loc, "first listed here")
                .help("each value is one point of the block; use `passes` to repeat");
            self.push(p);
            return;
        }
        choices.push(c);
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
