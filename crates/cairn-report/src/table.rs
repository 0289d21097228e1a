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
    /// The facet value the cell is in (a faceted table's); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facet: Option<String>,
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
    /// a point without trials has no cell. In a faceted table, facet by facet.
    pub cells: Vec<Cell>,
    /// `facet="cpus"`: one table per value of a third dimension, its values here and each
    /// cell's in [`Cell::facet`] ([`Table::faceted`] splits them); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facet: Option<Dimension>,
    /// The parameters that vary with one the table shows (a tied axis: `threads` following
    /// `cpus`), each with its value at each of its leader's; none for most tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub followers: Vec<Follower>,
}

/// A parameter that takes one value at each value of a dimension the table shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Follower {
    /// The parameter (`threads`).
    pub name: String,
    /// The dimension it follows (`cpus`).
    pub leader: String,
    /// `(leader's value, its value)`, in the order of the leader's values.
    pub values: Vec<(String, String)>,
}

impl Follower {
    /// `threads` follows `cpus`: 2 at 1, 4 at 2 — the line under a table that shows it.
    pub fn sentence(&self) -> String {
        let at: Vec<String> = self
            .values
            .iter()
            .map(|(l, v)| format!("{v} at {l}"))
            .collect();
        format!(
            "`{}` follows `{}`: {}.",
            self.name,
            self.leader,
            at.join(", ")
        )
    }
}

impl Table {
    /// The table per facet value, each titled by its facet (`cpus = 2`) and holding only its
    /// cells, rows and columns (its `facet` the one value); a table without facets alone,
    /// untitled.
    pub fn faceted(&self) -> Vec<(Option<String>, Table)> {
        let Some(facet) = &self.facet else {
            return vec![(None, self.clone())];
        };
        facet
            .values
            .iter()
            .map(|value| {
                let cells: Vec<Cell> = self
                    .cells
                    .iter()
                    .filter(|c| c.facet.as_deref() == Some(value))
                    .cloned()
                    .collect();
                let kept = |d: &Dimension, of: fn(&Cell) -> &String| Dimension {
                    name: d.name.clone(),
                    values: d
                        .values
                        .iter()
                        .filter(|v| cells.iter().any(|c| of(c) == *v))
                        .cloned()
                        .collect(),
                };
                let table = Table {
                    rows: kept(&self.rows, |c| &c.row),
                    columns: kept(&self.columns, |c| &c.column),
                    facet: Some(Dimension {
                        name: facet.name.clone(),
                        values: vec![value.clone()],
                    }),
                    cells,
                    ..self.clone()
                };
                (Some(format!("{} = {value}", facet.name)), table)
            })
            .collect()
    }

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

/// A CI's coverage as a percentage, with as many decimals as it takes not to read 100%:
/// `98.5%`, `99.98%`.
pub fn level_text(level: f64) -> String {
    let percent = level * 100.0;
    (1..=4)
        .map(|decimals| format!("{percent:.decimals$}"))
        .find(|text| text.parse::<f64>().is_ok_and(|p| p < 100.0))
        .map_or_else(|| format!("{percent}%"), |text| format!("{text}%"))
}

/// A ratio's CI as the report prints it, `[0.643, 1.121]`, with its coverage where it is not
/// 95% (a sequential design's early looks ask for more): `[0.643, 1.121] (98.5% CI)`.
pub fn ci_text(ci: &cairn_analysis::Interval) -> String {
    let interval = format!("[{:.3}, {:.3}]", ci.low, ci.high);
    if (ci.level - 0.95).abs() < 1e-9 {
        interval
    } else {
        format!("{interval} ({} CI)", level_text(ci.level))
    }
}

/// Whether some comparison of `table` has a CI of another coverage than 95%.
fn levels_vary(table: &Table) -> bool {
    table
        .cells
        .iter()
        .filter_map(|c| c.comparison.as_ref())
        .any(|c| (c.ratio.ci.level - 0.95).abs() >= 1e-9)
}

/// The heading of a table's comparisons with its baseline.
pub fn comparison_heading(table: &Table, baseline: &str) -> String {
    let ci = if levels_vary(table) {
        "bootstrap CI: 95%, or under the sequential design 1 − the look's α, as marked"
    } else {
        "95% bootstrap CI"
    };
    let paired = table
        .cells
        .iter()
        .find_map(|c| c.comparison.as_ref()?.paired.as_ref());
    match paired {
        Some(p) => format!(
            "Relative to `{baseline}`, paired within blocks ({}): median of the within-block ratios [{ci}], verdict (signed-rank test)",
            p.blocks
        ),
        None => format!("Relative to `{baseline}`: ratio of medians [{ci}], verdict"),
    }
}

/// A comparison's cell: `×0.847 (-15.3%) [0.643, 1.121] (98.5% CI)` (the verdict apart).
pub fn ratio_text(cmp: &Comparison) -> String {
    format!(
        "×{:.3} ({}) {}",
        cmp.ratio.ratio,
        signed_percent(cmp.ratio.ratio),
        ci_text(&cmp.ratio.ci)
    )
}

/// Why each comparison of `table` came out as it did, one line per variant's cell:
/// `jemalloc at threads = 4: inconclusive — not significant (p = 0.222) …; sequential design,
/// look 6 of 9 …`. The passes a decision would take are said once: by the look where the
/// sequential design stopped, else by the fixed design's estimate.
pub fn comparison_reasons(table: &Table) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for cell in &table.cells {
        let Some(cmp) = &cell.comparison else {
            continue;
        };
        let pairs = cmp
            .paired
            .as_ref()
            .map(|p| format!(" ({} pairs)", p.pairs))
            .unwrap_or_default();
        let mut why = format!("{}", cmp.reason);
        match cmp.look {
            Some(l) => {
                let undecided = cmp.verdict == cairn_analysis::Verdict::Inconclusive;
                let needed =
                    cairn_analysis::sequential::passes_to_nearer_verdict(cmp, l.final_alpha);
                let _ = write!(why, "; {}", l.note(undecided, needed));
                if !(undecided && l.look < l.looks) || needed.is_none() {
                    let _ = write!(why, "; {}", cmp.passes_needed);
                }
            }
            None => {
                let _ = write!(why, "; {}", cmp.passes_needed);
            }
        }
        out.push((
            format!("{} at {}{pairs}", cell.server, point_label(table, cell)),
            format!("{} — {why}.", cmp.verdict),
        ));
    }
    out
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
    let parts = table.faceted();
    let mut md = String::new();
    for (facet, part) in &parts {
        let title = match facet {
            Some(f) if title.is_empty() => f.clone(),
            Some(f) => format!("{title}, {f}"),
            None => title.to_string(),
        };
        if !md.is_empty() {
            md.push('\n');
        }
        md.push_str(&render_markdown_with(&title, part, Flags::Explained));
    }
    md
}

/// How a table's drift and outlier flags are explained under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flags {
    /// Each flagged cell's line with its numbers (`table.md`, on its own).
    Explained,
    /// One line of legend; the numbers are elsewhere (a report's data-quality section).
    Legend,
}

/// The number of `table`'s figure as its vocabulary writes it.
pub fn number_format(table: &Table) -> impl Fn(f64) -> String + '_ {
    let fig = figures::lookup(&table.metric);
    move |v: f64| fig.map_or(format!("{v:.3}"), |f| figures::format_number(f, v))
}

/// [`render_markdown`], with the flags explained as `flags` says.
pub fn render_markdown_with(title: &str, table: &Table, flags: Flags) -> String {
    let number = number_format(table);
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
                    let _ = write!(
                        md,
                        " {} (n={}){} |",
                        number(cell.summary.median),
                        cell.summary.n,
                        marks(cell)
                    );
                }
                None => md.push_str(" - |"),
            }
        }
        md.push('\n');
    }
    for f in &table.followers {
        let _ = writeln!(md, "\n{}", f.sentence());
    }
    if any_noisy {
        let _ = writeln!(
            md,
            "\n⚠ noisy: the passes' coefficient of variation is above {}% (or unknown from one pass).",
            table.noisy_cv * 100.0
        );
    }
    match flags {
        Flags::Explained => md.push_str(&flags_markdown(table, &number)),
        Flags::Legend => {
            if table
                .cells
                .iter()
                .any(|c| c.drift.is_some() || !c.outliers.is_empty())
            {
                md.push_str("\n↘ ↗ drift, ° outlier: see Data quality.\n");
            }
        }
    }
    if let Some(baseline) = &table.baseline {
        let _ = writeln!(md, "\n#### {}\n", comparison_heading(table, baseline));
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
                        let _ = write!(md, " {} **{}** |", ratio_text(cmp), cmp.verdict);
                    }
                    _ => md.push_str(" - |"),
                }
            }
            md.push('\n');
        }
        md.push('\n');
        for (place, why) in comparison_reasons(table) {
            let _ = writeln!(md, "- {place}: {why}");
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

/// A cell's flags after its median: ` ⚠` noisy, ` ↘`/` ↗` drift, ` °` outliers.
pub fn marks(cell: &Cell) -> String {
    format!(
        "{}{}{}",
        if cell.noisy { " ⚠" } else { "" },
        match cell.drift {
            Some(t) if t.falling() => " ↘",
            Some(_) => " ↗",
            None => "",
        },
        if cell.outliers.is_empty() { "" } else { " °" }
    )
}

/// `threads = 4` (the non-server coordinate of a cell).
fn point_label(table: &Table, cell: &Cell) -> String {
    if table.rows.name == "server" {
        format!("{} = {}", table.columns.name, cell.column)
    } else {
        format!("{} = {}", table.rows.name, cell.row)
    }
}
