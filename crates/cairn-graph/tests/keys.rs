//! Golden keys and key invariants: literal key values are pinned, and keys follow
//! definitions — not names, order, formatting or comments.

use cairn_graph::{resolve, step_key, Fingerprint, StepGraph};
use proptest::prelude::*;

fn graph(text: &str) -> StepGraph {
    let plan = cairn_plan::parse_str("keys.kdl", text)
        .unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    resolve(&plan).expect("resolves")
}

fn fingerprint() -> Fingerprint {
    Fingerprint {
        cpu_model: "Test CPU @ 1.00GHz".into(),
        cores: 2,
        threads: 2,
        memory_gib: 24,
        kernel: "6.1.0-test".into(),
        runtime: "host".into(),
    }
}

/// Keys of every step by address; inputs get a fixed fake digest derived from their address.
fn keys(g: &StepGraph) -> Vec<(String, String)> {
    let fp = fingerprint();
    let fake: Vec<String> = g
        .steps
        .iter()
        .map(|s| blake3::hash(s.address.as_bytes()).to_hex().to_string())
        .collect();
    let mut out: Vec<(String, String)> = g
        .steps
        .iter()
        .map(|s| {
            let ds: Vec<&str> = s.inputs.iter().map(|i| fake[i.from].as_str()).collect();
            (s.address.clone(), step_key(s, &ds, Some(&fp)).hash())
        })
        .collect();
    out.sort();
    out
}

const PLAN: &str = r#"
study "golden"
step "gen" {
    run "echo $CAIRN_PARAM_N > out.txt"
    output "out.txt"
    env MODE="fast"
    matrix { n 1 2 }
}
step "sum" {
    needs "gen"
    run "cat gen/*/out.txt > all.txt"
    output "all.txt"
    timeout "5s"
}
step "time" {
    run "date +%N > t"
    output "t"
    measure #true
    passes 2
}
"#;

#[test]
fn golden_keys() {
    let k = keys(&graph(PLAN));
    let got: Vec<String> = k.iter().map(|(a, h)| format!("{a} {h}")).collect();
    // These literals pin the key schema. If this test fails, every user's cache is
    // invalidated by the change: bump KEY_SCHEMA or a kind's code version on purpose,
    // then update the literals.
    let want = [
        "gen[n=1] 8b8e2152736f655ae3c770ae7289f764a4653197957957f875ca05124417ef92",
        "gen[n=2] 1858779fbb3a8558ec4b2785360aa6620f8132fe0006a02fad5474f3c365d566",
        "sum 712620cca485604d4c759c888ac7af412f3a9eaaa47f6ad439bc5e0a20ea3b12",
        // measurement keys changed deliberately when the fingerprint became the machine's class
        "time#1 1db2fb6c3832ab9f2cf2e4aa7dab041a9284e6b0bafbab08fa2e16eda23bb214",
        "time#2 48eef1f2fef28007fe0ef6149863e6c902bc0161de8310490a59242aaa91506e",
    ];
    assert_eq!(got, want);
}

#[test]
fn golden_key_json() {
    // The canonical text that is hashed, pinned whole: field order and map order matter.
    let g = graph(PLAN);
    let sum = g.steps.iter().find(|s| s.address == "sum").expect("sum");
    let ds: Vec<String> = sum
        .inputs
        .iter()
        .map(|i| format!("{:064x}", i.from))
        .collect();
    let ds: Vec<&str> = ds.iter().map(String::as_str).collect();
    let json = serde_json::to_string(&step_key(sum, &ds, Some(&fingerprint()))).expect("json");
    assert_eq!(
        json,
        concat!(
            r#"{"schema":1,"kind":"command","definition":{"env":{},"inputs":{},"measure":false,"#,
            r#""outputs":["all.txt"],"params":{},"run":"cat gen/*/out.txt > all.txt","timeout_ms":5000},"#,
            r#""inputs":[{"mount":"gen/n=1","digest":"0000000000000000000000000000000000000000000000000000000000000000"},"#,
            r#"{"mount":"gen/n=2","digest":"0000000000000000000000000000000000000000000000000000000000000001"}],"#,
            r#""code":"command/1","pass":1}"#
        )
    );
}

#[test]
fn names_order_formatting_and_comments_change_no_key() {
    let renamed_and_reordered = r#"
// the same study, rewritten
study "other-name" { title "a title changes nothing" }
step "clock" { run "date +%N > t"; output "t"; passes 2; measure #true }
step "sum" {
    timeout "5s"
    output "all.txt"
    run "cat gen/*/out.txt > all.txt"   /* comment */
    needs "gen"
}
step "gen" { matrix { n 1 2; }; env MODE="fast"; output "out.txt"; run "echo $CAIRN_PARAM_N > out.txt" }
"#;
    let a: Vec<String> = keys(&graph(PLAN)).into_iter().map(|(_, k)| k).collect();
    let mut a = a;
    let mut b: Vec<String> = keys(&graph(renamed_and_reordered))
        .into_iter()
        .map(|(_, k)| k)
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn a_new_matrix_value_or_pass_keeps_existing_keys() {
    let base = keys(&graph(PLAN));
    let more = PLAN
        .replace("n 1 2", "n 1 2 3")
        .replace("passes 2", "passes 3");
    let more = keys(&graph(&more));
    for (addr, key) in &base {
        if addr == "sum" {
            continue; // it reads one more input now
        }
        assert!(
            more.contains(&(addr.clone(), key.clone())),
            "{addr} kept its key"
        );
    }
    assert!(more.iter().any(|(a, _)| a == "gen[n=3]"));
    assert!(more.iter().any(|(a, _)| a == "time#3"));
}

#[test]
fn fingerprint_enters_only_measurement_keys() {
    let g = graph(PLAN);
    let mut other = fingerprint();
    other.cpu_model = "Another CPU".into();
    let fp = fingerprint();
    for s in g.steps.iter().filter(|s| s.inputs.is_empty()) {
        let a = step_key(s, &[], Some(&fp)).hash();
        let b = step_key(s, &[], Some(&other)).hash();
        assert_eq!(a == b, !s.measure, "{}", s.address);
    }
}

fn step_text(run: &str, env: &[(String, String)], threads: &[u8], timeout: Option<u8>) -> String {
    let mut s = format!("step \"x\" {{\n    run {run:?}\n    output \"o\"\n");
    for (k, v) in env {
        s += &format!("    env {k}={v:?}\n");
    }
    if !threads.is_empty() {
        let vals: Vec<String> = threads.iter().map(|t| t.to_string()).collect();
        s += &format!("    matrix {{ threads {} }}\n", vals.join(" "));
    }
    if let Some(t) = timeout {
        s += &format!("    timeout \"{t}s\"\n");
    }
    s + "}\n"
}

/// run text, env pairs, matrix values, timeout seconds
type Def = (String, Vec<(String, String)>, Vec<u8>, Option<u8>);

fn arb_def() -> impl Strategy<Value = Def> {
    (
        prop::sample::select(vec!["true", "echo a > o", "echo b > o"]).prop_map(String::from),
        prop::collection::btree_map(
            prop::sample::select(vec!["A", "B"]).prop_map(String::from),
            prop::sample::select(vec!["1", "2"]).prop_map(String::from),
            0..2,
        )
        .prop_map(|m| m.into_iter().collect()),
        prop::collection::btree_set(1u8..4, 0..3).prop_map(|s| s.into_iter().collect()),
        prop::option::of(1u8..3),
    )
}

proptest! {
    /// Two steps have equal keys exactly when their resolved definitions are equal.
    #[test]
    fn key_equality_follows_definition_equality(a in arb_def(), b in arb_def()) {
        let ga = graph(&step_text(&a.0, &a.1, &a.2, a.3));
        let gb = graph(&step_text(&b.0, &b.1, &b.2, b.3));
        let fp = fingerprint();
        for sa in &ga.steps {
            for sb in &gb.steps {
                let ka = step_key(sa, &[], Some(&fp)).hash();
                let kb = step_key(sb, &[], Some(&fp)).hash();
                prop_assert_eq!(ka == kb, sa.definition == sb.definition && sa.pass == sb.pass);
            }
        }
    }
}

/// The definition key: from definitions only — the same whatever the inputs' outputs or
/// the machine, and different when a definition upstream changes.
#[test]
fn definition_keys_follow_definitions_not_outputs() {
    let plan = r#"
study "s"
step "gen" { run "echo 1 > out"; output "out" }
step "sum" { run "cat gen/out > total"; output "total"; needs "gen" }
"#;
    let g = graph(plan);
    let changed = graph(&plan.replace("echo 1", "echo 2"));
    let dk = |g: &StepGraph, a: &str| {
        g.steps
            .iter()
            .find(|s| s.address == a)
            .unwrap()
            .definition_key
            .clone()
    };
    assert_eq!(dk(&g, "sum"), dk(&graph(plan), "sum"), "stable");
    assert_ne!(dk(&g, "gen"), dk(&changed, "gen"));
    assert_ne!(
        dk(&g, "sum"),
        dk(&changed, "sum"),
        "an ancestor's definition changed"
    );
    // outputs never enter: the step key changes with the input's digest, the definition key cannot
    let sum = g.steps.iter().find(|s| s.address == "sum").unwrap();
    let a = step_key(sum, &["0".repeat(64).as_str()], None).hash();
    let b = step_key(sum, &["1".repeat(64).as_str()], None).hash();
    assert_ne!(a, b);
    assert_eq!(sum.definition_key.len(), 64);
}
