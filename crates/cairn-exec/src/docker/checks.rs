//! Variant checks: evidence that a running server is the variant it claims to be (version, build machine, allocator, binary word size, mapped libraries).
//!
//! SQL variables come from the server itself (the system's client via exec); the word size and the
//! mapped libraries are read on the host through the server's host PID: the ELF class byte
//! of `/proc/<pid>/exe` and the paths in `/proc/<pid>/maps` (inside the container the server
//! is non-dumpable and `/proc/<pid>/maps` is denied).

use std::io::Read;
use std::path::Path;

use super::server::Server;
use super::{Docker, DockerError, Result};

/// Whether one allocator library is mapped into the server process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AllocatorCheck {
    /// What was looked for, e.g. `libtcmalloc_minimal`.
    pub library: String,
    pub mapped: bool,
    /// The mapped file(s) that matched.
    pub paths: Vec<String>,
    /// Whether the server's binary itself needs the library (`DT_NEEDED`, e.g. Debian's
    /// MySQL links tcmalloc): then it is the server's own allocator, not one preloaded.
    #[serde(default)]
    pub linked: bool,
}

/// What the running server is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VariantChecks {
    /// `@@version`, e.g. `10.11.11-MariaDB-0+deb12u1`.
    pub version: String,
    /// `@@version_compile_machine`, e.g. `x86_64`, `i686`.
    pub compile_machine: String,
    /// `@@version_malloc_library`, e.g. `system`, `tcmalloc gperftools 2.10`.
    pub malloc_library: String,
    /// 32 or 64, from the ELF header of the running binary.
    pub word_size: u8,
    /// `/proc/<pid>/comm` of the process checked (should be `mariadbd`).
    pub process_name: String,
    /// The binary's path as the process sees it (`readlink /proc/<pid>/exe`).
    pub binary: String,
    pub host_pid: u32,
    pub allocators: Vec<AllocatorCheck>,
}

impl VariantChecks {
    /// Whether a library whose name contains `library` was found mapped.
    pub fn is_mapped(&self, library: &str) -> bool {
        self.allocators
            .iter()
            .any(|a| a.library == library && a.mapped)
    }
}

impl Docker {
    /// Check the running `server`; `allocators` are library name fragments to look for in
    /// its memory map (e.g. `libtcmalloc_minimal`, `libjemalloc`).
    pub fn variant_checks(&self, server: &Server, allocators: &[&str]) -> Result<VariantChecks> {
        // the answer the readiness check already asked for, else ask now
        let out = match &server.variant_row {
            Some(row) => row.clone(),
            None => self.sql(server, server.db_system()?.variant_query())?,
        };
        let line = out.lines().next().unwrap_or_default();
        let f: Vec<&str> = line.split('\t').collect();
        // a trailing empty column (no malloc library reported) may have been trimmed
        if f.len() < 2 {
            return Err(DockerError::Invalid(format!(
                "unexpected variable output: {out:?}"
            )));
        }
        let proc_dir = Path::new("/proc").join(server.host_pid.to_string());
        let word_size = elf_word_size(&proc_dir.join("exe"))?;
        let maps = std::fs::read_to_string(proc_dir.join("maps"))
            .map_err(DockerError::io(format!("read {}/maps", proc_dir.display())))?;
        let process_name = std::fs::read_to_string(proc_dir.join("comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let binary = std::fs::read_link(proc_dir.join("exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let needed = elf_needed(&proc_dir.join("exe"))?;
        let allocators: Vec<AllocatorCheck> = allocators
            .iter()
            .map(|lib| allocator_in_maps(&maps, lib).linked_by(&needed))
            .collect();
        let malloc_library = match f.get(2).copied().unwrap_or_default() {
            "" => mapped_allocator(&allocators),
            reported => reported.to_string(),
        };
        Ok(VariantChecks {
            version: f[0].to_string(),
            compile_machine: f[1].to_string(),
            malloc_library,
            word_size,
            process_name,
            binary,
            host_pid: server.host_pid,
            allocators,
        })
    }
}

impl AllocatorCheck {
    /// With [`AllocatorCheck::linked`] set from the binary's needed libraries.
    pub fn linked_by(mut self, needed: &[String]) -> Self {
        self.linked = needed.iter().any(|n| n.contains(&self.library));
        self
    }
}

/// The allocator of a server that does not report one (MySQL has no
/// `@@version_malloc_library`), from its memory map: each library looked for that is
/// mapped, `linked` by the binary or `loaded` otherwise (preloaded), else `system`.
pub fn mapped_allocator(allocators: &[AllocatorCheck]) -> String {
    let mapped: Vec<String> = allocators
        .iter()
        .filter(|a| a.mapped)
        .map(|a| {
            let how = if a.linked { "linked" } else { "loaded" };
            format!("{} ({how})", a.library)
        })
        .collect();
    if mapped.is_empty() {
        "system (from the memory map)".into()
    } else {
        format!("{} (from the memory map)", mapped.join(", "))
    }
}

/// The libraries an ELF binary needs (`DT_NEEDED` of its dynamic section), by name (e.g.
/// `libtcmalloc.so.4`); none for a static binary. Little-endian ELF, 32 or 64-bit.
pub fn elf_needed(path: &Path) -> Result<Vec<String>> {
    use std::io::{Seek, SeekFrom};
    let what = || format!("read the dynamic section of {}", path.display());
    let mut f = std::fs::File::open(path).map_err(DockerError::io(what()))?;
    let mut at = |offset: u64, len: usize| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(DockerError::io(what()))?;
        Ok(buf)
    };
    let head = at(0, 64)?;
    let wide = match elf_class(&head) {
        Some(64) => true,
        Some(_) => false,
        None => {
            return Err(DockerError::Invalid(format!(
                "{} is not an ELF file",
                path.display()
            )))
        }
    };
    if head[5] != 1 {
        return Err(DockerError::Invalid(format!(
            "{} is a big-endian ELF file",
            path.display()
        )));
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let word = |b: &[u8], o: usize| if wide { u64_at(b, o) } else { u32_at(b, o) };
    let (phoff, phentsize, phnum) = if wide {
        (
            u64_at(&head, 0x20),
            u16_at(&head, 0x36),
            u16_at(&head, 0x38),
        )
    } else {
        (
            u32_at(&head, 0x1c),
            u16_at(&head, 0x2a),
            u16_at(&head, 0x2c),
        )
    };
    if phnum > 4096 || phentsize > 256 {
        return Err(DockerError::Invalid(format!(
            "{}: implausible program headers",
            path.display()
        )));
    }
    let phdrs = at(phoff, (phentsize * phnum) as usize)?;
    // (type, offset, vaddr, filesz) of each program header
    let segments: Vec<(u32, u64, u64, u64)> = phdrs
        .chunks(phentsize as usize)
        .map(|p| {
            let kind = u32_at(p, 0) as u32;
            if wide {
                (kind, u64_at(p, 8), u64_at(p, 16), u64_at(p, 32))
            } else {
                (kind, u32_at(p, 4), u32_at(p, 8), u32_at(p, 16))
            }
        })
        .collect();
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    let Some(&(_, dyn_off, _, dyn_size)) = segments.iter().find(|s| s.0 == PT_DYNAMIC) else {
        return Ok(Vec::new());
    };
    let dynamic = at(dyn_off, dyn_size.min(1 << 20) as usize)?;
    let entry = if wide { 16 } else { 8 };
    let (mut needed, mut strtab) = (Vec::new(), None);
    for e in dynamic.chunks_exact(entry) {
        let (tag, val) = (word(e, 0), word(e, entry / 2));
        match tag {
            0 => break,
            1 => needed.push(val),
            5 => strtab = Some(val),
            _ => {}
        }
    }
    let Some(strtab) = strtab else {
        return Ok(Vec::new());
    };
    // DT_STRTAB is an address: the file offset is in the loaded segment that holds it
    let Some(&(_, seg_off, seg_vaddr, _)) = segments
        .iter()
        .find(|s| s.0 == PT_LOAD && s.2 <= strtab && strtab < s.2 + s.3)
    else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    for n in needed {
        let bytes = at(strtab - seg_vaddr + seg_off + n, 256)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        names.push(String::from_utf8_lossy(&bytes[..end]).into_owned());
    }
    Ok(names)
}

/// 32 or 64 from an ELF file's class byte (offset 4: 1 = 32-bit, 2 = 64-bit).
pub fn elf_word_size(path: &Path) -> Result<u8> {
    let mut head = [0u8; 5];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(DockerError::io(format!(
            "read the ELF header of {}",
            path.display()
        )))?;
    elf_class(&head)
        .ok_or_else(|| DockerError::Invalid(format!("{} is not an ELF file", path.display())))
}

/// The word size from the first bytes of an ELF file.
pub fn elf_class(head: &[u8]) -> Option<u8> {
    if head.len() < 5 || &head[..4] != b"\x7fELF" {
        return None;
    }
    match head[4] {
        1 => Some(32),
        2 => Some(64),
        _ => None,
    }
}

/// Which mapped files (the path column of `/proc/<pid>/maps`) have a file name containing `library`.
pub fn allocator_in_maps(maps: &str, library: &str) -> AllocatorCheck {
    let mut paths: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.rsplit('/').next().is_some_and(|f| f.contains(library)))
        .map(String::from)
        .collect();
    paths.sort();
    paths.dedup();
    AllocatorCheck {
        library: library.to_string(),
        mapped: !paths.is_empty(),
        paths,
        linked: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_classes() {
        assert_eq!(elf_class(b"\x7fELF\x02\x01"), Some(64));
        assert_eq!(elf_class(b"\x7fELF\x01"), Some(32));
        assert_eq!(elf_class(b"#!/bin"), None);
        // this test binary itself
        let me = std::env::current_exe().unwrap();
        assert_eq!(elf_word_size(&me).unwrap(), (usize::BITS) as u8);
        // this test binary links the C library
        let needed = elf_needed(&me).unwrap();
        assert!(
            needed.iter().any(|n| n.starts_with("libc.so")),
            "{needed:?}"
        );
    }

    #[test]
    fn maps_matching() {
        let maps = "\
55d0c0000000-55d0c0100000 r--p 00000000 00:2f 123 /usr/sbin/mariadbd
7f0000000000-7f0000020000 r-xp 00000000 00:2f 456 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10
7f0000020000-7f0000030000 r--p 00020000 00:2f 456 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10
7f0000040000-7f0000041000 rw-p 00000000 00:00 0 
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
";
        let t = allocator_in_maps(maps, "libtcmalloc_minimal");
        assert!(t.mapped);
        assert_eq!(
            t.paths,
            ["/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10"]
        );
        assert!(!allocator_in_maps(maps, "libjemalloc").mapped);
        let checks = [t, allocator_in_maps(maps, "libjemalloc")];
        assert_eq!(
            mapped_allocator(&checks),
            "libtcmalloc_minimal (loaded) (from the memory map)"
        );
        let linked = checks[0]
            .clone()
            .linked_by(&["libtcmalloc_minimal.so.4".into()]);
        assert!(linked.linked);
        assert_eq!(
            mapped_allocator(&[linked]),
            "libtcmalloc_minimal (linked) (from the memory map)"
        );
        assert_eq!(
            mapped_allocator(&checks[1..]),
            "system (from the memory map)"
        );
    }
}
