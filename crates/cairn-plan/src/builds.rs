//! Build definitions that builds reuse: a top-level `build "name" { … }` that an image's
//! `build extends="name"` (or another named build) extends and overrides, and the flattening
//! of such a chain into the one [`Build`] it means — before anything is keyed, so a build
//! that extends a named build has the key of the same build written out inline.
//!
//! Overriding (`docs/plan-language.md#build`): a scalar the extending build gives (`source`,
//! `compiler`, `type`, `link`, `strip`, `prefix`) replaces the inherited one; a list entry
//! replaces the inherited entry that sets the same thing ([`List::key`]: `-O3` the `-O2`,
//! `-fomit-frame-pointer` the `-fno-omit-frame-pointer`, `-DPLUGIN_X=YES` the
//! `-DPLUGIN_X=NO`), in its place, and is added otherwise; `cflags-remove "-g"` (and the other
//! lists' `-remove`) drops an inherited entry.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::{did_you_mean, problem, Reporter};
use crate::model::*;

/// The lists a build holds, each with its `<name>-remove` child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Cflags,
    Cxxflags,
    Ldflags,
    Configure,
    Cmake,
    Deps,
}

impl List {
    pub(crate) const ALL: [List; 6] = [
        List::Cflags,
        List::Cxxflags,
        List::Ldflags,
        List::Configure,
        List::Cmake,
        List::Deps,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            List::Cflags => "cflags",
            List::Cxxflags => "cxxflags",
            List::Ldflags => "ldflags",
            List::Configure => "configure",
            List::Cmake => "cmake",
            List::Deps => "deps",
        }
    }

    /// The list a child node edits, and whether it removes (`cflags-remove`).
    pub(crate) fn of_child(child: &str) -> Option<(List, bool)> {
        let (name, remove) = match child.strip_suffix("-remove") {
            Some(name) => (name, true),
            None => (child, false),
        };
        List::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .map(|l| (l, remove))
    }

    /// What an entry sets: two entries with one key set the same thing, so the extending
    /// build's replaces the inherited one. The compiler's own rule (the last of two flags
    /// that set one thing wins) made explicit, so the recorded flags hold only the one used.
    pub(crate) fn key(self, entry: &str) -> String {
        match self {
            List::Cflags | List::Cxxflags | List::Ldflags => flag_key(entry),
            List::Cmake => cmake_key(entry),
            List::Configure => configure_key(entry),
            // a pinned package replaces the same package unpinned
            List::Deps => before(entry, '=').to_string(),
        }
    }
}

fn before(s: &str, c: char) -> &str {
    s.split_once(c).map_or(s, |(a, _)| a)
}

/// `-O<level>` → `-O`; `-g`, `-g0`…`-g3` → `-g`; `-f[no-]X[=v]`, `-m[no-]X[=v]` → `-fX`,
/// `-mX`; `-W[no-]X` → `-WX` (its value kept: `-Werror=a` and `-Werror=b` both hold);
/// `-std=v` → `-std`; `-D`/`-U` a macro → `-D<macro>`; anything else (`-Wl,…`, `-L…`,
/// `-static`) is its own key.
fn flag_key(flag: &str) -> String {
    if flag.starts_with("-O") {
        return "-O".into();
    }
    if matches!(flag, "-g" | "-g0" | "-g1" | "-g2" | "-g3") {
        return "-g".into();
    }
    if ["-Wl,", "-Wa,", "-Wp,"].iter().any(|p| flag.starts_with(p)) {
        return flag.into();
    }
    if flag.starts_with("-std=") {
        return "-std".into();
    }
    if let Some(rest) = flag.strip_prefix("-D").or_else(|| flag.strip_prefix("-U")) {
        return format!("-D{}", before(rest, '='));
    }
    for prefix in ["-f", "-m"] {
        if let Some(rest) = flag.strip_prefix(prefix) {
            let rest = rest.strip_prefix("no-").unwrap_or(rest);
            return format!("{prefix}{}", before(rest, '='));
        }
    }
    if let Some(rest) = flag.strip_prefix("-W") {
        return format!("-W{}", rest.strip_prefix("no-").unwrap_or(rest));
    }
    flag.into()
}

/// `-DNAME[:TYPE]=v` and `-UNAME` → `-DNAME`; `-G…` → `-G`; else the text before `=`.
fn cmake_key(option: &str) -> String {
    if let Some(rest) = option
        .strip_prefix("-D")
        .or_else(|| option.strip_prefix("-U"))
    {
        return format!("-D{}", before(before(rest, '='), ':'));
    }
    if option.starts_with("-G") {
        return "-G".into();
    }
    before(option, '=').into()
}

/// `--enable-X[=v]`/`--disable-X` → `--enable-X`; `--with-X[=v]`/`--without-X` →
/// `--with-X`; else the text before `=` (`--prefix=…`, `CC=…`).
fn configure_key(option: &str) -> String {
    let name = before(option, '=');
    if let Some(x) = name
        .strip_prefix("--enable-")
        .or_else(|| name.strip_prefix("--disable-"))
    {
        return format!("--enable-{x}");
    }
    if let Some(x) = name
        .strip_prefix("--with-")
        .or_else(|| name.strip_prefix("--without-"))
    {
        return format!("--with-{x}");
    }
    name.into()
}

/// What one `build` node writes into one list.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListEdit {
    /// `cflags "-O2" …`, every such child in order.
    pub(crate) given: Vec<Sp<String>>,
    /// `cflags-remove "-g" …`: inherited entries to drop.
    pub(crate) removed: Vec<Sp<String>>,
}

/// A `build` node as written (top-level and named, or an image's layer), before its
/// `extends` chain is flattened.
#[derive(Debug, Clone)]
pub(crate) struct BuildSpec {
    /// The node's name (`build`): "this build".
    pub(crate) at: Loc,
    pub(crate) extends: Option<Sp<String>>,
    pub(crate) source: Option<Sp<BuildSource>>,
    pub(crate) compiler: Option<Sp<String>>,
    pub(crate) build_type: Option<Sp<String>>,
    pub(crate) link: Option<Sp<String>>,
    /// `link "static" programs="…"`: set with `link`, and replaced with it.
    pub(crate) link_programs: Vec<String>,
    pub(crate) strip: Option<Sp<bool>>,
    pub(crate) prefix: Option<Sp<String>>,
    /// One edit per [`List::ALL`], in that order.
    pub(crate) lists: [ListEdit; 6],
}

impl BuildSpec {
    pub(crate) fn new(at: Loc) -> BuildSpec {
        BuildSpec {
            at,
            extends: None,
            source: None,
            compiler: None,
            build_type: None,
            link: None,
            link_programs: Vec::new(),
            strip: None,
            prefix: None,
            lists: Default::default(),
        }
    }

    pub(crate) fn list_mut(&mut self, l: List) -> &mut ListEdit {
        &mut self.lists[l as usize]
    }
}

/// The builds read from the plan's files, flattened once every file is read.
#[derive(Default)]
pub(crate) struct Written {
    /// Top-level `build "name" { … }`.
    pub(crate) named: Vec<(Sp<String>, BuildSpec)>,
    /// Every image's `build` layer: where it stands and what it says.
    pub(crate) layers: Vec<LayerBuild>,
}

/// An image's `build` layer as written: `plan.images[image].layers[layer]` until flattened.
pub(crate) struct LayerBuild {
    pub(crate) image: usize,
    pub(crate) layer: usize,
    pub(crate) spec: BuildSpec,
}

/// A build with its chain applied, every value still at the place it was written.
#[derive(Debug, Clone)]
struct Flat {
    source: Option<Sp<BuildSource>>,
    compiler: Option<Sp<String>>,
    build_type: Option<Sp<String>>,
    link: Option<Sp<String>>,
    link_programs: Vec<String>,
    strip: Option<Sp<bool>>,
    prefix: Option<Sp<String>>,
    lists: [Vec<Sp<String>>; 6],
}

/// Two properties a build cannot have together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conflict {
    DebugStripped,
    ConfigureAndCmake,
}

impl Flat {
    fn list(&self, l: List) -> &[Sp<String>] {
        &self.lists[l as usize]
    }

    /// The build this means, its source `source`, for a layer in plan file `layer_file`.
    fn build(&self, source: &Sp<BuildSource>, layer_file: SourceId) -> Build {
        let strings = |l: List| self.list(l).iter().map(|e| e.value.clone()).collect();
        let string = |v: &Option<Sp<String>>| v.as_ref().map(|v| v.value.clone());
        Build {
            source: source.value.clone(),
            source_at: (source.loc.source != layer_file).then_some(source.loc),
            compiler: string(&self.compiler),
            cflags: strings(List::Cflags),
            cxxflags: strings(List::Cxxflags),
            ldflags: strings(List::Ldflags),
            build_type: string(&self.build_type),
            configure: strings(List::Configure),
            cmake: strings(List::Cmake),
            link: string(&self.link),
            link_programs: self.link_programs.clone(),
            strip: self.strip.as_ref().map(|v| v.value),
            deps: strings(List::Deps),
            prefix: string(&self.prefix),
        }
    }

    fn conflicts(&self) -> Vec<Conflict> {
        let mut out = Vec::new();
        if self.build_type.as_ref().is_some_and(|t| t.value == "debug")
            && self.strip.as_ref().is_some_and(|s| s.value)
        {
            out.push(Conflict::DebugStripped);
        }
        if !self.list(List::Configure).is_empty() && !self.list(List::Cmake).is_empty() {
            out.push(Conflict::ConfigureAndCmake);
        }
        out
    }
}

/// `base`'s list with `edit` applied: removals first, then each given entry replaces the
/// inherited entries of its key (at the first one's place) or is added at the end.
fn merge(
    l: List,
    base: &[Sp<String>],
    edit: &ListEdit,
    from: &str,
    r: &mut Reporter,
) -> Vec<Sp<String>> {
    let mut kept: Vec<Sp<String>> = base.to_vec();
    for rm in &edit.removed {
        // an option's name alone removes it with its value (`cmake-remove "-DPLUGIN_X"`)
        let matches = |e: &Sp<String>| {
            e.value == rm.value
                || (!rm.value.contains('=')
                    && e.value.contains('=')
                    && l.key(&e.value) == l.key(&rm.value))
        };
        if kept.iter().any(matches) {
            kept.retain(|e| !matches(e));
        } else {
            let inherited: Vec<&str> = base.iter().map(|e| e.value.as_str()).collect();
            let p = problem(
                "dangling",
                format!(
                    "`{}-remove \"{}\"`: `{from}` gives no such {}",
                    l.name(),
                    rm.value,
                    l.name()
                ),
            )
            .label(rm.loc, format!("not among the inherited {}", l.name()))
            .help_opt(did_you_mean(&rm.value, inherited.iter().copied()))
            .help(if inherited.is_empty() {
                format!("`{from}` gives no {}", l.name())
            } else {
                format!(
                    "`{from}` gives {}",
                    inherited
                        .iter()
                        .map(|e| format!("`{e}`"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            });
            r.push(p);
        }
    }
    let given: BTreeSet<String> = edit.given.iter().map(|e| l.key(&e.value)).collect();
    let inherited: BTreeSet<String> = kept.iter().map(|e| l.key(&e.value)).collect();
    let mut out = Vec::new();
    let mut placed = BTreeSet::new();
    for e in kept {
        let k = l.key(&e.value);
        if !given.contains(&k) {
            out.push(e);
        } else if placed.insert(k.clone()) {
            out.extend(edit.given.iter().filter(|g| l.key(&g.value) == k).cloned());
        }
    }
    out.extend(
        edit.given
            .iter()
            .filter(|g| !inherited.contains(&l.key(&g.value)))
            .cloned(),
    );
    out
}

/// `spec` over `base` (named `from`); `None` base: the build as written.
fn flatten(spec: &BuildSpec, base: Option<(&Flat, &str)>, r: &mut Reporter) -> Flat {
    let Some((base, from)) = base else {
        return Flat {
            source: spec.source.clone(),
            compiler: spec.compiler.clone(),
            build_type: spec.build_type.clone(),
            link: spec.link.clone(),
            link_programs: spec.link_programs.clone(),
            strip: spec.strip.clone(),
            prefix: spec.prefix.clone(),
            lists: spec.lists.clone().map(|e| e.given),
        };
    };
    let over = |mine: &Option<Sp<String>>, theirs: &Option<Sp<String>>| {
        mine.clone().or_else(|| theirs.clone())
    };
    let lists = List::ALL.map(|l| merge(l, base.list(l), &spec.lists[l as usize], from, r));
    Flat {
        source: spec.source.clone().or_else(|| base.source.clone()),
        compiler: over(&spec.compiler, &base.compiler),
        build_type: over(&spec.build_type, &base.build_type),
        link: over(&spec.link, &base.link),
        // the programs go with the `link` they were written on
        link_programs: if spec.link.is_some() {
            spec.link_programs.clone()
        } else {
            base.link_programs.clone()
        },
        strip: spec.strip.clone().or_else(|| base.strip.clone()),
        prefix: over(&spec.prefix, &base.prefix),
        lists,
    }
}

/// Refuses the conflicts `flat` has that its base has not (the base's own are refused at
/// the base), at "this build", with each inherited part at its own place.
fn refuse_conflicts(spec: &BuildSpec, flat: &Flat, base: Option<&Flat>, r: &mut Reporter) {
    let old = base.map(Flat::conflicts).unwrap_or_default();
    for c in flat.conflicts() {
        if old.contains(&c) {
            continue;
        }
        let mut p = match c {
            Conflict::DebugStripped => problem(
                "conflict",
                "a debug build that is stripped keeps no debug information",
            )
            .label(spec.at, "this build"),
            Conflict::ConfigureAndCmake => problem(
                "conflict",
                "a build uses either `configure` or `cmake`, not both",
            )
            .label(spec.at, "this build"),
        };
        // what came from the base is shown where the base says it
        let inherited: Vec<(Loc, String)> = match c {
            Conflict::DebugStripped => [
                spec.build_type
                    .is_none()
                    .then(|| {
                        flat.build_type
                            .as_ref()
                            .map(|t| (t.loc, "`type \"debug\"`"))
                    })
                    .flatten(),
                spec.strip
                    .is_none()
                    .then(|| flat.strip.as_ref().map(|s| (s.loc, "`strip #true`")))
                    .flatten(),
            ]
            .into_iter()
            .flatten()
            .map(|(loc, what)| (loc, format!("{what}, inherited")))
            .collect(),
            Conflict::ConfigureAndCmake => [List::Configure, List::Cmake]
                .into_iter()
                .filter(|l| spec.lists[*l as usize].given.is_empty())
                .filter_map(|l| {
                    flat.list(l)
                        .first()
                        .map(|e| (e.loc, format!("`{}`, inherited", l.name())))
                })
                .collect(),
        };
        for (loc, text) in inherited {
            p = p.label(loc, text);
        }
        p = match c {
            Conflict::DebugStripped => {
                p.help("leave out `strip #true`, or build `type \"release\"`")
            }
            Conflict::ConfigureAndCmake => {
                p.help("keep the options of the build system the source uses")
            }
        };
        r.push(p);
    }
}

/// Named builds flattened, each once.
struct Flattener<'a> {
    written: &'a Written,
    index: BTreeMap<&'a str, usize>,
    /// Named builds in an `extends` cycle (refused elsewhere): never flattened.
    bad: &'a BTreeSet<String>,
    /// Per named build, once flattened: `Some(None)` when it cannot be (it is in a cycle, or
    /// extends one that cannot be).
    done: Vec<Option<Option<Flat>>>,
}

impl Flattener<'_> {
    /// Named build `i`, its bases flattened first — iteratively, as a chain may be long.
    fn named(&mut self, i: usize, r: &mut Reporter) -> Option<Flat> {
        let mut chain = Vec::new();
        let mut seen = BTreeSet::new();
        let mut cur = Some(i);
        while let Some(c) = cur {
            if self.done[c].is_some() || !seen.insert(c) {
                break;
            }
            chain.push(c);
            let (name, spec) = &self.written.named[c];
            if self.bad.contains(name.as_str()) {
                break;
            }
            cur = spec
                .extends
                .as_ref()
                .and_then(|e| self.index.get(e.as_str()).copied());
        }
        for &c in chain.iter().rev() {
            let (name, spec) = &self.written.named[c];
            let out = if self.bad.contains(name.as_str()) {
                None
            } else {
                self.over(spec, r)
            };
            self.done[c] = Some(out);
        }
        self.done[i].clone().flatten()
    }

    /// `spec` over its base (a named build flattened already), its new conflicts refused.
    fn over(&self, spec: &BuildSpec, r: &mut Reporter) -> Option<Flat> {
        let base = match &spec.extends {
            None => None,
            Some(e) => {
                let &b = self.index.get(e.as_str())?;
                Some((self.done[b].as_ref()?.as_ref()?, e.as_str()))
            }
        };
        let out = flatten(spec, base, r);
        refuse_conflicts(spec, &out, base.map(|(f, _)| f), r);
        Some(out)
    }
}

/// Flattens every build: the named ones (each once, base first; those in an `extends` cycle,
/// in `bad`, are left out: the cycle is refused elsewhere) and every image's build layer,
/// written into `plan.images`. Unknown names were refused by the reference check.
pub(crate) fn resolve(
    plan: &mut Plan,
    written: &Written,
    bad: &BTreeSet<String>,
    r: &mut Reporter,
) {
    let mut f = Flattener {
        written,
        // the first of two declarations of a name (the second is refused as a duplicate)
        index: written
            .named
            .iter()
            .enumerate()
            .rev()
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect(),
        bad,
        done: vec![None; written.named.len()],
    };
    for i in 0..written.named.len() {
        f.named(i, r);
    }
    for lb in &written.layers {
        if let Some(&base) = lb
            .spec
            .extends
            .as_ref()
            .and_then(|e| f.index.get(e.as_str()))
        {
            f.named(base, r);
        }
        let Some(flat) = f.over(&lb.spec, r) else {
            continue;
        };
        let Some(source) = &flat.source else {
            let from = lb.spec.extends.as_ref().map_or(String::new(), |e| {
                format!(" (nor does `{}`, which it extends)", e.value)
            });
            let help = "write `build \"debian:<source package>\" extends=\"…\"`, or give the \
                        named build a `source \"debian:…\"`";
            r.push(
                problem("missing", format!("this build names no source{from}"))
                    .label(lb.spec.at, "no source")
                    .help(help),
            );
            continue;
        };
        let layer = &mut plan.images[lb.image].layers[lb.layer];
        let build = flat.build(source, layer.loc.source);
        layer.value = Layer::Build(Box::new(build));
    }
}

/// Warns (at check, and at every command that reads the plan) when an image that `extends`
/// an image with a build adds a build of its own: the second build is built in, and
/// installed over, an image that holds the first's program — rarely what was meant by
/// "the same build, one flag changed", which is a named build the image's build extends.
/// `images` are as written (before their `extends` is resolved).
pub(crate) fn warn_stacked(images: &[Image], bad: &BTreeSet<String>, r: &mut Reporter) {
    let by_name: BTreeMap<&str, &Image> =
        images.iter().rev().map(|i| (i.name.as_str(), i)).collect();
    let first_build = |i: &Image| {
        i.layers
            .iter()
            .find(|l| matches!(l.value, Layer::Build(_)))
            .map(|l| l.loc)
    };
    for image in images {
        let (Some(extends), Some(own)) = (&image.extends, first_build(image)) else {
            continue;
        };
        if bad.contains(image.name.as_str()) {
            continue;
        }
        // the nearest ancestor with a build
        let mut seen = BTreeSet::new();
        let mut cur = by_name.get(extends.as_str()).copied();
        let inherited = loop {
            let Some(parent) = cur else { break None };
            if !seen.insert(parent.name.as_str()) {
                break None;
            }
            if let Some(at) = first_build(parent) {
                break Some((parent, at));
            }
            cur = parent
                .extends
                .as_ref()
                .and_then(|e| by_name.get(e.as_str()).copied());
        };
        let Some((parent, at)) = inherited else {
            continue;
        };
        let message = format!(
            "image `{}` builds on top of the build it inherits from `{}`",
            image.name.value, parent.name.value
        );
        let help = "both builds run, the second in an image that holds the first one's \
                    program; to vary one build, declare it once at the top level (`build \
                    \"mariadb\" { source \"debian:…\"; … }`) and give each image `build \
                    extends=\"mariadb\" { … }` with what differs, without extending the built \
                    image";
        r.warn(
            problem("stacked_build", message)
                .label(own, "a second build, made over the first")
                .label(extends.loc, "extends an image that has a build")
                .label(at, format!("the first build (of `{}`)", parent.name.value))
                .help(help),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_that_set_one_thing_share_a_key() {
        for (a, b) in [
            ("-O2", "-O3"),
            ("-O2", "-Os"),
            ("-g", "-g0"),
            ("-fomit-frame-pointer", "-fno-omit-frame-pointer"),
            ("-flto=auto", "-fno-lto"),
            ("-march=native", "-march=x86-64-v3"),
            ("-mavx2", "-mno-avx2"),
            ("-Wformat", "-Wno-format"),
            ("-Werror=implicit", "-Wno-error=implicit"),
            ("-std=c11", "-std=gnu17"),
            ("-DNDEBUG", "-UNDEBUG"),
            ("-DX=1", "-DX=2"),
        ] {
            assert_eq!(flag_key(a), flag_key(b), "{a} {b}");
        }
        for (a, b) in [
            ("-march=native", "-mtune=native"),
            ("-Werror=implicit", "-Werror=format-security"),
            ("-Wl,-z,now", "-Wl,-O1"),
            ("-L/a", "-L/b"),
            ("-g", "-ggdb"),
            ("-static", "-pie"),
        ] {
            assert_ne!(flag_key(a), flag_key(b), "{a} {b}");
        }
    }

    #[test]
    fn options_are_keyed_by_name() {
        assert_eq!(cmake_key("-DPLUGIN_X=NO"), cmake_key("-DPLUGIN_X:BOOL=YES"));
        assert_eq!(cmake_key("-DPLUGIN_X=NO"), cmake_key("-UPLUGIN_X"));
        assert_eq!(cmake_key("-GNinja"), cmake_key("-GUnix Makefiles"));
        assert_ne!(cmake_key("-DPLUGIN_X=NO"), cmake_key("-DPLUGIN_Y=NO"));
        assert_eq!(
            configure_key("--enable-nls"),
            configure_key("--disable-nls")
        );
        assert_eq!(
            configure_key("--with-ssl=/usr"),
            configure_key("--without-ssl")
        );
        assert_eq!(configure_key("--prefix=/a"), configure_key("--prefix=/b"));
        assert_eq!(configure_key("CC=gcc"), configure_key("CC=clang"));
        assert_ne!(configure_key("--enable-a"), configure_key("--enable-b"));
        assert_eq!(
            List::Deps.key("libssl-dev=3.0"),
            List::Deps.key("libssl-dev")
        );
    }

    fn sp(s: &str) -> Sp<String> {
        Sp::new(
            s.to_string(),
            Loc {
                source: SourceId(0),
                span: (0, 0).into(),
            },
        )
    }

    fn merged(l: List, base: &[&str], given: &[&str], removed: &[&str]) -> (Vec<String>, usize) {
        let base: Vec<Sp<String>> = base.iter().map(|s| sp(s)).collect();
        let edit = ListEdit {
            given: given.iter().map(|s| sp(s)).collect(),
            removed: removed.iter().map(|s| sp(s)).collect(),
        };
        let mut r = Reporter::default();
        r.add_source("t".into(), std::sync::Arc::from(""));
        let out = merge(l, &base, &edit, "base", &mut r);
        (out.into_iter().map(|e| e.value).collect(), r.problems.len())
    }

    #[test]
    fn a_given_entry_replaces_its_sibling_in_place_and_others_are_added() {
        assert_eq!(
            merged(
                List::Cflags,
                &["-O2", "-fno-omit-frame-pointer", "-pipe"],
                &["-O3", "-march=native"],
                &[]
            ),
            (
                vec![
                    "-O3".into(),
                    "-fno-omit-frame-pointer".into(),
                    "-pipe".into(),
                    "-march=native".into()
                ],
                0
            )
        );
        assert_eq!(
            merged(
                List::Cflags,
                &["-O2", "-fno-omit-frame-pointer"],
                &["-fomit-frame-pointer"],
                &[]
            )
            .0,
            ["-O2", "-fomit-frame-pointer"]
        );
        assert_eq!(
            merged(
                List::Cmake,
                &["-DA=1", "-DPLUGIN_X=NO", "-DB=2"],
                &["-DPLUGIN_X=YES"],
                &["-DB"]
            )
            .0,
            ["-DA=1", "-DPLUGIN_X=YES"]
        );
        // a given entry equal to an inherited one changes nothing
        assert_eq!(
            merged(List::Cflags, &["-O2", "-g"], &["-O2"], &[]).0,
            ["-O2", "-g"]
        );
    }

    #[test]
    fn removing_what_is_not_inherited_is_refused() {
        let (out, problems) = merged(List::Cflags, &["-O2", "-g"], &[], &["-g", "-O3"]);
        assert_eq!(out, ["-O2"]);
        assert_eq!(problems, 1, "-O3 is not inherited (-O2 is)");
    }
}
