//! End-to-end: what re-runs after which edit. Keys follow content, not names or
//! formatting; matrix points and passes are separate steps; `--only`/`--fresh` select.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::support::{contains, set, Sandbox};

const BASE: &str = r#"study "t"
step "gen" { run "echo v=$CAIRN_PARAM_N > out.txt"; output "out.txt"; matrix { n 1 2 3 }; passes 2 }
step "sum" { needs "gen"; run "cat gen/*/out.txt > all.txt"; output "all.txt"; timeout "5s"; env FOO="bar" }
step "lone" { run "echo lone > lone.txt"; output "lone.txt" }
"#;

fn gen_all(ns: &[u32], passes: &[u32]) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for n in ns {
        for p in passes {
            s.insert(format!("gen[n={n}]#{p}"));
        }
    }
    s
}

/// address → (status, key) from `plan --json`.
fn statuses(sb: &Sandbox, plan: &str) -> BTreeMap<String, (String, Value)> {
    sb.plan_json(plan)
        .into_iter()
        .map(|s| {
            (
                s["address"].as_str().expect("address").to_string(),
                (
                    s["status"].as_str().expect("status").to_string(),
                    s["key"].clone(),
                ),
            )
        })
        .collect()
}

#[test]
fn first_run_runs_all_second_run_caches_all() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);

    let ev = sb.run_ok("p.kdl", &[]);
    let mut all = gen_all(&[1, 2, 3], &[1, 2]);
    all.insert("sum".into());
    all.insert("lone".into());
    assert_eq!(ev.finished(), all);
    assert_eq!(ev.count("selected"), 8);
    assert_eq!(ev.count("ran"), 8);
    assert_eq!(ev.count("cached"), 0);
    assert_eq!(sb.record_count(), 8);
    // the fan-in saw every expansion under gen/<point>/
    let all_txt = sb.output_text("sum", "all.txt");
    let mut lines: Vec<&str> = all_txt.lines().collect();
    lines.sort();
    assert_eq!(lines, ["v=1", "v=1", "v=2", "v=2", "v=3", "v=3"]);

    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0);
    assert_eq!(ev.count("cached"), 8);
    assert!(ev.finished().is_empty());
    assert_eq!(ev.cached(), all);
    assert_eq!(sb.record_count(), 8);
}

#[test]
fn changing_run_text_reruns_the_step_and_its_dependents_only() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);

    // gen's command changes its output: all of gen, and sum which reads it
    sb.write("p.kdl", &BASE.replace("echo v=", "echo w="));
    let ev = sb.run_ok("p.kdl", &[]);
    let mut expect = gen_all(&[1, 2, 3], &[1, 2]);
    expect.insert("sum".into());
    assert_eq!(ev.finished(), expect);
    assert_eq!(ev.cached(), set(["lone"]));

    // sum's own command: only sum
    sb.write(
        "p.kdl",
        &BASE
            .replace("echo v=", "echo w=")
            .replace("> all.txt", "> all.txt; true"),
    );
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["sum"]));
    assert_eq!(ev.count("cached"), 7);
}

#[test]
fn adding_a_matrix_value_runs_only_the_new_point_and_the_fan_in() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);

    sb.write("p.kdl", &BASE.replace("n 1 2 3", "n 1 2 3 4"));
    let ev = sb.run_ok("p.kdl", &[]);
    let mut expect = gen_all(&[4], &[1, 2]);
    expect.insert("sum".into());
    assert_eq!(ev.finished(), expect);
    assert_eq!(ev.cached().len(), 7, "cached: {:?}", ev.cached());
    assert_eq!(ev.count("selected"), 10);
}

#[test]
fn bumping_passes_runs_only_the_new_passes() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);

    sb.write("p.kdl", &BASE.replace("passes 2", "passes 3"));
    let ev = sb.run_ok("p.kdl", &[]);
    let gen_ran: BTreeSet<String> = ev
        .finished()
        .into_iter()
        .filter(|a| a.starts_with("gen"))
        .collect();
    assert_eq!(gen_ran, gen_all(&[1, 2, 3], &[3]));
    // passes 1 and 2 of every point are reused
    for a in gen_all(&[1, 2, 3], &[1, 2]) {
        assert!(ev.cached().contains(&a), "{a} should be cached");
    }
    assert!(ev.cached().contains("lone"));
    // sum now reads three passes per point, so it is the only other step that runs
    assert_eq!(ev.finished().len(), 4, "finished: {:?}", ev.finished());
}

#[test]
fn renaming_reordering_reformatting_and_comments_change_no_key() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);
    let before = statuses(&sb, "p.kdl");
    assert!(before.values().all(|(s, _)| s == "cached"), "{before:?}");

    // `lone` is renamed (nothing needs it), nodes reordered, children on their own
    // lines and reordered, comments everywhere
    let edited = r#"// a study, reformatted
/* block comment */
study "t"

step "alone" {
    run "echo lone > lone.txt" // same command
    output "lone.txt"
}

step "sum" {
  env FOO="bar"
  timeout "5s"
  output "all.txt"
  run "cat gen/*/out.txt > all.txt"
  needs "gen"
}

step "gen" {
        passes 2
        matrix {
            n 1 2 3   // the same three points
        }
        output "out.txt"
        run "echo v=$CAIRN_PARAM_N > out.txt"
}
"#;
    sb.write("p.kdl", edited);
    let after = statuses(&sb, "p.kdl");
    assert!(
        after.values().all(|(s, _)| s == "cached"),
        "every step should stay cached: {after:?}"
    );
    assert_eq!(after.len(), before.len());
    for (addr, (_, key)) in &before {
        let addr_after = if addr == "lone" {
            "alone"
        } else {
            addr.as_str()
        };
        let (_, key_after) = after
            .get(addr_after)
            .unwrap_or_else(|| panic!("{addr_after} in the edited plan: {after:?}"));
        assert_eq!(key, key_after, "key of {addr}");
    }
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.count("ran"), 0);
}

#[test]
fn changing_an_env_value_reruns_that_step() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);

    sb.write("p.kdl", &BASE.replace(r#"FOO="bar""#, r#"FOO="baz""#));
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["sum"]));
    assert_eq!(ev.count("cached"), 7);
}

#[test]
fn env_value_reaches_the_command_and_undeclared_env_does_not() {
    let sb = Sandbox::new();
    sb.write(
        "p.kdl",
        r#"study "envt"
step "show" { run "echo \"foo=$FOO step=$CAIRN_STEP leak=${E2E_LEAK:-none}\" > e.txt"; output "e.txt"; env FOO="bar" }
"#,
    );
    sb.run("p.kdl").env("E2E_LEAK", "leaked").success();
    let text = sb.output_text("show", "e.txt");
    assert_eq!(text.trim(), "foo=bar step=show leak=none");
}

#[test]
fn only_runs_just_the_selected_steps() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    let ev = sb.run_ok("p.kdl", &["--only", "gen"]);
    assert_eq!(ev.finished(), gen_all(&[1, 2, 3], &[1, 2]));
    assert_eq!(ev.count("selected"), 6);
    assert_eq!(sb.record_count(), 6);

    // the rest runs later, reusing gen
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["sum", "lone"]));
}

#[test]
fn only_a_fan_in_also_runs_what_it_needs() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    let ev = sb.run_ok("p.kdl", &["--only", "sum"]);
    let mut expect = gen_all(&[1, 2, 3], &[1, 2]);
    expect.insert("sum".into());
    assert_eq!(ev.finished(), expect);
    assert!(!ev.finished().contains("lone"));
}

#[test]
fn fresh_reruns_a_cached_step() {
    let sb = Sandbox::new();
    sb.write("p.kdl", BASE);
    sb.run_ok("p.kdl", &[]);

    let ev = sb.run_ok("p.kdl", &["--fresh", "sum"]);
    assert_eq!(ev.finished(), set(["sum"]));
    assert_eq!(ev.count("ran"), 1);
    assert_eq!(ev.count("cached"), 7);
    // the same content gives the same key: still one record per step
    assert_eq!(sb.record_count(), 8);
    sb.verify().expect_code(0);
}

#[test]
fn plan_and_explain_name_the_changed_value_and_the_pending_input() {
    let sb = Sandbox::new();
    let plan = r#"study "why"
step "gen" { run "echo $GREETING > g.txt"; output "g.txt"; env GREETING="hello" }
step "use" { needs "gen"; run "cat gen/g.txt > u.txt"; output "u.txt" }
"#;
    sb.write("p.kdl", plan);
    sb.run_ok("p.kdl", &[]);
    sb.write("p.kdl", &plan.replace(r#""hello""#, r#""bye""#));

    let st = sb.plan_json("p.kdl");
    let by: BTreeMap<&str, &Value> = st
        .iter()
        .map(|s| (s["address"].as_str().expect("address"), s))
        .collect();
    let gen = by["gen"];
    assert_eq!(gen["status"], "run", "{gen}");
    let changed = gen["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .find(|r| r["reason"] == "changed")
        .unwrap_or_else(|| panic!("a `changed` reason: {gen}"));
    assert_eq!(changed["old"], "hello");
    assert_eq!(changed["new"], "bye");
    assert!(
        changed["path"].as_str().expect("path").contains("GREETING"),
        "{changed}"
    );
    let usr = by["use"];
    assert_eq!(usr["status"], "pending", "{usr}");
    let pending = usr["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .find(|r| r["reason"] == "input_pending")
        .unwrap_or_else(|| panic!("an `input_pending` reason: {usr}"));
    assert_eq!(pending["from"], "gen", "{pending}");

    // human-readable plan
    sb.cairn(["plan", "p.kdl"])
        .stdout(contains("hello"))
        .stdout(contains("bye"))
        .stdout(contains("pending"))
        .success();

    // explain walks from `use` down to the change in `gen`
    let r = sb
        .cairn(["explain", "p.kdl", "use"])
        .stdout(contains("pending"))
        .success();
    let out = &r.stdout;
    assert!(out.contains("`gen`") || out.contains(" gen"), "{out}");
    let change_line = out
        .lines()
        .find(|l| l.contains("hello") && l.contains("bye"))
        .unwrap_or_else(|| panic!("explain shows old and new value: {out}"));
    assert!(
        change_line.starts_with(char::is_whitespace),
        "the cause is indented under the dependent: {out}"
    );

    let lines = sb
        .cairn(["--json", "explain", "p.kdl", "use"])
        .success()
        .json_lines();
    assert_eq!(lines[0]["depth"], 0);
    assert_eq!(lines[0]["status"]["address"], "use");
    let deeper = lines
        .iter()
        .find(|l| l["status"]["address"] == "gen")
        .unwrap_or_else(|| panic!("explain --json reaches gen: {lines:?}"));
    assert_eq!(deeper["depth"], 1);
    assert_eq!(deeper["status"]["reasons"][0]["old"], "hello");
}

#[test]
fn an_input_file_is_hashed_and_the_work_dir_holds_only_declared_files() {
    let sb = Sandbox::new();
    sb.write("sub/data.txt", "one\n");
    sb.write("undeclared.txt", "secret\n");
    sb.write(
        "p.kdl",
        r#"study "inp"
step "read" { input "sub/data.txt"; run "find . -type f ! -name l.txt | sort > l.txt; cat sub/data.txt >> l.txt"; output "l.txt" }
step "other" { run "echo other > o.txt"; output "o.txt" }
"#,
    );
    sb.run_ok("p.kdl", &[]);
    let listing = sb.output_text("read", "l.txt");
    assert_eq!(listing, "./sub/data.txt\none\n");

    // same content again: cached; new content: only the reader re-runs
    sb.write("sub/data.txt", "one\n");
    assert_eq!(sb.run_ok("p.kdl", &[]).count("ran"), 0);
    sb.write("sub/data.txt", "two\n");
    let st = sb.plan_json("p.kdl");
    let read = st.iter().find(|s| s["address"] == "read").expect("read");
    assert_eq!(read["status"], "run", "{read}");
    assert!(
        read["reasons"][0]["path"]
            .as_str()
            .unwrap_or("")
            .contains("sub/data.txt"),
        "{read}"
    );
    let ev = sb.run_ok("p.kdl", &[]);
    assert_eq!(ev.finished(), set(["read"]));
}

#[test]
fn a_measurement_runs_alone_and_holds_the_fingerprint() {
    let sb = Sandbox::new();
    let busy = sb.path().join("busy");
    std::fs::create_dir(&busy).expect("mkdir");
    // builds leave a file in `busy` while they run; a measurement fails if it sees one,
    // and a build fails if it sees a running measurement
    let build = r#"if [ -e $BUSY/measure ]; then exit 8; fi; touch $BUSY/b.$CAIRN_STEP; sleep 0.3; rm $BUSY/b.$CAIRN_STEP; echo $CAIRN_STEP > o.txt"#;
    let measure = r#"if [ -n \"$(ls $BUSY)\" ]; then ls $BUSY >&2; exit 7; fi; touch $BUSY/measure; sleep 0.3; rm $BUSY/measure; echo $CAIRN_STEP > o.txt"#;
    let busy = busy.display();
    sb.write(
        "p.kdl",
        &format!(
            r#"study "meas"
step "prep" {{ run "echo prep > o.txt"; output "o.txt"; env BUSY="{busy}" }}
step "m" {{ needs "prep"; run "{measure}"; output "o.txt"; measure #true; matrix {{ k 1 2 }}; env BUSY="{busy}" }}
step "b" {{ run "{build}"; output "o.txt"; matrix {{ i 1 2 3 4 }}; env BUSY="{busy}" }}
step "after" {{ needs "m"; run "{build}"; output "o.txt"; env BUSY="{busy}" }}
"#
        ),
    );
    let ev = sb.run_ok("p.kdl", &["-j", "3"]);
    assert_eq!(ev.count("ran"), 8);
    let order = ev.summary()["measurement_order"]
        .as_array()
        .expect("measurement_order")
        .clone();
    assert_eq!(order.len(), 2, "{}", ev.summary());

    let (_, rec) = sb.records_of("m[k=1]").pop().expect("m record");
    assert!(
        rec["key_json"]["fingerprint"].is_object(),
        "a measurement's key holds the fingerprint: {rec}"
    );
    let (_, rec) = sb.records_of("prep").pop().expect("prep record");
    assert!(
        rec["key_json"]["fingerprint"].is_null(),
        "a build's key does not: {rec}"
    );
}
