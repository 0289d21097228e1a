//! Throughput over time for a report: one chart per matrix point of a trials block (the
//! columns of its tables), a panel per server, a thin line per pass, the warm-up shaded —
//! drawn from the same per-interval samples as `series.csv` ([`crate::series_csv`]) by
//! [`cairn_report::time_chart`], written as `plot-series-<block>-<point>.svg` and `.png`.
//!
//! It answers what a median hides: whether a pass stalled, whether throughput was still
//! climbing after the warm-up, whether one server's passes are steady and another's are not.

use std::collections::BTreeMap;

use cairn_report::time_chart::{Panel, PassLine, TimeChart};

use crate::report_step::file_stem;
use crate::series_csv::Samples;
use crate::trial_points::{display_value, push_unique, TrialPoint};

/// A point of a trials block: the block and the parameters that vary in it, with their values.
type PointIn<'t> = (&'t str, Vec<(String, String)>);

/// One throughput-over-time chart and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPlot {
    /// The files' stem: `plot-series-ro-threads_4` (`.svg`, `.png`).
    pub stem: String,
    /// What it shows, for the report: `tps over time: ro at threads = 4`.
    pub caption: String,
    pub chart: TimeChart,
}

/// The charts of `trials` that recorded samples (`samples`, by record key), one per trials
/// block and matrix point in first-seen order; none when no trial recorded samples. A point
/// is named by the parameters that vary within its block (the block alone when none does).
pub fn plots(trials: &[TrialPoint], samples: &Samples) -> Vec<SeriesPlot> {
    let servers: Vec<&str> = trials.iter().fold(Vec::new(), |mut seen, t| {
        if !seen.contains(&t.server.as_str()) {
            seen.push(&t.server);
        }
        seen
    });
    // block → the values each parameter takes in it, to name points by what varies
    let mut values: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    for t in trials {
        for (k, v) in &t.params {
            push_unique(
                values.entry(&t.trials).or_default().entry(k).or_default(),
                display_value(v),
            );
        }
    }
    // (block, point) in first-seen order → the trials measured there
    let mut points: Vec<(PointIn, Vec<&TrialPoint>)> = Vec::new();
    for t in trials.iter().filter(|t| samples.contains_key(&t.key)) {
        let varying: Vec<(String, String)> = t
            .params
            .iter()
            .filter(|(k, _)| values[t.trials.as_str()][k.as_str()].len() > 1)
            .map(|(k, v)| (k.clone(), display_value(v)))
            .collect();
        let at = (t.trials.as_str(), varying);
        match points.iter_mut().find(|(p, _)| *p == at) {
            Some((_, members)) => members.push(t),
            None => points.push((at, vec![t])),
        }
    }
    points
        .into_iter()
        .map(|((block, point), members)| {
            let place = point
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let named = point
                .iter()
                .map(|(k, v)| format!("-{k}_{v}"))
                .collect::<String>();
            let caption = if place.is_empty() {
                format!("tps over time: {block}")
            } else {
                format!("tps over time: {block} at {place}")
            };
            SeriesPlot {
                stem: format!("plot-series-{}", file_stem(&format!("{block}{named}"))),
                chart: TimeChart {
                    title: caption.clone(),
                    y_label: "tps (1/s)".into(),
                    span_s: span(&members, samples),
                    panels: panels(&servers, &members, samples),
                },
                caption,
            }
        })
        .collect()
}

/// Where the last interval of `members` ends, in seconds from the start.
fn span(members: &[&TrialPoint], samples: &Samples) -> f64 {
    members
        .iter()
        .filter_map(|t| samples.get(&t.key))
        .flat_map(|(width, intervals)| intervals.iter().map(move |iv| iv.start_s + width))
        .fold(0.0, f64::max)
}

/// One panel per server among `members` (in the study's server order), its passes in pass
/// order.
fn panels(servers: &[&str], members: &[&TrialPoint], samples: &Samples) -> Vec<Panel> {
    let mut out = Vec::new();
    for (colour, server) in servers.iter().enumerate() {
        let mut mine: Vec<&&TrialPoint> = members.iter().filter(|t| t.server == *server).collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort_by_key(|t| t.pass);
        let mut warmup_end = None;
        let passes = mine
            .iter()
            .filter_map(|t| {
                let (width, intervals) = samples.get(&t.key)?;
                // the workload's own warm-up length; else where its flagged intervals end
                let flagged = intervals
                    .iter()
                    .filter(|iv| iv.warmup)
                    .map(|iv| iv.start_s + width)
                    .fold(None, |end: Option<f64>, e| {
                        Some(end.map_or(e, |x| x.max(e)))
                    });
                let declared = t.params.get("warmup").and_then(|w| w.as_f64());
                warmup_end = declared.or(flagged).or(warmup_end);
                Some(PassLine {
                    pass: t.pass,
                    samples: intervals
                        .iter()
                        .map(|iv| (iv.start_s + width / 2.0, iv.events as f64 / width))
                        .collect(),
                })
            })
            .collect();
        out.push(Panel {
            name: server.to_string(),
            colour,
            warmup_end,
            passes,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_workload::metrics::Interval;
    use serde_json::json;

    fn trial(server: &str, threads: u32, pass: u32) -> TrialPoint {
        TrialPoint {
            key: format!("{server}-{threads}-{pass}"),
            address: format!("trial/ro/{server}[threads={threads}]#{pass}"),
            trials: "ro".into(),
            server: server.into(),
            pass,
            params: BTreeMap::from([
                ("threads".to_string(), json!(threads)),
                ("warmup".to_string(), json!(1.0)),
            ]),
            figures: Default::default(),
            ..Default::default()
        }
    }

    fn intervals() -> Vec<Interval> {
        (0..4)
            .map(|s| Interval {
                start_s: s as f64,
                warmup: s < 1,
                events: 100 + s,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn one_chart_per_point_a_panel_per_server_a_line_per_pass() {
        let mut trials = Vec::new();
        for threads in [1, 4] {
            for pass in [2, 1] {
                trials.push(trial("system", threads, pass));
                trials.push(trial("jemalloc", threads, pass));
            }
        }
        // one trial recorded no samples (a driver without intervals): no line
        let samples: Samples = trials
            .iter()
            .filter(|t| t.key != "jemalloc-4-2")
            .map(|t| (t.key.clone(), (1.0, intervals())))
            .collect();
        let plots = plots(&trials, &samples);
        let stems: Vec<&str> = plots.iter().map(|p| p.stem.as_str()).collect();
        assert_eq!(
            stems,
            ["plot-series-ro-threads_1", "plot-series-ro-threads_4"]
        );
        assert_eq!(plots[1].caption, "tps over time: ro at threads = 4");
        let panels = &plots[1].chart.panels;
        assert_eq!(panels.len(), 2);
        assert_eq!((panels[0].name.as_str(), panels[0].colour), ("system", 0));
        let passes: Vec<u32> = panels[0].passes.iter().map(|l| l.pass).collect();
        assert_eq!(passes, [1, 2], "in pass order");
        assert_eq!(panels[1].passes.len(), 1);
        assert_eq!(panels[0].warmup_end, Some(1.0));
        assert_eq!(panels[0].passes[0].samples[1], (1.5, 101.0));
        assert_eq!(plots[1].chart.span_s, 4.0);
        assert!(super::plots(&trials, &Samples::new()).is_empty());
    }
}
