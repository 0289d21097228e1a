//! `build` nodes: an image's build layer and a top-level named build, read into
//! [`BuildSpec`]s that `builds::resolve` flattens once every file is read.

use std::collections::BTreeMap;

use kdl::{KdlNode, KdlValue};

use super::{args, children, debian_word, node_name, prop_name, props, FileParser};
use crate::builds::{BuildSpec, LayerBuild, List};
use crate::diagnostics::{one_of, problem};
use crate::grammar::*;
use crate::model::*;

impl FileParser<'_> {
    /// `"debian:hello"` or `"tarball:src/x.tar.gz"`: where a build's code comes from.
    fn build_source(&mut self, source: Sp<String>) -> Option<Sp<BuildSource>> {
        let value = match source.value.split_once(':') {
            Some(("debian", pkg)) if !pkg.is_empty() && debian_word(pkg, "=~:") => {
                BuildSource::Debian {
                    package: pkg.to_string(),
                }
            }
            Some(("tarball", path)) if !path.is_empty() => BuildSource::Tarball {
                path: path.to_string(),
            },
            _ => {
                self.bad_value_at(
                    source.loc,
                    format!(
                        "`{}` is not a build source",
                        source.value.escape_debug()
                    ),
                    Some(
                        "write \"debian:<source package>\" (fetched with apt-get source) or \"tarball:<path in the plan's directory>\""
                            .into(),
                    ),
                );
                return None;
            }
        };
        Some(Sp::new(value, source.loc))
    }

    /// A top-level `build "o2" extends="base" { source "debian:mariadb"; cflags "-O2"; … }`:
    /// a build definition images' builds extend (flattened by `builds::resolve`).
    pub(super) fn named_build(&mut self, node: &KdlNode) {
        let extends = self.build_extends(node);
        let Some(name) = self.decl_name_of(node, "build") else {
            return;
        };
        let mut spec = BuildSpec::new(self.name_loc(node));
        spec.extends = extends;
        if self.build_children(node, &mut spec, true) {
            self.builds.named.push((name, spec));
        }
    }

    /// `extends="name"` of a `build` node (its only property).
    fn build_extends(&mut self, node: &KdlNode) -> Option<Sp<String>> {
        let mut extends = None;
        for e in self.props_only(node, BUILD_PROPS) {
            extends = self.string_of(e);
        }
        extends
    }

    /// An image's `build` node, the `layer`th layer of `plan.images[image]`: a stand-in
    /// layer, which `builds::resolve` replaces with the build the node means once every
    /// file (and so every named build) is read.
    pub(super) fn build_layer(
        &mut self,
        node: &KdlNode,
        image: usize,
        layer: usize,
    ) -> Option<Layer> {
        let spec = self.build(node)?;
        self.builds.layers.push(LayerBuild { image, layer, spec });
        let stand_in = Build {
            source: BuildSource::Debian {
                package: String::new(),
            },
            source_at: None,
            compiler: None,
            cflags: Vec::new(),
            cxxflags: Vec::new(),
            ldflags: Vec::new(),
            build_type: None,
            configure: Vec::new(),
            cmake: Vec::new(),
            link: None,
            link_programs: Vec::new(),
            strip: None,
            deps: Vec::new(),
            prefix: None,
        };
        Some(Layer::Build(Box::new(stand_in)))
    }

    /// An image's `build "debian:hello" { compiler "gcc"; cflags "-O2"; strip #true; … }`,
    /// or `build extends="o2" { cflags "-O3" }` (the source then may come from `o2`).
    fn build(&mut self, node: &KdlNode) -> Option<BuildSpec> {
        let extends = self.build_extends(node);
        let source = if extends.is_some() && args(node).next().is_none() {
            None
        } else {
            let source = self.single_arg(node).and_then(|e| self.string_of(e))?;
            Some(self.build_source(source))
        };
        let mut spec = BuildSpec::new(self.name_loc(node));
        spec.extends = extends;
        // the children are checked even when the source is bad: every problem at once
        let mut ok = !matches!(source, Some(None));
        spec.source = source.flatten();
        ok &= self.build_children(node, &mut spec, false);
        ok.then_some(spec)
    }

    /// The children of a `build` node into `spec`; false when one was refused.
    fn build_children(&mut self, node: &KdlNode, spec: &mut BuildSpec, named: bool) -> bool {
        let (allowed, single) = if named {
            (NAMED_BUILD_CHILDREN, NAMED_BUILD_SINGLE)
        } else {
            (BUILD_CHILDREN, BUILD_SINGLE)
        };
        let mut ok = true;
        let mut seen = BTreeMap::new();
        for c in children(node) {
            if !named && node_name(c) == "source" {
                let help = "write `build \"debian:hello\" extends=\"…\" { … }`; `source` is a \
                            child of a top-level `build \"name\"`";
                let p = problem(
                    "unknown_node",
                    "an image's build names its source as its argument",
                )
                .label(self.name_loc(c), "not a child of an image's `build`")
                .help(help);
                self.push(p);
                ok = false;
                continue;
            }
            if !self.known_child("build", c, allowed)
                || !self.first_of(&mut seen, single, "build", c)
            {
                ok = false;
                continue;
            }
            let name = node_name(c);
            // one of `allowed`, as the node's one argument; `props` the properties it takes
            let choice = |this: &mut Self, allowed: &[&str], props: &[&str]| {
                this.props_only(c, props);
                this.no_children(c);
                let v = this.single_arg(c).and_then(|e| this.string_of(e))?;
                if allowed.contains(&v.value.as_str()) {
                    Some(v)
                } else {
                    this.bad_value_at(
                        v.loc,
                        format!("`{}` is not a {name} of a build", v.value.escape_debug()),
                        Some(format!("`{name}` is {}", one_of(allowed))),
                    );
                    None
                }
            };
            if let Some((list, remove)) = List::of_child(name) {
                if remove && spec.extends.is_none() {
                    let message =
                        format!("`{name}` removes what a build inherits; this build extends none");
                    let help = format!(
                        "leave the entries out of `{}`, or write `build … extends=\"<named \
                         build>\"`",
                        list.name()
                    );
                    let p = problem("unexpected", message)
                        .label(self.name_loc(c), "nothing to remove from")
                        .help(help);
                    self.push(p);
                    ok = false;
                    continue;
                }
                let vals = if list == List::Deps {
                    self.packages_of(c)
                } else {
                    self.flags_of(c, list.name())
                };
                let edit = spec.list_mut(list);
                if remove {
                    edit.removed.extend(vals);
                } else {
                    edit.given.extend(vals);
                }
                continue;
            }
            match name {
                "source" => {
                    if let Some(s) = self.one_string(c) {
                        spec.source = self.build_source(s);
                    }
                }
                "compiler" => spec.compiler = choice(self, BUILD_COMPILERS, &[]),
                "type" => spec.build_type = choice(self, BUILD_TYPES, &[]),
                "link" => {
                    spec.link = choice(self, BUILD_LINKS, BUILD_LINK_PROPS);
                    let is_static = spec.link.as_ref().is_some_and(|l| l.value == "static");
                    spec.link_programs = self.link_programs(c, is_static);
                }
                "prefix" => {
                    if let Some(p) = self.one_string(c) {
                        if p.value.starts_with('/') && !p.value.contains(char::is_whitespace) {
                            spec.prefix = Some(p);
                        } else {
                            self.bad_value_at(
                                p.loc,
                                format!("`{}` is not an absolute path", p.value.escape_debug()),
                                Some("write e.g. `prefix \"/usr/local\"`".into()),
                            );
                        }
                    }
                }
                "strip" => {
                    self.props_only(c, &[]);
                    self.no_children(c);
                    if let Some(e) = self.single_arg(c) {
                        match e.value() {
                            KdlValue::Bool(v) => spec.strip = Some(Sp::new(*v, self.loc(e.span()))),
                            _ => self.wrong_type(
                                e,
                                "a boolean",
                                Some("write `strip #true` or `strip #false`".into()),
                            ),
                        }
                    }
                }
                _ => {
                    ok = false;
                    self.unknown_child("build", c, allowed)
                }
            }
        }
        ok
    }

    /// `programs="mariadbd …"` of a build's `link` (`is_static`: its argument is `"static"`):
    /// program file names, no paths.
    fn link_programs(&mut self, c: &KdlNode, is_static: bool) -> Vec<String> {
        let Some(e) = props(c).find(|e| prop_name(e) == "programs") else {
            return Vec::new();
        };
        let Some(s) = self.string_of(e) else {
            return Vec::new();
        };
        let names: Vec<String> = s.value.split_whitespace().map(String::from).collect();
        let bad = names.is_empty() || names.iter().any(|n| n.contains('/'));
        if bad {
            self.bad_value_at(
                s.loc,
                format!(
                    "`{}` is not a list of program names",
                    s.value.escape_debug()
                ),
                Some("write the installed programs' file names, e.g. programs=\"mariadbd\"".into()),
            );
        } else if !is_static {
            self.bad_value_at(
                s.loc,
                "`programs` names what is linked statically: it goes with `link \"static\"`"
                    .to_string(),
                Some("write `link \"static\" programs=\"…\"`".into()),
            );
        }
        names
    }

    /// A build's `deps` (or `deps-remove`): Debian packages, one per string.
    fn packages_of(&mut self, c: &KdlNode) -> Vec<Sp<String>> {
        let mut out = Vec::new();
        for p in self.strings(c) {
            if debian_word(&p, ":~=") {
                out.push(p);
            } else {
                self.bad_value_at(
                    p.loc,
                    format!("`{}` is not a Debian package", p.value.escape_debug()),
                    Some("write one package per string".into()),
                );
            }
        }
        out
    }

    /// A build's flags or options (`cflags`, `cmake`, … and their `-remove`), one per string.
    fn flags_of(&mut self, c: &KdlNode, list: &str) -> Vec<Sp<String>> {
        let mut out = Vec::new();
        for f in self.strings(c) {
            // each string is one argument: refuse what a shell would split or expand, so
            // what is recorded is what the compiler was given
            if f.value.is_empty()
                || f.value
                    .contains(|ch: char| ch.is_whitespace() || ch.is_control())
            {
                self.bad_value_at(
                    f.loc,
                    format!("`{}` is not one flag", f.value.escape_debug()),
                    Some(format!(
                        "write each flag as its own string: `{list} \"-O2\" \"-g\"`"
                    )),
                );
            } else {
                out.push(f);
            }
        }
        out
    }
}
