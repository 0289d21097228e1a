//! End-to-end: `build` layers of `image` nodes, built by the real `cairn` binary through the
//! real Docker Engine from Debian's `hello` source package (fetched with `apt-get source` from
//! the base image's mirror). Two flag sets — `-O0`, dynamic, not stripped against `-O2`,
//! static, stripped — give two different binaries, each confirmed by its ELF headers in the
//! manifest and by running it; the phases show as events; a re-run is all cached; changing
//! one build's flag rebuilds only that build (with compiler cache hits when only `strip`
//! changed); and a flag the compiler rejects fails with the flag named and leaves no image.
//!
//! One base build and one toolchain (compiler + hello's build dependencies) are shared by
//! every build here. Images are named uniquely per run and removed by [`Guard`].
//!
//! Not in the default run (CI stays well under its time): `#[ignore]`d, run on demand with
//! `cargo test -p cairn --test e2e -- --ignored source_build`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::{engine_shared, set, Events, Ran, Sandbox};

/// Upper bound of one invocation that builds a base and a toolchain (a hang guard only).
const BUILD_GUARD: Duration = Duration::from_secs(1800);

fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("e2e-src-{}-{nanos:x}", std::process::id())
}

fn docker_cli(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI")
}

fn tags_of(repo: &str) -> Vec<String> {
    let out = docker_cli(&["images", "--format", "{{.Repository}}:{{.Tag}}", repo]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Removes every tag of the given `cairn/<repo>`s when dropped (the test's images and the
/// hello toolchain it made).
struct Guard(Vec<String>);

impl Drop for Guard {
    fn drop(&mut self) {
        for repo in &self.0 {
            for r in tags_of(&format!("cairn/{repo}")).iter().rev() {
                let o = docker_cli(&["rmi", "-f", r]);
                if !o.status.success() {
                    eprintln!(
                        "guard: docker rmi {r}: {}",
                        String::from_utf8_lossy(&o.stderr)
                    );
                }
            }
        }
    }
}

fn plan_text(name: &str, o2_extra: &str, bad: bool) -> String {
    let mut s = format!(
        r#"study "source-build"
image "{name}-o0" {{
    debian suite="bookworm"
    build "debian:hello" {{
        cflags "-O0"
    }}
}}
image "{name}-o2" {{
    debian suite="bookworm"
    build "debian:hello" {{
        cflags "-O2"
        link "static"
        {o2_extra}
    }}
}}
"#
    );
    if bad {
        s.push_str(&format!(
            r#"image "{name}-bad" {{
    debian suite="bookworm"
    build "debian:hello" {{
        cflags "-O2" "-fno-such-flag-cairn"
    }}
}}
"#
        ));
    }
    s
}

fn cairn(sb: &Sandbox, args: &[&str]) -> Ran {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-images-cache");
    sb.cairn(args.iter().copied())
        .cache_dir(cache)
        .guard(BUILD_GUARD)
        .run()
}

fn run_ok(sb: &Sandbox) -> Events {
    let r = cairn(sb, &["--json", "run", "plan.kdl"]);
    r.expect_code(0);
    r.events()
}

fn manifest(sb: &Sandbox, address: &str) -> Value {
    let r = cairn(sb, &["cat", "plan.kdl", address]);
    r.expect_code(0);
    serde_json::from_str(&r.stdout).expect("manifest.json")
}

/// The ELF facts of `/usr/local/bin/hello` in a manifest.
fn hello(m: &Value) -> Value {
    m["build"]["binaries"]
        .as_array()
        .expect("binaries")
        .iter()
        .find(|b| b["path"] == "/usr/local/bin/hello")
        .cloned()
        .unwrap_or_else(|| panic!("no /usr/local/bin/hello in {}", m["build"]))
}

fn run_in(reference: &str, cmd: &str) -> String {
    let o = docker_cli(&[
        "run",
        "--rm",
        "--network",
        "none",
        reference,
        "/bin/sh",
        "-c",
        cmd,
    ]);
    assert!(
        o.status.success(),
        "{cmd} in {reference}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
#[ignore = "builds a base image, a toolchain and four source builds (about 15 min of compile): run it with `cargo test -p cairn --test e2e -- --ignored source_build`"]
fn two_flag_sets_give_two_verified_binaries_and_only_a_changed_one_rebuilds() {
    let _engine = engine_shared();
    let name = unique_name();
    let _guard = Guard(vec![
        format!("{name}-o0"),
        format!("{name}-o2"),
        format!("{name}-bad"),
        "debian-hello-toolchain".into(),
    ]);
    let sb = Sandbox::new();
    sb.write("plan.kdl", &plan_text(&name, "strip #true", false));
    let (o0, o2) = (format!("image/{name}-o0/1"), format!("image/{name}-o2/1"));

    // 1. both builds run, each through its phases
    let ev = run_ok(&sb);
    assert!(ev.finished().contains(&o0) && ev.finished().contains(&o2));
    for address in [&o0, &o2] {
        let phases: Vec<&str> = ev
            .of("step_phase")
            .into_iter()
            .filter(|e| e["step"] == address.as_str())
            .filter_map(|e| e["phase"].as_str())
            .collect();
        assert_eq!(
            phases,
            ["fetch", "check-flags", "configure", "build", "install"],
            "{address}"
        );
    }

    // 2. two different binaries, each the variant asked for
    let (m0, m2) = (manifest(&sb, &o0), manifest(&sb, &o2));
    let (h0, h2) = (hello(&m0), hello(&m2));
    assert_ne!(
        h0["digest"], h2["digest"],
        "-O0 and -O2 built the same binary"
    );
    assert_eq!(h0["word_size"], 64);
    assert_eq!(h0["dynamic"], true, "{h0}");
    assert_eq!(h0["stripped"], false, "{h0}");
    assert_eq!(h2["dynamic"], false, "{h2}");
    assert_eq!(h2["stripped"], true, "{h2}");
    let b2 = &m2["build"];
    assert_eq!(b2["cflags"], serde_json::json!(["-O2"]));
    assert_eq!(b2["ldflags"], serde_json::json!(["-static"]));
    assert!(
        b2["compiler_version"].as_str().unwrap().starts_with("gcc"),
        "{b2}"
    );
    assert!(b2["source_version"].as_str().is_some_and(|v| !v.is_empty()));
    assert!(b2["build_s"].as_f64().unwrap() > 0.0);
    // the image holds the program, not the toolchain
    assert!(
        !m2["packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["package"] == "gcc"),
        "the compiler leaked into the image"
    );
    // the running programs: both greet; the static one names no interpreter
    for m in [&m0, &m2] {
        let reference = m["reference"].as_str().unwrap();
        assert_eq!(run_in(reference, "/usr/local/bin/hello"), "Hello, world!\n");
    }
    let (_, rec) = sb.records_of(&o2).pop().expect("record");
    let phases = &rec["extra"]["source_build"]["phases_s"];
    for p in ["fetch", "configure", "build", "install"] {
        assert!(phases[p].as_f64().is_some(), "{phases}");
    }

    // 3. a re-run is all cached
    let ev = run_ok(&sb);
    assert!(ev.finished().is_empty(), "{:?}", ev.finished());
    assert!(ev.cached().contains(&o0) && ev.cached().contains(&o2));

    // 4. one flag of one build changed: only that build runs; cairn plan says a source build
    //    is coming and how long the last one took; the compiler cache serves the compiles
    sb.write("plan.kdl", &plan_text(&name, "strip #false", false));
    let r = cairn(&sb, &["plan", "plan.kdl"]);
    r.expect_code(0);
    assert!(
        r.stdout.contains("source build of debian:hello"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("the last one ({o2}) took")),
        "{}",
        r.stdout
    );
    let ev = run_ok(&sb);
    assert_eq!(ev.finished(), set([&*o2]));
    assert!(ev.cached().contains(&o0));
    let m2 = manifest(&sb, &o2);
    assert_eq!(hello(&m2)["stripped"], false);
    assert_eq!(m2["build"]["toolchain_reused"], true);
    assert!(
        m2["build"]["ccache_hits"].as_u64().unwrap() > 0,
        "{}",
        m2["build"]
    );

    // 5. a flag the compiler rejects: named in the error, no image left for it
    sb.write("plan.kdl", &plan_text(&name, "strip #false", true));
    let r = cairn(&sb, &["--json", "run", "plan.kdl"]);
    r.expect_code(1);
    let ev = r.events();
    let bad = format!("image/{name}-bad/1");
    assert_eq!(ev.failed(), set([&*bad]));
    let err = ev.first_error();
    assert!(
        err.contains("`-fno-such-flag-cairn`") && err.contains("cflags"),
        "{err}"
    );
    assert!(
        err.contains("unrecognized"),
        "the compiler's own message: {err}"
    );
    let left: Vec<String> = tags_of(&format!("cairn/{name}-bad"))
        .into_iter()
        .filter(|t| !t.ends_with(":<none>"))
        .collect();
    // only the base image (shared definition, named after the first image) may exist
    assert!(left.is_empty(), "images left of the failed build: {left:?}");
}
