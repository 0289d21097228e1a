//! Image building in the container engine: base images from a debootstrap root (through a
//! Debian mirror, checked against the archive's index), package and file layers, source
//! builds, the manifest of what an image holds, and shipping images to other engines.

pub mod archive;
pub mod base;
pub mod host_arch;
pub mod layer;
pub mod manifest;
pub mod mirror;
pub mod ship;
pub mod source_build;
