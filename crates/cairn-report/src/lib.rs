//! cairn-report: what a study's analyses computed, as data (`table`, `claim`, `scaling`),
//! the report as a typed document (`document`), and how a report shows it: Markdown
//! (`markdown`), self-contained HTML (`html`), charts as SVG and PNG (`chart`; throughput
//! over time: `time_chart`), a machine class as one line (`machine`), and whether a text's
//! numbers come from its data (`numbers`). Pure
//! rendering: it reads no store and runs nothing; the report step (`cairn-kinds`) gathers the
//! data and builds the document, and the CLI writes the files.

pub mod chart;
pub mod claim;
pub mod document;
pub mod flame;
pub mod html;
pub mod machine;
pub mod markdown;
pub mod numbers;
pub mod scaling;
pub mod table;
pub mod time_chart;
