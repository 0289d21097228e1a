//! The `plot` and `scaling` analyses: charts of one figure against one dimension (threads,
//! …), one series per server, drawn by [`cairn_report::chart`] as `plot.svg` and `plot.png`.
//!
//! Both pivot their trials server × x with the table analysis's code ([`build_table`]) and
//! write that table too (`table.json`, `table.md`), so a report shows the numbers behind every
//! chart and every cell still names its trials. Each point is the median of its passes; its
//! whisker is the distribution-free 95% CI of the median where the passes give one (six and
//! more), else the range of the passes — the chart's caption says which, never a bar that
//! looks tighter than the data —, and every pass is a dot over it. A scaling chart draws each
//! server's ideal (linear from its lowest x) beside its points.
//!
//! `scaling` is a `plot` of throughput (`tps` unless `metric` says otherwise) against a
//! numeric x (`threads` unless `x` says otherwise) plus, per server and point, the speedup
//! over the lowest x and the efficiency against ideal linear scaling from there, each with
//! the seeded bootstrap CI of the ratio of medians it rests on (`scaling.json`, and a section
//! of `table.md`).

use cairn_engine::CheckError;
use std::fmt::Write as _;

use cairn_analysis::{compare, BootstrapSettings, Criteria, Interval};
use cairn_defs::figures::Direction;
use cairn_defs::AnalysisDef;

use crate::analysis_step::{build_table, cell_seed, figure_named, pivot, Pivot, TableSpec};
use crate::trial_points::{Dimensions, TrialPoint};
use cairn_report::chart::{self, Chart, Point, Series, Style};
use cairn_report::scaling::{scaling_markdown, Scaling, ScalingPoint};
use cairn_report::table::{render_markdown, Table};

/// Outputs of a plot (and of a scaling analysis).
pub const PLOT_SVG: &str = "plot.svg";
pub const PLOT_PNG: &str = "plot.png";
/// The scaling figures of a `scaling` analysis.
pub const SCALING_JSON: &str = "scaling.json";

const PLOT_PROPS: &[&str] = &["metric", "x", "style"];
const SCALING_PROPS: &[&str] = &["metric", "x", "style"];

/// Which of the two analyses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Plot,
    Scaling,
}

impl Flavour {
    /// The analysis kind this module answers for, if it is one.
    pub fn of(kind: &str) -> Option<Flavour> {
        match kind {
            "plot" => Some(Flavour::Plot),
            "scaling" => Some(Flavour::Scaling),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavour::Plot => "plot",
            Flavour::Scaling => "scaling",
        }
    }
}

/// A checked plot (or scaling) definition.
#[derive(Debug, Clone)]
pub struct PlotSpec {
    pub flavour: Flavour,
    pub table: TableSpec,
    pub style: Style,
}

/// Read and check a plot or scaling definition against the trials it reads.
pub fn plot_spec(
    flavour: Flavour,
    definition: &AnalysisDef,
    dims: &Dimensions,
) -> Result<PlotSpec, CheckError> {
    let params = &dims.params;
    let allowed = match flavour {
        Flavour::Plot => PLOT_PROPS,
        Flavour::Scaling => SCALING_PROPS,
    };
    crate::analysis_step::refuse_unknown_props(definition, allowed, flavour.name(), "")?;
    let metric = match (definition.metric(), flavour) {
        (Some(m), _) => m,
        (None, Flavour::Scaling) => "tps",
        (None, Flavour::Plot) => {
            return Err(CheckError::new(
                "analysis",
                "kind",
                "a plot needs the figure it draws: add metric=\"tps\"",
            ))
        }
    };
    let x = match (definition.x(), flavour) {
        (Some(x), _) => Some(x.to_string()),
        (None, Flavour::Scaling) => Some("threads".to_string()),
        (None, Flavour::Plot) => None,
    };
    let style = match definition.style() {
        None | Some("line") => Style::Line,
        Some("bar") => Style::Bar,
        Some(other) => {
            return Err(CheckError::new(
                "analysis",
                "style",
                format!("`{other}` is not a chart style; use \"line\" or \"bar\""),
            ))
        }
    };
    if flavour == Flavour::Scaling {
        let x = x.as_deref().unwrap_or("threads");
        if !params.contains_key(x) {
            let mut known: Vec<&str> = params.keys().map(String::as_str).collect();
            if known.is_empty() {
                known.push("(none)");
            }
            return Err(CheckError::new("analysis", 
                "x",
                format!(
                    "scaling needs a numeric x, a parameter of the trials (they have {}); `{x}` is none",
                    known.join(", ")
                ),
            ));
        }
    }
    let table = chart_table(metric, x.as_deref(), dims).map_err(|e| {
        if e.what.is_empty() {
            return e; // not one property's fault
        }
        // the table's `columns` is the plot's `x`
        let name = match e.name.as_str() {
            "columns" | "rows" => "x".to_string(),
            _ => e.name,
        };
        CheckError::new("analysis", name, e.message.replace("columns=", "x="))
    })?;
    if flavour == Flavour::Scaling {
        let values = params.get(&table.columns).cloned().unwrap_or_default();
        if let Some(bad) = values.iter().find(|v| v.parse::<f64>().is_err()) {
            return Err(CheckError::new(
                "analysis",
                "x",
                format!(
                    "scaling needs a numeric x; `{}` has the value `{bad}`",
                    table.columns
                ),
            ));
        }
        if values.len() < 2 {
            return Err(CheckError::new(
                "analysis",
                "x",
                format!(
                    "scaling needs at least two values of `{}` (the trials have {})",
                    table.columns,
                    values.len()
                ),
            ));
        }
    }
    Ok(PlotSpec {
        flavour,
        table,
        style,
    })
}

/// The table behind a chart: the same pivot as a `table` analysis of `metric`, servers as
/// rows and `x` as columns (with no `x`, what a table's columns default to).
fn chart_table(metric: &str, x: Option<&str>, dims: &Dimensions) -> Result<TableSpec, CheckError> {
    let metric = figure_named("analysis", "metric", metric)?;
    let Pivot {
        rows,
        columns,
        followers,
    } = pivot(Some("server"), x, None, dims)?;
    Ok(TableSpec {
        metric,
        metric_name: metric.name.to_string(),
        rows,
        columns,
        baseline: None,
        per_operation: false,
        paired: false,
        facet: None,
        followers,
    })
}

/// How the whiskers of a chart were drawn.
const WHISKERS_CI: &str = "whiskers: 95% CI";
/// Fewer than six passes give no CI of the median: the whiskers show the passes' range.
const WHISKERS_RANGE: &str = "whiskers: min–max of passes";

/// The x axis's name, with the values of any parameter that follows it at its ticks (a
/// tied axis: `cpus (threads 2, 4)`).
fn x_label(table: &Table) -> String {
    let x = &table.columns;
    let mut label = x.name.clone();
    for f in table.followers.iter().filter(|f| f.leader == x.name) {
        let at: Vec<&str> = x
            .values
            .iter()
            .filter_map(|v| {
                f.values
                    .iter()
                    .find(|(l, _)| l == v)
                    .map(|(_, fv)| fv.as_str())
            })
            .collect();
        label = format!("{label} ({} {})", f.name, at.join(", "));
    }
    label
}

/// The chart of a table: one series per server (its rows), x its columns; each point its
/// median, its whisker and its passes; with `ideal_scaling`, each server's linear scaling
/// from its lowest x beside it.
pub fn chart_of(table: &Table, style: Style, title: &str, ideal_scaling: bool) -> Chart {
    let mut all_ci = true;
    let series = table
        .rows
        .values
        .iter()
        .map(|server| Series {
            name: server.clone(),
            points: table
                .columns
                .values
                .iter()
                .map(|x| {
                    table.cell(server, x).map(|c| {
                        let (low, high) = match c.summary.median_ci {
                            Some(Interval { low, high, .. }) => (low, high),
                            None => {
                                all_ci = false;
                                (c.summary.min, c.summary.max)
                            }
                        };
                        Point {
                            value: c.summary.median,
                            low,
                            high,
                            passes: c.values.clone(),
                        }
                    })
                })
                .collect(),
        })
        .collect();
    let unit = if table.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", table.unit)
    };
    let whiskers = if all_ci { WHISKERS_CI } else { WHISKERS_RANGE };
    Chart {
        title: format!("{title}median, dots: passes, {whiskers}"),
        x_label: x_label(table),
        y_label: format!("{}{unit}", table.metric),
        x: table.columns.values.clone(),
        series,
        style,
        ideal_scaling,
    }
}

/// The scaling of every server from its lowest x (seeded bootstrap, as a table's cells).
pub fn scaling_of(table: &Table, definition: &AnalysisDef) -> Scaling {
    let mut points = Vec::new();
    for server in &table.rows.values {
        let cells: Vec<_> = table
            .columns
            .values
            .iter()
            .filter_map(|x| table.cell(server, x).map(|c| (x, c)))
            .filter_map(|(x, c)| x.parse::<f64>().ok().map(|xv| (x, xv, c)))
            .collect();
        let Some((_, x0, base)) = cells
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(x, xv, c)| (x.to_string(), *xv, *c))
        else {
            continue;
        };
        for (x, xv, cell) in &cells {
            let criteria = Criteria {
                bootstrap: BootstrapSettings {
                    seed: cell_seed(definition, server, x),
                    ..BootstrapSettings::default()
                },
                ..Criteria::default()
            };
            let speedup = cell.summary.median / base.summary.median;
            let speedup_ci = compare(
                &base.values,
                &cell.values,
                Direction::HigherIsBetter,
                &criteria,
            )
            .ok()
            .map(|c| c.ratio.ci);
            let ideal = xv / x0;
            let scale = |i: &Interval| Interval {
                low: i.low / ideal,
                high: i.high / ideal,
                level: i.level,
            };
            points.push(ScalingPoint {
                server: server.clone(),
                x: x.to_string(),
                median: cell.summary.median,
                speedup,
                efficiency: speedup / ideal,
                efficiency_ci: speedup_ci.as_ref().map(scale),
                speedup_ci,
            });
        }
    }
    Scaling {
        metric: table.metric.clone(),
        x: table.columns.name.clone(),
        points,
    }
}

/// The files an analysis writes: `(output name, bytes)`.
pub type Files = Vec<(&'static str, Vec<u8>)>;

/// What a plot or scaling analysis writes, and its headline.
pub fn render(
    spec: &PlotSpec,
    definition: &AnalysisDef,
    points: &[TrialPoint],
) -> Result<(Files, String), String> {
    let table = build_table(&spec.table, definition, points)?;
    let mut md = render_markdown("", &table);
    let mut outputs = Vec::new();
    let title = match spec.flavour {
        Flavour::Plot => format!("{} by {}: ", table.metric, table.columns.name),
        Flavour::Scaling => format!("scaling of {} with {}: ", table.metric, table.columns.name),
    };
    let chart = chart_of(&table, spec.style, &title, spec.flavour == Flavour::Scaling);
    let mut headline = format!(
        "{} of {} by {}: {} servers × {} points",
        spec.flavour.name(),
        table.metric,
        table.columns.name,
        table.rows.values.len(),
        table.columns.values.len()
    );
    if spec.flavour == Flavour::Scaling {
        let scaling = scaling_of(&table, definition);
        md.push_str(&scaling_markdown(&scaling));
        if let Some(worst) = scaling
            .points
            .iter()
            .min_by(|a, b| a.efficiency.total_cmp(&b.efficiency))
        {
            let _ = write!(
                headline,
                "; lowest efficiency {:.0}% ({} at {} = {})",
                worst.efficiency * 100.0,
                worst.server,
                scaling.x,
                worst.x
            );
        }
        outputs.push((
            SCALING_JSON,
            serde_json::to_vec_pretty(&scaling).expect("serialises"),
        ));
    }
    outputs.push((
        crate::analysis_step::TABLE_JSON,
        serde_json::to_vec_pretty(&table).expect("serialises"),
    ));
    outputs.push((crate::analysis_step::TABLE_MD, md.into_bytes()));
    outputs.push((PLOT_SVG, chart::svg(&chart)?.into_bytes()));
    outputs.push((PLOT_PNG, chart::png(&chart)?));
    Ok((outputs, headline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_defs::figures::Figures;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    fn point(server: &str, threads: u32, pass: u32, tps: f64) -> TrialPoint {
        TrialPoint {
            key: format!("{server}{threads}{pass}{}", "0".repeat(12)),
            address: format!("trial/r/{server}[threads={threads}]#{pass}"),
            trials: "r".into(),
            server: server.into(),
            pass,
            params: BTreeMap::from([("threads".to_string(), json!(threads))]),
            figures: Figures::from_map(BTreeMap::from([
                ("tps".to_string(), tps),
                ("latency_p95_ms".to_string(), 1000.0 / tps),
            ])),
            ..Default::default()
        }
    }

    /// `system` scales linearly 1 → 4 threads; `jemalloc` reaches half of linear.
    fn trials() -> Vec<TrialPoint> {
        let mut out = Vec::new();
        for pass in 1..=3 {
            let jitter = pass as f64;
            out.push(point("system", 1, pass, 1000.0 + jitter));
            out.push(point("system", 4, pass, 4000.0 + 4.0 * jitter));
            out.push(point("jemalloc", 1, pass, 1000.0 + jitter));
            out.push(point("jemalloc", 4, pass, 2000.0 + 2.0 * jitter));
        }
        out
    }

    fn dims() -> Dimensions {
        crate::trial_points::dimensions(&trials())
    }

    fn definition(kind: &str, props: Value) -> AnalysisDef {
        AnalysisDef {
            kind: kind.into(),
            props: props.as_object().expect("properties are a map").clone(),
            ..AnalysisDef::default()
        }
    }

    fn spec_of(kind: &str, props: Value) -> Result<PlotSpec, String> {
        let def = definition(kind, props);
        plot_spec(Flavour::of(kind).unwrap(), &def, &dims()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_plot_writes_its_table_and_both_images_deterministically() {
        let props = json!({"metric": "latency_p95_ms", "x": "threads", "style": "bar"});
        let spec = spec_of("plot", props.clone()).unwrap();
        let def = definition("plot", props);
        let (files, headline) = render(&spec, &def, &trials()).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["table.json", "table.md", "plot.svg", "plot.png"]);
        let svg = String::from_utf8(files[2].1.clone()).unwrap();
        assert!(svg.contains("latency_p95_ms (ms)"), "y axis with unit");
        assert!(
            svg.contains("min–max of passes"),
            "3 passes: whiskers are the range"
        );
        assert!(files[3].1.starts_with(b"\x89PNG"));
        assert_eq!(
            headline,
            "plot of latency_p95_ms by threads: 2 servers × 2 points"
        );
        assert_eq!(render(&spec, &def, &trials()).unwrap().0, files);
    }

    #[test]
    fn scaling_measures_efficiency_against_linear_from_the_lowest_point() {
        let spec = spec_of("scaling", json!({})).unwrap();
        let def = definition("scaling", json!({}));
        let table = build_table(&spec.table, &def, &trials()).unwrap();
        let s = scaling_of(&table, &def);
        let at = |server: &str, x: &str| {
            s.points
                .iter()
                .find(|p| p.server == server && p.x == x)
                .unwrap()
                .clone()
        };
        let base = at("system", "1");
        assert_eq!((base.speedup, base.efficiency), (1.0, 1.0));
        let linear = at("system", "4");
        assert!((linear.speedup - 4.0).abs() < 1e-9);
        assert!((linear.efficiency - 1.0).abs() < 1e-9);
        let half = at("jemalloc", "4");
        assert!((half.efficiency - 0.5).abs() < 1e-9);
        let ci = half.efficiency_ci.unwrap();
        assert!(ci.low <= 0.5 && 0.5 <= ci.high, "{ci:?}");
        let md = scaling_markdown(&s);
        assert!(md.contains("| jemalloc | 4 |"), "{md}");
        assert!(md.contains("50%"), "{md}");
        let (files, headline) = render(&spec, &def, &trials()).unwrap();
        assert_eq!(files[0].0, SCALING_JSON);
        assert!(headline.contains("lowest efficiency 50% (jemalloc at threads = 4)"));
    }

    #[test]
    fn bad_definitions_name_the_property() {
        let err = |kind: &str, props: Value| spec_of(kind, props).unwrap_err();
        assert!(err("plot", json!({})).contains("add metric=\"tps\""));
        assert!(err("plot", json!({"metric": "tps", "style": "pie"}))
            .contains("`pie` is not a chart style"));
        assert!(err("plot", json!({"metric": "tps", "x": "thread"}))
            .contains("`thread` is not a dimension of these trials"));
        assert!(err("plot", json!({"metric": "tps", "colour": "red"}))
            .contains("a plot has no property `colour`"));
        assert!(err("scaling", json!({"x": "server"})).contains("numeric x"));
        let e = plot_spec(
            Flavour::Plot,
            &definition("plot", json!({"metric": "tps", "x": "thread"})),
            &dims(),
        )
        .unwrap_err();
        assert!(matches!(e, CheckError { ref name, .. } if name == "x"));
    }
}
