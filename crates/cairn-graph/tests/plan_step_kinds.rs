//! Steps of registered kinds that plans declare themselves (`step "…" kind="…"`): resolved
//! into steps of that kind with their properties as the definition, their kind's code
//! version in their keys, wired to what they need; a kind no registry holds is refused.

use cairn_graph::{resolve, resolve_with_kinds, step_key, ResolveError, StepKind};

const NOTE: StepKind = StepKind::new("note", "note/1");
const NOTE_2: StepKind = StepKind::new("note", "note/2");

const PLAN: &str = r#"
step "made" { run "echo made > m.txt"; output "m.txt" }
step "hello" kind="note" text="quiet machine" level=2 {
    needs "made" as="in"
    matrix { size "s" "m" }
    passes 2
}
"#;

fn plan() -> cairn_plan::Plan {
    cairn_plan::parse_str("p.kdl", PLAN).unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)))
}

#[test]
fn a_registered_kinds_steps_expand_with_their_properties_and_needs() {
    let g = resolve_with_kinds(&plan(), &[NOTE]).expect("resolves");
    let notes: Vec<_> = g.steps.iter().filter(|s| s.kind == NOTE).collect();
    let addresses: Vec<&str> = notes.iter().map(|s| s.address.as_str()).collect();
    // in the plan's order of the axis' values
    assert_eq!(
        addresses,
        [
            "note/hello[size=s]#1",
            "note/hello[size=s]#2",
            "note/hello[size=m]#1",
            "note/hello[size=m]#2"
        ]
    );
    assert_eq!(notes.len(), 4);
    let s = notes[0];
    assert_eq!(s.definition["props"]["text"], "quiet machine");
    assert_eq!(s.definition["props"]["level"], 2);
    assert!(s.definition["params"]["size"].is_string());
    assert_eq!(s.code, "note/1");
    assert_eq!(s.inputs.len(), 1);
    assert_eq!(s.inputs[0].mount, "in");
    assert_eq!(g.steps[s.inputs[0].from].name, "made");
}

#[test]
fn the_kinds_code_version_is_in_the_key() {
    let key = |kind| {
        let g = resolve_with_kinds(&plan(), &[kind]).expect("resolves");
        let s = g.steps.iter().find(|s| s.kind.as_str() == "note").unwrap();
        step_key(s, &["00".repeat(32).as_str()], None).hash()
    };
    assert_ne!(key(NOTE), key(NOTE_2));
}

#[test]
fn a_kind_no_registry_holds_is_refused() {
    let e = resolve(&plan()).unwrap_err();
    assert!(
        matches!(&e, ResolveError::UnknownKind { step, kind } if step == "hello" && kind == "note"),
        "{e}"
    );
}
