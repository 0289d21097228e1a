//! Image steps through the Docker executor: a base (debootstrap → import) or one layer
//! (`run`, `file`, `env`) on its parent's image; each writes a `manifest.json` output.
//!
//! The output of every image step is `manifest.json` ([`ImageOutput`]): the image reference
//! (`cairn/<name>:<key>`), its id, architecture, installed packages with versions and the
//! environment declared by `env` layers so far. Dependents (the next layer, servers) find
//! their image there. The record's `extra` holds `image_id`, `reference`, `mirror` (base
//! only), `built` (false if an image with this key already existed in the engine), timings
//! and — when an earlier build of the same address had other packages — `package_changes`.
//!
//! `env` layers: the variables go into the committed image's config `Env` (so servers and
//! later layers see them), are exported to later `run` layers, and are recorded in the
//! manifest's `env`.
//!
//! The Docker Engine is connected lazily, once per process, on the first image step (or
//! cache check of one); without it every image step fails with [`docker`]'s message.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cairn_exec::docker::{
    resolve_mirror, BaseSpec, Docker, ImageManifest, LayerFile, MirrorOrigin,
};
use cairn_graph::Step;
use cairn_store::{BlobRef, Record, Store};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::execute::{failed, Built, Done, StepContext, StepError};

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
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The Docker Engine of this process, connected on first use. The error says how to start one.
pub fn docker() -> Result<&'static Docker, &'static str> {
    static DOCKER: OnceLock<Result<Docker, String>> = OnceLock::new();
    DOCKER
        .get_or_init(|| {
            // the library's message already says how to start an engine
            Docker::connect().map_err(|e| format!("image steps need a running Docker Engine: {e}"))
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Cache check of an image record: the image it names must still be in the engine, with
/// the recorded id (the engine may be another machine's, or the image was removed).
pub fn image_present(rec: &Record) -> Result<(), String> {
    let reference = rec.extra.get("reference").and_then(Value::as_str);
    let id = rec.extra.get("image_id").and_then(Value::as_str);
    let (Some(reference), Some(id)) = (reference, id) else {
        return Err("its record names no image".into());
    };
    let d = docker().map_err(str::to_string)?;
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

/// Build the image of `step` (base or layer) and write its manifest blob.
pub fn perform(
    ctx: &StepContext<'_>,
    step: &Step,
    key: &str,
    inputs: &[&Done],
) -> Result<Built, StepError> {
    let t0 = Instant::now();
    let d = docker().map_err(failed)?;
    let def = &step.definition;
    let mut extra = Map::new();
    let mut timings = Map::new();
    let (reference, env) = match def["stage"].as_str() {
        Some("base") => {
            let s = |f: &str| def["debian"][f].as_str().unwrap_or_default().to_string();
            let (suite, arch, variant) = (s("suite"), s("arch"), s("variant"));
            if variant != "minbase" {
                return Err(failed(format!(
                    "debootstrap variant `{variant}` is not supported: the Docker executor builds `minbase` roots"
                )));
            }
            let mirror = resolve_mirror(ctx.mirror).map_err(failed)?;
            let packages: Vec<String> = def["packages"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let cache_dir = ctx
                .cache_root
                .join("debootstrap")
                .join(format!("{suite}-{arch}"));
            let spec = BaseSpec {
                name: step.name.clone(),
                key: key.to_string(),
                suite,
                arch,
                packages,
                mirror: Some(mirror.url.clone()),
                cache_dir: Some(cache_dir.clone()),
            };
            // one debootstrap at a time per cache directory (it is not safe to share)
            let lock = cache_lock(&cache_dir);
            let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
            let img = d.build_base(&spec).map_err(failed)?;
            extra.insert(
                "mirror".into(),
                json!({"url": mirror.url, "origin": origin(&mirror.origin)}),
            );
            extra.insert("built".into(), json!(img.built));
            timings.insert(
                "debootstrap_ms".into(),
                json!(img.debootstrap_time.as_secs_f64() * 1e3),
            );
            timings.insert(
                "import_ms".into(),
                json!(img.import_time.as_secs_f64() * 1e3),
            );
            extra.insert("tar_bytes".into(), json!(img.tar_bytes));
            (img.reference, BTreeMap::new())
        }
        Some("layer") => {
            let parent = parent_output(ctx.store, step, inputs)?;
            let mut env = parent.env.clone();
            let env_items = |env: &BTreeMap<String, String>| -> Vec<String> {
                env.iter().map(|(k, v)| format!("{k}={v}")).collect()
            };
            let layer = &def["layer"];
            let img = if let Some(cmd) = layer["run"]["command"].as_str() {
                d.run_layer(&parent.reference, &step.name, key, cmd, &env_items(&env))
            } else if let Some(vars) = layer["env"]["vars"].as_object() {
                let mut own = BTreeMap::new();
                for (k, v) in vars {
                    own.insert(k.clone(), v.as_str().unwrap_or_default().to_string());
                }
                env.extend(own.clone());
                d.env_layer(&parent.reference, &step.name, key, &env_items(&own))
            } else if let Some(file) = layer["file"].as_object() {
                let (dir, f) = layer_file(step, file)?;
                d.file_layer(&parent.reference, &step.name, key, &dir, &[f])
            } else {
                return Err(failed(format!("unknown layer {layer}")));
            }
            .map_err(failed)?;
            extra.insert("built".into(), json!(img.built));
            extra.insert("parent".into(), json!(parent.reference));
            (img.reference, env)
        }
        other => return Err(failed(format!("unknown image stage {other:?}"))),
    };
    timings.insert("build_ms".into(), json!(ms(t0)));

    let t_man = Instant::now();
    let manifest = d.manifest(&reference).map_err(failed)?;
    timings.insert("manifest_ms".into(), json!(ms(t_man)));
    extra.insert("image_id".into(), json!(manifest.image_id));
    extra.insert("reference".into(), json!(reference));
    let out = ImageOutput {
        reference,
        env,
        manifest,
    };
    if let Some(changes) = package_changes(ctx, step, &out) {
        extra.insert(
            "package_changes".into(),
            serde_json::to_value(changes).expect("serialises"),
        );
    }
    let bytes = serde_json::to_vec_pretty(&out).expect("serialises");
    let blob = ctx
        .store
        .put_blob(&bytes)
        .map_err(|e| failed(format!("storing {MANIFEST}: {e}")))?;
    extra.insert("timings".into(), Value::Object(timings));
    Ok(Built {
        outputs: BTreeMap::from([(MANIFEST.to_string(), blob)]),
        extra,
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

/// Read the manifest of an image step's output.
pub fn read_output(
    store: &Store,
    outputs: &BTreeMap<String, BlobRef>,
) -> Result<ImageOutput, String> {
    crate::execute::read_json(store, outputs, MANIFEST)
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

/// The file of a file layer (from the plan directory, checked against the digest in the
/// key) and the directory it goes to: `dest` names the file, or a directory if it ends in `/`.
fn layer_file(step: &Step, file: &Map<String, Value>) -> Result<(String, LayerFile), StepError> {
    let dest = file.get("dest").and_then(Value::as_str).unwrap_or_default();
    let digest = file
        .get("digest")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let src = step
        .command
        .as_ref()
        .and_then(|c| c.files.first())
        .ok_or_else(|| failed("a file layer without its source file"))?;
    let contents = std::fs::read(&src.abs)
        .map_err(|e| failed(format!("cannot read {}: {e}", src.abs.display())))?;
    if blake3::hash(&contents).to_hex().as_str() != digest {
        return Err(failed(format!(
            "{} changed after the plan was read; run again",
            src.abs.display()
        )));
    }
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
fn package_changes(
    ctx: &StepContext<'_>,
    step: &Step,
    new: &ImageOutput,
) -> Option<PackageChanges> {
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
            manifest: m(&[("mariadb-server", "1:10.11")]),
        };
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v["image_id"], "sha256:x");
        assert_eq!(v["packages"][0]["package"], "mariadb-server");
        assert_eq!(serde_json::from_value::<ImageOutput>(v).unwrap(), out);
    }
}
