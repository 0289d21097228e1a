//! `report.md`: a [`Report`] as Markdown — the title, the summary, then each section under
//! its `##` heading with its blocks a blank line apart; tables as `table.md` has them, each
//! figure as an image link to its SVG beside the report.

use std::fmt::Write as _;

use crate::claim::claim_text;
use crate::document::{Block, Figure, Inline, Report, Span};
use crate::scaling::scaling_markdown;
use crate::table::{render_markdown_with, Flags};

/// The report as Markdown.
pub fn render(report: &Report) -> String {
    let mut md = format!("# {}\n", report.title);
    for block in &report.summary {
        md.push('\n');
        render_block(&mut md, block);
    }
    for section in &report.sections {
        let _ = writeln!(md, "\n## {}", section.heading);
        for block in &section.blocks {
            md.push('\n');
            render_block(&mut md, block);
        }
    }
    md
}

/// The headline of a rendered `report.md`: what stands between the title and the first
/// section (the findings, then what they rest on); empty when there is none.
pub fn headline(md: &str) -> &str {
    let above = md.split("\n## ").next().unwrap_or_default();
    above.split_once("\n\n").map_or("", |(_, rest)| rest)
}

/// Text with its code in backticks and its strong emphasis in double asterisks.
pub fn inline(text: &Inline) -> String {
    let mut md = String::new();
    for span in &text.0 {
        match span {
            Span::Text(t) => md.push_str(t),
            Span::Code(c) => {
                let _ = write!(md, "`{c}`");
            }
            Span::Strong(s) => {
                let _ = write!(md, "**{s}**");
            }
        }
    }
    md
}

/// A block, ending in a newline.
fn render_block(md: &mut String, block: &Block) {
    match block {
        Block::Paragraph(text) => {
            let _ = writeln!(md, "{}", inline(text));
        }
        Block::List(items) => {
            for item in items {
                let _ = writeln!(md, "- {}", inline(&item.text));
                for sub in &item.sub_items {
                    let _ = writeln!(md, "  - {}", inline(sub));
                }
            }
        }
        Block::Figure(figure) => render_figure(md, figure),
        Block::Table { name, table } => {
            md.push_str(&render_markdown_with(name, table, Flags::Legend))
        }
        Block::Scaling { name, scaling } => {
            let _ = write!(md, "{name}:\n{}", scaling_markdown(scaling));
        }
        Block::Claims(claims) => {
            for (text, result) in claims {
                let _ = writeln!(md, "- {}", inline(&claim_text(text, result)));
            }
        }
        Block::Grid {
            caption,
            header,
            rows,
        } => {
            let _ = writeln!(md, "{}\n", inline(caption));
            let row = |cells: &[String]| {
                let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
                format!("| {} |", cells.join(" | "))
            };
            let _ = writeln!(md, "{}", row(header));
            let _ = writeln!(md, "|{}", "---|".repeat(header.len()));
            for r in rows {
                let _ = writeln!(md, "{}", row(r));
            }
        }
    }
}

/// The chart as an image (a Markdown viewer shows the SVG), then the files it is in.
fn render_figure(md: &mut String, figure: &Figure) {
    if let Some(svg) = figure.svg_file() {
        let _ = writeln!(md, "![{}]({svg})\n", figure.name);
    }
    let files: Vec<String> = figure.files.iter().map(|f| format!("`{f}`")).collect();
    let _ = writeln!(md, "{}: {}", figure.name, files.join(", "));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Item, Section};

    #[test]
    fn the_headline_is_what_stands_between_the_title_and_the_first_section() {
        let md =
            "# T\n\n- Claim \"a\": **holds**.\n- Table `t`.\n\n4 trials.\n\n## Design\n\n- x\n";
        assert_eq!(
            headline(md),
            "- Claim \"a\": **holds**.\n- Table `t`.\n\n4 trials.\n"
        );
        assert_eq!(headline("# T\n"), "");
    }

    #[test]
    fn a_grid_is_a_markdown_table_under_its_caption() {
        let mut md = String::new();
        render_block(
            &mut md,
            &Block::Grid {
                caption: Inline::plain("`t` against `s`:"),
                header: vec!["function".into(), "Δ points".into()],
                rows: vec![vec!["operator|(a, b)".into(), "+1.50".into()]],
            },
        );
        assert_eq!(
            md,
            "`t` against `s`:\n\n| function | Δ points |\n|---|---|\n| operator\\|(a, b) | +1.50 |\n"
        );
    }

    #[test]
    fn sections_and_blocks_are_a_blank_line_apart() {
        let mut settings = Item::new(Inline::plain("settings:"));
        settings
            .sub_items
            .push(Inline::plain("allocator: a = ").code("system"));
        let report = Report {
            title: "T".into(),
            summary: vec![Block::Paragraph(Inline::plain("Intro."))],
            sections: vec![
                Section {
                    heading: "Plots".into(),
                    anchor: None,
                    blocks: vec![Block::Figure(Figure {
                        name: "lat".into(),
                        svg: "<svg></svg>".into(),
                        files: vec!["plot-lat.svg".into(), "plot-lat.png".into()],
                    })],
                },
                Section {
                    heading: "Provenance".into(),
                    anchor: Some("provenance".into()),
                    blocks: vec![
                        Block::List(vec![Item::new(Inline::plain("cairn 0.1.0")), settings]),
                        Block::Paragraph(Inline::plain("The data: ").code("data.csv").text(".")),
                    ],
                },
            ],
        };
        assert_eq!(
            render(&report),
            "# T\n\nIntro.\n\n## Plots\n\n![lat](plot-lat.svg)\n\nlat: `plot-lat.svg`, `plot-lat.png`\n\n## Provenance\n\n- cairn 0.1.0\n- settings:\n  - allocator: a = `system`\n\nThe data: `data.csv`.\n"
        );
    }
}
