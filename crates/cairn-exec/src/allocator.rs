//! Allocators a server can preload, wherever it runs: the library file names of each
//! (`allocator_candidates`), the one an `ldconfig -p` listing has (`pick_library`), this
//! host's (the process runtime's servers: `host_allocator_library`), and the name fragment
//! that finds it in a server's memory map (`maps_fragment`). The container runtime looks the
//! same names up inside an image (`crate::docker::allocator`).

pub use cairn_defs::server::ALLOCATORS;

/// For an allocator: the library file names to look for, in order of preference, and the
/// Debian package that ships the first one.
pub fn allocator_candidates(
    allocator: &str,
) -> Result<(&'static [&'static str], &'static str), String> {
    match allocator {
        "tcmalloc" => Ok((
            &["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
            "libtcmalloc-minimal4",
        )),
        "jemalloc" => Ok((&["libjemalloc.so.2"], "libjemalloc2")),
        _ => Err(format!(
            "unknown allocator `{allocator}`: expected one of {}",
            ALLOCATORS.join(", ")
        )),
    }
}

/// The name fragment to look for in the server's memory map (the variant checks) for a
/// resolved library path: its file name up to `.so` (`libtcmalloc_minimal`, `libjemalloc`).
pub fn maps_fragment(library_path: &str) -> &str {
    let file = library_path.rsplit('/').next().unwrap_or(library_path);
    file.split(".so").next().unwrap_or(file)
}

/// The library to preload for `allocator` on this host (the process runtime's servers), from
/// the host's `ldconfig -p`; `None` for `system`. Fails naming the Debian package to install.
pub fn host_allocator_library(allocator: &str) -> Result<Option<String>, String> {
    if allocator == "system" {
        return Ok(None);
    }
    let (names, package) = allocator_candidates(allocator)?;
    let out = std::process::Command::new("/sbin/ldconfig")
        .arg("-p")
        .output()
        .map_err(|e| format!("cannot run /sbin/ldconfig -p: {e}"))?;
    pick_library(&String::from_utf8_lossy(&out.stdout), names)
        .map(Some)
        .ok_or_else(|| {
            format!(
                "allocator \"{allocator}\" needs {}, which this host does not have: install the Debian package `{package}`",
                names.join(" or ")
            )
        })
}

/// From `ldconfig -p` output, the path of the first of `names` (by preference) listed.
pub fn pick_library(ldconfig: &str, names: &[&str]) -> Option<String> {
    // lines look like: "\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2"
    let entries: Vec<(&str, &str)> = ldconfig
        .lines()
        .filter_map(|l| {
            let (lhs, path) = l.split_once("=>")?;
            Some((lhs.split_whitespace().next()?, path.trim()))
        })
        .collect();
    names.iter().find_map(|want| {
        entries
            .iter()
            .find(|(name, _)| name == want)
            .map(|(_, path)| path.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LDCONFIG: &str = "\
412 libs found in cache `/etc/ld.so.cache'
\tlibtcmalloc.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc.so.4
\tlibtcmalloc_minimal.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
";

    #[test]
    fn picks_by_preference() {
        let (names, pkg) = allocator_candidates("tcmalloc").unwrap();
        assert_eq!(pkg, "libtcmalloc-minimal4");
        assert_eq!(
            pick_library(LDCONFIG, names).as_deref(),
            Some("/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
        );
        let (names, _) = allocator_candidates("jemalloc").unwrap();
        assert_eq!(pick_library(LDCONFIG, names), None);
        assert!(allocator_candidates("mimalloc")
            .unwrap_err()
            .contains("system, tcmalloc, jemalloc"));
    }

    #[test]
    fn fragments() {
        assert_eq!(
            maps_fragment("/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"),
            "libtcmalloc_minimal"
        );
        assert_eq!(maps_fragment("libjemalloc.so.2"), "libjemalloc");
    }
}
