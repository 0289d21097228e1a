//! Reading a plan from disk: the root file and every file it `import`s, each read once, cycles rejected.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::diagnostics::{problem, syntax_problems, PlanError, Reporter};
use crate::model::*;
use crate::parse::{Declared, FileParser};

/// Shared state while reading the files of one plan.
pub(crate) struct Loader {
    pub(crate) r: Reporter,
    pub(crate) declared: Declared,
    pub(crate) plan: Plan,
    /// The `build` nodes of every file, flattened once all are read.
    builds: crate::builds::Written,
    check_files: bool,
    /// The parameters' values given by the caller (`--set`).
    settings: crate::params::Settings,
    /// Canonical paths of the files read so far.
    seen: BTreeSet<PathBuf>,
    /// Canonical paths of the files being read (the import chain), with their display names.
    stack: Vec<(PathBuf, String)>,
}

/// `a/./b/../c` → `a/c`, keeping leading `..` (display names stay relative when the root path was).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        PathBuf::from(".")
    } else {
        out.iter().collect()
    }
}

/// Reports (and answers true) when `text` nests deeper than the KDL parser may be asked
/// to go; the caller must not parse it then.
pub(crate) fn too_deep(r: &mut Reporter, id: SourceId, text: &str) -> bool {
    let Some(deep) = crate::limits::too_deep(text) else {
        return false;
    };
    let (message, label) = deep.describe();
    let p = problem("limit", message)
        .label(
            Loc {
                source: id,
                span: (deep.at, 1).into(),
            },
            label,
        )
        .help("the parser would need a stack this deep; the rest of this file was not read");
    r.push(p);
    true
}

fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "study".to_string(), |s| s.to_string_lossy().into_owned())
}

impl Loader {
    pub(crate) fn new(check_files: bool, settings: crate::params::Settings) -> Self {
        Loader {
            settings,
            r: Reporter::default(),
            declared: Declared::default(),
            plan: Plan::default(),
            builds: crate::builds::Written::default(),
            check_files,
            seen: BTreeSet::new(),
            stack: Vec::new(),
        }
    }

    /// Parses one file's text; returns its imports (resolved by the caller, if at all).
    pub(crate) fn parse_file(
        &mut self,
        path: &Path,
        text: Arc<str>,
        is_root: bool,
    ) -> (SourceId, Vec<Sp<String>>) {
        let name = display(path);
        let id = self.r.add_source(name, text.clone());
        let dir = path.parent().map_or_else(
            || PathBuf::from("."),
            |p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            },
        );
        self.plan.sources.push(Source {
            path: path.to_path_buf(),
            dir: dir.clone(),
            text: text.clone(),
        });
        if is_root {
            self.plan.study.name = stem(path);
        }
        if too_deep(&mut self.r, id, &text) {
            return (id, Vec::new());
        }
        let mut doc = match kdl::KdlDocument::parse_v2(&text) {
            Ok(doc) => doc,
            Err(err) => {
                syntax_problems(&mut self.r, id, &err);
                return (id, Vec::new());
            }
        };
        // parameters first, so every value of this file (and of the files it imports) can
        // use them
        crate::params::declare(&mut self.r, id, &doc, &mut self.plan.params, &self.settings);
        crate::params::substitute(&mut self.r, id, &mut doc, &mut self.plan.params);
        crate::when_blocks::splice(&mut self.r, id, &mut doc, &mut self.plan.params);
        let mut fp = FileParser {
            r: &mut self.r,
            declared: &mut self.declared,
            plan: &mut self.plan,
            builds: &mut self.builds,
            id,
            dir,
            is_root,
            check_files: self.check_files,
            imports: Vec::new(),
        };
        fp.document(&doc);
        (id, fp.imports)
    }

    /// Reads `path` and, recursively, its imports.
    fn visit(&mut self, path: &Path, canonical: PathBuf, text: Arc<str>, is_root: bool) {
        let (id, imports) = self.parse_file(path, text, is_root);
        self.stack.push((canonical, display(path)));
        let dir = self.plan.sources[id.0].dir.clone();
        for import in imports {
            let target = normalize(&dir.join(&import.value));
            let canonical = match target.canonicalize() {
                Ok(c) => c,
                Err(_) => {
                    let p = problem(
                        "import",
                        format!("imported file `{}` does not exist", import.value),
                    )
                    .label(import.loc, "not found")
                    .help(format!(
                        "imports are relative to the importing file; looked for `{}`",
                        display(&target)
                    ));
                    self.r.push(p);
                    continue;
                }
            };
            if let Some(pos) = self.stack.iter().position(|(c, _)| *c == canonical) {
                let mut chain: Vec<String> = self.stack[pos..]
                    .iter()
                    .map(|(_, n)| format!("`{n}`"))
                    .collect();
                chain.push(format!("`{}`", self.stack[pos].1));
                let p = problem("cycle", format!("import cycle: {}", chain.join(" → ")))
                    .label(import.loc, "imports a file that is already being imported")
                    .help("a file may not import itself, directly or through other files");
                self.r.push(p);
                continue;
            }
            if !self.seen.insert(canonical.clone()) {
                continue; // read already through another route
            }
            match crate::limits::read_plan_file(&canonical) {
                Ok(text) => self.visit(&target, canonical, Arc::from(text), false),
                Err(e) => {
                    let p = problem(
                        "import",
                        format!("cannot read imported file `{}`: {e}", import.value),
                    )
                    .label(import.loc, "cannot be read");
                    self.r.push(p);
                }
            }
        }
        self.stack.pop();
    }

    pub(crate) fn finish(mut self) -> Result<Plan, PlanError> {
        crate::params::finish(&mut self.r, &self.plan.params, &self.settings);
        crate::validate::validate(
            &mut self.plan,
            &self.declared,
            &self.builds,
            &mut self.r,
            self.check_files,
        );
        self.plan.warnings = std::mem::take(&mut self.r.warnings);
        self.r.finish()?;
        Ok(self.plan)
    }
}

/// Reads the plan at `path` with everything it imports.
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    load_with(path, &crate::params::Settings::new())
}

/// [`load`] with the values of the plan's parameters that the caller gives (`--set`); a
/// parameter not given takes its default.
pub fn load_with(path: &Path, settings: &crate::params::Settings) -> Result<Plan, PlanError> {
    let io = |source| PlanError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = crate::limits::read_plan_file(path).map_err(io)?;
    let canonical = path.canonicalize().map_err(io)?;
    let mut loader = Loader::new(true, settings.clone());
    loader.seen.insert(canonical.clone());
    loader.visit(&normalize(path), canonical, Arc::from(text), true);
    loader.finish()
}

/// Parses plan text that stands alone: `import` is not allowed, `input` files are not checked.
pub fn parse_str(name: &str, text: &str) -> Result<Plan, PlanError> {
    parse_str_with(name, text, &crate::params::Settings::new())
}

/// [`parse_str`] with the values of the plan's parameters that the caller gives.
pub fn parse_str_with(
    name: &str,
    text: &str,
    settings: &crate::params::Settings,
) -> Result<Plan, PlanError> {
    let mut loader = Loader::new(false, settings.clone());
    let (_, imports) = loader.parse_file(Path::new(name), Arc::from(text), true);
    for import in imports {
        let p = problem("import", "`import` needs a plan file on disk")
            .label(import.loc, "cannot be resolved here")
            .help("plans given as text stand alone; use `load` on a file to follow imports");
        loader.r.push(p);
    }
    loader.finish()
}
