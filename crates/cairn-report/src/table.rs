//! A computed table — one figure pivoted rows × columns, each cell the summary of its
//! passes and, against a baseline, the comparison — as `table.json` holds it, and its
//! Markdown (`table.md`, and the tables of report.md).

use std::fmt::Write as _;

use cairn_analysis::{Comparison, Summary};
use cairn_defs::figures::{self, Direction};
use serde::{Deserialize, Serialize};

/// A cell is flagged noisy when its passes' coefficient of variation is above this (5%):
/// a spread that large hides the differences allocator or build studies look for.
pub const NOISY_CV: f64 = 0.05;

/// One dimension of the table and its values, in the order the trials first show them
/// (the plan's order: servers as declared, threads as listed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimension {
    pub name: String,
    pub values: Vec<String>,
}

/// One cell: the passes of one (row, column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub row: String,
    pub column: String,
    /// The server measured in this cell.
    pub server: String,
    /// The records behind it (keys) and their addresses, in pass order.
    pub trials: Vec<String>,
    pub addresses: Vec<String>,
    /// The figure's value of each of those trials.
    pub values: Vec<f64>,
    pub summary: Summary,
    /// CV above [`NOISY_CV`] (or unknown from one pass): shown, flagged, never hidden.
    pub noisy: bool,
    /// A monotone trend of the values in pass (run) order, significant at 5%: flagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<cairn_analysis::drift::Trend>,
    /// Passes (1-based, in [`Cell::values`] order) far from the others: flagged, kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<usize>,
    /// Against the baseline server at the same point; `None` for the baseline's own cells
    /// and tables without a baseline.
    pub comparison: Option<Comparison>,
}

/// A computed table: what `table.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub rows: Dimension,
    pub columns: Dimension,
    pub baseline: Option<String>,
    /// The CV above which a cell is flagged noisy.
    pub noisy_cv: f64,
    /// Row-major, rows and columns in the order of [`Table::rows`] and [`Table::columns`];
    /// a point without trials has no cell.
    pub cells: Vec<Cell>,
}

impl Table {
    pub fn cell(&self, row: &str, column: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.row == row && c.column == column)
    }
}

/// A percentage with one decimal, signed: `+10.3%`.
pub fn signed_percent(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

/// The drift (↘ ↗) and outlier (°) flags of a table's cells, one line each, with their
/// numbers (written by `number`); empty when no cell has one.
pub fn flags_markdown(table: &Table, number: &dyn Fn(f64) -> String) -> String {
    let mut md = String::new();
    // the cell's other dimension (not the server) and its value there
    let place = |c: &Cell| {
        let (dimension, value) = if table.rows.name == "server" {
            (&table.columns.name, &c.column)
        } else {
            (&table.rows.name, &c.row)
        };
        format!("`{}` at {dimension} = {value}", c.server)
    };
    for c in table.cells.iter().filter(|c| c.drift.is_some()) {
        let t = c.drift.expect("filtered");
        let _ = writeln!(
            md,
            "\n{} drift: {}: the later passes are {} (Kendall's τ = {:.2}, p {}, {} passes in run order). The variants were measured interleaved, so a drift of the machine affects them alike; `paired=#true` compares them within blocks.",
            if t.falling() { "↘" } else { "↗" },
            place(c),
            if t.falling() { "lower" } else { "higher" },
            t.tau,
            cairn_analysis::compare::p_text(t.p_value),
            t.passes
        );
    }
    for c in table.cells.iter().filter(|c| !c.outliers.is_empty()) {
        let passes: Vec<String> = c
            .outliers
            .iter()
            .map(|&i| format!("pass {i} ({})", number(c.values[i - 1])))
            .collect();
        let _ = writeln!(
            md,
            "\n° outlier: {}: {} far from the others (modified z-score above {}; median {}); kept in every figure.",
            place(c),
            passes.join(", "),
            cairn_analysis::drift::OUTLIER_Z,
            number(c.summary.median)
        );
    }
    md
}

/// `table.md` (titled `title`, if not empty): the absolute medians (noisy cells marked), then — with a baseline — each
/// variant's ratio to it with the CI and the verdict, then the trials behind every cell.
pub fn render_markdown(title: &str, table: &Table) -> String {
    let fig = figures::lookup(&table.metric);
    let number = |v: f64| fig.map_or(format!("{v:.3}"), |f| figures::format_number(f, v));
    let unit = if table.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", table.unit)
    };
    let mut md = String::new();
    let corner = format!("{} \\ {}", table.rows.name, table.columns.name);
    let header = |md: &mut String| {
        let _ = write!(md, "| {corner} |");
        for c in &table.columns.values {
            let _ = write!(md, " {c} |");
        }
        md.push('\n');
        md.push_str("|---|");
        for _ in &table.columns.values {
            md.push_str("---:|");
        }
        md.push('\n');
    };
    let named = if title.is_empty() {
        String::new()
    } else {
        format!("{title}: ")
    };
    let _ = writeln!(
        md,
        "### {named}`{}`{unit}, median of the passes\n",
        table.metric
    );
    header(&mut md);
    let mut any_noisy = false;
    for r in &table.rows.values {
        let _ = write!(md, "| {r} |");
        for c in &table.columns.values {
            match table.cell(r, c) {
                Some(cell) => {
                    any_noisy |= cell.noisy;
                    let mark = format!(
                        "{}{}{}",
                        if cell.noisy { " ⚠" } else { "" },
                        match cell.drift {
                            Some(t) if t.falling() => " ↘",
                            Some(_) => " ↗",
                            None => "",
                        },
                        if cell.outliers.is_empty() { "" } else { " °" }
                    );
                    let _ = write!(
                        md,
                        " {} (n={}){mark} |",
                        number(cell.summary.median),
                        cell.summary.n
                    );
                }
                None => md.push_str(" - |"),
            }
        }
        md.push('\n');
    }
    if any_noisy {
        let _ = writeln!(
            md,
            "\n⚠ noisy: the passes' coefficient of variation is above {}% (or unknown from one pass).",
            table.noisy_cv * 100.0
        );
    }
    md.push_str(&flags_markdown(table, &number));
    if let Some(baseline) = &table.baseline {
        let paired = table
            .cells
            .iter()
            .find_map(|c| c.comparison.as_ref()?.paired.as_ref());
        let _ = match paired {
            Some(p) => writeln!(
                md,
                "\n#### Relative to `{baseline}`, paired within blocks ({}): median of the within-block ratios [95% bootstrap CI], verdict (signed-rank test)\n",
                p.blocks
            ),
            None => writeln!(
                md,
                "\n#### Relative to `{baseline}`: ratio of medians [95% bootstrap CI], verdict\n"
            ),
        };
        header(&mut md);
        for r in &table.rows.values {
            let _ = write!(md, "| {r} |");
            for c in &table.columns.values {
                match table.cell(r, c) {
                    Some(cell) if &cell.server == baseline => md.push_str(" baseline |"),
                    Some(Cell {
                        comparison: Some(cmp),
                        ..
                    }) => {
                        let _ = write!(
                            md,
                            " ×{:.3} ({}) [{:.3}, {:.3}] **{}** |",
                            cmp.ratio.ratio,
                            signed_percent(cmp.ratio.ratio),
                            cmp.ratio.ci.low,
                            cmp.ratio.ci.high,
                            cmp.verdict
                        );
                    }
                    _ => md.push_str(" - |"),
                }
            }
            md.push('\n');
        }
        md.push('\n');
        for cell in &table.cells {
            if let Some(cmp) = &cell.comparison {
                let pairs = cmp
                    .paired
                    .as_ref()
                    .map(|p| format!(" ({} pairs)", p.pairs))
                    .unwrap_or_default();
                // under a sequential design: which look decided it
                let look = cmp
                    .look
                    .map(|l| {
                        let undecided = cmp.verdict == cairn_analysis::Verdict::Inconclusive;
                        let needed = cairn_analysis::sequential::passes_to_nearer_verdict(
                            cmp,
                            l.final_alpha,
                        );
                        format!(" ({})", l.note(undecided, needed))
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    md,
                    "- {} at {}{pairs}: {}{look} — {}; {}.",
                    cell.server,
                    point_label(table, cell),
                    cmp.verdict,
                    cmp.reason,
                    cmp.passes_needed
                );
            }
        }
    }
    md.push_str("\nTrials behind each cell:\n\n");
    for cell in &table.cells {
        let keys: Vec<String> = cell
            .trials
            .iter()
            .map(|k| format!("`{}`", &k[..12.min(k.len())]))
            .collect();
        let _ = writeln!(
            md,
            "- {} = {}, {} = {}: {}",
            table.rows.name,
            cell.row,
            table.columns.name,
            cell.column,
            keys.join(" ")
        );
    }
    md
}

/// `threads = 4` (the non-server coordinate of a cell).
fn point_label(table: &Table, cell: &Cell) -> String {
    if table.rows.name == "server" {
        format!("{} = {}", table.columns.name, cell.column)
    } else {
        format!("{} = {}", table.rows.name, cell.row)
    }
}
