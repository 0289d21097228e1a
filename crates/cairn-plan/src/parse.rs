//! One KDL document → the declarations it holds, checking each node's shape and value types.

mod cpu_factor;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use crate::builds::Written;
use crate::diagnostics::{did_you_mean, one_of, problem, Reporter, P};
use crate::grammar::*;
use crate::model::*;
use crate::values::{parse_duration, parse_percentage, parse_size};

mod build;
mod host_factor_nodes;
mod lifecycle;
mod trial_tie;

/// Free-form `key=value` properties of a node.
type Props = BTreeMap<String, Sp<Value>>;

/// Every declared name per kind, including declarations too broken to enter the [`Plan`],
/// so that references to them are not reported as dangling.
#[derive(Default)]
pub(crate) struct Declared {
    pub(crate) by_kind: BTreeMap<&'static str, Vec<Sp<String>>>,
}

/// Parses one file's document into `plan`; returns the `import` paths it names.
pub(crate) struct FileParser<'a> {
    pub(crate) r: &'a mut Reporter,
    pub(crate) declared: &'a mut Declared,
    pub(crate) plan: &'a mut Plan,
    /// The `build` nodes read, flattened once every file is read.
    pub(crate) builds: &'a mut Written,
    pub(crate) id: SourceId,
    pub(crate) dir: PathBuf,
    pub(crate) is_root: bool,
    /// `load` checks that `input` files exist; `parse_str` does not.
    pub(crate) check_files: bool,
    pub(crate) imports: Vec<Sp<String>>,
}

fn value_kind(v: &KdlValue) -> &'static str {
    match v {
        KdlValue::String(_) => "a string",
        KdlValue::Integer(_) => "an integer",
        KdlValue::Float(_) => "a number",
        KdlValue::Bool(_) => "a boolean",
        KdlValue::Null => "#null",
    }
}

fn node_name(node: &KdlNode) -> &str {
    node.name().value()
}

fn args(node: &KdlNode) -> impl Iterator<Item = &KdlEntry> {
    node.entries().iter().filter(|e| e.name().is_none())
}

/// Whether an expectation is written with `>=`, `<=` or `==` (a tolerance, not a size of a
/// difference: no band, no trend).
fn has_tolerance_operator(expect: &str) -> bool {
    [">=", "<=", "=="].iter().any(|op| expect.contains(op))
}

fn props(node: &KdlNode) -> impl Iterator<Item = &KdlEntry> {
    node.entries().iter().filter(|e| e.name().is_some())
}

fn prop_name(e: &KdlEntry) -> &str {
    e.name().map_or("", |n| n.value())
}

fn children(node: &KdlNode) -> &[KdlNode] {
    node.children().map_or(&[], |c| c.nodes())
}

/// True if `path` is absolute or climbs out with `..`.
pub(crate) fn escapes(path: &str) -> bool {
    let p = Path::new(path);
    p.is_absolute()
        || path.starts_with('/')
        || p.components().any(|c| matches!(c, Component::ParentDir))
}

/// Why `name` cannot name a declaration, if it cannot. A name appears in step addresses
/// (`trial/t/s[threads=8]#2`, parsed back by selectors) and, for steps, as the directory a
/// dependent finds its outputs under; `strict` also refuses what would break those.
fn bad_name(name: &str, strict: bool) -> Option<&'static str> {
    if name.trim().is_empty() {
        return Some("it is empty");
    }
    if name.chars().any(char::is_control) {
        return Some("it holds a control character (a newline, a tab, NUL, …)");
    }
    if strict && (name == "." || name == "..") {
        return Some("`.` and `..` name directories");
    }
    if strict && name.contains(['/', '\\', '[', ']', '#', ',', '=']) {
        return Some("`/`, `\\`, `[`, `]`, `#`, `,` and `=` have a meaning in step addresses");
    }
    None
}

/// A Debian name (suite, architecture, variant, package): a letter or digit, then letters,
/// digits, `.`, `+`, `-`, `_` and the characters of `extra` (`=`, `:`, `~` in a pinned
/// package). Spaces, commas and a leading `-` would reach debootstrap as other arguments.
fn debian_word(s: &str, extra: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c) || extra.contains(c))
}

impl FileParser<'_> {
    fn loc(&self, span: SourceSpan) -> Loc {
        Loc {
            source: self.id,
            span,
        }
    }

    fn name_loc(&self, node: &KdlNode) -> Loc {
        self.loc(node.name().span())
    }

    fn push(&mut self, p: P) {
        self.r.push(p);
    }

    /// Refuses a property written twice on one node (`metric="a" metric="b"`), at the
    /// second: KDL keeps the last, which would silently drop the first.
    fn repeated_props(&mut self, nodes: &[KdlNode]) {
        for node in nodes {
            let mut seen: BTreeMap<&str, SourceSpan> = BTreeMap::new();
            for e in props(node) {
                let name = prop_name(e);
                if let Some(first) = seen.insert(name, e.span()) {
                    let p = problem(
                        "duplicate",
                        format!("`{}` has `{name}=` twice", node_name(node)),
                    )
                    .label(self.loc(e.span()), "second")
                    .label(self.loc(first), "first")
                    .help(format!("keep the `{name}=` you mean"));
                    self.push(p);
                }
            }
            self.repeated_props(children(node));
        }
    }

    pub(crate) fn document(&mut self, doc: &KdlDocument) {
        self.repeated_props(doc.nodes());
        for node in doc.nodes() {
            // the grammar's list admits a declaration, as `known_child` does for children
            if !TOP_LEVEL.contains(&node_name(node)) {
                self.unknown_declaration(node);
                continue;
            }
            match node_name(node) {
                "study" => self.study(node),
                "import" => self.import(node),
                "build" => self.named_build(node),
                "image" => self.image(node),
                "server" => self.server(node),
                "dataset" => self.dataset(node),
                "workload" => self.workload(node),
                "trials" => self.trials(node),
                "analysis" => self.analysis(node),
                "claim" => self.claim(node),
                "report" => self.report(node),
                "step" => self.step(node),
                // read before the rest of the file, by `params::declare`
                "param" => {}
                // replaced by their nodes or removed before, by `when_blocks::splice`
                "when" => {}
                _ => self.unknown_declaration(node),
            }
        }
    }

    fn unknown_declaration(&mut self, node: &KdlNode) {
        let name = node_name(node);
        let p = problem("unknown_node", format!("unknown declaration `{name}`"))
            .label(self.name_loc(node), "not a top-level node")
            .help_opt(did_you_mean(name, TOP_LEVEL.iter().copied()))
            .help(format!("top-level nodes are {}", one_of(TOP_LEVEL)));
        self.push(p);
    }

    // ---- generic shape checks -------------------------------------------------------------

    fn unknown_child(&mut self, parent: &str, node: &KdlNode, allowed: &[&str]) {
        let name = node_name(node);
        let p = problem(
            "unknown_node",
            format!("unknown node `{name}` in `{parent}`"),
        )
        .label(self.name_loc(node), format!("not allowed in `{parent}`"))
        .help_opt(did_you_mean(name, allowed.iter().copied()))
        .help(format!("`{parent}` accepts {}", one_of(allowed)));
        self.push(p);
    }

    /// False, with a problem, when `c` is not one of `allowed`: the grammar's list is the
    /// only thing that admits a child, so the parser cannot accept what the table omits.
    fn known_child(&mut self, parent: &str, c: &KdlNode, allowed: &[&str]) -> bool {
        if allowed.contains(&node_name(c)) {
            return true;
        }
        self.unknown_child(parent, c, allowed);
        false
    }

    /// For children that hold one value (`run`, `passes`, `image`, …): false, with a
    /// problem, when `c` repeats one already seen in `parent` (the second would silently win).
    fn first_of(
        &mut self,
        seen: &mut BTreeMap<String, Loc>,
        single: &[&str],
        parent: &str,
        c: &KdlNode,
    ) -> bool {
        let name = node_name(c);
        if !single.contains(&name) {
            return true;
        }
        let here = self.name_loc(c);
        match seen.get(name) {
            Some(first) => {
                let p = problem(
                    "duplicate",
                    format!("`{name}` is given twice in `{parent}`"),
                )
                .label(here, "given again here")
                .label(*first, "first given here")
                .help(format!(
                    "`{parent}` takes one `{name}`; keep the one you mean"
                ));
                self.push(p);
                false
            }
            None => {
                seen.insert(name.to_string(), here);
                true
            }
        }
    }

    fn no_children(&mut self, node: &KdlNode) {
        if let Some(c) = node.children() {
            let p = problem(
                "unexpected",
                format!("`{}` does not take a block", node_name(node)),
            )
            .label(self.loc(c.span()), "unexpected block");
            self.push(p);
        }
    }

    /// Reports properties not in `allowed`; returns the allowed ones.
    fn props_only<'n>(&mut self, node: &'n KdlNode, allowed: &[&str]) -> Vec<&'n KdlEntry> {
        let mut ok = Vec::new();
        for e in props(node) {
            let name = prop_name(e);
            if allowed.contains(&name) {
                ok.push(e);
            } else {
                let p = problem(
                    "unknown_property",
                    format!("unknown property `{name}` on `{}`", node_name(node)),
                )
                .label(self.loc(e.span()), "unknown property");
                let p = if allowed.is_empty() {
                    p.help(format!("`{}` takes no properties", node_name(node)))
                } else {
                    p.help_opt(did_you_mean(name, allowed.iter().copied()))
                        .help(format!("allowed properties: {}", one_of(allowed)))
                };
                self.push(p);
            }
        }
        ok
    }

    fn no_args(&mut self, node: &KdlNode, hint: &str) {
        for e in args(node) {
            let p = problem(
                "unexpected",
                format!("`{}` takes no arguments", node_name(node)),
            )
            .label(self.loc(e.span()), "unexpected argument")
            .help(hint.to_string());
            self.push(p);
        }
    }

    fn missing(&mut self, at: Loc, message: String, help: String) {
        let p = problem("missing", message)
            .label(at, "declared here")
            .help(help);
        self.push(p);
    }

    fn wrong_type(&mut self, e: &KdlEntry, expected: &str, help: Option<String>) {
        let p = problem(
            "wrong_type",
            format!("expected {expected}, found {}", value_kind(e.value())),
        )
        .label(self.loc(e.span()), format!("expected {expected}"))
        .help_opt(help);
        self.push(p);
    }

    fn bad_value(&mut self, e: &KdlEntry, message: String, help: Option<String>) {
        let p = problem("bad_value", message)
            .label(self.loc(e.span()), "invalid value")
            .help_opt(help);
        self.push(p);
    }

    fn string_of(&mut self, e: &KdlEntry) -> Option<Sp<String>> {
        match e.value() {
            KdlValue::String(s) => Some(Sp::new(s.clone(), self.loc(e.span()))),
            _ => {
                self.wrong_type(e, "a string", None);
                None
            }
        }
    }

    /// Any scalar but `#null`.
    fn value_of(&mut self, e: &KdlEntry) -> Option<Sp<Value>> {
        let v = match e.value() {
            KdlValue::String(s) => Value::String(s.clone()),
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Value::Int(i),
                Err(_) => {
                    self.bad_value(e, "integer out of range".into(), None);
                    return None;
                }
            },
            KdlValue::Float(x) => Value::Float(*x),
            KdlValue::Bool(b) => Value::Bool(*b),
            KdlValue::Null => {
                self.wrong_type(e, "a value", Some("`#null` is not allowed in plans".into()));
                return None;
            }
        };
        Some(Sp::new(v, self.loc(e.span())))
    }

    /// A scalar written as a string (numbers and booleans are spelt out).
    fn stringish(&mut self, e: &KdlEntry) -> Option<Sp<String>> {
        self.value_of(e)
            .map(|v| Sp::new(v.value.to_string(), v.loc))
    }

    /// `name "value"`: exactly one string argument, no properties, no block.
    fn one_string(&mut self, node: &KdlNode) -> Option<Sp<String>> {
        self.props_only(node, &[]);
        self.no_children(node);
        self.single_arg(node).and_then(|e| self.string_of(e))
    }

    /// The single argument of a node; reports a missing one or extra ones.
    fn single_arg<'n>(&mut self, node: &'n KdlNode) -> Option<&'n KdlEntry> {
        let all: Vec<&KdlEntry> = args(node).collect();
        for extra in all.iter().skip(1) {
            let p = problem(
                "unexpected",
                format!("`{}` takes one argument", node_name(node)),
            )
            .label(self.loc(extra.span()), "extra argument");
            self.push(p);
        }
        if all.is_empty() {
            let p = problem(
                "missing",
                format!("`{}` needs an argument", node_name(node)),
            )
            .label(self.name_loc(node), "no argument");
            self.push(p);
        }
        all.first().copied()
    }

    /// `name "a" "b" …`: one or more string arguments.
    fn strings(&mut self, node: &KdlNode) -> Vec<Sp<String>> {
        self.props_only(node, &[]);
        self.no_children(node);
        let all: Vec<&KdlEntry> = args(node).collect();
        if all.is_empty() {
            let p = problem(
                "missing",
                format!("`{}` needs at least one argument", node_name(node)),
            )
            .label(self.name_loc(node), "no arguments");
            self.push(p);
        }
        all.into_iter().filter_map(|e| self.string_of(e)).collect()
    }

    /// An integer in `min..=max`.
    fn int_of(&mut self, what: &str, e: &KdlEntry, min: i128, max: i128) -> Option<Sp<i128>> {
        match e.value() {
            KdlValue::Integer(i) if (min..=max).contains(i) => {
                Some(Sp::new(*i, self.loc(e.span())))
            }
            KdlValue::Integer(i) => {
                let msg = if *i < min {
                    format!("`{what}` must be at least {min}, found {i}")
                } else {
                    format!("`{what}` is too large: {i}")
                };
                self.bad_value(e, msg, None);
                None
            }
            _ => {
                self.wrong_type(e, "an integer", None);
                None
            }
        }
    }

    fn one_int(&mut self, node: &KdlNode, min: i128, max: i128) -> Option<Sp<i128>> {
        self.props_only(node, &[]);
        self.no_children(node);
        let e = self.single_arg(node)?;
        self.int_of(node_name(node), e, min, max)
    }

    fn passes(&mut self, node: &KdlNode) -> Option<Sp<u32>> {
        self.one_int(node, 1, u32::MAX as i128)
            .map(|v| Sp::new(v.value as u32, v.loc))
    }

    /// A trials block's `passes N` (min = max = N) or `passes min=3 max=12 until-ci="2%"`
    /// (`metric="tps"` names the figure whose CI is watched). `1 <= min <= max`; a `max`
    /// above `min` needs `until-ci` or `until="decided"` (else the extra passes could never
    /// be needed). `passes max=12 until="decided"` may leave out `min`
    /// ([`Passes::default_min`]).
    fn trial_passes(&mut self, node: &KdlNode) -> Option<Sp<Passes>> {
        let loc = self.name_loc(node);
        if args(node).next().is_some() || props(node).next().is_none() {
            return self
                .passes(node)
                .map(|n| Sp::new(Passes::fixed(n.value), n.loc));
        }
        self.no_children(node);
        let (mut min, mut max, mut until_ci, mut metric) = (None, None, None, None);
        let mut until_decided: Option<Sp<()>> = None;
        let mut ok = true;
        for e in self.props_only(node, PASSES_PROPS) {
            match prop_name(e) {
                "min" => min = self.int_of("min", e, 1, u32::MAX as i128),
                "max" => max = self.int_of("max", e, 1, u32::MAX as i128),
                "metric" => metric = self.string_of(e),
                "until" => match self.string_of(e) {
                    Some(s) if PASSES_UNTIL.contains(&s.as_str()) => {
                        until_decided = Some(Sp::new((), s.loc))
                    }
                    Some(s) => {
                        ok = false;
                        self.bad_value(
                            e,
                            format!("`until` takes \"decided\", not `{}`", s.value),
                            Some("`until=\"decided\"` stops a point's passes when the questions its tables and claims ask are decided; `until-ci=\"2%\"` on a CI target".into()),
                        );
                    }
                    None => ok = false,
                },
                _ => {
                    let Some(s) = self.string_of(e) else {
                        ok = false;
                        continue;
                    };
                    match parse_percentage(&s) {
                        Ok(x) if x > 0.0 && x < 1.0 => until_ci = Some(Sp::new(x, s.loc)),
                        Ok(_) => {
                            ok = false;
                            self.bad_value(
                                e,
                                format!(
                                    "`until-ci` must lie above 0% and below 100%, found `{}`",
                                    s.value
                                ),
                                Some("a target half-width like \"2%\"".into()),
                            );
                        }
                        Err(why) => {
                            ok = false;
                            self.bad_value(
                                e,
                                format!("`{}` is not a percentage: {why}", s.value),
                                Some("write a percentage like \"2%\"".into()),
                            );
                        }
                    }
                }
            }
        }
        // whatever else is given: two stopping rules for one block's passes
        if let (Some(decided), Some(ci)) = (&until_decided, &until_ci) {
            let p = problem(
                "conflict",
                "`passes`: `until=\"decided\"` and `until-ci` are two rules for the same passes; pick one".to_string(),
            )
            .label(decided.loc, "stops when the questions are decided")
            .label(ci.loc, "stops on a CI target");
            self.push(p);
            return None;
        }
        // `until="decided"` without `min`: the fewest passes that could decide at the
        // design's first look, which depends on `max` and is set where the plan is resolved
        // (`Plan::set_default_passes`); until then `max`, the fixed test
        let default_min = min.is_none() && until_decided.is_some();
        let min = match (min, &max) {
            (Some(min), _) => min,
            (None, Some(max)) if default_min => max.clone(),
            (None, _) if default_min => {
                let p = problem(
                    "missing",
                    "`passes` with `until=\"decided\"` needs `max`".to_string(),
                )
                .label(loc, "no `max`")
                .help("write `passes max=12 until=\"decided\"` (`min` is then the fewest passes that could decide at the first look) or `passes min=6 max=12 until=\"decided\"`".to_string());
                self.push(p);
                return None;
            }
            (None, _) => {
                let p = problem(
                    "missing",
                    "`passes` with properties needs `min`".to_string(),
                )
                .label(loc, "no `min`")
                .help(
                    "write `passes min=3 max=12 until-ci=\"2%\"`, or `passes 3` for a fixed number"
                        .to_string(),
                );
                self.push(p);
                return None;
            }
        };
        let max_value = max.as_ref().map_or(min.value, |m| m.value);
        if let Some(max) = &max {
            if max.value < min.value {
                let p = problem(
                    "bad_value",
                    format!("`passes`: max ({}) is below min ({})", max.value, min.value),
                )
                .label(max.loc, "below min")
                .help("max is the most passes a point may get; min the fewest".to_string());
                self.push(p);
                return None;
            }
            if max.value > min.value && until_ci.is_none() && until_decided.is_none() && ok {
                let p = problem(
                    "missing",
                    "`passes`: max above min needs a rule for the passes beyond min: `until=\"decided\"` or `until-ci`".to_string(),
                )
                .label(max.loc, "no rule to decide on")
                .help("add `until=\"decided\"` (stop when the plan's comparisons and claims are decided) or `until-ci=\"2%\"` (a CI target), or write `passes N` for a fixed number".to_string());
                self.push(p);
                return None;
            }
        }
        if !ok {
            return None;
        }
        Some(Sp::new(
            Passes {
                min: min.value as u32,
                max: max_value as u32,
                until_ci: until_ci.map(|u| u.value),
                until_decided: until_decided.is_some(),
                metric: metric.map_or_else(|| Passes::DEFAULT_METRIC.to_string(), |m| m.value),
                default_min,
            },
            loc,
        ))
    }

    fn duration_of(&mut self, e: &KdlEntry) -> Option<Sp<Duration>> {
        let s = self.string_of(e)?;
        match parse_duration(&s) {
            Ok(d) => Some(Sp::new(d, s.loc)),
            Err(why) => {
                self.bad_value(
                    e,
                    format!("`{}` is not a duration: {why}", s.value),
                    Some(
                        "durations look like \"500ms\", \"10s\", \"2m\", \"1h\" or \"1m30s\""
                            .into(),
                    ),
                );
                None
            }
        }
    }

    fn choice(&mut self, node: &KdlNode, allowed: &[&str]) -> Option<Sp<String>> {
        let s = self.one_string(node)?;
        if allowed.contains(&s.as_str()) {
            Some(s)
        } else {
            let p = problem(
                "bad_value",
                format!("invalid {} `{}`", node_name(node), s.value),
            )
            .label(s.loc, format!("not a known {}", node_name(node)))
            .help_opt(did_you_mean(&s, allowed.iter().copied()))
            .help(format!("allowed values: {}", one_of(allowed)));
            self.push(p);
            None
        }
    }

    /// `key=value …` properties as a map of values; at least one.
    fn value_props(&mut self, node: &KdlNode) -> BTreeMap<String, Sp<Value>> {
        self.no_args(node, &format!("write `{} key=value`", node_name(node)));
        self.no_children(node);
        if props(node).next().is_none() {
            let p = problem(
                "missing",
                format!(
                    "`{}` needs at least one key=value property",
                    node_name(node)
                ),
            )
            .label(self.name_loc(node), "no properties");
            self.push(p);
        }
        let mut map = BTreeMap::new();
        for e in props(node) {
            if let Some(v) = self.value_of(e) {
                map.insert(prop_name(e).to_string(), v);
            }
        }
        map
    }

    /// `env KEY="value" …`: keys non-empty without `=` or NUL, values without NUL (the
    /// operating system cannot pass them to a process).
    fn env_vars(&mut self, node: &KdlNode) -> BTreeMap<String, Sp<String>> {
        let mut vars = self.string_props(node);
        vars.retain(|k, v| {
            let Some(why) = crate::values::env_var_refusal(k, v) else {
                return true;
            };
            let p = problem(
                "bad_value",
                format!("environment variable `{}` has {why}", k.escape_debug()),
            )
            .label(v.loc, "invalid variable")
            .help("write `env NAME=\"value\"`; a process cannot be given this variable");
            self.r.push(p);
            false
        });
        vars
    }

    fn string_props(&mut self, node: &KdlNode) -> BTreeMap<String, Sp<String>> {
        self.value_props(node)
            .into_iter()
            .map(|(k, v)| (k, Sp::new(v.value.to_string(), v.loc)))
            .collect()
    }

    /// The `"name"` of a declaration; records it in [`Declared`].
    fn decl_name(&mut self, node: &KdlNode, kind: &'static str) -> Option<Sp<String>> {
        self.props_only(node, &[]);
        self.decl_name_of(node, kind)
    }

    /// [`Self::decl_name`] of a node whose properties the caller reads.
    fn decl_name_of(&mut self, node: &KdlNode, kind: &'static str) -> Option<Sp<String>> {
        let name = self.single_arg(node).and_then(|e| self.string_of(e))?;
        // claims are named by a sentence; other names are addresses and directory names
        if let Some(why) = bad_name(&name, kind != "claim") {
            let p = problem("bad_value", format!("invalid {kind} name `{}`: {why}", name.value.escape_debug()))
                .label(name.loc, "invalid name")
                .help("names become step addresses (`trial/<trials>/<server>[threads=8]#2`) and directory names: letters, digits, `-`, `_`, `.`, spaces");
            self.push(p);
        }
        self.declared
            .by_kind
            .entry(kind)
            .or_default()
            .push(name.clone());
        Some(name)
    }

    fn require<T>(
        &mut self,
        value: Option<T>,
        decl: &Sp<String>,
        kind: &str,
        what: &str,
        help: &str,
    ) -> Option<T> {
        if value.is_none() {
            self.missing(
                decl.loc,
                format!("{kind} `{}` has no {what}", decl.value),
                help.to_string(),
            );
        }
        value
    }

    // ---- top-level nodes ------------------------------------------------------------------

    fn study(&mut self, node: &KdlNode) {
        if !self.is_root {
            let p = problem(
                "unexpected",
                "`study` is only allowed in the root plan file",
            )
            .label(self.name_loc(node), "in an imported file")
            .help("move it to the file given to cairn, or delete it");
            self.push(p);
            return;
        }
        if let Some(prev) = self.plan.study.loc {
            let p = problem("duplicate", "more than one `study`")
                .label(self.name_loc(node), "second study")
                .label(prev, "first study");
            self.push(p);
            return;
        }
        self.props_only(node, &[]);
        if args(node).next().is_some() {
            if let Some(name) = self.single_arg(node).and_then(|e| self.string_of(e)) {
                if let Some(why) = bad_name(&name, true) {
                    let p = problem(
                        "bad_value",
                        format!("invalid study name `{}`: {why}", name.value.escape_debug()),
                    )
                    .label(name.loc, "invalid name")
                    .help(
                        "the study's name names its results; leave it out to use the file's name",
                    );
                    self.push(p);
                } else {
                    self.plan.study.name = name.value;
                }
            }
        }
        self.plan.study.loc = Some(self.name_loc(node));
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("study", c, STUDY_CHILDREN)
                || !self.first_of(&mut seen, STUDY_SINGLE, "study", c)
            {
                continue;
            }
            match node_name(c) {
                "title" => self.plan.study.title = self.one_string(c).map(|s| s.value),
                "host-path" => {
                    for s in self.strings(c) {
                        if let Some(dir) = self.host_path(&s) {
                            self.plan.study.host_paths.push(Sp::new(dir, s.loc));
                        }
                    }
                }
                _ => self.unknown_child("study", c, STUDY_CHILDREN),
            }
        }
    }

    /// A `host-path` directory, resolved against the plan's directory; on disk it must
    /// exist and be a directory, and is kept canonical (symlinks and `..` resolved).
    fn host_path(&mut self, s: &Sp<String>) -> Option<PathBuf> {
        let path = self.dir.join(&s.value);
        if s.is_empty() {
            self.bad_value_at(s.loc, "`host-path` is empty".into(), None);
            return None;
        }
        if !self.check_files {
            return Some(path);
        }
        match path.canonicalize() {
            Ok(dir) if dir.is_dir() => Some(dir),
            Ok(_) => {
                self.bad_value_at(
                    s.loc,
                    format!("host-path `{}` is not a directory", s.value),
                    Some("a host-path names a directory whose files the plan may read".into()),
                );
                None
            }
            Err(e) => {
                self.bad_value_at(
                    s.loc,
                    format!("host-path `{}` cannot be used: {e}", s.value),
                    Some(format!(
                        "relative host-paths are relative to the plan's directory `{}`",
                        self.dir.display()
                    )),
                );
                None
            }
        }
    }

    fn bad_value_at(&mut self, loc: Loc, message: String, help: Option<String>) {
        let p = problem("bad_value", message)
            .label(loc, "invalid value")
            .help_opt(help);
        self.push(p);
    }

    fn import(&mut self, node: &KdlNode) {
        if let Some(path) = self.one_string(node) {
            self.imports.push(path);
        }
    }

    fn image(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "image") else {
            return;
        };
        let mut image = Image {
            name,
            extends: None,
            debian: None,
            packages: Vec::new(),
            layers: Vec::new(),
        };
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("image", c, IMAGE_CHILDREN)
                || !self.first_of(&mut seen, IMAGE_SINGLE, "image", c)
            {
                continue;
            }
            let at = self.loc(c.span());
            match node_name(c) {
                "extends" => image.extends = self.one_string(c),
                "debian" => {
                    self.no_args(c, "write `debian suite=\"bookworm\" arch=\"amd64\"`");
                    self.no_children(c);
                    let mut d = image.debian.take().unwrap_or(Debian {
                        suite: None,
                        arch: None,
                        variant: None,
                        arch_loc: None,
                    });
                    for e in self.props_only(c, DEBIAN_PROPS) {
                        let Some(v) = self.string_of(e) else { continue };
                        if !debian_word(&v, "") {
                            self.bad_value(
                                e,
                                format!(
                                    "`{}` is not a Debian {}",
                                    v.value.escape_debug(),
                                    prop_name(e)
                                ),
                                Some(
                                    "write a name like \"bookworm\", \"amd64\" or \"minbase\""
                                        .into(),
                                ),
                            );
                            continue;
                        }
                        match prop_name(e) {
                            "suite" => d.suite = Some(v.value),
                            "arch" => {
                                d.arch = Some(v.value);
                                d.arch_loc = Some(v.loc);
                            }
                            _ => d.variant = Some(v.value),
                        }
                    }
                    image.debian = Some(d);
                }
                "packages" => {
                    for p in self.strings(c) {
                        if debian_word(&p, ":~=") {
                            image.packages.push(p);
                        } else {
                            let pr = problem(
                                "bad_value",
                                format!("`{}` is not a Debian package", p.value.escape_debug()),
                            )
                            .label(p.loc, "invalid package")
                            .help("write one package per string: \"name\" or \"name=version\"");
                            self.push(pr);
                        }
                    }
                }
                "file" => {
                    self.props_only(c, &[]);
                    self.no_children(c);
                    let a: Vec<&KdlEntry> = args(c).collect();
                    if a.len() != 2 {
                        let p = problem(
                            "missing",
                            "`file` takes two arguments: source and destination",
                        )
                        .label(self.name_loc(c), format!("{} argument(s)", a.len()))
                        .help("write `file \"local/path\" \"/path/in/image\"`");
                        self.push(p);
                    } else if let (Some(src), Some(dest)) =
                        (self.string_of(a[0]), self.string_of(a[1]))
                    {
                        image.layers.push(Sp::new(
                            Layer::File {
                                src: src.value,
                                dest: dest.value,
                            },
                            at,
                        ));
                    }
                }
                "run" => {
                    if let Some(cmd) = self.one_string(c) {
                        image
                            .layers
                            .push(Sp::new(Layer::Run { command: cmd.value }, at));
                    }
                }
                "env" => {
                    let vars = self.env_vars(c);
                    let vars = vars.into_iter().map(|(k, v)| (k, v.value)).collect();
                    image.layers.push(Sp::new(Layer::Env { vars }, at));
                }
                "build" => {
                    let (here, next) = (self.plan.images.len(), image.layers.len());
                    if let Some(layer) = self.build_layer(c, here, next) {
                        image.layers.push(Sp::new(layer, at));
                    }
                }
                _ => self.unknown_child("image", c, IMAGE_CHILDREN),
            }
        }
        self.plan.images.push(image);
    }

    fn server(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "server") else {
            return;
        };
        let mut s = Server {
            name,
            extends: None,
            image: None,
            options: BTreeMap::new(),
            env: BTreeMap::new(),
            allocator: None,
            connect: None,
            cpus: None,
            memory: None,
            executor: None,
            system: None,
            client: None,
            link: None,
            profile: None,
        };
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("server", c, SERVER_CHILDREN)
                || !self.first_of(&mut seen, SERVER_SINGLE, "server", c)
            {
                continue;
            }
            match node_name(c) {
                "extends" => s.extends = self.one_string(c),
                "image" => s.image = self.one_string(c),
                "option" => s.options.extend(self.value_props(c)),
                "env" => s.env.extend(self.env_vars(c)),
                "allocator" => s.allocator = self.choice(c, cairn_defs::server::ALLOCATORS),
                "connect" => s.connect = self.choice(c, &CONNECTS),
                // registry names, checked against the registries by `check_vocabulary`
                "executor" => s.executor = self.one_string(c),
                "system" => s.system = self.one_string(c),
                "client" => s.client = self.choice(c, &CLIENT_PATHS),
                "profile" => s.profile = self.profile_kind(c),
                "link" => {
                    self.no_args(c, "write `link rate=\"100mbit\" delay=\"2ms\"`");
                    self.no_children(c);
                    let mut link = Link {
                        rate: None,
                        delay: None,
                    };
                    for e in self.props_only(c, LINK_PROPS) {
                        let Some(v) = self.string_of(e) else { continue };
                        match prop_name(e) {
                            "rate" => link.rate = Some(v),
                            _ => link.delay = Some(v),
                        }
                    }
                    s.link = Some(Sp::new(link, self.name_loc(c)));
                }
                "cpus" => s.cpus = self.server_cpuset(c),
                "memory" => {
                    self.props_only(c, &[]);
                    self.no_children(c);
                    let Some(e) = self.single_arg(c) else {
                        continue;
                    };
                    let at = self.loc(e.span());
                    match e.value() {
                        KdlValue::Integer(i) if *i >= 0 && *i <= u64::MAX as i128 => {
                            s.memory = Some(Sp::new(*i as u64, at));
                        }
                        KdlValue::String(text) => match parse_size(text) {
                            Ok(n) => s.memory = Some(Sp::new(n, at)),
                            Err(why) => self.bad_value(
                                e,
                                format!("`{text}` is not a size: {why}"),
                                Some("sizes look like \"512K\", \"256M\", \"4G\" or \"1024\" (bytes)".into()),
                            ),
                        },
                        _ => self.wrong_type(e, "a size", Some("sizes look like \"512K\", \"256M\", \"4G\" or \"1024\" (bytes)".into())),
                    }
                }
                _ => self.unknown_child("server", c, SERVER_CHILDREN),
            }
        }
        self.plan.servers.push(s);
    }

    fn dataset(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "dataset") else {
            return;
        };
        let mut generator: Option<(Sp<String>, Props)> = None;
        for c in children(node) {
            let n = node_name(c);
            if !DRIVERS.contains(&n) {
                self.unknown_child("dataset", c, &DRIVERS);
                continue;
            }
            if let Some((first, _)) = &generator {
                let p = problem(
                    "duplicate",
                    format!("dataset `{}` has two generators", name.value),
                )
                .label(self.name_loc(c), "second generator")
                .label(first.loc, "first generator")
                .help("a dataset is made by exactly one generator");
                self.push(p);
                continue;
            }
            self.no_args(c, &format!("write `{n} key=value …`"));
            self.no_children(c);
            let mut map = BTreeMap::new();
            for e in props(c) {
                if let Some(v) = self.value_of(e) {
                    map.insert(prop_name(e).to_string(), v);
                }
            }
            generator = Some((Sp::new(n.to_string(), self.name_loc(c)), map));
        }
        let generator = self.require(
            generator,
            &name,
            "dataset",
            "generator",
            &format!(
                "add a generator node: {}, e.g. `sysbench tables=4 rows=10000`",
                one_of(&DRIVERS)
            ),
        );
        if let Some((generator, props)) = generator {
            self.plan.datasets.push(Dataset {
                name,
                generator,
                props,
            });
        }
    }

    /// A matrix axis / workload parameter: `name v1 v2 …`, no properties, at least one value.
    fn axis(&mut self, c: &KdlNode) -> Option<Param> {
        self.props_only(c, &[]);
        self.no_children(c);
        let name = Sp::new(node_name(c).to_string(), self.name_loc(c));
        let entries: Vec<&KdlEntry> = args(c).collect();
        if entries.is_empty() {
            let p = problem("missing", format!("`{}` has no values", name.value))
                .label(name.loc, "empty axis")
                .help(format!(
                    "give one or more values, e.g. `{} 1 2 4`",
                    name.value
                ));
            self.push(p);
            return None;
        }
        let values = entries
            .into_iter()
            .filter_map(|e| self.value_of(e))
            .collect();
        Some(Param { name, values })
    }

    /// Two equal values on one axis would make two steps with one address and one key.
    fn check_duplicate_values(&mut self, params: &[Param]) {
        for p in params {
            for (i, v) in p.values.iter().enumerate() {
                if let Some(first) = p.values[..i].iter().find(|w| w.value == v.value) {
                    let pr = problem(
                        "duplicate",
                        format!("`{}` lists the value {} twice", p.name.value, v.value),
                    )
                    .label(v.loc, "given again here")
                    .label(first.loc, "first given here")
                    .help("each value is one step (or trial); list it once");
                    self.push(pr);
                }
            }
        }
    }

    fn check_duplicate_axes(&mut self, params: &[Param], what: &str) {
        for (i, p) in params.iter().enumerate() {
            if let Some(first) = params[..i].iter().find(|q| q.name.value == p.name.value) {
                let pr = problem(
                    "duplicate",
                    format!("{what} `{}` is given twice", p.name.value),
                )
                .label(p.name.loc, "given again here")
                .label(first.name.loc, "first given here")
                .help("list all values on one line, e.g. `threads 1 2 4`");
                self.push(pr);
            }
        }
    }

    fn param(&mut self, c: &KdlNode, kind: ParamKind) -> Option<Param> {
        let mut param = self.axis(c)?;
        let entries: Vec<&KdlEntry> = args(c).collect();
        let mut values = Vec::new();
        for e in entries {
            let at = self.loc(e.span());
            let v = match kind {
                ParamKind::Positive => self
                    .int_of(&param.name.value, e, 1, i64::MAX as i128)
                    .map(|i| Value::Int(i.value as i64)),
                ParamKind::Count => self
                    .int_of(&param.name.value, e, 0, i64::MAX as i128)
                    .map(|i| Value::Int(i.value as i64)),
                ParamKind::Duration(nonzero) => match self.duration_of(e) {
                    Some(d) if nonzero && d.is_zero() => {
                        self.bad_value(
                            e,
                            format!("`{}` must be longer than zero", param.name.value),
                            None,
                        );
                        None
                    }
                    Some(d) => Some(Value::Float(d.as_secs_f64())),
                    None => None,
                },
                ParamKind::Number => match &e.value() {
                    kdl::KdlValue::Integer(i) if *i >= 0 => Some(Value::Float(*i as f64)),
                    kdl::KdlValue::Float(f) if *f >= 0.0 && f.is_finite() => Some(Value::Float(*f)),
                    _ => {
                        self.bad_value(
                            e,
                            format!("`{}` must be a number ≥ 0", param.name.value),
                            None,
                        );
                        None
                    }
                },
                ParamKind::Flag => match &e.value() {
                    kdl::KdlValue::Bool(b) => Some(Value::Bool(*b)),
                    _ => {
                        self.bad_value(
                            e,
                            format!("`{}` must be #true or #false", param.name.value),
                            None,
                        );
                        None
                    }
                },
                ParamKind::NameOrCount => match &e.value() {
                    kdl::KdlValue::Integer(_) => self
                        .int_of(&param.name.value, e, 1, i64::MAX as i128)
                        .map(|i| Value::Int(i.value as i64)),
                    _ => self.string_of(e).map(|s| Value::String(s.value)),
                },
                ParamKind::Text => self.string_of(e).map(|s| Value::String(s.value)),
                ParamKind::Choice(allowed) => match self.string_of(e) {
                    Some(s) if allowed.contains(&s.as_str()) => Some(Value::String(s.value)),
                    Some(s) => {
                        let p = problem(
                            "bad_value",
                            format!("invalid {} `{}`", param.name.value, s.value),
                        )
                        .label(s.loc, "not a known value")
                        .help_opt(did_you_mean(&s, allowed.iter().copied()))
                        .help(format!("allowed values: {}", one_of(allowed)));
                        self.push(p);
                        None
                    }
                    None => None,
                },
            };
            if let Some(v) = v {
                values.push(Sp::new(v, at));
            }
        }
        param.values = values;
        Some(param)
    }

    fn workload(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "workload") else {
            return;
        };
        let mut driver: Option<(Sp<String>, Sp<String>, Props)> = None;
        let mut params = Vec::new();
        for c in children(node) {
            let n = node_name(c);
            if DRIVERS.contains(&n) {
                if let Some((first, _, _)) = &driver {
                    let p = problem(
                        "duplicate",
                        format!("workload `{}` has two drivers", name.value),
                    )
                    .label(self.name_loc(c), "second driver")
                    .label(first.loc, "first driver")
                    .help("a workload runs exactly one driver");
                    self.push(p);
                    continue;
                }
                self.no_children(c);
                let test = self.single_arg(c).and_then(|e| self.string_of(e));
                let mut map = BTreeMap::new();
                for e in props(c) {
                    if let Some(v) = self.value_of(e) {
                        map.insert(prop_name(e).to_string(), v);
                    }
                }
                if let Some(test) = test {
                    driver = Some((Sp::new(n.to_string(), self.name_loc(c)), test, map));
                }
            } else if let Some((_, kind)) = PARAMS.iter().find(|(p, _)| *p == n) {
                if let Some(p) = self.param(c, *kind) {
                    params.push(p);
                }
            } else {
                let allowed: Vec<&str> = DRIVERS
                    .iter()
                    .chain(PARAMS.iter().map(|(p, _)| p))
                    .copied()
                    .collect();
                let p = problem(
                    "unknown_node",
                    format!("unknown parameter `{n}` in `workload`"),
                )
                .label(self.name_loc(c), "not a known parameter")
                .help_opt(did_you_mean(n, allowed.iter().copied()))
                .help(format!(
                    "a workload has a driver ({}) and parameters: {}",
                    one_of(&DRIVERS),
                    one_of(&PARAMS.iter().map(|(p, _)| *p).collect::<Vec<_>>())
                ));
                self.push(p);
            }
        }
        self.check_duplicate_axes(&params, "parameter");
        self.check_duplicate_values(&params);
        let driver = self.require(
            driver,
            &name,
            "workload",
            "driver",
            &format!(
                "add a driver node: {}, e.g. `sysbench \"oltp_read_only\"`",
                one_of(&DRIVERS)
            ),
        );
        if let Some((driver, test, driver_props)) = driver {
            self.plan.workloads.push(Workload {
                name,
                driver,
                test,
                driver_props,
                params,
            });
        }
    }

    fn trials(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "trials") else {
            return;
        };
        let mut servers = Vec::new();
        let mut saw_servers = false;
        let (mut dataset, mut workload, mut passes, mut seed) = (None, None, None, None);
        let mut measured_by = None;
        let mut lifecycle = crate::lifecycle::Lifecycle::default();
        let mut host = Vec::new();
        let mut cpus = Vec::new();
        let mut cpus_clients = None;
        let mut ties = Vec::new();
        let mut profile = None;
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("trials", c, TRIALS_CHILDREN)
                || !self.first_of(&mut seen, TRIALS_SINGLE, "trials", c)
            {
                continue;
            }
            match node_name(c) {
                "servers" => {
                    saw_servers = true;
                    servers.extend(self.strings(c));
                }
                "dataset" => dataset = self.one_string(c),
                "workload" => workload = self.one_string(c),
                "passes" => passes = self.trial_passes(c),
                "measured-by" => measured_by = self.study_name(c),
                "settle" | "runs" => self.lifecycle_child(c, &mut lifecycle),
                "io-scheduler" | "transparent-hugepages" | "sysctl" | "sysfs" => {
                    host.extend(self.host_factor(c))
                }
                "cpus" => (cpus, cpus_clients) = self.cpu_choices(c),
                "tie" => ties.extend(self.trial_tie(c)),
                "profile" => profile = self.profile_kind(c),
                "seed" => {
                    seed = self
                        .one_int(c, 0, u64::MAX as i128)
                        .map(|v| Sp::new(v.value as u64, v.loc))
                }
                _ => self.unknown_child("trials", c, TRIALS_CHILDREN),
            }
        }
        for (i, s) in servers.iter().enumerate() {
            if let Some(first) = servers[..i].iter().find(|f| f.value == s.value) {
                let p = problem(
                    "duplicate",
                    format!("trials `{}` lists server `{}` twice", name.value, s.value),
                )
                .label(s.loc, "listed again here")
                .label(first.loc, "first listed here")
                .help("each server is measured once per point and pass; use `passes` to repeat");
                self.push(p);
            }
        }
        if !saw_servers {
            self.missing(
                name.loc,
                format!("trials `{}` has no servers", name.value),
                "add `servers \"a\" \"b\"`".into(),
            );
        }
        let has_workload_node = children(node).iter().any(|c| node_name(c) == "workload");
        if !has_workload_node {
            self.missing(
                name.loc,
                format!("trials `{}` has no workload", name.value),
                "add `workload \"name\"`".into(),
            );
        }
        let passes = passes.unwrap_or_else(|| Sp::new(Passes::fixed(1), name.loc));
        if let Some(workload) = workload {
            self.plan.trials.push(Trials {
                name,
                servers,
                dataset,
                workload,
                passes,
                seed,
                measured_by,
                lifecycle,
                host,
                cpus,
                cpus_clients,
                ties,
                profile,
            });
        }
    }

    /// `profile "cpu" "waits"`: profiles cairn records (`cairn_defs::workload::PROFILES`), one
    /// or more, kept as [`cairn_defs::workload::profile_value`] writes them.
    fn profile_kind(&mut self, c: &KdlNode) -> Option<Sp<String>> {
        let kinds = self.strings(c);
        let mut ok = true;
        for kind in &kinds {
            if cairn_defs::workload::PROFILES.contains(&kind.value.as_str()) {
                continue;
            }
            ok = false;
            let p = problem(
                "invalid",
                format!(
                    "`profile`: cairn does not record a `{}` profile",
                    kind.value
                ),
            )
            .label(kind.loc, "not a profile cairn records")
            .help(format!(
                "write one or more of {}",
                one_of(cairn_defs::workload::PROFILES)
            ));
            self.push(p);
        }
        let loc = kinds.first()?.loc;
        let value = cairn_defs::workload::profile_value(kinds.iter().map(|k| k.value.as_str()))?;
        ok.then(|| Sp::new(value, loc))
    }

    /// `measured-by "study"`: the name of another study whose measurements a trials block
    /// reuses (a name as a study's: no path separators, not empty, not hidden).
    fn study_name(&mut self, c: &KdlNode) -> Option<Sp<String>> {
        let name = self.one_string(c)?;
        let v = name.value.as_str();
        if v.is_empty() || v.starts_with('.') || v.contains(['/', '\\', '\0', '\n', '\t']) {
            let p = problem(
                "invalid",
                format!("`measured-by`: `{v}` is not a study's name"),
            )
            .label(name.loc, "a study's name")
            .help(
                "name the study as its plan does in `study \"name\"` (its file's stem by default)",
            );
            self.push(p);
            return None;
        }
        Some(name)
    }

    fn analysis(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "analysis") else {
            return;
        };
        let mut trials = Vec::new();
        let (mut servers, mut filter, mut exclude) = (Vec::new(), BTreeMap::new(), Vec::new());
        let mut kind: Option<(Sp<String>, Props)> = None;
        for c in children(node) {
            let n = node_name(c);
            if !self.known_child("analysis", c, ANALYSIS_CHILDREN) {
                continue;
            }
            if n == "trials" {
                trials.extend(self.strings(c));
            } else if n == "servers" {
                servers.extend(self.strings(c));
            } else if n == "where" {
                filter.extend(self.value_props(c));
            } else if n == "exclude" {
                exclude.push(self.value_props(c));
            } else if ANALYSIS_KINDS.contains(&n) {
                if let Some((first, _)) = &kind {
                    let p = problem(
                        "duplicate",
                        format!("analysis `{}` has two kinds", name.value),
                    )
                    .label(self.name_loc(c), "second kind")
                    .label(first.loc, "first kind")
                    .help("write one analysis per table or plot");
                    self.push(p);
                    continue;
                }
                self.no_args(c, &format!("write `{n} metric=\"tps\" …`"));
                self.no_children(c);
                let mut map = BTreeMap::new();
                for e in props(c) {
                    if let Some(v) = self.value_of(e) {
                        map.insert(prop_name(e).to_string(), v);
                    }
                }
                kind = Some((Sp::new(n.to_string(), self.name_loc(c)), map));
            } else {
                self.unknown_child("analysis", c, ANALYSIS_CHILDREN);
            }
        }
        let kind = self.require(
            kind,
            &name,
            "analysis",
            "kind",
            "add `table metric=\"tps\" …` or `plot metric=\"tps\" …`",
        );
        if let Some((kind, props)) = kind {
            self.plan.analyses.push(Analysis {
                name,
                trials,
                servers,
                filter,
                exclude,
                kind,
                props,
            });
        }
    }

    fn claim(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "claim") else {
            return;
        };
        let (mut metric, mut expect, mut within, mut by) = (None, None, None, None);
        let (mut trials, mut about, mut tolerance) = (None, None, None);
        let mut operations = None;
        let mut form = ClaimForm::default();
        let mut filter = BTreeMap::new();
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("claim", c, CLAIM_CHILDREN)
                || !self.first_of(&mut seen, CLAIM_SINGLE, "claim", c)
            {
                continue;
            }
            match node_name(c) {
                "trials" => trials = self.one_string(c),
                "metric" => metric = self.one_string(c),
                "operations" => operations = Some(self.claim_operations(c)),
                "where" => filter.extend(self.value_props(c)),
                "expect" => {
                    self.no_children(c);
                    expect = self.single_arg(c).and_then(|e| self.string_of(e));
                    for e in self.props_only(c, EXPECT_PROPS) {
                        let prop = prop_name(e);
                        if let Some(slot) = form.slot(prop) {
                            *slot = self.expect_word(e, prop);
                            continue;
                        }
                        let Some(s) = self.string_of(e) else { continue };
                        match parse_percentage(&s) {
                            Ok(x) => {
                                let x = Some(Sp::new(x, s.loc));
                                match prop {
                                    "by" => by = x,
                                    "about" => about = x,
                                    "tolerance" => tolerance = x,
                                    _ => within = x,
                                }
                            }
                            Err(why) => self.bad_value(
                                e,
                                format!("`{}` is not a percentage: {why}", s.value),
                                Some("write a percentage like \"5%\"".into()),
                            ),
                        }
                    }
                }
                _ => self.unknown_child("claim", c, CLAIM_CHILDREN),
            }
        }
        // over operations, the figures are the suite's per-operation seconds: no `metric`
        let metric = match (&operations, metric) {
            (Some(ops), Some(m)) => {
                self.push(
                    problem("unexpected", "a claim over `operations` reads the suite's per-operation seconds: it takes no `metric`")
                        .label(m.loc, "a second figure")
                        .label(ops.loc, "its figures")
                        .help("drop `metric`, or drop `operations` to claim about one figure"),
                );
                None
            }
            (Some(ops), None) => Some(Sp::new(
                cairn_defs::figures::OPERATION_SECONDS
                    .figure
                    .name
                    .to_string(),
                ops.loc,
            )),
            (None, m) => self.require(m, &name, "claim", "metric", "add `metric \"tps\"`"),
        };
        let expect = self.require(
            expect,
            &name,
            "claim",
            "expectation",
            "add `expect \"a >= b\"`",
        );
        if let Some(expect) = &expect {
            self.claim_band(expect, about.as_ref(), tolerance.as_ref(), [&by, &within]);
            let sizes = [&by, &within, &about];
            self.claim_form(expect, &form, operations.as_ref(), sizes);
        }
        if let (Some(metric), Some(expect)) = (metric, expect) {
            self.plan.claims.push(Claim {
                name,
                trials,
                metric,
                filter,
                expect,
                within,
                by,
                about,
                tolerance,
                operations,
                quantifier: form.quantifier,
                over: form.over,
                trend: form.trend,
                x: form.x,
                from: form.from,
                to: form.to,
            });
        }
    }

    /// `operations "select" "insert"` (or bare: every test): each a test of sql-bench's
    /// per-operation figures, refused at its place otherwise.
    fn claim_operations(&mut self, node: &KdlNode) -> Sp<Vec<String>> {
        self.props_only(node, &[]);
        self.no_children(node);
        let family = &cairn_defs::figures::OPERATION_SECONDS;
        let mut tests = Vec::new();
        for e in args(node) {
            let Some(t) = self.string_of(e) else { continue };
            if family.stems.contains(&t.as_str()) {
                tests.push(t.value);
            } else {
                self.push(
                    problem(
                        "bad_value",
                        format!(
                            "`{}` is not a test of the suite's per-operation figures",
                            t.value
                        ),
                    )
                    .label(t.loc, "no such group of figures")
                    .help_opt(did_you_mean(&t, family.stems.iter().copied()))
                    .help(format!(
                        "the groups are sql-bench's tests: {}; bare `operations` takes every one",
                        family.stems.join(", ")
                    )),
                );
            }
        }
        Sp::new(tests, self.name_loc(node))
    }

    /// A word property of `expect` (`for`, `trend`: one of its values; `over`, `x`, `from`,
    /// `to`: a parameter and two of its values, numbers spelt out).
    fn expect_word(&mut self, e: &KdlEntry, prop: &str) -> Option<Sp<String>> {
        let allowed: &[&str] = match prop {
            "for" => CLAIM_QUANTIFIERS,
            "trend" => CLAIM_TRENDS,
            _ => return self.stringish(e),
        };
        let s = self.string_of(e)?;
        if allowed.contains(&s.as_str()) {
            return Some(s);
        }
        self.bad_value(
            e,
            format!("`{}` is not a value of `{prop}`", s.value),
            Some(format!("allowed values: {}", one_of(allowed))),
        );
        None
    }

    /// A claim's quantifier (`for=` with `operations` or `over=`) and trend (`trend=` with
    /// `x=`, and `from=`/`to=` together): each half without the other is refused, a claim is
    /// over operations or over a parameter's values, not both, and a trend is a change of a
    /// gain — `>` or `<`, no size — on one figure at one point.
    fn claim_form(
        &mut self,
        expect: &Sp<String>,
        form: &ClaimForm,
        operations: Option<&Sp<Vec<String>>>,
        sizes: [&Option<Sp<f64>>; 3],
    ) {
        match (&form.quantifier, operations, &form.over) {
            (Some(q), None, None) => self.push(
                problem("missing", format!("`for=\"{}\"` counts operations or a parameter's values, but the claim names neither", q.value))
                    .label(q.loc, "a quantifier over nothing")
                    .help("add `operations` (every per-operation figure of the suite), or over=\"threads\" on `expect` (each value of a parameter of its trials)"),
            ),
            (None, Some(ops), _) => self.push(
                problem("missing", "a claim over `operations` says on how many it holds")
                    .label(ops.loc, "operations")
                    .help("add for=\"most\" (more than half) or for=\"all\" (every one) to `expect`"),
            ),
            (None, None, Some(over)) => self.push(
                problem("missing", format!("a claim over the values of `{}` says at how many it holds", over.value))
                    .label(over.loc, "each value of a parameter")
                    .help("add for=\"all\" (at every value) or for=\"most\" (at more than half) to `expect`"),
            ),
            _ => {}
        }
        if let (Some(ops), Some(over)) = (operations, &form.over) {
            self.push(
                problem(
                    "unexpected",
                    "a claim is over a suite's operations or over a parameter's values, not both",
                )
                .label(ops.loc, "operations")
                .label(over.loc, "a parameter's values")
                .help("write one claim over the operations at one point (`where`), and another over the values of one figure"),
            );
        }
        let Some(trend) = &form.trend else {
            for (prop, v) in [("x", &form.x), ("from", &form.from), ("to", &form.to)] {
                if let Some(v) = v {
                    self.push(
                        problem(
                            "unexpected",
                            format!("`{prop}` places a trend, but the claim claims none"),
                        )
                        .label(v.loc, "without trend=")
                        .help("add trend=\"grows\" (or \"shrinks\"), or drop it"),
                    );
                }
            }
            return;
        };
        if form.x.is_none() {
            self.push(
                problem(
                    "missing",
                    "a trend runs along a parameter: name it with `x`",
                )
                .label(trend.loc, "a trend along nothing")
                .help(
                    "add e.g. x=\"threads\" (its lowest against its highest value, or from=/to=)",
                ),
            );
        }
        match (&form.from, &form.to) {
            (Some(p), None) | (None, Some(p)) => self.push(
                problem("missing", "a trend's `from` and `to` go together")
                    .label(p.loc, "one end")
                    .help("write both, e.g. from=\"1\" to=\"4\", or neither (the lowest and highest value)"),
            ),
            (Some(f), Some(t)) if f.value == t.value => self.push(
                problem("bad_value", "a trend's `from` and `to` are the same point")
                    .label(t.loc, "the same as `from`")
                    .help("compare two different values of `x`"),
            ),
            _ => {}
        }
        if let Some(ops) = operations {
            self.push(
                problem(
                    "unexpected",
                    "a trend is claimed of one figure, not over operations",
                )
                .label(trend.loc, "a trend")
                .label(ops.loc, "operations")
                .help("claim the trend of one figure (`metric`), or drop `trend`"),
            );
        }
        if let Some(over) = &form.over {
            self.push(
                problem(
                    "unexpected",
                    "a trend is claimed at one point, not at each value of a parameter",
                )
                .label(trend.loc, "a trend")
                .label(over.loc, "each value of a parameter")
                .help("write a trend claim per value (`where`), or drop `over`"),
            );
        }
        if has_tolerance_operator(&expect.value) {
            self.push(
                problem("bad_value", "a trend is of a gain: it goes with `>` or `<`")
                    .label(expect.loc, "a tolerance operator")
                    .label(trend.loc, "the trend")
                    .help("write `>` (the gain of the left side over the right) or `<` (the right over the left)"),
            );
        }
        for size in sizes.into_iter().flatten() {
            self.push(
                problem(
                    "unexpected",
                    "a trend claims a change of the gain, not its size",
                )
                .label(size.loc, "a size")
                .label(trend.loc, "the trend")
                .help("drop the size, or claim it at one point in a claim of its own"),
            );
        }
    }

    /// A claim's band (`about="50%" tolerance="10%"`): both halves, on `>` or `<` alone, no
    /// `by`/`within` beside it, and a tolerance at most its centre — a band that crosses "no
    /// difference" claims no direction (that is `>=`/`<=` with `within`); one that starts
    /// there ("up to 4% faster": `about="2%" tolerance="2%"`) claims the direction and a
    /// limit. The rules are [`cairn_defs::claim::band_problems`], which the claim step
    /// checks too; here each problem is pointed at the spans that cause it.
    fn claim_band(
        &mut self,
        expect: &Sp<String>,
        about: Option<&Sp<f64>>,
        tolerance: Option<&Sp<f64>>,
        sizes: [&Option<Sp<f64>>; 2],
    ) {
        use cairn_defs::claim::{band_problems, percent_as_written as pct, BandProblem, BandSide};
        let side = if has_tolerance_operator(&expect.value) {
            BandSide::NoDifference
        } else if expect.value.contains('<') {
            BandSide::Below
        } else {
            BandSide::Above
        };
        let problems = band_problems(
            about.map(|a| a.value),
            tolerance.map(|t| t.value),
            sizes.iter().any(|s| s.is_some()),
            side,
        );
        let (a, t) = (
            about.map_or(0.0, |a| a.value),
            tolerance.map_or(0.0, |t| t.value),
        );
        for p in problems {
            let message = p.message(a, t);
            let diagnostic = match (p, about, tolerance) {
                (BandProblem::NoWidth, Some(about), _) => problem("missing", message)
                    .label(about.loc, "the band's centre")
                    .help(format!(
                        "write e.g. about=\"{}\" tolerance=\"10%\" (a published \"about\" says how close it means)",
                        pct(a)
                    )),
                (BandProblem::NoCentre, _, Some(tolerance)) => problem("missing", message)
                    .label(tolerance.loc, "a width without a centre")
                    .help("add about=\"50%\", or for a tolerance of >= and <= write within=\"5%\""),
                (BandProblem::SecondSize, Some(about), _) => {
                    // one diagnostic per second size, each pointing at it
                    for size in sizes.iter().filter_map(|s| s.as_ref()) {
                        self.push(
                            problem("unexpected", message.clone())
                                .label(size.loc, "a second size")
                                .label(about.loc, "the band")
                                .help("keep either the band or `by`/`within`"),
                        );
                    }
                    continue;
                }
                (BandProblem::CrossesNoDifference, _, Some(tolerance)) => problem("bad_value", message)
                    .label(tolerance.loc, "wider than its centre")
                    .help(format!(
                        "make the tolerance at most `about` (\"up to {}\" is about=\"{}\" tolerance=\"{}\"), or claim the absence of a difference with >= or <= and within=\"…\"",
                        pct(a + t),
                        pct((a + t) / 2.0),
                        pct((a + t) / 2.0)
                    )),
                (BandProblem::NotADifference, Some(about), _) => problem("bad_value", message)
                    .label(expect.loc, "a tolerance operator")
                    .label(about.loc, "the band")
                    .help("write `>` (the left side about that much higher) or `<` (lower)"),
                (BandProblem::BelowNothing, Some(about), Some(tolerance)) => problem("bad_value", message)
                    .label(about.loc, "the band's centre")
                    .label(tolerance.loc, "its width")
                    .help(format!(
                        "its far edge lies {} below: keep about + tolerance under 100%",
                        pct(a + t)
                    )),
                // every problem above names a span it has; the rules cannot report one
                // whose side is absent
                _ => problem("bad_value", message).label(expect.loc, "this claim"),
            };
            self.push(diagnostic);
        }
    }

    fn report(&mut self, node: &KdlNode) {
        let Some(name) = self.decl_name(node, "report") else {
            return;
        };
        let mut analyses = Vec::new();
        let mut format = None;
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("report", c, REPORT_CHILDREN)
                || !self.first_of(&mut seen, REPORT_SINGLE, "report", c)
            {
                continue;
            }
            match node_name(c) {
                "analyses" => analyses.extend(self.strings(c)),
                "format" => format = self.choice(c, REPORT_FORMATS),
                _ => self.unknown_child("report", c, REPORT_CHILDREN),
            }
        }
        self.plan.reports.push(Report {
            name,
            analyses,
            format,
        });
    }

    fn step(&mut self, node: &KdlNode) {
        // `kind="…"`: a registered kind's step, its other properties its definition
        let kind_entry = props(node).find(|e| STEP_PROPS.contains(&prop_name(e)));
        let Some(name) = (if kind_entry.is_some() {
            self.decl_name_of(node, "step")
        } else {
            self.decl_name(node, "step")
        }) else {
            return;
        };
        if let Some(e) = kind_entry {
            return self.kind_step(node, name, e);
        }
        let mut run = None;
        let mut needs = Vec::new();
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let mut env = BTreeMap::new();
        let mut matrix = Vec::new();
        let (mut passes, mut timeout, mut measure) = (None, None, false);
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("step", c, STEP_CHILDREN)
                || !self.first_of(&mut seen, STEP_SINGLE, "step", c)
            {
                continue;
            }
            match node_name(c) {
                "run" => run = self.one_string(c),
                "needs" => needs.extend(self.need(c)),
                "input" => {
                    for s in self.strings(c) {
                        if self.check_files && !self.dir.join(&s.value).exists() {
                            let p = problem("path", format!("input `{}` does not exist", s.value))
                                .label(s.loc, "no such file")
                                .help(format!(
                                    "inputs are relative to the plan's directory `{}`",
                                    self.dir.display()
                                ));
                            self.push(p);
                        }
                        inputs.push(s);
                    }
                }
                "output" => {
                    for s in self.strings(c) {
                        if s.is_empty() || escapes(&s) {
                            let p = problem(
                                "path",
                                format!("output `{}` is outside the step's directory", s.value),
                            )
                            .label(s.loc, "absolute or climbs out with `..`")
                            .help("outputs are relative paths inside the step's working directory");
                            self.push(p);
                        } else {
                            outputs.push(s);
                        }
                    }
                }
                "env" => env.extend(self.env_vars(c)),
                "matrix" => matrix.extend(self.matrix(c)),
                "passes" => passes = self.passes(c),
                "timeout" => {
                    self.props_only(c, &[]);
                    self.no_children(c);
                    let Some(e) = self.single_arg(c) else {
                        continue;
                    };
                    if let Some(d) = self.duration_of(e) {
                        if d.is_zero() {
                            self.bad_value(
                                e,
                                "`timeout` must be longer than zero".into(),
                                Some("leave `timeout` out for no limit".into()),
                            );
                        } else {
                            timeout = Some(d);
                        }
                    }
                }
                "measure" => {
                    self.props_only(c, &[]);
                    self.no_children(c);
                    let a: Vec<&KdlEntry> = args(c).collect();
                    measure = match a.as_slice() {
                        [] => true,
                        [e] => match e.value() {
                            KdlValue::Bool(b) => *b,
                            _ => {
                                self.wrong_type(
                                    e,
                                    "a boolean",
                                    Some("write `measure #true` or `measure #false`".into()),
                                );
                                false
                            }
                        },
                        [_, extra, ..] => {
                            let p = problem("unexpected", "`measure` takes one argument")
                                .label(self.loc(extra.span()), "extra argument");
                            self.push(p);
                            false
                        }
                    };
                }
                _ => self.unknown_child("step", c, STEP_CHILDREN),
            }
        }
        for (i, n) in needs.iter().enumerate() {
            if let Some(first) = needs[..i].iter().find(|f| f.as_dir == n.as_dir) {
                let p = problem(
                    "duplicate",
                    format!(
                        "step `{}` places two needed steps under `./{}/`",
                        name.value, n.as_dir
                    ),
                )
                .label(n.step.loc, "placed there again")
                .label(first.step.loc, "first placed there")
                .help("give one of them another directory: `needs \"step\" as=\"dir\"`");
                self.push(p);
            }
        }
        self.check_duplicate_axes(&matrix, "matrix axis");
        self.check_duplicate_values(&matrix);
        let has_run = children(node).iter().any(|c| node_name(c) == "run");
        if !has_run {
            self.missing(
                name.loc,
                format!("step `{}` has no `run` command", name.value),
                "add `run \"shell command\"`".into(),
            );
        }
        let passes = passes.unwrap_or_else(|| Sp::new(1, name.loc));
        if let Some(run) = run {
            self.plan.steps.push(CommandStep {
                name,
                kind: None,
                props: BTreeMap::new(),
                run,
                needs,
                inputs,
                outputs,
                env,
                matrix,
                passes,
                timeout,
                measure,
                dir: self.dir.clone(),
            });
        }
    }

    /// `needs "step"` or `needs "step" as="dir"`.
    fn need(&mut self, c: &KdlNode) -> Option<Need> {
        self.no_children(c);
        let step = self.single_arg(c).and_then(|e| self.string_of(e))?;
        let mut as_dir = step.value.clone();
        for e in self.props_only(c, NEEDS_PROPS) {
            if let Some(s) = self.string_of(e) {
                if s.is_empty() || s.contains('/') || escapes(&s) {
                    self.bad_value(
                        e,
                        format!("`{}` is not a plain directory name", s.value),
                        Some("`as` names one directory under the step's working directory".into()),
                    );
                } else {
                    as_dir = s.value;
                }
            }
        }
        Some(Need { step, as_dir })
    }

    /// `matrix { threads 1 2 4; … }`: the axes of a step's expansion.
    fn matrix(&mut self, c: &KdlNode) -> Vec<Param> {
        self.props_only(c, &[]);
        self.no_args(c, "write the axes in a block: `matrix { threads 1 2 4 }`");
        let mut axes = Vec::new();
        for a in children(c) {
            if let Some(p) = self.axis(a) {
                axes.push(p);
            }
        }
        if c.children().is_none() {
            let p = problem("missing", "`matrix` needs a block of axes")
                .label(self.name_loc(c), "no block")
                .help("write `matrix { threads 1 2 4; size \"s\" \"m\" }`");
            self.push(p);
        }
        axes
    }

    /// `step "name" kind="…" key=value … { needs …; matrix …; passes … }`: a step of a
    /// registered kind (see [`CommandStep`]). Its kind is checked against the registries
    /// later ([`crate::check_vocabulary`]); its properties by the kind itself.
    fn kind_step(&mut self, node: &KdlNode, name: Sp<String>, kind: &KdlEntry) {
        let Some(kind) = self.string_of(kind) else {
            return;
        };
        let mut step_props = BTreeMap::new();
        for e in props(node).filter(|e| prop_name(e) != "kind") {
            if let Some(v) = self.value_of(e) {
                step_props.insert(prop_name(e).to_string(), v);
            }
        }
        let (mut needs, mut matrix, mut passes) = (Vec::new(), Vec::new(), None);
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !self.known_child("step", c, KIND_STEP_CHILDREN)
                || !self.first_of(&mut seen, KIND_STEP_SINGLE, "step", c)
            {
                continue;
            }
            match node_name(c) {
                "needs" => needs.extend(self.need(c)),
                "matrix" => matrix.extend(self.matrix(c)),
                "passes" => passes = self.passes(c),
                _ => self.unknown_child("step", c, KIND_STEP_CHILDREN),
            }
        }
        self.check_duplicate_axes(&matrix, "matrix axis");
        self.check_duplicate_values(&matrix);
        self.plan.steps.push(CommandStep {
            run: Sp::new(String::new(), name.loc),
            passes: passes.unwrap_or_else(|| Sp::new(1, name.loc)),
            name,
            kind: Some(kind),
            props: step_props,
            needs,
            inputs: Vec::new(),
            outputs: Vec::new(),
            env: BTreeMap::new(),
            matrix,
            timeout: None,
            measure: false,
            dir: self.dir.clone(),
        });
    }
}

/// The word properties of a claim's `expect` beyond its size: a quantifier over operations
/// or a parameter's values (`over`), and a trend's parameter and points.
#[derive(Default)]
struct ClaimForm {
    quantifier: Option<Sp<String>>,
    over: Option<Sp<String>>,
    trend: Option<Sp<String>>,
    x: Option<Sp<String>>,
    from: Option<Sp<String>>,
    to: Option<Sp<String>>,
}

impl ClaimForm {
    fn slot(&mut self, prop: &str) -> Option<&mut Option<Sp<String>>> {
        match prop {
            "for" => Some(&mut self.quantifier),
            "over" => Some(&mut self.over),
            "trend" => Some(&mut self.trend),
            "x" => Some(&mut self.x),
            "from" => Some(&mut self.from),
            "to" => Some(&mut self.to),
            _ => None,
        }
    }
}
