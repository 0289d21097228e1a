//! Bounds on what a plan may ask for, so that hostile or mistaken input fails with a diagnostic
//! instead of exhausting the stack, memory or time: block nesting depth, imported file size and
//! type, and how many steps one declaration may expand to.

use std::path::{Path, PathBuf};

/// Deepest `{ … }` nesting a plan file may have. Real plans nest three or four levels; the KDL
/// parser recurses once per level, some 30 KB of stack each in a debug build, so 32 levels
/// fit twice in a 2 MiB thread stack. (The vendored parser stops at 34 by itself.)
pub const MAX_DEPTH: usize = 32;

/// Largest plan file (root or imported) that is read, in bytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Most steps one `step` or `trials` declaration may expand to (matrix points × servers ×
/// passes). Each step is resolved, keyed and listed by `cairn plan`: a million would take
/// gigabytes before anything ran.
pub const MAX_STEPS_PER_DECLARATION: u128 = 100_000;

/// Most steps a whole plan may expand to.
pub const MAX_STEPS: u128 = 200_000;

/// Most dependency edges a whole plan may have: a `needs` on an expanded step, an analysis or
/// claim over many trials, each is an edge per pair of expansions.
pub const MAX_EDGES: u128 = 1_000_000;

/// Longest chain of slashdashes with nothing but whitespace and comments between them
/// (`/- /- /- node`): the KDL parser recurses once per link. Real plans never chain two.
pub const MAX_SLASHDASH_CHAIN: usize = 16;

/// Where a plan file nests deeper than the parser may go, and in what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// Byte offset of the opener past the limit.
    pub at: usize,
    pub what: Nesting,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    Blocks,
    Comments,
    Slashdashes,
}

impl TooDeep {
    /// The diagnostic's message and its label.
    pub fn describe(&self) -> (String, &'static str) {
        match self.what {
            Nesting::Blocks => (
                format!("blocks are nested more than {MAX_DEPTH} levels deep"),
                "this block is too deep",
            ),
            Nesting::Comments => (
                format!("block comments are nested more than {MAX_DEPTH} levels deep"),
                "this comment is too deep",
            ),
            Nesting::Slashdashes => (
                format!("more than {MAX_SLASHDASH_CHAIN} slashdashes (`/-`) in a row"),
                "one slashdash too many",
            ),
        }
    }
}

/// The first place (see [`TooDeep`]): the first `{` that opens a block (or `/*` that opens a block comment)
/// deeper than [`MAX_DEPTH`], or of the first `/-` past [`MAX_SLASHDASH_CHAIN`], if any.
///
/// A scan over the raw text, before the KDL parser sees it: braces inside strings (quoted,
/// multi-line and raw) and comments (line and block comments) do not count. Block comments
/// nest in KDL and the parser recurses into them, so their own nesting is bounded as well.
/// (The parser's recovery from top-level syntax errors recursed too; the vendored copy of
/// `kdl` loops instead, see vendor/kdl/CAIRN.md.)
pub fn too_deep(text: &str) -> Option<TooDeep> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut chain = 0usize; // slashdashes since the last token that is not one
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'-') => {
                chain += 1;
                if chain > MAX_SLASHDASH_CHAIN {
                    return Some(TooDeep {
                        at: i,
                        what: Nesting::Slashdashes,
                    });
                }
                i += 2;
                continue;
            }
            // whitespace does not end a chain; nor does any non-ASCII byte (some are
            // whitespace to KDL: counting too long a chain is the safe mistake)
            b' ' | b'\t' | b'\r' | b'\n' | b'\\' | 0x80.. => {}
            b'/' if matches!(b.get(i + 1), Some(b'/') | Some(b'*')) => {}
            _ => chain = 0,
        }
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut nest = 1;
                i += 2;
                while i < b.len() && nest > 0 {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        // the KDL parser recurses into nested comments too
                        nest += 1;
                        if nest > MAX_DEPTH {
                            return Some(TooDeep {
                                at: i,
                                what: Nesting::Comments,
                            });
                        }
                        i += 1;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        nest -= 1;
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            b'#' if matches!(b.get(i + 1), Some(b'#') | Some(b'"')) => {
                // raw string: #…#"…"#…#, no escapes
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + hashes) != Some(&b'"') {
                    i += hashes;
                    continue;
                }
                i += hashes + 1;
                while i < b.len() {
                    if b[i] == b'"'
                        && b[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == b'#')
                            .count()
                            == hashes
                    {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(TooDeep {
                        at: i,
                        what: Nesting::Blocks,
                    });
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// How many steps a declaration expands to, and the factors, for the diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub steps: u128,
    /// `(count, what)`, e.g. `(3, "servers")`, in the order they multiply.
    pub factors: Vec<(u128, &'static str)>,
}

impl Expansion {
    fn of(factors: Vec<(u128, &'static str)>) -> Self {
        let steps = factors
            .iter()
            .fold(1u128, |acc, (n, _)| acc.saturating_mul(*n));
        Expansion { steps, factors }
    }

    /// `3 servers × 4 matrix points × 1000000000 passes`; factors of one are left out.
    pub fn breakdown(&self) -> String {
        let shown: Vec<String> = self
            .factors
            .iter()
            .filter(|(n, _)| *n != 1)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if shown.is_empty() {
            "one of each".to_string()
        } else {
            shown.join(" × ")
        }
    }
}

/// Points of a matrix: the product of its axes' lengths (saturating, never allocated).
pub fn matrix_points(axes: &[crate::model::Param]) -> u128 {
    axes.iter()
        .fold(1u128, |acc, a| acc.saturating_mul(a.values.len() as u128))
}

/// The steps a `step` declaration expands to: one per matrix point and pass.
pub fn step_expansion(step: &crate::model::CommandStep) -> Expansion {
    Expansion::of(vec![
        (matrix_points(&step.matrix), "matrix points"),
        (step.passes.value as u128, "passes"),
    ])
}

/// The trial steps a `trials` declaration expands to: one per server, point of its
/// workload's matrix and pass (`workload` is the one it names, if it exists).
pub fn trials_expansion(
    trials: &crate::model::Trials,
    workload: Option<&crate::model::Workload>,
) -> Expansion {
    Expansion::of(vec![
        (trials.servers.len() as u128, "servers"),
        (
            workload.map_or(1, |w| matrix_points(&w.params)),
            "workload points",
        ),
        (
            matrix_points(&trials.host_axes().cloned().collect::<Vec<_>>()),
            "host settings",
        ),
        (trials.cpus.len().max(1) as u128, "CPU counts"),
        // an adaptive block resolves to `max` passes (those beyond `min` are conditional)
        (u128::from(trials.passes.value.max), "passes"),
    ])
}

/// Why a file a plan names on the host (a step's `input`, an image's `file`) may not be read.
#[derive(Debug)]
pub enum HostFileError {
    /// It does not exist (or a directory on its way cannot be entered).
    Missing(std::io::Error),
    /// It is a directory, FIFO, device or socket: only regular files are copied and hashed.
    NotRegular,
    /// It lies outside the directories the plan may read; `canonical` is where it really is.
    Outside { canonical: PathBuf },
}

impl std::fmt::Display for HostFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostFileError::Missing(e) => write!(f, "it cannot be found: {e}"),
            HostFileError::NotRegular => write!(f, "it is not a regular file"),
            HostFileError::Outside { canonical } => write!(
                f,
                "it is `{}`, outside the plan's directory and every `host-path` of the study",
                canonical.display()
            ),
        }
    }
}

/// Resolves `rel` (as written in the plan file whose directory is `dir`) to the canonical
/// path of a regular file inside `dir` or inside one of `host_paths` (canonical
/// directories). `..` and symlinks are resolved first, so neither climbs out unseen.
pub fn host_file(dir: &Path, rel: &str, host_paths: &[PathBuf]) -> Result<PathBuf, HostFileError> {
    let canonical = dir
        .join(rel)
        .canonicalize()
        .map_err(HostFileError::Missing)?;
    let own = dir.canonicalize().map_err(HostFileError::Missing)?;
    if !std::iter::once(&own)
        .chain(host_paths)
        .any(|root| canonical.starts_with(root))
    {
        return Err(HostFileError::Outside { canonical });
    }
    let meta = std::fs::metadata(&canonical).map_err(HostFileError::Missing)?;
    if !meta.is_file() {
        return Err(HostFileError::NotRegular);
    }
    Ok(canonical)
}

/// Why the file at `path` may not be read as a plan file: not a regular file, or too large.
pub fn unreadable(path: &Path) -> Option<String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => return None, // reading it reports the cause
    };
    if !meta.is_file() {
        return Some("it is not a regular file".to_string());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Some(format!(
            "it is {} bytes, larger than the limit of {MAX_FILE_BYTES} bytes for a plan file",
            meta.len()
        ));
    }
    None
}

/// Reads a plan file within the bounds of [`unreadable`].
pub fn read_plan_file(path: &Path) -> std::io::Result<String> {
    if let Some(why) = unreadable(path) {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
    }
    std::fs::read_to_string(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        let mut s = String::new();
        for _ in 0..n {
            s.push_str("a {\n");
        }
        for _ in 0..n {
            s.push_str("}\n");
        }
        s
    }

    #[test]
    fn depth_at_the_limit_passes_and_beyond_is_found() {
        assert_eq!(too_deep(&nested(MAX_DEPTH)), None);
        let text = nested(MAX_DEPTH + 1);
        assert_eq!(too_deep(&text).map(|t| t.at), Some(MAX_DEPTH * 4 + 2));
        assert!(too_deep(&nested(2000)).is_some());
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_count() {
        let deep = "{".repeat(MAX_DEPTH + 1);
        for text in [
            format!("a \"{deep}\""),
            format!("a #\"{deep}\"#"),
            format!("a ##\"\"#{deep}\"##"),
            format!("// {deep}\n"),
            format!("/* /* {deep} */ {deep} */"),
            format!("{}{}", "/* ".repeat(MAX_DEPTH), "*/ ".repeat(MAX_DEPTH)),
            format!("a \"\\\"{deep}\""),
        ] {
            assert_eq!(too_deep(&text), None, "{text}");
        }
    }

    /// Runs `f` on a thread with a 2 MiB stack, the default for spawned threads (the main
    /// thread has 8 MiB), so a recursion that only fits the main thread's stack fails here.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .expect("no stack overflow")
    }

    #[test]
    fn a_plan_nested_to_the_limit_parses_on_a_small_stack() {
        let mut text = String::from("step \"s\" {\n run \"true\"\n");
        text.push_str(&nested(MAX_DEPTH - 1));
        text.push_str("}\n");
        assert_eq!(too_deep(&text), None);
        let err = on_small_stack(move || crate::parse_str("deep.kdl", &text).unwrap_err());
        // the nested blocks are unknown nodes, reported, not a crash
        assert!(err
            .problems()
            .iter()
            .all(|p| p.code() == "cairn::plan::unknown_node"));
    }

    #[test]
    fn block_comments_nested_beyond_the_limit_are_found() {
        let n = 100_000;
        for text in [
            format!("{}{}", "/* ".repeat(n), "*/ ".repeat(n)),
            "/* ".repeat(n), // unclosed
        ] {
            assert_eq!(too_deep(&text).map(|t| t.at), Some(MAX_DEPTH * 3));
            let err = on_small_stack(move || crate::parse_str("deep.kdl", &text).unwrap_err());
            assert_eq!(err.problems()[0].code(), "cairn::plan::limit");
        }
    }

    #[test]
    fn slashdash_chains_beyond_the_limit_are_found() {
        let ok = format!("a {}1", "/- ".repeat(MAX_SLASHDASH_CHAIN));
        assert_eq!(too_deep(&ok), None);
        for text in [
            format!("a {}1", "/- ".repeat(100_000)),
            format!("{}b", "/-\n".repeat(100_000)),
            format!("c {}{{}}", "/- /* */ ".repeat(100_000)),
        ] {
            assert!(too_deep(&text).is_some());
            let err = on_small_stack(move || crate::parse_str("chain.kdl", &text).unwrap_err());
            assert_eq!(err.problems()[0].code(), "cairn::plan::limit");
        }
    }

    #[test]
    fn a_plan_nested_far_beyond_the_limit_is_one_problem_on_a_small_stack() {
        let text = nested(100_000);
        let for_fmt = text.clone();
        let err = on_small_stack(move || crate::parse_str("deep.kdl", &text).unwrap_err());
        assert_eq!(err.problems().len(), 1);
        assert_eq!(err.problems()[0].code(), "cairn::plan::limit");
        // `cairn fmt` parses too
        let err = on_small_stack(move || crate::format_text(&for_fmt).unwrap_err());
        assert_eq!(err.problems()[0].code(), "cairn::plan::limit");
    }

    #[test]
    fn other_nesting_the_kdl_parser_might_recurse_on_does_not_overflow() {
        let n = 100_000;
        for text in [
            // many slashdashed nodes, not chained
            "/- a ".repeat(n),
            format!("a {}", "/- 1 ".repeat(n)),
            // syntax errors at the top level, each a recovery point of the parser
            "}".repeat(n),
            "a }\n".repeat(n),
            "a=".repeat(n),
            ") ".repeat(n),
            "= ".repeat(n),
            // many siblings
            "a {}\n".repeat(n),
            // block comments of many pieces (the parser recursed once per `*` or `/`)
            format!("a /*{}*/", "*".repeat(n)),
            format!("a /*u{}", "/".repeat(n)),
            // braces the pre-scan takes for string content, the parser (after an error) not:
            // the vendored parser's own bound stops these
            format!("#\"{}", "{".repeat(n)),
            format!("\"x\n{}", "a {".repeat(n)),
            format!("#\"{}a", "/- ".repeat(n)),
        ] {
            on_small_stack(move || {
                let _ = crate::parse_str("odd.kdl", &text);
            });
        }
    }

    #[test]
    fn special_files_are_refused() {
        assert!(unreadable(Path::new("/dev/zero")).is_some());
        assert!(unreadable(Path::new(".")).is_some());
    }
}
