//! Builds from source as an image layer: a Debian source package (`apt-get source` from the
//! image's own mirror) or a tarball, configured with the plan's compiler and flags, built in a
//! container with a machine-local compiler cache, and installed into the next image.
//!
//! Three containers, each removed when done (also on failure or cancellation):
//! 1. **toolchain** (phase `fetch`), from the parent image, with network: `deb-src` lines made
//!    from the image's own `deb` lines (the mirror its base was bootstrapped from), the compiler,
//!    ccache, the build dependencies (`apt-get build-dep`, plus the plan's `deps`) and the
//!    unpacked source. Committed as `cairn/<source>-toolchain:<hash>` (e.g.
//!    `cairn/debian-hello-toolchain:…`; hash of the parent image and this script) and reused by every build of the same source on the same parent, so two
//!    flag sets download and unpack once. It is a cache, like ccache: removing it costs time only.
//! 2. **build** (phases `check-flags`, `configure`, `build`, `install`), from the toolchain,
//!    without network, with the host's ccache directory bind-mounted: each flag is first tried
//!    alone on an empty program, so a flag the compiler rejects is named; then `./configure`
//!    or `cmake`, `make -j<cpus>`, `make install DESTDIR=…`, `strip` if asked. The installed
//!    tree comes out as a tar.
//! 3. **install**: the tar is unpacked into a container from the parent (never started) and
//!    committed as the layer's image — the image gets the program, not the toolchain.
//!
//! The build's output is followed line by line: `==> cairn phase: <phase>` markers drive the
//! progress callback and the per-phase times; a failure returns the last lines of the
//! output (the compiler's own error). Nothing is committed unless every stage succeeded.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, DownloadFromContainerOptionsBuilder, LogsOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use cairn_defs::image::{SourceBuild, SourceOrigin};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::docker::image::layer::{commit, commit_labelled, tar_files, LayerFile, LayerImage};
use crate::docker::{
    create_build_container, image_ref, labels, nonce, removing_container, wait_exit, Docker,
    DockerError, Result, LABEL_RUN,
};
use crate::elf::{self, ElfFacts};

/// Label holding a built layer's [`BuildFacts`] (JSON), so a reused image still says how it was built.
pub const LABEL_BUILD: &str = "cairn.build";
/// Where the host's compiler cache is mounted in the build container.
const CCACHE_MOUNT: &str = "/cairn-ccache";
/// Exit code of the build script when the compiler rejects a flag.
const REJECTED_FLAG_EXIT: i64 = 97;
/// Lines of output kept for an error.
const TAIL_LINES: usize = 40;

/// What to build and how: the step's definition (the plan's `build` node, defaults filled
/// in, as its key holds it) and, for a tarball build, the tarball's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRecipe {
    pub def: SourceBuild,
    /// The tarball of a `SourceOrigin::Tarball` build (the executor reads it from the step's
    /// files).
    pub tarball: Option<Vec<u8>>,
}

/// Callbacks of a running build.
pub struct BuildHooks<'a> {
    /// Called with each phase as it starts: `fetch`, `check-flags`, `configure`, `build`, `install`.
    pub on_phase: &'a mut dyn FnMut(&str),
    /// Polled about once a second: true stops the build (its containers are removed).
    pub cancelled: &'a dyn Fn() -> bool,
}

/// One ELF file the build installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuiltBinary {
    /// Absolute path in the image.
    pub path: String,
    pub bytes: u64,
    /// blake3 of the file, hex.
    pub digest: String,
    #[serde(flatten)]
    pub elf: ElfFacts,
}

/// What a source build made and how: recorded in the image's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildFacts {
    /// `debian:hello` or `tarball:<name>`.
    pub source: String,
    /// The Debian source version built (`dpkg-parsechangelog`), if a Debian package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_version: Option<String>,
    pub compiler: String,
    /// First line of `<compiler> --version` in the build container.
    pub compiler_version: String,
    pub cflags: Vec<String>,
    pub cxxflags: Vec<String>,
    pub ldflags: Vec<String>,
    pub build_type: String,
    /// `configure` or `cmake`.
    pub build_system: String,
    /// The options given to it.
    pub options: Vec<String>,
    pub link: String,
    pub strip: bool,
    pub prefix: String,
    // How this run of the build went: they differ on every rebuild of the same content, so
    // they are not written to the manifest (the image's output, read into every key
    // downstream) but to the record's `extra.source_build`. Manifests written before keep
    // them and still read.
    /// True if the toolchain image (compiler, build dependencies, unpacked source) existed.
    #[serde(default, skip_serializing)]
    pub toolchain_reused: bool,
    /// Seconds per phase.
    #[serde(default, skip_serializing)]
    pub phases_s: BTreeMap<String, f64>,
    /// Wall time of the whole build, seconds.
    #[serde(default, skip_serializing)]
    pub build_s: f64,
    /// Compilations served from the compiler cache, and compiled.
    #[serde(default, skip_serializing)]
    pub ccache_hits: u64,
    #[serde(default, skip_serializing)]
    pub ccache_misses: u64,
    /// The ELF files installed, sorted by path.
    pub binaries: Vec<BuiltBinary>,
}

impl BuildFacts {
    /// What was built, without how this run of the build went (see the fields).
    pub fn content(&self) -> BuildFacts {
        BuildFacts {
            toolchain_reused: false,
            phases_s: BTreeMap::new(),
            build_s: 0.0,
            ccache_hits: 0,
            ccache_misses: 0,
            ..self.clone()
        }
    }
}

/// A built layer and what went into it.
#[derive(Debug, Clone)]
pub struct SourceBuildOutcome {
    pub layer: LayerImage,
    /// `None` when the layer image existed already (nothing was built).
    pub facts: Option<BuildFacts>,
}

/// `'…'`-quoted for sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn sh_words(v: &[String]) -> String {
    v.iter().map(|s| sh_quote(s)).collect::<Vec<_>>().join(" ")
}

impl BuildRecipe {
    fn compilers(&self) -> (&'static str, &'static str) {
        match self.def.compiler.as_str() {
            "clang" => ("clang", "clang++"),
            _ => ("gcc", "g++"),
        }
    }

    fn uses_cmake(&self) -> bool {
        !self.def.cmake.is_empty()
    }

    /// `debian:<pkg>` or `tarball:<name>`.
    pub fn source_label(&self) -> String {
        match &self.def.source {
            SourceOrigin::Debian { package } => format!("debian:{package}"),
            SourceOrigin::Tarball { name, .. } => format!("tarball:{name}"),
        }
    }

    /// CFLAGS/CXXFLAGS as the build gets them: a debug build adds `-g`.
    fn effective(&self, flags: &[String]) -> Vec<String> {
        let mut v = flags.to_vec();
        if self.def.build_type == "debug" && !v.iter().any(|f| f.starts_with("-g")) {
            v.push("-g".into());
        }
        v
    }

    fn effective_ldflags(&self) -> Vec<String> {
        let mut v = self.def.ldflags.clone();
        // named programs are linked statically by the build's own options (e.g. MariaDB's
        // WITH_MYSQLD_LDFLAGS): -static for all would break its shared libraries
        let every_program = self.def.static_programs.is_empty();
        if self.def.link == "static" && every_program && !v.iter().any(|f| f == "-static") {
            v.push("-static".into());
        }
        v
    }

    /// The toolchain container's script (phase `fetch`).
    pub fn toolchain_script(&self) -> String {
        let (cc, _) = self.compilers();
        let mut pkgs: Vec<&str> = vec![
            "build-essential",
            "ccache",
            "dpkg-dev",
            "binutils",
            "ca-certificates",
            "xz-utils",
            "bzip2",
        ];
        if cc == "clang" {
            pkgs.push("clang");
        }
        if self.uses_cmake() {
            pkgs.push("cmake");
        }
        let mut s = String::from(
            "set -eu\nexport DEBIAN_FRONTEND=noninteractive\necho '==> cairn phase: fetch'\n",
        );
        // deb-src from the image's own deb lines: the mirror and suite of its base image
        s.push_str(
            "for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do \
             [ -f \"$f\" ] && sed -n 's/^deb /deb-src /p' \"$f\"; done \
             > /etc/apt/sources.list.d/cairn-deb-src.list || true\n\
             for f in /etc/apt/sources.list.d/*.sources; do [ -f \"$f\" ] && \
             sed -i 's/^Types: deb$/Types: deb deb-src/' \"$f\"; done; true\n\
             apt-get update -q\n",
        );
        s.push_str(&format!(
            "apt-get install -y -q --no-install-recommends {} {}\n",
            pkgs.join(" "),
            sh_words(&self.def.deps)
        ));
        s.push_str("mkdir -p /cairn-build/src\ncd /cairn-build/src\n");
        match &self.def.source {
            SourceOrigin::Debian { package: p } => {
                let name = p.split('=').next().unwrap_or(p);
                s.push_str(&format!(
                    "apt-get build-dep -y -q --no-install-recommends {n}\napt-get source -q {p}\n",
                    n = sh_quote(name),
                    p = sh_quote(p)
                ));
            }
            SourceOrigin::Tarball { name, .. } => {
                s.push_str(&format!("tar xf /cairn-build/{}\n", sh_quote(name)));
            }
        }
        s.push_str(
            "n=$(find /cairn-build/src -mindepth 1 -maxdepth 1 -type d | wc -l)\n\
             [ \"$n\" = 1 ] || { echo \"the source unpacked into $n directories, not one\"; exit 1; }\n\
             rm -rf /var/lib/apt/lists/*\n",
        );
        s
    }

    /// The build container's script (phases `check-flags` … `install`).
    pub fn build_script(&self) -> String {
        let (cc, cxx) = self.compilers();
        let cflags = self.effective(&self.def.cflags);
        let cxxflags = self.effective(&self.def.cxxflags);
        let ldflags = self.effective_ldflags();
        let mut s = format!(
            "set -eu\nphase() {{ echo \"==> cairn phase: $1\"; }}\n\
             export CCACHE_DIR={CCACHE_MOUNT} CCACHE_BASEDIR=/cairn-build \
             CCACHE_STATSLOG=/tmp/cairn-ccache.log CCACHE_NOHASHDIR=1\n\
             echo \"==> cairn compiler: $({cc} --version | head -n1)\"\n\
             echo \"==> cairn long-bit: $(getconf LONG_BIT)\"\n\
             phase check-flags\ncd /tmp\n\
             printf 'int main(void){{return 0;}}\\n' > p.c\n\
             printf 'int main(){{return 0;}}\\n' > p.cc\n\
             reject() {{ echo \"==> cairn rejected-flag: $1 $2\"; cat p.out; exit {REJECTED_FLAG_EXIT}; }}\n"
        );
        for f in &self.def.cflags {
            s.push_str(&format!(
                "{cc} -Werror {q} -c p.c -o p.o >p.out 2>&1 || reject cflags {q}\n",
                q = sh_quote(f)
            ));
        }
        for f in &self.def.cxxflags {
            s.push_str(&format!(
                "{cxx} -Werror {q} -c p.cc -o p.o >p.out 2>&1 || reject cxxflags {q}\n",
                q = sh_quote(f)
            ));
        }
        for f in &self.def.ldflags {
            s.push_str(&format!(
                "{cc} {q} p.c -o p >p.out 2>&1 || reject ldflags {q}\n",
                q = sh_quote(f)
            ));
        }
        if self.def.link == "static" {
            s.push_str(&format!(
                "{cc} -static p.c -o p >p.out 2>&1 || reject link -static\n"
            ));
        }
        s.push_str("src=$(find /cairn-build/src -mindepth 1 -maxdepth 1 -type d)\ncd \"$src\"\n");
        if matches!(self.def.source, SourceOrigin::Debian { .. }) {
            s.push_str("echo \"==> cairn source-version: $(dpkg-parsechangelog -S Version)\"\n");
        }
        s.push_str("phase configure\n");
        let export = |name: &str, v: &[String]| {
            if v.is_empty() {
                String::new()
            } else {
                format!("export {name}={}\n", sh_quote(&v.join(" ")))
            }
        };
        s.push_str(&export("CFLAGS", &cflags));
        s.push_str(&export("CXXFLAGS", &cxxflags));
        s.push_str(&export("LDFLAGS", &ldflags));
        let prefix = sh_quote(&self.def.prefix);
        if self.uses_cmake() {
            let bt = if self.def.build_type == "debug" {
                "Debug"
            } else {
                "Release"
            };
            // cmake appends its build type's own flags (Release: -O3 -DNDEBUG) after CFLAGS,
            // which would override the plan's -O level: a release build with flags gets the
            // plan's flags there instead, keeping -DNDEBUG
            let mut type_flags = String::new();
            if self.def.build_type == "release" {
                for (lang, v) in [("C", &cflags), ("CXX", &cxxflags)] {
                    if !v.is_empty() {
                        type_flags.push(' ');
                        type_flags.push_str(&sh_quote(&format!(
                            "-DCMAKE_{lang}_FLAGS_RELEASE={} -DNDEBUG",
                            v.join(" ")
                        )));
                    }
                }
            }
            s.push_str(&format!(
                "mkdir -p cairn-obj\ncd cairn-obj\n\
                 cmake .. -DCMAKE_INSTALL_PREFIX={prefix} -DCMAKE_BUILD_TYPE={bt}{type_flags} \
                 -DCMAKE_C_COMPILER={cc} -DCMAKE_CXX_COMPILER={cxx} \
                 -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache {}\n",
                sh_words(&self.def.cmake)
            ));
        } else {
            s.push_str(&format!(
                "[ -x ./configure ] || {{ echo 'the source has no ./configure (give `cmake` options for a cmake build)'; exit 1; }}\n\
                 ./configure --prefix={prefix} CC='ccache {cc}' CXX='ccache {cxx}' {}\n",
                sh_words(&self.def.configure)
            ));
        }
        s.push_str(
            "phase build\nmake -j\"$(nproc)\"\nphase install\nmake install DESTDIR=/cairn-out\n",
        );
        if self.def.strip {
            s.push_str(
                "find /cairn-out -type f | while read -r f; do \
                 if [ \"$(head -c4 \"$f\" | od -An -c | tr -d ' ')\" = '177ELF' ]; then \
                 strip --strip-unneeded \"$f\"; fi; done\n",
            );
        }
        s.push_str(&format!("(root=; cd /cairn-out && {MERGE_LINKED_DIRS})\n"));
        s.push_str(
            "tar -C /cairn-out -cf /cairn-install.tar .\n\
             echo \"==> cairn ccache: $(grep -c 'cache_hit' /tmp/cairn-ccache.log || true) \
             $(grep -c 'cache_miss' /tmp/cairn-ccache.log || true)\"\n",
        );
        s
    }
}

/// Run in the install tree (`/cairn-out`, as the working directory): a directory of the tree
/// that is a symbolic link in the image (merged /usr: `/lib` → `usr/lib`, `/bin`, `/sbin`;
/// `/var/run` → `/run`) moves to where the link points. Unpacked as it is, the tree's real
/// directory would replace the image's link — a `lib/systemd/` of MariaDB's DEB layout
/// replaced `/lib` and with it the dynamic loader's path, so nothing in the image could run
/// (`exec /bin/sh: no such file or directory`). The build container is made from the image's
/// parent, so its own root has the image's links (`$root` is empty there; a test sets it).
/// Parents come before their children (sorted), and a directory moved with its parent is
/// skipped.
const MERGE_LINKED_DIRS: &str = "find . -mindepth 1 -type d | sort | while read -r d; do \
     [ -d \"$d\" ] || continue; p=\"$root${d#.}\"; \
     if [ -L \"$p\" ]; then t=$(readlink -f \"$p\"); t=\"${t#\"$root\"}\"; mkdir -p \".$t\"; \
     cp -a \"$d\"/. \".$t\"/ && rm -rf \"$d\" || exit 1; fi; done";

/// What the build's output said, besides its phases.
#[derive(Debug, Default)]
struct Markers {
    compiler_version: String,
    source_version: Option<String>,
    rejected: Option<(String, String)>,
    ccache: (u64, u64),
    /// `getconf LONG_BIT` in the build container: the word size its programs should have.
    long_bit: Option<u8>,
    phases: Vec<(String, Instant)>,
}

impl Markers {
    fn take(&mut self, line: &str, on_phase: &mut dyn FnMut(&str)) {
        let Some(m) = line.strip_prefix("==> cairn ") else {
            return;
        };
        if let Some(p) = m.strip_prefix("phase: ") {
            self.phases.push((p.trim().to_string(), Instant::now()));
            on_phase(p.trim());
        } else if let Some(v) = m.strip_prefix("compiler: ") {
            self.compiler_version = v.trim().to_string();
        } else if let Some(v) = m.strip_prefix("source-version: ") {
            self.source_version = Some(v.trim().to_string());
        } else if let Some(v) = m.strip_prefix("rejected-flag: ") {
            let (what, flag) = v.split_once(' ').unwrap_or((v, ""));
            self.rejected = Some((what.to_string(), flag.to_string()));
        } else if let Some(v) = m.strip_prefix("long-bit: ") {
            self.long_bit = v.trim().parse().ok();
        } else if let Some(v) = m.strip_prefix("ccache: ") {
            let mut n = v.split_whitespace().map(|x| x.parse().unwrap_or(0));
            self.ccache = (n.next().unwrap_or(0), n.next().unwrap_or(0));
        }
    }

    fn current_phase(&self) -> &str {
        self.phases.last().map_or("start", |(p, _)| p.as_str())
    }
}

/// `cairn/<source>-toolchain:<hash>`: named after the source, not the image, so the images
/// of every flag set of one source on one parent share it.
pub fn toolchain_ref(recipe: &BuildRecipe, hash: &str) -> String {
    image_ref(&format!("{}-toolchain", recipe.source_label()), hash)
}

/// One toolchain build at a time per toolchain image (two flag sets of one source share it).
fn toolchain_lock(reference: &str) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut m = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    m.entry(reference.to_string()).or_default().clone()
}

impl Docker {
    /// The facts a built layer image carries in its [`LABEL_BUILD`] label, if any.
    pub fn build_facts_of(&self, reference: &str) -> Result<Option<BuildFacts>> {
        let img = self
            .block_on(self.inner.api.inspect_image(reference))
            .map_err(DockerError::api(format!("inspect image {reference}")))?;
        let label = img
            .config
            .and_then(|c| c.labels)
            .and_then(|mut l| l.remove(LABEL_BUILD));
        Ok(label.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// Build `recipe` on `parent` and commit the installed program as `cairn/<name>:<tag from
    /// key>` (reused if it exists with this key). `ccache_dir` is the host's compiler cache.
    pub fn source_build_layer(
        &self,
        parent: &str,
        name: &str,
        key: &str,
        recipe: &BuildRecipe,
        ccache_dir: &Path,
        hooks: BuildHooks<'_>,
    ) -> Result<SourceBuildOutcome> {
        let reference = image_ref(name, key);
        if let Some(id) = self.image_with_key(&reference, key)? {
            let facts = self.build_facts_of(&reference)?;
            return Ok(SourceBuildOutcome {
                layer: LayerImage {
                    id,
                    reference,
                    built: false,
                },
                facts,
            });
        }
        let BuildHooks {
            on_phase,
            cancelled,
        } = hooks;
        let t0 = Instant::now();
        std::fs::create_dir_all(ccache_dir)
            .map_err(DockerError::io(format!("create {}", ccache_dir.display())))?;
        let ccache_dir = ccache_dir
            .canonicalize()
            .map_err(DockerError::io(format!("resolve {}", ccache_dir.display())))?;

        // 1. toolchain: compiler, build dependencies, unpacked source
        on_phase("fetch");
        let parent_id = self
            .image_id(parent)?
            .ok_or_else(|| DockerError::Invalid(format!("parent image {parent} is missing")))?;
        let tool_script = recipe.toolchain_script();
        let mut h = blake3::Hasher::new();
        h.update(parent_id.as_bytes());
        h.update(b"\0");
        h.update(tool_script.as_bytes());
        if let Some(contents) = &recipe.tarball {
            h.update(blake3::hash(contents).as_bytes());
        }
        let tool_key = h.finalize().to_hex()[..32].to_string();
        let tool_ref = toolchain_ref(recipe, &tool_key);
        let toolchain_reused = {
            let lock = toolchain_lock(&tool_ref);
            let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
            if self.image_with_key(&tool_ref, &tool_key)?.is_some() {
                true
            } else {
                let upload = match (&recipe.def.source, &recipe.tarball) {
                    (SourceOrigin::Tarball { name, .. }, Some(contents)) => {
                        Some(tar_files(&[LayerFile {
                            path: format!("cairn-build/{name}"),
                            contents: contents.clone(),
                            mode: 0o644,
                        }])?)
                    }
                    _ => None,
                };
                let mut markers = Markers::default();
                self.block_on(async {
                    let api = &self.inner.api;
                    let cmd = vec!["/bin/sh".into(), "-c".into(), tool_script.clone()];
                    let cid =
                        create_build_container(api, &self.run_id, parent, cmd, Vec::new(), true)
                            .await?;
                    let r = async {
                        if let Some(archive) = upload {
                            let opts = UploadToContainerOptionsBuilder::new().path("/").build();
                            api.upload_to_container(
                                &cid,
                                Some(opts),
                                bollard::body_full(archive.into()),
                            )
                            .await
                            .map_err(DockerError::api("upload the source tarball"))?;
                        }
                        let (code, tail) =
                            run_followed(api, &cid, &mut markers, &mut |_| {}, cancelled).await?;
                        if code != 0 {
                            return Err(failed_in("fetch", code, &tail));
                        }
                        commit(api, &cid, parent, &tool_ref, &tool_key).await
                    }
                    .await;
                    removing_container(api, &cid, r).await
                })?;
                false
            }
        };

        // 2. build: check the flags, configure, make, install into a tree, tar it
        let mut markers = Markers::default();
        let build_script = recipe.build_script();
        let install_tar = self.block_on(async {
            let api = &self.inner.api;
            let cid = create_with_ccache(api, &self.run_id, &tool_ref, &build_script, &ccache_dir)
                .await?;
            let r = async {
                let (code, tail) =
                    run_followed(api, &cid, &mut markers, on_phase, cancelled).await?;
                if code == REJECTED_FLAG_EXIT {
                    if let Some((what, flag)) = &markers.rejected {
                        return Err(DockerError::Invalid(format!(
                            "the compiler ({}) rejects the {what} flag `{flag}`; its message:\n{}",
                            recipe.def.compiler,
                            rejection_message(&tail)
                        )));
                    }
                }
                if code != 0 {
                    return Err(failed_in(markers.current_phase(), code, &tail));
                }
                download_file(api, &cid, "/cairn-install.tar").await
            }
            .await;
            removing_container(api, &cid, r).await
        })?;
        let binaries = binaries_in(&install_tar)?;
        // the variant asked for, confirmed in the binaries before anything is committed
        verify_binaries(recipe, &binaries, markers.long_bit).map_err(DockerError::Invalid)?;

        let end = Instant::now();
        let mut phases_s = BTreeMap::new();
        let fetch_end = markers.phases.first().map_or(end, |(_, t)| *t);
        phases_s.insert(
            "fetch".to_string(),
            fetch_end.duration_since(t0).as_secs_f64(),
        );
        for (i, (p, t)) in markers.phases.iter().enumerate() {
            let until = markers.phases.get(i + 1).map_or(end, |(_, t)| *t);
            phases_s.insert(p.clone(), until.duration_since(*t).as_secs_f64());
        }
        let (build_system, options) = if recipe.uses_cmake() {
            ("cmake", recipe.def.cmake.clone())
        } else {
            ("configure", recipe.def.configure.clone())
        };
        let facts = BuildFacts {
            source: recipe.source_label(),
            source_version: markers.source_version,
            compiler: recipe.def.compiler.clone(),
            compiler_version: markers.compiler_version,
            cflags: recipe.effective(&recipe.def.cflags),
            cxxflags: recipe.effective(&recipe.def.cxxflags),
            ldflags: recipe.effective_ldflags(),
            build_type: recipe.def.build_type.clone(),
            build_system: build_system.into(),
            options,
            link: recipe.def.link.clone(),
            strip: recipe.def.strip,
            prefix: recipe.def.prefix.clone(),
            toolchain_reused,
            phases_s,
            build_s: t0.elapsed().as_secs_f64(),
            ccache_hits: markers.ccache.0,
            ccache_misses: markers.ccache.1,
            binaries,
        };
        let facts_json = serde_json::to_string(&facts).expect("serialises");
        // 3. install: the tree into a container from the parent, committed as the layer
        let id = self.block_on(async {
            let api = &self.inner.api;
            let cmd = vec!["/bin/true".to_string()];
            let cid =
                create_build_container(api, &self.run_id, parent, cmd, Vec::new(), false).await?;
            let r = async {
                let opts = UploadToContainerOptionsBuilder::new().path("/").build();
                api.upload_to_container(&cid, Some(opts), bollard::body_full(install_tar.into()))
                    .await
                    .map_err(DockerError::api("upload the installed tree"))?;
                commit_labelled(
                    api,
                    &cid,
                    parent,
                    &reference,
                    key,
                    &[(LABEL_BUILD, facts_json)],
                )
                .await
            }
            .await;
            removing_container(api, &cid, r).await
        })?;

        tracing::info!(
            "cairn: source build {reference} ({}) in {:.1?}",
            facts.source,
            t0.elapsed()
        );
        Ok(SourceBuildOutcome {
            layer: LayerImage {
                id,
                reference,
                built: true,
            },
            facts: Some(facts),
        })
    }
}

fn failed_in(phase: &str, code: i64, tail: &str) -> DockerError {
    DockerError::Invalid(format!(
        "the source build failed in its {phase} phase (exit code {code}); last lines of its output:\n{tail}"
    ))
}

/// The compiler's own lines after the rejection marker.
fn rejection_message(tail: &str) -> String {
    let after: Vec<&str> = tail
        .lines()
        .skip_while(|l| !l.starts_with("==> cairn rejected-flag"))
        .skip(1)
        .collect();
    after.join("\n")
}

/// A build container from `image` running `script`, without network, with `ccache_dir`
/// mounted at [`CCACHE_MOUNT`].
async fn create_with_ccache(
    api: &bollard::Docker,
    run_id: &str,
    image: &str,
    script: &str,
    ccache_dir: &Path,
) -> Result<String> {
    let name = format!("cairn-build-{}", nonce());
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        cmd: Some(vec!["/bin/sh".into(), "-c".into(), script.to_string()]),
        user: Some("root".into()),
        labels: Some(labels([(LABEL_RUN, run_id)])),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            binds: Some(vec![format!("{}:{CCACHE_MOUNT}", ccache_dir.display())]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let opts = CreateContainerOptionsBuilder::new().name(&name).build();
    let created = api
        .create_container(Some(opts), body)
        .await
        .map_err(DockerError::api(format!(
            "create build container from {image}"
        )))?;
    Ok(created.id)
}

/// Start `cid`, follow its output line by line into `markers` (phases to `on_phase`) until it
/// exits; the exit code and the last lines. `cancelled` stops it (an error).
async fn run_followed(
    api: &bollard::Docker,
    cid: &str,
    markers: &mut Markers,
    on_phase: &mut dyn FnMut(&str),
    cancelled: &dyn Fn() -> bool,
) -> Result<(i64, String)> {
    api.start_container(cid, None)
        .await
        .map_err(DockerError::api("start the build container"))?;
    let opts = LogsOptionsBuilder::new()
        .follow(true)
        .stdout(true)
        .stderr(true)
        .build();
    let mut logs = api.logs(cid, Some(opts));
    let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL_LINES + 1);
    let mut partial = String::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut take = |text: &str, partial: &mut String, tail: &mut VecDeque<String>| {
        partial.push_str(text);
        while let Some(i) = partial.find('\n') {
            let line: String = partial.drain(..=i).collect();
            let line = line.trim_end_matches(['\n', '\r']).to_string();
            markers.take(&line, on_phase);
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    };
    loop {
        tokio::select! {
            chunk = logs.next() => match chunk {
                None => break,
                Some(Ok(out)) => {
                    let text = String::from_utf8_lossy(&out.into_bytes()).into_owned();
                    take(&text, &mut partial, &mut tail);
                }
                Some(Err(e)) => return Err(DockerError::api("follow the build's output")(e)),
            },
            _ = tick.tick() => {
                if cancelled() {
                    return Err(DockerError::Invalid("the build was cancelled".into()));
                }
            }
        }
    }
    if !partial.is_empty() {
        let rest = std::mem::take(&mut partial);
        take(&format!("{rest}\n"), &mut partial, &mut tail);
    }
    let code = wait_exit(api, cid).await?;
    Ok((code, Vec::from(tail).join("\n")))
}

/// The content of the single file `path` in container `cid` (the engine sends a tar of it).
async fn download_file(api: &bollard::Docker, cid: &str, path: &str) -> Result<Vec<u8>> {
    let opts = DownloadFromContainerOptionsBuilder::new()
        .path(path)
        .build();
    let mut s = api.download_from_container(cid, Some(opts));
    let mut archive = Vec::new();
    while let Some(chunk) = s.next().await {
        archive.extend_from_slice(&chunk.map_err(DockerError::api(format!("download {path}")))?);
    }
    let mut a = tar::Archive::new(archive.as_slice());
    let entries = a
        .entries()
        .map_err(DockerError::io("read the downloaded tar"))?;
    for e in entries {
        let mut e = e.map_err(DockerError::io("read the downloaded tar"))?;
        if e.header().entry_type().is_file() {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut out)
                .map_err(DockerError::io(format!("read {path} from the tar")))?;
            return Ok(out);
        }
    }
    Err(DockerError::Invalid(format!(
        "the build container has no {path}"
    )))
}

/// Whether the programs installed (ELF files under a `bin/` or `sbin/` directory) are the
/// variant `recipe` asked for: word size (of the build container's userland), static or
/// dynamic, stripped or not, with debug information for a debug build. The error names the
/// file and what it is instead.
pub fn verify_binaries(
    recipe: &BuildRecipe,
    binaries: &[BuiltBinary],
    word_size: Option<u8>,
) -> std::result::Result<(), String> {
    if binaries.is_empty() {
        return Err("the build installed no ELF file (no program or library)".into());
    }
    let programs: Vec<&BuiltBinary> = binaries
        .iter()
        .filter(|b| b.path.contains("/bin/") || b.path.contains("/sbin/"))
        .collect();
    for b in binaries {
        if let Some(w) = word_size {
            if b.elf.word_size != w {
                return Err(format!(
                    "{} is {}-bit, but the image's programs are {w}-bit",
                    b.path, b.elf.word_size
                ));
            }
        }
        if recipe.def.strip && !b.elf.stripped {
            return Err(format!(
                "`strip #true` was asked, but {} still has a symbol table",
                b.path
            ));
        }
    }
    let named = &recipe.def.static_programs;
    if let Some(missing) = named
        .iter()
        .find(|n| !programs.iter().any(|b| file_name(&b.path) == n.as_str()))
    {
        return Err(format!(
            "`link \"static\" programs=…` names {missing}, but the build installed no program of that name"
        ));
    }
    for b in programs {
        // with named programs, each is static and every other one dynamic
        let link = match named.is_empty() {
            true => recipe.def.link.as_str(),
            false if named.iter().any(|n| n == file_name(&b.path)) => "static",
            false => "dynamic",
        };
        match (link, &b.elf.interpreter) {
            ("static", Some(interp)) => {
                return Err(format!(
                "`link \"static\"` was asked, but {} is dynamically linked (interpreter {interp})",
                b.path
            ))
            }
            ("dynamic", None) if !named.is_empty() => {
                return Err(format!(
                "`link \"static\" programs=\"{}\"` leaves {} dynamic, but it is statically linked",
                named.join(" "),
                b.path
            ))
            }
            ("dynamic", None) => {
                return Err(format!(
                    "`link \"dynamic\"` was asked, but {} is statically linked",
                    b.path
                ))
            }
            _ => {}
        }
        if !recipe.def.strip && b.elf.stripped {
            return Err(format!(
                "{} has no symbol table although `strip` was not asked: its install stripped it",
                b.path
            ));
        }
        if recipe.def.build_type == "debug" && !b.elf.debug_info {
            return Err(format!(
                "`type \"debug\"` was asked, but {} has no debug information",
                b.path
            ));
        }
    }
    Ok(())
}

/// The last component of an installed file's path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The ELF files in an install tree's tar, with their facts, sorted by path.
pub fn binaries_in(install_tar: &[u8]) -> Result<Vec<BuiltBinary>> {
    let mut a = tar::Archive::new(install_tar);
    let mut out = Vec::new();
    let entries = a
        .entries()
        .map_err(DockerError::io("read the install tree"))?;
    for e in entries {
        let mut e = e.map_err(DockerError::io("read the install tree"))?;
        if !e.header().entry_type().is_file() {
            continue;
        }
        let path = e
            .path()
            .map_err(DockerError::io("read the install tree"))?
            .to_string_lossy()
            .into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes)
            .map_err(DockerError::io(format!("read {path}")))?;
        if !elf::is_elf(&bytes) {
            continue;
        }
        let facts = elf::inspect(&bytes)
            .map_err(|e| DockerError::Invalid(format!("installed file {path}: {e}")))?;
        out.push(BuiltBinary {
            path: format!("/{}", path.trim_start_matches("./").trim_start_matches('/')),
            bytes: bytes.len() as u64,
            digest: blake3::hash(&bytes).to_hex().to_string(),
            elf: facts,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe() -> BuildRecipe {
        BuildRecipe {
            def: SourceBuild {
                source: SourceOrigin::Debian {
                    package: "hello".into(),
                },
                compiler: "gcc".into(),
                cflags: vec!["-O2".into()],
                cxxflags: vec![],
                ldflags: vec!["-Wl,-O1".into()],
                build_type: "release".into(),
                configure: vec!["--disable-nls".into()],
                cmake: vec![],
                link: "static".into(),
                static_programs: vec![],
                strip: true,
                deps: vec![],
                prefix: "/usr/local".into(),
            },
            tarball: None,
        }
    }

    /// A tree holding `lib/…` and `var/run/…` unpacks into an image where `/lib` and
    /// `/var/run` are links: their content moves to where the links point, nothing else moves.
    #[test]
    fn directories_that_are_links_in_the_image_move_to_their_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, out) = (tmp.path().join("root"), tmp.path().join("out"));
        for d in ["usr/lib", "run", "var"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
        std::os::unix::fs::symlink("/run", root.join("var/run")).unwrap();
        for f in [
            "lib/systemd/system/mariadb.service",
            "var/run/mysqld/.keep",
            "usr/sbin/mariadbd",
            "usr/lib/mysql/plugin/a.so",
        ] {
            let p = out.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, f).unwrap();
        }
        // an absolute link inside the root is the root's, as in the build container
        std::fs::remove_file(root.join("var/run")).unwrap();
        std::os::unix::fs::symlink(root.join("run"), root.join("var/run")).unwrap();
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "set -e; root='{}'; cd '{}' && {MERGE_LINKED_DIRS}",
                root.display(),
                out.display()
            ))
            .status()
            .unwrap();
        assert!(st.success());
        let mut files: Vec<String> = walk(&out);
        files.sort();
        assert_eq!(
            files,
            [
                "run/mysqld/.keep",
                "usr/lib/mysql/plugin/a.so",
                "usr/lib/systemd/system/mariadb.service",
                "usr/sbin/mariadbd",
            ]
        );
        assert!(!out.join("lib").exists() && !out.join("var/run").exists());
    }

    /// Every regular file under `dir`, relative to it.
    fn walk(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        out
    }

    #[test]
    fn scripts_carry_every_flag_quoted() {
        let r = recipe();
        let t = r.toolchain_script();
        assert!(
            t.contains("apt-get build-dep -y -q --no-install-recommends 'hello'"),
            "{t}"
        );
        assert!(t.contains("apt-get source -q 'hello'"));
        assert!(t.contains("deb-src"));
        let b = r.build_script();
        assert!(b.contains("gcc -Werror '-O2' -c p.c"), "{b}");
        assert!(b.contains("reject ldflags '-Wl,-O1'"));
        assert!(b.contains("gcc -static p.c"));
        assert!(b.contains("export LDFLAGS='-Wl,-O1 -static'"));
        assert!(b.contains("./configure --prefix='/usr/local' CC='ccache gcc'"));
        assert!(b.contains("'--disable-nls'"));
        assert!(b.contains("strip --strip-unneeded"));
        let mut d = recipe();
        d.def.build_type = "debug".into();
        d.def.strip = false;
        d.def.cmake = vec!["-DX=1".into()];
        d.def.configure.clear();
        let b = d.build_script();
        assert!(b.contains("export CFLAGS='-O2 -g'"), "{b}");
        assert!(b.contains("-DCMAKE_BUILD_TYPE=Debug"));
        assert!(!b.contains("FLAGS_RELEASE"));
        d.def.build_type = "release".into();
        let b = d.build_script();
        assert!(b.contains("'-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG'"), "{b}");
        assert!(b.contains("'-DX=1'"));
        assert!(!b.contains("strip --strip-unneeded"));
        assert!(d.toolchain_script().contains(" cmake "));
    }

    #[test]
    fn markers_from_output() {
        let mut m = Markers::default();
        let mut seen = Vec::new();
        for l in [
            "==> cairn compiler: gcc (Debian 12.2.0-14) 12.2.0",
            "==> cairn phase: configure",
            "checking for gcc... gcc",
            "==> cairn rejected-flag: cflags -fbogus",
            "==> cairn ccache: 3 5",
        ] {
            m.take(l, &mut |p| seen.push(p.to_string()));
        }
        assert_eq!(seen, ["configure"]);
        assert_eq!(m.compiler_version, "gcc (Debian 12.2.0-14) 12.2.0");
        assert_eq!(m.rejected, Some(("cflags".into(), "-fbogus".into())));
        assert_eq!(m.ccache, (3, 5));
        assert_eq!(m.current_phase(), "configure");
        let tail = "x\n==> cairn rejected-flag: cflags -fbogus\ngcc: error: unrecognized command-line option '-fbogus'";
        assert_eq!(
            rejection_message(tail),
            "gcc: error: unrecognized command-line option '-fbogus'"
        );
    }

    /// `link "static" programs="mariadbd"`: the named program static, every other one
    /// dynamic; a named program not installed, or one linked the other way, is refused.
    #[test]
    fn named_static_programs_are_checked_one_by_one() {
        let bin = |path: &str, interpreter: Option<&str>| BuiltBinary {
            path: path.into(),
            bytes: 1,
            digest: "ab".into(),
            elf: crate::elf::ElfFacts {
                word_size: 64,
                file_type: "executable".into(),
                dynamic: interpreter.is_some(),
                interpreter: interpreter.map(String::from),
                stripped: false,
                debug_info: false,
            },
        };
        let ld = Some("/lib64/ld-linux-x86-64.so.2");
        let mut r = recipe();
        r.def.strip = false;
        r.def.static_programs = vec!["mariadbd".into()];
        assert!(!r.effective_ldflags().contains(&"-static".to_string()));
        let good = [bin("/usr/sbin/mariadbd", None), bin("/usr/bin/mariadb", ld)];
        assert_eq!(verify_binaries(&r, &good, Some(64)), Ok(()));
        let dynamic_server = [bin("/usr/sbin/mariadbd", ld), bin("/usr/bin/mariadb", ld)];
        let e = verify_binaries(&r, &dynamic_server, Some(64)).unwrap_err();
        assert!(
            e.contains("/usr/sbin/mariadbd is dynamically linked"),
            "{e}"
        );
        let static_client = [
            bin("/usr/sbin/mariadbd", None),
            bin("/usr/bin/mariadb", None),
        ];
        let e = verify_binaries(&r, &static_client, Some(64)).unwrap_err();
        assert!(
            e.contains("leaves /usr/bin/mariadb dynamic, but it is statically linked"),
            "{e}"
        );
        let e = verify_binaries(&r, &[bin("/usr/bin/mariadb", ld)], Some(64)).unwrap_err();
        assert!(e.contains("installed no program of that name"), "{e}");
    }

    #[test]
    fn elf_files_of_an_install_tree() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let tar = tar_files(&[
            LayerFile {
                path: "./usr/local/bin/t".into(),
                contents: exe,
                mode: 0o755,
            },
            LayerFile {
                path: "./usr/local/share/doc".into(),
                contents: b"text".to_vec(),
                mode: 0o644,
            },
        ])
        .unwrap();
        let b = binaries_in(&tar).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].path, "/usr/local/bin/t");
        assert!(b[0].elf.dynamic);
    }
}
