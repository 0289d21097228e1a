//! Unpacking a bundle, which is untrusted input: only regular files and folders, every path
//! relative and inside the destination (no absolute path, no `..`, no link of any kind, no
//! device), the manifest first and bounded, and no more bytes written than it declares
//! (plus [`SIZE_SLACK`]): a decompression bomb stops at its declared size.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use super::format::{Manifest, MANIFEST, MANIFEST_LIMIT, SIZE_SLACK};

/// Why an archive was refused or could not be read.
#[derive(Debug)]
pub enum Refused {
    /// Unsafe or malformed content: the archive is not opened further.
    Unsafe(String),
    /// Reading or writing failed.
    Io(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Unsafe(s) => write!(f, "refused: {s}"),
            Refused::Io(s) => f.write_str(s),
        }
    }
}

/// A path from an archive or a folder, checked: relative, only normal components.
pub fn safe_relative(path: &Path) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("entry {} climbs out with `..`", path.display()))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("entry {} is an absolute path", path.display()))
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err("an entry with an empty path".into());
    }
    if out.to_str().is_none() {
        return Err(format!("entry {} is not UTF-8", out.display()));
    }
    Ok(out)
}

/// The tar archive inside `archive` (`.tar.zst`), to read its entries in order.
fn open_archive(archive: &Path) -> Result<tar::Archive<impl Read>, Refused> {
    let f = File::open(archive).map_err(|e| Refused::Io(format!("{}: {e}", archive.display())))?;
    let dec = ruzstd::decoding::StreamingDecoder::new(io::BufReader::new(f))
        .map_err(|e| Refused::Unsafe(format!("not a zstd archive: {e}")))?;
    Ok(tar::Archive::new(dec))
}

/// The first file of an archive, at `rel`, which must be the manifest: its bytes (at most
/// [`MANIFEST_LIMIT`]) and what they say.
fn read_manifest(rel: &Path, entry: &mut impl Read) -> Result<(Vec<u8>, Manifest), Refused> {
    if rel != Path::new(MANIFEST) {
        return Err(Refused::Unsafe(format!(
            "the first entry is {}, not {MANIFEST}",
            rel.display()
        )));
    }
    let mut bytes = Vec::new();
    entry
        .take(MANIFEST_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::Unsafe(format!("{MANIFEST}: {e}")))?;
    if bytes.len() as u64 > MANIFEST_LIMIT {
        return Err(Refused::Unsafe(format!(
            "{MANIFEST} is larger than {MANIFEST_LIMIT} bytes"
        )));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| Refused::Unsafe(format!("{MANIFEST} does not parse: {e}")))?;
    Ok((bytes, m))
}

/// An entry's path, checked ([`safe_relative`]).
fn entry_path(entry: &tar::Entry<'_, impl Read>) -> Result<PathBuf, Refused> {
    let raw = entry
        .path()
        .map_err(|e| Refused::Unsafe(format!("an entry's path: {e}")))?
        .into_owned();
    safe_relative(&raw).map_err(Refused::Unsafe)
}

/// `archive`'s manifest alone, read as [`unpack`] reads it (its first file, bounded),
/// without unpacking the rest.
pub fn manifest_of(archive: &Path) -> Result<Manifest, Refused> {
    let mut tar = open_archive(archive)?;
    let entries = tar
        .entries()
        .map_err(|e| Refused::Unsafe(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| Refused::Unsafe(format!("a damaged entry: {e}")))?;
        let rel = entry_path(&entry)?;
        if entry.header().entry_type().is_dir() {
            continue;
        }
        return read_manifest(&rel, &mut entry).map(|(_, m)| m);
    }
    Err(Refused::Unsafe(format!("no {MANIFEST}")))
}

/// Unpacks `archive` (`.tar.zst`) into `dest` (created, must be empty) and returns its
/// manifest.
pub fn unpack(archive: &Path, dest: &Path) -> Result<Manifest, Refused> {
    let io_err = |what: &str, e: io::Error| Refused::Io(format!("{what}: {e}"));
    let mut tar = open_archive(archive)?;
    fs::create_dir_all(dest).map_err(|e| io_err(&dest.display().to_string(), e))?;
    let mut manifest: Option<Manifest> = None;
    let mut written: u64 = 0;
    let entries = tar
        .entries()
        .map_err(|e| Refused::Unsafe(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| Refused::Unsafe(format!("a damaged entry: {e}")))?;
        let rel = entry_path(&entry)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            fs::create_dir_all(dest.join(&rel))
                .map_err(|e| io_err(&rel.display().to_string(), e))?;
            continue;
        }
        if !kind.is_file() {
            return Err(Refused::Unsafe(format!(
                "entry {} is a {}, not a regular file",
                rel.display(),
                match kind {
                    tar::EntryType::Symlink => "symbolic link",
                    tar::EntryType::Link => "hard link",
                    tar::EntryType::Char | tar::EntryType::Block => "device",
                    tar::EntryType::Fifo => "FIFO",
                    _ => "special entry",
                }
            )));
        }
        if manifest.is_none() {
            let (bytes, m) = read_manifest(&rel, &mut entry)?;
            fs::write(dest.join(MANIFEST), &bytes).map_err(|e| io_err(MANIFEST, e))?;
            manifest = Some(m);
            continue;
        }
        let limit = manifest.as_ref().map_or(0, |m| m.total_bytes) + SIZE_SLACK;
        let path = dest.join(&rel);
        if path.exists() {
            return Err(Refused::Unsafe(format!(
                "entry {} appears twice",
                rel.display()
            )));
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| io_err(&dir.display().to_string(), e))?;
        }
        let mut out = File::create(&path).map_err(|e| io_err(&rel.display().to_string(), e))?;
        let allowed = limit.saturating_sub(written);
        let n = io::copy(&mut (&mut entry).take(allowed + 1), &mut out)
            .map_err(|e| io_err(&rel.display().to_string(), e))?;
        written += n;
        if written > limit {
            drop(out);
            let _ = fs::remove_file(&path);
            return Err(Refused::Unsafe(format!(
                "it unpacks to more than the {limit} bytes its manifest declares (at {}): a decompression bomb?",
                rel.display()
            )));
        }
    }
    manifest.ok_or_else(|| Refused::Unsafe(format!("no {MANIFEST}")))
}

/// Every regular file under `dir`, relative and sorted; a link or special file anywhere is
/// refused (an unpacked bundle must not point out of itself).
pub fn list_files(dir: &Path) -> Result<Vec<String>, Refused> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        let rd = fs::read_dir(&abs).map_err(|e| Refused::Io(format!("{}: {e}", abs.display())))?;
        for e in rd {
            let e = e.map_err(|e| Refused::Io(format!("{}: {e}", abs.display())))?;
            let t = e
                .file_type()
                .map_err(|e| Refused::Io(format!("{}: {e}", e)))?;
            let r = rel.join(e.file_name());
            if t.is_symlink() {
                return Err(Refused::Unsafe(format!("{} is a link", r.display())));
            } else if t.is_dir() {
                stack.push(r);
            } else if t.is_file() {
                out.push(
                    r.to_str()
                        .ok_or_else(|| Refused::Unsafe(format!("{} is not UTF-8", r.display())))?
                        .to_string(),
                );
            } else {
                return Err(Refused::Unsafe(format!(
                    "{} is not a regular file",
                    r.display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_inside() {
        assert!(safe_relative(Path::new("/etc/passwd")).is_err());
        assert!(safe_relative(Path::new("store/../../x")).is_err());
        assert!(safe_relative(Path::new("")).is_err());
        assert_eq!(
            safe_relative(Path::new("./store/records/a.json")).unwrap(),
            PathBuf::from("store/records/a.json")
        );
    }
}
