//! End-to-end: `image` nodes built by the real `cairn` binary through the real Docker Engine
//! (debootstrap base + `run` layer + `file` layer): first run builds the chain, the second is
//! cached, a changed last layer rebuilds only that layer, a removed Docker image is rebuilt,
//! package changes between builds are shown by `cairn plan -v`, and without a Docker Engine
//! image steps are blocked / fail at once with how to start one.
//!
//! One base build (~1 min) is shared by the whole sequence. Images are named uniquely per run
//! and removed by [`ImageGuard`] (all tags of `cairn/<name>`), also when the test fails.
//! Tests that build hold the engine shared ([`engine_shared`]): `cairn clean` waits for them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{engine_shared, set, Events, Ran, Sandbox};

/// Upper bound of one invocation that may build a base image (a hang guard, not a timing).
const BUILD_GUARD: Duration = Duration::from_secs(900);

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans/images")
}

fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("e2e-img-{}-{nanos:x}", std::process::id())
}

fn docker_cli(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI")
}

/// Removes every tag of `cairn/<name>` when dropped.
struct ImageGuard(String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let repo = format!("cairn/{}", self.0);
        let out = docker_cli(&["images", "--format", "{{.Repository}}:{{.Tag}}", &repo]);
        let refs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        for r in refs.iter().rev() {
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

/// The fixture copied into the sandbox with the image named `name`.
fn write_fixture(sb: &Sandbox, name: &str) {
    let dir = fixture_dir();
    for rel in ["plan.kdl", "images/small.kdl", "images/conf/x.cnf"] {
        let text = std::fs::read_to_string(dir.join(rel)).expect("fixture");
        sb.write(rel, &text.replace("@NAME@", name));
    }
}

/// A cairn invocation in the sandbox, with a debootstrap cache kept between test runs.
fn cairn(sb: &Sandbox, global: &[&str], args: &[&str], env: &[(&str, &str)]) -> Ran {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-images-cache");
    let mut c = sb
        .cairn(global.iter().chain(args).copied())
        .cache_dir(cache)
        .guard(BUILD_GUARD);
    for (k, v) in env {
        c = c.env(k, v);
    }
    c.run()
}

fn run_ok(sb: &Sandbox, what: &str) -> Events {
    let t = Instant::now();
    let r = cairn(sb, &["--json"], &["run", "plan.kdl"], &[]);
    r.expect_code(0);
    eprintln!("TIMING {what}: {:.2?}", t.elapsed());
    let ev = r.events();
    for e in ev.of("step_finished") {
        eprintln!("  built {} in {} ms", e["step"], e["elapsed_ms"]);
    }
    ev
}

/// `plan --json`: address → status object.
fn plan(sb: &Sandbox) -> std::collections::BTreeMap<String, Value> {
    let r = cairn(sb, &["--json"], &["plan", "plan.kdl"], &[]);
    r.expect_code(0);
    r.json_lines()
        .into_iter()
        .map(|s| (s["address"].as_str().unwrap().to_string(), s))
        .collect()
}

/// The manifest (`cairn cat`) of an image step.
fn manifest(sb: &Sandbox, address: &str) -> Value {
    let r = cairn(sb, &[], &["cat", "plan.kdl", address], &[]);
    r.expect_code(0);
    serde_json::from_str(&r.stdout).expect("manifest.json")
}

fn run_in_image(reference: &str, cmd: &str) -> String {
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
fn image_chain_builds_caches_and_rebuilds_only_what_changed() {
    let _engine = engine_shared();
    let name = unique_name();
    let _guard = ImageGuard(name.clone());
    let sb = Sandbox::new();
    write_fixture(&sb, &name);
    let (base, l1, l2) = (
        format!("image/{name}"),
        format!("image/{name}/1"),
        format!("image/{name}/2"),
    );

    // before anything: the base will run, the layers wait on it
    let p = plan(&sb);
    assert_eq!(p[&base]["status"], "run");
    assert_eq!(p[&l1]["status"], "pending");
    assert_eq!(p[&l2]["status"], "pending");

    // 1. first run builds all three
    let ev = run_ok(&sb, "first run (base + 2 layers)");
    assert_eq!(ev.finished(), set([&*base, &*l1, &*l2]));
    let (_, rec) = sb.records_of(&base).pop().expect("base record");
    assert_eq!(rec["kind"], "image");
    assert!(rec["extra"]["mirror"]["url"]
        .as_str()
        .unwrap()
        .starts_with("http"));
    assert!(rec["extra"]["timings"]["debootstrap_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(
        rec["fingerprint"],
        Value::Null,
        "image steps are builds, not measurements"
    );

    // 2. second run: everything cached, nothing built
    let ev = run_ok(&sb, "cached re-run");
    assert!(ev.finished().is_empty(), "{:?}", ev.finished());
    assert_eq!(ev.cached(), set([&*base, &*l1, &*l2]));

    // the last layer's manifest: mariadb-server installed; the image has both layers
    let m = manifest(&sb, &l2);
    let reference = m["reference"].as_str().unwrap().to_string();
    assert!(
        reference.starts_with(&format!("cairn/{name}:")),
        "{reference}"
    );
    assert_eq!(m["dpkg_architecture"], "amd64");
    let pkgs = m["packages"].as_array().unwrap();
    assert!(
        pkgs.iter().any(|p| p["package"] == "mariadb-server"),
        "mariadb-server in the manifest"
    );
    let files = run_in_image(&reference, "cat /etc/cairn-one /etc/mysql/conf.d/x.cnf");
    assert!(files.starts_with("one\n[mysqld]"), "{files}");

    // 3. change only the file of the last layer: only that layer rebuilds
    sb.write(
        "images/conf/x.cnf",
        "[mysqld]\n# cairn e2e\nmax_connections=60\n",
    );
    let ev = run_ok(&sb, "last layer changed");
    assert_eq!(ev.finished(), set([&*l2]));
    assert_eq!(ev.cached(), set([&*base, &*l1]));
    let reference = manifest(&sb, &l2)["reference"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(run_in_image(&reference, "cat /etc/mysql/conf.d/x.cnf").contains("max_connections=60"));

    // 4. the Docker image removed by hand: its step is stale and rebuilds
    let o = docker_cli(&["rmi", &reference]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = plan(&sb);
    assert_eq!(p[&l2]["status"], "run", "{}", p[&l2]);
    assert_eq!(p[&l2]["reasons"][0]["reason"], "unusable", "{}", p[&l2]);
    assert_eq!(p[&l2]["reasons"][0]["what"], "image_missing", "{}", p[&l2]);
    let ev = run_ok(&sb, "rebuild after docker rmi");
    assert_eq!(ev.finished(), set([&*l2]));
    assert!(docker_cli(&["image", "inspect", &reference])
        .status
        .success());

    // 5. a layer that removes a package: both layers rebuild, `plan -v` shows the change
    let recipe = std::fs::read_to_string(sb.path().join("images/small.kdl")).unwrap();
    sb.write(
        "images/small.kdl",
        &recipe.replace(
            "echo one > /etc/cairn-one",
            "echo one > /etc/cairn-one && dpkg --purge less",
        ),
    );
    let ev = run_ok(&sb, "first layer changed");
    assert_eq!(ev.finished(), set([&*l1, &*l2]));
    let r = cairn(&sb, &["-v"], &["plan", "plan.kdl"], &[]);
    r.expect_code(0);
    assert!(
        r.stdout
            .contains("packages changed since the previous build")
            && r.stdout.contains("-less "),
        "{}",
        r.stdout
    );
    let rec = sb
        .records_of(&l1)
        .into_iter()
        .map(|(_, r)| r)
        .find(|r| !r["extra"]["package_changes"].is_null())
        .expect("a layer record with package changes");
    let removed = rec["extra"]["package_changes"]["removed"]
        .as_array()
        .unwrap();
    assert!(
        removed.iter().any(|p| p["package"] == "less"),
        "{removed:?}"
    );

    // 6. a layer that leaves an image unable to run a command (as a source build's tree that
    // replaced /lib did): the step fails, nothing is recorded, and the image is not left
    // tagged under its key for the next run to reuse
    let recipe = std::fs::read_to_string(sb.path().join("images/small.kdl")).unwrap();
    sb.write(
        "images/small.kdl",
        &recipe.replace(
            "echo one > /etc/cairn-one && dpkg --purge less",
            "rm -f /usr/bin/sh /bin/sh /usr/bin/dash",
        ),
    );
    let before = sb.records_of(&l1).len();
    let r = cairn(&sb, &[], &["run", "plan.kdl"], &[]);
    r.expect_code(1);
    assert!(
        r.stderr.contains("cannot run a command, so it was removed"),
        "{}",
        r.stderr
    );
    assert_eq!(sb.records_of(&l1).len(), before, "nothing recorded");
    let p = plan(&sb);
    let key = p[&l1]["key"].as_str().expect("the layer's key").to_string();
    let tagged = docker_cli(&["image", "inspect", &format!("cairn/{name}:{key}")]);
    assert!(!tagged.status.success(), "the broken image is still tagged");
}

#[test]
fn without_a_docker_engine_image_steps_are_blocked_and_fail_at_once() {
    let sb = Sandbox::new();
    write_fixture(&sb, "e2e-no-docker");
    let env = [("DOCKER_HOST", "unix:///nonexistent/docker.sock")];
    let r = cairn(&sb, &[], &["plan", "plan.kdl"], &env);
    r.expect_code(0);
    assert!(
        r.stdout.contains("blocked  image/e2e-no-docker "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("systemctl start docker"), "{}", r.stdout);

    let r = cairn(&sb, &["--json"], &["run", "plan.kdl"], &env);
    r.expect_code(1);
    let ev = r.events();
    assert_eq!(ev.failed(), set(["image/e2e-no-docker"]));
    let failed = ev.of("step_failed");
    let msg = failed[0]["error"].as_str().unwrap_or_default();
    assert!(msg.contains("systemctl start docker"), "{}", failed[0]);
}

#[test]
fn mirror_flag_is_used_for_the_base_image() {
    let _engine = engine_shared();
    let sb = Sandbox::new();
    // a recipe no other test builds, so its base is not in the engine yet
    let name = unique_name();
    sb.write(
        "plan.kdl",
        &format!(
            "study \"mirror\"\nimage \"{name}\" {{ packages \"less\" \"procps\" \"psmisc\" }}\n"
        ),
    );
    // nothing listens on port 9: debootstrap fails at once, naming the mirror it was given
    let r = cairn(
        &sb,
        &["--json"],
        &["run", "plan.kdl", "--mirror", "http://127.0.0.1:9/debian"],
        &[],
    );
    r.expect_code(1);
    let ev = r.events();
    let err = ev.of("step_failed")[0]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(err.contains("127.0.0.1:9"), "{err}");
    assert!(err.contains("debootstrap failed"), "{err}");
}
