//! End-to-end tests of `cairn_exec::docker` against the real Docker Engine: debootstrap base images, layers, manifests, MariaDB servers, variant checks, cleanup.
//!
//! The bookworm/amd64 base image is the shared test image of `cairn_testkit` (the
//! `images/mariadb.kdl` recipe under the key a plan run gives it), built at most once per
//! machine and kept in the engine, so later runs and other suites reuse it; set
//! `CAIRN_E2E_REBUILD=1` to remove it first and time a fresh build. Every test that starts
//! containers holds a [`RunGuard`] that removes everything labelled with its run id on drop,
//! also when the test fails.

use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use cairn_exec::allocator::maps_fragment;
use cairn_exec::docker::{
    allocator_library, clean_all, clean_runs, BaseImage, BaseSpec, Connect, Docker, DockerError,
    LayerFile, ServerSpec, LABEL_KEY, LABEL_RUN,
};
use cairn_exec::system::greeting::{read_mysql_greeting as read_greeting, Greeting};

const TCMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

fn docker() -> &'static Docker {
    static D: OnceLock<Docker> = OnceLock::new();
    D.get_or_init(|| {
        let d = Docker::connect().expect("Docker Engine reachable");
        eprintln!("docker API version {}", d.api_version());
        d
    })
}

fn build(spec: &BaseSpec) -> BaseImage {
    let d = docker();
    let reference = cairn_exec::docker::image_ref(&spec.name, &spec.key);
    if std::env::var_os("CAIRN_E2E_REBUILD").is_some() {
        d.remove_image(&reference, true).unwrap();
    }
    let t = Instant::now();
    let img = d
        .build_base(spec)
        .unwrap_or_else(|e| panic!("build {reference}: {e}"));
    eprintln!(
        "TIMING base {reference}: built={} debootstrap={:.1?} import={:.1?} total={:.1?}",
        img.built,
        img.debootstrap_time,
        img.import_time,
        t.elapsed()
    );
    let t = Instant::now();
    let again = d.build_base(spec).unwrap();
    eprintln!(
        "TIMING base {reference} again (image present): {:.3?}",
        t.elapsed()
    );
    assert!(!again.built);
    assert_eq!(again.id, img.id);
    img
}

/// The shared test image (`images/mariadb.kdl`'s `mariadb-bookworm`: MariaDB, sysbench,
/// tcmalloc, jemalloc) under the key a plan run gives it, so every test suite shares it.
fn bookworm_amd64() -> &'static BaseImage {
    static B: OnceLock<BaseImage> = OnceLock::new();
    B.get_or_init(|| {
        build(&cairn_testkit::base_spec(
            &cairn_testkit::recipe_file(),
            cairn_testkit::IMAGE,
        ))
    })
}

/// Removes every container and network labelled `cairn.run=<id>` when dropped.
struct RunGuard {
    id: String,
}

impl RunGuard {
    fn new(test: &str) -> Self {
        let id = format!("e2e-{}-{test}", std::process::id());
        // a leftover of an earlier, killed attempt with the same id
        docker()
            .cleanup_stale(&format!("{LABEL_RUN}={id}"))
            .unwrap();
        RunGuard { id }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        match docker().cleanup_stale(&format!("{LABEL_RUN}={}", self.id)) {
            Ok(r) if !r.is_empty() => eprintln!("guard cleaned up {r:?}"),
            Ok(_) => {}
            Err(e) => eprintln!("guard cleanup failed: {e}"),
        }
    }
}

/// Removes the given image references when dropped (layers made by a test).
struct ImageGuard(Vec<String>);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        for r in self.0.iter().rev() {
            if let Err(e) = docker().remove_image(r, true) {
                eprintln!("guard: remove image {r}: {e}");
            }
        }
    }
}

fn docker_cli(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn small_server_options() -> Vec<(String, String)> {
    opts(&[
        ("innodb_buffer_pool_size", "64M"),
        ("skip-name-resolve", ""),
        ("max_connections", "50"),
    ])
}

#[test]
fn server_lifecycle_socket_tcp_and_checks() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("life");
    let sock = tempfile::tempdir().unwrap();
    let spec = ServerSpec::new(
        &run.id,
        "s1",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );

    let t = Instant::now();
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "TIMING server start until it answers: {:.2?} (ready_after {:.2?})",
        t.elapsed(),
        server.ready_after
    );
    assert!(server
        .socket_path
        .starts_with(sock.path().canonicalize().unwrap()));
    assert!(server.socket_path.exists());

    // over the socket (the bind-mounted one), as root with socket authentication
    assert_eq!(d.sql(&server, "SELECT 1").unwrap().trim(), "1");
    // over TCP to the container's address on the run network, as the created user
    let tcp = d
        .server_exec(
            &server,
            &[
                "mariadb",
                "--protocol=TCP",
                "-h",
                &server.ip,
                "-P",
                "3306",
                "-u",
                "cairn",
                "-N",
                "-B",
                "-e",
                "SELECT 1",
            ],
        )
        .unwrap();
    assert_eq!((tcp.exit_code, tcp.stdout.trim()), (0, "1"), "{tcp:?}");
    // the host reaches it too: a protocol greeting over TCP
    // (a handshake, now that 'cairn'@'%' exists; before, the host got error 1130)
    let mut s = std::net::TcpStream::connect(server.tcp_addr()).unwrap();
    let greeting = read_greeting(&mut s).unwrap();
    assert!(
        matches!(greeting, Greeting::Handshake { ref version } if version.contains("MariaDB")),
        "{greeting:?}"
    );
    assert!(
        server.greeting_version.contains("MariaDB"),
        "{}",
        server.greeting_version
    );
    // the options from my.cnf took effect
    assert_eq!(
        d.sql(
            &server,
            "SELECT @@innodb_buffer_pool_size, @@max_connections"
        )
        .unwrap()
        .trim(),
        "67108864\t50"
    );

    let checks = d
        .variant_checks(&server, &["libtcmalloc_minimal", "libjemalloc"])
        .unwrap();
    eprintln!("checks: {}", serde_json::to_string(&checks).unwrap());
    assert_eq!(checks.word_size, 64);
    assert!(checks.version.contains("MariaDB"), "{}", checks.version);
    assert_eq!(checks.compile_machine, "x86_64");
    assert_eq!(checks.malloc_library, "system");
    assert_eq!(checks.process_name, "mariadbd");
    assert!(!checks.is_mapped("libtcmalloc_minimal"));

    let code = d.stop_server(&server, spec.stop_timeout).unwrap();
    assert_eq!(code, 0, "graceful shutdown exit code");
    let left = docker_cli(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("label=cairn.run={}", run.id),
    ]);
    assert!(left.is_empty(), "containers left: {left}");
    let nets = docker_cli(&[
        "network",
        "ls",
        "-q",
        "--filter",
        &format!("label=cairn.run={}", run.id),
    ]);
    assert!(nets.is_empty(), "networks left: {nets}");
}

/// Option values that my.cnf's reader would change (a `#` comment, outer spaces, quotes,
/// backslash escapes, non-ASCII) reach the real server exactly as the plan wrote them: the
/// record's options and the server's variables never disagree.
#[test]
fn option_values_reach_the_server_exactly() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("optvalues");
    let sock = tempfile::tempdir().unwrap();
    // string variables the server keeps as given (neither runs for root's connections)
    let connect = "SET @a = 'x # y'; SET @b = \"q\\\"\" ";
    let slave = "  C:\\new\\table \\s à'";
    let mut options = small_server_options();
    options.extend(opts(&[("init_connect", connect), ("init_slave", slave)]));
    let spec = ServerSpec::new(&run.id, "values", &base.id, options, sock.path().into());
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02X}")).collect::<String>();
    assert_eq!(
        d.sql(&server, "SELECT HEX(@@init_connect), HEX(@@init_slave)")
            .unwrap()
            .trim(),
        format!("{}\t{}", hex(connect), hex(slave))
    );
    d.stop_server(&server, spec.stop_timeout).unwrap();
}

#[test]
fn invalid_option_fails_with_the_servers_error() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("badopt");
    let sock = tempfile::tempdir().unwrap();
    let mut options = small_server_options();
    options.push(("no_such_option".into(), "1".into()));
    let spec = ServerSpec::new(&run.id, "bad", &base.id, options, sock.path().into());
    let t = Instant::now();
    let err = d
        .start_server(&spec)
        .expect_err("the server must not start")
        .to_string();
    eprintln!("failed after {:.2?} with:\n{err}", t.elapsed());
    assert!(err.contains("unknown variable 'no_such_option=1'"), "{err}");
    let left = docker_cli(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("label=cairn.run={}", run.id),
    ]);
    assert!(
        left.is_empty(),
        "a failed start leaves no container: {left}"
    );

    // a bad value of a known option
    let options = opts(&[("innodb_buffer_pool_size", "banana")]);
    let spec = ServerSpec::new(&run.id, "banana", &base.id, options, sock.path().into());
    let err = d
        .start_server(&spec)
        .expect_err("the server must not start")
        .to_string();
    eprintln!("banana:\n{err}");
    assert!(
        err.contains("innodb_buffer_pool_size") || err.contains("banana"),
        "{err}"
    );
}

#[test]
fn tcmalloc_preload_is_mapped() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("tcm");
    let sock = tempfile::tempdir().unwrap();
    let mut spec = ServerSpec::new(
        &run.id,
        "tcmalloc",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    spec.env = vec![format!("LD_PRELOAD={TCMALLOC}")];
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    let checks = d
        .variant_checks(&server, &["libtcmalloc_minimal", "libjemalloc"])
        .unwrap();
    eprintln!(
        "tcmalloc checks: {}",
        serde_json::to_string(&checks).unwrap()
    );
    assert!(checks.is_mapped("libtcmalloc_minimal"), "{checks:?}");
    assert!(!checks.is_mapped("libjemalloc"));
    assert!(
        checks.malloc_library.contains("tcmalloc"),
        "{}",
        checks.malloc_library
    );
    d.stop_server(&server, spec.stop_timeout).unwrap();

    let sock2 = tempfile::tempdir().unwrap();
    let plain = ServerSpec::new(
        &run.id,
        "system",
        &base.id,
        small_server_options(),
        sock2.path().into(),
    );
    let server = d.start_server(&plain).unwrap_or_else(|e| panic!("{e}"));
    let checks = d.variant_checks(&server, &["libtcmalloc_minimal"]).unwrap();
    assert!(!checks.is_mapped("libtcmalloc_minimal"), "{checks:?}");
    assert_eq!(checks.malloc_library, "system");
    d.stop_server(&server, plain.stop_timeout).unwrap();
}

#[test]
fn layers_and_manifest() {
    let base = bookworm_amd64();
    let d = docker();
    let m = d.manifest(&base.id).unwrap();
    assert_eq!(m.dpkg_architecture, "amd64");
    assert_eq!(m.image_architecture.as_deref(), Some("amd64"));
    let v = m
        .version_of("mariadb-server")
        .expect("mariadb-server installed");
    eprintln!(
        "manifest: {} packages, mariadb-server {v}",
        m.packages.len()
    );
    assert!(m.version_of("libtcmalloc-minimal4").is_some());

    let key1 = format!("e2e-layer-run-{}", std::process::id());
    let key2 = format!("e2e-layer-files-{}", std::process::id());
    let key3 = format!("e2e-layer-env-{}", std::process::id());
    let _images = ImageGuard(
        [&key1, &key2, &format!("{key1}-fail"), &key3]
            .iter()
            .map(|k| cairn_exec::docker::image_ref("e2e-layer", k))
            .collect(),
    );
    let l1 = d
        .run_layer(
            &base.id,
            "e2e-layer",
            &key1,
            "echo \"$GREETING\" > /etc/cairn-greeting",
            &["GREETING=hello".into()],
        )
        .unwrap();
    assert!(l1.built);
    let again = d
        .run_layer(&base.id, "e2e-layer", &key1, "exit 1", &[])
        .unwrap();
    assert!(!again.built, "same key: reused");
    assert_eq!(again.id, l1.id);

    // an env layer sets the image's Env: every container made from it sees the variables
    let le = d
        .env_layer(
            &l1.reference,
            "e2e-layer",
            &key3,
            &["MALLOC_ARENA_MAX=2".into(), "GREETING=hi there".into()],
        )
        .unwrap();
    assert!(le.built);
    let env = d
        .run_once(
            &le.reference,
            &[
                "/bin/sh",
                "-c",
                "echo \"$MALLOC_ARENA_MAX|$GREETING|$PATH\"",
            ],
        )
        .unwrap();
    assert_eq!(
        env.stdout.trim(),
        "2|hi there|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "{env:?}"
    );
    let bad = d.env_layer(
        &l1.reference,
        "e2e-layer",
        "e2e-bad-env",
        &["1BAD=x".into()],
    );
    assert!(
        bad.is_err(),
        "a bad variable name is refused before anything is built"
    );

    let files = [LayerFile {
        path: "conf/x.cnf".into(),
        contents: b"[mariadbd]\n".to_vec(),
        mode: 0o640,
    }];
    let l2 = d
        .file_layer(&l1.id, "e2e-layer", &key2, "/etc/cairn-files", &files)
        .unwrap();

    let out = d.run_once(&l2.id, &["/bin/sh", "-c", "cat /etc/cairn-greeting; stat -c %a /etc/cairn-files/conf/x.cnf; echo \"GREETING=${GREETING:-unset}\""]).unwrap();
    assert_eq!(out.stdout, "hello\n640\nGREETING=unset\n", "{out:?}");
    let inspect = docker_cli(&[
        "image",
        "inspect",
        "-f",
        "{{json .Config.Cmd}} {{index .Config.Labels \"cairn.key\"}}",
        &l2.reference,
    ]);
    assert_eq!(inspect, format!("[\"/bin/bash\"] {key2}"));
    let failing = d.run_layer(
        &base.id,
        "e2e-layer",
        &format!("{key1}-fail"),
        "echo broken-step >&2; exit 3",
        &[],
    );
    let err = failing.expect_err("exit 3 fails").to_string();
    assert!(err.contains("exit") && err.contains("broken-step"), "{err}");

    for r in [&l2.reference, &l1.reference] {
        d.remove_image(r, true).unwrap();
    }
    let base_label = docker_cli(&[
        "image",
        "inspect",
        "-f",
        &format!("{{{{index .Config.Labels \"{LABEL_KEY}\"}}}}"),
        &base.id,
    ]);
    let key = cairn_testkit::base_spec(&cairn_testkit::recipe_file(), cairn_testkit::IMAGE).key;
    assert_eq!(base_label, key);
}

/// Names of the containers (running or not) labelled `cairn.run=<run>`.
fn containers_labelled(run: &str) -> Vec<String> {
    docker_cli(&[
        "ps",
        "-a",
        "--filter",
        &format!("label={LABEL_RUN}={run}"),
        "--format",
        "{{.Names}}",
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn build_containers_carry_the_run_label_and_their_images_name_no_run() {
    let base = bookworm_amd64();
    let run = RunGuard::new("buildlabel");
    let d = docker().for_run(&run.id);
    assert_eq!(d.run_id(), run.id);
    let key = format!("{}-buildlabel", run.id);
    let reference = cairn_exec::docker::image_ref("e2e-buildlabel", &key);
    let _images = ImageGuard(vec![reference.clone()]);
    let seen = std::thread::scope(|s| {
        let build = s.spawn(|| {
            d.run_layer(
                &base.id,
                "e2e-buildlabel",
                &key,
                "sleep 3; echo x > /etc/cairn-x",
                &[],
            )
        });
        // while the layer builds, one label query finds its throwaway container
        let deadline = Instant::now() + std::time::Duration::from_secs(120);
        let mut seen = Vec::new();
        while seen.is_empty() && !build.is_finished() {
            assert!(Instant::now() < deadline, "no labelled build container");
            seen = containers_labelled(&run.id);
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let layer = build.join().expect("build thread").unwrap();
        assert!(layer.built);
        seen
    });
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("cairn-build-"), "{seen:?}");
    assert!(
        containers_labelled(&run.id).is_empty(),
        "removed after the build"
    );
    // the engine merges a committed container's labels into the image: the run label is
    // there, empty, so containers made from the image belong to no run
    let labels: std::collections::HashMap<String, String> = serde_json::from_str(&docker_cli(&[
        "image",
        "inspect",
        "-f",
        "{{json .Config.Labels}}",
        &reference,
    ]))
    .expect("labels as JSON");
    assert_eq!(
        labels.get(LABEL_RUN).map(String::as_str),
        Some(""),
        "{labels:?}"
    );
    assert_eq!(labels.get(LABEL_KEY), Some(&key), "{labels:?}");
}

#[test]
fn cleanup_stale_removes_a_killed_runs_leftovers() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("stale");
    let sock = tempfile::tempdir().unwrap();
    let spec = ServerSpec::new(
        &run.id,
        "orphan",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    let _server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    // as if the run had been killed: nobody stops the server
    let report = d.cleanup_stale(&format!("{LABEL_RUN}={}", run.id)).unwrap();
    assert_eq!(report.containers.len(), 1, "{report:?}");
    assert_eq!(report.networks, [format!("cairn-{}", run.id)]);
    let left = docker_cli(&[
        "ps",
        "-a",
        "-q",
        "--filter",
        &format!("label=cairn.run={}", run.id),
    ]);
    assert!(left.is_empty(), "{left}");
    assert!(
        d.cleanup_stale("com.example.x").is_err(),
        "only cairn labels"
    );
}

#[test]
fn i386_server_is_32_bit() {
    // the shared recipe's 32-bit build (`images/mariadb.kdl`), as plans build it
    let base = build(&cairn_testkit::base_spec(
        &cairn_testkit::recipe_file(),
        "mariadb-bookworm-i386",
    ));
    let d = docker();
    let m = d.manifest(&base.id).unwrap();
    assert_eq!(m.dpkg_architecture, "i386");
    // the allocators resolve to the 32-bit libraries of the image
    let tcmalloc = allocator_library(d, &base.id, "tcmalloc")
        .unwrap()
        .expect("tcmalloc in the image");
    assert!(tcmalloc.contains("i386-linux-gnu"), "{tcmalloc}");
    // Docker 20.10 (API 1.41) imports with the host's architecture whatever the platform
    // parameter says; the label and dpkg tell the truth.
    eprintln!("i386 image: engine architecture {:?}", m.image_architecture);
    let label = docker_cli(&[
        "image",
        "inspect",
        "-f",
        "{{index .Config.Labels \"cairn.debian.arch\"}}",
        &base.id,
    ]);
    assert_eq!(label, "i386");
    let run = RunGuard::new("i386");
    let sock = tempfile::tempdir().unwrap();
    let spec = ServerSpec::new(
        &run.id,
        "s32",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    let mut spec = spec;
    spec.env = vec![format!("LD_PRELOAD={tcmalloc}")];
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    let checks = d
        .variant_checks(&server, &[maps_fragment(&tcmalloc)])
        .unwrap();
    eprintln!("i386 checks: {}", serde_json::to_string(&checks).unwrap());
    assert_eq!(checks.word_size, 32);
    assert_eq!(checks.compile_machine, "i686");
    assert!(checks.is_mapped(maps_fragment(&tcmalloc)), "{checks:?}");
    d.stop_server(&server, spec.stop_timeout).unwrap();
}

fn mariadb_tcp(server: &cairn_exec::docker::Server, host: &str, extra: &[&str]) -> Vec<String> {
    let mut cmd: Vec<String> = [
        "mariadb",
        "--protocol=TCP",
        "-h",
        host,
        "-P",
        "3306",
        "-u",
        server.tcp_user.as_deref().unwrap_or("cairn"),
        "-N",
        "-B",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cmd.extend(extra.iter().map(|s| s.to_string()));
    cmd
}

fn exec(server: &cairn_exec::docker::Server, cmd: &[String]) -> cairn_exec::docker::ExecOutput {
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    docker().server_exec(server, &cmd).unwrap()
}

#[test]
fn tls_server_requires_and_verifies_tls() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("tls");
    let sock = tempfile::tempdir().unwrap();
    let mut spec = ServerSpec::new(
        &run.id,
        "secure",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    spec.connect = Connect::Tls;
    let t = Instant::now();
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "TIMING tls server start until it answers: {:.2?} (ready_after {:.2?})",
        t.elapsed(),
        server.ready_after
    );
    assert_eq!(server.connect, Connect::Tls);
    let ca = server.tls_ca.clone().expect("a CA path for TLS clients");
    assert!(ca.starts_with(sock.path().canonicalize().unwrap()));
    let pem = std::fs::read_to_string(&ca).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");

    // The host's CA file is visible in the container beside the socket: verify the server
    // certificate with it, by the network alias and by the address.
    let ca_in_container = format!("/run/cairn/{}", ca.file_name().unwrap().to_str().unwrap());
    for host in ["secure", server.ip.as_str()] {
        let out = exec(
            &server,
            &mariadb_tcp(
                &server,
                host,
                &[
                    "--ssl",
                    &format!("--ssl-ca={ca_in_container}"),
                    "--ssl-verify-server-cert",
                    "-e",
                    "SHOW STATUS LIKE 'Ssl_cipher'",
                ],
            ),
        );
        assert_eq!(out.exit_code, 0, "TLS to {host}: {out:?}");
        let cipher = out.stdout.trim().split('\t').nth(1).unwrap_or_default();
        eprintln!("TLS to {host}: cipher {cipher}");
        assert!(!cipher.is_empty(), "{out:?}");
    }
    // A CA other than the server's: verification fails.
    let other = cairn_exec::docker::container::tls::generate("other", &["secure".into()]).unwrap();
    std::fs::write(sock.path().join("other-ca.pem"), other.ca_pem).unwrap();
    let out = exec(
        &server,
        &mariadb_tcp(
            &server,
            "secure",
            &[
                "--ssl",
                "--ssl-ca=/run/cairn/other-ca.pem",
                "--ssl-verify-server-cert",
                "-e",
                "SELECT 1",
            ],
        ),
    );
    assert_ne!(out.exit_code, 0, "a foreign CA must not verify: {out:?}");
    // Without TLS the server refuses the connection.
    let out = exec(
        &server,
        &mariadb_tcp(&server, "secure", &["--skip-ssl", "-e", "SELECT 1"]),
    );
    eprintln!("plain TCP to a TLS server: {out:?}");
    assert_ne!(out.exit_code, 0, "plain TCP must be refused: {out:?}");
    assert!(out.stdout.trim().is_empty(), "{out:?}");
    // ... also for a user without REQUIRE SSL: require_secure_transport refuses it.
    d.sql(
        &server,
        "CREATE USER 'plain'@'%'; GRANT ALL ON *.* TO 'plain'@'%'",
    )
    .unwrap();
    let as_plain = |extra: &[&str]| {
        let mut cmd = mariadb_tcp(&server, "secure", extra);
        cmd[7] = "plain".into(); // the -u value
        exec(&server, &cmd)
    };
    let out = as_plain(&["--skip-ssl", "-e", "SELECT 1"]);
    eprintln!("plain TCP as a user without REQUIRE SSL: {out:?}");
    assert_ne!(out.exit_code, 0, "{out:?}");
    // (MariaDB 10.11 reports it as error 1045; the log says why)
    assert!(
        out.stderr.contains("1045") || out.stderr.contains("insecure"),
        "{out:?}"
    );
    // the same user with TLS gets in: it was the transport that was refused
    let out = as_plain(&["--ssl", "-e", "SELECT 1"]);
    assert_eq!((out.exit_code, out.stdout.trim()), (0, "1"), "{out:?}");
    // The socket is secure transport: root over the socket works without TLS.
    assert_eq!(d.sql(&server, "SELECT 1").unwrap().trim(), "1");
    assert_eq!(
        d.sql(&server, "SELECT @@require_secure_transport")
            .unwrap()
            .trim(),
        "1"
    );
    d.stop_server(&server, spec.stop_timeout).unwrap();
}

#[test]
fn resource_limits_are_applied() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("limits");
    let sock = tempfile::tempdir().unwrap();
    let mut spec = ServerSpec::new(
        &run.id,
        "limited",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpuset = if cpus >= 2 { "0-1" } else { "0" };
    spec.cpuset = Some(cpuset.into());
    spec.memory = Some(512 << 20);
    let t = Instant::now();
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("TIMING limited server start: {:.2?}", t.elapsed());
    let inspect = docker_cli(&[
        "inspect",
        "-f",
        "{{.HostConfig.CpusetCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}",
        &server.container_id,
    ]);
    assert_eq!(
        inspect,
        format!("{cpuset} {} {}", 512u64 << 20, 512u64 << 20)
    );
    // the server process sees only those CPUs
    let nproc = d.server_exec(&server, &["nproc"]).unwrap();
    assert_eq!(nproc.stdout.trim(), if cpus >= 2 { "2" } else { "1" });
    assert_eq!(d.sql(&server, "SELECT 1").unwrap().trim(), "1");
    d.stop_server(&server, spec.stop_timeout).unwrap();
}

#[test]
fn allocators_resolve_and_are_mapped() {
    let base = bookworm_amd64();
    let d = docker();
    assert_eq!(allocator_library(d, &base.id, "system").unwrap(), None);
    assert!(allocator_library(d, &base.id, "mimalloc").is_err());
    // an image without the library: the error names the package to add
    let key = format!("e2e-nojemalloc-{}", std::process::id());
    let layer = d
        .run_layer(
            &base.id,
            "e2e-nojemalloc",
            &key,
            "dpkg --purge libjemalloc2 >/dev/null",
            &[],
        )
        .unwrap();
    let _layer_guard = ImageGuard(vec![layer.reference.clone()]);
    let err = allocator_library(d, &layer.reference, "jemalloc").expect_err("purged");
    assert!(
        matches!(err, DockerError::MissingAllocator { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("`libjemalloc2`"), "{err}");
    let run = RunGuard::new("alloc");
    for (alloc, name) in [("tcmalloc", "tcmalloc"), ("jemalloc", "jemalloc")] {
        let t = Instant::now();
        let lib = allocator_library(d, &base.id, alloc)
            .unwrap()
            .expect("a library");
        eprintln!("TIMING resolve {alloc}: {lib} in {:.2?}", t.elapsed());
        assert!(lib.starts_with('/'), "{lib}");
        let sock = tempfile::tempdir().unwrap();
        let mut spec = ServerSpec::new(
            &run.id,
            alloc,
            &base.id,
            small_server_options(),
            sock.path().into(),
        );
        spec.env = vec![format!("LD_PRELOAD={lib}")];
        let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
        let fragment = maps_fragment(&lib);
        let others = ["libtcmalloc", "libjemalloc"];
        let checks = d
            .variant_checks(&server, &[fragment, others[0], others[1]])
            .unwrap();
        eprintln!(
            "{alloc} checks: {}",
            serde_json::to_string(&checks).unwrap()
        );
        assert!(checks.is_mapped(fragment), "{checks:?}");
        assert!(
            checks.malloc_library.contains(name),
            "{}",
            checks.malloc_library
        );
        // the other allocator is not mapped
        let other = if alloc == "tcmalloc" {
            others[1]
        } else {
            others[0]
        };
        assert!(!checks.is_mapped(other), "{checks:?}");
        d.stop_server(&server, spec.stop_timeout).unwrap();
    }
}

/// The race CI once lost: one step's server stopped while another step's server was created
/// but not yet started (so not listed as attached), and the run's network went away under
/// it. A lease, taken before the container is created, keeps the network.
#[test]
fn a_leased_network_outlives_the_last_server_to_stop() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("lease");
    let network_exists = || {
        let names = docker_cli(&["network", "ls", "--format", "{{.Name}}"]);
        names.lines().any(|n| n == format!("cairn-{}", run.id))
    };
    // another step, about to create its server
    let network = d.lease_network(&run.id).unwrap();
    let sock = tempfile::tempdir().unwrap();
    let spec = ServerSpec::new(
        &run.id,
        "only",
        &base.id,
        small_server_options(),
        sock.path().into(),
    );
    let server = d.start_server(&spec).unwrap_or_else(|e| panic!("{e}"));
    d.stop_server(&server, std::time::Duration::from_secs(20))
        .unwrap();
    assert!(network_exists(), "the leased network was removed");
    assert!(d.release_network(&network).unwrap());
    assert!(!network_exists());
}

fn leave_stopped_and_running(run: &RunGuard) -> (tempfile::TempDir, tempfile::TempDir) {
    let base = bookworm_amd64();
    let d = docker();
    let (s1, s2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let running = ServerSpec::new(
        &run.id,
        "running",
        &base.id,
        small_server_options(),
        s1.path().into(),
    );
    d.start_server(&running).unwrap_or_else(|e| panic!("{e}"));
    let stopped = ServerSpec::new(
        &run.id,
        "stopped",
        &base.id,
        small_server_options(),
        s2.path().into(),
    );
    let server = d.start_server(&stopped).unwrap_or_else(|e| panic!("{e}"));
    docker_cli(&["stop", "-t", "10", &server.container_id]);
    let states = docker_cli(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=cairn.run={}", run.id),
        "--format",
        "{{.State}}",
    ]);
    let mut states: Vec<&str> = states.lines().collect();
    states.sort();
    assert_eq!(states, ["exited", "running"]);
    (s1, s2)
}

fn assert_run_gone(run: &RunGuard) {
    let label = format!("label=cairn.run={}", run.id);
    let left = docker_cli(&["ps", "-a", "-q", "--filter", &label]);
    assert!(left.is_empty(), "containers left: {left}");
    let nets = docker_cli(&["network", "ls", "-q", "--filter", &label]);
    assert!(nets.is_empty(), "networks left: {nets}");
}

#[test]
fn clean_runs_removes_stopped_and_running_containers() {
    let d = docker();
    let run = RunGuard::new("clean");
    let _dirs = leave_stopped_and_running(&run);
    // only this test's run: other tests (and other cairn processes) run beside it
    let report = clean_runs(d, |r| r == run.id, false).unwrap();
    eprintln!("{report:?}");
    let mut names = report.containers.clone();
    names.sort();
    assert_eq!(
        names,
        [
            format!("cairn-{}-running", run.id),
            format!("cairn-{}-stopped", run.id)
        ]
    );
    assert_eq!(report.networks, [format!("cairn-{}", run.id)]);
    assert_run_gone(&run);
}

/// `clean_all` removes every cairn container and network on the engine, including those of
/// other tests and processes running now, so it only runs when asked:
/// `cargo test -p cairn-exec --test docker_e2e clean_all -- --ignored`.
#[test]
#[ignore = "removes every cairn container on the engine"]
fn clean_all_removes_everything_cairn_left() {
    let base = bookworm_amd64();
    let d = docker();
    let run = RunGuard::new("cleanall");
    let _dirs = leave_stopped_and_running(&run);
    let build = format!("cairn-build-e2e-{}", std::process::id());
    docker_cli(&["create", "--name", &build, &base.id, "true"]);
    let report = clean_all(d).unwrap();
    eprintln!("{report:?}");
    assert!(report.containers.contains(&build), "{report:?}");
    assert!(report.containers.len() >= 3, "{report:?}");
    assert!(report.networks.contains(&format!("cairn-{}", run.id)));
    assert_run_gone(&run);
    let builds = docker_cli(&["ps", "-a", "-q", "--filter", "name=cairn-build-"]);
    assert!(builds.is_empty(), "{builds}");
}

/// A dataset snapshot made by the Docker runtime (the server's datadir in a host directory,
/// archived from there) restores, trial after trial, to the same datadir: the runtime's
/// restore ([`cairn_exec::datadir::restore`], zero blocks left as holes) gives the digest of
/// a plain unpack of the archive every time, and servers start from it.
#[test]
fn every_restore_of_a_snapshot_is_the_same_datadir() {
    use cairn_exec::runtime::Runtimes;
    let base = bookworm_amd64();
    let run = RunGuard::new("restore");
    let runtimes = Runtimes::new(cairn_exec::cancel::CancelToken::new());
    let sock = tempfile::tempdir().unwrap();
    let start = |step: &str, snapshot: Option<&std::path::Path>| {
        start_with(
            &run.id,
            &base.reference,
            sock.path(),
            &runtimes,
            step,
            snapshot,
        )
    };

    let dataset = start("dataset", None);
    assert!(dataset.restore().is_none(), "nothing to restore");
    let dir = tempfile::tempdir().unwrap();
    let tar = &dir.path().join("snap.tar");
    dataset.stop_archiving(tar).unwrap();

    // the runtime's restore, twice, against a plain unpack of the same archive
    let plain = dir.path().join("plain");
    let mut a = tar::Archive::new(std::fs::File::open(tar).unwrap());
    a.set_preserve_permissions(true);
    a.set_preserve_ownerships(true);
    a.unpack(&plain).unwrap();
    let want = cairn_exec::datadir::digest(&plain.join("data")).unwrap();
    for i in 0..2 {
        let d = dir.path().join(format!("r{i}"));
        let r = cairn_exec::datadir::restore(tar, &d).unwrap();
        assert!(r.written < r.bytes, "zero blocks are not written: {r:?}");
        assert_eq!(
            cairn_exec::datadir::digest(&d.join("data")).unwrap(),
            want,
            "restore {i}"
        );
    }

    // servers started from it, restored by the runtime the same way
    for step in ["trial-1", "trial-2"] {
        let t = Instant::now();
        let mut server = start(step, Some(tar));
        let restore = server.restore().expect("the runtime restored the datadir");
        eprintln!(
            "TIMING {step}: restore {:.0} ms ({restore:?}), restore and start until it answers {:.2?}",
            restore.ms,
            t.elapsed()
        );
        assert_eq!(restore.how, "host directory");
        let restored = restore.restored.unwrap();
        assert!(
            restored.files > 50 && restored.written < restored.bytes,
            "{restored:?}"
        );
        assert!(server.is_running());
        server.stop().unwrap();
    }
}

/// A small MariaDB server from `image` through the Docker runtime, for `step` of `run_id`.
fn start_with(
    run_id: &str,
    image: &str,
    socket_dir: &std::path::Path,
    runtimes: &cairn_exec::runtime::Runtimes,
    step: &str,
    snapshot: Option<&std::path::Path>,
) -> Box<dyn cairn_exec::runtime::RunningServer> {
    use std::time::Duration;
    let s = cairn_exec::runtime::ServerStart {
        run_id,
        step_id: step,
        image: Some(image),
        system: cairn_exec::system::by_name("mariadb").unwrap(),
        options: small_server_options(),
        env: Vec::new(),
        connect: Connect::Tcp,
        cpus: None,
        memory: None,
        snapshot,
        ready_timeout: Duration::from_secs(120),
        stop_grace: Duration::from_secs(60),
        cancel: runtimes.cancel().clone(),
        socket_dir,
    };
    runtimes
        .get("docker")
        .unwrap()
        .start(&s)
        .unwrap_or_else(|e| panic!("{step}: {e}"))
}
