//! Chart rendering for the `plot` and `scaling` analyses: one chart (line or bar, one series
//! per server, each point a median with a whisker for its uncertainty and a dot per pass)
//! drawn with `plotters` as SVG and as PNG.
//!
//! Each series has its own colour (whiskers and pass dots too) and is shifted a little along
//! x, so the whiskers of neighbouring series never hide each other. An x whose values are all
//! power-of-two multiples of the lowest (thread counts) is drawn on a log₂ axis, ticked at
//! each doubling; any other x is categorical, ticked at each value. A scaling chart draws,
//! per series, the ideal: linear scaling from its lowest x, dashed, in its colour.
//!
//! Text in the PNG is laid out and rasterised with the DejaVu Sans font embedded in this crate
//! (`assets/DejaVuSans.ttf`, Bitstream Vera licence beside it) through plotters' `ab_glyph`
//! backend: no fontconfig, no system fonts, so a fresh machine renders the same pixels. The SVG
//! names the `sans-serif` family (the viewer's font draws it) and is laid out with the same
//! embedded metrics. Rendering is a pure function of the [`Chart`]: the same chart gives the
//! same bytes, so a report re-renders byte-identically.

use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use serde::{Deserialize, Serialize};

/// The font every chart uses, embedded so PNG rendering needs nothing of the machine.
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family name the charts ask plotters for; the embedded font is registered under it.
pub(crate) const FAMILY: &str = "sans-serif";

/// The size of every chart, in pixels (SVG user units alike).
pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 480;

/// Line or bar chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    Line,
    Bar,
}

/// One point: the value drawn (a median), the whisker around it and the passes behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// Every pass's value, drawn as dots (in the passes' order).
    #[serde(default)]
    pub passes: Vec<f64>,
}

/// One series (a server): its points in the order of [`Chart::x`], `None` where it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<Option<Point>>,
}

/// Everything a chart shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    pub title: String,
    /// Axis labels, with units: `threads`, `tps (1/s)`.
    pub x_label: String,
    pub y_label: String,
    /// The categories along x (e.g. the thread counts), in the order drawn.
    pub x: Vec<String>,
    pub series: Vec<Series>,
    pub style: Style,
    /// Draw each series' ideal linear scaling from its lowest x (a scaling chart; needs a
    /// numeric x).
    #[serde(default)]
    pub ideal_scaling: bool,
}

/// How x is laid out.
#[derive(Debug, Clone, Copy, PartialEq)]
enum XAxis {
    /// One slot per value, in the order given.
    Categorical,
    /// log₂ of the values: every value is a power-of-two multiple of the lowest.
    Log2,
}

impl Chart {
    /// The numeric x values, if every one is a positive number.
    fn numeric_x(&self) -> Option<Vec<f64>> {
        self.x
            .iter()
            .map(|x| x.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0))
            .collect()
    }

    fn x_axis(&self) -> XAxis {
        let Some(values) = self.numeric_x() else {
            return XAxis::Categorical;
        };
        let lowest = values.iter().copied().fold(f64::INFINITY, f64::min);
        let doublings = |v: f64| (v / lowest).log2();
        let powers_of_two = values.iter().all(|v| {
            let d = doublings(*v);
            (d - d.round()).abs() < 1e-9
        });
        if values.len() >= 2 && powers_of_two {
            XAxis::Log2
        } else {
            XAxis::Categorical
        }
    }

    /// Where category `i` sits on the x axis.
    fn position(&self, axis: XAxis, i: usize) -> f64 {
        match axis {
            XAxis::Categorical => i as f64,
            XAxis::Log2 => self.x[i].parse::<f64>().map_or(i as f64, f64::log2),
        }
    }
}
/// Series colours, in series order (a colour-blind-safe qualitative palette, Okabe–Ito).
pub(crate) const PALETTE: &[RGBColor] = &[
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

/// Registers the embedded font once per process. plotters keeps its fonts in a process-wide
/// table; registering the same bytes under the same name is idempotent, so this is the one
/// shared state rendering touches, and it never changes what a chart looks like.
fn font_ready() -> Result<(), String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            register_font(FAMILY, FontStyle::Normal, FONT)
                .map_err(|_| "the embedded DejaVu Sans font does not parse".to_string())
        })
        .clone()
}

/// Something drawn on a chart's drawing area, by any plotters backend.
pub(crate) trait Drawing {
    /// Its size in pixels (SVG user units alike).
    fn size(&self) -> (u32, u32);
    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String>;
}

impl Drawing for Chart {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw_on<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        draw(self, root)
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, String> {
    render_svg(chart)
}

/// The chart as a PNG image (8-bit RGB).
pub fn png(chart: &Chart) -> Result<Vec<u8>, String> {
    render_png(chart)
}

/// `drawing` as an SVG document.
pub(crate) fn render_svg(drawing: &impl Drawing) -> Result<String, String> {
    font_ready()?;
    let mut out = String::new();
    {
        let backend = SVGBackend::with_string(&mut out, drawing.size());
        drawing.draw_on(backend.into_drawing_area())?;
    }
    Ok(out)
}

/// `drawing` as a PNG image (8-bit RGB).
pub(crate) fn render_png(drawing: &impl Drawing) -> Result<Vec<u8>, String> {
    font_ready()?;
    let (width, height) = drawing.size();
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    {
        let backend = BitMapBackend::with_buffer(&mut pixels, (width, height));
        drawing.draw_on(backend.into_drawing_area())?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("encoding the PNG: {e}"))?;
    writer
        .write_image_data(&pixels)
        .map_err(|e| format!("encoding the PNG: {e}"))?;
    writer
        .finish()
        .map_err(|e| format!("encoding the PNG: {e}"))?;
    Ok(out)
}

/// The top of the y axis: a little above the highest whisker or pass (throughput and latency both
/// start at zero, so bars and lines are read against an honest origin).
fn y_top(chart: &Chart) -> f64 {
    let highest = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().flatten())
        .flat_map(|p| {
            [p.high, p.value]
                .into_iter()
                .chain(p.passes.iter().copied())
        })
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if highest > 0.0 {
        highest * 1.15
    } else {
        1.0
    }
}

/// The runs of consecutive present points, as (x, value) pairs, each at `x(category)`.
fn runs(points: &[Option<Point>], x: impl Fn(usize) -> f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, p) in points.iter().enumerate() {
        match p {
            Some(p) => out.last_mut().expect("never empty").push((x(i), p.value)),
            None => out.push(Vec::new()),
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

/// A y axis label: whole numbers without decimals, others with what they need (at most 3).
pub(crate) fn axis_number(v: &f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The ideal of a series that scales linearly from its lowest point `(x0, v0)` (x in the
/// chart's values, not positions), sampled densely up to `x_end` and cut where it leaves
/// the plot (`y_top`), as `(position, value)` pairs.
fn ideal_line(axis: XAxis, x0: f64, v0: f64, x_end: f64, y_top: f64) -> Vec<(f64, f64)> {
    let position = |x: f64| match axis {
        XAxis::Log2 => x.log2(),
        XAxis::Categorical => x,
    };
    const STEPS: usize = 64;
    let mut out = Vec::new();
    for k in 0..=STEPS {
        // geometric steps: straight on a log axis, and dense where the line is flat
        let x = x0 * (x_end / x0).powf(k as f64 / STEPS as f64);
        let v = v0 * x / x0;
        if v > y_top {
            // where the line meets the top of the plot
            let x_top = x0 * y_top / v0;
            out.push((position(x_top), y_top));
            break;
        }
        out.push((position(x), v));
    }
    out
}

/// A linear x axis ticked exactly at the given positions (each value, or each doubling),
/// never between them — plotters' own f64 axis picks round numbers of its own.
struct Ticked {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let share = (value - self.range.start) / span;
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// The x offset of series `index` of `count`: side by side around the category, a small
/// step apart, so whiskers and pass dots of one category never cover each other.
fn series_offset(index: usize, count: usize) -> f64 {
    let step = (0.3 / count as f64).min(0.08);
    (index as f64 - (count as f64 - 1.0) / 2.0) * step
}

fn draw<DB: DrawingBackend>(
    chart: &Chart,
    root: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing the chart: {e}");
    root.fill(&WHITE).map_err(err)?;
    let axis = chart.x_axis();
    let positions: Vec<f64> = (0..chart.x.len())
        .map(|i| chart.position(axis, i))
        .collect();
    let lowest = positions.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = positions.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lowest, highest) = if lowest.is_finite() {
        (lowest, highest)
    } else {
        (0.0, 0.0)
    };
    // a tick at each value (each doubling on a log axis), labelled with the value itself
    let ticks: Vec<(f64, String)> = match axis {
        XAxis::Categorical => positions.iter().copied().zip(chart.x.clone()).collect(),
        XAxis::Log2 => {
            let base = chart
                .numeric_x()
                .unwrap_or_default()
                .into_iter()
                .fold(f64::INFINITY, f64::min);
            let doublings = (highest - lowest).round() as i32;
            (0..=doublings)
                .map(|k| {
                    let v = base * 2f64.powi(k);
                    (v.log2(), axis_number(&v))
                })
                .collect()
        }
    };
    let y_top = y_top(chart);
    let x_range = Ticked {
        range: lowest - 0.5..highest + 0.5,
        ticks: ticks.iter().map(|t| t.0).collect(),
    };
    let mut ctx = ChartBuilder::on(&root)
        .caption(&chart.title, (FAMILY, 18))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, 0f64..y_top)
        .map_err(err)?;
    let x_label = move |v: &f64| {
        ticks
            .iter()
            .find(|(at, _)| (at - v).abs() < 1e-9)
            .map(|(_, label)| label.clone())
            .unwrap_or_default()
    };
    let x_desc = match axis {
        XAxis::Log2 => format!("{} (log₂ scale)", chart.x_label),
        XAxis::Categorical => chart.x_label.clone(),
    };
    ctx.configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_label_formatter(&x_label)
        .y_labels(8)
        .y_label_formatter(&axis_number)
        .x_desc(x_desc)
        .y_desc(&chart.y_label)
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .draw()
        .map_err(err)?;
    let count = chart.series.len().max(1);
    let numeric = chart.numeric_x();
    for (index, series) in chart.series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        // bars of one category side by side; line points a small step apart
        let (offset, bar_width) = match chart.style {
            Style::Line => (series_offset(index, count), 0.0),
            Style::Bar => {
                let w = 0.8 / count as f64;
                (-0.4 + w * (index as f64 + 0.5), w)
            }
        };
        let at = |i: usize| positions[i] + offset;
        let points: Vec<(f64, &Point)> = series
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (at(i), p)))
            .collect();
        if chart.ideal_scaling {
            if let Some(numeric) = &numeric {
                // from the series' lowest x, as the scaling table's reference
                let present = series
                    .points
                    .iter()
                    .zip(numeric)
                    .filter_map(|(p, x)| p.as_ref().map(|p| (*x, p.value)));
                let first = present.clone().min_by(|a, b| a.0.total_cmp(&b.0));
                let last = present.map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
                if let Some((x0, v0)) =
                    first.filter(|(_, v0)| *v0 > 0.0 && last > first.map_or(0.0, |f| f.0))
                {
                    let line: Vec<(f64, f64)> = ideal_line(axis, x0, v0, last, y_top)
                        .into_iter()
                        .map(|(x, y)| (x + offset, y))
                        .collect();
                    let dashed = ctx
                        .draw_series(DashedLineSeries::new(
                            line,
                            6,
                            4,
                            color.mix(0.8).stroke_width(1),
                        ))
                        .map_err(err)?;
                    if index == 0 {
                        dashed
                            .label("ideal: linear from each lowest point")
                            .legend(|(x, y)| {
                                // a dash, a gap, a dash: the line's pattern
                                EmptyElement::at((x, y))
                                    + PathElement::new([(0, 0), (6, 0)], BLACK.stroke_width(1))
                                    + PathElement::new([(10, 0), (16, 0)], BLACK.stroke_width(1))
                            });
                    }
                }
            }
        }
        let annotation = match chart.style {
            Style::Line => {
                // a line joins neighbouring categories only: a point without trials breaks it
                for run in runs(&series.points, at) {
                    ctx.draw_series(LineSeries::new(run, color.stroke_width(2)))
                        .map_err(err)?;
                }
                ctx.draw_series(
                    points
                        .iter()
                        .map(|(x, p)| Circle::new((*x, p.value), 4, color.filled())),
                )
                .map_err(err)?
            }
            Style::Bar => ctx
                .draw_series(points.iter().map(|(x, p)| {
                    Rectangle::new(
                        [(x - bar_width / 2.0, 0.0), (x + bar_width / 2.0, p.value)],
                        // light, so the whisker and the pass dots in the series' colour show
                        color.mix(0.4).filled(),
                    )
                }))
                .map_err(err)?,
        };
        annotation
            .label(series.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
        ctx.draw_series(points.iter().map(|(x, p)| {
            ErrorBar::new_vertical(*x, p.low, p.value, p.high, color.stroke_width(1), 10)
        }))
        .map_err(err)?;
        // every pass over its median: hollow, so a dense cluster still shows its count
        ctx.draw_series(points.iter().flat_map(|(x, p)| {
            p.passes
                .iter()
                .map(move |v| Circle::new((*x, *v), 3, color.mix(0.7).stroke_width(1)))
        }))
        .map_err(err)?;
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 14))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(style: Style) -> Chart {
        let p = |v: f64| {
            Some(Point {
                value: v,
                low: v * 0.95,
                high: v * 1.05,
                passes: vec![v * 0.96, v, v * 1.04],
            })
        };
        Chart {
            title: "tps by threads".into(),
            x_label: "threads".into(),
            y_label: "tps (1/s)".into(),
            x: vec!["1".into(), "4".into(), "16".into()],
            series: vec![
                Series {
                    name: "system".into(),
                    points: vec![p(1000.0), p(3300.0), p(5000.0)],
                },
                Series {
                    name: "jemalloc".into(),
                    points: vec![p(1100.0), None, p(6000.0)],
                },
            ],
            style,
            ideal_scaling: style == Style::Line,
        }
    }

    #[test]
    fn svg_names_the_axes_with_units_and_the_series() {
        for style in [Style::Line, Style::Bar] {
            let svg = svg(&sample(style)).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
            for text in [
                "threads",
                "tps (1/s)",
                "system",
                "jemalloc",
                "\n16\n",
                "\n5000\n",
            ] {
                assert!(svg.contains(text), "{style:?}: no `{text}` in the SVG");
            }
        }
    }

    #[test]
    fn powers_of_two_get_a_log_axis_ticked_at_each_doubling() {
        let chart = sample(Style::Line);
        assert_eq!(chart.x_axis(), XAxis::Log2);
        let svg = svg(&chart).unwrap();
        for tick in ["\n1\n", "\n2\n", "\n4\n", "\n8\n", "\n16\n", "log₂ scale"] {
            assert!(svg.contains(tick), "no {tick:?} on the x axis");
        }
        assert!(svg.contains("ideal: linear from each lowest point"));
        let mut named = sample(Style::Line);
        named.x = vec!["a".into(), "b".into(), "c".into()];
        assert_eq!(named.x_axis(), XAxis::Categorical);
        let mut three = sample(Style::Line);
        three.x = vec!["1".into(), "3".into(), "4".into()];
        assert_eq!(three.x_axis(), XAxis::Categorical);
    }

    #[test]
    fn rendering_is_deterministic() {
        let chart = sample(Style::Line);
        assert_eq!(svg(&chart).unwrap(), svg(&chart).unwrap());
        assert_eq!(png(&chart).unwrap(), png(&chart).unwrap());
    }

    #[test]
    fn png_decodes_and_has_ink_with_text() {
        let bytes = png(&sample(Style::Bar)).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
        let pixels = &buf[..info.buffer_size()];
        let ink = pixels.chunks(3).filter(|p| p != &[255, 255, 255]).count();
        assert!(ink > 5_000, "only {ink} non-white pixels");
        // the title row (above the plotting area) holds only text: the font drew something
        let title_rows = &pixels[(16 * WIDTH * 3) as usize..(36 * WIDTH * 3) as usize];
        assert!(title_rows.chunks(3).any(|p| p != [255, 255, 255]));
    }
}
