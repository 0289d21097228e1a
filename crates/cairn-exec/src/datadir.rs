//! Datadir snapshots on the host: restore a snapshot archive into a directory (zero blocks left as holes, so a mostly empty redo log costs no writes), archive a directory back, and a digest of a datadir's contents — what every restore must reproduce exactly.
//!
//! A snapshot is a tar archive whose entries are `data/…` (what the Docker Engine's archive
//! API and [`archive`] write). [`restore`] is the cheap way back: the archive is read once
//! from the page cache and only the blocks that hold data are written; a block of zeros is
//! skipped (the file is extended to its size at the end), so the file reads back the same
//! bytes. InnoDB's redo log after a clean shutdown is mostly zeros, which is most of a small
//! dataset's snapshot.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// What a restore wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Restored {
    /// Regular files restored.
    pub files: u64,
    /// Their bytes, holes included (what the archive holds).
    pub bytes: u64,
    /// Bytes actually written (blocks that were not all zeros).
    pub written: u64,
}

/// The unit a restore writes or skips: small enough that a half-used InnoDB page run is
/// still skipped, large enough that the zero test and the syscalls stay cheap.
const BLOCK: usize = 64 * 1024;

/// Unpack `archive` (entries `data/…`) under `parent` (so the datadir is `parent/data`),
/// keeping modes, and owners when run as root. Entries outside `parent` (absolute paths,
/// `..`) and links are refused: a snapshot holds directories and regular files.
pub fn restore(archive: &Path, parent: &Path) -> io::Result<Restored> {
    let f = File::open(archive)?;
    let mut a = tar::Archive::new(BufReader::with_capacity(1 << 20, f));
    let root = is_root();
    let mut out = Restored::default();
    let mut block = vec![0u8; BLOCK];
    // directories get their mode last, so a read-only one does not stop its own files
    let mut dirs: Vec<(PathBuf, u32, u64, u64)> = Vec::new();
    for entry in a.entries()? {
        let mut entry = entry?;
        let rel = entry.path()?.into_owned();
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(invalid(format!(
                "{}: a path outside the datadir",
                rel.display()
            )));
        }
        let path = parent.join(&rel);
        let h = entry.header();
        let (mode, uid, gid) = (h.mode()?, h.uid()?, h.gid()?);
        match h.entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&path)?;
                dirs.push((path, mode, uid, gid));
            }
            // a sparse entry reads back expanded (its holes as zeros), at its real size
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                let size = entry.size();
                if let Some(p) = path.parent() {
                    std::fs::create_dir_all(p)?;
                }
                let file = File::create(&path)?;
                let mut at = 0u64;
                while at < size {
                    let n = ((size - at) as usize).min(BLOCK);
                    entry.read_exact(&mut block[..n])?;
                    if !is_zero(&block[..n]) {
                        file.write_all_at(&block[..n], at)?;
                        out.written += n as u64;
                    }
                    at += n as u64;
                }
                file.set_len(size)?;
                file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
                if root {
                    std::os::unix::fs::fchown(&file, Some(uid as u32), Some(gid as u32))?;
                }
                out.files += 1;
                out.bytes += size;
            }
            other => {
                return Err(invalid(format!(
                    "{}: a {other:?} entry (a datadir snapshot holds directories and files)",
                    rel.display()
                )))
            }
        }
    }
    for (path, mode, uid, gid) in dirs.into_iter().rev() {
        if root {
            std::os::unix::fs::chown(&path, Some(uid as u32), Some(gid as u32))?;
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o7777))?;
    }
    Ok(out)
}

/// Write `datadir` to `dest` as a snapshot archive (entries `data/…`, modes and owners
/// kept); returns the archive's size. The directory must not change meanwhile (its server
/// is stopped).
pub fn archive(datadir: &Path, dest: &Path) -> io::Result<u64> {
    let f = File::create(dest)?;
    let mut b = tar::Builder::new(io::BufWriter::with_capacity(1 << 20, f));
    b.follow_symlinks(false);
    b.mode(tar::HeaderMode::Complete);
    b.append_dir_all("data", datadir)?;
    let f = b.into_inner()?.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()?;
    Ok(f.metadata()?.len())
}

/// blake3 over a directory tree: every entry's relative path, type, mode, owner, size and
/// contents, in path order (times left out: a restore need not keep them, the server does
/// not read them). Two datadirs with the same digest hold the same bytes.
pub fn digest(dir: &Path) -> io::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let mut h = blake3::Hasher::new();
    let mut stack = vec![PathBuf::new()];
    let mut entries = Vec::new();
    while let Some(rel) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(dir.join(&rel))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        names.sort();
        for n in names {
            let r = rel.join(n);
            let m = std::fs::symlink_metadata(dir.join(&r))?;
            if m.is_dir() {
                stack.push(r.clone());
            }
            entries.push((r, m));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (rel, m) in entries {
        let kind = if m.is_dir() {
            "d"
        } else if m.is_file() {
            "f"
        } else {
            "o"
        };
        h.update(
            format!(
                "{}\0{kind}\0{:o}\0{}:{}\0{}\0",
                rel.display(),
                m.mode() & 0o7777,
                m.uid(),
                m.gid(),
                if m.is_file() { m.len() } else { 0 }
            )
            .as_bytes(),
        );
        if m.is_file() {
            h.update_reader(File::open(dir.join(&rel))?)?;
        }
    }
    Ok(h.finalize().to_hex().to_string())
}

fn is_zero(b: &[u8]) -> bool {
    // word at a time: the common case is a long run of zeros
    let (head, words, tail) = unsafe { b.align_to::<u64>() };
    head.iter().all(|&x| x == 0) && words.iter().all(|&x| x == 0) && tail.iter().all(|&x| x == 0)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions
    unsafe { libc::geteuid() == 0 }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dir: &Path) {
        let data = dir.join("data");
        std::fs::create_dir_all(data.join("db")).unwrap();
        std::fs::write(data.join("small"), b"abc").unwrap();
        // zeros around data: holes on restore, the same bytes on reading
        let mut big = vec![0u8; 5 * BLOCK + 123];
        big[BLOCK + 7] = 1;
        big[5 * BLOCK + 100] = 9;
        std::fs::write(data.join("db/big"), &big).unwrap();
        std::fs::write(data.join("db/zeros"), vec![0u8; 3 * BLOCK]).unwrap();
        std::fs::set_permissions(data.join("small"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
    }

    #[test]
    fn restore_gives_back_the_archived_bytes_with_zero_blocks_unwritten() {
        let src = tempfile::tempdir().unwrap();
        tree(src.path());
        let tar = src.path().join("snap.tar");
        archive(&src.path().join("data"), &tar).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let r = restore(&tar, dst.path()).unwrap();
        assert_eq!(r.files, 3);
        assert_eq!(r.bytes, 3 + (5 * BLOCK + 123) as u64 + 3 * BLOCK as u64);
        // "abc", the block with the 1, the last partial block with the 9
        assert_eq!(r.written, 3 + BLOCK as u64 + 123);
        assert_eq!(
            digest(&src.path().join("data")).unwrap(),
            digest(&dst.path().join("data")).unwrap()
        );
        let mode = std::fs::metadata(dst.path().join("data/small"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn digest_sees_contents_and_modes() {
        let a = tempfile::tempdir().unwrap();
        tree(a.path());
        let d0 = digest(a.path()).unwrap();
        std::fs::write(a.path().join("data/small"), b"abd").unwrap();
        let d1 = digest(a.path()).unwrap();
        assert_ne!(d0, d1);
        std::fs::set_permissions(
            a.path().join("data/small"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert_ne!(d1, digest(a.path()).unwrap());
    }

    #[test]
    fn entries_outside_the_directory_are_refused() {
        let src = tempfile::tempdir().unwrap();
        let tar = src.path().join("bad.tar");
        let mut b = tar::Builder::new(File::create(&tar).unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        // tar's own API refuses `..` in set_path: write the raw name
        let name = b"data/../../escape";
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_cksum();
        b.append(&h, &b"x"[..]).unwrap();
        b.finish().unwrap();
        drop(b);
        let dst = tempfile::tempdir().unwrap();
        let e = restore(&tar, dst.path()).unwrap_err();
        assert!(e.to_string().contains("outside the datadir"), "{e}");
    }
}
