//! MySQL (8.0 and later, e.g. Debian sid's 9.x): its `my.cnf`, `mysqld --initialize-insecure`
//! and `mysqld`, `mysqladmin ping`, the password-less client user and the variant query.
//!
//! What differs from MariaDB: the datadir is initialised by the server binary itself
//! (`--initialize-insecure`: root@localhost without a password), the option section is
//! `[mysqld]`, the client tools are `mysql`/`mysqladmin`, and there is no
//! `@@version_malloc_library` — the variant query leaves that column empty and the variant
//! checks name the allocator found mapped into the process instead. Accounts use MySQL's
//! default plugin, `caching_sha2_password` (MySQL 9 has no `mysql_native_password`): with
//! an empty password it needs neither TLS nor an RSA key exchange, so the native driver, the
//! `mysql` client and sysbench's libmariadb all log in over TCP, TLS and the socket.

use std::path::Path;
use std::process::Command;

use super::mariadb::{self, check_my_cnf_option, my_cnf, parent};
use super::{greeting, host_program, DbSystem, Facts, Greeting, ServerLayout};

/// The directory Debian's `mysqld` is built to read and write files in
/// (`secure_file_priv`); the server refuses to start when it is missing.
const SECURE_FILE_DIR: &str = "/var/lib/mysql-files";

/// The MySQL server (`mysqld`) and its client tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct MySql;

/// mysqld as Debian's `mysql-server` installs it: MariaDB's, but for the process name.
const FACTS: Facts = Facts {
    process_name: "mysqld",
    ..mariadb::FACTS
};

impl DbSystem for MySql {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// MySQL reads my.cnf with the same mysys code as MariaDB: the same rules.
    fn variables_script(&self) -> Option<String> {
        // no option files: the image's own my.cnf must not decide what the list holds
        Some("exec mysqld --no-defaults --verbose --help".to_string())
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

    fn check_option(&self, key: &str, value: &str) -> Result<(), String> {
        check_my_cnf_option(key, value, "MySQL")
    }

    /// `[client]` for the tools beside the server, cairn's defaults (the X Protocol plugin
    /// off: it would listen on a second port and a socket in a directory the image lacks),
    /// the plan's options in `[mysqld]` (so a plan can turn `mysqlx` back on), then cairn's
    /// fixed settings, which win; for TLS a last section with the certificates and
    /// `require_secure_transport`.
    fn config_file(
        &self,
        options: &[(String, String)],
        layout: &ServerLayout,
    ) -> Result<String, String> {
        my_cnf(
            "mysqld",
            "# cairn's defaults\nmysqlx = OFF\n",
            options,
            layout,
            |k, v| self.check_option(k, v),
        )
    }

    /// The service user and the `secure_file_priv` directory are made if the image lacks
    /// them (Debian's `mysql-server-core` makes neither; `mysql-server`'s scripts do).
    /// `mysqld --initialize` needs an empty (or
    /// missing) datadir; a datadir restored from a snapshot has the data dictionary
    /// (`mysql.ibd`) and is started as it is.
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
            "id -u {user} >/dev/null 2>&1 || useradd --system --user-group --no-create-home {user}\n\
             {tls}\
             mkdir -p {sock} {data} {files}\n\
             chown {user}:{user} {sock} {files}\n\
             chmod 700 {files}\n\
             chown -R {user}:{user} {data}\n\
             if [ ! -e {data}/mysql.ibd ]; then\n\
               echo 'cairn: initialising the datadir with mysqld --initialize-insecure'\n\
               if ! mysqld --defaults-file={config} --initialize-insecure --user={user} >/tmp/cairn-initialize.log 2>&1; then\n\
                 cat /tmp/cairn-initialize.log\n\
                 echo 'cairn: mysqld --initialize-insecure failed'\n\
                 exit 1\n\
               fi\n\
               cat /tmp/cairn-initialize.log\n\
             fi\n\
             echo 'cairn: starting mysqld'\n\
             exec mysqld --defaults-file={config}\n",
            sock = parent(&layout.socket),
            data = layout.datadir,
            files = SECURE_FILE_DIR,
        )
    }

    fn host_programs(&self) -> &'static [&'static str] {
        &["mysqld", "mysql"]
    }

    fn host_install_hint(&self) -> &'static str {
        "Debian's mysql-server-core and mysql-client-core (sid only; they conflict with mariadb-server-core)"
    }

    /// `mysqld` must be MySQL's: Debian's `mariadb-server-core` links `/usr/sbin/mysqld` to
    /// `mariadbd`, which would fail at `--initialize-insecure` with MariaDB's complaint.
    /// Asked by `cairn check` (through the engine's server check) and before a start.
    fn check_host_program(&self, name: &str, path: &Path) -> Result<(), String> {
        if name != "mysqld" {
            return Ok(());
        }
        let out = Command::new(path)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `{} --version`: {e}", path.display()))?;
        let version = String::from_utf8_lossy(&out.stdout);
        let version = version.lines().next().unwrap_or("").trim();
        mysqld_is_mysql(path, version)
    }

    fn host_init_command(&self, config: &Path, as_root: bool) -> Result<Command, String> {
        let mut cmd = Command::new(host_program(&MySql, "mysqld")?);
        cmd.arg(format!("--defaults-file={}", config.display()))
            .arg("--initialize-insecure");
        if as_root {
            cmd.arg("--user=root");
        }
        Ok(cmd)
    }

    fn host_server_command(&self, config: &Path) -> Result<Command, String> {
        let mut cmd = Command::new(host_program(&MySql, "mysqld")?);
        cmd.arg(format!("--defaults-file={}", config.display()));
        Ok(cmd)
    }

    fn ping_argv(&self, config: &str) -> Vec<String> {
        vec![
            "mysqladmin".into(),
            format!("--defaults-file={config}"),
            "ping".into(),
        ]
    }

    fn sql_argv(&self, config: &str, sql: &str) -> Vec<String> {
        mariadb::client_sql_argv("mysql", config, sql)
    }

    /// Both accounts with MySQL's default plugin (`caching_sha2_password`) and no password.
    fn create_user_sql(&self, user: &str, require_tls: bool) -> String {
        mariadb::create_user_sql(user, require_tls)
    }

    /// No `@@version_malloc_library` in MySQL: the third column is empty (see
    /// [`DbSystem::variant_query`]).
    fn variant_query(&self) -> &'static str {
        "SELECT @@version, @@version_compile_machine, ''"
    }

    /// MySQL's versions are bare (`8.4.3`, `9.1.0-1`); MariaDB, which speaks the same
    /// protocol, says its name in its version.
    fn identify(&self, version: &str) -> Result<(), String> {
        if version.to_ascii_lowercase().contains("mariadb") {
            Err(format!(
                "the server is MariaDB (version `{version}`), not MySQL: the image holds another system than the plan's `system \"mysql\"`"
            ))
        } else {
            Ok(())
        }
    }

    fn load_options(&self) -> Vec<(String, String)> {
        super::mariadb::load_options()
    }

    fn read_greeting(&self, r: &mut dyn std::io::Read) -> Result<Greeting, String> {
        greeting::read_mysql_greeting(r)
    }
}

/// Whether the `mysqld` at `path`, which says `version` to `--version`, is MySQL's.
fn mysqld_is_mysql(path: &Path, version: &str) -> Result<(), String> {
    if !version.to_ascii_lowercase().contains("mariadb") {
        return Ok(());
    }
    let target = std::fs::canonicalize(path)
        .ok()
        .filter(|t| t != path)
        .map(|t| format!(" (a link to {})", t.display()))
        .unwrap_or_default();
    Err(format!(
        "`{}`{target} is MariaDB's server (`{version}`), not MySQL's: the process executor \
         runs `system \"mysql\"` with a host MySQL, and Debian's MySQL packages (sid's \
         mysql-server-core) conflict with the mariadb-server-core installed here; run MySQL \
         with the Docker executor (`images/mysql.kdl`), or on a host with MySQL's mysqld",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::TlsFiles;

    fn container_layout() -> ServerLayout {
        ServerLayout {
            datadir: "/var/lib/cairn/data".into(),
            socket: "/run/cairn/mysqld.sock".into(),
            pid_file: "/run/cairn/server.pid".into(),
            log_file: None,
            listen: Some(("0.0.0.0".into(), 3306)),
            run_as: Some("mysql".into()),
            tls: None,
            tmpdir: None,
        }
    }

    #[test]
    fn my_cnf_has_defaults_first_and_fixed_settings_last() {
        let c = MySql
            .config_file(
                &[
                    ("innodb_buffer_pool_size".into(), "256M".into()),
                    ("mysqlx".into(), "ON".into()),
                ],
                &container_layout(),
            )
            .unwrap();
        let default = c.find("mysqlx = OFF").unwrap();
        let plan = c.find("mysqlx = ON").unwrap();
        let bind = c.find("bind-address = 0.0.0.0").unwrap();
        assert!(default < plan && plan < bind, "{c}");
        assert!(c.contains("[client]\nsocket = /run/cairn/mysqld.sock\nuser = root\n\n[mysqld]\n"));
        assert!(c.ends_with("port = 3306\nbind-address = 0.0.0.0\nuser = mysql\n"));
        let mut l = container_layout();
        l.listen = None;
        l.tls = Some(TlsFiles {
            ca: "/etc/cairn/tls/ca.pem".into(),
            cert: "/etc/cairn/tls/server-cert.pem".into(),
            key: "/etc/cairn/tls/server-key.pem".into(),
        });
        let c = MySql.config_file(&[], &l).unwrap();
        assert!(c.contains("skip-networking\n"));
        assert!(c.ends_with("require_secure_transport = ON\n"));
    }

    #[test]
    fn options_follow_my_cnf_rules_and_name_mysql() {
        MySql.check_option("innodb_buffer_pool_size", "1G").unwrap();
        let e = MySql.check_option("bad name", "1").unwrap_err();
        assert!(e.contains("not a MySQL option name"), "{e}");
        let e = MySql
            .config_file(&[("x\ny".into(), "1".into())], &container_layout())
            .unwrap_err();
        assert!(e.starts_with("server option `x\ny`:"), "{e}");
    }

    #[test]
    fn start_script_initialises_an_empty_datadir_only() {
        let s = MySql.container_start_script("/etc/cairn/my.cnf", &container_layout(), None);
        assert!(s.starts_with("id -u mysql >/dev/null 2>&1 || useradd --system"));
        assert!(s.contains("if [ ! -e /var/lib/cairn/data/mysql.ibd ]; then"));
        assert!(s.contains(
            "mysqld --defaults-file=/etc/cairn/my.cnf --initialize-insecure --user=mysql"
        ));
        assert!(s.ends_with("exec mysqld --defaults-file=/etc/cairn/my.cnf\n"));
    }

    #[test]
    fn a_mariadb_mysqld_is_not_mysql() {
        let p = Path::new("/nonexistent/sbin/mysqld");
        mysqld_is_mysql(
            p,
            "/usr/sbin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Server)",
        )
        .unwrap();
        let e = mysqld_is_mysql(
            p,
            "/usr/sbin/mysqld  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64",
        )
        .unwrap_err();
        assert!(
            e.starts_with("`/nonexistent/sbin/mysqld` is MariaDB's server (`/usr/sbin/mysqld  Ver 10.11.19-MariaDB"),
            "{e}"
        );
        assert!(e.contains("Docker executor"), "{e}");
        assert!(MySql.check_host_program("mysql", p).is_ok());
    }

    #[test]
    fn tools_users_and_variant_query() {
        assert_eq!(
            MySql.ping_argv("/c"),
            ["mysqladmin", "--defaults-file=/c", "ping"]
        );
        assert_eq!(MySql.sql_argv("/c", "SELECT 1")[0], "mysql");
        let u = MySql.create_user_sql("cairn", true);
        assert!(u.starts_with("CREATE USER IF NOT EXISTS 'cairn'@'%' REQUIRE SSL;"));
        assert!(!MySql.variant_query().contains("malloc"));
        assert_eq!(MySql.process_name(), "mysqld");
    }
}
