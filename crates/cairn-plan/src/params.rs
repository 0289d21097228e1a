//! Plan parameters: `param "scale" default="tiny" { values "tiny" "published" }` declarations,
//! the values `--set` gives them, and `${name}` substituted into a file's values before
//! they are read as typed values.
//!
//! Substitution works on the parsed KDL document, not on the text, so every value keeps the
//! span it was written at and a bad substituted value is reported where `${name}` stands.
//! A string that is exactly `"${name}"` becomes the parameter's value read as KDL: one or
//! more numbers or booleans separated by spaces become that many arguments (`threads
//! "${threads}"` with `1 2 4` is `threads 1 2 4`); any other value stays one string. Inside
//! longer text, `${name}` is replaced by the value's text. `$${` writes a literal `${`.

use std::collections::BTreeMap;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};

use crate::diagnostics::{did_you_mean, problem, Reporter};
use crate::grammar::{PARAM_CHILDREN, PARAM_PROPS};
use crate::model::{Loc, ParamType, PlanParam, SourceId, Sp};

/// The values given on the command line (`--set NAME=VALUE`), by parameter name.
pub type Settings = BTreeMap<String, String>;

pub(crate) fn loc(id: SourceId, span: miette::SourceSpan) -> Loc {
    Loc { source: id, span }
}

/// The text a scalar KDL value stands for as a parameter's value; `None` for `#null`.
fn text_of(v: &KdlValue) -> Option<String> {
    match v {
        KdlValue::String(s) => Some(s.clone()),
        KdlValue::Integer(i) => Some(i.to_string()),
        KdlValue::Float(f) => Some(f.to_string()),
        KdlValue::Bool(b) => Some(b.to_string()),
        KdlValue::Null => None,
    }
}

/// One word of a value as a KDL number or boolean, if it is one.
fn typed_word(word: &str) -> Option<KdlValue> {
    if let Ok(i) = word.parse::<i128>() {
        return Some(KdlValue::Integer(i));
    }
    if let Ok(f) = word.parse::<f64>() {
        if f.is_finite() {
            return Some(KdlValue::Float(f));
        }
    }
    match word.trim_start_matches('#') {
        "true" => Some(KdlValue::Bool(true)),
        "false" => Some(KdlValue::Bool(false)),
        _ => None,
    }
}

/// What a whole-value `"${name}"` becomes: the numbers or booleans the value's words are,
/// when every word is one; a list parameter's words, each a value; otherwise the value as
/// one string.
fn whole_value(text: &str, ty: ParamType) -> Vec<KdlValue> {
    if ty == ParamType::List {
        let word = |w: &str| typed_word(w).unwrap_or_else(|| KdlValue::String(w.to_string()));
        return text.split_whitespace().map(word).collect();
    }
    let words: Option<Vec<KdlValue>> = text.split_whitespace().map(typed_word).collect();
    match words {
        Some(w) if !w.is_empty() => w,
        _ => vec![KdlValue::String(text.to_string())],
    }
}

/// What of `text` is not among a parameter's `values` (nothing, without them): the whole
/// text, or for a list parameter its first word that is not.
fn outside<'t>(values: &[Sp<String>], ty: ParamType, text: &'t str) -> Option<&'t str> {
    let among = |t: &str| values.iter().any(|v| v.value == t);
    match ty {
        _ if values.is_empty() => None,
        ParamType::List => text.split_whitespace().find(|w| !among(w)),
        _ => (!among(text)).then_some(text),
    }
}

/// Whether `text` is a value of the default's type: a number default takes numbers (several
/// separated by spaces), a boolean default booleans; a string default takes any text.
fn same_type(ty: ParamType, text: &str) -> bool {
    let words: Vec<Option<KdlValue>> = text.split_whitespace().map(typed_word).collect();
    match ty {
        ParamType::Number => {
            !words.is_empty()
                && words
                    .iter()
                    .all(|w| matches!(w, Some(KdlValue::Integer(_) | KdlValue::Float(_))))
        }
        ParamType::Bool => {
            !words.is_empty() && words.iter().all(|w| matches!(w, Some(KdlValue::Bool(_))))
        }
        ParamType::Text => true,
        ParamType::List => !words.is_empty(),
    }
}

/// A parameter's allowed values as a message lists them: `` `tiny`, `published` ``.
fn quoted(values: &[Sp<String>]) -> String {
    let each: Vec<String> = values.iter().map(|v| format!("`{}`", v.value)).collect();
    each.join(", ")
}

fn listed(params: &[PlanParam]) -> String {
    if params.is_empty() {
        return "the plan declares no parameters".to_string();
    }
    let each: Vec<String> = params
        .iter()
        .map(|p| {
            if p.values.is_empty() {
                format!("`{}` (default `{}`)", p.name.value, p.default.value)
            } else {
                format!("`{}` ({})", p.name.value, quoted(&p.values))
            }
        })
        .collect();
    format!("the plan's parameters are {}", each.join(", "))
}

/// Reads the `param` declarations of one file into `params`, each with the value `settings`
/// gives it or its default. A parameter is visible in its own file and the files it imports.
pub(crate) fn declare(
    r: &mut Reporter,
    id: SourceId,
    doc: &KdlDocument,
    params: &mut Vec<PlanParam>,
    settings: &Settings,
) {
    for node in doc.nodes().iter().filter(|n| n.name().value() == "param") {
        if let Some(p) = declaration(r, id, node, params) {
            let mut p = p;
            if let Some(given) = settings.get(&p.name.value) {
                p.value = given.clone();
                p.set = true;
                check_given(r, &p);
            }
            params.push(p);
        }
    }
}

/// A `--set` value against its declaration's `values` and type (errors at the declaration:
/// the command line has no span).
fn check_given(r: &mut Reporter, p: &PlanParam) {
    let flag = format!("--set {}={}", p.name.value, p.value);
    if let Some(bad) = outside(&p.values, p.ty, &p.value) {
        let pr = problem(
            "bad_value",
            format!(
                "`{flag}`: `{bad}` is not one of the values of parameter `{}`",
                p.name.value
            ),
        )
        .label(p.name.loc, "the parameter, declared here")
        .help(format!("`{}` takes {}", p.name.value, quoted(&p.values)));
        r.push(pr);
    } else if !same_type(p.ty, &p.value) {
        let kind = match p.ty {
            ParamType::Bool => "booleans (`true`, `false`)",
            ParamType::List => "a list of words separated by spaces",
            _ => "numbers (several separated by spaces)",
        };
        let pr = problem(
            "wrong_type",
            format!(
                "`{flag}`: parameter `{}` takes {kind}, as its default does",
                p.name.value
            ),
        )
        .label(p.default.loc, "the default, which gives the type");
        r.push(pr);
    }
}

fn declaration(
    r: &mut Reporter,
    id: SourceId,
    node: &KdlNode,
    params: &mut [PlanParam],
) -> Option<PlanParam> {
    let name_loc = loc(id, node.name().span());
    let args: Vec<&KdlEntry> = node
        .entries()
        .iter()
        .filter(|e| e.name().is_none())
        .collect();
    let name = match args.as_slice() {
        [e] => match e.value() {
            KdlValue::String(s) if !s.trim().is_empty() && !s.contains(['$', '{', '}']) => {
                Sp::new(s.clone(), loc(id, e.span()))
            }
            _ => {
                let p = problem(
                    "bad_value",
                    "a parameter's name is a non-empty string without `$`, `{` or `}`",
                )
                .label(loc(id, e.span()), "not a parameter name");
                r.push(p);
                return None;
            }
        },
        _ => {
            let p = problem(
                "missing",
                "`param` takes one name: `param \"scale\" default=\"tiny\"`",
            )
            .label(name_loc, "needs exactly one name");
            r.push(p);
            return None;
        }
    };
    if let Some(first) = params.iter().find(|p| p.name.value == name.value) {
        let p = problem(
            "duplicate",
            format!("parameter `{}` is declared twice", name.value),
        )
        .label(name.loc, "declared again here")
        .label(first.name.loc, "first declared here")
        .help("a parameter has one declaration; keep the one you mean");
        r.push(p);
        return None;
    }
    let mut default = None;
    let mut list = false;
    for e in node.entries().iter().filter(|e| e.name().is_some()) {
        let key = e.name().map_or("", |n| n.value());
        if !PARAM_PROPS.contains(&key) {
            let p = problem(
                "unknown_property",
                format!("unknown property `{key}` on `param`"),
            )
            .label(loc(id, e.span()), "not a property of `param`")
            .help_opt(did_you_mean(key, PARAM_PROPS.iter().copied()))
            .help("`param` takes `default=` and `list=`");
            r.push(p);
            continue;
        }
        if key == "list" {
            match e.value() {
                KdlValue::Bool(b) => list = *b,
                _ => {
                    let p = problem("wrong_type", "`list=` is #true or #false")
                        .label(loc(id, e.span()), "not a boolean")
                        .help("`list=#true`: the value is words separated by spaces, each an argument where `\"${name}\"` stands");
                    r.push(p);
                }
            }
            continue;
        }
        match text_of(e.value()) {
            Some(text) => {
                let ty = match e.value() {
                    KdlValue::Integer(_) | KdlValue::Float(_) => ParamType::Number,
                    KdlValue::Bool(_) => ParamType::Bool,
                    _ => ParamType::Text,
                };
                default = Some((Sp::new(text, loc(id, e.span())), ty))
            }
            None => {
                let p = problem("wrong_type", "a parameter's default cannot be #null")
                    .label(loc(id, e.span()), "#null");
                r.push(p);
                return None;
            }
        }
    }
    let mut values = Vec::new();
    let mut seen_values = false;
    let mut whens = Vec::new();
    for c in node.children().map_or(&[][..], |d| d.nodes()) {
        let cname = c.name().value();
        if !PARAM_CHILDREN.contains(&cname) {
            let p = problem("unknown_node", format!("unknown node `{cname}` in `param`"))
                .label(loc(id, c.name().span()), "not allowed in `param`")
                .help("`param` accepts `values` and `when`");
            r.push(p);
            continue;
        }
        if cname == "when" {
            whens.extend(when(r, id, c, params));
            continue;
        }
        if seen_values {
            let p = problem("duplicate", "`values` is given twice in `param`")
                .label(loc(id, c.name().span()), "given again here")
                .help("list every allowed value in one `values`");
            r.push(p);
            continue;
        }
        seen_values = true;
        for e in c.entries() {
            match (e.name(), text_of(e.value())) {
                (None, Some(text)) => values.push(Sp::new(text, loc(id, e.span()))),
                _ => {
                    let p = problem(
                        "wrong_type",
                        "`values` lists the values a parameter may take, as arguments",
                    )
                    .label(loc(id, e.span()), "not a value");
                    r.push(p);
                }
            }
        }
    }
    let has_default = default.is_some();
    let (default, ty) =
        match default {
            Some(d) => d,
            None => {
                let p = problem(
            "missing",
            format!("parameter `{}` has no default", name.value),
        )
        .label(name.loc, "needs `default=`")
        .help("a plan runs without `--set`: give the value it uses then, e.g. `default=\"tiny\"`");
                r.push(p);
                // kept, so the values that use it are not reported as naming no parameter
                (Sp::new(String::new(), name.loc), ParamType::Text)
            }
        };
    // a list's words are text, whatever the default's first word looks like
    let ty = if list { ParamType::List } else { ty };
    if let Some(bad) = outside(&values, ty, &default.value).filter(|_| has_default) {
        let p = problem(
            "bad_value",
            format!(
                "the default of parameter `{}` is not one of its values",
                name.value
            ),
        )
        .label(default.loc, format!("`{bad}` is not in `values`"))
        .help(format!("`{}` takes {}", name.value, quoted(&values)));
        r.push(p); // and kept, as a declaration without a default is
    }
    for w in &whens {
        check_when_value(r, &name.value, ty, &values, w);
    }
    // the first `when` whose parameter has its value gives the default
    let default = whens
        .into_iter()
        .find(|w| w.holds)
        .map_or(default, |w| w.result);
    Some(PlanParam {
        value: default.value.clone(),
        name,
        default,
        ty,
        values,
        set: false,
        used: false,
    })
}

/// One `when other="value" result` of a `param`: whether it holds (the parameter `other`,
/// declared before, has that value) and the default it gives then.
struct When {
    holds: bool,
    result: Sp<String>,
}

/// Reads `when other="value" result`; `None` (after reporting) when it is malformed or names
/// no parameter declared before this one.
fn when(r: &mut Reporter, id: SourceId, c: &KdlNode, params: &mut [PlanParam]) -> Option<When> {
    let at = loc(id, c.name().span());
    let conditions: Vec<&KdlEntry> = c.entries().iter().filter(|e| e.name().is_some()).collect();
    let results: Vec<&KdlEntry> = c.entries().iter().filter(|e| e.name().is_none()).collect();
    let ([condition_entry], [result]) = (conditions.as_slice(), results.as_slice()) else {
        let p = problem(
            "missing",
            "`when` takes one parameter's value and the default it gives then: `when scale=\"tiny\" 200`",
        )
        .label(at, "needs one `name=value` and one value");
        r.push(p);
        return None;
    };
    let Some(text) = text_of(result.value()) else {
        let p = problem("wrong_type", "`when` takes values, not #null")
            .label(loc(id, c.span()), "#null");
        r.push(p);
        return None;
    };
    let holds = condition(r, id, condition_entry, params, Readable::DeclaredBefore)?;
    Some(When {
        holds,
        result: Sp::new(text, loc(id, result.span())),
    })
}

/// Which parameters a `when` may read: a `param`'s, those declared before it; a block's,
/// those of its file and the files importing it.
#[derive(Clone, Copy)]
pub(crate) enum Readable {
    DeclaredBefore,
    InScope,
}

impl Readable {
    fn message(self) -> &'static str {
        match self {
            Readable::DeclaredBefore => "which is not declared before this one",
            Readable::InScope => "which this file and the files importing it do not declare",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Readable::DeclaredBefore => "no parameter of this name declared before",
            Readable::InScope => "no parameter of this name",
        }
    }
    fn help(self) -> &'static str {
        match self {
            Readable::DeclaredBefore => {
                "a `when` reads a parameter declared before it (in this file or one that imports it)"
            }
            Readable::InScope => {
                "a `when` reads a parameter declared in its file or in one that imports it"
            }
        }
    }
}

/// Reads one `other="value"` of a `when` (a `param`'s or a block's): whether parameter
/// `other` has that value. `None` after reporting when `other` is not among `params` or
/// never takes that value. The parameter it reads is used by it, as by a `${name}`.
pub(crate) fn condition(
    r: &mut Reporter,
    id: SourceId,
    condition: &KdlEntry,
    params: &mut [PlanParam],
    readable: Readable,
) -> Option<bool> {
    let other = condition.name().map_or("", |n| n.value());
    let Some(at) = params.iter().position(|p| p.name.value == other) else {
        let before: Vec<String> = params
            .iter()
            .map(|p| format!("`{}`", p.name.value))
            .collect();
        let p = problem(
            "dangling",
            format!("`when` reads parameter `{other}`, {}", readable.message()),
        )
        .label(loc(id, condition.span()), readable.label())
        .help_opt(did_you_mean(
            other,
            params.iter().map(|p| p.name.value.as_str()),
        ))
        .help(if before.is_empty() {
            format!("{}; none is", readable.help())
        } else {
            format!("{}: {}", readable.help(), before.join(", "))
        });
        r.push(p);
        return None;
    };
    params[at].used = true;
    let other_param = &params[at];
    let Some(wanted) = text_of(condition.value()) else {
        let p = problem("wrong_type", "`when` takes values, not #null")
            .label(loc(id, condition.span()), "#null");
        r.push(p);
        return None;
    };
    if !other_param.values.is_empty() && !other_param.values.iter().any(|v| v.value == wanted) {
        let p = problem(
            "bad_value",
            format!("`{wanted}` is not one of the values of parameter `{other}`"),
        )
        .label(loc(id, condition.span()), "never holds")
        .help(format!("`{other}` takes {}", quoted(&other_param.values)));
        r.push(p);
        return None;
    }
    Some(other_param.value == wanted)
}

/// A `when`'s default must be one the parameter could take from `--set`: of the default's
/// type, and among `values` if it has them.
fn check_when_value(r: &mut Reporter, name: &str, ty: ParamType, values: &[Sp<String>], w: &When) {
    if let Some(bad) = outside(values, ty, &w.result.value) {
        let p = problem(
            "bad_value",
            format!("a `when` of parameter `{name}` gives a value not among its values"),
        )
        .label(w.result.loc, format!("`{bad}` is not in `values`"))
        .help(format!("`{name}` takes {}", quoted(values)));
        r.push(p);
    } else if !same_type(ty, &w.result.value) {
        let p = problem(
            "wrong_type",
            format!(
                "a `when` of parameter `{name}` gives a value of another type than its default"
            ),
        )
        .label(w.result.loc, "not of the default's type");
        r.push(p);
    }
}

/// Replaces every `${name}` in the values of `doc` (except in `param` declarations),
/// marking the parameters it uses.
pub(crate) fn substitute(
    r: &mut Reporter,
    id: SourceId,
    doc: &mut KdlDocument,
    params: &mut [PlanParam],
) {
    for node in doc.nodes_mut() {
        if node.name().value() == "param" {
            continue;
        }
        substitute_node(r, id, node, params);
    }
}

fn substitute_node(r: &mut Reporter, id: SourceId, node: &mut KdlNode, params: &mut [PlanParam]) {
    let entries = std::mem::take(node.entries_mut());
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let KdlValue::String(s) = e.value() else {
            out.push(e);
            continue;
        };
        if !s.contains("${") {
            out.push(e);
            continue;
        }
        let at = loc(id, e.span());
        // a shell command (`run`) keeps its own `${VAR}`s: only declared parameters are
        // substituted there
        let shell = node.name().value() == "run";
        match expand(s, params, shell) {
            Err(problem) => {
                r.push(problem.label_at(at));
                out.push(e);
            }
            Ok(Expanded::Text(text)) => {
                let mut e = e;
                e.set_value(KdlValue::String(text));
                out.push(e);
            }
            Ok(Expanded::Whole(values)) => {
                if e.name().is_some() && values.len() > 1 {
                    let p = problem(
                        "wrong_type",
                        "a parameter that holds several values stands only for a node's arguments",
                    )
                    .label(at, "a property takes one value")
                    .help("give the parameter one value here, or use it as an argument list");
                    r.push(p);
                    out.push(e);
                    continue;
                }
                for v in values {
                    let mut n = e.clone();
                    n.set_value(v);
                    n.set_span(e.span());
                    out.push(n);
                }
            }
        }
    }
    *node.entries_mut() = out;
    if let Some(children) = node.children_mut() {
        for c in children.nodes_mut() {
            substitute_node(r, id, c, params);
        }
    }
}

enum Expanded {
    /// `"${name}"` alone: the value read as KDL values.
    Whole(Vec<KdlValue>),
    /// References inside longer text: the text with each replaced.
    Text(String),
}

/// A problem in a reference, placed at the string that holds it by the caller.
struct RefProblem {
    message: String,
    label: String,
    help: Option<String>,
}

impl RefProblem {
    fn label_at(self, at: Loc) -> crate::diagnostics::P {
        problem("dangling", self.message)
            .label(at, self.label)
            .help_opt(self.help)
    }
}

/// Whether `${name}` names a parameter of `params`, or in a shell command (`shell`) is the
/// shell's own (an undeclared or non-name reference such as `${HOME}`, `${X:-default}`),
/// kept as written.
fn is_shells(name: &str, params: &[PlanParam], shell: bool) -> bool {
    let a_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    shell && !(a_name && params.iter().any(|p| p.name.value == name))
}

fn expand(s: &str, params: &mut [PlanParam], shell: bool) -> Result<Expanded, RefProblem> {
    if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
        if !name.contains(['{', '}', '$']) && !is_shells(name, params, shell) {
            let p = find(name, params)?;
            return Ok(Expanded::Whole(whole_value(&p.value, p.ty)));
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let Some(end) = tail.find('}') else {
                return Err(RefProblem {
                    message: "`${` without its closing `}`".to_string(),
                    label: "an unclosed parameter reference".to_string(),
                    help: Some(
                        "write `${name}` to use a parameter, `$${` for a literal `${`".to_string(),
                    ),
                });
            };
            let name = &tail[..end];
            if is_shells(name, params, shell) {
                out.push_str(&after[..end + 3]);
            } else {
                out.push_str(&find(name, params)?.value);
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(Expanded::Text(out))
}

fn find<'p>(name: &str, params: &'p mut [PlanParam]) -> Result<&'p PlanParam, RefProblem> {
    let names: Vec<String> = params.iter().map(|p| p.name.value.clone()).collect();
    if let Some(i) = params.iter().position(|p| p.name.value == name) {
        params[i].used = true;
        return Ok(&params[i]);
    }
    Err(RefProblem {
            message: format!("unknown parameter `{name}`"),
            label: format!("`${{{name}}}` names no declared parameter"),
            help: Some(
                [
                    did_you_mean(name, names.iter().map(String::as_str)),
                    Some(format!(
                        "declare it with `param \"{name}\" default=…` in this file or one that imports it ({}); `$${{` writes a literal `${{`",
                        listed(params)
                    )),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n"),
            ),
        })
}

/// After every file is read: `--set` names no declared parameter are errors (naming the
/// flag), parameters no value uses are warnings.
pub(crate) fn finish(r: &mut Reporter, params: &[PlanParam], settings: &Settings) {
    for (name, value) in settings {
        if params.iter().any(|p| &p.name.value == name) {
            continue;
        }
        let names: Vec<&str> = params.iter().map(|p| p.name.value.as_str()).collect();
        let mut p = problem(
            "bad_value",
            format!("`--set {name}={value}`: the plan declares no parameter `{name}`"),
        )
        .help_opt(did_you_mean(name, names.iter().copied()))
        .help(listed(params));
        if let Some(first) = params.first() {
            p = p.label(first.name.loc, "parameters are declared like this one");
        }
        r.push(p);
    }
    for p in params.iter().filter(|p| !p.used) {
        let w = problem(
            "unused",
            format!("parameter `{}` is never used", p.name.value),
        )
        .label(
            p.name.loc,
            "declared here, but no value says `${…}` with it",
        )
        .help(format!(
            "use it as `\"${{{}}}\"` in a value, or delete the declaration",
            p.name.value
        ));
        r.warn(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_value_of_numbers_becomes_that_many_numbers() {
        assert_eq!(
            whole_value("1 2 4", ParamType::Number),
            vec![
                KdlValue::Integer(1),
                KdlValue::Integer(2),
                KdlValue::Integer(4)
            ]
        );
        assert_eq!(
            whole_value("tiny", ParamType::Text),
            vec![KdlValue::String("tiny".into())]
        );
        assert_eq!(
            whole_value("8s", ParamType::Text),
            vec![KdlValue::String("8s".into())]
        );
        assert_eq!(
            whole_value("#true", ParamType::Text),
            vec![KdlValue::Bool(true)]
        );
        assert_eq!(
            whole_value("1 x", ParamType::Text),
            vec![KdlValue::String("1 x".into())]
        );
    }

    #[test]
    fn a_number_default_takes_only_numbers() {
        assert!(same_type(ParamType::Number, "1 2 4"));
        assert!(!same_type(ParamType::Number, "many"));
        assert!(same_type(ParamType::Text, "1"));
        assert!(!same_type(ParamType::Bool, "yes"));
    }
}
