//! Table analyses, claims and reports on synthetic trials with known answers: what the
//! cells, ratios, verdicts and claim verdicts must be, that the same trials render the same
//! bytes, and that bad definitions are refused with the property named.

use std::collections::BTreeMap;

use cairn_analysis::{ClaimVerdict, Verdict};
use cairn_defs::figures::{self, Figures};
use cairn_defs::{AnalysisDef, ClaimDef};
use cairn_kinds::analysis_step::{build_table, table_spec};
use cairn_kinds::claim_step::{self, claim_spec, parse_expectation};
use cairn_kinds::data_csv::data_csv;
use cairn_kinds::report_step::render;
use cairn_kinds::trial_points::Dimensions;
use cairn_kinds::trial_points::TrialPoint;
use cairn_report::table::{render_markdown, Table};
use serde_json::{json, Value};

/// One trial of `server` at `threads`, pass `pass`, with `tps` and a p95 latency.
fn trial(server: &str, threads: i64, pass: u32, tps: f64, p95: f64) -> TrialPoint {
    let mut f = Figures::new();
    f.set(&figures::TPS, tps);
    f.set(&figures::LATENCY_P95_MS, p95);
    TrialPoint {
        key: format!("{server}{threads}{pass}{}", "0".repeat(40)),
        address: format!("trial/ro/{server}[threads={threads}]#{pass}"),
        trials: "ro".into(),
        server: server.into(),
        pass,
        params: BTreeMap::from([
            ("threads".to_string(), json!(threads)),
            ("duration".to_string(), json!("8s")),
        ]),
        figures: f,
        campaign: "boot 0000aaaa".into(),
        ..Default::default()
    }
}

/// Small, fixed spread around `centre`: ±1%, ±0.5% (CV under 1%).
const SPREAD: [f64; 5] = [0.99, 1.005, 1.0, 0.995, 1.01];

/// `passes` trials per server and thread count: system at 1000 tps (1 thread) and 3000
/// (4 threads); jemalloc the same at 1 thread and `speedup` × at 4 threads. Latency is the
/// inverse.
fn study(passes: u32, speedup: f64) -> Vec<TrialPoint> {
    let mut out = Vec::new();
    for server in ["system", "jemalloc"] {
        for threads in [1, 4] {
            for pass in 1..=passes {
                let mut tps = if threads == 1 { 1000.0 } else { 3000.0 };
                if server == "jemalloc" && threads == 4 {
                    tps *= speedup;
                }
                let v = tps * SPREAD[(pass as usize - 1) % SPREAD.len()];
                out.push(trial(server, threads, pass, v, 1e4 / v));
            }
        }
    }
    out
}

/// An analysis's definition from its JSON, as a step's key holds it.
fn analysis(def: Value) -> AnalysisDef {
    serde_json::from_value(def).expect("an analysis definition")
}

/// A claim's definition from its JSON, as a step's key holds it.
fn claim(def: &Value) -> ClaimDef {
    serde_json::from_value(def.clone()).expect("a claim definition")
}

fn table_def() -> AnalysisDef {
    analysis(
        json!({"kind": "table", "props": {"metric": "tps", "rows": "server", "columns": "threads", "baseline": "system"}}),
    )
}

fn servers() -> Vec<String> {
    vec!["system".into(), "jemalloc".into()]
}

fn params() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([
        ("threads".to_string(), vec!["1".into(), "4".into()]),
        ("duration".to_string(), vec!["8s".into()]),
    ])
}

fn table(points: &[TrialPoint]) -> Table {
    let spec = table_spec(&table_def(), &Dimensions::new(servers(), params())).unwrap();
    build_table(&spec, &table_def(), points).unwrap()
}

#[test]
fn cells_hold_medians_ratios_verdicts_and_their_trials() {
    let t = table(&study(5, 1.10));
    assert_eq!(t.rows.values, ["system", "jemalloc"]);
    assert_eq!(t.columns.values, ["1", "4"]);
    assert_eq!(t.cells.len(), 4);
    let base = t.cell("system", "4").unwrap();
    assert_eq!(base.summary.n, 5);
    assert_eq!(base.summary.median, 3000.0);
    assert!(
        base.comparison.is_none(),
        "the baseline is not compared with itself"
    );
    assert!(!base.noisy);
    assert_eq!(base.trials.len(), 5);
    assert!(
        base.addresses[0].ends_with("#1"),
        "cells list trials in pass order"
    );

    let faster = t.cell("jemalloc", "4").unwrap();
    let cmp = faster.comparison.as_ref().unwrap();
    // the same spread on both sides: the ratio of medians is exactly the speed-up
    assert!((cmp.ratio.ratio - 1.10).abs() < 1e-12);
    assert!(cmp.ratio.ci.low > 1.0);
    assert_eq!(cmp.verdict, Verdict::Faster);
    assert_eq!(faster.trials[0], format!("jemalloc41{}", "0".repeat(40)));

    let same = t
        .cell("jemalloc", "1")
        .unwrap()
        .comparison
        .as_ref()
        .unwrap();
    assert!((same.ratio.ratio - 1.0).abs() < 1e-12);
    assert_eq!(same.verdict, Verdict::NoSignificantDifference);
}

/// A fleet whose nodes differ: a comparison whose two samples come from more than one class
/// of machine is inconclusive whatever the numbers say, and says why; the nodes can be
/// pivoted (`node`, `local` for a trial measured here).
#[test]
fn a_comparison_across_classes_of_machine_is_inconclusive_and_node_is_a_dimension() {
    let mut points = study(5, 1.10);
    for p in points
        .iter_mut()
        .filter(|p| p.server == "jemalloc" && p.pass > 2)
    {
        p.fingerprint = json!({"cpu_model": "Other CPU", "cores": 64});
        p.node = Some("big1".into());
    }
    let t = table(&points);
    let cmp = t.cell("jemalloc", "4").unwrap().comparison.clone().unwrap();
    assert_eq!(cmp.verdict, Verdict::Inconclusive);
    assert_eq!(
        cmp.reason.to_string(),
        "measured on 2 classes of machine: a difference could be the machines'; measure on one class, or pivot by `node`"
    );
    // one class throughout: the verdict stands
    let same = table(&study(5, 1.10));
    assert_eq!(
        same.cell("jemalloc", "4")
            .unwrap()
            .comparison
            .as_ref()
            .unwrap()
            .verdict,
        Verdict::Faster
    );

    let by_node = analysis(
        json!({"kind": "table", "props": {"metric": "tps", "rows": "server", "columns": "node"}}),
    );
    let one_point: Vec<TrialPoint> = points
        .into_iter()
        .filter(|p| p.params["threads"] == json!(4))
        .collect();
    let mut params = params();
    params.insert("threads".into(), vec!["4".into()]);
    let spec = table_spec(&by_node, &Dimensions::new(servers(), params)).unwrap();
    let t = build_table(&spec, &by_node, &one_point).unwrap();
    assert_eq!(t.columns.values, ["local", "big1"]);
    assert_eq!(t.cell("jemalloc", "big1").unwrap().summary.n, 3);
}

#[test]
fn three_passes_are_inconclusive_and_say_how_many_would_do() {
    let t = table(&study(3, 1.10));
    let cmp = t.cell("jemalloc", "4").unwrap().comparison.clone().unwrap();
    assert_eq!(cmp.verdict, Verdict::Inconclusive);
    assert!(cmp.passes_needed.per_variant.is_some());
    let md = render_markdown("tps", &t);
    assert!(md.contains("**inconclusive**"), "{md}");
    assert!(md.contains("too few passes"), "{md}");
}

#[test]
fn noisy_cells_are_flagged_not_hidden() {
    let mut points = study(4, 1.0);
    // one wild pass of system at 1 thread: CV far above 5%
    points[0].figures.set(&figures::TPS, 600.0);
    let t = table(&points);
    assert!(t.cell("system", "1").unwrap().noisy);
    assert!(!t.cell("system", "4").unwrap().noisy);
    let md = render_markdown("", &t);
    assert!(md.contains("⚠ noisy"), "{md}");
}

#[test]
fn the_same_trials_render_the_same_bytes() {
    let a = table(&study(4, 1.07));
    let b = table(&study(4, 1.07));
    assert_eq!(
        serde_json::to_vec_pretty(&a).unwrap(),
        serde_json::to_vec_pretty(&b).unwrap()
    );
    assert_eq!(render_markdown("tps", &a), render_markdown("tps", &b));
    // each cell's bootstrap has its own recorded seed, from the definition and its place
    let seeds: Vec<u64> = a
        .cells
        .iter()
        .filter_map(|c| c.comparison.as_ref().map(|c| c.ratio.seed))
        .collect();
    assert_eq!(seeds.len(), 2);
    assert_ne!(seeds[0], seeds[1]);
}

#[test]
fn bad_tables_are_refused_naming_the_property() {
    let name_of = |e: cairn_engine::CheckError| {
        assert_eq!(e.what, "analysis");
        (e.name, e.message)
    };
    let pie = analysis(json!({"kind": "pie", "props": {"metric": "tps"}}));
    let (name, msg) = name_of(table_spec(&pie, &Dimensions::new(servers(), params())).unwrap_err());
    assert_eq!(name, "kind");
    assert!(msg.contains("not an analysis cairn has"), "{msg}");

    let def = |props: Value| analysis(json!({"kind": "table", "props": props}));
    let cases = [
        (json!({"metric": "tpx"}), "metric", "not a figure"),
        (
            json!({"metric": "tps", "columns": "threads", "baseline": "tcmalloc"}),
            "baseline",
            "not a server",
        ),
        (
            json!({"metric": "tps", "columns": "size"}),
            "columns",
            "not a dimension",
        ),
        (
            json!({"metric": "tps", "colums": "threads"}),
            "colums",
            "no property",
        ),
        (
            json!({"metric": "tps", "rows": "threads", "columns": "trials"}),
            "rows",
            "must be \"server\"",
        ),
    ];
    for (props, prop, words) in cases {
        let (name, msg) =
            name_of(table_spec(&def(props), &Dimensions::new(servers(), params())).unwrap_err());
        assert_eq!(name, prop, "{msg}");
        assert!(msg.contains(words), "{msg}");
    }
    // a parameter that varies but is neither rows nor columns
    let mut p = params();
    p.insert("size".into(), vec!["s".into(), "m".into()]);
    let (_, msg) = name_of(
        table_spec(
            &def(json!({"metric": "tps", "columns": "threads"})),
            &Dimensions::new(servers(), p),
        )
        .unwrap_err(),
    );
    assert!(msg.contains("vary in `size`"), "{msg}");
    // columns default to the one varying parameter
    let spec = table_spec(
        &def(json!({"metric": "tps"})),
        &Dimensions::new(servers(), params()),
    )
    .unwrap();
    assert_eq!(
        (spec.rows.as_str(), spec.columns.as_str()),
        ("server", "threads")
    );
}

fn claim_def(expect: &str, size: Option<(&str, f64)>, metric: &str) -> Value {
    let mut d =
        json!({"metric": metric, "where": {"threads": 4}, "expect": expect, "within": null});
    if let Some((k, v)) = size {
        d[k] = json!(v);
    }
    d
}

fn claim_verdict(points: &[TrialPoint], def: &Value) -> cairn_report::claim::ClaimResult {
    let def = claim(def);
    let spec = claim_spec(&def, &Dimensions::new(servers(), params())).unwrap();
    claim_step::check(&spec, &def, points).unwrap()
}

#[test]
fn claims_map_onto_the_analysis_rule() {
    let ten_percent = study(6, 1.10);
    let holds = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc > system", Some(("by", 0.05)), "tps"),
    );
    assert_eq!(holds.verdict, ClaimVerdict::Holds, "{}", holds.reason);
    assert!((holds.ratio.unwrap() - 1.10).abs() < 1e-12);
    assert_eq!(holds.left_trials.len(), 6);

    let fails = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc > system", Some(("by", 0.20)), "tps"),
    );
    assert_eq!(fails.verdict, ClaimVerdict::Fails, "{}", fails.reason);

    // the wrong way round: system is not higher
    let wrong = claim_verdict(&ten_percent, &claim_def("system > jemalloc", None, "tps"));
    assert_eq!(wrong.verdict, ClaimVerdict::Fails, "{}", wrong.reason);

    // non-inferiority: jemalloc is not lower than system by more than 5%
    let same = study(6, 1.0);
    let at_least = claim_verdict(
        &same,
        &claim_def("jemalloc >= system", Some(("within", 0.05)), "tps"),
    );
    assert_eq!(at_least.verdict, ClaimVerdict::Holds, "{}", at_least.reason);
    assert!(at_least.opposite_checked);
    // … and with a 10% deficit it fails
    let worse = study(6, 0.90);
    let not_at_least = claim_verdict(
        &worse,
        &claim_def("jemalloc >= system", Some(("within", 0.05)), "tps"),
    );
    assert_eq!(
        not_at_least.verdict,
        ClaimVerdict::Fails,
        "{}",
        not_at_least.reason
    );

    // a time: `<` means less time; jemalloc's p95 is 1/1.1 of system's
    let latency = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc < system", Some(("by", 0.05)), "latency_p95_ms"),
    );
    assert_eq!(latency.verdict, ClaimVerdict::Holds, "{}", latency.reason);
}

#[test]
fn claims_on_three_passes_are_inconclusive() {
    let c = claim_verdict(
        &study(3, 1.10),
        &claim_def("jemalloc > system", Some(("by", 0.05)), "tps"),
    );
    assert_eq!(c.verdict, ClaimVerdict::Inconclusive);
    assert!(c.reason.contains("too few passes"), "{}", c.reason);
}

/// A claim whose sides were not measured together — on more than one class of machine, or
/// in more than one campaign — is inconclusive and says which, as a table's comparison is,
/// whatever its numbers say (here a 10% gain the claim holds when measured together); the
/// machines are named first, as in a table.
#[test]
fn a_claim_across_classes_of_machine_or_campaigns_is_inconclusive() {
    let by_five = claim_def("jemalloc > system", Some(("by", 0.05)), "tps");
    let not_below = claim_def("jemalloc >= system", Some(("within", 0.05)), "tps");
    let together = study(6, 1.10);
    for def in [&by_five, &not_below] {
        let c = claim_verdict(&together, def);
        assert_eq!(c.verdict, ClaimVerdict::Holds, "{}", c.reason);
    }

    let machines_said = "measured on 2 classes of machine: a difference could be the machines'; measure on one class, or pivot by `node`";
    let mut machines = together.clone();
    for p in machines
        .iter_mut()
        .filter(|p| p.server == "jemalloc" && p.pass > 2)
    {
        p.fingerprint = json!({"cpu_model": "Other CPU", "cores": 64});
        p.node = Some("big1".into());
    }
    for def in [&by_five, &not_below] {
        let c = claim_verdict(&machines, def);
        assert_eq!(c.verdict, ClaimVerdict::Inconclusive, "{}", c.reason);
        assert_eq!(c.reason, machines_said);
    }

    let mut campaigns = together.clone();
    for p in campaigns.iter_mut().filter(|p| p.server == "jemalloc") {
        p.campaign = "boot 0000bbbb".into();
    }
    let c = claim_verdict(&campaigns, &by_five);
    assert_eq!(c.verdict, ClaimVerdict::Inconclusive, "{}", c.reason);
    assert!(
        c.reason
            .starts_with("its sides were measured in 2 campaigns"),
        "{}",
        c.reason
    );

    // both at once: the machines are named
    for (p, q) in campaigns.iter_mut().zip(&machines) {
        p.fingerprint = q.fingerprint.clone();
    }
    assert_eq!(claim_verdict(&campaigns, &by_five).reason, machines_said);
}

#[test]
fn bad_claims_are_refused_naming_the_property() {
    assert!(parse_expectation("jemalloc => system")
        .unwrap_err()
        .contains("not an operator"));
    assert!(parse_expectation("jemalloc faster")
        .unwrap_err()
        .contains("not an expectation"));
    let refused = |def: Value| {
        let e = claim_spec(&claim(&def), &Dimensions::new(servers(), params())).unwrap_err();
        assert_eq!(e.what, "claim");
        (e.name, e.message)
    };
    let (name, msg) = refused(claim_def("tcmalloc > system", None, "tps"));
    assert_eq!(name, "expect");
    assert!(msg.contains("not a server"), "{msg}");
    let (name, msg) = refused(claim_def(
        "jemalloc > system",
        Some(("within", 0.05)),
        "tps",
    ));
    assert_eq!(name, "expect");
    assert!(msg.contains("by="), "{msg}");
    let (name, _) = refused(claim_def("jemalloc > system", None, "tpx"));
    assert_eq!(name, "metric");
    let mut no_where = claim_def("jemalloc > system", None, "tps");
    no_where["where"] = json!({});
    let (_, msg) = refused(no_where);
    assert!(msg.contains("where threads="), "{msg}");
    let mut bad_point = claim_def("jemalloc > system", None, "tps");
    bad_point["where"] = json!({"threads": 8});
    let (name, msg) = refused(bad_point);
    assert_eq!(name, "threads");
    assert!(msg.contains("no trial has threads = 8"), "{msg}");
}

#[test]
fn the_report_has_tables_claims_noise_provenance_and_one_csv_row_per_trial() {
    let points = study(4, 1.10);
    let t = table(&points);
    let c = claim_verdict(
        &points,
        &claim_def("jemalloc > system", Some(("by", 0.05)), "tps"),
    );
    let md = render(
        "System malloc vs jemalloc",
        &[("tps".into(), t.clone())],
        &[("jemalloc is faster".into(), c.clone())],
        &points,
    );
    for part in [
        "# System malloc vs jemalloc",
        "## Tables",
        "### tps: `tps` (1/s)",
        "## Claims",
        "\"jemalloc is faster\" (`jemalloc > system` by 5%, tps at threads=4; meaning jemalloc's tps at least 5% above system's, so jemalloc is faster)",
        "## Data quality",
        "## Provenance",
        "- cairn ",
        "Trials behind each cell",
    ] {
        assert!(md.contains(part), "missing {part:?} in\n{md}");
    }
    // the headline (the findings under the title, one per line, and what they rest on)
    // states only numbers of the data
    let headline = cairn_report::markdown::headline(&md);
    assert!(
        headline.starts_with("- Claim \"jemalloc is faster\": **"),
        "{headline}"
    );
    assert!(
        headline.contains("\n- Table `tps`, jemalloc / system tps, 2 of 2 comparisons decided"),
        "a finding per line: {headline}"
    );
    let data = serde_json::to_value(cairn_kinds::report_step::ReportData {
        title: "System malloc vs jemalloc".into(),
        trials: points.clone(),
        tables: [("tps".to_string(), t.clone())].into(),
        claims: [("jemalloc is faster".to_string(), c.clone())].into(),
        profiles: Default::default(),
    })
    .unwrap();
    let unbacked = cairn_report::numbers::unbacked(headline, &data);
    assert!(unbacked.is_empty(), "{unbacked:?} in {headline}");
    let csv = data_csv(&points);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + points.len());
    assert_eq!(
        lines[0],
        "study,address,key,trials,server,duration,threads,pass,block,run_order,campaign,started,finished,server_version,allocator,machine_class,machine_class_id,tps,latency_p95_ms"
    );
    assert!(lines[1].starts_with(",trial/ro/system[threads=1]#1,"));
}

/// sql-bench style trials: per-operation seconds of `insert` and `select`; the 64-bit
/// build's inserts take 10% longer, its selects 20% less.
fn suite(passes: u32) -> Vec<TrialPoint> {
    let mut out = Vec::new();
    for server in ["b32", "b64"] {
        for pass in 1..=passes {
            let mut p = trial(server, 1, pass, 1.0, 1.0);
            p.address = format!("trial/sb/{server}#{pass}");
            p.params = BTreeMap::from([("test".to_string(), json!("all"))]);
            let spread = SPREAD[(pass as usize - 1) % SPREAD.len()];
            let (insert, select) = if server == "b64" {
                (110.0, 40.0)
            } else {
                (100.0, 50.0)
            };
            let mut f = Figures::new();
            f.set(&figures::TOTAL_S, (insert + select) * spread);
            f.set_member(&figures::OPERATION_SECONDS, "insert", insert * spread);
            f.set_member(&figures::OPERATION_SECONDS, "select", select * spread);
            // an operation group of the insert test: a row of the default compare only
            f.set_member(
                &figures::OPERATION_SECONDS,
                "insert_insert_key",
                insert / 2.0 * spread,
            );
            p.figures = f;
            out.push(p);
        }
    }
    out
}

#[test]
fn compare_shows_each_operation_against_the_baseline() {
    let def = analysis(json!({"kind": "compare", "props": {"baseline": "b32"}}));
    let servers = vec!["b32".to_string(), "b64".to_string()];
    let params = BTreeMap::from([("test".to_string(), vec!["all".to_string()])]);
    let spec = table_spec(&def, &Dimensions::new(servers.clone(), params.clone())).unwrap();
    let t = build_table(&spec, &def, &suite(5)).unwrap();
    assert_eq!(t.rows.name, "operation");
    assert_eq!(t.rows.values, ["insert_insert_key", "insert", "select"]);
    assert_eq!(t.columns.values, ["b32", "b64"]);
    assert_eq!(t.unit, "s");
    let insert = t.cell("insert", "b64").unwrap().comparison.clone().unwrap();
    assert!((insert.ratio.ratio - 1.10).abs() < 1e-12);
    assert_eq!(insert.verdict, Verdict::Slower, "more seconds is slower");
    let select = t.cell("select", "b64").unwrap().comparison.clone().unwrap();
    assert!((select.ratio.ratio - 0.80).abs() < 1e-12);
    assert_eq!(select.verdict, Verdict::Faster);
    let md = render_markdown("sql-bench", &t);
    assert!(md.contains("| operation \\ server | b32 | b64 |"), "{md}");
    assert!(md.contains("(+10.0%)") && md.contains("(-20.0%)"), "{md}");

    // without per-operation figures there is nothing to compare
    let err = build_table(&spec, &def, &study(3, 1.0)).unwrap_err();
    assert!(err.contains("per-operation seconds"), "{err}");

    // rows="test": each test's total alone, as the seeds' tables print them
    let tests = analysis(json!({"kind": "compare", "props": {"baseline": "b32", "rows": "test"}}));
    let spec = table_spec(&tests, &Dimensions::new(servers.clone(), params.clone())).unwrap();
    let t = build_table(&spec, &tests, &suite(5)).unwrap();
    assert_eq!(t.rows.name, "test");
    assert_eq!(t.rows.values, ["insert", "select"]);
    let md = render_markdown("sql-bench", &t);
    assert!(md.contains("| test \\ server | b32 | b64 |"), "{md}");

    // a baseline is required, and must be a server; rows are operations or tests
    for (props, words) in [
        (json!({"baseline": "b32", "rows": "server"}), "or \"test\""),
        (json!({}), "needs the server"),
        (json!({"baseline": "b16"}), "not a server"),
        (
            json!({"baseline": "b32", "metric": "tps"}),
            "no property `metric`",
        ),
    ] {
        let d = analysis(json!({"kind": "compare", "props": props}));
        let e = table_spec(&d, &Dimensions::new(servers.clone(), params.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(words), "{e}");
    }
}

#[test]
fn two_trials_blocks_are_never_mixed_in_a_cell_or_a_claim() {
    let mut points = study(4, 1.10);
    let mut other = study(4, 1.0);
    for p in &mut other {
        p.trials = "rw".into();
        p.address = p.address.replace("trial/ro/", "trial/rw/");
    }
    points.extend(other);
    let dims = cairn_kinds::trial_points::dimensions(&points);
    assert_eq!(dims.params["trials"], ["ro", "rw"]);
    let e = table_spec(&table_def(), &dims).unwrap_err().to_string();
    assert!(e.contains("vary in `trials`"), "{e}");

    let def = claim_def("jemalloc > system", Some(("by", 0.05)), "tps");
    let e = claim_spec(&claim(&def), &dims).unwrap_err().to_string();
    assert!(
        e.contains("name the block it reads, e.g. `trials \"ro\"`"),
        "{e}"
    );
    let mut pinned = def.clone();
    pinned["where"]["trials"] = json!("ro");
    let pinned = claim(&pinned);
    let spec = claim_spec(&pinned, &dims).unwrap();
    let c = claim_step::check(&spec, &pinned, &points).unwrap();
    assert_eq!(c.left_trials.len(), 4, "only the `ro` block's passes");
    assert!((c.ratio.unwrap() - 1.10).abs() < 1e-12);
}

/// `paired=#true`: nodes of very different speed (each pass of both variants on one node, as
/// a fleet's blocks run) hide a steady 5% gain from the unpaired comparison; paired within the
/// blocks, it is found, across machine classes (each pair is one machine), and the markdown
/// says the table is paired and how many pairs each verdict rests on.
#[test]
fn a_paired_table_compares_within_blocks_of_node_and_pass() {
    let mut points = study(7, 1.05);
    let speed = [1.0, 1.8, 1.3, 2.4, 0.9, 1.6, 2.1];
    for p in points.iter_mut() {
        let s = speed[p.pass as usize - 1];
        let tps = p.figures.get(&figures::TPS).unwrap();
        // the same node for both variants of a pass; its speed scales both
        p.figures.set(&figures::TPS, tps * s);
        p.node = Some(format!("n{}", p.pass));
        p.fingerprint = json!({"cpu_model": format!("CPU {}", p.pass % 2)});
    }
    let unpaired = table(&points);
    let cmp = unpaired
        .cell("jemalloc", "4")
        .unwrap()
        .comparison
        .clone()
        .unwrap();
    assert_eq!(cmp.verdict, Verdict::Inconclusive, "{cmp:?}");

    let def = analysis(
        json!({"kind": "table", "props": {"metric": "tps", "rows": "server", "columns": "threads", "baseline": "system", "paired": true}}),
    );
    let spec = table_spec(&def, &Dimensions::new(servers(), params())).unwrap();
    let t = build_table(&spec, &def, &points).unwrap();
    let cmp = t.cell("jemalloc", "4").unwrap().comparison.clone().unwrap();
    assert_eq!(cmp.verdict, Verdict::Faster, "{cmp:?}");
    assert_eq!(cmp.paired.as_ref().unwrap().pairs, 7);
    let md = render_markdown("tps", &t);
    assert!(md.contains("paired within blocks (node and pass)"), "{md}");
    assert!(md.contains("(7 pairs)"), "{md}");

    // a block one side lacks pairs with nothing; no common block at all is an error
    let mut moved = points.clone();
    for p in moved.iter_mut().filter(|p| p.server == "jemalloc") {
        p.node = Some("elsewhere".into());
    }
    let err = build_table(&spec, &def, &moved).unwrap_err();
    assert!(err.contains("no block (node and pass) holds both"), "{err}");

    // paired needs a baseline, and is a boolean
    let no_base = analysis(
        json!({"kind": "table", "props": {"metric": "tps", "columns": "threads", "paired": true}}),
    );
    assert!(table_spec(&no_base, &Dimensions::new(servers(), params())).is_err());
    let not_bool = analysis(
        json!({"kind": "table", "props": {"metric": "tps", "columns": "threads", "baseline": "system", "paired": "yes"}}),
    );
    assert!(table_spec(&not_bool, &Dimensions::new(servers(), params())).is_err());
}

fn band_def(expect: &str, about: f64, tolerance: f64, metric: &str) -> Value {
    let mut d = claim_def(expect, None, metric);
    d["about"] = json!(about);
    d["tolerance"] = json!(tolerance);
    d
}

/// "about 10% faster": jemalloc 10% above system at 4 threads, six quiet passes.
#[test]
fn a_band_holds_inside_and_fails_wholly_outside() {
    let ten_percent = study(6, 1.10);
    let about_10 = claim_verdict(
        &ten_percent,
        &band_def("jemalloc > system", 0.10, 0.05, "tps"),
    );
    assert_eq!(about_10.verdict, ClaimVerdict::Holds, "{}", about_10.reason);
    assert_eq!(
        about_10.meaning,
        "jemalloc's tps 5% to 15% above system's, so jemalloc is about 10% faster"
    );
    let about_50 = claim_verdict(
        &ten_percent,
        &band_def("jemalloc > system", 0.50, 0.10, "tps"),
    );
    assert_eq!(about_50.verdict, ClaimVerdict::Fails, "{}", about_50.reason);
    // a band below the data fails too: "about 3% faster" when it is 10%
    let about_3 = claim_verdict(
        &ten_percent,
        &band_def("jemalloc > system", 0.03, 0.02, "tps"),
    );
    assert_eq!(about_3.verdict, ClaimVerdict::Fails, "{}", about_3.reason);
    // three passes decide no band
    let short = claim_verdict(
        &study(3, 1.10),
        &band_def("jemalloc > system", 0.10, 0.05, "tps"),
    );
    assert_eq!(short.verdict, ClaimVerdict::Inconclusive);
    // a time: jemalloc's p95 is 1/1.1 of system's, about 9% less time
    let less_time = claim_verdict(
        &ten_percent,
        &band_def("jemalloc < system", 0.09, 0.03, "latency_p95_ms"),
    );
    assert_eq!(
        less_time.verdict,
        ClaimVerdict::Holds,
        "{}",
        less_time.reason
    );
    assert_eq!(
        less_time.meaning,
        "jemalloc's latency_p95_ms 6% to 12% below system's, so jemalloc takes about 9% less time (faster)"
    );
}

/// `>` and `<` read the numbers: on a time, "faster" is `<` (less time) and `>` is slower;
/// the result says so in words, both ways.
#[test]
fn on_a_time_less_is_faster_and_the_claim_says_so() {
    let ten_percent = study(6, 1.10);
    let faster = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc < system", Some(("by", 0.05)), "latency_p95_ms"),
    );
    assert_eq!(faster.verdict, ClaimVerdict::Holds, "{}", faster.reason);
    assert_eq!(
        faster.meaning,
        "jemalloc's latency_p95_ms at least 5% below system's, so jemalloc is faster (takes less time)"
    );
    let slower = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc > system", Some(("by", 0.05)), "latency_p95_ms"),
    );
    assert_eq!(slower.verdict, ClaimVerdict::Fails, "{}", slower.reason);
    assert_eq!(
        slower.meaning,
        "jemalloc's latency_p95_ms at least 5% above system's, so jemalloc is slower (takes more time)"
    );
    // system takes more time: the claim that it is slower holds
    let system_slower = claim_verdict(
        &ten_percent,
        &claim_def("system > jemalloc", Some(("by", 0.05)), "latency_p95_ms"),
    );
    assert_eq!(system_slower.verdict, ClaimVerdict::Holds);
    let tps = claim_verdict(
        &ten_percent,
        &claim_def("jemalloc >= system", Some(("within", 0.05)), "tps"),
    );
    assert_eq!(
        tps.meaning,
        "jemalloc's tps at most 5% below system's, so jemalloc is not slower by more than that"
    );
    let line = cairn_report::claim::claim_line("quicker", &faster);
    assert!(
        line.contains("meaning jemalloc's latency_p95_ms at least 5% below"),
        "{line}"
    );
}

#[test]
fn bad_bands_are_refused_at_the_expectation() {
    let refused = |def: Value| {
        let e = claim_spec(&claim(&def), &Dimensions::new(servers(), params())).unwrap_err();
        assert_eq!((e.what, e.name.as_str()), ("claim", "expect"));
        e.message
    };
    let msg = refused(band_def("jemalloc >= system", 0.10, 0.05, "tps"));
    assert!(msg.contains("write `>` or `<`"), "{msg}");
    let msg = refused(band_def("jemalloc > system", 0.10, 0.15, "tps"));
    assert!(msg.contains("claims no direction"), "{msg}");
    // a band from no difference ("up to 20% faster") claims a direction and a limit
    let up_to = band_def("jemalloc > system", 0.10, 0.10, "tps");
    assert!(claim_spec(&claim(&up_to), &Dimensions::new(servers(), params())).is_ok());
    let msg = refused(band_def("jemalloc < system", 0.90, 0.20, "tps"));
    assert!(msg.contains("cannot fall that far"), "{msg}");
    let mut half = claim_def("jemalloc > system", None, "tps");
    half["about"] = json!(0.5);
    assert!(refused(half).contains("write both about="));
    let mut both = band_def("jemalloc > system", 0.10, 0.05, "tps");
    both["by"] = json!(0.05);
    assert!(refused(both).contains("drop `by`"));
}

/// "About the same" (`==` within 5%): holds on equal figures, fails on a 10% gain, says so
/// in words, and needs its tolerance.
#[test]
fn the_same_within_a_tolerance_is_a_two_sided_claim() {
    let same = claim_def("jemalloc == system", Some(("within", 0.05)), "tps");
    let c = claim_verdict(&study(6, 1.0), &same);
    assert_eq!(c.verdict, ClaimVerdict::Holds, "{}", c.reason);
    assert!(!c.opposite_checked);
    assert_eq!(
        c.meaning,
        "jemalloc's tps within 5% of system's either way, so jemalloc and system are about the same"
    );
    let c = claim_verdict(&study(6, 1.10), &same);
    assert_eq!(c.verdict, ClaimVerdict::Fails, "{}", c.reason);
    // on a time (latency), the same band in seconds
    let latency = claim_def(
        "jemalloc == system",
        Some(("within", 0.05)),
        "latency_p95_ms",
    );
    let c = claim_verdict(&study(6, 1.0), &latency);
    assert_eq!(c.verdict, ClaimVerdict::Holds, "{}", c.reason);
    let refused =
        |def: Value| claim_spec(&claim(&def), &Dimensions::new(servers(), params())).unwrap_err();
    let e = refused(claim_def("jemalloc == system", None, "tps"));
    assert!(e.message.contains("add within="), "{}", e.message);
    let e = refused(claim_def("jemalloc == system", Some(("by", 0.05)), "tps"));
    assert!(e.message.contains("within="), "{}", e.message);
    let e = refused(band_def("jemalloc == system", 0.10, 0.05, "tps"));
    assert!(e.message.contains("write `>` or `<`"), "{}", e.message);
}

/// Any two cells: a side names a server at other parameter values (`jemalloc[threads=4] >
/// jemalloc[threads=1]`) or in another trials block (`ro:jemalloc > rw:jemalloc`).
#[test]
fn a_claim_compares_any_two_cells() {
    let points = study(6, 1.10);
    // jemalloc at 4 threads (3300 tps) against itself at 1 thread (1000): about 230% higher
    let mut def = band_def(
        "jemalloc[threads=4] > jemalloc[threads=1]",
        2.30,
        0.10,
        "tps",
    );
    def["where"] = json!({});
    let c = claim_verdict(&points, &def);
    assert_eq!(c.verdict, ClaimVerdict::Holds, "{}", c.reason);
    assert!((c.ratio.unwrap() - 3.3).abs() < 1e-9, "{:?}", c.ratio);

    let mut both = study(6, 1.10);
    let mut other = study(6, 1.0);
    for p in &mut other {
        p.trials = "rw".into();
        p.address = p.address.replace("trial/ro/", "trial/rw/");
    }
    both.extend(other);
    let both_dims = cairn_kinds::trial_points::dimensions(&both);
    let def = claim(&claim_def(
        "ro:jemalloc > rw:jemalloc",
        Some(("by", 0.05)),
        "tps",
    ));
    let spec = claim_spec(&def, &both_dims).unwrap();
    let c = claim_step::check(&spec, &def, &both).unwrap();
    assert_eq!(c.verdict, ClaimVerdict::Holds, "{}", c.reason);
    assert!((c.ratio.unwrap() - 1.10).abs() < 1e-12);

    // a side pinning a value no trial has, or a parameter the trials lack, is refused
    let refused = |expect: &str| {
        let mut d = claim_def(expect, None, "tps");
        d["where"] = json!({});
        claim_spec(&claim(&d), &Dimensions::new(servers(), params()))
            .unwrap_err()
            .message
    };
    assert!(
        refused("jemalloc[threads=8] > jemalloc[threads=1]").contains("no trial has threads = 8")
    );
    assert!(refused("jemalloc[engine=x] > system[engine=y]").contains("no parameter `engine`"));
    assert!(refused("jemalloc[threads=4 > system").contains("end with `]`"));
    // one side pinned, the other not: the parameter still varies
    assert!(refused("jemalloc[threads=4] > system").contains("where threads="));
}
