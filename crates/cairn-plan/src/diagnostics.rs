//! Errors of the plan reader: one [`Problem`] per mistake, all of them gathered into a [`PlanError`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
    SourceSpan,
};

use crate::model::{Loc, SourceId};

/// Why a plan could not be read.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum PlanError {
    /// The root plan file could not be read (problems with imports are [`Problem`]s instead).
    #[error("cannot read plan file `{}`", path.display())]
    #[diagnostic(code(cairn::plan::io))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The plan was read but is not valid; every problem found is listed.
    #[error("{}", invalid_summary(problems))]
    #[diagnostic(code(cairn::plan::invalid))]
    Invalid {
        #[related]
        problems: Vec<Problem>,
    },
}

fn invalid_summary(problems: &[Problem]) -> String {
    match problems.len() {
        1 => "the plan has 1 problem".to_string(),
        n => format!("the plan has {n} problems"),
    }
}

impl PlanError {
    /// The problems of an [`PlanError::Invalid`] error (empty for I/O errors).
    pub fn problems(&self) -> &[Problem] {
        match self {
            PlanError::Invalid { problems } => problems,
            PlanError::Io { .. } => &[],
        }
    }

    /// The same error with every `from` in its messages, labels and help replaced by `to`:
    /// tests that pin diagnostics put a placeholder where a registry's list of names stands
    /// (see [`one_of`]), so adding a name changes no pinned text and no line wrapping.
    pub fn with_placeholder(mut self, from: &str, to: &str) -> PlanError {
        if let PlanError::Invalid { problems } = &mut self {
            for p in problems {
                p.message = p.message.replace(from, to);
                p.help = p.help.take().map(|h| h.replace(from, to));
                for l in &mut p.labels {
                    if let Some(text) = l.label().filter(|t| t.contains(from)) {
                        let span = miette::SourceSpan::new(l.offset().into(), l.len());
                        let text = Some(text.replace(from, to));
                        *l = if l.primary() {
                            LabeledSpan::new_primary_with_span(text, span)
                        } else {
                            LabeledSpan::new_with_span(text, span)
                        };
                    }
                }
            }
        }
        self
    }
}

/// One mistake in a plan file, with labels pointing at the offending text.
#[derive(Debug, Clone)]
pub struct Problem {
    code: &'static str,
    message: String,
    src: Option<NamedSource<Arc<str>>>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
    loc: Option<Loc>,
    /// A warning: worth saying, but the plan is valid.
    warning: bool,
}

impl Problem {
    /// True for a warning (the plan is still valid).
    pub fn is_warning(&self) -> bool {
        self.warning
    }
    /// The diagnostic code, e.g. `cairn::plan::unknown_node`.
    pub fn code(&self) -> &'static str {
        self.code
    }
    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Where the problem is (its primary label).
    pub fn loc(&self) -> Option<Loc> {
        self.loc
    }
    /// The help text, if any.
    pub fn help_text(&self) -> Option<&str> {
        self.help.as_deref()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl Diagnostic for Problem {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.warning.then_some(miette::Severity::Warning)
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.src.as_ref().map(|s| s as &dyn SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
}

/// A problem found after the plan was read — e.g. a driver rejecting a parameter — pointing
/// at `loc` in `plan`'s text with `label` (code `cairn::plan::<code>`).
pub fn problem_at(
    plan: &crate::model::Plan,
    loc: Loc,
    code: &'static str,
    message: impl Into<String>,
    label: impl Into<String>,
    help: Option<String>,
) -> Problem {
    let source = &plan.sources[loc.source.0];
    Problem {
        code: code_str(code),
        message: message.into(),
        src: Some(NamedSource::new(
            source.path.display().to_string(),
            source.text.clone(),
        )),
        labels: vec![LabeledSpan::new_primary_with_span(
            Some(label.into()),
            loc.span,
        )],
        help,
        loc: Some(loc),
        warning: false,
    }
}

/// A problem being built: labels are still [`Loc`]s, resolved against the sources on [`Reporter::push`].
pub(crate) struct P {
    code: &'static str,
    message: String,
    labels: Vec<(Loc, String)>,
    help: Vec<String>,
}

/// Starts a problem with a code (the part after `cairn::plan::`) and a message.
pub(crate) fn problem(code: &'static str, message: impl Into<String>) -> P {
    P {
        code,
        message: message.into(),
        labels: Vec::new(),
        help: Vec::new(),
    }
}

impl P {
    pub(crate) fn label(mut self, loc: Loc, text: impl Into<String>) -> P {
        self.labels.push((loc, text.into()));
        self
    }
    pub(crate) fn help(mut self, text: impl Into<String>) -> P {
        self.help.push(text.into());
        self
    }
    pub(crate) fn help_opt(self, text: Option<String>) -> P {
        match text {
            Some(t) => self.help(t),
            None => self,
        }
    }
}

/// The sources read so far and the problems found in them.
#[derive(Default)]
pub(crate) struct Reporter {
    names: Vec<String>,
    texts: Vec<Arc<str>>,
    pub(crate) problems: Vec<Problem>,
    pub(crate) warnings: Vec<Problem>,
}

impl Reporter {
    pub(crate) fn add_source(&mut self, name: String, text: Arc<str>) -> SourceId {
        self.names.push(name);
        self.texts.push(text);
        SourceId(self.names.len() - 1)
    }

    /// `name:line:col` of a place, for mentioning it from another file.
    pub(crate) fn describe(&self, loc: Loc) -> String {
        let text = &self.texts[loc.source.0];
        let offset = loc.span.offset().min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!("{}:{line}:{col}", self.names[loc.source.0])
    }

    pub(crate) fn push(&mut self, p: P) {
        let problem = self.made(p);
        self.problems.push(problem);
    }

    /// Records a warning: said, but the plan stays valid.
    pub(crate) fn warn(&mut self, p: P) {
        let mut problem = self.made(p);
        problem.warning = true;
        self.warnings.push(problem);
    }

    fn made(&mut self, p: P) -> Problem {
        let primary = p.labels.first().map(|(loc, _)| *loc);
        let mut help = p.help;
        let mut labels = Vec::new();
        for (i, (loc, text)) in p.labels.iter().enumerate() {
            if Some(loc.source) == primary.map(|l| l.source) {
                let span = loc.span;
                labels.push(if i == 0 {
                    LabeledSpan::new_primary_with_span(Some(text.clone()), span)
                } else {
                    LabeledSpan::new_with_span(Some(text.clone()), span)
                });
            } else {
                help.push(format!("{text}: {}", self.describe(*loc)));
            }
        }
        let src = primary.map(|loc| {
            NamedSource::new(&self.names[loc.source.0], self.texts[loc.source.0].clone())
        });
        Problem {
            code: code_str(p.code),
            message: p.message,
            src,
            labels,
            help: if help.is_empty() {
                None
            } else {
                Some(help.join("\n"))
            },
            loc: primary,
            warning: false,
        }
    }

    /// Adds a problem made outside the reader (e.g. a KDL syntax error).
    pub(crate) fn push_raw(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    pub(crate) fn named_source(&self, id: SourceId) -> NamedSource<Arc<str>> {
        NamedSource::new(&self.names[id.0], self.texts[id.0].clone())
    }

    /// All problems, in file and then text order.
    pub(crate) fn finish(mut self) -> Result<(), PlanError> {
        if self.problems.is_empty() {
            return Ok(());
        }
        self.problems.sort_by_key(|p| {
            p.loc
                .map_or((usize::MAX, 0), |l| (l.source.0, l.span.offset()))
        });
        Err(PlanError::Invalid {
            problems: self.problems,
        })
    }
}

/// Turns KDL syntax errors into problems with their spans.
pub(crate) fn syntax_problems(reporter: &mut Reporter, id: SourceId, err: &kdl::KdlError) {
    for d in &err.diagnostics {
        let message = d
            .message
            .clone()
            .unwrap_or_else(|| "invalid KDL syntax".to_string());
        let label = d.label.clone().unwrap_or_else(|| "here".to_string());
        let help = d.help.clone().unwrap_or_else(|| {
            "plans are KDL v2 documents (https://kdl.dev): strings are quoted or bare words, \
             booleans are #true/#false"
                .to_string()
        });
        let span = narrow(&reporter.texts[id.0], d.span);
        reporter.push_raw(Problem {
            code: code_str("syntax"),
            message: format!("KDL syntax error: {message}"),
            src: Some(reporter.named_source(id)),
            labels: vec![LabeledSpan::new_primary_with_span(Some(label), span)],
            help: Some(help),
            loc: Some(Loc { source: id, span }),
            warning: false,
        });
    }
}

/// kdl reports some errors with a span from the start of the node (or document) to the place
/// where parsing failed; point at that place only, the last character written before it.
fn narrow(text: &str, span: SourceSpan) -> SourceSpan {
    let start = span.offset().min(text.len());
    let end = (start + span.len()).min(text.len());
    let Some(covered) = text.get(start..end) else {
        return span;
    };
    let written = covered.trim_end();
    if !written.contains('\n') {
        return span;
    }
    let last = written.chars().next_back().map_or(0, char::len_utf8);
    SourceSpan::from((start + written.len() - last)..(start + written.len()))
}

fn code_str(short: &'static str) -> &'static str {
    macro_rules! codes {
        ($($c:ident),* $(,)?) => {
            match short {
                $(stringify!($c) => concat!("cairn::plan::", stringify!($c)),)*
                _ => "cairn::plan::invalid",
            }
        };
    }
    codes!(
        syntax,
        unknown_node,
        unknown_property,
        missing,
        wrong_type,
        bad_value,
        duplicate,
        dangling,
        cycle,
        import,
        path,
        unexpected,
        fmt,
        limit,
        host_path,
        unused,
        stacked_build,
    )
}

/// Renders a diagnostic the way the CLI and the snapshots show it: no colors, unicode, 100 columns.
pub fn render(err: &dyn Diagnostic) -> String {
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .with_links(false)
        .with_urls(false)
        .render_report(&mut out, err)
        .expect("rendering to a String cannot fail");
    out
}

/// Levenshtein distance, for did-you-mean hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// `did you mean `x`?` for the closest candidate, if it is close enough.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

/// "one of `a`, `b` or `c`".
pub fn one_of(allowed: &[&str]) -> String {
    let quoted: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("thread", ["threads", "duration"]).as_deref(),
            Some("did you mean `threads`?")
        );
        assert_eq!(did_you_mean("zzz", ["threads"]), None);
        assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}
