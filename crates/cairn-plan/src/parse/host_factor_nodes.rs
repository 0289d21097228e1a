//! Parsing a trials block's host-setting nodes (`io-scheduler`, `transparent-hugepages`,
//! `sysctl`, `sysfs`) into [`HostFactor`]s: what each sets, its axis name and its values,
//! each refused at its span when it could not be a setting's value on any machine.

use kdl::{KdlEntry, KdlNode};

use super::{args, node_name, FileParser};
use crate::diagnostics::problem;
use crate::host_factors::{HostFactor, HostKnob};
use crate::model::{Param, Sp, Value};

/// Characters a host setting's value may not hold: they have a meaning in step addresses
/// (`trial/t/a[vm.swappiness=10]#2`), and a value is one line written to a file.
const NOT_IN_VALUES: &[char] = &['[', ']', ',', '=', '#', '\n', '\r', '\0'];

/// Whether `name` can be an axis name: what a workload parameter can be (letters, digits,
/// `_`, `-`, `.`), so addresses, `where`, tables and claims read it alike.
fn is_axis_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

impl FileParser<'_> {
    /// `io-scheduler "none" "mq-deadline"`, `transparent-hugepages "always" "never"`,
    /// `sysctl "vm.swappiness" 10 60 [as="swappiness"]`, `sysfs "/sys/…/defrag" "always"
    /// "never" [as="thp-defrag"]`.
    pub(super) fn host_factor(&mut self, node: &KdlNode) -> Option<HostFactor> {
        self.no_children(node);
        let name = node_name(node);
        let named = matches!(name, "sysctl" | "sysfs");
        let renamed = self.props_only(node, if named { &["as"] } else { &[] });
        let mut entries = args(node);
        let (knob, default_axis) = match name {
            "io-scheduler" => (
                Sp::new(HostKnob::IoScheduler, self.name_loc(node)),
                name.to_string(),
            ),
            "transparent-hugepages" => (
                Sp::new(HostKnob::TransparentHugepages, self.name_loc(node)),
                name.to_string(),
            ),
            _ => {
                let Some(first) = entries.next() else {
                    let what = if name == "sysctl" {
                        "a sysctl's name"
                    } else {
                        "a path under /sys"
                    };
                    let p = problem("missing", format!("`{name}` needs {what} and its values"))
                        .label(self.name_loc(node), "no arguments");
                    self.push(p);
                    return None;
                };
                let target = self.string_of(first)?;
                self.host_target(name, first, target)?
            }
        };
        let axis_name = match renamed.first() {
            Some(e) => {
                let n = self.string_of(e)?;
                if !is_axis_name(&n.value) {
                    self.bad_value(
                        e,
                        format!("`{}` is not an axis name", n.value),
                        Some("letters, digits, `_`, `-` and `.`, starting with a letter".into()),
                    );
                    return None;
                }
                n
            }
            None if is_axis_name(&default_axis) => Sp::new(default_axis, knob.loc),
            None => {
                let p = problem(
                    "bad_value",
                    format!("`{default_axis}` cannot name an axis of the trials"),
                )
                .label(knob.loc, "its file's name")
                .help("name its axis with `as=\"…\"`: letters, digits, `_`, `-` and `.`, starting with a letter");
                self.push(p);
                return None;
            }
        };
        let values = self.host_values(node, entries.collect());
        if values.is_empty() {
            return None;
        }
        Some(HostFactor {
            knob,
            axis: Param {
                name: axis_name,
                values,
            },
        })
    }

    /// What `sysctl` or `sysfs` sets, with its default axis name (the sysctl's name; the
    /// sysfs file's name).
    fn host_target(
        &mut self,
        node: &str,
        e: &KdlEntry,
        target: Sp<String>,
    ) -> Option<(Sp<HostKnob>, String)> {
        let t = target.value.as_str();
        if node == "sysctl" {
            let ok = t.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
            if !ok || !t.starts_with(|c: char| c.is_ascii_alphabetic()) {
                self.bad_value(
                    e,
                    format!("`{t}` is not a sysctl's name"),
                    Some("write it as `sysctl -a` lists it, e.g. `vm.swappiness`".into()),
                );
                return None;
            }
            return Some((
                Sp::new(HostKnob::Sysctl(t.to_string()), target.loc),
                t.to_string(),
            ));
        }
        let under_sys = t.strip_prefix("/sys/").is_some_and(|rest| {
            rest.split('/').all(|part| {
                !part.is_empty()
                    && part != "."
                    && part != ".."
                    && !part.contains(|c: char| c.is_whitespace() || c.is_control())
            })
        });
        if !under_sys {
            self.bad_value(
                e,
                format!("`{t}` is not a file under /sys"),
                Some(
                    "`sysfs` sets a file of the kernel's sysfs: an absolute path under /sys/, without `.` or `..` (a sysctl is `sysctl \"vm.swappiness\" …`)"
                        .into(),
                ),
            );
            return None;
        }
        // its axis is the file's name unless `as=` names it (checked where the name is chosen)
        let file = t.rsplit('/').next().unwrap_or(t);
        Some((
            Sp::new(HostKnob::Sysfs(t.to_string()), target.loc),
            file.to_string(),
        ))
    }

    /// A host setting's values: one or more words or integers, each once.
    fn host_values(&mut self, node: &KdlNode, entries: Vec<&KdlEntry>) -> Vec<Sp<Value>> {
        let name = node_name(node);
        if entries.is_empty() {
            let p = problem(
                "missing",
                format!("`{name}` needs at least one value to measure at"),
            )
            .label(self.name_loc(node), "no values")
            .help(format!(
                "list the values the trials are measured at, e.g. `{}`",
                match name {
                    "io-scheduler" => "io-scheduler \"none\" \"mq-deadline\"",
                    "transparent-hugepages" => "transparent-hugepages \"always\" \"never\"",
                    "sysctl" => "sysctl \"vm.swappiness\" 10 60",
                    _ =>
                        "sysfs \"/sys/kernel/mm/transparent_hugepage/defrag\" \"always\" \"never\"",
                }
            ));
            self.push(p);
            return Vec::new();
        }
        let mut out: Vec<Sp<Value>> = Vec::new();
        for e in entries {
            let Some(v) = self.value_of(e) else { continue };
            let text = v.value.to_string();
            let word = matches!(v.value, Value::String(_) | Value::Int(_))
                && !text.trim().is_empty()
                && !text.contains(NOT_IN_VALUES);
            if !word {
                self.bad_value(
                    e,
                    format!("`{}` cannot be a value of `{name}`", text.escape_debug()),
                    Some("a value is a word or an integer written to the setting's file, without `[`, `]`, `,`, `=`, `#` or line breaks".into()),
                );
                continue;
            }
            if let Some(first) = out.iter().find(|o| o.value.to_string() == text) {
                let p = problem("duplicate", format!("`{name}` lists `{text}` twice"))
                    .label(v.loc, "listed again here")
                    .label(first.loc, "first listed here");
                self.push(p);
                continue;
            }
            out.push(v);
        }
        out
    }
}
