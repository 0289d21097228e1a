//! Content-addressed blobs: `blobs/<aa>/<digest>`, written atomically, verified on read.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::atomic::{self, TmpGuard};
use crate::error::{Result, StoreError};
use crate::{is_hex64, Store};

/// A reference to a blob: its blake3 digest (64 hex) and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlobRef {
    /// blake3 of the content, 64 lowercase hex characters.
    pub digest: String,
    /// Size of the content in bytes.
    pub size: u64,
}

const BUF: usize = 64 * 1024;

pub(crate) fn check_digest(digest: &str) -> Result<()> {
    if is_hex64(digest) {
        Ok(())
    } else {
        Err(StoreError::InvalidDigest {
            digest: digest.to_string(),
        })
    }
}

/// Index of the `blobs/<aa>` directory for a valid digest.
fn dir_index(digest: &str) -> usize {
    usize::from_str_radix(&digest[..2], 16).unwrap_or(0)
}

impl Store {
    /// Where the blob with this digest lives (`blobs/<aa>/<digest>`). The digest should be
    /// valid (see [`crate::is_hex64`]); an invalid one gets a path under `blobs/invalid/`.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        if is_hex64(digest) {
            let mut p = self.blobs.join(&digest[..2]);
            p.push(digest);
            p
        } else {
            self.blobs
                .join("invalid")
                .join(digest.replace(['/', '\\'], "_"))
        }
    }

    /// Does the store hold this blob with that size? One `stat`; does not re-hash.
    pub fn has_blob(&self, b: &BlobRef) -> bool {
        is_hex64(&b.digest)
            && fs::metadata(self.blob_path(&b.digest))
                .map(|m| m.is_file() && m.len() == b.size)
                .unwrap_or(false)
    }

    /// Stores `bytes`; a no-op (one `stat`) if the blob already exists.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<BlobRef> {
        let digest = crate::hash_bytes(bytes);
        let b = BlobRef {
            digest,
            size: bytes.len() as u64,
        };
        if self.has_blob(&b) {
            return Ok(b);
        }
        let (mut f, tmp) = atomic::create_tmp(&self.tmp, "blob")?;
        let mut guard = TmpGuard(Some(tmp.clone()));
        f.write_all(bytes)
            .map_err(|e| StoreError::io("write temp file", &tmp, e))?;
        self.finish_blob(f, &tmp, &b)?;
        guard.disarm();
        Ok(b)
    }

    /// Stores the file at `path`, hashing while copying it into the store; a no-op for the
    /// store if the blob already exists.
    pub fn put_blob_file(&self, path: &Path) -> Result<BlobRef> {
        let src = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        self.put_blob_from(src, path)
    }

    /// Stores what `src` reads to its end, hashing while copying it into the store; a
    /// no-op for the store if the blob already exists. `name` names it in errors.
    pub fn put_blob_reader(&self, src: impl Read, name: &Path) -> Result<BlobRef> {
        self.put_blob_from(src, name)
    }

    fn put_blob_from(&self, mut src: impl Read, name: &Path) -> Result<BlobRef> {
        let (mut f, tmp) = atomic::create_tmp(&self.tmp, "blob")?;
        let mut guard = TmpGuard(Some(tmp.clone()));
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; BUF];
        let mut size = 0u64;
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io("read", name, e)),
            };
            hasher.update(&buf[..n]);
            f.write_all(&buf[..n])
                .map_err(|e| StoreError::io("write temp file", &tmp, e))?;
            size += n as u64;
        }
        let b = BlobRef {
            digest: hasher.finalize().to_hex().to_string(),
            size,
        };
        if self.has_blob(&b) {
            return Ok(b); // the guard removes the temp copy
        }
        self.finish_blob(f, &tmp, &b)?;
        guard.disarm();
        Ok(b)
    }

    /// Moves the regular file at `path` into the store as a blob: hashed where it is, then
    /// fsynced and renamed into `blobs/<aa>/<digest>` — no copy, and no temp file made and
    /// deleted. When the store already has the blob the file stays where it is; when it is
    /// not a plain file of its own (a link, another filesystem) it is copied as by
    /// [`Store::put_blob_file`]. The caller must not write to it afterwards.
    pub fn adopt_file(&self, path: &Path) -> Result<BlobRef> {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(path).map_err(|e| StoreError::io("stat", path, e))?;
        if !meta.file_type().is_file() || meta.nlink() != 1 {
            return self.put_blob_file(path);
        }
        let mut f = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; BUF.min(meta.len() as usize + 1)];
        let mut size = 0u64;
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io("read", path, e)),
            };
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        let b = BlobRef {
            digest: hasher.finalize().to_hex().to_string(),
            size,
        };
        if self.has_blob(&b) {
            return Ok(b);
        }
        f.sync_all().map_err(|e| StoreError::io("fsync", path, e))?;
        drop(f);
        let dest = self.blob_path(&b.digest);
        self.ensure_blob_dir(&b.digest)?;
        match fs::rename(path, &dest) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                // blobs are read like any other: what mode the command gave it is not theirs
                let _ = fs::set_permissions(&dest, fs::Permissions::from_mode(0o644));
                Ok(b)
            }
            // another filesystem, or a directory removed by hand: copy instead
            Err(_) => self.put_blob_file(path),
        }
    }

    /// fsyncs the temp file and renames it into `blobs/<aa>/<digest>`, creating `<aa>` once.
    fn finish_blob(&self, f: File, tmp: &Path, b: &BlobRef) -> Result<()> {
        f.sync_all()
            .map_err(|e| StoreError::io("fsync temp file", tmp, e))?;
        drop(f);
        let dest = self.blob_path(&b.digest);
        self.ensure_blob_dir(&b.digest)?;
        match fs::rename(tmp, &dest) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // `blobs/<aa>` vanished since we cached it (removed by hand): recreate once.
                self.blob_dirs[dir_index(&b.digest)].store(false, Ordering::Relaxed);
                self.ensure_blob_dir(&b.digest)?;
                atomic::rename(tmp, &dest)
            }
            r => r.map_err(|e| StoreError::io("rename temp file into place at", dest, e)),
        }
    }

    fn ensure_blob_dir(&self, digest: &str) -> Result<()> {
        let flag = &self.blob_dirs[dir_index(digest)];
        if flag.load(Ordering::Relaxed) {
            return Ok(());
        }
        let dir = self.blobs.join(&digest[..2]);
        match fs::create_dir(&dir) {
            Ok(()) => {
                // Make the new directory's entry durable once; later blobs in it are not
                // dir-fsynced (a lost blob entry after a crash reads as "missing", never as
                // wrong content, and `has_blob` makes the step re-run).
                atomic::fsync_dir(&self.blobs)?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::io("create directory", dir, e)),
        }
        flag.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Reads a blob, checking its size and hash.
    pub fn read_blob(&self, b: &BlobRef) -> Result<Vec<u8>> {
        check_digest(&b.digest)?;
        let path = self.blob_path(&b.digest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::MissingBlob {
                    digest: b.digest.clone(),
                    path,
                })
            }
            Err(e) => return Err(StoreError::io("read", path, e)),
        };
        let actual = crate::hash_bytes(&bytes);
        check_content(b, &path, bytes.len() as u64, &actual)?;
        Ok(bytes)
    }

    /// Copies a blob to `dest` (replacing it), checking size and hash while copying. On a
    /// mismatch `dest` is left untouched and `Corrupt` is returned.
    pub fn copy_blob_to(&self, b: &BlobRef, dest: &Path) -> Result<()> {
        check_digest(&b.digest)?;
        let path = self.blob_path(&b.digest);
        let mut src = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::MissingBlob {
                    digest: b.digest.clone(),
                    path,
                })
            }
            Err(e) => return Err(StoreError::io("open", path, e)),
        };
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp_dest = dest.with_file_name(format!(
            ".{}.cairn-{}.tmp",
            name.unwrap_or_default(),
            std::process::id()
        ));
        let mut out =
            File::create(&tmp_dest).map_err(|e| StoreError::io("create", &tmp_dest, e))?;
        let mut guard = TmpGuard(Some(tmp_dest.clone()));
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; BUF];
        let mut size = 0u64;
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io("read", &path, e)),
            };
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| StoreError::io("write", &tmp_dest, e))?;
            size += n as u64;
        }
        drop(out);
        check_content(b, &path, size, &hasher.finalize().to_hex())?;
        fs::rename(&tmp_dest, dest).map_err(|e| StoreError::io("rename into", dest, e))?;
        guard.disarm();
        Ok(())
    }
}

pub(crate) fn check_content(b: &BlobRef, path: &Path, size: u64, actual: &str) -> Result<()> {
    if size != b.size {
        return Err(StoreError::Corrupt {
            digest: b.digest.clone(),
            path: path.to_path_buf(),
            reason: format!("size is {size} bytes, expected {}", b.size),
        });
    }
    if actual != b.digest {
        return Err(StoreError::Corrupt {
            digest: b.digest.clone(),
            path: path.to_path_buf(),
            reason: format!("content hashes to {actual}"),
        });
    }
    Ok(())
}
