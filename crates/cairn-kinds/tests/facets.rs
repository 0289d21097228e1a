//! Faceted tables (`facet="distribution"`): one table per value of a third parameter, each
//! with its own comparisons; split for the report, titled by their facet; a facet that is
//! not a parameter (or is the rows or columns) is refused with the property named.

use cairn_analysis::Verdict;
use cairn_defs::AnalysisDef;
use cairn_kinds::analysis_step::{build_table, table_spec};
use cairn_kinds::trial_points::{dimensions, TrialPoint};
use cairn_report::table::render_markdown;
use serde_json::{json, Value};

mod support;

use support::{tps_point, SPREAD};

/// system and jemalloc at 1 and 4 threads, under two distributions, 6 passes: jemalloc 10%
/// faster under `uniform`, the same under `special`.
fn study() -> Vec<TrialPoint> {
    let mut out = Vec::new();
    for server in ["system", "jemalloc"] {
        for distribution in ["uniform", "special"] {
            for threads in [1, 4] {
                for pass in 1..=6u32 {
                    let gain = if server == "jemalloc" && distribution == "uniform" {
                        1.1
                    } else {
                        1.0
                    };
                    let params = json!({"threads": threads, "distribution": distribution});
                    let tps = 1000.0 * threads as f64 * gain * SPREAD[pass as usize - 1];
                    out.push(tps_point(server, params, pass, tps));
                }
            }
        }
    }
    out
}

fn def(props: Value) -> AnalysisDef {
    serde_json::from_value(json!({"kind": "table", "props": props})).unwrap()
}

fn faceted() -> AnalysisDef {
    def(
        json!({"metric": "tps", "rows": "server", "columns": "threads",
        "baseline": "system", "facet": "distribution"}),
    )
}

#[test]
fn a_table_per_facet_value_each_with_its_own_comparisons() {
    let points = study();
    let dims = dimensions(&points);
    let spec = table_spec(&faceted(), &dims).unwrap();
    let table = build_table(&spec, &faceted(), &points).unwrap();
    let facet = table.facet.as_ref().unwrap();
    assert_eq!(facet.values, ["uniform", "special"]);
    assert_eq!(table.cells.len(), 2 * 2 * 2);
    let parts = table.faceted();
    assert_eq!(parts.len(), 2);
    let (title, uniform) = &parts[0];
    assert_eq!(title.as_deref(), Some("distribution = uniform"));
    assert_eq!(uniform.cells.len(), 4);
    let verdict = |t: &cairn_report::table::Table, threads: &str| {
        t.cell("jemalloc", threads)
            .unwrap()
            .comparison
            .as_ref()
            .unwrap()
            .verdict
    };
    assert_eq!(verdict(uniform, "4"), Verdict::Faster);
    assert_ne!(verdict(&parts[1].1, "4"), Verdict::Faster);
    let md = render_markdown("tps", &table);
    assert!(
        md.contains("### tps, distribution = uniform: `tps`"),
        "{md}"
    );
    assert!(
        md.contains("### tps, distribution = special: `tps`"),
        "{md}"
    );
    // a table without a facet serialises as before: no facet field anywhere
    let plain = def(
        json!({"metric": "tps", "rows": "server", "columns": "threads",
        "baseline": "system"}),
    );
    let uniform_only: Vec<TrialPoint> = points
        .iter()
        .filter(|p| p.params["distribution"] == "uniform")
        .cloned()
        .collect();
    let dims = dimensions(&uniform_only);
    let spec = table_spec(&plain, &dims).unwrap();
    let json = serde_json::to_string(&build_table(&spec, &plain, &uniform_only).unwrap()).unwrap();
    assert!(!json.contains("facet"), "{json}");
}

#[test]
fn a_facet_is_a_third_parameter_of_the_trials() {
    let points = study();
    let dims = dimensions(&points);
    let refused = |props: Value| table_spec(&def(props), &dims).unwrap_err();
    let e = refused(json!({"metric": "tps", "columns": "threads", "facet": "cpus"}));
    assert_eq!(e.name, "facet");
    assert!(e.message.contains("not a parameter"), "{}", e.message);
    let e = refused(json!({"metric": "tps", "columns": "threads", "facet": "threads"}));
    assert_eq!(e.name, "facet");
    // without the facet, the distribution that varies would mix in a cell: refused as before
    let e = refused(json!({"metric": "tps", "columns": "threads"}));
    assert!(e.message.contains("or facet"), "{}", e.message);
}
