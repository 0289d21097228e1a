//! Allocator resolution: which shared library to `LD_PRELOAD` for `allocator "tcmalloc"|"jemalloc"|"system"` in a given image.
//!
//! The library is looked up in the image's dynamic linker cache (`ldconfig -p`, run in a
//! throwaway container), so the path fits the image's architecture (`x86_64-linux-gnu` or
//! `i386-linux-gnu`) without guessing.

use super::{Docker, DockerError, Result};

/// The allocators a server can ask for.
pub const ALLOCATORS: [&str; 3] = ["system", "tcmalloc", "jemalloc"];

/// For an allocator: the library file names to look for, in order of preference, and the
/// Debian package that ships the first one.
pub fn allocator_candidates(allocator: &str) -> Result<(&'static [&'static str], &'static str)> {
    match allocator {
        "tcmalloc" => Ok((
            &["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
            "libtcmalloc-minimal4",
        )),
        "jemalloc" => Ok((&["libjemalloc.so.2"], "libjemalloc2")),
        _ => Err(DockerError::Invalid(format!(
            "unknown allocator `{allocator}`: expected one of {}",
            ALLOCATORS.join(", ")
        ))),
    }
}

/// The name fragment to look for in the server's memory map ([`Docker::variant_checks`]) for
/// a resolved library path: its file name up to `.so` (`libtcmalloc_minimal`, `libjemalloc`).
pub fn maps_fragment(library_path: &str) -> &str {
    let file = library_path.rsplit('/').next().unwrap_or(library_path);
    file.split(".so").next().unwrap_or(file)
}

/// The path inside `image` of the library to preload for `allocator`; `None` for `system`.
/// Fails, naming the Debian package to add to the image, when the library is not there.
pub fn allocator_library(docker: &Docker, image: &str, allocator: &str) -> Result<Option<String>> {
    if allocator == "system" {
        return Ok(None);
    }
    let (names, package) = allocator_candidates(allocator)?;
    let cmd = ["/sbin/ldconfig", "-p"];
    let out = docker.run_once(image, &cmd)?.check(&cmd, image)?;
    match pick_library(&out.stdout, names) {
        Some(path) => Ok(Some(path)),
        None => Err(DockerError::MissingAllocator {
            allocator: allocator.to_string(),
            image: image.to_string(),
            library: names.join(" or "),
            package: package.to_string(),
        }),
    }
}

/// The library to preload for `allocator` on this host (the process executor's servers), from
/// the host's `ldconfig -p`; `None` for `system`. Fails naming the Debian package to install.
pub fn host_allocator_library(allocator: &str) -> Result<Option<String>> {
    if allocator == "system" {
        return Ok(None);
    }
    let (names, package) = allocator_candidates(allocator)?;
    let out = std::process::Command::new("/sbin/ldconfig")
        .arg("-p")
        .output()
        .map_err(DockerError::io("run /sbin/ldconfig -p"))?;
    pick_library(&String::from_utf8_lossy(&out.stdout), names).map_or_else(
        || {
            Err(DockerError::MissingAllocator {
                allocator: allocator.to_string(),
                image: "this host".to_string(),
                library: names.join(" or "),
                package: package.to_string(),
            })
        },
        |p| Ok(Some(p)),
    )
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
            .to_string()
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
