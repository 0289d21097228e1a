//! MariaDB: its `my.cnf`, `mariadb-install-db` and `mariadbd`, `mariadb-admin ping`, the
//! password-less client user and the variant query (`@@version_malloc_library`).

use std::path::Path;
use std::process::Command;

use super::{check_option_common, greeting, host_program, DbSystem, Facts, Greeting, ServerLayout};

/// The MariaDB server (`mariadbd`) and its client tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct MariaDb;

/// The longest option line written into my.cnf. The server reads option files with
/// `fgets` into a 4096-byte buffer (mysys `search_default_file_with_ext`): a longer line is
/// cut, and its rest read as another line.
const MAX_OPTION_LINE: usize = 4000;

/// Whether a value can go into my.cnf as it is. Otherwise it is written in double quotes with
/// `\` and `"` escaped, because the option file reader (mysys `my_default.c`) would change
/// it: `#` starts a comment (outside quotes), leading and trailing white space is stripped,
/// a value that starts and ends with the same quote loses them, and a backslash starts an
/// escape (`\n`, `\t`, `\s`, `\\`, …). Non-ASCII text is quoted too: the reader strips
/// bytes it takes for Latin-1 white space (e.g. 0xA0, part of UTF-8 `à`) from the ends.
fn plain_value(value: &str) -> bool {
    !value.starts_with(' ')
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && !matches!(b, b'#' | b'\'' | b'"' | b'\\'))
}

/// `value` as my.cnf spells it so that the server reads exactly `value` (see [`plain_value`]).
/// Inside double quotes the reader keeps `#`, `'` and white space; `\\` and `\"` are its
/// escapes of a backslash and a double quote.
fn cnf_value(value: &str) -> String {
    if plain_value(value) {
        return value.to_string();
    }
    let mut s = String::with_capacity(value.len() + 2);
    s.push('"');
    for c in value.chars() {
        if matches!(c, '\\' | '"') {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// An option's line in my.cnf (without the line break): `key`, or `key = value`.
pub(super) fn cnf_line(key: &str, value: &str) -> String {
    if value.is_empty() {
        key.to_string()
    } else {
        format!("{key} = {}", cnf_value(value))
    }
}

/// What my.cnf can hold, for the MySQL family (`family` names it in the error): see
/// [`MariaDb::check_option`]; MySQL reads option files with the same mysys code.
pub(super) fn check_my_cnf_option(key: &str, value: &str, family: &str) -> Result<(), String> {
    check_option_common(key, value)?;
    if !key.starts_with(|c: char| c.is_ascii_alphabetic())
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "`{key}` is not a {family} option name: names are letters, digits, `_`, `-` and `.`, starting with a letter"
        ));
    }
    let line = cnf_line(key, value).len();
    if line > MAX_OPTION_LINE {
        return Err(format!(
            "the option is {line} bytes long in my.cnf; the server reads at most {MAX_OPTION_LINE} bytes of a line"
        ));
    }
    Ok(())
}

/// The parent directory of a path in a layout (socket directory of a socket path).
pub(super) fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((dir, _)) => dir,
        None => ".",
    }
}

/// A my.cnf for a server of the MySQL family: a `[client]` section for the tools beside the
/// server (socket, user root), `defaults` (cairn's own, which a plan may override) and the
/// plan's `options` in `[section]`, then cairn's fixed settings, which therefore win; for
/// TLS a last `[section]` with the certificates and `require_secure_transport`. Every option
/// goes through `check` first (defence in depth: the engine checks options before a start).
/// The MySQL family's command-line client running `sql` with `config`, tab-separated and
/// without column names.
pub(super) fn client_sql_argv(program: &str, config: &str, sql: &str) -> Vec<String> {
    vec![
        program.into(),
        format!("--defaults-file={config}"),
        "-N".into(),
        "-B".into(),
        "-e".into(),
        sql.into(),
    ]
}

/// The benchmark user of the MySQL family, without a password: at '%' for TCP clients
/// (with `REQUIRE SSL` when `require_tls`) and at 'localhost' for socket clients (it also
/// wins over an anonymous ''@'localhost', should the datadir have one).
pub(super) fn create_user_sql(user: &str, require_tls: bool) -> String {
    let u = user.replace(['\'', '\\'], "");
    let require = if require_tls { " REQUIRE SSL" } else { "" };
    format!(
        "CREATE USER IF NOT EXISTS '{u}'@'%'{require}; GRANT ALL PRIVILEGES ON *.* TO '{u}'@'%'; \
         CREATE USER IF NOT EXISTS '{u}'@'localhost'; GRANT ALL PRIVILEGES ON *.* TO '{u}'@'localhost'"
    )
}

pub(super) fn my_cnf(
    section: &str,
    defaults: &str,
    options: &[(String, String)],
    layout: &ServerLayout,
    check: impl Fn(&str, &str) -> Result<(), String>,
) -> Result<String, String> {
    let mut s = String::from("# generated by cairn\n[client]\n");
    s.push_str(&format!(
        "socket = {}\nuser = root\n\n[{section}]\n{defaults}",
        layout.socket
    ));
    for (k, v) in options {
        check(k, v).map_err(|e| format!("server option `{k}`: {e}"))?;
        s.push_str(&cnf_line(k, v));
        s.push('\n');
    }
    s.push_str(&format!(
        "# cairn's fixed settings\ndatadir = {}\nsocket = {}\n",
        layout.datadir, layout.socket
    ));
    if let Some(log) = &layout.log_file {
        s.push_str(&format!("log-error = {log}\n"));
    }
    s.push_str(&format!("pid-file = {}\n", layout.pid_file));
    // a tmpdir the plan set is the plan's choice
    if let Some(tmp) = layout
        .tmpdir
        .as_ref()
        .filter(|_| !options.iter().any(|(k, _)| k.replace('-', "_") == "tmpdir"))
    {
        s.push_str(&format!("tmpdir = {tmp}\n"));
    }
    match &layout.listen {
        Some((bind, port)) => s.push_str(&format!("port = {port}\nbind-address = {bind}\n")),
        None => s.push_str("skip-networking\n"),
    }
    if let Some(user) = &layout.run_as {
        s.push_str(&format!("user = {user}\n"));
    }
    if let Some(tls) = &layout.tls {
        // unencrypted TCP clients are refused; socket clients are unaffected
        s.push_str(&format!(
            "\n# cairn: connect \"tls\"\n[{section}]\n\
             ssl_ca = {}\n\
             ssl_cert = {}\n\
             ssl_key = {}\n\
             require_secure_transport = ON\n",
            tls.ca, tls.cert, tls.key
        ));
    }
    Ok(s)
}

/// mariadbd as Debian's `mariadb-server` installs it.
pub(super) const FACTS: Facts = Facts {
    process_name: "mariadbd",
    default_port: 3306,
    service_user: "mysql",
    admin_user: "root",
    socket_name: "mysqld.sock",
    config_name: "my.cnf",
    flags: ("ON", "OFF"),
};

impl DbSystem for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// The option names mariadbd takes: its own `--verbose --help`.
    fn variables_script(&self) -> Option<String> {
        // no option files: the image's own my.cnf must not decide what the list holds
        Some("exec mariadbd --no-defaults --verbose --help".to_string())
    }

    fn variables(&self, output: &str) -> super::variables::ServerVariables {
        super::variables::parse_my_cnf_help(output)
    }

    fn option_name(
        &self,
        names: &super::variables::ServerVariables,
        key: &str,
    ) -> super::variables::OptionName {
        names.my_cnf_option(key)
    }

    /// What my.cnf can hold (besides [`check_option_common`]): option names are letters,
    /// digits, `_`, `-` and `.` (named key caches: `hot_cache.key_buffer_size`), starting with
    /// a letter — the reader ends a name at the first `=` or space, `#` and `;` start
    /// comments, `!` directives; values of any printable text (quoted where the reader would
    /// change them, see [`cnf_value`]); and a line of at most [`MAX_OPTION_LINE`] bytes.
    fn check_option(&self, key: &str, value: &str) -> Result<(), String> {
        check_my_cnf_option(key, value, "MariaDB")
    }

    /// A `[client]` section for the tools beside the server (socket, user root), the options in
    /// `[mariadbd]`, then cairn's fixed settings, which therefore win; for TLS a last
    /// `[mariadbd]` section with the certificates and `require_secure_transport`.
    fn config_file(
        &self,
        options: &[(String, String)],
        layout: &ServerLayout,
    ) -> Result<String, String> {
        my_cnf("mariadbd", "", options, layout, |k, v| {
            self.check_option(k, v)
        })
    }

    fn container_start_script(
        &self,
        config: &str,
        layout: &ServerLayout,
        tls_dir: Option<&str>,
    ) -> String {
        let user = layout.run_as.as_deref().unwrap_or(self.service_user());
        let tls = match (tls_dir, &layout.tls) {
            (Some(dir), Some(files)) => format!(
                "chown -R {user}:{user} {dir}\nchmod 600 {key}\n",
                key = files.key
            ),
            _ => String::new(),
        };
        format!(
            "{tls}\
             mkdir -p {sock} {data}\n\
             chown {user}:{user} {sock}\n\
             chown -R {user}:{user} {data}\n\
             if [ ! -d {data}/mysql ]; then\n\
               echo 'cairn: initialising the datadir with mariadb-install-db'\n\
               if ! mariadb-install-db --defaults-file={config} --user={user} --skip-test-db >/tmp/cairn-install-db.log 2>&1; then\n\
                 sed '/^Installation of system tables failed/,$d' /tmp/cairn-install-db.log\n\
                 echo 'cairn: mariadb-install-db failed'\n\
                 exit 1\n\
               fi\n\
               cat /tmp/cairn-install-db.log\n\
             fi\n\
             echo 'cairn: starting mariadbd'\n\
             exec mariadbd --defaults-file={config}\n",
            sock = parent(&layout.socket),
            data = layout.datadir,
        )
    }

    fn host_programs(&self) -> &'static [&'static str] {
        &["mariadbd", "mariadb-install-db", "mariadb"]
    }

    fn host_install_hint(&self) -> &'static str {
        "Debian's mariadb-server-core (or mariadb-server)"
    }

    fn host_init_command(&self, config: &Path, as_root: bool) -> Result<Command, String> {
        let mut cmd = Command::new(host_program(&MariaDb, "mariadb-install-db")?);
        cmd.arg(format!("--defaults-file={}", config.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db");
        if as_root {
            cmd.arg("--user=root");
        }
        Ok(cmd)
    }

    fn host_server_command(&self, config: &Path) -> Result<Command, String> {
        let mut cmd = Command::new(host_program(&MariaDb, "mariadbd")?);
        cmd.arg(format!("--defaults-file={}", config.display()));
        Ok(cmd)
    }

    fn ping_argv(&self, config: &str) -> Vec<String> {
        vec![
            "mariadb-admin".into(),
            format!("--defaults-file={config}"),
            "ping".into(),
        ]
    }

    fn sql_argv(&self, config: &str, sql: &str) -> Vec<String> {
        client_sql_argv("mariadb", config, sql)
    }

    fn create_user_sql(&self, user: &str, require_tls: bool) -> String {
        create_user_sql(user, require_tls)
    }

    fn variant_query(&self) -> &'static str {
        "SELECT @@version, @@version_compile_machine, @@version_malloc_library"
    }

    /// MariaDB's versions carry its name (`10.11.11-MariaDB-0+deb12u1`).
    fn identify(&self, version: &str) -> Result<(), String> {
        if version.contains("MariaDB") {
            Ok(())
        } else {
            Err(format!(
                "the server is {} (version `{version}`), not MariaDB (whose versions say `-MariaDB`): the image holds another system than the plan's `system \"mariadb\"`",
                super::family_of(version)
            ))
        }
    }

    fn load_options(&self) -> Vec<(String, String)> {
        load_options()
    }

    fn read_greeting(&self, r: &mut dyn std::io::Read) -> Result<Greeting, String> {
        greeting::read_mysql_greeting(r)
    }
}

/// The MySQL family's load-only settings ([`DbSystem::load_options`]): a commit is not
/// flushed to the redo log on its own (`innodb_flush_log_at_trx_commit=0`; the clean shutdown
/// flushes everything), pages are written once, not twice (`innodb_doublewrite=0`: a torn
/// page needs a crash, and a crashed load is discarded), and no binary log is written
/// (`skip-log-bin`; MySQL 8 writes one by default). None of them leaves a trace in the
/// datadir a trial would start from: no file's size or format depends on them.
pub(crate) fn load_options() -> Vec<(String, String)> {
    [
        ("innodb_flush_log_at_trx_commit", "0"),
        ("innodb_doublewrite", "0"),
        ("skip-log-bin", ""),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::TlsFiles;

    fn container_layout() -> ServerLayout {
        ServerLayout {
            datadir: "/var/lib/cairn/data".into(),
            socket: "/run/cairn/mysqld.sock".into(),
            pid_file: "/run/cairn/mysqld.pid".into(),
            log_file: None,
            listen: Some(("0.0.0.0".into(), 3306)),
            run_as: Some("mysql".into()),
            tls: None,
            tmpdir: None,
        }
    }

    #[test]
    fn my_cnf_has_fixed_settings_last() {
        let c = MariaDb
            .config_file(
                &[
                    ("innodb_buffer_pool_size".into(), "256M".into()),
                    ("skip-log-bin".into(), String::new()),
                ],
                &container_layout(),
            )
            .unwrap();
        let pool = c.find("innodb_buffer_pool_size = 256M").unwrap();
        let flag = c.find("\nskip-log-bin\n").unwrap();
        let bind = c.find("bind-address = 0.0.0.0").unwrap();
        assert!(pool < bind && flag < bind);
        assert!(c.contains("[client]\nsocket = /run/cairn/mysqld.sock\nuser = root\n"));
        assert!(c.ends_with(
            "datadir = /var/lib/cairn/data\nsocket = /run/cairn/mysqld.sock\n\
             pid-file = /run/cairn/mysqld.pid\nport = 3306\nbind-address = 0.0.0.0\nuser = mysql\n"
        ));
        assert!(!c.contains("ssl") && !c.contains("log-error"));
    }

    #[test]
    fn a_host_server_gets_its_own_tmpdir_unless_the_plan_sets_one() {
        let mut l = container_layout();
        l.tmpdir = Some("/run/x/tmp".into());
        let c = MariaDb.config_file(&[], &l).unwrap();
        assert!(c.contains("\ntmpdir = /run/x/tmp\n"), "{c}");
        let c = MariaDb
            .config_file(&[("tmpdir".into(), "/scratch".into())], &l)
            .unwrap();
        assert!(
            c.contains("tmpdir = /scratch") && !c.contains("/run/x/tmp"),
            "{c}"
        );
    }

    #[test]
    fn host_layout_without_networking_and_tls_last() {
        let mut l = container_layout();
        l.listen = None;
        l.run_as = None;
        l.log_file = Some("/tmp/x/error.log".into());
        let c = MariaDb.config_file(&[], &l).unwrap();
        assert!(c.contains("log-error = /tmp/x/error.log\npid-file"));
        assert!(c.contains("skip-networking\n") && !c.contains("port ="));
        l.tls = Some(TlsFiles {
            ca: "/etc/cairn/tls/ca.pem".into(),
            cert: "/etc/cairn/tls/server-cert.pem".into(),
            key: "/etc/cairn/tls/server-key.pem".into(),
        });
        let c = MariaDb.config_file(&[], &l).unwrap();
        let fixed = c.find("skip-networking").unwrap();
        let tls = c.find("ssl_key = /etc/cairn/tls/server-key.pem").unwrap();
        assert!(fixed < tls && c.ends_with("require_secure_transport = ON\n"));
    }

    #[test]
    fn options_are_checked_by_what_my_cnf_does() {
        let ok = |k: &str, v: &str| MariaDb.check_option(k, v);
        ok("innodb_buffer_pool_size", "256M").unwrap();
        ok("skip-log-bin", "").unwrap();
        ok("hot_cache.key_buffer_size", "1M").unwrap();
        ok("init_connect", "SET @a = 'x # y'").unwrap();
        let refused = |k: &str, v: &str| MariaDb.check_option(k, v).unwrap_err();
        // what no format holds (the common check)
        assert!(refused("wait_timeout", "100\nmax_connections=7").contains("line feed"));
        assert!(refused("wait_timeout", "100\r").contains("carriage return"));
        assert!(refused("wait_timeout", "1\u{0}0").contains("NUL"));
        assert!(refused("", "1").contains("key is empty"));
        assert!(refused("[mysqld", "1").contains("section header"));
        assert!(refused("max_connections", "7]").contains("section header"));
        // what my.cnf reads otherwise than written
        for key in [
            "max_connections=7",
            "wait timeout",
            "#wait_timeout",
            ";x",
            "!include",
            "-x",
            "1x",
            "wäit",
        ] {
            assert!(
                refused(key, "1").contains("not a MariaDB option name"),
                "{key:?}"
            );
        }
        let long = "x".repeat(MAX_OPTION_LINE);
        assert!(refused("init_connect", &long).contains("at most 4000 bytes"));
    }

    /// The reader of mysys `my_default.c` for one `key = value` line, as far as values go:
    /// end comment (outside quotes), strip white space, strip matching quotes, unescape.
    fn read_back(line: &str) -> String {
        let (mut quote, mut escape, mut end) = (None, false, line.len());
        for (i, c) in line.char_indices() {
            if matches!(c, '\'' | '"') && !escape {
                match quote {
                    None => quote = Some(c),
                    Some(q) if q == c => quote = None,
                    _ => {}
                }
            }
            if quote.is_none() && c == '#' {
                end = i;
                break;
            }
            escape = quote.is_some() && c == '\\' && !escape;
        }
        let (_, value) = line[..end].split_once('=').expect("a value");
        let mut v = value.trim_matches(' ');
        if v.len() > 1 && (v.starts_with('"') || v.starts_with('\'')) && v.ends_with(&v[..1]) {
            v = &v[1..v.len() - 1];
        }
        let mut out = String::new();
        let mut chars = v.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().copied()) {
                ('\\', Some(n)) => {
                    chars.next();
                    match n {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        's' => out.push(' '),
                        '\\' | '"' | '\'' => out.push(n),
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                _ => out.push(c),
            }
        }
        out
    }

    #[test]
    fn values_the_reader_would_change_are_quoted_so_they_read_back_exactly() {
        for value in [
            "256M",
            "SET @a = 'x # y'",
            "  padded  ",
            "'quoted'",
            "\"dq\"",
            "back\\slash\\",
            "C:\\new\\table",
            "\\n stays two characters",
            "a\"#b",
            "'",
            "à",
            "mixed 'single' and \"double\" # and \\s",
        ] {
            let line = cnf_line("init_connect", value);
            assert_eq!(read_back(&line), value, "written as {line}");
        }
        assert_eq!(cnf_line("max_connections", "512"), "max_connections = 512");
        assert_eq!(cnf_line("x", "a#b"), "x = \"a#b\"");
    }

    #[test]
    fn config_file_refuses_a_bad_option_and_writes_nothing() {
        for (k, v) in [
            ("wait_timeout", "100\nmax_connections=7"),
            ("", "1"),
            ("[client]", "1"),
            ("x", "\u{0}"),
        ] {
            let e = MariaDb
                .config_file(
                    &[
                        ("max_connections".into(), "10".into()),
                        (k.into(), v.into()),
                    ],
                    &container_layout(),
                )
                .unwrap_err();
            assert!(e.starts_with(&format!("server option `{k}`:")), "{e}");
        }
    }

    #[test]
    fn start_script_initialises_then_execs() {
        let s = MariaDb.container_start_script("/etc/cairn/my.cnf", &container_layout(), None);
        assert!(s.contains("mkdir -p /run/cairn /var/lib/cairn/data\n"));
        assert!(s.contains("mariadb-install-db --defaults-file=/etc/cairn/my.cnf --user=mysql"));
        assert!(s.ends_with("exec mariadbd --defaults-file=/etc/cairn/my.cnf\n"));
        assert!(!s.contains("chmod 600"));
    }

    #[test]
    fn flags_users_and_queries() {
        assert_eq!(
            (MariaDb.flag_text(true), MariaDb.flag_text(false)),
            ("ON", "OFF")
        );
        let u = MariaDb.create_user_sql("ca'irn", true);
        assert!(
            u.starts_with("CREATE USER IF NOT EXISTS 'cairn'@'%' REQUIRE SSL;"),
            "{u}"
        );
        assert!(!MariaDb.create_user_sql("cairn", false).contains("REQUIRE"));
        assert_eq!(
            MariaDb.sql_argv("/c", "SELECT 1"),
            [
                "mariadb",
                "--defaults-file=/c",
                "-N",
                "-B",
                "-e",
                "SELECT 1"
            ]
        );
        assert_eq!(parent("/run/cairn/mysqld.sock"), "/run/cairn");
    }
}
