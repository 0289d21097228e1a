//! A scaling analysis's result — each server's speedup over its lowest x and its efficiency
//! against linear scaling, with CIs — as `scaling.json` holds it, and its Markdown.

use std::fmt::Write as _;

use cairn_analysis::Interval;
use cairn_defs::figures;
use serde::{Deserialize, Serialize};

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

/// The scaling section of a scaling analysis's `table.md`.
pub fn scaling_markdown(s: &Scaling) -> String {
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
    let mut md = format!(
        "\n#### Scaling of `{}` with `{}`: speedup over the lowest `{}` and efficiency against linear scaling from there [95% bootstrap CI]\n\n| server | {} | median | speedup | efficiency |\n|---|---:|---:|---:|---:|\n",
        s.metric, s.x, s.x, s.x
    );
    let number = |v: f64| {
        figures::lookup(&s.metric).map_or(format!("{v:.3}"), |f| figures::format_number(f, v))
    };
    for p in &s.points {
        let _ = writeln!(
            md,
            "| {} | {} | {} | ×{:.2} {} | {:.0}% {} |",
            p.server,
            p.x,
            number(p.median),
            p.speedup,
            ci(&p.speedup_ci),
            p.efficiency * 100.0,
            percent_ci(&p.efficiency_ci)
        );
    }
    md
}
