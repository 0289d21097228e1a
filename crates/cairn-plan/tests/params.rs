//! Plan parameters: `param` declarations, `${name}` substituted into values, `--set` values
//! checked against the declarations.

use cairn_plan::{parse_str_with, render, Plan, Settings, Value};

const PLAN: &str = r#"
param "scale" default="tiny" { values "tiny" "published" }
param "threads" default="1 4"
param "rows" default=1000
dataset "d" { sysbench tables=1 rows="${rows}" }
workload "w" { sysbench "oltp_read_only"; threads "${threads}"; duration "8s" }
step "s" { run "echo ${scale} $${HOME} $HOME" }
"#;

fn set(pairs: &[(&str, &str)]) -> Settings {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(text: &str, settings: &Settings) -> Plan {
    parse_str_with("p.kdl", text, settings).unwrap_or_else(|e| panic!("{}", render(&e)))
}

fn errors(text: &str, settings: &Settings) -> String {
    match parse_str_with("p.kdl", text, settings) {
        Ok(_) => panic!("should be refused"),
        Err(e) => render(&e),
    }
}

fn threads(plan: &Plan) -> Vec<Value> {
    let w = &plan.workloads[0];
    let p = w.params.iter().find(|p| p.name.value == "threads").unwrap();
    p.values.iter().map(|v| v.value.clone()).collect()
}

#[test]
fn defaults_are_substituted_with_their_types() {
    let plan = parse(PLAN, &Settings::new());
    assert_eq!(threads(&plan), vec![Value::Int(1), Value::Int(4)]);
    assert_eq!(plan.steps[0].run.value, "echo tiny ${HOME} $HOME");
    let rows = &plan.datasets[0].props["rows"];
    assert_eq!(rows.value, Value::Int(1000));
    // the substituted value still points at `"${threads}"` in the text
    let w = &plan.workloads[0];
    let p = w.params.iter().find(|p| p.name.value == "threads").unwrap();
    let span = p.values[0].loc.span;
    assert_eq!(
        &PLAN[span.offset()..span.offset() + span.len()],
        "\"${threads}\""
    );
    assert!(plan.warnings.is_empty());
    let values = plan.param_values();
    assert_eq!(values["scale"], ("tiny".to_string(), "tiny".to_string()));
    assert!(plan.params.iter().all(|p| !p.set));
}

#[test]
fn set_values_replace_the_defaults() {
    let plan = parse(
        PLAN,
        &set(&[
            ("scale", "published"),
            ("threads", "1 2 4 8"),
            ("rows", "50000"),
        ]),
    );
    assert_eq!(
        threads(&plan),
        vec![Value::Int(1), Value::Int(2), Value::Int(4), Value::Int(8)]
    );
    assert_eq!(plan.steps[0].run.value, "echo published ${HOME} $HOME");
    assert_eq!(plan.datasets[0].props["rows"].value, Value::Int(50000));
    assert!(plan.params.iter().all(|p| p.set));
}

#[test]
fn an_unknown_set_name_is_refused_naming_the_flag_and_the_parameters() {
    let text = errors(PLAN, &set(&[("scael", "published")]));
    assert!(text.contains("`--set scael=published`"), "{text}");
    assert!(text.contains("`threads` (default `1 4`)"), "{text}");
}

#[test]
fn a_set_value_outside_values_or_of_another_type_is_refused() {
    let text = errors(PLAN, &set(&[("scale", "huge")]));
    assert!(text.contains("`--set scale=huge`"), "{text}");
    assert!(text.contains("`scale` takes `tiny`, `published`"), "{text}");
    let text = errors(PLAN, &set(&[("rows", "many")]));
    assert!(text.contains("takes numbers"), "{text}");
}

#[test]
fn an_unused_parameter_is_a_warning_not_an_error() {
    let plan = parse(
        "param \"spare\" default=1\nstep \"s\" { run \"true\" }\n",
        &Settings::new(),
    );
    assert_eq!(plan.warnings.len(), 1);
    assert!(plan.warnings[0].is_warning());
    assert!(render(&plan.warnings[0]).contains("parameter `spare` is never used"));
}

#[test]
fn an_imported_file_sees_the_parameters_of_the_file_that_imports_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.kdl"),
        "step \"b\" { run \"echo ${scale}\" }\n",
    )
    .unwrap();
    let root = dir.path().join("p.kdl");
    std::fs::write(
        &root,
        "param \"scale\" default=\"tiny\"\nimport \"lib.kdl\"\n",
    )
    .unwrap();
    let plan = cairn_plan::load_with(&root, &set(&[("scale", "full")])).unwrap();
    assert_eq!(plan.steps[0].run.value, "echo full");
}

#[test]
fn a_plan_without_parameters_reads_as_before() {
    let plan = parse("step \"s\" { run \"echo $HOME\" }\n", &Settings::new());
    assert!(plan.params.is_empty());
    assert_eq!(plan.steps[0].run.value, "echo $HOME");
}

#[test]
fn a_shell_command_keeps_its_own_variables_and_elsewhere_an_unknown_one_is_refused() {
    // `run` is a shell command: an undeclared `${VAR}` or `${VAR:-x}` is the shell's
    let plan = parse(
        "param \"scale\" default=\"tiny\"\nstep \"s\" { run \"echo ${scale} ${LEAK:-none} ${HOME}\" }\n",
        &Settings::new(),
    );
    assert_eq!(plan.steps[0].run.value, "echo tiny ${LEAK:-none} ${HOME}");
    // anywhere else an undeclared name is a typo, refused at its place
    let e = errors(
        "param \"scale\" default=\"tiny\"\nworkload \"w\" { sysbench \"oltp_read_only\"; threads 1; duration \"${scael}\" }\n",
        &Settings::new(),
    );
    assert!(e.contains("unknown parameter `scael`"), "{e}");
}

const SCALED: &str = r#"
param "scale" default="tiny" { values "tiny" "mid" "published" }
param "rows" default=100000 {
    when scale="tiny" 1000
    when scale="mid" 20000
}
dataset "d" { sysbench tables=1 rows="${rows}" }
"#;

#[test]
fn a_when_gives_the_default_while_another_parameter_has_its_value() {
    let rows = |plan: &Plan| plan.datasets[0].props["rows"].value.clone();
    let plan = parse(SCALED, &Settings::new());
    assert_eq!(rows(&plan), Value::Int(1000));
    // `scale` is used by the `when`s that read it
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    // the default this reading gives, so the report says `(default)` and not a `--set`
    assert_eq!(
        plan.param_values()["rows"],
        ("1000".to_string(), "1000".to_string())
    );
    let mid = parse(SCALED, &set(&[("scale", "mid")]));
    assert_eq!(rows(&mid), Value::Int(20000));
    let published = parse(SCALED, &set(&[("scale", "published")]));
    assert_eq!(rows(&published), Value::Int(100000));
    // `--set` wins over every `when`
    let given = parse(SCALED, &set(&[("scale", "tiny"), ("rows", "7")]));
    assert_eq!(rows(&given), Value::Int(7));
    assert!(given.params.iter().all(|p| p.set));
}

#[test]
fn a_when_that_cannot_hold_or_gives_a_wrong_value_is_refused_at_its_place() {
    // a parameter not declared before this one
    let e = errors(
        "param \"rows\" default=1 { when scal=\"tiny\" 2; }\nparam \"scale\" default=\"tiny\"\ndataset \"d\" { sysbench rows=\"${rows}\"; }\nstep \"s\" { run \"echo ${scale}\"; }\n",
        &Settings::new(),
    );
    assert!(
        e.contains("`when` reads parameter `scal`, which is not declared before this one"),
        "{e}"
    );
    // a value the other parameter never takes
    let e = errors(
        "param \"scale\" default=\"tiny\" { values \"tiny\" \"big\"; }\nparam \"rows\" default=1 { when scale=\"huge\" 2; }\ndataset \"d\" { sysbench rows=\"${rows}\"; }\nstep \"s\" { run \"echo ${scale}\"; }\n",
        &Settings::new(),
    );
    assert!(
        e.contains("`huge` is not one of the values of parameter `scale`"),
        "{e}"
    );
    // a default of another type than the parameter's
    let e = errors(
        "param \"scale\" default=\"tiny\"\nparam \"rows\" default=1 { when scale=\"tiny\" \"many\"; }\ndataset \"d\" { sysbench rows=\"${rows}\"; }\nstep \"s\" { run \"echo ${scale}\"; }\n",
        &Settings::new(),
    );
    assert!(
        e.contains("gives a value of another type than its default"),
        "{e}"
    );
    // not one parameter's value and one default
    let e = errors(
        "param \"scale\" default=\"tiny\"\nparam \"rows\" default=1 { when 2; }\ndataset \"d\" { sysbench rows=\"${rows}\"; }\nstep \"s\" { run \"echo ${scale}\"; }\n",
        &Settings::new(),
    );
    assert!(
        e.contains("`when` takes one parameter's value and the default it gives then"),
        "{e}"
    );
}

/// A study whose scales differ in servers, and in a claim only the large scale can test.
const LISTED: &str = r#"
param "scale" default="large" { values "tiny" "large" }
param "servers" default="a b c" list=#true {
    values "a" "b" "c"
    when scale="tiny" "a b"
}
image "i" { debian suite="bookworm" }
server "a" { image "i" }
server "b" { image "i" }
server "c" { image "i" }
workload "w" { sysbench "oltp_read_only"; duration "8s" }
trials "t" { servers "${servers}"; workload "w" }
claim "b beats a" { trials "t"; metric "tps"; expect "b > a" }
when scale="large" {
    claim "c beats a" { trials "t"; metric "tps"; expect "c > a" }
}
"#;

fn servers(plan: &Plan) -> Vec<String> {
    plan.trials[0]
        .servers
        .iter()
        .map(|s| s.value.clone())
        .collect()
}

fn claims(plan: &Plan) -> Vec<String> {
    plan.claims.iter().map(|c| c.name.value.clone()).collect()
}

#[test]
fn a_list_parameter_stands_for_one_argument_per_word() {
    let large = parse(LISTED, &Settings::new());
    assert_eq!(servers(&large), ["a", "b", "c"]);
    assert!(large.warnings.is_empty(), "{:?}", large.warnings);
    let tiny = parse(LISTED, &set(&[("scale", "tiny")]));
    assert_eq!(servers(&tiny), ["a", "b"]);
    let given = parse(LISTED, &set(&[("servers", "c a")]));
    assert_eq!(servers(&given), ["c", "a"]);
    // each word must be among `values`
    let e = errors(LISTED, &set(&[("servers", "a d")]));
    assert!(
        e.contains("`--set servers=a d`: `d` is not one of the values"),
        "{e}"
    );
    // `list=` is a boolean
    let e = errors(
        "param \"s\" default=\"a\" list=\"yes\"\nstep \"x\" { run \"echo ${s}\"; }\n",
        &Settings::new(),
    );
    assert!(e.contains("`list=` is #true or #false"), "{e}");
}

#[test]
fn a_when_block_holds_nodes_the_plan_has_only_at_its_values() {
    let large = parse(LISTED, &Settings::new());
    assert_eq!(claims(&large), ["b beats a", "c beats a"]);
    let tiny = parse(LISTED, &set(&[("scale", "tiny")]));
    assert_eq!(claims(&tiny), ["b beats a"]);
    // a block reading a parameter this file does not declare, or a value it never takes
    let e = errors(
        "param \"scale\" default=\"tiny\" { values \"tiny\" \"large\"; }\nwhen scal=\"large\" { step \"x\" { run \"true\"; } }\nwhen scale=\"huge\" { step \"y\" { run \"true\"; } }\n",
        &Settings::new(),
    );
    assert!(
        e.contains("`when` reads parameter `scal`, which this file and the files importing it do not declare"),
        "{e}"
    );
    assert!(
        e.contains("`huge` is not one of the values of parameter `scale`"),
        "{e}"
    );
    // a block without conditions or nodes, or declaring a parameter
    let e = errors(
        "param \"scale\" default=\"tiny\"\nwhen { step \"x\" { run \"true\"; } }\nwhen scale=\"tiny\"\nwhen scale=\"tiny\" { param \"p\" default=1; }\n",
        &Settings::new(),
    );
    assert!(e.contains("a `when` block names no parameter value"), "{e}");
    assert!(e.contains("a `when` block holds no nodes"), "{e}");
    assert!(
        e.contains("a parameter is declared at a file's top level, not inside a `when` block"),
        "{e}"
    );
    // a typo in a block the values drop is still found: its values are substituted
    let e = errors(
        "param \"scale\" default=\"tiny\" { values \"tiny\" \"large\"; }\nwhen scale=\"large\" { dataset \"d\" { sysbench rows=\"${scael}\"; } }\n",
        &Settings::new(),
    );
    assert!(e.contains("unknown parameter `scael`"), "{e}");
}
