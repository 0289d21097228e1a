//! `docs/plan-language.md` against the parser's grammar table: every node, property and
//! fixed value the parser accepts is in the reference under its node, everything the
//! reference lists is accepted, and the parser accepts exactly the table's children and
//! properties (checked by parsing a node of each).

use std::collections::{BTreeMap, BTreeSet};

use cairn_plan::grammar;

/// One `### \`path\`` section of the reference: the names its top-level bullets start with
/// (`` - `name` `` a child, `` - `name=` `` a property, `<…>` any) and its text.
#[derive(Default)]
struct Section {
    children: BTreeSet<String>,
    props: BTreeSet<String>,
    values: BTreeSet<String>,
    text: String,
}

fn reference() -> BTreeMap<String, Section> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/plan-language.md");
    let text = std::fs::read_to_string(path).expect("docs/plan-language.md");
    let mut sections: BTreeMap<String, Section> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = heading
                .trim()
                .strip_prefix('`')
                .and_then(|h| h.split('`').next())
                .unwrap_or_else(|| panic!("a node's heading is its path in backticks: {line}"));
            assert!(
                !sections.contains_key(name),
                "`{name}` has two sections in the reference"
            );
            sections.insert(name.to_string(), Section::default());
            current = Some(name.to_string());
            continue;
        }
        if line.starts_with('#') {
            current = None;
            continue;
        }
        let Some(section) = current.as_ref().and_then(|c| sections.get_mut(c)) else {
            continue;
        };
        section.text.push_str(line);
        section.text.push('\n');
        if let Some(rest) = line.strip_prefix("- `") {
            let name = rest.split('`').next().unwrap_or_default();
            match name.strip_suffix('=') {
                Some(prop) => section.props.insert(prop.to_string()),
                None => section.children.insert(name.to_string()),
            };
        }
        if let Some(rest) = line.strip_prefix("Values:") {
            for value in rest.split('`').skip(1).step_by(2) {
                section.values.insert(value.trim_matches('"').to_string());
            }
        }
    }
    sections
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn the_reference_lists_exactly_what_the_grammar_accepts() {
    let sections = reference();
    let mut wrong = Vec::new();
    for spec in grammar() {
        let Some(s) = sections.get(&spec.path) else {
            wrong.push(format!(
                "`{}` has no section `### `{}``",
                spec.path, spec.path
            ));
            continue;
        };
        let mut children = set(&spec.children);
        if spec.any_children {
            children.insert("<axis>".into());
        }
        let mut props = set(&spec.props);
        if spec.any_props {
            props.insert("<key>".into());
        }
        if s.children != children {
            wrong.push(format!(
                "`{}`: the reference lists children {:?}, the parser accepts {:?}",
                spec.path, s.children, children
            ));
        }
        if s.props != props {
            wrong.push(format!(
                "`{}`: the reference lists properties {:?}, the parser accepts {:?}",
                spec.path, s.props, props
            ));
        }
        if s.values != set(&spec.values) {
            wrong.push(format!(
                "`{}`: the reference's `Values:` are {:?}, the parser accepts {:?}",
                spec.path, s.values, spec.values
            ));
        }
        for (prop, values) in &spec.prop_values {
            for v in values {
                if !s.text.contains(&format!("`{prop}=\"{v}\"`")) {
                    wrong.push(format!(
                        "`{}`: `{prop}=\"{v}\"` is not mentioned",
                        spec.path
                    ));
                }
            }
        }
        for single in &spec.single {
            let once = s
                .text
                .lines()
                .any(|l| l.starts_with(&format!("- `{single}`")) && l.contains("(once)"));
            if !once {
                wrong.push(format!(
                    "`{}`: `{single}` may be given once; its bullet should say `(once)`",
                    spec.path
                ));
            }
        }
    }
    let paths: BTreeSet<&str> = grammar().iter().map(|s| s.path.as_str()).collect();
    for name in sections.keys() {
        if !paths.contains(name.as_str()) {
            wrong.push(format!(
                "the reference has a section `{name}` the grammar does not know"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/plan-language.md is out of date:\n{}",
        wrong.join("\n")
    );
}

/// A plan text holding `leaf` (a child's or property's text) inside the nodes of `path`.
fn nested(path: &str, leaf: &str) -> String {
    let mut open = String::new();
    let mut depth = 0;
    for segment in path.split('/').filter(|s| *s != "plan") {
        let node = match segment {
            "step[kind]" => "step \"x\" kind=\"k\"".to_string(),
            "build" => "build \"debian:x\"".to_string(),
            // nodes that take no argument
            "debian" | "link" | "passes" | "matrix" | "where" | "option" | "env" => {
                segment.to_string()
            }
            _ if grammar()
                .iter()
                .any(|s| s.path == format!("dataset/{segment}")) =>
            {
                segment.to_string()
            }
            other => format!("{other} \"x\""),
        };
        open.push_str(&node);
        open.push_str(" { ");
        depth += 1;
    }
    let mut text = open;
    text.push_str(leaf);
    text.push_str(&" }".repeat(depth));
    text
}

/// The codes of the shape problems `text` has.
fn shape_problems(text: &str) -> Vec<String> {
    match cairn_plan::parse_str("reference.kdl", text) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .filter(|p| {
                p.code().ends_with("unknown_node") || p.code().ends_with("unknown_property")
            })
            .map(|p| format!("{}: {}", p.code(), p.message()))
            .collect(),
    }
}

#[test]
fn the_parser_accepts_every_child_and_property_of_the_grammar_and_no_other() {
    let mut wrong = Vec::new();
    for spec in grammar() {
        for child in &spec.children {
            let text = nested(&spec.path, &format!("{child} \"x\""));
            let problems = shape_problems(&text);
            if !problems.is_empty() {
                wrong.push(format!(
                    "`{}` refuses `{child}`: {problems:?}\n{text}",
                    spec.path
                ));
            }
        }
        if !spec.children.is_empty() && !spec.any_children {
            let text = nested(&spec.path, "not-a-node \"x\"");
            if shape_problems(&text).is_empty() {
                wrong.push(format!("`{}` accepts an unknown child\n{text}", spec.path));
            }
        }
        let (parent, leaf) = match spec.path.rsplit_once('/') {
            Some((parent, leaf)) => (parent.to_string(), leaf.to_string()),
            None => ("plan".to_string(), spec.path.clone()),
        };
        let leaf_node = |props: &str| match leaf.as_str() {
            "step[kind]" => format!("step \"x\" kind=\"k\" {props}"),
            "debian" | "link" | "passes" => format!("{leaf} {props}"),
            _ => format!("{leaf} \"x\" {props}"),
        };
        for prop in &spec.props {
            let text = nested(&parent, &leaf_node(&format!("{prop}=\"1\"")));
            let problems = shape_problems(&text);
            if !problems.is_empty() {
                wrong.push(format!(
                    "`{}` refuses `{prop}=`: {problems:?}\n{text}",
                    spec.path
                ));
            }
        }
        if !spec.any_props && spec.path != "plan" {
            let text = nested(&parent, &leaf_node("not-a-property=\"1\""));
            if shape_problems(&text).is_empty() {
                wrong.push(format!(
                    "`{}` accepts an unknown property\n{text}",
                    spec.path
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
