//! Database systems behind one seam: what cairn must know about a server program — its
//! configuration file, how a datadir is initialised and the server started, how to tell it
//! answers, its client user and the query that says what variant runs. Runtimes (containers,
//! host processes) ask a [`DbSystem`] and never name a system themselves.
//!
//! Adding a system: a module beside [`mariadb`] implementing [`DbSystem`], and one line in
//! [`SYSTEMS`]; a system that is another one under a different name (a fork, a distribution's
//! build) is a [`variant::Variant`] of it: its name, the system it is like, and how to tell
//! it from that one. The plan's `system` values, `cairn check`'s message and the help texts read
//! the names from there; the default (a server that names none) is
//! [`cairn_defs::server::DEFAULT_SYSTEM`], because it is part of what a key means.

pub mod greeting;
pub mod mariadb;
pub mod mysql;
pub mod postgresql;
pub mod variables;
pub mod variant;

use std::path::Path;
use std::process::Command;

pub use greeting::Greeting;

/// Every database system cairn can run: the one list of them.
pub static SYSTEMS: &[&dyn DbSystem] = &[&mariadb::MariaDb, &mysql::MySql, &postgresql::PostgreSql];

/// The systems' names, in [`SYSTEMS`] order.
pub fn names() -> Vec<&'static str> {
    SYSTEMS.iter().map(|s| s.name()).collect()
}

/// The database system called `name`; the error lists the known ones.
pub fn by_name(name: &str) -> Result<&'static dyn DbSystem, String> {
    SYSTEMS
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            format!(
                "unknown database system `{name}`: known systems are {}",
                names().join(", ")
            )
        })
}

/// The system a server definition means when it names none.
pub fn default_system() -> &'static dyn DbSystem {
    by_name(cairn_defs::server::DEFAULT_SYSTEM).expect("the default system is registered")
}

/// Where a server's files are and how it listens, as the server sees them (inside its
/// container, or on the host). The runtime decides; the system writes it into its config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLayout {
    pub datadir: String,
    pub socket: String,
    pub pid_file: String,
    /// The error log file; `None` = the server's stderr (a container's log).
    pub log_file: Option<String>,
    /// TCP (bind address, port); `None` = the socket only.
    pub listen: Option<(String, u16)>,
    /// The OS user the server runs as, if it must be told.
    pub run_as: Option<String>,
    /// Server certificate files, if clients connect with TLS (then unencrypted TCP is refused).
    pub tls: Option<TlsFiles>,
    /// A private directory for temporary files, where the default one is shared with other
    /// servers: a MySQL-family server deletes every `#sql*` file in its tmpdir when it
    /// starts, so two host servers sharing `/tmp` break each other's bootstrap.
    pub tmpdir: Option<String>,
}

/// A server's TLS files, as the server sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

/// What a database system's server program and package fix, the same on every machine. The
/// trait's accessors ([`DbSystem::process_name`], …) read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The server's process name (`/proc/<pid>/comm`), e.g. `mariadbd`.
    pub process_name: &'static str,
    /// The TCP port the server listens on by default.
    pub default_port: u16,
    /// The OS user the server drops to in a container (its package's service user).
    pub service_user: &'static str,
    /// The administrator account that needs no password over the socket.
    pub admin_user: &'static str,
    /// The socket file's name inside the socket directory.
    pub socket_name: &'static str,
    /// The configuration file's name, e.g. `my.cnf`.
    pub config_name: &'static str,
    /// A boolean option's values as the configuration file spells them: (on, off).
    pub flags: (&'static str, &'static str),
}

/// One database system (a server program and its tools). Implementations hold no state: the
/// registry hands out `&'static` instances.
pub trait DbSystem: Send + Sync {
    /// The name definitions use, e.g. `mariadb`.
    fn name(&self) -> &'static str;
    /// What the server program and its package fix (process name, port, users, files): one
    /// value, so a system like another ([`variant::Variant`]) takes all of it at once.
    fn facts(&self) -> &'static Facts;
    /// The server's process name (`/proc/<pid>/comm`), e.g. `mariadbd`.
    fn process_name(&self) -> &'static str {
        self.facts().process_name
    }
    /// The TCP port the server listens on by default.
    fn default_port(&self) -> u16 {
        self.facts().default_port
    }
    /// The OS user the server drops to in a container (its package's service user).
    fn service_user(&self) -> &'static str {
        self.facts().service_user
    }
    /// The administrator account that needs no password over the socket (for a host server
    /// run as the invoking user).
    fn admin_user(&self) -> &'static str {
        self.facts().admin_user
    }
    /// The socket file's name inside the socket directory.
    fn socket_name(&self) -> &'static str {
        self.facts().socket_name
    }
    /// The configuration file's name, e.g. `my.cnf`.
    fn config_name(&self) -> &'static str {
        self.facts().config_name
    }
    /// A boolean option's value as the configuration file spells it.
    fn flag_text(&self, on: bool) -> &'static str {
        let (yes, no) = self.facts().flags;
        if on {
            yes
        } else {
            no
        }
    }
    /// Whether the option `key` = `value` (an empty value is a bare flag) can be written into
    /// the configuration file so that the server reads exactly this key and value; the error
    /// says why not. `cairn check` and every start ask it (through the engine's server
    /// check), and [`DbSystem::config_file`] refuses what it refuses, so a plan's record and
    /// the running server can never disagree about an option. Every implementation refuses
    /// at least what [`check_option_common`] refuses.
    fn check_option(&self, key: &str, value: &str) -> Result<(), String>;
    /// The configuration file: the plan's `options` (name, value; an empty value is a bare
    /// flag), then the settings of `layout`, last so they win. An option that
    /// [`DbSystem::check_option`] refuses fails it (nothing is written).
    fn config_file(
        &self,
        options: &[(String, String)],
        layout: &ServerLayout,
    ) -> Result<String, String>;
    /// A `/bin/sh` script, run as root in a container, that prepares the directories of
    /// `layout` (and the TLS directory `tls_dir`, if any), initialises an empty datadir and
    /// `exec`s the server with the configuration file at `config`.
    fn container_start_script(
        &self,
        config: &str,
        layout: &ServerLayout,
        tls_dir: Option<&str>,
    ) -> String;
    /// The host programs a host server needs (checked before a start).
    fn host_programs(&self) -> &'static [&'static str];
    /// What to install on a host that lacks them, e.g. a Debian package.
    fn host_install_hint(&self) -> &'static str;
    /// Whether the host program `name` found at `path` is this system's (another system's
    /// program may go by the same name: Debian's MariaDB links `/usr/sbin/mysqld` to
    /// `mariadbd`); the error says what it is instead. The default accepts it.
    fn check_host_program(&self, _name: &str, _path: &Path) -> Result<(), String> {
        Ok(())
    }
    /// The command that initialises an empty datadir on the host; its failure output is the
    /// command's stderr followed by the server log.
    fn host_init_command(&self, config: &Path, as_root: bool) -> Result<Command, String>;
    /// The command that starts the server on the host in the foreground.
    fn host_server_command(&self, config: &Path) -> Result<Command, String>;
    /// argv that asks the server whether it answers, given its configuration file.
    fn ping_argv(&self, config: &str) -> Vec<String>;
    /// argv that runs `sql` as the administrator over the socket and prints tab-separated rows
    /// without column names, given the server's configuration file.
    fn sql_argv(&self, config: &str, sql: &str) -> Vec<String>;
    /// SQL creating the password-less client user `user` with all privileges, reachable over
    /// TCP and the socket (`require_tls`: only over TLS on TCP).
    fn create_user_sql(&self, user: &str, require_tls: bool) -> String;
    /// Settings that only make a dataset's load faster, for the server that loads it (never
    /// a trial's): the dataset is a snapshot taken after a clean shutdown, so the load needs
    /// no durability of single commits, no torn-page protection and no binary log. None of
    /// them is kept in the datadir. Recorded with the dataset (`extra.load_settings`).
    fn load_options(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Whether a running server is this system, by the version it answers to
    /// [`DbSystem::variant_query`]: every start asks, so an image of another system (a
    /// MySQL image run as `mariadb`, say) fails its step instead of being recorded under the
    /// wrong name. The error says what the server is instead.
    fn identify(&self, version: &str) -> Result<(), String>;
    /// One-row query: version, compile machine, malloc library (tab-separated). A server
    /// that cannot name its allocator (MySQL, PostgreSQL) answers an empty third column: the
    /// variant check then names the allocator libraries mapped into the process, linked by
    /// its binary or loaded (`system` when none is).
    fn variant_query(&self) -> &'static str;
    /// The server's first packet on a new connection: ready (with its version) or refusing.
    fn read_greeting(&self, r: &mut dyn std::io::Read) -> Result<Greeting, String>;
    /// Greet the server on a new connection: what the client sends first, if its protocol
    /// has the client speak first (PostgreSQL's startup message), then
    /// [`DbSystem::read_greeting`]. The default only reads (the MySQL protocol's server
    /// speaks first).
    fn greet(&self, s: &mut dyn greeting::Stream) -> Result<Greeting, String> {
        self.read_greeting(&mut greeting::Reader(s))
    }
    /// The client protocol native drivers speak to it (`mysql`, `postgresql`).
    fn client_protocol(&self) -> &'static str {
        "mysql"
    }
    /// Whether the process executor can start it on the host (`cairn check` refuses
    /// `executor "process"` otherwise).
    fn runs_on_host(&self) -> bool {
        true
    }
    /// The signal that shuts the server down cleanly (flushing its datadir) and promptly.
    fn stop_signal(&self) -> &'static str {
        "SIGTERM"
    }
    /// A `/bin/sh` script, run as root in a throwaway container of a server's image, whose
    /// output names every option the server program takes ([`DbSystem::variables`] reads
    /// it); `None`: the system cannot say, and its options' names are not checked.
    fn variables_script(&self) -> Option<String> {
        None
    }
    /// The option names in the output of [`DbSystem::variables_script`].
    fn variables(&self, _output: &str) -> variables::ServerVariables {
        variables::ServerVariables::default()
    }
    /// What `names` (the program's list) says of the plan's option `key`, in this system's
    /// configuration file's spelling.
    fn option_name(
        &self,
        _names: &variables::ServerVariables,
        _key: &str,
    ) -> variables::OptionName {
        variables::OptionName::Unchecked
    }
}

impl std::fmt::Debug for dyn DbSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DbSystem({})", self.name())
    }
}

/// What a version string says the server is, for [`DbSystem::identify`]'s errors.
pub fn family_of(version: &str) -> &'static str {
    let v = version.to_ascii_lowercase();
    if v.contains("mariadb") {
        "MariaDB"
    } else if v.contains("postgresql") {
        "PostgreSQL"
    } else if v.contains("percona") {
        "Percona Server"
    } else {
        "a MySQL-protocol server"
    }
}

/// What no configuration format cairn writes can hold (my.cnf, postgresql.conf, …): an
/// empty key, and in a key or a value a line break, a NUL or another control character
/// (they end or cut the line the option is on, so the rest would be read as another option
/// or ignored), or `[` / `]` (section headers in INI-like files). Systems refuse more where
/// their format needs it.
pub fn check_option_common(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("an option needs a name: the key is empty".into());
    }
    for (what, text) in [("name", key), ("value", value)] {
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(format!(
                "the option's {what} contains the control character {}: a configuration file cannot hold it (it would end or cut the option's line)",
                describe_char(c)
            ));
        }
        if let Some(c) = text.chars().find(|c| matches!(c, '[' | ']')) {
            return Err(format!(
                "the option's {what} contains `{c}`: configuration files read it as a section header"
            ));
        }
    }
    Ok(())
}

/// A control character for a message: its name and escape, else its code point.
fn describe_char(c: char) -> String {
    match c {
        '\n' => "line feed (\\n)".into(),
        '\r' => "carriage return (\\r)".into(),
        '\t' => "tab (\\t)".into(),
        '\0' => "NUL (\\0)".into(),
        c => format!("U+{:04X}", c as u32),
    }
}

/// Program `name` of `system` on this host, or an error saying what to install.
pub fn host_program(system: &dyn DbSystem, name: &str) -> Result<std::path::PathBuf, String> {
    find_program(name).ok_or_else(|| {
        format!(
            "no `{name}` on this host: install {}, or use the Docker executor",
            system.host_install_hint()
        )
    })
}

/// Find a program in PATH or the sbin directories (servers live in /usr/sbin).
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(std::path::PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_the_known_systems() {
        assert_eq!(by_name("mariadb").unwrap().name(), "mariadb");
        assert_eq!(default_system().name(), cairn_defs::server::DEFAULT_SYSTEM);
        assert_eq!(by_name("mysql").unwrap().process_name(), "mysqld");
        assert_eq!(by_name("postgresql").unwrap().name(), "postgresql");
        for name in names() {
            assert_eq!(by_name(name).unwrap().name(), name);
        }
        let e = by_name("oracle").unwrap_err();
        assert!(
            e.contains("`oracle`") && e.contains("mariadb, mysql, postgresql"),
            "{e}"
        );
    }

    #[test]
    fn common_option_check_refuses_what_no_format_holds() {
        check_option_common("max_connections", "512").unwrap();
        check_option_common("skip-log-bin", "").unwrap();
        let refused = |k: &str, v: &str| check_option_common(k, v).unwrap_err();
        assert!(refused("", "1").contains("key is empty"));
        assert!(refused("wait_timeout", "100\nmax_connections=7").contains("line feed"));
        assert!(refused("wait\ntimeout", "1").contains("option's name"));
        assert!(refused("a", "x\ry").contains("carriage return"));
        assert!(refused("a", "x\0y").contains("NUL"));
        assert!(refused("a\0", "1").contains("NUL"));
        assert!(refused("a", "x\u{1b}").contains("U+001B"));
        assert!(refused("[mysqld", "1").contains("section header"));
        assert!(refused("a", "x]").contains("`]`"));
    }
}
