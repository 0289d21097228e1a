//! `report.html`: the report as one self-contained page — the charts inline as SVG, the tables
//! with every cell coloured by its verdict and naming the trials behind it, the claims, the
//! noisy points and the provenance — with a little CSS and nothing fetched from anywhere, so
//! it can be mailed, archived or opened offline. Deterministic like `report.md`: the same
//! inputs render the same bytes.

use std::fmt::Write as _;

use cairn_analysis::Verdict;

use crate::claim::{claim_line, ClaimResult};
use crate::table::{signed_percent, Cell, Table};
use crate::PROVENANCE_HEADING;

/// The marker under which `cairn report` adds the plan's digest (as it does in report.md).
pub const PROVENANCE_LIST: &str = "<h2 id=\"provenance\">Provenance</h2>\n<ul>\n";

/// One chart of the report: the analysis's name and its SVG.
pub struct Plot {
    pub name: String,
    pub svg: String,
    /// The file names the report writes beside it (SVG, PNG).
    pub files: Vec<String>,
}

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
pub fn escape(s: &str) -> String {
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

/// A line of report.md's prose as HTML: escaped, `code` and **bold** kept.
fn inline(md: &str) -> String {
    let mut out = String::new();
    let escaped = escape(md);
    let mut code = false;
    for (i, part) in escaped.split('`').enumerate() {
        if i > 0 {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
        }
        out.push_str(part);
    }
    if code {
        out.push_str("</code>");
    }
    let mut bold = false;
    let mut result = String::new();
    for (i, part) in out.split("**").enumerate() {
        if i > 0 {
            result.push_str(if bold { "</strong>" } else { "<strong>" });
            bold = !bold;
        }
        result.push_str(part);
    }
    if bold {
        result.push_str("</strong>");
    }
    result
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
    let fig = cairn_defs::figures::lookup(&table.metric);
    let number = |v: f64| {
        fig.map_or(format!("{v:.3}"), |f| {
            cairn_defs::figures::format_number(f, v)
        })
    };
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
                    let noisy = if cell.noisy {
                        " <span class=\"noisy\" title=\"noisy: CV above 5% or unknown\">⚠</span>"
                    } else {
                        ""
                    };
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
    if let Some(baseline) = &table.baseline {
        let _ = writeln!(
            html,
            "<p>Relative to <code>{}</code>: ratio of medians [95% bootstrap CI], verdict.</p>",
            escape(baseline)
        );
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
                            "<td class=\"{}\" title=\"{}\">×{:.3} ({}) [{:.3}, {:.3}] <strong>{}</strong></td>",
                            verdict_class(cmp.verdict),
                            escape(&format!("{}; {}\n{}", cmp.reason, cmp.passes_needed, evidence(cell))),
                            cmp.ratio.ratio,
                            signed_percent(cmp.ratio.ratio),
                            cmp.ratio.ci.low,
                            cmp.ratio.ci.high,
                            cmp.verdict
                        );
                    }
                    _ => html.push_str("<td>-</td>"),
                }
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</tbody></table>\n");
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

/// The sections of report.md from "## Noisy points" on (noisy points, provenance), as HTML
/// lists: one source of truth for their wording.
fn tail_sections(html: &mut String, md: &str) {
    let Some(start) = md.find("## Noisy points") else {
        return;
    };
    sections(html, &md[start..]);
}

/// report.md's lines as HTML: headings, lists, Markdown tables and paragraphs.
fn sections(html: &mut String, md: &str) {
    let mut in_list = false;
    let mut in_table = false;
    for line in md.lines() {
        if let Some(row) = line.strip_prefix('|') {
            if !in_table {
                html.push_str("<table>\n");
                in_table = true;
            }
            if row.starts_with("---") {
                continue;
            }
            html.push_str("<tr>");
            for cell in row.trim_end_matches('|').split('|') {
                let _ = write!(html, "<td>{}</td>", inline(cell.trim()));
            }
            html.push_str("</tr>\n");
            continue;
        } else if in_table {
            html.push_str("</table>\n");
            in_table = false;
        }
        let close = |html: &mut String, in_list: &mut bool| {
            if *in_list {
                html.push_str("</ul>\n");
                *in_list = false;
            }
        };
        if line == PROVENANCE_HEADING {
            close(html, &mut in_list);
            html.push_str(PROVENANCE_LIST);
            in_list = true;
        } else if let Some(h) = line.strip_prefix("#### ") {
            close(html, &mut in_list);
            let _ = writeln!(html, "<h4>{}</h4>", inline(h));
        } else if let Some(h) = line.strip_prefix("## ") {
            close(html, &mut in_list);
            let _ = writeln!(html, "<h2>{}</h2>", escape(h));
        } else if let Some(item) = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("  - ").map(|s| s.trim_start()))
        {
            if !in_list {
                html.push_str("<ul>\n");
                in_list = true;
            }
            let nested = if line.starts_with("  ") {
                " style=\"margin-left:1.5em\""
            } else {
                ""
            };
            let _ = writeln!(html, "<li{nested}>{}</li>", inline(item));
        } else if !line.trim().is_empty() {
            close(html, &mut in_list);
            let _ = writeln!(html, "<p>{}</p>", inline(line));
        }
    }
    if in_list {
        html.push_str("</ul>\n");
    }
    if in_table {
        html.push_str("</table>\n");
    }
}

/// `report.html`. `md` is the report's markdown (its prose and provenance are reused).
pub fn render(
    title: &str,
    md: &str,
    tables: &[(String, Table)],
    claims: &[(String, ClaimResult)],
    plots: &[Plot],
) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    // the summary paragraph of report.md: the first line after the title
    if let Some(intro) = md.lines().skip(1).find(|l| !l.trim().is_empty()) {
        let _ = writeln!(html, "<p>{}</p>", inline(intro));
    }
    if !plots.is_empty() {
        html.push_str("<h2>Plots</h2>\n");
        for plot in plots {
            let _ = writeln!(
                html,
                "<figure class=\"plot\">\n{}\n<figcaption>{} ({})</figcaption>\n</figure>",
                plot.svg.trim(),
                escape(&plot.name),
                plot.files
                    .iter()
                    .map(|f| format!("<a href=\"{0}\">{0}</a>", escape(f)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !tables.is_empty() {
        html.push_str("<h2>Tables</h2>\n");
        for (name, table) in tables {
            table_html(&mut html, name, table);
        }
    }
    // report.md's scaling section, as it reads there
    if let Some(start) = md.find("## Scaling") {
        let end = md[start..]
            .find("\n## ")
            .map_or(md.len(), |e| start + e + 1);
        sections(&mut html, &md[start..end]);
    }
    if !claims.is_empty() {
        html.push_str("<h2>Claims</h2>\n<ul>\n");
        for (text, c) in claims {
            let _ = writeln!(
                html,
                "<li class=\"{}\">{}</li>",
                c.verdict,
                inline(&claim_line(text, c))
            );
        }
        html.push_str("</ul>\n");
    }
    tail_sections(&mut html, md);
    html.push_str("</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_keeps_code_and_bold() {
        assert_eq!(
            inline("a <b> `c&d` **holds**"),
            "a &lt;b&gt; <code>c&amp;d</code> <strong>holds</strong>"
        );
    }

    #[test]
    fn a_page_with_a_plot_is_self_contained() {
        let md = "# T\n\nIntro.\n\n## Noisy points\n\nNone.\n\n## Provenance\n\n- cairn 0.1.0\n";
        let plots = [Plot {
            name: "lat".into(),
            svg: "<svg width=\"10\" height=\"10\"></svg>".into(),
            files: vec!["plot-lat.svg".into()],
        }];
        let html = render("T", md, &[], &[], &plots);
        assert!(html.contains("<svg width=\"10\""));
        assert!(html.contains(PROVENANCE_LIST));
        assert!(html.contains("<li>cairn 0.1.0</li>"));
        assert!(!html.contains("<script") && !html.contains("<link"));
        assert_eq!(html, render("T", md, &[], &[], &plots));
    }
}
