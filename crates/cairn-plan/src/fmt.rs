//! Canonical formatting of plan text for `cairn fmt`: kdl's autoformat, made to keep every comment.

use std::sync::Arc;

use kdl::{FormatConfig, KdlDocument, KdlNode};
use miette::SourceSpan;

use crate::diagnostics::{problem, syntax_problems, PlanError, Reporter};
use crate::model::Loc;

const INDENT: &str = "    ";

/// Formats plan text canonically: four-space indents, one node per line, entries separated by
/// one space, string spellings and comments kept. Formatting formatted text changes nothing.
pub fn format_text(text: &str) -> Result<String, PlanError> {
    let mut r = Reporter::default();
    let id = r.add_source("<input>".to_string(), Arc::from(text));
    if crate::imports::too_deep(&mut r, id, text) {
        return Err(r.finish().expect_err("a problem was reported"));
    }
    let comments = scan_comments(text);
    let prepared = detach_trailing_comments(text, &comments);
    let mut doc = match KdlDocument::parse_v2(&prepared) {
        Ok(doc) => doc,
        Err(err) => {
            if prepared == text {
                syntax_problems(&mut r, id, &err);
            } else {
                // Report against the text as written, not the prepared copy.
                match KdlDocument::parse_v2(text) {
                    Err(err) => syntax_problems(&mut r, id, &err),
                    Ok(_) => r.push(problem("fmt", "cannot format this plan").label(
                        Loc {
                            source: id,
                            span: SourceSpan::from(0..0),
                        },
                        "here",
                    )),
                }
            }
            r.finish()?;
            unreachable!("a syntax error always yields a problem");
        }
    };
    let mut leadings = Vec::new();
    for node in doc.nodes_mut() {
        prepare(node, &mut leadings);
    }
    doc.autoformat_config(&FormatConfig::default());
    if let Some(f) = doc.format_mut() {
        f.leading = String::new();
        f.trailing = reindent(&f.trailing, 0, "");
    }
    let mut leadings = leadings.into_iter();
    for (i, node) in doc.nodes_mut().iter_mut().enumerate() {
        tidy(node, 0, i == 0, &mut leadings);
    }
    let mut out = doc.to_string();
    while out.ends_with("\n\n") {
        out.pop();
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    // Never drop a comment: compare what was written with what comes out.
    let after: Vec<String> = scan_comments(&out)
        .iter()
        .map(|c| norm_comment(&out[c.0..c.1]))
        .collect();
    let mut remaining = after;
    for c in &comments {
        let key = norm_comment(&text[c.0..c.1]);
        match remaining.iter().position(|a| *a == key) {
            Some(i) => {
                remaining.remove(i);
            }
            None => {
                r.push(
                    problem("fmt", "formatting would lose this comment")
                        .label(
                            Loc {
                                source: id,
                                span: SourceSpan::from(c.0..c.1),
                            },
                            "comment",
                        )
                        .help("move the comment onto a line of its own"),
                );
            }
        }
    }
    r.finish()?;
    Ok(out)
}

fn norm_comment(c: &str) -> String {
    c.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Before autoformat: keep each entry's spelling, and move a comment that ends a node's line
/// from its terminator to before it (autoformat would replace the terminator).
fn prepare(node: &mut KdlNode, leadings: &mut Vec<String>) {
    leadings.push(
        node.format()
            .map_or_else(String::new, |f| f.leading.clone()),
    );
    for e in node.entries_mut() {
        let leading = e.format().map(|f| f.leading.trim().to_string());
        e.keep_format();
        if let (Some(f), Some(l)) = (e.format_mut(), leading) {
            f.leading = if l.is_empty() {
                " ".into()
            } else {
                format!(" {l} ")
            };
        }
    }
    if let Some(f) = node.format_mut() {
        let term = f.terminator.trim_start_matches([';', ' ', '\t']);
        if term.starts_with("//") || term.starts_with("/*") {
            f.before_terminator = format!("{} {}", f.before_terminator.trim(), term.trim_end());
            f.terminator = "\n".into();
        }
    }
    if let Some(children) = node.children_mut() {
        for c in children.nodes_mut() {
            prepare(c, leadings);
        }
    }
}

/// After autoformat: one space before a same-line comment, comments at the end of a block
/// indented like the block's nodes.
fn tidy(
    node: &mut KdlNode,
    level: usize,
    first: bool,
    leadings: &mut impl Iterator<Item = String>,
) {
    let original = leadings.next().unwrap_or_default();
    if let Some(f) = node.format_mut() {
        f.leading = leading(&original, level, first);
        let t = f.before_terminator.trim();
        f.before_terminator = if t.is_empty() {
            String::new()
        } else {
            format!(" {t}")
        };
    }
    if let Some(children) = node.children_mut() {
        let closing = INDENT.repeat(level);
        if let Some(f) = children.format_mut() {
            f.trailing = reindent(&f.trailing, level + 1, &closing);
        }
        for (i, c) in children.nodes_mut().iter_mut().enumerate() {
            tidy(c, level + 1, i == 0, leadings);
        }
    }
}

/// What comes before a node: its comment lines, re-indented, and at most one blank line
/// where the author left blank lines (none before the first node of a block).
fn leading(original: &str, level: usize, first: bool) -> String {
    let indent = INDENT.repeat(level);
    let mut parts: Vec<&str> = original.split('\n').collect();
    let same_line = parts.pop().unwrap_or("").trim();
    let mut lines: Vec<&str> = Vec::new();
    for line in parts.iter().map(|l| l.trim()) {
        if line.is_empty() && (lines.is_empty() && first || lines.last() == Some(&"")) {
            continue;
        }
        lines.push(line);
    }
    let mut out = String::new();
    for line in lines {
        if !line.is_empty() {
            out.push_str(&indent);
            out.push_str(line);
        }
        out.push('\n');
    }
    out.push_str(&indent);
    if !same_line.is_empty() {
        out.push_str(same_line);
        out.push(' ');
    }
    out
}

/// Comment lines (e.g. a slashdashed node or a comment before `}`) re-indented at `level`, then `closing`.
fn reindent(trailing: &str, level: usize, closing: &str) -> String {
    let mut out = String::new();
    for line in trailing.lines().map(str::trim).filter(|l| !l.is_empty()) {
        out.push_str(&INDENT.repeat(level));
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(closing);
    out
}

/// Byte ranges of `//` and `/* */` comments outside strings.
fn scan_comments(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i, 0),
            b'#' => {
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + hashes) == Some(&b'"') {
                    i = skip_string(b, i + hashes, hashes);
                } else {
                    i += hashes;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                out.push((i, end));
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push((start, i.min(b.len())));
            }
            _ => i += 1,
        }
    }
    out
}

/// Skips a string starting at the quote at `i`, raw when `hashes > 0`; returns the index after it.
fn skip_string(b: &[u8], i: usize, hashes: usize) -> usize {
    let triple = b[i..].starts_with(b"\"\"\"");
    let quote: &[u8] = if triple { b"\"\"\"" } else { b"\"" };
    let mut j = i + quote.len();
    while j < b.len() {
        if hashes == 0 && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j..].starts_with(quote)
            && b[j + quote.len()..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return j + quote.len() + hashes;
        }
        j += 1;
    }
    b.len()
}

/// kdl drops a comment that follows a block's `}` on the same line; put such comments on their own line.
fn detach_trailing_comments(text: &str, comments: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for &(start, _) in comments {
        let line_start = text[..start].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..start].trim_end().ends_with('}') {
            out.push_str(&text[last..start]);
            out.push('\n');
            last = start;
        }
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_found_outside_strings() {
        let t = "a \"// no\" // yes\nb #\"/* no */\"# /* yes */";
        let c: Vec<&str> = scan_comments(t).iter().map(|c| &t[c.0..c.1]).collect();
        assert_eq!(c, ["// yes", "/* yes */"]);
    }
}
