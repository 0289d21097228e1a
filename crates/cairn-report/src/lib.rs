//! cairn-report: what a study's analyses computed, as data (`table`, `claim`, `scaling`),
//! and how a report shows it: Markdown, self-contained HTML (`html`), charts as SVG and PNG
//! (`chart`). Pure rendering: it reads no store and runs nothing; the report step
//! (`cairn-kinds`) gathers the data and the CLI writes the files.

pub mod chart;
pub mod claim;
pub mod html;
pub mod scaling;
pub mod table;

/// The heading of a report's provenance section (`cairn report` adds the plan's digest
/// under it).
pub const PROVENANCE_HEADING: &str = "## Provenance";
