//! Variant checks: evidence that a running server is the variant it claims to be (version,
//! build machine, allocator, binary word size, mapped libraries), the same for every runtime.
//!
//! The version row comes from the server itself (its system's variant query, asked by the
//! runtime); the word size and the mapped libraries are read on the host through the
//! server's host PID ([`VariantChecks::read`]): the ELF class byte of `/proc/<pid>/exe` and
//! the paths in `/proc/<pid>/maps` (inside a container the server is non-dumpable and its
//! `/proc/<pid>/maps` is denied, so the host reads them).

use std::io::Read;
use std::path::Path;

type Result<T> = std::result::Result<T, String>;

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

impl VariantChecks {
    /// The checks of the server process `pid` on this host, which answered its system's
    /// variant query with `row` (version, compile machine, malloc library; tab-separated);
    /// `allocators` are library name fragments to look for in its memory map (e.g.
    /// `libtcmalloc_minimal`, `libjemalloc`).
    pub fn read(row: &str, pid: u32, allocators: &[&str]) -> Result<VariantChecks> {
        let line = row.lines().next().unwrap_or_default();
        let f: Vec<&str> = line.split('\t').collect();
        // a trailing empty column (no malloc library reported) may have been trimmed
        if f.len() < 2 {
            return Err(format!("unexpected variant query output: {row:?}"));
        }
        let proc_dir = Path::new("/proc").join(pid.to_string());
        let exe = proc_dir.join("exe");
        let word_size = elf_word_size(&exe)?;
        let maps = std::fs::read_to_string(proc_dir.join("maps"))
            .map_err(|e| format!("cannot read {}/maps: {e}", proc_dir.display()))?;
        let needed = elf_needed(&exe)?;
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
            process_name: std::fs::read_to_string(proc_dir.join("comm"))
                .unwrap_or_default()
                .trim()
                .to_string(),
            binary: std::fs::read_link(&exe)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            host_pid: pid,
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

/// The libraries the ELF binary at `path` needs (`DT_NEEDED`), by name (e.g.
/// `libtcmalloc.so.4`); none for a static binary.
pub fn elf_needed(path: &Path) -> Result<Vec<String>> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the dynamic section of {}: {e}", path.display()))?;
    crate::elf::needed(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// 32 or 64, from the class byte of the ELF file at `path`.
pub fn elf_word_size(path: &Path) -> Result<u8> {
    let mut head = [0u8; 5];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|e| format!("cannot read the ELF header of {}: {e}", path.display()))?;
    crate::elf::word_size(&head).ok_or_else(|| format!("{} is not an ELF file", path.display()))
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
