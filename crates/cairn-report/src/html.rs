//! `report.html`: a [`Report`] as one self-contained page — the charts inline as SVG, the
//! tables with every cell coloured by its verdict and naming the trials behind it, the
//! claims coloured by theirs, the noisy points and the provenance — with a little CSS and
//! nothing fetched from anywhere, so it can be mailed, archived or opened offline.
//! Deterministic like `report.md`: the same document renders the same bytes.

use std::fmt::Write as _;

use cairn_analysis::Verdict;

use crate::claim::claim_text;
use crate::document::{Block, Figure, Inline, Report, Span};
use crate::scaling::{self, Scaling};
use crate::table::{Cell, Table};

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}
thead th{background:#eee}
td.faster{background:#c8ecc8}td.slower{background:#f6c6c6}
td.higher,td.lower{background:#dde6f6}td.nsd{background:#eeeeee}
td.inconclusive{background:#fbf0c0}td.baseline{color:#666}
li.holds{color:#176317}li.fails{color:#a01818}li.inconclusive{color:#7a5b00}
.noisy{color:#a05a00}
figure{margin:1.5em 0}figcaption{color:#555}
details{margin:.5em 0 1.5em}code{font-size:90%}
";

/// Escape text for HTML element content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::Higher => "higher",
        Verdict::Lower => "lower",
        Verdict::NoSignificantDifference => "nsd",
        Verdict::Inconclusive => "inconclusive",
    }
}

/// The trials behind a cell, for its tooltip: `key12 (address)`.
fn evidence(cell: &Cell) -> String {
    cell.trials
        .iter()
        .zip(&cell.addresses)
        .map(|(k, a)| format!("{} ({a})", &k[..12.min(k.len())]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn table_html(html: &mut String, name: &str, table: &Table) {
    let number = crate::table::number_format(table);
    let unit = if table.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", escape(&table.unit))
    };
    let _ = writeln!(
        html,
        "<h3>{}: <code>{}</code>{unit}, median of the passes</h3>",
        escape(name),
        escape(&table.metric)
    );
    let head = |html: &mut String| {
        let _ = write!(
            html,
            "<table>\n<thead><tr><th>{} \\ {}</th>",
            escape(&table.rows.name),
            escape(&table.columns.name)
        );
        for c in &table.columns.values {
            let _ = write!(html, "<th>{}</th>", escape(c));
        }
        html.push_str("</tr></thead>\n<tbody>\n");
    };
    head(html);
    for r in &table.rows.values {
        let _ = write!(html, "<tr><th>{}</th>", escape(r));
        for c in &table.columns.values {
            match table.cell(r, c) {
                Some(cell) => {
                    let mut noisy = if cell.noisy {
                        " <span class=\"noisy\" title=\"noisy: CV above 5% or unknown\">⚠</span>"
                    } else {
                        ""
                    }
                    .to_string();
                    if let Some(t) = cell.drift {
                        let arrow = if t.falling() { "↘" } else { "↗" };
                        noisy.push_str(&format!(" <span class=\"noisy\">{arrow} drift</span>"));
                    }
                    if !cell.outliers.is_empty() {
                        noisy.push_str(" <span class=\"noisy\">° outlier</span>");
                    }
                    let _ = write!(
                        html,
                        "<td title=\"{}\">{} (n={}){noisy}</td>",
                        escape(&evidence(cell)),
                        number(cell.summary.median),
                        cell.summary.n
                    );
                }
                None => html.push_str("<td>-</td>"),
            }
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");
    for f in &table.followers {
        let _ = writeln!(html, "<p>{}</p>", inline(&Inline::ticked(&f.sentence())));
    }
    if table
        .cells
        .iter()
        .any(|c| c.drift.is_some() || !c.outliers.is_empty())
    {
        html.push_str("<p class=\"noisy\">↘ ↗ drift, ° outlier: see Data quality.</p>\n");
    }
    if let Some(baseline) = &table.baseline {
        let heading = crate::table::comparison_heading(table, baseline);
        let _ = writeln!(html, "<p>{}</p>", inline(&Inline::ticked(&heading)));
        head(html);
        for r in &table.rows.values {
            let _ = write!(html, "<tr><th>{}</th>", escape(r));
            for c in &table.columns.values {
                match table.cell(r, c) {
                    Some(cell) if &cell.server == baseline => {
                        html.push_str("<td class=\"baseline\">baseline</td>")
                    }
                    Some(
                        cell @ Cell {
                            comparison: Some(cmp),
                            ..
                        },
                    ) => {
                        let _ = write!(
                            html,
                            "<td class=\"{}\" title=\"{}\">{} <strong>{}</strong></td>",
                            verdict_class(cmp.verdict),
                            escape(&evidence(cell)),
                            escape(&crate::table::ratio_text(cmp)),
                            cmp.verdict
                        );
                    }
                    _ => html.push_str("<td>-</td>"),
                }
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</tbody></table>\n<ul class=\"reasons\">\n");
        // each verdict's reason in the page itself, not only in a tooltip
        for (place, why) in crate::table::comparison_reasons(table) {
            let _ = writeln!(
                html,
                "<li>{}: {}</li>",
                escape(&place),
                inline(&Inline::ticked(&why))
            );
        }
        html.push_str("</ul>\n");
    }
    html.push_str("<details><summary>Trials behind each cell</summary><ul>\n");
    for cell in &table.cells {
        let keys: Vec<String> = cell
            .trials
            .iter()
            .map(|k| format!("<code>{}</code>", escape(&k[..12.min(k.len())])))
            .collect();
        let _ = writeln!(
            html,
            "<li>{} = {}, {} = {}: {}</li>",
            escape(&table.rows.name),
            escape(&cell.row),
            escape(&table.columns.name),
            escape(&cell.column),
            keys.join(" ")
        );
    }
    html.push_str("</ul></details>\n");
}

/// The report as one HTML page.
pub fn render(report: &Report) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&report.title),
        escape(&report.title)
    );
    for block in &report.summary {
        render_block(&mut html, block);
    }
    for section in &report.sections {
        let anchor = section
            .anchor
            .as_ref()
            .map_or(String::new(), |a| format!(" id=\"{}\"", escape(a)));
        let _ = writeln!(html, "<h2{anchor}>{}</h2>", escape(&section.heading));
        for block in &section.blocks {
            render_block(&mut html, block);
        }
    }
    html.push_str("</body>\n</html>\n");
    html
}

/// Text escaped, its code in `<code>` and its strong emphasis in `<strong>`.
fn inline(text: &Inline) -> String {
    let mut html = String::new();
    for span in &text.0 {
        match span {
            Span::Text(t) => html.push_str(&escape(t)),
            Span::Code(c) => {
                let _ = write!(html, "<code>{}</code>", escape(c));
            }
            Span::Strong(s) => {
                let _ = write!(html, "<strong>{}</strong>", escape(s));
            }
        }
    }
    html
}

fn render_block(html: &mut String, block: &Block) {
    match block {
        Block::Paragraph(text) => {
            let _ = writeln!(html, "<p>{}</p>", inline(text));
        }
        Block::List(items) => {
            html.push_str("<ul>\n");
            for item in items {
                let _ = writeln!(html, "<li>{}</li>", inline(&item.text));
                // one list, the sub-items indented: what a plain list shows of the nesting
                for sub in &item.sub_items {
                    let _ = writeln!(html, "<li style=\"margin-left:1.5em\">{}</li>", inline(sub));
                }
            }
            html.push_str("</ul>\n");
        }
        Block::Figure(figure) => figure_html(html, figure),
        Block::Table { name, table } => table_html(html, name, table),
        Block::Scaling { name, scaling } => scaling_html(html, name, scaling),
        Block::Claims(claims) => {
            html.push_str("<ul>\n");
            for (text, result) in claims {
                let _ = writeln!(
                    html,
                    "<li class=\"{}\">{}</li>",
                    result.verdict,
                    inline(&claim_text(text, result))
                );
            }
            html.push_str("</ul>\n");
        }
        Block::Grid {
            caption,
            header,
            rows,
        } => {
            let _ = writeln!(html, "<p>{}</p>\n<table>", inline(caption));
            html.push_str("<tr>");
            for cell in header {
                let _ = write!(html, "<th>{}</th>", escape(cell));
            }
            html.push_str("</tr>\n");
            for row in rows {
                html.push_str("<tr>");
                for cell in row {
                    let _ = write!(html, "<td>{}</td>", escape(cell));
                }
                html.push_str("</tr>\n");
            }
            html.push_str("</table>\n");
        }
    }
}

/// The chart inline, captioned with links to its files.
fn figure_html(html: &mut String, figure: &Figure) {
    let _ = writeln!(
        html,
        "<figure class=\"plot\">\n{}\n<figcaption>{} ({})</figcaption>\n</figure>",
        figure.svg.trim(),
        escape(&figure.name),
        figure
            .files
            .iter()
            .map(|f| format!("<a href=\"{0}\">{0}</a>", escape(f)))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A scaling analysis's efficiencies: its name, the caption and a plain table (its header
/// in the first row).
fn scaling_html(html: &mut String, name: &str, s: &Scaling) {
    let _ = writeln!(html, "<p>{}:</p>", escape(name));
    let _ = writeln!(html, "<h4>{}</h4>", inline(&scaling::caption(s)));
    html.push_str("<table>\n");
    for row in std::iter::once(scaling::header(s)).chain(scaling::rows(s)) {
        html.push_str("<tr>");
        for cell in row {
            let _ = write!(html, "<td>{}</td>", escape(&cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Item, Section};

    fn report(blocks: Vec<Block>) -> Report {
        Report {
            title: "T".into(),
            summary: vec![Block::Paragraph(Inline::plain("Intro."))],
            sections: vec![Section {
                heading: "Provenance".into(),
                anchor: Some("provenance".into()),
                blocks,
            }],
        }
    }

    #[test]
    fn text_is_escaped_and_code_and_emphasis_kept() {
        let text = Inline::plain("a <b> ")
            .code("c&d")
            .text(" ")
            .strong("holds");
        assert_eq!(
            inline(&text),
            "a &lt;b&gt; <code>c&amp;d</code> <strong>holds</strong>"
        );
    }

    #[test]
    fn a_page_with_a_plot_is_self_contained() {
        let figure = Figure {
            name: "lat".into(),
            svg: "<svg width=\"10\" height=\"10\"></svg>".into(),
            files: vec!["plot-lat.svg".into()],
        };
        let mut cairn = Item::new(Inline::plain("cairn 0.1.0"));
        cairn.sub_items.push(Inline::plain("nested"));
        let r = report(vec![Block::Figure(figure), Block::List(vec![cairn])]);
        let html = render(&r);
        assert!(html.contains("<svg width=\"10\""));
        assert!(html.contains(
            "<h2 id=\"provenance\">Provenance</h2>\n<figure class=\"plot\">\n<svg width=\"10\" height=\"10\"></svg>\n<figcaption>lat (<a href=\"plot-lat.svg\">plot-lat.svg</a>)</figcaption>\n</figure>\n<ul>\n<li>cairn 0.1.0</li>\n<li style=\"margin-left:1.5em\">nested</li>\n</ul>\n</body>"
        ));
        assert!(!html.contains("<script") && !html.contains("<link"));
        assert_eq!(html, render(&r));
    }
}
