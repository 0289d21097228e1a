//! Variant check of a server built from source: the program that runs is the one the image's
//! `build` layer installed, with the facts recorded at build time (word size, static or
//! dynamic, stripped or not, debug information) — read from the running process's
//! `/proc/<pid>/exe` on the host, not from the image.

use cairn_exec::docker::image::source_build::BuildFacts;
use cairn_exec::elf::{self, ElfFacts};
use serde::{Deserialize, Serialize};

/// What the running program is, against its build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningBuild {
    /// The program's path as the process sees it.
    pub binary: String,
    /// blake3 of the running executable, hex (equal to the built one's).
    pub digest: String,
    /// Read from the running executable.
    #[serde(flatten)]
    pub elf: ElfFacts,
    /// The build's source and flags, as recorded in the image's manifest.
    pub source: String,
    pub cflags: Vec<String>,
    pub ldflags: Vec<String>,
    pub build_type: String,
}

/// Confirm that process `host_pid` (whose executable is `binary` inside its mount namespace)
/// runs a program `build` installed, unchanged. The error says what runs instead.
pub fn confirm_running(
    build: &BuildFacts,
    host_pid: u32,
    binary: &str,
) -> Result<RunningBuild, String> {
    let exe = format!("/proc/{host_pid}/exe");
    let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read {exe}: {e}"))?;
    confirm_bytes(build, binary, &bytes)
}

fn confirm_bytes(build: &BuildFacts, binary: &str, bytes: &[u8]) -> Result<RunningBuild, String> {
    let Some(built) = build.binaries.iter().find(|b| b.path == binary) else {
        return Err(format!(
            "variant check failed: the image's program is built from {} but the server runs {binary}, which that build did not install",
            build.source
        ));
    };
    let digest = blake3::hash(bytes).to_hex().to_string();
    if digest != built.digest {
        return Err(format!(
            "variant check failed: the running {binary} is not the one {} built (blake3 {} ≠ {})",
            build.source,
            &digest[..12],
            &built.digest[..12.min(built.digest.len())]
        ));
    }
    let facts = elf::inspect(bytes).map_err(|e| format!("the running {binary}: {e}"))?;
    Ok(RunningBuild {
        binary: binary.to_string(),
        digest,
        elf: facts,
        source: build.source.clone(),
        cflags: build.cflags.clone(),
        ldflags: build.ldflags.clone(),
        build_type: build.build_type.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_exec::docker::image::source_build::BuiltBinary;

    fn facts(path: &str, bytes: &[u8]) -> BuildFacts {
        BuildFacts {
            source: "debian:hello".into(),
            source_version: None,
            compiler: "gcc".into(),
            compiler_version: "gcc 12".into(),
            cflags: vec!["-O2".into()],
            cxxflags: vec![],
            ldflags: vec![],
            build_type: "release".into(),
            build_system: "configure".into(),
            options: vec![],
            link: "dynamic".into(),
            strip: false,
            prefix: "/usr/local".into(),
            toolchain_reused: false,
            phases_s: Default::default(),
            build_s: 1.0,
            ccache_hits: 0,
            ccache_misses: 0,
            binaries: vec![BuiltBinary {
                path: path.into(),
                bytes: bytes.len() as u64,
                digest: blake3::hash(bytes).to_hex().to_string(),
                elf: elf::inspect(bytes).unwrap(),
            }],
        }
    }

    #[test]
    fn this_process_is_confirmed_as_its_own_build() {
        let me = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&me).unwrap();
        let path = me.display().to_string();
        let b = facts(&path, &bytes);
        let r = confirm_running(&b, std::process::id(), &path).unwrap();
        assert_eq!(r.elf, b.binaries[0].elf);
        // another path, or other bytes, are refused with what runs
        let e = confirm_bytes(&b, "/usr/sbin/mariadbd", &bytes).unwrap_err();
        assert!(e.contains("runs /usr/sbin/mariadbd"), "{e}");
        let mut other = bytes.clone();
        let n = other.len() - 1;
        other[n] ^= 1;
        let e = confirm_bytes(&b, &path, &other).unwrap_err();
        assert!(e.contains("is not the one debian:hello built"), "{e}");
    }
}
