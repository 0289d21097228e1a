//! Images as files, for engines that do not share this one's storage (a cluster node's own
//! engine): `docker save` of an image into an archive written whole (temp file, then
//! rename), and `POST /images/load` of such an archive into an engine.

use std::path::Path;

use bollard::query_parameters::ImportImageOptionsBuilder;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::docker::{Docker, DockerError, Result};

/// How much of an archive goes to the engine per request chunk.
const CHUNK: usize = 1 << 20;

impl Docker {
    /// Write image `reference` as a `docker save` archive to `dest`, whole: a reader sees
    /// the complete archive or none. Returns its size in bytes.
    pub fn save_image(&self, reference: &str, dest: &Path) -> Result<u64> {
        let tmp = dest.with_extension(format!("tmp-{}", std::process::id()));
        let written = self.block_on(async {
            let mut file = tokio::fs::File::create(&tmp)
                .await
                .map_err(DockerError::io(format!("creating {}", tmp.display())))?;
            let mut stream = self.api().export_image(reference);
            let mut n = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(DockerError::api(format!("save image {reference}")))?;
                n += chunk.len() as u64;
                file.write_all(&chunk)
                    .await
                    .map_err(DockerError::io(format!("writing {}", tmp.display())))?;
            }
            file.sync_all()
                .await
                .map_err(DockerError::io(format!("writing {}", tmp.display())))?;
            Ok(n)
        });
        let n = match written {
            Ok(n) => n,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        std::fs::rename(&tmp, dest).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            DockerError::Io {
                op: format!("renaming {} to {}", tmp.display(), dest.display()),
                source: e,
            }
        })?;
        Ok(n)
    }

    /// Load the `docker save` archive `archive` into this engine (`POST /images/load`),
    /// streamed from the file; returns what the engine said it loaded (`Loaded image: …`).
    /// An archive the engine cannot read is an error with the engine's words.
    pub fn load_image(&self, archive: &Path) -> Result<Vec<String>> {
        let what = format!("load image archive {}", archive.display());
        self.block_on(async {
            let file = tokio::fs::File::open(archive)
                .await
                .map_err(DockerError::io(format!("opening {}", archive.display())))?;
            let body = futures_util::stream::unfold(file, |mut file| async move {
                let mut buf = vec![0u8; CHUNK];
                match file.read(&mut buf).await {
                    Ok(0) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some((Ok::<Bytes, std::io::Error>(Bytes::from(buf)), file))
                    }
                    Err(e) => Some((Err(e), file)),
                }
            });
            let opts = ImportImageOptionsBuilder::new().quiet(true).build();
            let mut answers = self.api().import_image_stream(opts, body, None);
            let mut loaded = Vec::new();
            while let Some(info) = answers.next().await {
                let info = info.map_err(DockerError::api(what.clone()))?;
                if let Some(s) = info.stream.as_deref().map(str::trim) {
                    if !s.is_empty() {
                        loaded.push(s.to_string());
                    }
                }
            }
            Ok(loaded)
        })
    }
}
