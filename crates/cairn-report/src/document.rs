//! The report as a typed document: a title, the summary's blocks and sections of blocks
//! (paragraphs, lists, an analysis's table, a scaling analysis's efficiencies, figures, the
//! claims with their verdicts). The report step builds it once, from its analyses' and
//! claims' outputs; [`crate::markdown`] and [`crate::html`] each render it, so what the report
//! says is decided in one place and only how it looks differs between the two.

use crate::claim::ClaimResult;
use crate::scaling::Scaling;
use crate::table::Table;

/// A whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub title: String,
    /// What stands under the title: the findings with their numbers (a list), then what
    /// they rest on.
    pub summary: Vec<Block>,
    pub sections: Vec<Section>,
}

/// A headed part of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub heading: String,
    /// The id of the heading in HTML, for a section that is linked to.
    pub anchor: Option<String>,
    pub blocks: Vec<Block>,
}

/// What a section holds, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Paragraph(Inline),
    /// A bulleted list.
    List(Vec<Item>),
    Figure(Figure),
    /// An analysis's table, under the analysis's name (boxed: a table is much larger than
    /// the other blocks).
    Table {
        name: String,
        table: Box<Table>,
    },
    /// A scaling analysis's speedups and efficiencies, under the analysis's name.
    Scaling {
        name: String,
        scaling: Scaling,
    },
    /// Claims with their verdicts: (the claim's text, its result), in declaration order.
    Claims(Vec<(String, ClaimResult)>),
    /// A plain table of text under a caption: its header, then its rows (e.g. a profile's
    /// functions whose share changed most).
    Grid {
        caption: Inline,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
}

/// One entry of a list, with the entries indented under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub text: Inline,
    pub sub_items: Vec<Inline>,
}

impl Item {
    pub fn new(text: Inline) -> Item {
        Item {
            text,
            sub_items: Vec::new(),
        }
    }
}

/// A chart written beside the report: the analysis's name, its SVG (shown inline where the
/// format can) and the files it was written to (SVG, PNG).
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: String,
    pub svg: String,
    pub files: Vec<String>,
}

impl Figure {
    /// The SVG file among [`Figure::files`], which a Markdown viewer shows as an image.
    pub fn svg_file(&self) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.ends_with(".svg"))
            .map(String::as_str)
    }
}

/// A run of text: plain text, code (names, values and files, shown verbatim) and strong
/// emphasis (a verdict), in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inline(pub Vec<Span>);

/// A piece of [`Inline`] text.
#[derive(Debug, Clone, PartialEq)]
pub enum Span {
    Text(String),
    Code(String),
    Strong(String),
}

impl Inline {
    /// Plain text only.
    pub fn plain(text: impl Into<String>) -> Inline {
        Inline(vec![Span::Text(text.into())])
    }

    /// This, then plain text.
    pub fn text(mut self, text: impl Into<String>) -> Inline {
        self.0.push(Span::Text(text.into()));
        self
    }

    /// This, then code.
    pub fn code(mut self, code: impl Into<String>) -> Inline {
        self.0.push(Span::Code(code.into()));
        self
    }

    /// Text whose names are in backticks (`` `system` at threads = 4``), as the lines the
    /// Markdown table writes hold them: the backticked parts as code, the rest plain.
    pub fn ticked(text: &str) -> Inline {
        let mut out = Inline::default();
        for (i, part) in text.split('`').enumerate() {
            if part.is_empty() {
                continue;
            }
            out = if i % 2 == 1 {
                out.code(part)
            } else {
                out.text(part)
            };
        }
        out
    }

    /// This, then strongly emphasised text.
    pub fn strong(mut self, text: impl Into<String>) -> Inline {
        self.0.push(Span::Strong(text.into()));
        self
    }
}
