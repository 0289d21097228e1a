//! Chart rendering for the `plot` and `scaling` analyses: one chart (line or bar, one series
//! per server, each point a median with a whisker for its uncertainty) drawn with `plotters`
//! as SVG and as PNG.
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
const FAMILY: &str = "sans-serif";

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

/// One point: the value drawn (a median) and the whisker around it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub value: f64,
    pub low: f64,
    pub high: f64,
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
}

/// Series colours, in series order (a colour-blind-safe qualitative palette, Okabe–Ito).
const PALETTE: &[RGBColor] = &[
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

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, String> {
    font_ready()?;
    let mut out = String::new();
    {
        let backend = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT));
        draw(chart, backend.into_drawing_area())?;
    }
    Ok(out)
}

/// The chart as a PNG image (8-bit RGB).
pub fn png(chart: &Chart) -> Result<Vec<u8>, String> {
    font_ready()?;
    let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let backend = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT));
        draw(chart, backend.into_drawing_area())?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
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

/// The top of the y axis: a little above the highest whisker (throughput and latency both
/// start at zero, so bars and lines are read against an honest origin).
fn y_top(chart: &Chart) -> f64 {
    let highest = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().flatten())
        .map(|p| p.high.max(p.value))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    if highest > 0.0 {
        highest * 1.15
    } else {
        1.0
    }
}

/// The runs of consecutive present points, as (category, value) pairs.
fn runs(points: &[Option<Point>]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, p) in points.iter().enumerate() {
        match p {
            Some(p) => out
                .last_mut()
                .expect("never empty")
                .push((i as f64, p.value)),
            None => out.push(Vec::new()),
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

/// A y axis label: whole numbers without decimals, others with what they need (at most 3).
fn axis_number(v: &f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw<DB: DrawingBackend>(
    chart: &Chart,
    root: DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing the chart: {e}");
    root.fill(&WHITE).map_err(err)?;
    let n = chart.x.len().max(1);
    let x_range = -0.5f64..(n as f64 - 0.5);
    let mut ctx = ChartBuilder::on(&root)
        .caption(&chart.title, (FAMILY, 18))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, 0f64..y_top(chart))
        .map_err(err)?;
    let labels = chart.x.clone();
    // x is categorical: a label at each whole position, none between them
    let x_label = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    ctx.configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_labels(2 * n + 1)
        .x_label_formatter(&x_label)
        .y_labels(8)
        .y_label_formatter(&axis_number)
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .draw()
        .map_err(err)?;
    let count = chart.series.len().max(1);
    for (index, series) in chart.series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        // bars of one category side by side; line points on the category
        let (offset, bar_width) = match chart.style {
            Style::Line => (0.0, 0.0),
            Style::Bar => {
                let w = 0.8 / count as f64;
                (-0.4 + w * (index as f64 + 0.5), w)
            }
        };
        let points: Vec<(f64, Point)> = series
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (i as f64 + offset, p)))
            .collect();
        let annotation = match chart.style {
            Style::Line => {
                // a line joins neighbouring categories only: a point without trials breaks it
                for run in runs(&series.points) {
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
                        color.mix(0.75).filled(),
                    )
                }))
                .map_err(err)?,
        };
        annotation
            .label(series.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
        ctx.draw_series(points.iter().map(|(x, p)| {
            ErrorBar::new_vertical(*x, p.low, p.value, p.high, BLACK.stroke_width(1), 10)
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
