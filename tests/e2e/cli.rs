//! End-to-end: the CLI surface. `check`, diagnostics and exit codes, `graph` in both
//! formats, `fmt --check`/`fmt`, `plan -vv`, bad selectors and unknown steps, named builds.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{contains, fixture, lacks, set, Sandbox, Test};

#[test]
fn check_prints_step_counts() {
    let t = Test::new()
        .fixture("basic.kdl")
        .args(["check", "basic.kdl"])
        // gen[n=1], gen[n=2], sum, lone
        .stdout(contains("4 steps"))
        .stdout(contains("basic"))
        .success();
    // check writes nothing into the store
    assert_eq!(t.sb.record_count(), 0);
}

#[test]
fn check_of_the_shipped_fixture_in_place() {
    let path = fixture("basic.kdl");
    Test::new()
        .args(["check", path.to_str().expect("utf-8 path")])
        .success();
}

#[test]
fn a_bad_plan_exits_2_with_a_diagnostic_naming_the_file() {
    let sb = Sandbox::new();
    let plan = sb.fixture("bad_unknown_node.kdl", "broken.kdl");
    for cmd in ["check", "plan", "run", "graph"] {
        sb.cairn([cmd, plan])
            .output(contains("broken.kdl"))
            // the bad node, and line 3 of the fixture that holds it
            .output(contains("runn"))
            .output(contains("broken.kdl:3"))
            .code(2);
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
        sb.cairn(["check", name]).stderr(contains(name)).code(2);
    }
    sb.cairn(["check", "does-not-exist.kdl"])
        .stderr(contains("does-not-exist.kdl"))
        .code(2);
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
    let plan = sb.fixture("basic.kdl", "basic.kdl");
    let nodes = set(["gen[n=1]", "gen[n=2]", "sum", "lone"]);
    let edges: BTreeSet<(String, String)> = [("gen[n=1]", "sum"), ("gen[n=2]", "sum")]
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .into();

    let mut dot = sb
        .cairn(["graph", "--format", "dot", plan])
        .stdout(contains("digraph"));
    for n in &nodes {
        dot = dot.stdout(contains(n.as_str()));
    }
    let dot = dot.success();
    let (n, e) = parse_graph(&dot.stdout, "->");
    assert_eq!(n, nodes, "{}", dot.stdout);
    assert_eq!(e, edges, "{}", dot.stdout);

    // dot is the default
    let default = sb.cairn(["graph", plan]).success();
    assert_eq!(default.stdout, dot.stdout);

    let mut mm = sb.cairn(["graph", "--format", "mermaid", plan]);
    for n in &nodes {
        mm = mm.stdout(contains(n.as_str()));
    }
    let mm = mm.success();
    let (n, e) = parse_graph(&mm.stdout, "-->");
    assert_eq!(n, nodes, "{}", mm.stdout);
    assert_eq!(e, edges, "{}", mm.stdout);

    sb.cairn(["graph", "--format", "svg", plan]).code(2);
}

#[test]
fn fmt_check_then_fmt_then_check_again() {
    let sb = Sandbox::new();
    let plan = sb.fixture("unformatted.kdl", "u.kdl");
    let original = sb.read(plan);
    let keys = || -> Vec<_> {
        sb.plan_json(plan)
            .into_iter()
            .map(|s| (s["address"].clone(), s["key"].clone()))
            .collect()
    };
    let keys_before = keys();

    sb.cairn(["fmt", "--check", plan])
        .output(contains("u.kdl"))
        .failure();
    assert_eq!(sb.read(plan), original, "--check does not write");

    sb.cairn(["fmt", plan]).success();
    let formatted = sb.read(plan);
    assert_ne!(formatted, original);
    assert!(
        formatted.contains("// e2e fixture: valid but not in canonical formatting"),
        "comments survive: {formatted}"
    );

    sb.cairn(["fmt", "--check", plan]).success();
    // idempotent
    sb.cairn(["fmt", plan]).success();
    assert_eq!(sb.read(plan), formatted);
    // formatting changes no key
    assert_eq!(keys_before, keys());

    // a formatted fixture passes --check as is
    let b = sb.fixture("basic.kdl", "b.kdl");
    sb.cairn(["fmt", "--check", b]).success();
}

#[test]
fn plan_vv_shows_the_key_json() {
    let sb = Sandbox::new();
    let plan = sb.fixture("basic.kdl", "basic.kdl");
    sb.cairn(["-vv", "plan", plan])
        .stdout(contains("\"schema\""))
        .stdout(contains("echo lone > lone.txt"))
        .success();
    // without -vv no key JSON
    sb.cairn(["plan", plan])
        .stdout(lacks("\"schema\""))
        .success();
}

#[test]
fn an_unknown_selector_kind_exits_2() {
    let sb = Sandbox::new();
    let plan = sb.fixture("basic.kdl", "basic.kdl");
    sb.cairn(["run", "--only", "kind:nope", plan])
        .stderr(contains("nope"))
        .code(2);
    sb.cairn(["run", "--fresh", "kind:nope", plan]).code(2);
    assert_eq!(sb.record_count(), 0, "nothing ran");
}

#[test]
fn only_with_a_selector_that_matches_nothing_exits_2() {
    // a typo in --only must not look like a successful (empty) run
    Test::new()
        .fixture("basic.kdl")
        .args(["run", "--only", "gne", "basic.kdl"])
        .code(2);
}

#[test]
fn selectors_by_kind_and_pattern_work() {
    let sb = Sandbox::new();
    let plan = sb.fixture("basic.kdl", "basic.kdl");
    let ev = sb.run_ok(plan, &["--only", "gen[n=2]"]);
    assert_eq!(ev.finished(), set(["gen[n=2]"]));
    let ev = sb.run_ok(plan, &["--only", "l*"]);
    assert_eq!(ev.finished(), set(["lone"]));
    let ev = sb.run_ok(plan, &["--only", "kind:command"]);
    assert_eq!(ev.finished(), set(["gen[n=1]", "sum"]));
}

#[test]
fn explain_of_an_unknown_step_exits_2() {
    let sb = Sandbox::new();
    let plan = sb.fixture("basic.kdl", "basic.kdl");
    sb.cairn(["explain", plan, "nope"])
        .stderr(contains("nope"))
        .code(2);
    // a known one works
    sb.cairn(["explain", plan, "sum"])
        .stdout(contains("sum"))
        .success();
}

#[test]
fn usage_errors_exit_2_and_version_exits_0() {
    let sb = Sandbox::new();
    sb.cairn(["no-such-command"]).code(2);
    sb.cairn(["run"]).code(2);
    sb.cairn(["--version"]).stdout(contains("cairn")).success();
}

/// Issue 9, item 3: input that would exhaust the stack, memory or time is refused by
/// `check` with a diagnostic and exit code 2 — not a crash (134), not a hang.
#[test]
fn check_refuses_unbounded_input_with_exit_2() {
    let sb = Sandbox::new();
    let deep = format!("{}{}", "a {\n".repeat(2000), "}\n".repeat(2000));
    sb.write("deep.kdl", &deep);
    sb.cairn(["check", "deep.kdl"])
        .stderr(contains("nested more than 32 levels deep"))
        .stderr(contains("deep.kdl:33"))
        .code(2);

    // thousands of syntax errors: the KDL parser recursed once per error
    sb.write("closers.kdl", &"}\n".repeat(20_000));
    sb.cairn(["check", "closers.kdl"]).code(2);

    sb.write(
        "passes.kdl",
        "step \"again\" {\n    run \"true\"\n    passes 1000000000\n}\n",
    );
    sb.cairn(["check", "passes.kdl"])
        .stderr(contains(
            "step `again` would expand to 1000000000 steps (1000000000 passes)",
        ))
        .stderr(contains("passes.kdl:3"))
        .code(2);

    sb.write("zero.kdl", "import \"/dev/zero\"\n");
    sb.cairn(["check", "zero.kdl"])
        .stderr(contains(
            "cannot read imported file `/dev/zero`: it is not a regular file",
        ))
        .stderr(contains("zero.kdl:1"))
        .code(2);

    // a FIFO nobody writes to: reading it would block for ever
    let fifo = sb.path().join("pipe.kdl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    sb.write("fifo.kdl", "import \"pipe.kdl\"\n");
    sb.cairn(["check", "fifo.kdl"])
        .stderr(contains("it is not a regular file"))
        .code(2);
    sb.cairn(["check", "pipe.kdl"])
        .stderr(contains("not a regular file"))
        .code(2);

    sb.write("huge.kdl", &format!("// {}\n", "x".repeat(2 << 20)));
    sb.write("imports_huge.kdl", "import \"huge.kdl\"\n");
    sb.cairn(["check", "imports_huge.kdl"])
        .stderr(contains("larger than the limit of 1048576"))
        .code(2);
    assert_eq!(sb.record_count(), 0);
}

/// Issue 9, item 6: a plan reads host files outside its directory only where its study
/// allows it with `host-path`.
#[test]
fn check_refuses_host_files_outside_the_plan_without_opt_in() {
    let sb = Sandbox::new();
    sb.write(
        "collect.kdl",
        "step \"collect\" {\n    run \"cat passwd\"\n    input \"/etc/passwd\"\n}\n",
    );
    for cmd in ["check", "run"] {
        sb.cairn([cmd, "collect.kdl"])
            .stderr(contains("input `/etc/passwd` cannot be read"))
            .stderr(contains("collect.kdl:3"))
            .stderr(contains("host-path \"/etc\""))
            .code(2);
    }
    assert_eq!(sb.record_count(), 0);

    // a symlink inside the plan's directory is followed first
    std::os::unix::fs::symlink("/etc/passwd", sb.path().join("innocent.txt")).unwrap();
    sb.write(
        "sneaky.kdl",
        "step \"collect\" {\n    run \"true\"\n    input \"innocent.txt\"\n}\n",
    );
    sb.cairn(["check", "sneaky.kdl"])
        .stderr(contains(
            "it is `/etc/passwd`, outside the plan's directory",
        ))
        .code(2);

    // with the opt-in, the same step is fine
    sb.write(
        "allowed.kdl",
        "study \"allowed\" {\n    host-path \"/etc\"\n}\nstep \"collect\" {\n    run \"true\"\n    input \"/etc/passwd\"\n    input \"innocent.txt\"\n}\n",
    );
    sb.cairn(["check", "allowed.kdl"]).success();
}

#[test]
fn a_reader_that_closes_the_pipe_ends_cairn_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let sb = Sandbox::new();
    // enough output that cairn is still writing when the reader goes away
    let mut plan = String::from("study \"pipe\"\n");
    for i in 0..3000 {
        plan.push_str(&format!("step \"s{i}\" {{ run \"true\" }}\n"));
    }
    sb.write("plan.kdl", &plan);
    for args in [
        &["graph", "plan.kdl"][..],
        &["plan", "-v", "plan.kdl"],
        &["--json", "plan", "plan.kdl"],
    ] {
        let mut child = sb
            .cairn(args.iter().copied())
            .command()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cairn starts");
        let mut first = [0u8; 64];
        let mut out = child.stdout.take().unwrap();
        out.read_exact(&mut first).unwrap();
        drop(out); // `| head -c 64`
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status:?}\n{err}"
        );
    }
}

/// The first hour: a reader that closes the output early (`| head -1`) ends a printing
/// command quietly (no panic, no exit 101); a command run from a directory below the
/// project finds the project's store instead of making a new one; and `gc` that finds no
/// plans refuses rather than remove every record.
#[test]
fn a_closed_pipe_a_subdirectory_and_gc_without_plans_are_handled() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // a plan with enough steps that `cairn plan` prints more than a pipe holds
    let points: Vec<String> = (1..=3000).map(|n| n.to_string()).collect();
    std::fs::write(
        root.join("p.kdl"),
        format!(
            "study \"first-hour\"\nstep \"gen\" {{ run \"true\"; matrix {{ n {} }} }}\n",
            points.join(" ")
        ),
    )
    .unwrap();
    let cairn = |cwd: &std::path::Path, args: &[&str]| {
        let mut c = Command::new(crate::support::CAIRN);
        c.current_dir(cwd)
            .env_remove("CAIRN_RESULTS")
            .arg("--cache")
            .arg(root.join("cache"))
            .args(args);
        c
    };

    let mut plan = cairn(root, &["plan", "p.kdl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    plan.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then closed
    let out = plan.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");

    // the project's store, found from a directory below it
    let run = cairn(root, &["run", "p.kdl"]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let plans = root.join("plans");
    std::fs::create_dir(&plans).unwrap();
    let below = cairn(&plans, &["plan", "../p.kdl"]).output().unwrap();
    let text = String::from_utf8_lossy(&below.stdout);
    assert!(below.status.success());
    assert!(text.contains("3000 cached"), "{text}");
    assert!(
        !plans.join("results").exists(),
        "no store made beside the plans"
    );

    // gc finds no plan in plans/ beside the results: it refuses and removes nothing
    let records = std::fs::read_dir(root.join("results/store/records"))
        .unwrap()
        .count();
    let gc = cairn(&plans, &["gc", "--apply"]).output().unwrap();
    let err = String::from_utf8_lossy(&gc.stderr);
    assert_eq!(gc.status.code(), Some(2), "{err}");
    assert!(err.contains("found no plans"), "{err}");
    let after = std::fs::read_dir(root.join("results/store/records"))
        .unwrap()
        .count();
    assert_eq!(after, records);
}

/// `i` run as if this machine were of `class` (JSON).
fn simulated<'a>(i: crate::support::Invocation<'a>, class: &str) -> crate::support::Invocation<'a> {
    i.env("CAIRN_SIMULATED_MACHINE", class)
}

/// The key file names of the committed store's trial records, with their addresses.
fn trial_keys(sb: &Sandbox) -> Vec<(String, String)> {
    crate::support::files_under(&sb.store().join("records"))
        .into_iter()
        .filter_map(|p| {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            // the committed store holds other studies' trials too
            (r["kind"] == "trial" && r["study"] == "quickstart").then(|| {
                (
                    r["key"].as_str().unwrap().to_string(),
                    r["address"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect()
}

/// The first hour, item 1: a machine class has a short stable id; `cairn machine` prints
/// it, `--measured-on` and `compare --measured-on-a/-b` (and the old `--fingerprint-a/-b`)
/// take it; a bad class names its flag and a class without trials is refused, exit 2.
#[test]
fn a_machine_class_is_named_by_its_short_id() {
    let (sb, class) = crate::support::committed_quickstart();
    let sim = |i| simulated(i, &class);
    let m = sim(sb.cairn(["--json", "machine"])).success();
    let id = m.json_lines()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 12, "{id}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    // stable: the same class, the same id, on every run
    let again = sim(sb.cairn(["machine"])).success();
    assert!(
        again.stdout.contains(&format!("class {id} ")),
        "{}",
        again.stdout
    );

    // the report, and a comparison of the class with the whole store, by the id
    sim(sb.cairn(["report", "plans/quickstart.kdl", "--measured-on", &id])).success();
    sb.cairn([
        "compare",
        "results",
        "--plan",
        "plans/quickstart.kdl",
        "--measured-on-a",
        &id[..8],
    ])
    .success();
    // the old name, and a value that is no class: the flag is named, exit 2
    let r = sb
        .cairn([
            "compare",
            "results",
            "--plan",
            "plans/quickstart.kdl",
            "--fingerprint-a",
            "garbage",
        ])
        .code(2);
    assert!(r.stderr.contains("--measured-on-a"), "{}", r.stderr);
    assert!(r.stderr.contains(&id), "the classes known: {}", r.stderr);
    // a class the store holds no trial of: said, with the classes it does hold, exit 2
    let none = r#"{"cpu_model":"none","cores":1,"threads":1,"memory_gib":1,"kernel":"0","runtime":"host"}"#;
    let r = sb
        .cairn([
            "compare",
            "results",
            "--plan",
            "plans/quickstart.kdl",
            "--measured-on-a",
            &id,
            "--fingerprint-b",
            none,
        ])
        .code(2);
    assert!(
        r.stderr
            .contains("--measured-on-b: B holds no trial of quickstart measured on"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&id), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let unknown = if id.starts_with("0000") {
        "ffff0000"
    } else {
        "00000000"
    };
    let r = sb
        .cairn(["report", "plans/quickstart.kdl", "--measured-on", unknown])
        .code(2);
    assert!(
        r.stderr
            .contains("--measured-on: no machine class here has the id"),
        "{}",
        r.stderr
    );
}

/// The first hour, items 2 and 6: `history` of a plan finds the trials its keys name,
/// whichever study recorded them (here the committed quickstart's trials, their records
/// rewritten as another study's); a report rendered from recorded results says one
/// summary line, not a line per cached step.
#[test]
fn history_finds_results_by_key_and_a_render_is_quiet() {
    let (sb, class) = crate::support::committed_quickstart();
    let sim = |i| simulated(i, &class);
    let r = sim(sb.cairn(["report", "plans/quickstart.kdl"])).success();
    assert!(!r.stderr.contains("cached  trial/"), "{}", r.stderr);
    assert!(!r.stderr.contains("not needed trial/"), "{}", r.stderr);
    assert!(
        r.stderr.contains(" cached, "),
        "one summary line: {}",
        r.stderr
    );
    let v = sim(sb.cairn(["report", "-v", "plans/quickstart.kdl"])).success();
    assert!(v.stderr.contains("cached  trial/"), "{}", v.stderr);

    let store = cairn_store::Store::open(&sb.results()).unwrap();
    for (key, _) in trial_keys(&sb) {
        let mut rec = store.get_record(&key).unwrap().unwrap();
        rec.study = "recorded-elsewhere".into();
        store.put_record(&mut rec).unwrap();
    }
    let h = sim(sb.cairn(["history", "plans/quickstart.kdl"])).success();
    assert!(!h.stdout.contains("no results"), "{}", h.stdout);
    assert!(
        h.stdout.contains("trial/ro/system[threads=1] (tps):"),
        "{}",
        h.stdout
    );
    assert!(h.stdout.contains("median"), "{}", h.stdout);
}

/// The first hour, item 3: a key as a report prints it (12 hex) names its step for `cat`
/// and `explain`; a prefix of two keys is refused with both listed.
#[test]
fn a_key_prefix_names_a_step_for_cat_and_explain() {
    let (sb, class) = crate::support::committed_quickstart();
    let sim = |i| simulated(i, &class);
    let (key, address) = trial_keys(&sb).remove(0);
    let short = &key[..12];
    let c = sim(sb.cairn(["cat", "plans/quickstart.kdl", short, "figures.json"])).success();
    assert!(c.stdout.contains("tps"), "{}", c.stdout);
    let e = sim(sb.cairn(["explain", "plans/quickstart.kdl", short])).success();
    assert!(e.stdout.contains(&address), "{}", e.stdout);
    // a key of no record and no step
    let none = if key.starts_with("00000000") {
        "ffffffff"
    } else {
        "00000000"
    };
    sb.cairn(["cat", "plans/quickstart.kdl", none])
        .stderr(contains("has a key starting with"))
        .code(2);
    // two keys share the prefix: both listed, exit 2
    let records = sb.store().join("records");
    std::fs::copy(
        records.join(format!("{key}.json")),
        records.join(format!("{}{}.json", &key[..8], "0".repeat(56))),
    )
    .unwrap();
    let r = sb.cairn(["cat", "plans/quickstart.kdl", &key[..8]]).code(2);
    assert!(r.stderr.contains("is the start of 2 keys"), "{}", r.stderr);
    assert!(r.stderr.contains(&key[..16]), "{}", r.stderr);
}

/// The first hour, item 4: `check --json` prints its verdict and diagnostics as JSON;
/// `report --help` says what it writes; `fmt --help` offers no flag it ignores.
#[test]
fn check_json_and_help_texts() {
    let sb = Sandbox::new();
    sb.fixture("basic.kdl", "basic.kdl");
    let ok = sb.cairn(["--json", "check", "basic.kdl"]).success();
    let v = &ok.json_lines()[0];
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["steps"], 4, "{v}");
    sb.fixture("bad_unknown_node.kdl", "broken.kdl");
    let bad = sb.cairn(["--json", "check", "broken.kdl"]).code(2);
    let v = &bad.json_lines()[0];
    assert_eq!(v["valid"], false, "{v}");
    assert!(
        v["diagnostic"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    let help = sb.cairn(["report", "--help"]).success();
    for file in [
        "report.md",
        "report.html",
        "plot",
        "data.csv",
        "series.csv",
        "data.json",
    ] {
        assert!(help.stdout.contains(file), "{file}: {}", help.stdout);
    }
    let help = sb.cairn(["fmt", "--help"]).success();
    for flag in ["--results", "--cache", "--json"] {
        assert!(!help.stdout.contains(flag), "{flag}: {}", help.stdout);
    }
    assert!(help.stdout.contains("Examples:"), "{}", help.stdout);
}

/// The first hour, item 5: `cairn plan` counts the many inputs a step waits on; `-v`
/// lists them.
#[test]
fn plan_counts_the_inputs_a_pending_step_waits_on() {
    let sb = Sandbox::new();
    sb.write(
        "fan.kdl",
        "study \"fan\"\nstep \"gen\" { run \"echo $n > x\"; output \"x\"; matrix { n 1 2 3 4 5 } }\nstep \"sum\" { needs \"gen\"; run \"cat gen*/x > s\"; output \"s\" }\n",
    );
    let p = sb.cairn(["plan", "fan.kdl"]).success();
    assert!(
        p.stdout.contains("waits on 5 commands that run first"),
        "{}",
        p.stdout
    );
    assert!(!p.stdout.contains("waits on input"), "{}", p.stdout);
    let v = sb.cairn(["plan", "-v", "fan.kdl"]).success();
    assert_eq!(
        v.stdout.matches("waits on input").count(),
        5,
        "{}",
        v.stdout
    );
}

/// The first hour, item 7: a bundle is written as any new file is (0666 less the umask),
/// not private to its owner.
#[test]
fn a_bundle_is_readable_as_any_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.write(
        "plan.kdl",
        "study \"shared\"\nstep \"s\" { run \"echo hi > out\"; output \"out\" }\n",
    );
    sb.cairn(["run", "plan.kdl"]).success();
    sb.cairn(["bundle", "plan.kdl", "-o", "s.tar.zst"])
        .success();
    // SAFETY: reading the umask (set back at once)
    let umask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    let mode = std::fs::metadata(sb.path().join("s.tar.zst"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o666 & !(umask as u32), "{mode:o}");
}

/// The first hour, item 8: every shipped plan is in `cairn fmt`'s canonical form.
#[test]
fn every_shipped_plan_is_formatted() {
    let root = crate::support::repo_root();
    let mut plans: Vec<String> = crate::support::files_under(&root.join("plans"))
        .into_iter()
        .chain(crate::support::files_under(&root.join("images")))
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    plans.sort();
    assert!(plans.len() >= 4, "{plans:?}");
    let sb = Sandbox::new();
    let r = sb.cairn(["fmt", "--check"]).args(&plans).run();
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
}

/// Named builds (issue 22): `check` accepts images whose builds extend a named build (and the
/// shipped MariaDB plan, written that way), warns on stderr — the plan staying valid — of an
/// image that extends a built image and builds again, and refuses a build that extends an
/// unknown name with exit 2 at its place.
#[test]
fn check_of_named_builds_warns_of_a_stacked_build_and_refuses_an_unknown_name() {
    let sb = Sandbox::new();
    sb.write(
        "builds.kdl",
        r#"study "named-builds"
build "hello-o2" {
    source "debian:hello"
    cflags "-O2" "-fno-omit-frame-pointer"
    strip #true
}
build "hello-o3" extends="hello-o2" {
    cflags "-O3"
}
image "o2" {
    build extends="hello-o2"
}
image "o3" {
    build extends="hello-o3"
}
image "static" {
    build extends="hello-o2" {
        link "static"
        cflags-remove "-fno-omit-frame-pointer"
    }
}
"#,
    );
    let ok = sb.cairn(["--json", "check", "builds.kdl"]).success();
    let v = &ok.json_lines()[0];
    assert_eq!(v["valid"], true, "{v}");
    // one base, three builds
    assert_eq!(v["steps"], 4, "{v}");
    assert!(!ok.stderr.contains("stacked_build"), "{}", ok.stderr);

    sb.write(
        "stacked.kdl",
        r#"study "stacked"
build "hello-o2" {
    source "debian:hello"
    cflags "-O2"
}
image "o2" {
    build extends="hello-o2"
}
image "o3" {
    extends "o2"
    build extends="hello-o2" { cflags "-O3" }
}
"#,
    );
    sb.cairn(["check", "stacked.kdl"])
        .stdout(contains("is valid"))
        .stderr(contains("cairn::plan::stacked_build"))
        .stderr(contains(
            "image `o3` builds on top of the build it inherits from `o2`",
        ))
        // the inherited build, the `extends` and the second build, each at its line
        .stderr(contains("the first build (of `o2`)"))
        .stderr(contains("extends an image that has a build"))
        .stderr(contains("a second build, made over the first"))
        .stderr(contains("stacked.kdl:11:5"))
        .success();

    sb.write(
        "unknown.kdl",
        "study \"u\"\nbuild \"hello-o2\" { source \"debian:hello\" }\nimage \"x\" { build extends=\"hello-02\" }\n",
    );
    sb.cairn(["check", "unknown.kdl"])
        .stderr(contains("no build named `hello-02`"))
        .stderr(contains("unknown.kdl:3:19"))
        .stderr(contains("did you mean `hello-o2`"))
        .code(2);

    let shipped = crate::support::repo_root().join("plans/mariadb-source.kdl");
    sb.cairn(["check", shipped.to_str().expect("utf-8 path")])
        .stdout(contains("is valid"))
        .stderr(lacks("stacked_build"))
        .success();
}
