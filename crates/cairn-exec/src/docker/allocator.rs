//! Allocator resolution in an image: which shared library to `LD_PRELOAD` for
//! `allocator "tcmalloc"|"jemalloc"|"system"` in a given image.
//!
//! The library is looked up in the image's dynamic linker cache (`ldconfig -p`, run in a
//! throwaway container), so the path fits the image's architecture (`x86_64-linux-gnu` or
//! `i386-linux-gnu`) without guessing. The names to look for are
//! [`crate::allocator`]'s, shared with the process runtime.

use super::{Docker, DockerError, Result};
use crate::allocator::{allocator_candidates, pick_library};

/// The path inside `image` of the library to preload for `allocator`; `None` for `system`.
/// Fails, naming the Debian package to add to the image, when the library is not there.
pub fn allocator_library(docker: &Docker, image: &str, allocator: &str) -> Result<Option<String>> {
    if allocator == "system" {
        return Ok(None);
    }
    let (names, package) = allocator_candidates(allocator).map_err(DockerError::Invalid)?;
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
