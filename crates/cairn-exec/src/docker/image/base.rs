//! Base images: a Debian root filesystem made with debootstrap, streamed as a tar into the Engine's image import.
//!
//! `debootstrap --variant=minbase --arch=<arch> --include=<pkgs> <suite> <dir> <mirror>` runs on
//! the host into a temporary directory (i386 on amd64 runs natively); the tree is then written
//! as a tar archive (tar crate, on a blocking thread) and streamed chunk by chunk as the body of
//! `POST /images/create?fromSrc=-` (bollard's `create_image` with a body — bollard's
//! `import_image` is `/images/load`, which wants a `docker save` archive, not a root
//! filesystem). The import applies `LABEL cairn.key=<key>`, `cairn.debian.arch`/`.suite` labels,
//! `ENV PATH=…` and `CMD ["/bin/bash"]`, and passes the Docker platform of the Debian
//! architecture — which Docker 20.10 (API 1.41) ignores except for the OS: an i386 import is
//! recorded as `amd64` by the engine, so the label (and `dpkg --print-architecture`) is the truth.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bollard::query_parameters::CreateImageOptionsBuilder;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::docker::image::mirror::resolve_mirror;
use crate::docker::{image_ref, tail_lines, Docker, DockerError, Result, LABEL_KEY};

/// Label holding the Debian architecture of a base image (e.g. `i386`).
pub const LABEL_DEBIAN_ARCH: &str = "cairn.debian.arch";
/// Label holding the Debian suite of a base image (e.g. `bookworm`).
pub const LABEL_DEBIAN_SUITE: &str = "cairn.debian.suite";

/// What a base image is made of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaseSpec {
    /// Image name: the image is tagged `cairn/<name>:<tag from key>`.
    pub name: String,
    /// The step key (e.g. blake3 hex); stored whole in the `cairn.key` label.
    pub key: String,
    /// Debian suite, e.g. `bookworm`, `trixie`.
    pub suite: String,
    /// Debian architecture, e.g. `amd64`, `i386`.
    pub arch: String,
    /// Packages for `--include` (minbase has no others).
    pub packages: Vec<String>,
    /// Mirror URL; `None` = `$CAIRN_DEBIAN_MIRROR` or the host's apt configuration.
    pub mirror: Option<String>,
    /// A host directory for debootstrap's `--cache-dir` (downloaded .debs), if any.
    pub cache_dir: Option<PathBuf>,
}

/// A base image that exists in the engine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaseImage {
    /// `sha256:…`
    pub id: String,
    /// `cairn/<name>:<tag>`
    pub reference: String,
    /// The mirror used (None if the image was reused).
    pub mirror: Option<String>,
    /// False if an image with this tag and key already existed and was reused.
    pub built: bool,
    /// Time spent in debootstrap (zero if reused).
    pub debootstrap_time: Duration,
    /// Time spent in tar + import (zero if reused).
    pub import_time: Duration,
    /// Size of the imported tar stream, bytes.
    pub tar_bytes: u64,
}

/// The Docker platform for a Debian architecture.
pub fn docker_platform(debian_arch: &str) -> Option<&'static str> {
    Some(match debian_arch {
        "amd64" => "linux/amd64",
        "i386" => "linux/386",
        "arm64" => "linux/arm64",
        "armhf" => "linux/arm/v7",
        "armel" => "linux/arm/v5",
        "ppc64el" => "linux/ppc64le",
        "s390x" => "linux/s390x",
        "riscv64" => "linux/riscv64",
        "mips64el" => "linux/mips64le",
        _ => return None,
    })
}

/// Where debootstrap lives (it is usually not on a non-root PATH).
fn debootstrap_path() -> PathBuf {
    [
        "/usr/sbin/debootstrap",
        "/sbin/debootstrap",
        "/usr/bin/debootstrap",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .unwrap_or_else(|| PathBuf::from("debootstrap"))
}

/// A directory removed (recursively) on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Result<Self> {
        let base = std::env::var_os("CAIRN_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let p = base.join(format!("{prefix}-{}", crate::docker::nonce()));
        std::fs::create_dir_all(&p).map_err(DockerError::io(format!("create {}", p.display())))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!("could not remove {}: {e}", self.0.display());
        }
    }
}

impl Docker {
    /// Build the base image described by `spec`, or reuse it if `cairn/<name>:<tag>` already
    /// exists with the same `cairn.key` label. Prints (eprintln) how long the steps took.
    pub fn build_base(&self, spec: &BaseSpec) -> Result<BaseImage> {
        let reference = image_ref(&spec.name, &spec.key);
        let t0 = Instant::now();
        if let Some(id) = self.image_with_key(&reference, &spec.key)? {
            tracing::info!(
                "cairn: base image {reference} exists, reused ({:.2?})",
                t0.elapsed()
            );
            return Ok(BaseImage {
                id,
                reference,
                mirror: None,
                built: false,
                debootstrap_time: Duration::ZERO,
                import_time: Duration::ZERO,
                tar_bytes: 0,
            });
        }
        let platform = docker_platform(&spec.arch).ok_or_else(|| {
            DockerError::Invalid(format!("unknown Debian architecture `{}`", spec.arch))
        })?;
        let mirror = resolve_mirror(spec.mirror.as_deref())?;

        let tmp = TempDir::new("cairn-debootstrap")?;
        let root = tmp.0.join("root");
        let t_deb = Instant::now();
        run_debootstrap(spec, &mirror.url, &root, &tmp.0.join("debootstrap.out"))?;
        let debootstrap_time = t_deb.elapsed();
        trim_rootfs(&root);

        let t_imp = Instant::now();
        let (id, tar_bytes) = self.import_rootfs(&root, &reference, spec, platform)?;
        let import_time = t_imp.elapsed();
        let t_rm = Instant::now();
        drop(tmp);
        tracing::info!(
            "cairn: base image {reference} ({} {}, {} packages) built: debootstrap {:.1?} + tar/import {:.1?} ({:.0} MiB) + removing the tree {:.1?} = {:.1?}",
            spec.suite,
            spec.arch,
            spec.packages.len(),
            debootstrap_time,
            import_time,
            tar_bytes as f64 / 1048576.0,
            t_rm.elapsed(),
            t0.elapsed()
        );
        Ok(BaseImage {
            id,
            reference,
            mirror: Some(mirror.url),
            built: true,
            debootstrap_time,
            import_time,
            tar_bytes,
        })
    }

    /// The id of `reference` if it exists and its `cairn.key` label equals `key`.
    pub fn image_with_key(&self, reference: &str, key: &str) -> Result<Option<String>> {
        self.block_on(async {
            match self.inner.api.inspect_image(reference).await {
                Ok(img) => {
                    let label = img
                        .config
                        .as_ref()
                        .and_then(|c| c.labels.as_ref())
                        .and_then(|l| l.get(LABEL_KEY));
                    if label.map(String::as_str) == Some(key) {
                        Ok(img.id)
                    } else {
                        tracing::info!("{reference} exists with another key; rebuilding");
                        Ok(None)
                    }
                }
                Err(e) if crate::docker::is_not_found(&e) => Ok(None),
                Err(e) => Err(DockerError::api(format!("inspect image {reference}"))(e)),
            }
        })
    }

    /// Tar `root` and import it as `reference` (`repo:tag`) with the key label; returns (image id, tar bytes).
    fn import_rootfs(
        &self,
        root: &Path,
        reference: &str,
        spec: &BaseSpec,
        platform: &str,
    ) -> Result<(String, u64)> {
        let (key, arch, suite) = (&spec.key, &spec.arch, &spec.suite);
        let (repo, tag) = reference.rsplit_once(':').expect("image_ref has a tag");
        // Producer: tar on a plain thread, chunks through a bounded channel.
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Bytes>>(8);
        let root_owned = root.to_path_buf();
        let producer = std::thread::Builder::new()
            .name("cairn-tar".into())
            .spawn(move || -> std::io::Result<u64> {
                let mut w = ChunkWriter {
                    tx: tx.clone(),
                    buf: Vec::with_capacity(CHUNK),
                    total: 0,
                };
                let r = (|| {
                    let mut b = tar::Builder::new(&mut w);
                    b.follow_symlinks(false);
                    // The engine's tar extractor rejects GNU sparse entries (type 'S').
                    b.sparse(false);
                    b.mode(tar::HeaderMode::Complete);
                    b.append_dir_all(".", &root_owned)?;
                    b.finish()
                })();
                match r.and_then(|()| w.flush()) {
                    Ok(()) => Ok(w.total),
                    Err(e) => {
                        let _ = tx.send(Err(std::io::Error::new(e.kind(), e.to_string())));
                        Err(e)
                    }
                }
            })
            .map_err(DockerError::io("spawn the tar thread"))?;
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let body = futures_util::stream::unfold(rx, |rx| async move {
            let rx2 = rx.clone();
            let next =
                tokio::task::spawn_blocking(move || rx2.lock().expect("tar channel").recv().ok())
                    .await
                    .ok()
                    .flatten();
            next.map(|item| (item, rx))
        });

        let changes = vec![
            format!("LABEL {LABEL_KEY}={}", dockerfile_quote(key)),
            "CMD [\"/bin/bash\"]".to_string(),
            format!("ENV {}", crate::docker::image::layer::DEFAULT_PATH),
            // The engine's own architecture field may not say (API 1.41 import ignores the
            // platform's architecture), so record what debootstrap made.
            format!("LABEL {LABEL_DEBIAN_ARCH}={}", dockerfile_quote(arch)),
            format!("LABEL {LABEL_DEBIAN_SUITE}={}", dockerfile_quote(suite)),
        ];
        let opts = CreateImageOptionsBuilder::new()
            .from_src("-")
            .repo(repo)
            .tag(tag)
            .message(&format!("cairn base {reference}"))
            .changes(changes)
            .platform(platform)
            .build();
        let result: Result<()> = self.block_on(async {
            let mut s =
                self.inner
                    .api
                    .create_image(Some(opts), Some(bollard::body_try_stream(body)), None);
            while let Some(item) = s.next().await {
                let info = item.map_err(DockerError::api(format!("import {reference}")))?;
                tracing::debug!("import {reference}: {:?}", info.status);
            }
            Ok(())
        });
        let produced = producer
            .join()
            .map_err(|_| DockerError::Invalid("tar thread panicked".into()))?;
        result?;
        let tar_bytes = produced.map_err(DockerError::io(format!("tar {}", root.display())))?;
        let id = self.image_id(reference)?.ok_or_else(|| {
            DockerError::Invalid(format!("import finished but {reference} does not exist"))
        })?;
        Ok((id, tar_bytes))
    }
}

/// Quote a label value for a Dockerfile `LABEL` instruction.
fn dockerfile_quote(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

const CHUNK: usize = 1 << 20;

struct ChunkWriter {
    tx: std::sync::mpsc::SyncSender<std::io::Result<Bytes>>,
    buf: Vec<u8>,
    total: u64,
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.total += chunk.len() as u64;
        self.tx.send(Ok(Bytes::from(chunk))).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "import request ended early")
        })
    }
}

/// Run debootstrap, its output into `log`; on failure the error holds the last lines.
fn run_debootstrap(spec: &BaseSpec, mirror: &str, root: &Path, log: &Path) -> Result<()> {
    let mut cmd = Command::new(debootstrap_path());
    cmd.arg("--variant=minbase")
        .arg(format!("--arch={}", spec.arch));
    if !spec.packages.is_empty() {
        cmd.arg(format!("--include={}", spec.packages.join(",")));
    }
    if let Some(cache) = &spec.cache_dir {
        std::fs::create_dir_all(cache)
            .map_err(DockerError::io(format!("create {}", cache.display())))?;
        let cache = cache
            .canonicalize()
            .map_err(DockerError::io(format!("resolve {}", cache.display())))?;
        cmd.arg(format!("--cache-dir={}", cache.display()));
    }
    cmd.arg(&spec.suite).arg(root).arg(mirror);
    let out =
        std::fs::File::create(log).map_err(DockerError::io(format!("create {}", log.display())))?;
    let err = out.try_clone().map_err(DockerError::io("dup log handle"))?;
    tracing::info!("running {cmd:?}");
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(DockerError::io(format!(
            "run {}",
            debootstrap_path().display()
        )))?;
    if status.success() {
        return Ok(());
    }
    let mut text = std::fs::read_to_string(log).unwrap_or_default();
    // debootstrap's own detailed log, if it got that far
    if let Ok(detail) = std::fs::read_to_string(root.join("debootstrap/debootstrap.log")) {
        text.push_str("\n--- debootstrap/debootstrap.log ---\n");
        text.push_str(&tail_lines(&detail, 20));
    }
    Err(DockerError::Debootstrap {
        status: status.to_string(),
        log_tail: tail_lines(&text, 40),
    })
}

/// Drop the downloaded .debs and apt lists from the tree: they are not part of the image.
fn trim_rootfs(root: &Path) {
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_file() && p.file_name().is_some_and(|n| n != "lock") {
                    let _ = std::fs::remove_file(p);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms() {
        assert_eq!(docker_platform("amd64"), Some("linux/amd64"));
        assert_eq!(docker_platform("i386"), Some("linux/386"));
        assert_eq!(docker_platform("vax"), None);
    }

    #[test]
    fn label_quoting() {
        assert_eq!(dockerfile_quote("abc"), "\"abc\"");
        assert_eq!(dockerfile_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
