//! Image layers: run a shell command in a container from an image, or upload files into one, and commit the result as the next image.
//!
//! Each layer is tagged `cairn/<name>:<tag from key>` and labelled `cairn.key=<key>` and
//! `cairn.parent=<parent image id>`; an existing image with that tag and key is reused. The
//! committed image keeps the parent's `CMD`/`ENTRYPOINT` (not the layer's build command).

use std::time::Instant;

use bollard::models::ContainerConfig;
use bollard::query_parameters::{CommitContainerOptionsBuilder, UploadToContainerOptionsBuilder};

use crate::docker::{
    container_logs, create_build_container, image_ref, removing_container, wait_exit, Docker,
    DockerError, Result, LABEL_KEY, LABEL_PARENT, LABEL_RUN,
};

/// `PATH` for images without an `Env`.
pub(crate) const DEFAULT_PATH: &str =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A file placed into an image by [`Docker::file_layer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerFile {
    /// Path relative to the destination directory (no `..`).
    pub path: String,
    pub contents: Vec<u8>,
    /// Unix permission bits, e.g. `0o644`.
    pub mode: u32,
}

/// An image made by a layer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LayerImage {
    pub id: String,
    pub reference: String,
    /// False if it already existed with the same key.
    pub built: bool,
}

impl Docker {
    /// The layer image `reference` if it exists with this `key` (built before: reused).
    fn reused_layer(&self, reference: &str, key: &str) -> Result<Option<LayerImage>> {
        Ok(self.image_with_key(reference, key)?.map(|id| LayerImage {
            id,
            reference: reference.to_string(),
            built: false,
        }))
    }

    /// Run `script` with `/bin/sh -c` (as root, with network, `env` as `KEY=VALUE`, exported
    /// for the script only, not kept in the image) in a
    /// container from `parent` and commit the result as `cairn/<name>:<tag from key>`.
    /// A non-zero exit fails with the last lines of the output.
    pub fn run_layer(
        &self,
        parent: &str,
        name: &str,
        key: &str,
        script: &str,
        env: &[String],
    ) -> Result<LayerImage> {
        let reference = image_ref(name, key);
        if let Some(done) = self.reused_layer(&reference, key)? {
            return Ok(done);
        }
        let t0 = Instant::now();
        let api = &self.inner.api;
        let id = self.block_on(async {
            // The environment goes into the script, not the container: the engine merges a
            // committed container's Env (and Labels) into the image.
            let cmd = vec![
                "/bin/sh".to_string(),
                "-c".to_string(),
                with_exports(env, script)?,
            ];
            let cid =
                create_build_container(api, &self.run_id, parent, cmd, Vec::new(), true).await?;
            let r = async {
                api.start_container(&cid, None)
                    .await
                    .map_err(DockerError::api(format!(
                        "start layer container from {parent}"
                    )))?;
                let code = wait_exit(api, &cid).await?;
                if code != 0 {
                    let out = container_logs(api, &cid, Some(30)).await?;
                    return Err(DockerError::Command {
                        cmd: script.to_string(),
                        image: parent.to_string(),
                        code,
                        output_tail: out.tail(30),
                    });
                }
                commit(api, &cid, parent, &reference, key).await
            }
            .await;
            removing_container(api, &cid, r).await
        })?;
        tracing::info!("cairn: layer {reference} built in {:.1?}", t0.elapsed());
        Ok(LayerImage {
            id,
            reference,
            built: true,
        })
    }

    /// Upload `files` under the absolute directory `dest` into a container from `parent`
    /// (not started) and commit it as `cairn/<name>:<tag from key>`.
    pub fn file_layer(
        &self,
        parent: &str,
        name: &str,
        key: &str,
        dest: &str,
        files: &[LayerFile],
    ) -> Result<LayerImage> {
        if !dest.starts_with('/') {
            return Err(DockerError::Invalid(format!(
                "file layer destination `{dest}` is not absolute"
            )));
        }
        let reference = image_ref(name, key);
        if let Some(done) = self.reused_layer(&reference, key)? {
            return Ok(done);
        }
        let archive = tar_files(files)?;
        let api = &self.inner.api;
        let id = self.block_on(async {
            // The directory must exist for the upload; create it with a short run first.
            let cmd = vec!["/bin/mkdir".to_string(), "-p".to_string(), dest.to_string()];
            let cid =
                create_build_container(api, &self.run_id, parent, cmd, Vec::new(), false).await?;
            let r = async {
                api.start_container(&cid, None)
                    .await
                    .map_err(DockerError::api(format!(
                        "start file-layer container from {parent}"
                    )))?;
                let code = wait_exit(api, &cid).await?;
                if code != 0 {
                    return Err(DockerError::Invalid(format!(
                        "mkdir -p {dest} in {parent} exited with {code}"
                    )));
                }
                let opts = UploadToContainerOptionsBuilder::new().path(dest).build();
                api.upload_to_container(&cid, Some(opts), bollard::body_full(archive.into()))
                    .await
                    .map_err(DockerError::api(format!("upload files to {dest}")))?;
                commit(api, &cid, parent, &reference, key).await
            }
            .await;
            removing_container(api, &cid, r).await
        })?;
        Ok(LayerImage {
            id,
            reference,
            built: true,
        })
    }
}

impl Docker {
    /// Commit an image from `parent` whose config `Env` also holds `vars` (`KEY=VALUE`; a
    /// variable the parent sets is replaced), as `cairn/<name>:<tag from key>`. Containers
    /// made from it (servers, later layers) see the variables.
    pub fn env_layer(
        &self,
        parent: &str,
        name: &str,
        key: &str,
        vars: &[String],
    ) -> Result<LayerImage> {
        with_exports(vars, "")?; // the same checks of names as for run layers
        let reference = image_ref(name, key);
        if let Some(done) = self.reused_layer(&reference, key)? {
            return Ok(done);
        }
        let api = &self.inner.api;
        let id = self.block_on(async {
            // never started: only its config is committed
            let cmd = vec!["/bin/true".to_string()];
            let cid =
                create_build_container(api, &self.run_id, parent, cmd, Vec::new(), false).await?;
            let r = commit_with_env(api, &cid, parent, &reference, key, vars, &[]).await;
            removing_container(api, &cid, r).await
        })?;
        Ok(LayerImage {
            id,
            reference,
            built: true,
        })
    }
}

/// `base` (`KEY=VALUE` items) with `vars` set: a variable already there is replaced in place.
pub(crate) fn merge_env(base: &[String], vars: &[String]) -> Vec<String> {
    let key = |kv: &str| kv.split_once('=').map_or(kv, |(k, _)| k).to_string();
    let mut out: Vec<String> = base.to_vec();
    for v in vars {
        match out.iter().position(|b| key(b) == key(v)) {
            Some(i) => out[i] = v.clone(),
            None => out.push(v.clone()),
        }
    }
    out
}

/// `script` preceded by `export KEY='value'` lines for `env` (`KEY=VALUE` items).
pub(crate) fn with_exports(env: &[String], script: &str) -> Result<String> {
    let mut s = String::new();
    for kv in env {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            DockerError::Invalid(format!("environment item `{kv}` is not KEY=VALUE"))
        })?;
        let valid = !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(DockerError::Invalid(format!(
                "bad environment variable name `{k}`"
            )));
        }
        s.push_str(&format!("export {k}='{}'\n", v.replace('\'', "'\\''")));
    }
    s.push_str(script);
    Ok(s)
}

/// A tar archive of `files` (owner root, given modes).
pub(crate) fn tar_files(files: &[LayerFile]) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    for f in files {
        let path = f.path.trim_start_matches('/');
        if path.is_empty() || path.split('/').any(|c| c == "..") {
            return Err(DockerError::Invalid(format!(
                "bad layer file path `{}`",
                f.path
            )));
        }
        let mut h = tar::Header::new_gnu();
        h.set_size(f.contents.len() as u64);
        h.set_mode(f.mode);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, f.contents.as_slice())
            .map_err(DockerError::io(format!("tar {path}")))?;
    }
    b.into_inner().map_err(DockerError::io("finish tar"))
}

/// Commit container `cid` as `reference`, keeping `parent`'s CMD/ENTRYPOINT; returns the image id.
pub(crate) async fn commit(
    api: &bollard::Docker,
    cid: &str,
    parent: &str,
    reference: &str,
    key: &str,
) -> Result<String> {
    commit_with_env(api, cid, parent, reference, key, &[], &[]).await
}

/// As [`commit`], with `extra` labels on the image (e.g. a source build's facts).
pub(crate) async fn commit_labelled(
    api: &bollard::Docker,
    cid: &str,
    parent: &str,
    reference: &str,
    key: &str,
    extra: &[(&str, String)],
) -> Result<String> {
    commit_with_env(api, cid, parent, reference, key, &[], extra).await
}

/// As [`commit`], with `vars` set in the image's `Env` on top of the parent's and `extra` labels.
async fn commit_with_env(
    api: &bollard::Docker,
    cid: &str,
    parent: &str,
    reference: &str,
    key: &str,
    vars: &[String],
    extra: &[(&str, String)],
) -> Result<String> {
    let parent_img = api
        .inspect_image(parent)
        .await
        .map_err(DockerError::api(format!("inspect image {parent}")))?;
    let pconf = parent_img.config.unwrap_or_default();
    let parent_id = parent_img.id.unwrap_or_default();
    let mut labels = pconf.labels.unwrap_or_default();
    labels.insert(LABEL_KEY.into(), key.into());
    labels.insert(LABEL_PARENT.into(), parent_id);
    for (k, v) in extra {
        labels.insert(k.to_string(), v.clone());
    }
    // the engine merges the build container's labels into the image, and the image's into
    // every container made from it: an empty run label there names no run (a container of a
    // cairn run sets its own), so neither `cairn clean` nor a later run takes a container
    // someone made from a cairn image for a leftover of this build's run
    labels.insert(LABEL_RUN.into(), String::new());
    let config = ContainerConfig {
        cmd: Some(pconf.cmd.unwrap_or_else(|| vec!["/bin/bash".into()])),
        entrypoint: pconf.entrypoint,
        // Set explicitly: the engine would otherwise merge in the layer container's env.
        env: Some(merge_env(
            &pconf
                .env
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| vec![DEFAULT_PATH.to_string()]),
            vars,
        )),
        labels: Some(labels),
        ..Default::default()
    };
    let (repo, tag) = reference.rsplit_once(':').expect("image_ref has a tag");
    let opts = CommitContainerOptionsBuilder::new()
        .container(cid)
        .repo(repo)
        .tag(tag)
        .comment(&format!("cairn layer {reference}"))
        .pause(false)
        .build();
    let r = api
        .commit_container(opts, config)
        .await
        .map_err(DockerError::api(format!("commit {reference}")))?;
    Ok(r.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports() {
        let s = with_exports(&["A=it's".into(), "B_2=x=y".into()], "echo $A").unwrap();
        assert_eq!(s, "export A='it'\\''s'\nexport B_2='x=y'\necho $A");
        assert!(with_exports(&["1X=a".into()], "").is_err());
        assert!(with_exports(&["NOEQ".into()], "").is_err());
    }

    #[test]
    fn env_merging_replaces_in_place() {
        let base = vec!["PATH=/bin".to_string(), "A=1".to_string()];
        let m = merge_env(&base, &["A=2".into(), "B=x=y".into()]);
        assert_eq!(m, ["PATH=/bin", "A=2", "B=x=y"]);
    }

    #[test]
    fn tar_of_files() {
        let files = [LayerFile {
            path: "a/b.cnf".into(),
            contents: b"[x]\n".to_vec(),
            mode: 0o640,
        }];
        let t = tar_files(&files).unwrap();
        let mut a = tar::Archive::new(t.as_slice());
        let e: Vec<_> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().into_owned())
            .collect();
        assert_eq!(e, [std::path::PathBuf::from("a/b.cnf")]);
        let bad = [LayerFile {
            path: "../x".into(),
            contents: vec![],
            mode: 0o644,
        }];
        assert!(tar_files(&bad).is_err());
    }
}
