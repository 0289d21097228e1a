//! Which Debian architectures this host can run an image of: its kernel's own (`uname -m`),
//! i386 on amd64 when the kernel runs 32-bit programs, and any the kernel hands to an
//! emulator (`binfmt_misc` entries such as `qemu-aarch64`), so `cairn check` refuses an
//! image no container here could start.

use std::path::Path;

/// The Debian architecture of a kernel's machine name (`uname -m`).
fn debian_arch_of_machine(machine: &str) -> Option<&'static str> {
    Some(match machine {
        "x86_64" => "amd64",
        "i386" | "i486" | "i586" | "i686" => "i386",
        "aarch64" | "arm64" => "arm64",
        "armv7l" => "armhf",
        "ppc64le" => "ppc64el",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "mips64" => "mips64el",
        _ => return None,
    })
}

/// The Debian architectures a `binfmt_misc` emulator entry (`qemu-<cpu>`) runs.
fn debian_archs_of_emulator(entry: &str) -> &'static [&'static str] {
    match entry.strip_prefix("qemu-").unwrap_or_default() {
        "x86_64" => &["amd64"],
        "i386" => &["i386"],
        "aarch64" => &["arm64"],
        "arm" => &["armhf", "armel"],
        "ppc64le" => &["ppc64el"],
        "s390x" => &["s390x"],
        "riscv64" => &["riscv64"],
        "mips64el" => &["mips64el"],
        _ => &[],
    }
}

/// The kernel's machine name, as `uname -m` prints it.
fn machine() -> Option<String> {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .machine
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8(bytes).ok()
}

/// The architectures of a host whose kernel says `machine`, with `compat32` true when it
/// runs 32-bit x86 programs and `emulators` its enabled `binfmt_misc` entries.
fn runnable(machine: &str, compat32: bool, emulators: &[String]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = debian_arch_of_machine(machine).into_iter().collect();
    if out == ["amd64"] && compat32 {
        out.push("i386");
    }
    for e in emulators {
        for a in debian_archs_of_emulator(e) {
            if !out.contains(a) {
                out.push(a);
            }
        }
    }
    out
}

/// The enabled `binfmt_misc` entries under `dir` (`qemu-aarch64`, …).
fn enabled_emulators(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.starts_with("enabled")))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The Debian architectures this host can run; `None` when its kernel's machine is not one
/// cairn knows (then nothing is refused ahead of the build).
pub fn runnable_architectures() -> Option<Vec<&'static str>> {
    let machine = machine()?;
    debian_arch_of_machine(&machine)?;
    // the kernel's 32-bit x86 entry exists only when it was built to run 32-bit programs
    let compat32 = Path::new("/proc/sys/abi/vsyscall32").exists();
    let emulators = enabled_emulators(Path::new("/proc/sys/fs/binfmt_misc"));
    Some(runnable(&machine, compat32, &emulators))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_runs_its_own_architecture_and_what_it_emulates() {
        assert_eq!(runnable("x86_64", false, &[]), ["amd64"]);
        assert_eq!(runnable("x86_64", true, &[]), ["amd64", "i386"]);
        assert_eq!(
            runnable("x86_64", true, &["qemu-aarch64".into(), "qemu-arm".into()]),
            ["amd64", "i386", "arm64", "armhf", "armel"]
        );
        assert_eq!(runnable("aarch64", true, &[]), ["arm64"]);
        assert_eq!(runnable("sparc64", false, &[]), Vec::<&str>::new());
    }

    #[test]
    fn this_host_runs_its_own_architecture() {
        let here = runnable_architectures().expect("a known machine");
        let own = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => panic!("untested build architecture {other}"),
        };
        assert!(here.contains(&own), "{here:?}");
        assert!(!here.contains(&"sparc64"));
    }
}
