//! End-to-end: the CLI surface. `check`, diagnostics and exit codes, `graph` in both
//! formats, `fmt --check`/`fmt`, `plan -vv`, bad selectors and unknown steps.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{fixture, Sandbox};

/// Copy a fixture plan into the sandbox under `name`; returns the name.
fn copy_fixture<'a>(sb: &Sandbox, fixture_name: &str, name: &'a str) -> &'a str {
    let text = std::fs::read_to_string(fixture(fixture_name)).expect("fixture");
    sb.write(name, &text);
    name
}

#[test]
fn check_prints_step_counts() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let r = sb.cairn(&[], &["check", plan]);
    r.expect_code(0);
    // gen[n=1], gen[n=2], sum, lone
    assert!(r.stdout.contains("4 steps"), "{r:?}");
    assert!(r.stdout.contains("basic"), "names the study: {r:?}");
    // check writes nothing into the store
    assert_eq!(sb.record_count(), 0);
}

#[test]
fn check_of_the_shipped_fixture_in_place() {
    let sb = Sandbox::new();
    let path = fixture("basic.kdl");
    let r = sb.cairn(&[], &["check", path.to_str().expect("utf-8 path")]);
    r.expect_code(0);
}

#[test]
fn a_bad_plan_exits_2_with_a_diagnostic_naming_the_file() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "bad_unknown_node.kdl", "broken.kdl");
    for cmd in ["check", "plan", "run", "graph"] {
        let r = sb.cairn(&[], &[cmd, plan]);
        r.expect_code(2);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(all.contains("broken.kdl"), "`{cmd}` names the file: {all}");
        assert!(all.contains("runn"), "`{cmd}` names the bad node: {all}");
        // line 3 of the fixture holds the bad node
        assert!(
            all.contains("broken.kdl:3"),
            "`{cmd}` points at the line: {all}"
        );
    }
    assert_eq!(sb.record_count(), 0);
}

#[test]
fn other_bad_input_exits_2() {
    let sb = Sandbox::new();
    let cases = [
        (
            "cycle.kdl",
            "study \"c\"\nstep \"a\" { needs \"b\"; run \"true\"; output \"x\" }\nstep \"b\" { needs \"a\"; run \"true\"; output \"y\" }\n",
        ),
        (
            "dangling.kdl",
            "study \"c\"\nstep \"a\" { needs \"zzz\"; run \"true\"; output \"x\" }\n",
        ),
        ("syntax.kdl", "study \"c\"\nstep \"a\" { run \"true\"\n"),
    ];
    for (name, text) in cases {
        sb.write(name, text);
        let r = sb.cairn(&[], &["check", name]);
        r.expect_code(2);
        assert!(r.stderr.contains(name), "{name}: {r:?}");
    }
    let r = sb.cairn(&[], &["check", "does-not-exist.kdl"]);
    r.expect_code(2);
    assert!(r.stderr.contains("does-not-exist.kdl"), "{r:?}");
}

/// Node id → label, and edges as (from label, to label), from `dot` or `mermaid` text.
fn parse_graph(text: &str, arrow: &str) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut raw_edges = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some((a, b)) = line.split_once(arrow) {
            let clean = |s: &str| {
                s.trim()
                    .trim_end_matches(';')
                    .trim()
                    .trim_matches('"')
                    .to_string()
            };
            raw_edges.push((clean(a), clean(b)));
        } else if let Some(start) = line.find("label=\"") {
            let id = line.split_whitespace().next().unwrap_or("").to_string();
            let rest = &line[start + 7..];
            let label = &rest[..rest.find('"').expect("closing quote")];
            labels.insert(id, label.to_string());
        } else if let Some((id, rest)) = line.split_once("[\"") {
            let label = &rest[..rest.find('"').expect("closing quote")];
            labels.insert(id.trim().to_string(), label.to_string());
        }
    }
    let name = |id: &String| labels.get(id).cloned().unwrap_or_else(|| id.clone());
    let edges = raw_edges.iter().map(|(a, b)| (name(a), name(b))).collect();
    (labels.into_values().collect(), edges)
}

#[test]
fn graph_in_dot_and_mermaid_has_every_step_and_edge() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let nodes: BTreeSet<String> = ["gen[n=1]", "gen[n=2]", "sum", "lone"]
        .map(String::from)
        .into();
    let edges: BTreeSet<(String, String)> = [("gen[n=1]", "sum"), ("gen[n=2]", "sum")]
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .into();

    let dot = sb.cairn(&[], &["graph", "--format", "dot", plan]);
    dot.expect_code(0);
    assert!(dot.stdout.contains("digraph"), "{}", dot.stdout);
    for n in &nodes {
        assert!(
            dot.stdout.contains(n.as_str()),
            "dot has {n}: {}",
            dot.stdout
        );
    }
    let (n, e) = parse_graph(&dot.stdout, "->");
    assert_eq!(n, nodes, "{}", dot.stdout);
    assert_eq!(e, edges, "{}", dot.stdout);

    // dot is the default
    let default = sb.cairn(&[], &["graph", plan]);
    default.expect_code(0);
    assert_eq!(default.stdout, dot.stdout);

    let mm = sb.cairn(&[], &["graph", "--format", "mermaid", plan]);
    mm.expect_code(0);
    for n in &nodes {
        assert!(
            mm.stdout.contains(n.as_str()),
            "mermaid has {n}: {}",
            mm.stdout
        );
    }
    let (n, e) = parse_graph(&mm.stdout, "-->");
    assert_eq!(n, nodes, "{}", mm.stdout);
    assert_eq!(e, edges, "{}", mm.stdout);

    let bad = sb.cairn(&[], &["graph", "--format", "svg", plan]);
    bad.expect_code(2);
}

#[test]
fn fmt_check_then_fmt_then_check_again() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "unformatted.kdl", "u.kdl");
    let original = std::fs::read_to_string(sb.path().join(plan)).expect("plan");
    let keys_before: Vec<_> = sb
        .plan_json(plan)
        .into_iter()
        .map(|s| (s["address"].clone(), s["key"].clone()))
        .collect();

    let r = sb.cairn(&[], &["fmt", "--check", plan]);
    r.expect_code(1);
    assert!(
        r.stdout.contains("u.kdl") || r.stderr.contains("u.kdl"),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path().join(plan)).expect("plan"),
        original,
        "--check does not write"
    );

    sb.cairn(&[], &["fmt", plan]).expect_code(0);
    let formatted = std::fs::read_to_string(sb.path().join(plan)).expect("plan");
    assert_ne!(formatted, original);
    assert!(
        formatted.contains("// e2e fixture: valid but not in canonical formatting"),
        "comments survive: {formatted}"
    );

    sb.cairn(&[], &["fmt", "--check", plan]).expect_code(0);
    // idempotent
    sb.cairn(&[], &["fmt", plan]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(sb.path().join(plan)).expect("plan"),
        formatted
    );
    // formatting changes no key
    let keys_after: Vec<_> = sb
        .plan_json(plan)
        .into_iter()
        .map(|s| (s["address"].clone(), s["key"].clone()))
        .collect();
    assert_eq!(keys_before, keys_after);

    // a formatted fixture passes --check as is
    let b = copy_fixture(&sb, "basic.kdl", "b.kdl");
    sb.cairn(&[], &["fmt", "--check", b]).expect_code(0);
}

#[test]
fn plan_vv_shows_the_key_json() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let r = sb.cairn(&["-vv"], &["plan", plan]);
    r.expect_code(0);
    assert!(r.stdout.contains("\"schema\""), "{r:?}");
    assert!(r.stdout.contains("echo lone > lone.txt"), "{r:?}");

    // without -vv no key JSON
    let r = sb.cairn(&[], &["plan", plan]);
    r.expect_code(0);
    assert!(!r.stdout.contains("\"schema\""), "{r:?}");
}

#[test]
fn an_unknown_selector_kind_exits_2() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let r = sb.cairn(&[], &["run", "--only", "kind:nope", plan]);
    r.expect_code(2);
    assert!(r.stderr.contains("nope"), "{r:?}");
    let r = sb.cairn(&[], &["run", "--fresh", "kind:nope", plan]);
    r.expect_code(2);
    assert_eq!(sb.record_count(), 0, "nothing ran");
}

#[test]
fn only_with_a_selector_that_matches_nothing_exits_2() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    // a typo in --only must not look like a successful (empty) run
    let r = sb.cairn(&[], &["run", "--only", "gne", plan]);
    assert_eq!(
        r.code,
        Some(2),
        "`run --only gne` selects no step; expected exit 2 (bad selector): {r:?}"
    );
}

#[test]
fn selectors_by_kind_and_pattern_work() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let ev = sb.run_ok(plan, &["--only", "gen[n=2]"]);
    assert_eq!(ev.finished(), common::set(["gen[n=2]"]));
    let ev = sb.run_ok(plan, &["--only", "l*"]);
    assert_eq!(ev.finished(), common::set(["lone"]));
    let ev = sb.run_ok(plan, &["--only", "kind:command"]);
    assert_eq!(ev.finished(), common::set(["gen[n=1]", "sum"]));
}

#[test]
fn explain_of_an_unknown_step_exits_2() {
    let sb = Sandbox::new();
    let plan = copy_fixture(&sb, "basic.kdl", "basic.kdl");
    let r = sb.cairn(&[], &["explain", plan, "nope"]);
    r.expect_code(2);
    assert!(r.stderr.contains("nope"), "{r:?}");
    // a known one works
    let r = sb.cairn(&[], &["explain", plan, "sum"]);
    r.expect_code(0);
    assert!(r.stdout.contains("sum"), "{r:?}");
}

#[test]
fn usage_errors_exit_2_and_version_exits_0() {
    let sb = Sandbox::new();
    sb.cairn(&[], &["no-such-command"]).expect_code(2);
    sb.cairn(&[], &["run"]).expect_code(2);
    let v = sb.cairn(&[], &["--version"]);
    v.expect_code(0);
    assert!(v.stdout.contains("cairn"), "{v:?}");
}
