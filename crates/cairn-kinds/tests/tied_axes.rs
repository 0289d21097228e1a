//! A tied axis (`tie "threads" to="cpus"`) in tables and claims: a parameter that takes one
//! value at each value of another follows it, so a table showing the leader shows the
//! follower beside it and a claim pinning the leader pins the follower; the same parameter
//! crossed with the leader, or differing between servers, is still refused.

use cairn_analysis::ClaimVerdict;
use cairn_defs::{AnalysisDef, ClaimDef};
use cairn_kinds::analysis_step::{build_table, table_spec};
use cairn_kinds::claim_step::{self, claim_spec};
use cairn_kinds::plot_analysis::{chart_of, plot_spec, Flavour};
use cairn_kinds::trial_points::{dimensions, TrialPoint};
use cairn_report::table::render_markdown;
use serde_json::{json, Value};

mod support;

use support::{tps_point, SPREAD};

/// system and jemalloc at 1 and 2 CPUs, 6 passes, each point at the threads `threads_of`
/// gives (server, cpus); jemalloc 10% faster at 2 CPUs, the same at 1.
fn study(threads_of: impl Fn(&str, u32) -> Vec<u32>) -> Vec<TrialPoint> {
    let mut out = Vec::new();
    for server in ["system", "jemalloc"] {
        for cpus in [1u32, 2] {
            for threads in threads_of(server, cpus) {
                for pass in 1..=6u32 {
                    let gain = if server == "jemalloc" && cpus == 2 {
                        1.1
                    } else {
                        1.0
                    };
                    let params = json!({"cpus": cpus, "threads": threads});
                    let tps = 1000.0 * cpus as f64 * gain * SPREAD[pass as usize - 1];
                    out.push(tps_point(server, params, pass, tps));
                }
            }
        }
    }
    out
}

/// Two client threads per CPU, as `tie "threads" to="cpus" times=2` measures.
fn tied() -> Vec<TrialPoint> {
    study(|_, cpus| vec![2 * cpus])
}

fn table(props: Value) -> AnalysisDef {
    serde_json::from_value(json!({"kind": "table", "props": props})).unwrap()
}

fn claim(extra: Value) -> ClaimDef {
    let mut def = json!({"metric": "tps", "expect": "jemalloc > system"});
    for (k, v) in extra.as_object().unwrap() {
        def[k] = v.clone();
    }
    serde_json::from_value(def).unwrap()
}

#[test]
fn a_table_over_the_leader_shows_the_tied_axis_beside_it() {
    let points = tied();
    let def = table(json!({"metric": "tps", "columns": "cpus", "baseline": "system"}));
    let spec = table_spec(&def, &dimensions(&points)).unwrap();
    assert_eq!(
        spec.followers,
        [("threads".to_string(), "cpus".to_string())]
    );
    let t = build_table(&spec, &def, &points).unwrap();
    assert_eq!(t.columns.values, ["1", "2"]);
    // each cell holds one point: its 6 passes
    assert!(t.cells.iter().all(|c| c.summary.n == 6));
    let md = render_markdown("tps", &t);
    assert!(
        md.contains("`threads` follows `cpus`: 2 at 1, 4 at 2."),
        "{md}"
    );
    // and the record keeps it
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(
        json["followers"][0]["values"],
        json!([["1", "2"], ["2", "4"]])
    );

    // a chart over the leader names the tied axis's values at its ticks
    let scaling: AnalysisDef =
        serde_json::from_value(json!({"kind": "scaling", "props": {"x": "cpus"}})).unwrap();
    let plot = plot_spec(Flavour::Scaling, &scaling, &dimensions(&points)).unwrap();
    let t = build_table(&plot.table, &scaling, &points).unwrap();
    let chart = chart_of(&t, plot.style, "", true);
    assert_eq!(chart.x_label, "cpus (threads 2, 4)");

    // a faceted table by the leader shows it too; a plain table never writes the field
    let faceted = table(
        json!({"metric": "tps", "rows": "server", "columns": "trials",
        "facet": "cpus"}),
    );
    let spec = table_spec(&faceted, &dimensions(&points)).unwrap();
    let t = build_table(&spec, &faceted, &points).unwrap();
    assert!(render_markdown("", &t).contains("`threads` follows `cpus`"));
    let untied: Vec<TrialPoint> = points
        .into_iter()
        .filter(|p| p.params["cpus"] == json!(2))
        .collect();
    let plain = table(json!({"metric": "tps"}));
    let t = build_table(
        &table_spec(&plain, &dimensions(&untied)).unwrap(),
        &plain,
        &untied,
    )
    .unwrap();
    assert!(serde_json::to_value(&t).unwrap().get("followers").is_none());
}

#[test]
fn an_axis_crossed_with_the_leader_or_differing_by_server_is_still_refused() {
    let def = table(json!({"metric": "tps", "columns": "cpus", "baseline": "system"}));
    // every thread count at every CPU count: a cell would mix two points
    let crossed = study(|_, _| vec![2, 4]);
    let e = table_spec(&def, &dimensions(&crossed)).unwrap_err();
    assert!(e.message.contains("vary in `threads` too"), "{}", e.message);
    // threads set by the server, not by a dimension the table shows: a comparison of the
    // two servers would compare two thread counts unsaid
    let by_server = study(|server, _| vec![if server == "system" { 1 } else { 2 }]);
    let e = table_spec(&def, &dimensions(&by_server)).unwrap_err();
    assert!(e.message.contains("vary in `threads` too"), "{}", e.message);
    // with two axes that follow each other, the columns must be named
    let e = table_spec(&table(json!({"metric": "tps"})), &dimensions(&tied())).unwrap_err();
    assert!(
        e.message.contains("name the table's columns"),
        "{}",
        e.message
    );
}

#[test]
fn a_claim_pinning_the_leader_pins_the_tied_axis() {
    let points = tied();
    let dims = dimensions(&points);
    let at_two = claim(json!({"where": {"cpus": 2}, "expect": "jemalloc > system",
        "about": 0.1, "tolerance": 0.05}));
    let spec = claim_step::claim_spec_of_points(&at_two, &points).unwrap();
    let r = claim_step::check(&spec, &at_two, &points).unwrap();
    assert_eq!(r.verdict, ClaimVerdict::Holds, "{}", r.reason);
    // its result says where it was checked: at 2 CPUs, and so at 4 threads
    let at: Vec<(&str, &str)> = r
        .point
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(at, [("cpus", "2"), ("threads", "4")]);
    assert_eq!(r.left_trials.len(), 6);
    // at each CPU count: each value pins its threads
    let over = claim(
        json!({"over": "cpus", "for": "all", "expect": "jemalloc >= system",
        "within": 0.05}),
    );
    assert!(claim_spec(&over, &dims).is_ok());
    // a leader one side pins alone leaves the sides at different thread counts unsaid
    let sided = claim(json!({"expect": "jemalloc[cpus=2] > system[cpus=1]"}));
    let e = claim_spec(&sided, &dims).unwrap_err();
    assert!(e.message.contains("vary in `threads`"), "{}", e.message);
    // crossed, pinning cpus leaves threads open
    let crossed = study(|_, _| vec![2, 4]);
    let e = claim_spec(&at_two, &dimensions(&crossed)).unwrap_err();
    assert!(e.message.contains("vary in `threads`"), "{}", e.message);
}
