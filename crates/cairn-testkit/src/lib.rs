//! Test support: the shared MariaDB test image (the shipped `images/mariadb.kdl` recipe, built once per machine), the MySQL one (`images/mysql.kdl`) and servers started under a cleanup guard.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use cairn_exec::docker::{BaseSpec, Connect, Docker, Server, ServerSpec, LABEL_RUN};

/// The recipe file all MariaDB tests use.
pub fn recipe_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/mariadb.kdl")
}

/// The name of the image (in `images/mariadb.kdl`) the tests use.
pub const IMAGE: &str = "mariadb-bookworm";

/// The Docker Engine, connected once per test process.
pub fn docker() -> &'static Docker {
    static D: OnceLock<Docker> = OnceLock::new();
    D.get_or_init(|| Docker::connect().unwrap_or_else(|e| panic!("{e}")))
}

/// The shared test image as it exists in the engine.
#[derive(Debug, Clone)]
pub struct TestImage {
    /// `cairn/mariadb-bookworm:<key>`, the tag a plan run gives it.
    pub reference: String,
    pub id: String,
    /// The base step's key.
    pub key: String,
}

/// The base step of image `name` in `recipe`: its key and what debootstrap must make.
pub fn base_spec(recipe: &Path, name: &str) -> BaseSpec {
    let plan = cairn_plan::load(recipe).unwrap_or_else(|e| panic!("{}", cairn_plan::render(&e)));
    let graph = cairn_graph::resolve(&plan).expect("resolve the recipe");
    let address = format!("image/{name}");
    let step = graph
        .steps
        .iter()
        .find(|s| s.address == address)
        .unwrap_or_else(|| panic!("{} declares no {address}", recipe.display()));
    let key = cairn_graph::step_key(step, &[], None).hash();
    let def = step.image_def().unwrap_or_else(|e| panic!("{e}"));
    let cairn_defs::ImageDef::Base { debian, packages } = def else {
        panic!("{address} is not a base image: {def:?}");
    };
    BaseSpec {
        name: step.name.clone(),
        key,
        suite: debian.suite,
        arch: debian.arch,
        packages,
        mirror: None,
        cache_dir: None,
    }
}

/// The `mariadb-bookworm` image of `images/mariadb.kdl`, built if the engine lacks it
/// (about a minute), else reused at once.
pub fn mariadb_image() -> &'static TestImage {
    static I: OnceLock<TestImage> = OnceLock::new();
    I.get_or_init(|| build_image(&recipe_file(), IMAGE))
}

/// The recipe file of the MySQL tests.
pub fn mysql_recipe_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/mysql.kdl")
}

/// The name of the MySQL image (in `images/mysql.kdl`) the tests use.
pub const MYSQL_IMAGE: &str = "mysql-sid";

/// The `mysql-sid` image of `images/mysql.kdl` (Debian sid's MySQL), built if the engine
/// lacks it (a few minutes), else reused at once.
pub fn mysql_image() -> &'static TestImage {
    static I: OnceLock<TestImage> = OnceLock::new();
    I.get_or_init(|| build_image(&mysql_recipe_file(), MYSQL_IMAGE))
}

/// Base image `name` of `recipe` as a plan run tags it, built if the engine lacks it.
fn build_image(recipe: &Path, name: &str) -> TestImage {
    let spec = base_spec(recipe, name);
    let t = Instant::now();
    let img = docker()
        .build_base(&spec)
        .unwrap_or_else(|e| panic!("build the test image {name}: {e}"));
    eprintln!(
        "testkit: {} built={} in {:.1?}",
        img.reference,
        img.built,
        t.elapsed()
    );
    TestImage {
        reference: img.reference,
        id: img.id,
        key: spec.key,
    }
}

/// The recipe file of the PostgreSQL tests.
pub fn postgresql_recipe_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../images/postgresql.kdl")
}

/// The name of the image (in `images/postgresql.kdl`) the PostgreSQL tests use.
pub const POSTGRESQL_IMAGE: &str = "postgresql-bookworm";

/// The `postgresql-bookworm` image of `images/postgresql.kdl`, built if the engine lacks it,
/// else reused at once.
pub fn postgresql_image() -> &'static TestImage {
    static I: OnceLock<TestImage> = OnceLock::new();
    I.get_or_init(|| build_image(&postgresql_recipe_file(), POSTGRESQL_IMAGE))
}

/// Removes every container and network labelled `cairn.run=<id>` when dropped.
pub struct RunGuard {
    pub id: String,
}

impl RunGuard {
    /// A guard for a run id unique to this process and `test`; removes leftovers of an
    /// earlier attempt with the same id first.
    pub fn new(test: &str) -> RunGuard {
        let id = format!("t-{}-{test}", std::process::id());
        let g = RunGuard { id };
        g.clean();
        g
    }

    fn clean(&self) {
        if let Err(e) = docker().cleanup_stale(&format!("{LABEL_RUN}={}", self.id)) {
            eprintln!("guard cleanup of {} failed: {e}", self.id);
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.clean();
    }
}

/// `my.cnf` options for a small test server: a 128 MiB buffer pool, no name resolution, 50
/// connections.
pub const SMALL_SERVER: &[(&str, &str)] = &[
    ("innodb_buffer_pool_size", "128M"),
    ("skip-name-resolve", ""),
    ("max_connections", "50"),
];

/// A server started for a test; its containers go when it is dropped.
pub struct TestServer {
    pub server: Server,
    /// The host directory holding the socket (and the TLS CA).
    pub socket_dir: tempfile::TempDir,
    pub guard: RunGuard,
}

impl TestServer {
    /// Run `work` on another thread and, a second in, do `docker <verb>` to the server's
    /// container — `kill` (SIGKILL, a crash: the container and its network stay, so
    /// reconnections fail on the local bridge instead of routing off this machine) or `pause`
    /// (every process stopped: a hang; unpaused once `work` returned). Returns what `work`
    /// returned.
    pub fn disturbed<T: Send>(&self, verb: &str, work: impl FnOnce() -> T + Send) -> T {
        let id = &self.server.container_id;
        let docker_cli = |verb: &str| {
            let out = std::process::Command::new("docker")
                .args([verb, id])
                .output()
                .expect("docker CLI");
            assert!(out.status.success(), "docker {verb}: {out:?}");
        };
        std::thread::scope(|s| {
            let run = s.spawn(work);
            std::thread::sleep(std::time::Duration::from_secs(1));
            docker_cli(verb);
            let r = run.join().expect("the work thread panicked");
            if verb == "pause" {
                docker_cli("unpause");
            }
            r
        })
    }

    /// Stop the server (SIGTERM, wait) and remove it.
    pub fn stop(&self) -> i64 {
        docker()
            .stop_server(&self.server, std::time::Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("stop: {e}"))
    }
}

/// Start a MariaDB server from the test image with these `my.cnf` options (name, value;
/// empty value = a flag), reachable over TCP as user `cairn` without a password.
pub fn start_mariadb(test: &str, options: &[(&str, &str)], connect: Connect) -> TestServer {
    start_server(test, &mariadb_image().reference, None, options, connect)
}

/// Start a PostgreSQL server from its test image with its defaults, reachable over TCP as
/// user `cairn` without a password.
pub fn start_postgresql(test: &str, connect: Connect) -> TestServer {
    let system = cairn_exec::system::by_name("postgresql").expect("a known system");
    start_server(
        test,
        &postgresql_image().reference,
        Some(system),
        &[],
        connect,
    )
}

/// Start a server of `system` (`None`: the default system) from `image`.
fn start_server(
    test: &str,
    image: &str,
    system: Option<&'static dyn cairn_exec::system::DbSystem>,
    options: &[(&str, &str)],
    connect: Connect,
) -> TestServer {
    let guard = RunGuard::new(test);
    let socket_dir = tempfile::tempdir().expect("socket dir");
    let options: Vec<(String, String)> = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut spec = ServerSpec::new(&guard.id, "db", image, options, socket_dir.path().into());
    spec.connect = connect;
    if let Some(system) = system {
        spec.system = system;
    }
    let server = docker()
        .start_server(&spec)
        .unwrap_or_else(|e| panic!("start a test server: {e}"));
    TestServer {
        server,
        socket_dir,
        guard,
    }
}
