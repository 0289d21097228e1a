//! Flame graphs as self-contained SVG: one rectangle per frame of the merged call tree, its
//! width the frame's share of the samples, callers below callees, a `<title>` on each so a
//! browser shows the name and count on hover — no script, no external font or style.
//!
//! The plain graph colours frames by a hash of their name (warm hues; the colour carries no
//! meaning, it separates neighbours). The differential graph draws the variant's tree and
//! colours each frame by how its share of the samples changed from the baseline's same stack:
//! red where the variant spends more, blue where it spends less, white where nothing changed,
//! the colour's depth proportional to the change (normalised by each side's total samples, as
//! differential flame graphs are).
//!
//! Rendering is a pure function of its inputs: the same profile gives the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write;

use cairn_analysis::profile::Profile;

/// The drawing's width and one frame's height, in SVG user units.
const WIDTH: f64 = 1200.0;
const FRAME: f64 = 16.0;
const MARGIN: f64 = 10.0;
const TITLE: f64 = 28.0;
/// Frames narrower than this are not drawn (their samples are still in their parents).
const MIN_WIDTH: f64 = 2.0;
/// About one character's advance at the font size used, to cut labels to their frame.
const CHAR: f64 = 6.6;

#[derive(Default)]
struct Node {
    samples: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn of(profile: &Profile) -> Node {
        let mut root = Node::default();
        for (stack, &count) in &profile.stacks {
            root.samples += count;
            let mut node = &mut root;
            for frame in stack.split(';') {
                node = node.children.entry(frame.to_string()).or_default();
                node.samples += count;
            }
        }
        root
    }

    fn child(&self, name: &str) -> Option<&Node> {
        self.children.get(name)
    }
}

/// How a frame is coloured: by its name, or by its change against a baseline.
enum Colours<'a> {
    ByName,
    /// The baseline's tree and its total samples.
    Against(&'a Node),
}

/// A flame graph of `profile` headed by `title`. An empty profile gives a drawing that says so.
pub fn svg(profile: &Profile, title: &str) -> String {
    render(&Node::of(profile), title, Colours::ByName)
}

/// The differential flame graph: `variant`'s tree, each frame red (more) or blue (less) by
/// the change in its share of the samples from the same stack in `baseline`.
pub fn diff_svg(baseline: &Profile, variant: &Profile, title: &str) -> String {
    let base = Node::of(baseline);
    render(&Node::of(variant), title, Colours::Against(&base))
}

fn render(root: &Node, title: &str, colours: Colours) -> String {
    let frames = layout(root, &colours);
    // as tall as the frames drawn: a deep but narrow stack adds no empty rows
    let depth = frames.iter().map(|f| f.level + 1).max().unwrap_or(1);
    let height = TITLE + depth as f64 * FRAME + 2.0 * MARGIN;
    let bottom = height - MARGIN;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    out.push('\n');
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="#fdfdf8"/><text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>"##,
        WIDTH / 2.0,
        escape(title)
    );
    if root.samples == 0 {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">no samples</text>"#,
            WIDTH / 2.0,
            TITLE + MARGIN + FRAME
        );
        out.push_str("</svg>\n");
        return out;
    }
    for f in &frames {
        let y = bottom - (f.level + 1) as f64 * FRAME;
        let mut tip = format!(
            "{} — {} samples, {:.2}%",
            f.name,
            f.samples,
            f.share * 100.0
        );
        if let Some(change) = f.change {
            let _ = write!(tip, ", {:+.2} points against the baseline", change * 100.0);
        }
        let _ = write!(
            out,
            r##"<g><title>{}</title><rect x="{:.2}" y="{:.2}" width="{:.2}" height="{}" fill="{}" stroke="#fdfdf8" stroke-width="0.5"/>"##,
            escape(&tip),
            f.x,
            y,
            f.width,
            FRAME - 1.0,
            f.fill
        );
        let fits = ((f.width - 4.0) / CHAR).floor() as usize;
        if fits >= 3 {
            let label = cut(f.name, fits);
            let _ = write!(
                out,
                r#"<text x="{:.2}" y="{:.2}">{}</text>"#,
                f.x + 2.0,
                y + FRAME - 4.5,
                escape(&label)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// Every frame wide enough to draw, with its place, in drawing order: bottom up, left to
/// right.
fn layout<'a>(root: &'a Node, colours: &Colours<'a>) -> Vec<Frame<'a>> {
    if root.samples == 0 {
        return Vec::new();
    }
    let scale = (WIDTH - 2.0 * MARGIN) / root.samples as f64;
    let base = match colours {
        Colours::Against(base) => Some((base, base.samples.max(1) as f64)),
        Colours::ByName => None,
    };
    let mut frames = Vec::new();
    // depth-first from the root's children, each with its x and its baseline counterpart
    let mut todo: Vec<(&str, &Node, f64, usize, Option<&Node>)> = Vec::new();
    let mut x = MARGIN;
    for (name, child) in &root.children {
        todo.push((name, child, x, 0, base.and_then(|(b, _)| b.child(name))));
        x += child.samples as f64 * scale;
    }
    while let Some((name, node, x, level, counterpart)) = todo.pop() {
        let width = node.samples as f64 * scale;
        if width < MIN_WIDTH {
            continue;
        }
        let share = node.samples as f64 / root.samples as f64;
        let (fill, change) = match base {
            None => (name_colour(name), None),
            Some((_, base_total)) => {
                let before = counterpart.map_or(0.0, |c| c.samples as f64 / base_total);
                (change_colour(share - before), Some(share - before))
            }
        };
        frames.push(Frame {
            name,
            x,
            level,
            width,
            samples: node.samples,
            share,
            change,
            fill,
        });
        let mut cx = x;
        for (child_name, child) in &node.children {
            todo.push((
                child_name,
                child,
                cx,
                level + 1,
                counterpart.and_then(|c| c.child(child_name)),
            ));
            cx += child.samples as f64 * scale;
        }
    }
    // a fixed order whatever the traversal: bottom up, left to right
    frames.sort_by(|a, b| a.level.cmp(&b.level).then(a.x.total_cmp(&b.x)));
    frames
}

struct Frame<'a> {
    name: &'a str,
    x: f64,
    /// 0 for the outermost callers.
    level: usize,
    width: f64,
    samples: u64,
    share: f64,
    change: Option<f64>,
    fill: String,
}

/// `name` cut to `chars` characters, with `..` where it was cut.
fn cut(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        name.to_string()
    } else {
        let kept: String = name.chars().take(chars.saturating_sub(2)).collect();
        format!("{kept}..")
    }
}

/// A warm colour chosen by the name's hash, so the same function has the same colour in
/// every graph.
fn name_colour(name: &str) -> String {
    // FNV-1a: stable across builds and platforms, unlike std's hasher
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let r = 205 + (h % 50) as u32;
    let g = 80 + ((h >> 16) % 150) as u32;
    let bl = 40 + ((h >> 32) % 50) as u32;
    format!("rgb({r},{g},{bl})")
}

/// Red for a frame whose share grew, blue for one that shrank, full depth at 5 points of
/// the samples or more.
fn change_colour(change: f64) -> String {
    let depth = (change.abs() / 0.05).min(1.0);
    let fade = (255.0 - 200.0 * depth).round() as u32;
    if change > 0.0 {
        format!("rgb(255,{fade},{fade})")
    } else if change < 0.0 {
        format!("rgb({fade},{fade},255)")
    } else {
        "rgb(255,255,255)".to_string()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        Profile::parse_folded(text).unwrap()
    }

    #[test]
    fn every_frame_is_drawn_with_its_share_and_name() {
        let p = profile(
            "mariadbd;do_command;malloc 30\nmariadbd;do_command;ut_delay(unsigned long) 70\n",
        );
        let svg = svg(&p, "deb64 <tps>");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("deb64 &lt;tps&gt;"));
        assert!(
            svg.contains("<title>malloc — 30 samples, 30.00%</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>mariadbd — 100 samples, 100.00%</title>"));
        assert!(svg.contains(">ut_delay(unsigned long)</text>"));
        assert!(!svg.contains("<script"));
        // the same profile, the same bytes
        assert_eq!(svg, super::svg(&p, "deb64 <tps>"));
    }

    #[test]
    fn a_differential_graph_colours_more_red_and_less_blue() {
        let base = profile("m;malloc 50\nm;work 50\n");
        let variant = profile("m;malloc 10\nm;work 90\n");
        let svg = diff_svg(&base, &variant, "tcmalloc against system");
        let malloc = svg.lines().find(|l| l.contains("<title>malloc")).unwrap();
        assert!(malloc.contains("-40.00 points"), "{malloc}");
        assert!(malloc.contains("fill=\"rgb(55,55,255)\""), "{malloc}");
        let work = svg.lines().find(|l| l.contains("<title>work")).unwrap();
        assert!(work.contains("fill=\"rgb(255,55,55)\""), "{work}");
    }

    #[test]
    fn no_samples_says_so() {
        assert!(svg(&Profile::default(), "empty").contains("no samples"));
    }
}
