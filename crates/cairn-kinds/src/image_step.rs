//! Image steps through the Docker executor: a base (debootstrap → import) or one layer
//! (`run`, `file`, `env`) on its parent's image; each writes a `manifest.json` output.
//!
//! The output of every image step is `manifest.json` ([`ImageOutput`]): the content that
//! matters — the image reference (`cairn/<name>:<key>`), architecture, installed packages
//! with versions, the files its file layers added (path → blake3) and the environment
//! declared by `env` layers so far. The engine's image id is *not* in it: debootstrap makes
//! a new id on every build of the same packages, and an id in the output would change every
//! key below the image on each rebuild. So the same recipe built twice with the same
//! packages gives the same output, and its record stays as it was (`Store::record`).
//! Dependents (the next layer, servers) find their image by its reference.
//!
//! The id is machine-local detail: the record's `extra` holds the id of the build that
//! first recorded it, and this machine's build of the key is noted in the cache directory
//! (`images/<key>.json`: id and output digest), which is what [`ImageKind::usable`] checks
//! the engine against. The record's `extra` also holds `reference`, `mirror` (base only),
//! `built` (false if an image with this key already existed in the engine), timings and —
//! when an earlier build of the same address had other packages — `package_changes`.
//!
//! `env` layers: the variables go into the committed image's config `Env` (so servers and
//! later layers see them), are exported to later `run` layers, and are recorded in the
//! manifest's `env`.
//!
//! Under a lock (`PLAN.lock`, `cairn lock`) an image step must produce exactly the locked
//! package versions: a base build first checks that the archive's index still serves them
//! (else it fails naming each package and version), a finished build whose versions differ
//! fails, and a recorded build that differs is not reused (`lock_mismatch`).
//!
//! The Docker Engine is connected lazily, once per process, on the first image step (or
//! cache check of one); without it every image step fails with [`docker`]'s message.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cairn_defs::image::{Debian, ImageDef, LayerDef, SourceBuild, SourceOrigin};
use cairn_defs::{LockedImage, VersionMismatch};
use cairn_exec::docker::image::source_build::{BuildFacts, BuildHooks, BuildRecipe};
use cairn_exec::docker::{
    resolve_mirror, BaseSpec, Docker, ImageManifest, LayerFile, MirrorOrigin,
};
use cairn_graph::Step;
use cairn_store::{BlobRef, Record, Store};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use cairn_engine::error::{failed, StepError};
use cairn_engine::execute::{Built, Done};
use cairn_engine::Env;

/// The name of the one output of an image step.
pub const MANIFEST: &str = "manifest.json";

/// `manifest.json`: what an image step made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageOutput {
    /// `cairn/<name>:<key>`
    pub reference: String,
    /// Environment declared by `env` layers up to this step.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files added by `file` layers up to this step: path in the image → blake3.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// How the program of the last `build` layer up to this step was built (compiler and its
    /// version, flags, phase times, the installed binaries' ELF facts); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildFacts>,
    #[serde(flatten)]
    pub manifest: ImageManifest,
}

/// One package with its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageVersion {
    pub package: String,
    pub version: String,
}

/// A package whose version changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageChange {
    pub package: String,
    pub old: String,
    pub new: String,
}

/// How the installed packages of a rebuilt image differ from its previous build.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageChanges {
    /// Key of the previous build compared against.
    pub previous_key: String,
    pub added: Vec<PackageVersion>,
    pub removed: Vec<PackageVersion>,
    pub changed: Vec<PackageChange>,
}

impl PackageChanges {
    /// `packages changed since the previous build (…): +a 1, -b 2, c 1 → 2` (at most 12
    /// listed).
    pub fn line(&self) -> String {
        let c = self;
        let mut items: Vec<String> = Vec::new();
        items.extend(
            c.added
                .iter()
                .map(|p| format!("+{} {}", p.package, p.version)),
        );
        items.extend(
            c.removed
                .iter()
                .map(|p| format!("-{} {}", p.package, p.version)),
        );
        items.extend(
            c.changed
                .iter()
                .map(|p| format!("{} {} → {}", p.package, p.old, p.new)),
        );
        let more = items.len().saturating_sub(12);
        items.truncate(12);
        let mut s = format!(
            "packages changed since the previous build ({}): {}",
            &c.previous_key[..12.min(c.previous_key.len())],
            items.join(", ")
        );
        if more > 0 {
            s.push_str(&format!(" … and {more} more"));
        }
        s
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// This machine's build of an image key (`<cache>/images/<key>.json`): which engine image
/// it made and the output digest that build's manifest had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalBuild {
    pub image_id: String,
    pub output_digest: String,
}

fn local_build_path(cache_root: &Path, key: &str) -> std::path::PathBuf {
    cache_root.join("images").join(format!("{key}.json"))
}

/// This machine's note of its build of `key`, if it has one.
pub fn local_build(cache_root: &Path, key: &str) -> Option<LocalBuild> {
    let bytes = std::fs::read(local_build_path(cache_root, key)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Notes this machine's build of `key` (best effort: without the note, the next cache check
/// falls back to the id in the record and may rebuild, which changes no record).
fn note_local_build(cache_root: &Path, key: &str, build: &LocalBuild) {
    let path = local_build_path(cache_root, key);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let bytes = serde_json::to_vec(build).expect("serialises");
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// Cache check of an image record: the image it names must be in the engine, and be the
/// build of this record's output — as this machine noted when it built it, or (without a
/// note) the id the record holds. The engine may be another machine's, or the image was
/// removed or rebuilt with other packages.
pub fn image_present(d: &Docker, cache_root: &Path, rec: &Record) -> Result<(), String> {
    let reference = rec.extra.get("reference").and_then(Value::as_str);
    let Some(reference) = reference else {
        return Err("its record names no image".into());
    };
    let local = local_build(cache_root, &rec.key);
    let id = match &local {
        Some(b) if b.output_digest == rec.output_digest => b.image_id.as_str(),
        Some(_) => {
            return Err(format!(
                "this machine's image {reference} was built with another output than this record's"
            ))
        }
        None => match rec.extra.get("image_id").and_then(Value::as_str) {
            Some(id) => id,
            None => return Err("its record names no image id".into()),
        },
    };
    match d.image_id(reference) {
        Ok(Some(found)) if found == id => Ok(()),
        Ok(Some(found)) => Err(format!(
            "image {reference} is now {found}, not the recorded {id}"
        )),
        Ok(None) => Err(format!(
            "image {reference} is no longer in the Docker Engine"
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn ms(t: Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 1e4).round() / 10.0
}

/// The packages of a recorded build that the plan's lock pins to other versions, said
/// for a person; `None` when there is no lock for it or the build holds it.
fn lock_refuses_record(env: &Env<'_>, record: &Record) -> Option<String> {
    let locked = env.lock?.images.get(&record.address)?;
    let out = read_output(env.store, &record.outputs).ok()?;
    let wrong = locked_mismatches(locked, &out.manifest);
    (!wrong.is_empty()).then(|| {
        format!(
            "this build does not hold the lock: {}",
            cairn_defs::lock::describe(&wrong)
        )
    })
}

fn locked_mismatches(locked: &LockedImage, m: &ImageManifest) -> Vec<VersionMismatch> {
    locked.mismatches(|p| m.version_of(p).map(|v| [v]))
}

/// Before a base image is built under a lock: every locked version must be in the
/// archive's index, or the build could not install it — fail now, naming them.
fn check_archive_serves_lock(
    env: &Env<'_>,
    locked: &LockedImage,
    mirror: &str,
) -> Result<(), StepError> {
    let offered = cairn_exec::docker::archive_versions(
        mirror,
        &locked.suite,
        &locked.arch,
        crate::host(env).cache_root.as_path(),
    )
    .map_err(|e| failed(format!("checking the lock against the archive: {e}")))?;
    let wrong = locked.not_offered(&offered);
    if wrong.is_empty() {
        return Ok(());
    }
    Err(failed(format!(
        "the archive {mirror} ({} {}) no longer serves {} locked version(s): {} — Debian's mirrors keep only the current versions; build from a snapshot mirror (`--mirror`) that serves them, or lock again (`cairn lock`) to take the archive's",
        locked.suite,
        locked.arch,
        wrong.len(),
        cairn_defs::lock::describe(&wrong)
    )))
}

/// Build the image of `step` (base or layer) and write its manifest blob.
pub fn perform(
    ctx: &Env<'_>,
    step: &Step,
    key: &str,
    inputs: &[&Done],
) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let d = crate::container_engine(ctx)
        .map_err(|e| failed(format!("image steps need a running Docker Engine: {e}")))?;
    let def = step.image_def().map_err(failed)?;
    let mut build = ImageBuild {
        ctx,
        docker: &d,
        step,
        key,
        extra: Map::new(),
        timings: Map::new(),
    };
    let made = match def {
        ImageDef::Base { debian, packages } => build.base(debian, packages)?,
        ImageDef::Layer { layer } => build.layer(inputs, layer)?,
    };
    build.timings.insert("build_ms".into(), json!(ms(t0)));
    build.record(made)
}

/// One image step's build, with what it notes for the record's `extra` (and its
/// `timings`) as it goes.
struct ImageBuild<'a, 'e> {
    ctx: &'a Env<'e>,
    docker: &'a Docker,
    step: &'a Step,
    key: &'a str,
    extra: Map<String, Value>,
    timings: Map<String, Value>,
}

/// What a build made in the engine, and what its manifest carries beside the engine's
/// own facts.
struct Made {
    reference: String,
    env: BTreeMap<String, String>,
    files: BTreeMap<String, String>,
    build: Option<BuildFacts>,
}

impl<'a> ImageBuild<'a, '_> {
    /// A base image: debootstrap a `minbase` root of `packages` and import it.
    fn base(&mut self, debian: Debian, packages: Vec<String>) -> Result<Made, StepError> {
        let Debian {
            suite,
            arch,
            variant,
        } = debian;
        if variant != "minbase" {
            return Err(failed(format!(
                "debootstrap variant `{variant}` is not supported: the Docker executor builds `minbase` roots"
            )));
        }
        let mirror = resolve_mirror(crate::host(self.ctx).mirror.as_deref()).map_err(failed)?;
        if let Some(locked) = self.locked() {
            check_archive_serves_lock(self.ctx, locked, &mirror.url)?;
        }
        let cache_dir = crate::host(self.ctx)
            .cache_root
            .as_path()
            .join("debootstrap")
            .join(format!("{suite}-{arch}"));
        let spec = BaseSpec {
            name: self.step.name.clone(),
            key: self.key.to_string(),
            suite,
            arch,
            packages,
            mirror: Some(mirror.url.clone()),
            cache_dir: Some(cache_dir.clone()),
        };
        // one debootstrap at a time per cache directory (it is not safe to share)
        let lock = cache_lock(&cache_dir);
        let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
        let img = self.docker.build_base(&spec).map_err(crate::docker_error)?;
        self.extra.insert(
            "mirror".into(),
            json!({"url": mirror.url, "origin": origin(&mirror.origin)}),
        );
        self.extra.insert("built".into(), json!(img.built));
        self.timings.insert(
            "debootstrap_ms".into(),
            json!(img.debootstrap_time.as_secs_f64() * 1e3),
        );
        self.timings.insert(
            "import_ms".into(),
            json!(img.import_time.as_secs_f64() * 1e3),
        );
        self.extra.insert("tar_bytes".into(), json!(img.tar_bytes));
        Ok(Made {
            reference: img.reference,
            env: BTreeMap::new(),
            files: BTreeMap::new(),
            build: None,
        })
    }

    /// A layer on its parent's image: what the parent's manifest carries (environment,
    /// files, build facts) goes on, with what this layer adds.
    fn layer(&mut self, inputs: &[&Done], layer: LayerDef) -> Result<Made, StepError> {
        let (d, step, key) = (self.docker, self.step, self.key);
        let parent = parent_output(self.ctx.store, step, inputs)?;
        let mut env = parent.env.clone();
        let mut files = parent.files.clone();
        let mut build = parent.build.clone();
        let env_items = |env: &BTreeMap<String, String>| -> Vec<String> {
            env.iter().map(|(k, v)| format!("{k}={v}")).collect()
        };
        let img = match layer {
            LayerDef::Run { command } => d.run_layer(
                &parent.reference,
                &step.name,
                key,
                &command,
                &env_items(&env),
            ),
            LayerDef::Env { vars } => {
                env.extend(vars.clone());
                d.env_layer(&parent.reference, &step.name, key, &env_items(&vars))
            }
            LayerDef::File { digest, dest } => {
                let (dir, f) = layer_file(step, &digest, &dest)?;
                let path = format!("{}/{}", dir.trim_end_matches('/'), f.path);
                files.insert(path, digest.clone());
                d.file_layer(&parent.reference, &step.name, key, &dir, &[f])
            }
            LayerDef::Build { build: def } => {
                let out = source_build(self.ctx, d, step, key, &parent, &def)?;
                if let Some(f) = &out.facts {
                    self.extra.insert("source_build".into(), build_summary(f));
                }
                build = out.facts;
                Ok(out.layer)
            }
        }
        .map_err(crate::docker_error)?;
        self.extra.insert("built".into(), json!(img.built));
        self.extra.insert("parent".into(), json!(parent.reference));
        Ok(Made {
            reference: img.reference,
            env,
            files,
            build,
        })
    }

    /// Read what the built image holds, hold it against the lock, store the manifest and
    /// note this machine's build of the key.
    fn record(mut self, made: Made) -> Result<Built, StepError> {
        let t_man = Instant::now();
        let mut manifest = runnable_manifest(self.docker, &made.reference)?;
        self.timings.insert("manifest_ms".into(), json!(ms(t_man)));
        // machine-local: in the record's extra and this machine's note, never in the output
        let image_id = std::mem::take(&mut manifest.image_id);
        if let Some(locked) = self.locked() {
            let wrong = locked_mismatches(locked, &manifest);
            if !wrong.is_empty() {
                return Err(failed(format!(
                    "{} was built with other versions than the lock pins: {}; lock again (`cairn lock`) to accept them",
                    made.reference,
                    cairn_defs::lock::describe(&wrong)
                )));
            }
        }
        self.extra.insert("image_id".into(), json!(image_id));
        self.extra.insert("reference".into(), json!(made.reference));
        let out = ImageOutput {
            reference: made.reference,
            env: made.env,
            files: made.files,
            build: made.build,
            manifest,
        };
        if let Some(changes) = package_changes(self.ctx, self.step, &out) {
            self.extra.insert(
                "package_changes".into(),
                serde_json::to_value(changes).expect("serialises"),
            );
        }
        // a rebuild of what the current record holds keeps its manifest byte for byte, so
        // nothing downstream is keyed anew
        let bytes = recorded_manifest_of_same_content(self.ctx.store, self.key, &out)
            .unwrap_or_else(|| serde_json::to_vec_pretty(&out).expect("serialises"));
        let blob = self
            .ctx
            .store
            .put_blob(&bytes)
            .map_err(|e| failed(format!("storing {MANIFEST}: {e}")))?;
        self.extra
            .insert("timings".into(), Value::Object(self.timings));
        let outputs = BTreeMap::from([(MANIFEST.to_string(), blob)]);
        note_local_build(
            crate::host(self.ctx).cache_root.as_path(),
            self.key,
            &LocalBuild {
                image_id,
                output_digest: Record::compute_output_digest(&outputs),
            },
        );
        Ok(Built {
            outputs,
            extra: self.extra,
            ..Default::default()
        })
    }

    /// The versions the plan's lock pins for this image, if it has a lock for it.
    fn locked(&self) -> Option<&'a LockedImage> {
        self.ctx.lock.and_then(|l| l.images.get(&self.step.address))
    }
}

/// The manifest of a built image, which must be able to run its own shell and dpkg.
fn runnable_manifest(d: &Docker, reference: &str) -> Result<ImageManifest, StepError> {
    match d.manifest(reference) {
        Ok(m) => Ok(m),
        Err(e) if e.is_image_unrunnable() => {
            // A broken build (seen: a source build's tree that replaced the /lib link).
            // Tagged, it would be reused under this key by the next run; it goes, so the
            // next run builds it again.
            let removed = match d.remove_image(reference, true) {
                Ok(()) => "so it was removed".to_string(),
                Err(r) => format!("and removing it failed ({r}): remove it by hand"),
            };
            Err(failed(format!(
                "{e}\nthe image {reference} cannot run a command, {removed}; nothing was recorded"
            )))
        }
        Err(e) => Err(crate::docker_error(e)),
    }
}

/// Build a `build` layer: its recipe from the definition (a tarball read from the plan's
/// directory and checked against the digest in the key), phases reported as they start.
fn source_build(
    ctx: &Env<'_>,
    d: &Docker,
    step: &Step,
    key: &str,
    parent: &ImageOutput,
    def: &SourceBuild,
) -> Result<cairn_exec::docker::image::source_build::SourceBuildOutcome, StepError> {
    let recipe = recipe_of(step, def)?;
    let ccache = crate::host(ctx).cache_root.as_path().join("ccache");
    let cancel = crate::host(ctx).cancel();
    let mut on_phase = |phase: &str| cairn_engine::progress::phase(phase);
    let out = d.source_build_layer(
        &parent.reference,
        &step.name,
        key,
        &recipe,
        &ccache,
        BuildHooks {
            on_phase: &mut on_phase,
            cancelled: &|| cancel.is_cancelled(),
        },
    );
    if ctx.is_cancelled() {
        return Err(cairn_engine::error::StepError::cancelled());
    }
    out.map_err(crate::docker_error)
}

/// The last recorded build of a source: which step and how long its build took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastBuild {
    pub address: String,
    pub seconds: f64,
}

/// `debian:<package>` or `tarball:<name>`, as the build's facts name it.
fn source_label(s: &SourceOrigin) -> String {
    match s {
        SourceOrigin::Debian { package } => format!("debian:{package}"),
        SourceOrigin::Tarball { name, .. } => format!("tarball:{name}"),
    }
}

/// The study's last recorded build of `source`: this step's own last one if it has one,
/// else the most recent of any image step of the study.
fn last_build(env: &Env<'_>, step: &Step, source: &str) -> Option<LastBuild> {
    let names = env.store.names(env.study).ok()?;
    let of = |key: &str| -> Option<(String, LastBuild)> {
        let rec = env.store.get_record(key).ok()??;
        let b = rec.extra.get("source_build")?;
        if b.get("source")?.as_str()? != source {
            return None;
        }
        let seconds = b.get("build_s")?.as_f64()?;
        Some((
            rec.finished.clone(),
            LastBuild {
                address: rec.address.clone(),
                seconds,
            },
        ))
    };
    if let Some((_, own)) = names.get(&step.address).and_then(|k| of(k)) {
        return Some(own);
    }
    names
        .iter()
        .filter(|(a, _)| a.starts_with("image/"))
        .filter_map(|(_, k)| of(k))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, l)| l)
}

/// What the executor needs of a build definition: it, and a tarball build's tarball.
fn recipe_of(step: &Step, def: &SourceBuild) -> Result<BuildRecipe, StepError> {
    let tarball = match &def.source {
        SourceOrigin::Debian { .. } => None,
        SourceOrigin::Tarball { digest, .. } => {
            Some(step_file(step, digest, "a tarball build without its tarball")?.1)
        }
    };
    Ok(BuildRecipe {
        def: def.clone(),
        tarball,
    })
}

/// The record's summary of a source build (the manifest has the whole facts).
fn build_summary(f: &BuildFacts) -> Value {
    json!({
        "source": f.source,
        "source_version": f.source_version,
        "compiler_version": f.compiler_version,
        "build_s": f.build_s,
        "phases_s": f.phases_s,
        "toolchain_reused": f.toolchain_reused,
        "ccache_hits": f.ccache_hits,
        "ccache_misses": f.ccache_misses,
    })
}

fn origin(o: &MirrorOrigin) -> String {
    match o {
        MirrorOrigin::Explicit => "explicit".into(),
        MirrorOrigin::Env => format!("${}", cairn_exec::docker::MIRROR_ENV),
        MirrorOrigin::Apt(p) => p.display().to_string(),
    }
}

fn cache_lock(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<std::path::PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut m = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    m.entry(dir.to_path_buf()).or_default().clone()
}

/// The current record's manifest of `key`, byte for byte, if it holds what `out` holds: the
/// same image content and the same build, whatever the run facts each build noted (a
/// manifest written before they left it carries them). `None` otherwise.
fn recorded_manifest_of_same_content(
    store: &Store,
    key: &str,
    out: &ImageOutput,
) -> Option<Vec<u8>> {
    let recorded = store.get_record(key).ok()??;
    let blob = recorded.outputs.get(MANIFEST)?;
    let bytes = store.read_blob(blob).ok()?;
    let old: ImageOutput = serde_json::from_slice(&bytes).ok()?;
    let content = |o: &ImageOutput| ImageOutput {
        build: o.build.as_ref().map(BuildFacts::content),
        ..o.clone()
    };
    (content(&old) == content(out)).then_some(bytes)
}

/// Read the manifest of an image step's output.
pub fn read_output(
    store: &Store,
    outputs: &BTreeMap<String, BlobRef>,
) -> Result<ImageOutput, String> {
    cairn_engine::execute::read_json(store, outputs, MANIFEST)
}

fn parent_output(store: &Store, step: &Step, inputs: &[&Done]) -> Result<ImageOutput, StepError> {
    let i = step
        .inputs
        .iter()
        .position(|i| i.mount == "parent")
        .ok_or_else(|| failed("a layer step has no `parent` input"))?;
    read_output(store, &inputs[i].outputs)
        .map_err(|e| failed(format!("reading the parent image's manifest: {e}")))
}

/// The host file an image step reads (a file layer's source, a build's tarball) and its
/// bytes, which must still have the digest its key holds; `missing` says what lacks it.
fn step_file<'s>(
    step: &'s Step,
    digest: &str,
    missing: &str,
) -> Result<(&'s cairn_graph::step::InputFile, Vec<u8>), StepError> {
    let src = step
        .command
        .as_ref()
        .and_then(|c| c.files.first())
        .ok_or_else(|| failed(missing))?;
    let contents = std::fs::read(&src.abs)
        .map_err(|e| failed(format!("cannot read {}: {e}", src.abs.display())))?;
    if blake3::hash(&contents).to_hex().as_str() != digest {
        return Err(failed(format!(
            "{} changed after the plan was read; run again",
            src.abs.display()
        )));
    }
    Ok((src, contents))
}

/// The file of a file layer (from the plan directory, checked against the digest in the
/// key) and the directory it goes to: `dest` names the file, or a directory if it ends in `/`.
fn layer_file(step: &Step, digest: &str, dest: &str) -> Result<(String, LayerFile), StepError> {
    let (src, contents) = step_file(step, digest, "a file layer without its source file")?;
    let (dir, name) = match dest.strip_suffix('/') {
        Some(dir) => (
            dir.to_string(),
            Path::new(&src.rel)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        None => match dest.rsplit_once('/') {
            Some((dir, name)) => (dir.to_string(), name.to_string()),
            None => (String::new(), dest.to_string()),
        },
    };
    let dir = if dir.is_empty() { "/".to_string() } else { dir };
    Ok((
        dir,
        LayerFile {
            path: name,
            contents,
            mode: 0o644,
        },
    ))
}

/// Compare with the packages of the last recorded build of the same address, if any.
fn package_changes(ctx: &Env<'_>, step: &Step, new: &ImageOutput) -> Option<PackageChanges> {
    let names = ctx.store.names(ctx.study).ok()?;
    let prev_key = names.get(&step.address)?;
    let prev = ctx.store.get_record(prev_key).ok()??;
    let old = read_output(ctx.store, &prev.outputs).ok()?;
    let c = diff_packages(prev_key, &old.manifest, &new.manifest);
    (!c.is_empty()).then_some(c)
}

/// Packages by name (`name:arch` for a foreign architecture) → version.
fn versions(m: &ImageManifest) -> BTreeMap<String, &str> {
    m.packages
        .iter()
        .map(|p| {
            let native = p.architecture == m.dpkg_architecture || p.architecture == "all";
            let name = if native {
                p.package.clone()
            } else {
                format!("{}:{}", p.package, p.architecture)
            };
            (name, p.version.as_str())
        })
        .collect()
}

/// What changed between two manifests' package lists.
pub fn diff_packages(
    previous_key: &str,
    old: &ImageManifest,
    new: &ImageManifest,
) -> PackageChanges {
    let (o, n) = (versions(old), versions(new));
    let pv = |p: &str, v: &str| PackageVersion {
        package: p.to_string(),
        version: v.to_string(),
    };
    let mut c = PackageChanges {
        previous_key: previous_key.to_string(),
        ..Default::default()
    };
    for (p, v) in &n {
        match o.get(p) {
            None => c.added.push(pv(p, v)),
            Some(ov) if ov != v => c.changed.push(PackageChange {
                package: p.clone(),
                old: ov.to_string(),
                new: v.to_string(),
            }),
            Some(_) => {}
        }
    }
    for (p, v) in &o {
        if !n.contains_key(p) {
            c.removed.push(pv(p, v));
        }
    }
    c
}

/// The package changes a record carries, if any (for `cairn plan`).
pub fn recorded_changes(rec: &Record) -> Option<PackageChanges> {
    let v = rec.extra.get("package_changes")?;
    serde_json::from_value(v.clone()).ok()
}

/// One detail of a note: `{name: value}`.
fn detail(name: &str, value: &impl serde::Serialize) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(
        name.to_string(),
        serde_json::to_value(value).expect("serialises"),
    );
    m
}

/// The kind of image steps: built in the container engine; a record serves only while its
/// image is still there.
pub struct ImageKind;

impl cairn_engine::Kind for ImageKind {
    fn unavailable(&self, env: &Env<'_>, step: &Step) -> Option<String> {
        crate::requirements(step)
            .iter()
            .find_map(|need| need.unmet(crate::host(env)))
    }

    fn accepts(&self, env: &Env<'_>, record: &Record) -> Result<(), cairn_engine::Unusable> {
        match lock_refuses_record(env, record) {
            Some(why) => Err(cairn_engine::Unusable {
                what: "lock_mismatch",
                why,
            }),
            None => Ok(()),
        }
    }

    fn present(&self, env: &Env<'_>, record: &Record) -> Result<(), cairn_engine::Unusable> {
        let present = crate::container_engine(env)
            .and_then(|d| image_present(&d, crate::host(env).cache_root.as_path(), record));
        present.map_err(|why| cairn_engine::Unusable {
            what: "image_missing",
            why,
        })
    }

    fn notes(&self, record: &Record) -> Vec<cairn_engine::Note> {
        recorded_changes(record)
            .map(|changes| cairn_engine::Note {
                note: "packages_changed",
                text: changes.line(),
                details: detail("changes", &changes),
            })
            .into_iter()
            .collect()
    }

    fn coming(&self, env: &Env<'_>, step: &Step) -> Vec<cairn_engine::Note> {
        let Ok(ImageDef::Layer {
            layer: LayerDef::Build { build },
        }) = step.image_def()
        else {
            return Vec::new();
        };
        let source = source_label(&build.source);
        let last = last_build(env, step, &source);
        let text = match &last {
            Some(l) => format!(
                "source build of {source}: the last one ({}) took {}",
                l.address,
                cairn_engine::budget::human(std::time::Duration::from_secs_f64(l.seconds))
            ),
            None => format!("source build of {source}: none recorded yet, its time is unknown"),
        };
        let mut details = detail("source", &source);
        details.extend(detail("last", &last));
        vec![cairn_engine::Note {
            note: "source_build",
            text,
            details,
        }]
    }

    fn perform(
        &self,
        env: &Env<'_>,
        step: &Step,
        key: &str,
        inputs: &[&Done],
    ) -> Result<Built, StepError> {
        perform(env, step, key, inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_exec::docker::InstalledPackage;

    fn m(pkgs: &[(&str, &str)]) -> ImageManifest {
        ImageManifest {
            image_id: "sha256:x".into(),
            image_architecture: Some("amd64".into()),
            dpkg_architecture: "amd64".into(),
            packages: pkgs
                .iter()
                .map(|(p, v)| InstalledPackage {
                    package: p.to_string(),
                    version: v.to_string(),
                    architecture: "amd64".into(),
                })
                .collect(),
        }
    }

    /// A rebuild that made the same image and binaries keeps the recorded manifest byte for
    /// byte, even one written with the build's run facts (its times, the compiler cache's
    /// hits); another binary makes a new one, and new manifests carry no run facts.
    #[test]
    fn a_rebuild_of_the_same_content_keeps_the_recorded_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = "ab".repeat(32);
        let facts = |build_s: f64, digest: &str| -> BuildFacts {
            serde_json::from_value(json!({
                "source": "debian:mariadb", "compiler": "gcc", "compiler_version": "gcc 12",
                "cflags": ["-O2"], "cxxflags": [], "ldflags": [], "build_type": "release",
                "build_system": "cmake", "options": [], "link": "dynamic", "strip": false,
                "prefix": "/usr", "toolchain_reused": build_s < 100.0,
                "phases_s": {"build": build_s}, "build_s": build_s,
                "ccache_hits": 3, "ccache_misses": 5,
                "binaries": [{"path": "/usr/sbin/mariadbd", "bytes": 1, "digest": digest,
                              "word_size": 64, "file_type": "shared", "dynamic": true,
                              "stripped": false, "debug_info": false}]
            }))
            .unwrap()
        };
        let output = |build: BuildFacts| ImageOutput {
            reference: "cairn/o2:k".into(),
            env: BTreeMap::new(),
            files: BTreeMap::new(),
            build: Some(build),
            manifest: m(&[("a", "1")]),
        };
        // recorded by an earlier cairn, run facts and all
        let mut old = serde_json::to_value(output(facts(4191.0, "d1"))).unwrap();
        old["build"]["build_s"] = json!(4191.0);
        let old_bytes = serde_json::to_vec_pretty(&old).unwrap();
        let blob = store.put_blob(&old_bytes).unwrap();
        let mut rec = Record::new(key.clone(), "image", "s", "image/o2/1");
        rec.outputs = BTreeMap::from([(MANIFEST.to_string(), blob)]);
        rec.output_digest = Record::compute_output_digest(&rec.outputs);
        store.put_record(&mut rec).unwrap();

        let same = output(facts(1424.0, "d1"));
        assert_eq!(
            recorded_manifest_of_same_content(&store, &key, &same),
            Some(old_bytes)
        );
        let other = output(facts(1424.0, "d2"));
        assert_eq!(
            recorded_manifest_of_same_content(&store, &key, &other),
            None
        );
        let written = serde_json::to_value(&other).unwrap();
        assert!(written["build"].get("build_s").is_none(), "{written}");
        assert!(written["build"].get("ccache_hits").is_none(), "{written}");
    }

    #[test]
    fn package_diff() {
        let old = m(&[("a", "1"), ("b", "1"), ("c", "1")]);
        let new = m(&[("a", "1"), ("b", "2"), ("d", "1")]);
        let c = diff_packages("k", &old, &new);
        assert_eq!(
            c.added,
            [PackageVersion {
                package: "d".into(),
                version: "1".into()
            }]
        );
        assert_eq!(
            c.removed,
            [PackageVersion {
                package: "c".into(),
                version: "1".into()
            }]
        );
        assert_eq!(
            c.changed,
            [PackageChange {
                package: "b".into(),
                old: "1".into(),
                new: "2".into()
            }]
        );
        assert!(diff_packages("k", &old, &old).is_empty());
    }

    #[test]
    fn output_round_trips_with_a_flat_manifest() {
        let out = ImageOutput {
            reference: "cairn/x:k".into(),
            env: BTreeMap::from([("A".into(), "1".into())]),
            files: BTreeMap::new(),
            build: None,
            manifest: m(&[("mariadb-server", "1:10.11")]),
        };
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v["image_id"], "sha256:x");
        assert_eq!(v["packages"][0]["package"], "mariadb-server");
        assert_eq!(serde_json::from_value::<ImageOutput>(v).unwrap(), out);
    }
}
