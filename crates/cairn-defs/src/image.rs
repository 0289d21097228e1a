//! Image definitions: the base of an image (a Debian root with packages) and each layer on
//! top of it (a command, environment variables, a file, a build from source), one step each.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Debian suite of an image whose `debian` node does not name one.
pub const DEFAULT_SUITE: &str = "bookworm";
/// Debian architecture of an image whose `debian` node does not name one.
pub const DEFAULT_ARCH: &str = "amd64";
/// debootstrap variant of an image whose `debian` node does not name one.
pub const DEFAULT_VARIANT: &str = "minbase";

/// The definition of one image step. Serialises as `{"stage":"base","debian":…,"packages":…}`
/// or `{"stage":"layer","layer":…}`, as image keys have always held it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum ImageDef {
    /// The root file system: a Debian bootstrap with packages installed.
    Base {
        /// Which Debian, defaults written in (so explicit and defaulted plans share a key).
        debian: Debian,
        /// Packages to install, sorted and without duplicates (`name` or `name=version`).
        packages: Vec<String>,
    },
    /// One layer on the parent step's image (mounted as the input `parent`).
    Layer {
        /// What the layer adds.
        layer: LayerDef,
    },
}

/// The Debian a base image is bootstrapped from. The mirror is machine-local configuration
/// and is not here (it is in no key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Debian {
    /// Release, e.g. `bookworm`.
    pub suite: String,
    /// Architecture, e.g. `amd64`.
    pub arch: String,
    /// debootstrap variant, e.g. `minbase`.
    pub variant: String,
}

impl Default for Debian {
    fn default() -> Self {
        Debian {
            suite: DEFAULT_SUITE.into(),
            arch: DEFAULT_ARCH.into(),
            variant: DEFAULT_VARIANT.into(),
        }
    }
}

/// What one image layer adds. Serialises as `{"run":{"command"}}`, `{"env":{"vars"}}` or
/// `{"file":{"digest","dest"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerDef {
    /// A shell command run in the image.
    Run {
        /// The command, as written in the plan.
        command: String,
    },
    /// Environment variables set for everything after this layer (and the server).
    Env {
        /// Name → value.
        vars: BTreeMap<String, String>,
    },
    /// A file copied into the image. The key holds its content, not its path in the plan's
    /// directory (the executor finds the file through the step's command files).
    File {
        /// blake3 of the file's content, hex.
        digest: String,
        /// Absolute path inside the image.
        dest: String,
    },
    /// A program built from source in a container, installed into the image.
    Build {
        /// What is built and how; every default written in (boxed: it is much bigger than
        /// the other layers).
        build: Box<SourceBuild>,
    },
}

/// Compiler of a build whose plan names none.
pub const DEFAULT_COMPILER: &str = "gcc";
/// Build type of a build whose plan names none.
pub const DEFAULT_BUILD_TYPE: &str = "release";
/// Linking of a build whose plan names none.
pub const DEFAULT_LINK: &str = "dynamic";
/// Installation prefix of a build whose plan names none.
pub const DEFAULT_PREFIX: &str = "/usr/local";

/// Where a build's source comes from. Serialises as `{"debian":{"package"}}` or
/// `{"tarball":{"digest","name"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceOrigin {
    /// A Debian source package (`apt-get source`, from the image's own mirror). The mirror's
    /// version of it is what is built (recorded in the manifest, not in the key, as for
    /// packages of a base image).
    Debian { package: String },
    /// A tarball from the plan's directory: its content's blake3 is in the key; the executor
    /// finds the file through the step's command files.
    Tarball { digest: String, name: String },
}

/// How a program is built from source. Every field is in the key: changing a flag rebuilds
/// this build and what depends on it, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceBuild {
    pub source: SourceOrigin,
    /// `gcc` or `clang` (from Debian).
    pub compiler: String,
    pub cflags: Vec<String>,
    pub cxxflags: Vec<String>,
    pub ldflags: Vec<String>,
    /// `release` or `debug`.
    pub build_type: String,
    /// `./configure` options.
    pub configure: Vec<String>,
    /// `cmake` options (non-empty: the build uses cmake).
    pub cmake: Vec<String>,
    /// `dynamic` or `static`.
    pub link: String,
    /// With `static`: the programs the build's own options link statically (each checked
    /// static, every other one dynamic); empty: every program is linked as `link` says.
    /// Absent from the key when empty, so builds without it keep their keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_programs: Vec<String>,
    pub strip: bool,
    /// Extra Debian packages for the build container, sorted.
    pub deps: Vec<String>,
    /// Installation prefix.
    pub prefix: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_as_keys_hold_it() {
        let base = ImageDef::Base {
            debian: Debian::default(),
            packages: vec!["procps".into()],
        };
        assert_eq!(
            serde_json::to_value(&base).unwrap(),
            json!({"stage": "base",
                   "debian": {"suite": "bookworm", "arch": "amd64", "variant": "minbase"},
                   "packages": ["procps"]})
        );
        let layers = [
            (
                LayerDef::Run {
                    command: "true".into(),
                },
                json!({"run": {"command": "true"}}),
            ),
            (
                LayerDef::Env {
                    vars: BTreeMap::from([("A".into(), "1".into())]),
                },
                json!({"env": {"vars": {"A": "1"}}}),
            ),
            (
                LayerDef::File {
                    digest: "ab".into(),
                    dest: "/x".into(),
                },
                json!({"file": {"digest": "ab", "dest": "/x"}}),
            ),
            (
                LayerDef::Build {
                    build: Box::new(SourceBuild {
                        source: SourceOrigin::Debian {
                            package: "hello".into(),
                        },
                        compiler: "gcc".into(),
                        cflags: vec!["-O2".into()],
                        cxxflags: vec![],
                        ldflags: vec![],
                        build_type: "release".into(),
                        configure: vec![],
                        cmake: vec![],
                        link: "static".into(),
                        static_programs: vec![],
                        strip: true,
                        deps: vec![],
                        prefix: "/usr/local".into(),
                    }),
                },
                json!({"build": {"build": {
                    "source": {"debian": {"package": "hello"}},
                    "compiler": "gcc", "cflags": ["-O2"], "cxxflags": [], "ldflags": [],
                    "build_type": "release", "configure": [], "cmake": [], "link": "static",
                    "strip": true, "deps": [], "prefix": "/usr/local"}}}),
            ),
        ];
        for (layer, want) in layers {
            let def = ImageDef::Layer { layer };
            let v = serde_json::to_value(&def).unwrap();
            assert_eq!(v, json!({"stage": "layer", "layer": want}));
            assert_eq!(serde_json::from_value::<ImageDef>(v).unwrap(), def);
        }
    }

    #[test]
    fn an_unknown_stage_is_an_error_naming_it() {
        let e = serde_json::from_value::<ImageDef>(json!({"stage": "roof"})).unwrap_err();
        assert!(e.to_string().contains("roof"), "{e}");
    }
}
