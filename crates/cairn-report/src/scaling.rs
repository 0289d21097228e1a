//! A scaling analysis's result — each server's speedup over its lowest x and its efficiency
//! against linear scaling, with CIs — as `scaling.json` holds it, and its table: the caption,
//! the rows, and as Markdown.

use cairn_analysis::Interval;
use cairn_defs::figures;
use serde::{Deserialize, Serialize};

use crate::document::Inline;
use crate::markdown;

/// One server's scaling at one x: the speedup over its lowest x and the efficiency against
/// linear scaling from there, each with the CI of the ratio of medians behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    pub server: String,
    pub x: String,
    pub median: f64,
    /// median(x) / median(lowest x).
    pub speedup: f64,
    /// `None` when the passes are too few for a bootstrap.
    pub speedup_ci: Option<Interval>,
    /// speedup / (x / lowest x): 1.0 is linear scaling.
    pub efficiency: f64,
    pub efficiency_ci: Option<Interval>,
}

/// What `scaling.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub metric: String,
    pub x: String,
    pub points: Vec<ScalingPoint>,
}

/// What the scaling table shows, as its caption.
pub fn caption(s: &Scaling) -> Inline {
    Inline::plain("Scaling of ")
        .code(&s.metric)
        .text(" with ")
        .code(&s.x)
        .text(": speedup over the lowest ")
        .code(&s.x)
        .text(" and efficiency against linear scaling from there [95% bootstrap CI]")
}

/// The names of the scaling table's columns.
pub fn header(s: &Scaling) -> Vec<String> {
    ["server", &s.x, "median", "speedup", "efficiency"]
        .map(String::from)
        .to_vec()
}

/// The scaling table's rows: each point's server, x, median, and its speedup and efficiency
/// with their CIs.
pub fn rows(s: &Scaling) -> Vec<Vec<String>> {
    let ci = |i: &Option<Interval>| {
        i.as_ref()
            .map_or("[no CI: too few passes]".to_string(), |i| {
                format!("[{:.2}, {:.2}]", i.low, i.high)
            })
    };
    let percent_ci = |i: &Option<Interval>| {
        i.as_ref()
            .map_or("[no CI: too few passes]".to_string(), |i| {
                format!("[{:.0}%, {:.0}%]", i.low * 100.0, i.high * 100.0)
            })
    };
    let number = |v: f64| {
        figures::lookup(&s.metric).map_or(format!("{v:.3}"), |f| figures::format_number(f, v))
    };
    s.points
        .iter()
        .map(|p| {
            // a server's lowest x is what the others are measured against: its speedup over
            // itself is 1 by definition, not an estimate with a CI
            let (speedup, efficiency) = if is_reference(s, p) {
                ("×1 (reference)".to_string(), "100% (reference)".to_string())
            } else {
                (
                    format!("×{:.2} {}", p.speedup, ci(&p.speedup_ci)),
                    format!(
                        "{:.0}% {}",
                        p.efficiency * 100.0,
                        percent_ci(&p.efficiency_ci)
                    ),
                )
            };
            vec![
                p.server.clone(),
                p.x.clone(),
                number(p.median),
                speedup,
                efficiency,
            ]
        })
        .collect()
}

/// Whether `p` is its server's lowest x (numerically where the x values are numbers; else
/// the first listed): the point its speedups are over.
fn is_reference(s: &Scaling, p: &ScalingPoint) -> bool {
    let own = s.points.iter().filter(|q| q.server == p.server);
    let lowest = own
        .clone()
        .filter_map(|q| q.x.parse::<f64>().ok().map(|v| (v, q)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, q)| q)
        .or_else(|| own.clone().next());
    lowest.is_some_and(|q| std::ptr::eq(q, p))
}

/// The scaling section of a scaling analysis's `table.md` (and of report.md): the caption
/// as a heading, then the table.
pub fn scaling_markdown(s: &Scaling) -> String {
    let row = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut md = format!("\n#### {}\n\n", markdown::inline(&caption(s)));
    md.push_str(&row(header(s)));
    md.push_str("|---|---:|---:|---:|---:|\n");
    for r in rows(s) {
        md.push_str(&row(r));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(server: &str, x: &str, speedup: f64) -> ScalingPoint {
        let ci = |v: f64| {
            Some(Interval {
                low: v * 0.8,
                high: v * 1.2,
                level: 0.95,
            })
        };
        let efficiency = speedup / x.parse::<f64>().unwrap();
        ScalingPoint {
            server: server.into(),
            x: x.into(),
            median: 100.0 * speedup,
            speedup,
            speedup_ci: ci(speedup),
            efficiency,
            efficiency_ci: ci(efficiency),
        }
    }

    #[test]
    fn each_servers_lowest_x_is_the_reference_without_a_ci() {
        let s = Scaling {
            metric: "tps".into(),
            x: "threads".into(),
            // listed out of order: the lowest x is found by value
            points: vec![
                point("a", "4", 3.0),
                point("a", "1", 1.0),
                point("b", "1", 1.0),
                point("b", "4", 3.5),
            ],
        };
        let rows = rows(&s);
        let cell = |server: &str, x: &str, col: usize| {
            rows.iter()
                .find(|r| r[0] == server && r[1] == x)
                .map(|r| r[col].clone())
                .unwrap()
        };
        assert_eq!(cell("a", "1", 3), "×1 (reference)");
        assert_eq!(cell("a", "1", 4), "100% (reference)");
        assert_eq!(cell("b", "1", 3), "×1 (reference)");
        assert_eq!(cell("a", "4", 3), "×3.00 [2.40, 3.60]");
        assert_eq!(cell("b", "4", 4), "88% [70%, 105%]");
    }
}
