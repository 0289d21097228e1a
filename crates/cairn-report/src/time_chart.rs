//! Throughput over time: the per-interval samples of one matrix point's trials as small
//! multiples — one panel per server, one thin line per pass, the warm-up shaded — drawn as SVG
//! and PNG with the same font, palette and byte-stable rendering as [`crate::chart`].
//!
//! The panels share one y axis, so servers compare by eye, and start at zero. A sample is
//! drawn at the middle of its interval (it is the rate over the whole interval); a pass of
//! one or two samples (a run of a second or two) is drawn as dots, which a line would not show.

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::chart::{axis_number, render_png, render_svg, Drawing, FAMILY, PALETTE, WIDTH};

/// The height of one panel, in pixels; the chart grows with its panels.
const PANEL_HEIGHT: u32 = 210;
/// Room for the title above the panels.
const TITLE_HEIGHT: u32 = 40;

/// One pass: its samples as `(seconds from the workload's start, value)`, in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassLine {
    pub pass: u32,
    pub samples: Vec<(f64, f64)>,
}

/// One panel: a server's passes at the point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    pub name: String,
    /// Its colour: the server's place among the study's servers (the plots' colour order).
    pub colour: usize,
    /// The end of its warm-up, in seconds from the start (`None`: no warm-up).
    pub warmup_end: Option<f64>,
    pub passes: Vec<PassLine>,
}

/// Everything a throughput-over-time chart shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeChart {
    pub title: String,
    /// The y axis, with its unit: `tps (1/s)`.
    pub y_label: String,
    /// Where the x axis ends: the end of the last interval, in seconds from the start.
    pub span_s: f64,
    pub panels: Vec<Panel>,
}

impl TimeChart {
    fn y_top(&self) -> f64 {
        let highest = self
            .panels
            .iter()
            .flat_map(|p| &p.passes)
            .flat_map(|l| l.samples.iter().map(|s| s.1))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        if highest > 0.0 {
            highest * 1.1
        } else {
            1.0
        }
    }

    fn x_end(&self) -> f64 {
        if self.span_s.is_finite() && self.span_s > 0.0 {
            self.span_s
        } else {
            1.0
        }
    }
}

impl Drawing for TimeChart {
    fn size(&self) -> (u32, u32) {
        let panels = self.panels.len().max(1) as u32;
        (WIDTH, TITLE_HEIGHT + PANEL_HEIGHT * panels)
    }

    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing the chart: {e}");
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, (FAMILY, 18)).map_err(err)?;
        let areas = root.split_evenly((self.panels.len().max(1), 1));
        let (y_top, x_end) = (self.y_top(), self.x_end());
        for (panel, area) in self.panels.iter().zip(areas) {
            let color = PALETTE[panel.colour % PALETTE.len()];
            let mut ctx = ChartBuilder::on(&area)
                .caption(
                    match panel.warmup_end {
                        Some(_) => format!("{}: each line a pass, shaded: warm-up", panel.name),
                        None => format!("{}: each line a pass", panel.name),
                    },
                    (FAMILY, 14),
                )
                .margin(8)
                .x_label_area_size(36)
                .y_label_area_size(80)
                .build_cartesian_2d(0f64..x_end, 0f64..y_top)
                .map_err(err)?;
            ctx.configure_mesh()
                .light_line_style(WHITE)
                .x_labels(10)
                .y_labels(5)
                .x_label_formatter(&axis_number)
                .y_label_formatter(&axis_number)
                .x_desc("seconds from the workload's start")
                .y_desc(&self.y_label)
                .label_style((FAMILY, 12))
                .axis_desc_style((FAMILY, 13))
                .draw()
                .map_err(err)?;
            if let Some(end) = panel.warmup_end.filter(|e| *e > 0.0) {
                ctx.draw_series([Rectangle::new(
                    [(0.0, 0.0), (end.min(x_end), y_top)],
                    BLACK.mix(0.08).filled(),
                )])
                .map_err(err)?;
            }
            for line in &panel.passes {
                ctx.draw_series(LineSeries::new(
                    line.samples.iter().copied(),
                    color.mix(0.75).stroke_width(1),
                ))
                .map_err(err)?;
                // a run of a sample or two draws no line to speak of: mark its samples
                if line.samples.len() <= 2 {
                    ctx.draw_series(
                        line.samples
                            .iter()
                            .map(|s| Circle::new(*s, 3, color.mix(0.75).filled())),
                    )
                    .map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
        Ok(())
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &TimeChart) -> Result<String, String> {
    render_svg(chart)
}

/// The chart as a PNG image (8-bit RGB).
pub fn png(chart: &TimeChart) -> Result<Vec<u8>, String> {
    render_png(chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TimeChart {
        let line = |pass: u32, level: f64| PassLine {
            pass,
            samples: (0..10)
                .map(|s| (s as f64 + 0.5, level + (s % 3) as f64 * 10.0))
                .collect(),
        };
        TimeChart {
            title: "tps over time, ro at threads = 4".into(),
            y_label: "tps (1/s)".into(),
            span_s: 10.0,
            panels: vec![
                Panel {
                    name: "system".into(),
                    colour: 0,
                    warmup_end: Some(2.0),
                    passes: vec![line(1, 1000.0), line(2, 1100.0)],
                },
                Panel {
                    name: "jemalloc".into(),
                    colour: 1,
                    warmup_end: Some(2.0),
                    passes: vec![line(1, 900.0)],
                },
            ],
        }
    }

    #[test]
    fn panels_name_their_server_and_rendering_is_byte_stable() {
        let chart = sample();
        let svg = svg(&chart).unwrap();
        for text in [
            "system: each line a pass",
            "jemalloc",
            "tps (1/s)",
            "seconds",
        ] {
            assert!(svg.contains(text), "no `{text}` in the SVG");
        }
        assert_eq!(svg, super::svg(&chart).unwrap());
        let png = png(&chart).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        assert_eq!(png, super::png(&chart).unwrap());
        assert_eq!(chart.size(), (WIDTH, TITLE_HEIGHT + 2 * PANEL_HEIGHT));
    }
}
