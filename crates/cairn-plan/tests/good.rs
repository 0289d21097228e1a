//! Good plans under tests/plans/good/ load, and their typed values are what the text says.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_plan::{format_text, load, parse_str, Layer, Plan, Sp, Value};

fn good(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/plans/good")
        .join(name)
}

fn load_ok(name: &str) -> Plan {
    match load(&good(name)) {
        Ok(plan) => plan,
        Err(e) => panic!("{name}:\n{}", cairn_plan::render(&e)),
    }
}

/// The plan text a spanned value points at.
fn text_at<T>(plan: &Plan, sp: &Sp<T>) -> String {
    let src = &plan.sources[sp.loc.source.0].text;
    src[sp.loc.span.offset()..sp.loc.span.offset() + sp.loc.span.len()].to_string()
}

fn values(p: &cairn_plan::Param) -> Vec<Value> {
    p.values.iter().map(|v| v.value.clone()).collect()
}

#[test]
fn every_good_plan_loads() {
    let dir = good("");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "kdl") {
            if let Err(e) = load(&path) {
                panic!("{}:\n{}", path.display(), cairn_plan::render(&e));
            }
            n += 1;
        }
    }
    assert!(n >= 3);
}

#[test]
fn full_plan_has_typed_values() {
    let plan = load_ok("full.kdl");
    assert_eq!(plan.study.name, "full");
    assert_eq!(
        plan.study.title.as_deref(),
        Some("System malloc vs jemalloc, sysbench oltp_read_only")
    );

    let image = &plan.images[0];
    let debian = image.debian.as_ref().unwrap();
    assert_eq!(debian.variant.as_deref(), Some("minbase"));
    assert_eq!(image.packages.len(), 3);
    assert_eq!(image.layers.len(), 3);
    assert!(
        matches!(&image.layers[0].value, Layer::File { dest, .. } if dest == "/etc/mysql/conf.d/cairn.cnf")
    );

    let system = &plan.servers[0];
    assert_eq!(system.memory.as_ref().map(|m| m.value), Some(4 << 30));
    assert_eq!(system.options["max_connections"].value, Value::Int(512));
    assert_eq!(text_at(&plan, &system.name), "\"system\"");

    let dataset = &plan.datasets[0];
    assert_eq!(dataset.generator.value, "sysbench");
    assert_eq!(dataset.props["rows"].value, Value::Int(10000));

    let w = &plan.workloads[0];
    assert_eq!(text_at(&plan, &w.name), "\"read-only\"");
    assert_eq!(w.driver.value, "sysbench");
    assert_eq!(w.test.value, "oltp_read_only");
    assert_eq!(
        w.driver_props["tool"].value,
        Value::String("external".into())
    );
    let param = |n: &str| w.params.iter().find(|p| p.name.value == n).unwrap();
    assert_eq!(values(param("threads")), [Value::Int(2), Value::Int(8)]);
    assert_eq!(values(param("duration")), [Value::Float(10.0)]);
    assert_eq!(values(param("warmup")), [Value::Float(3.0)]);
    assert_eq!(values(param("report-interval")), [Value::Float(1.0)]);
    assert_eq!(
        values(param("distribution")),
        [Value::String("uniform".into())]
    );
    assert_eq!(text_at(&plan, &param("threads").values[1]), "8");

    let t = &plan.trials[0];
    assert_eq!(t.passes.value, cairn_plan::Passes::fixed(3));
    assert_eq!(t.seed.as_ref().map(|s| s.value), Some(42));
    assert_eq!(t.servers.len(), 2);

    assert_eq!(plan.analyses.len(), 2);
    assert_eq!(plan.analyses[0].kind.value, "table");
    assert_eq!(
        plan.analyses[0].props["baseline"].value,
        Value::String("system".into())
    );

    let claim = &plan.claims[0];
    assert_eq!(claim.within.as_ref().map(|w| w.value), Some(0.05));
    assert_eq!(claim.filter["threads"].value, Value::Int(8));
    assert_eq!(
        text_at(&plan, claim.within.as_ref().unwrap()),
        "within=\"5%\""
    );

    assert_eq!(plan.reports[0].format.as_ref().unwrap().value, "markdown");

    let step = &plan.steps[0];
    assert_eq!(step.needs[0].as_dir, "tps");
    assert_eq!(step.needs[1].as_dir, "latency");
    assert_eq!(step.outputs.len(), 2);
    assert_eq!(step.matrix.len(), 2);
    assert_eq!(step.matrix[0].name.value, "threads");
    assert_eq!(
        values(&step.matrix[0]),
        [Value::Int(1), Value::Int(2), Value::Int(4)]
    );
    assert_eq!(
        values(&step.matrix[1]),
        [Value::String("s".into()), Value::String("m".into())]
    );
    assert_eq!(step.passes.value, 3);
    assert_eq!(
        step.timeout.as_ref().map(|t| t.value),
        Some(Duration::from_secs(90))
    );
    assert!(step.measure);
    assert_eq!(step.dir, plan.sources[0].dir);
}

#[test]
fn server_extends_merges_parent() {
    let plan = load_ok("full.kdl");
    let j = &plan.servers[1];
    assert_eq!(j.extends.as_ref().unwrap().value, "system");
    assert_eq!(j.image.as_ref().unwrap().value, "mariadb-bookworm");
    assert_eq!(j.allocator.as_ref().unwrap().value, "jemalloc");
    assert_eq!(j.connect.as_ref().unwrap().value, "tcp");
    assert_eq!(j.options.len(), 2);
    let env: Vec<&str> = j.env.keys().map(|k| k.as_str()).collect();
    assert_eq!(env, ["LD_PRELOAD", "MALLOC_ARENA_MAX"]);
    // The merged name still points at the child's own declaration.
    assert_eq!(text_at(&plan, &j.name), "\"jemalloc\"");
}

#[test]
fn extends_chains_resolve_through_every_level() {
    let plan = load_ok("extends.kdl");
    assert_eq!(plan.study.name, "extends");
    let c = plan.images.iter().find(|i| i.name.value == "c").unwrap();
    let d = c.debian.as_ref().unwrap();
    assert_eq!(d.suite.as_deref(), Some("bookworm"));
    assert_eq!(d.arch.as_deref(), Some("i386"));
    assert_eq!(d.variant.as_deref(), Some("minbase"));
    let pkgs: Vec<&str> = c.packages.iter().map(|p| p.as_str()).collect();
    assert_eq!(pkgs, ["mariadb-server", "sysbench", "libjemalloc2"]);
    let layers: Vec<&Layer> = c.layers.iter().map(|l| &l.value).collect();
    assert_eq!(layers.len(), 3);
    assert_eq!(
        layers[0],
        &Layer::Run {
            command: "echo a".into()
        }
    );
    assert_eq!(
        layers[1],
        &Layer::Run {
            command: "echo b".into()
        }
    );
    assert!(matches!(layers[2], Layer::Env { vars } if vars["STAGE"] == "c"));

    let s3 = plan.servers.iter().find(|s| s.name.value == "s3").unwrap();
    assert_eq!(s3.extends.as_ref().unwrap().value, "s2");
    assert_eq!(s3.image.as_ref().unwrap().value, "b");
    assert_eq!(s3.options["max_connections"].value, Value::Int(200));
    assert_eq!(
        s3.options["innodb_buffer_pool_size"].value,
        Value::String("128M".into())
    );
    assert_eq!(s3.env.len(), 2);
    assert_eq!(s3.connect.as_ref().unwrap().value, "tcp");
    assert_eq!(s3.allocator.as_ref().unwrap().value, "tcmalloc");
    assert_eq!(s3.memory.as_ref().unwrap().value, 512 << 20);
}

#[test]
fn imports_are_followed_and_read_once() {
    let plan = load_ok("imports.kdl");
    assert_eq!(plan.study.name, "imports");
    assert_eq!(
        plan.sources.len(),
        3,
        "images.kdl is imported twice but read once"
    );
    assert_eq!(plan.images.len(), 1);
    assert_eq!(plan.servers[0].image.as_ref().unwrap().value, "base");
    let names: Vec<String> = plan
        .sources
        .iter()
        .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["imports.kdl", "images.kdl", "servers.kdl"]);
    assert_eq!(plan.workloads[0].params.len(), 2);
}

#[test]
fn parse_str_rejects_imports_and_skips_input_checks() {
    let plan = parse_str(
        "plans/demo.kdl",
        r#"step "s" { run "cat a.txt"; input "a.txt"; output "b" }"#,
    )
    .unwrap();
    assert_eq!(plan.study.name, "demo");
    assert_eq!(plan.steps[0].passes.value, 1);
    let err = parse_str("x.kdl", r#"import "y.kdl""#).unwrap_err();
    assert_eq!(err.problems()[0].code(), "cairn::plan::import");
}

#[test]
fn all_problems_are_reported_at_once() {
    let err = parse_str(
        "x.kdl",
        "servr \"a\"\nserver \"b\" { allocator \"nope\"; memory \"x\" }\nstep \"c\" {}\n",
    )
    .unwrap_err();
    let codes: Vec<&str> = err.problems().iter().map(|p| p.code()).collect();
    assert_eq!(
        codes,
        [
            "cairn::plan::unknown_node",
            "cairn::plan::bad_value",
            "cairn::plan::bad_value",
            "cairn::plan::missing"
        ]
    );
}

#[test]
fn missing_root_file_is_an_io_error() {
    let err = load(Path::new("/nonexistent/cairn/plan.kdl")).unwrap_err();
    assert!(matches!(err, cairn_plan::PlanError::Io { .. }));
}

const UNFORMATTED: &str = r#"// leading comment

study "q" { title "T" }
/* block comment */
server "s" {
  // inside the block
  option max_connections=512   innodb_buffer_pool_size="256M"   // after a node
      allocator    "jemalloc"
  /-connect "tcp"
}
step "x" { run "true"; matrix { threads 1 2 4; size "s" "m" } } // after a block
"#;

#[test]
fn fmt_changes_unformatted_text_and_keeps_comments() {
    let out = format_text(UNFORMATTED).unwrap();
    assert_ne!(out, UNFORMATTED);
    for comment in [
        "// leading comment",
        "/* block comment */",
        "// inside the block",
        "// after a node",
        "// after a block",
        "/-connect \"tcp\"",
    ] {
        assert!(out.contains(comment), "lost {comment:?}:\n{out}");
    }
    assert!(out.contains("    allocator \"jemalloc\"\n"), "{out}");
    assert!(out.contains("        threads 1 2 4\n"), "{out}");
    // The formatted plan means the same.
    let a = parse_str("a.kdl", UNFORMATTED).unwrap();
    let b = parse_str("a.kdl", &out).unwrap();
    assert_eq!(a.steps[0].matrix.len(), b.steps[0].matrix.len());
    assert_eq!(a.servers[0].options.len(), b.servers[0].options.len());
}

#[test]
fn fmt_is_idempotent() {
    let once = format_text(UNFORMATTED).unwrap();
    assert_eq!(format_text(&once).unwrap(), once);
    for name in [
        "full.kdl",
        "imports.kdl",
        "extends.kdl",
        "lib/images.kdl",
        "lib/servers.kdl",
    ] {
        let text = std::fs::read_to_string(good(name)).unwrap();
        let once = format_text(&text).unwrap();
        assert_eq!(format_text(&once).unwrap(), once, "{name}");
    }
}

#[test]
fn fmt_reports_syntax_errors() {
    let err = format_text("a {").unwrap_err();
    assert_eq!(err.problems()[0].code(), "cairn::plan::syntax");
}

#[test]
fn adaptive_passes_read_min_max_until_ci_and_metric() {
    let text = r#"
server "s" { connect "tcp" }
workload "w" { sysbench "oltp_read_only" }
trials "a" { servers "s"; workload "w"; passes min=3 max=12 until-ci="2%" }
trials "b" { servers "s"; workload "w"; passes min=2 max=4 until-ci="5%" metric="latency_p95_ms" }
trials "c" { servers "s"; workload "w"; passes min=3 }
trials "d" { servers "s"; workload "w"; passes min=4 max=12 until="decided" }
trials "e" { servers "s"; workload "w"; passes max=12 until="decided" }
"#;
    let plan =
        parse_str("adaptive.kdl", text).unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let a = &plan.trials[0].passes.value;
    assert_eq!(
        (a.min, a.max, a.until_ci, a.metric.as_str()),
        (3, 12, Some(0.02), "tps")
    );
    assert!(a.is_adaptive());
    let b = &plan.trials[1].passes.value;
    assert_eq!((b.min, b.max, b.metric.as_str()), (2, 4, "latency_p95_ms"));
    // `min` alone is a fixed number of passes, as `passes 3` is
    assert_eq!(plan.trials[2].passes.value, cairn_plan::Passes::fixed(3));
    let d = &plan.trials[3].passes.value;
    assert_eq!(
        (d.min, d.max, d.until_ci, d.until_decided),
        (4, 12, None, true)
    );
    assert!(d.is_adaptive() && !a.until_decided && !d.default_min);
}

/// `passes max=12 until="decided"` without `min`: the plan cannot compute the fewest passes
/// that could decide at the design's first look (statistics are cairn-analysis's), so `min`
/// stands at `max` (the fixed test) until whoever resolves the plan sets it; a block that
/// gave `min` keeps it.
#[test]
fn until_decided_without_min_takes_its_min_from_the_resolver() {
    let text = r#"
server "s" { connect "tcp" }
workload "w" { sysbench "oltp_read_only" }
trials "given" { servers "s"; workload "w"; passes min=4 max=12 until="decided" }
trials "default" { servers "s"; workload "w"; passes max=12 until="decided" }
trials "ci" { servers "s"; workload "w"; passes min=3 max=12 until-ci="2%" }
"#;
    let mut plan =
        parse_str("default-min.kdl", text).unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let d = &plan.trials[1].passes.value;
    assert_eq!(
        (d.min, d.max, d.until_decided, d.default_min),
        (12, 12, true, true)
    );
    assert!(!d.is_adaptive());
    plan.set_default_passes(|max| max / 2);
    let mins: Vec<(u32, bool)> = plan
        .trials
        .iter()
        .map(|t| (t.passes.value.min, t.passes.value.default_min))
        .collect();
    assert_eq!(mins, [(4, false), (6, true), (3, false)]);
    assert!(plan.trials[1].passes.value.is_adaptive());
    // a second time changes nothing
    plan.set_default_passes(|max| max / 2);
    assert_eq!(plan.trials[1].passes.value.min, 6);
}
