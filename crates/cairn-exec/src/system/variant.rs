//! A database system declared as a variant of another: a fork or a distribution's build that
//! runs, configures and speaks like the system it is like, and differs in its name and in how
//! a running server shows which one it is. A variant is a value, not an implementation:
//!
//! ```
//! use cairn_exec::system::{mysql::MySql, variant::Variant};
//! static PERCONA: Variant = Variant {
//!     name: "percona",
//!     like: &MySql,
//!     identify: |version| {
//!         if version.contains("Percona") || version.ends_with("-percona") {
//!             Ok(())
//!         } else {
//!             Err(format!("the server (version `{version}`) is not Percona Server"))
//!         }
//!     },
//! };
//! ```
//! and one line in [`super::SYSTEMS`]. A system that differs in more (its configuration
//! format, how it starts) implements [`DbSystem`] itself.

use std::path::Path;
use std::process::Command;

use super::{greeting, DbSystem, Facts, Greeting, ServerLayout};

/// A system that is `like` another under the name `name`, told apart by `identify`.
pub struct Variant {
    /// The name plans use (`system "…"`).
    pub name: &'static str,
    /// The system it runs, configures and speaks like.
    pub like: &'static dyn DbSystem,
    /// Whether a running server's version (the answer to the variant query of `like`) is
    /// this variant's; the error says what it is instead.
    pub identify: fn(&str) -> Result<(), String>,
}

impl DbSystem for Variant {
    fn name(&self) -> &'static str {
        self.name
    }
    fn identify(&self, version: &str) -> Result<(), String> {
        (self.identify)(version)
    }
    fn facts(&self) -> &'static Facts {
        self.like.facts()
    }
    fn check_option(&self, key: &str, value: &str) -> Result<(), String> {
        self.like.check_option(key, value)
    }
    fn config_file(
        &self,
        options: &[(String, String)],
        layout: &ServerLayout,
    ) -> Result<String, String> {
        self.like.config_file(options, layout)
    }
    fn container_start_script(
        &self,
        config: &str,
        layout: &ServerLayout,
        tls_dir: Option<&str>,
    ) -> String {
        self.like.container_start_script(config, layout, tls_dir)
    }
    fn host_programs(&self) -> &'static [&'static str] {
        self.like.host_programs()
    }
    fn host_install_hint(&self) -> &'static str {
        self.like.host_install_hint()
    }
    fn check_host_program(&self, name: &str, path: &Path) -> Result<(), String> {
        self.like.check_host_program(name, path)
    }
    fn host_init_command(&self, config: &Path, as_root: bool) -> Result<Command, String> {
        self.like.host_init_command(config, as_root)
    }
    fn host_server_command(&self, config: &Path) -> Result<Command, String> {
        self.like.host_server_command(config)
    }
    fn ping_argv(&self, config: &str) -> Vec<String> {
        self.like.ping_argv(config)
    }
    fn sql_argv(&self, config: &str, sql: &str) -> Vec<String> {
        self.like.sql_argv(config, sql)
    }
    fn create_user_sql(&self, user: &str, require_tls: bool) -> String {
        self.like.create_user_sql(user, require_tls)
    }
    fn load_options(&self) -> Vec<(String, String)> {
        self.like.load_options()
    }
    fn variant_query(&self) -> &'static str {
        self.like.variant_query()
    }
    fn read_greeting(&self, r: &mut dyn std::io::Read) -> Result<Greeting, String> {
        self.like.read_greeting(r)
    }
    fn greet(&self, s: &mut dyn greeting::Stream) -> Result<Greeting, String> {
        self.like.greet(s)
    }
    fn client_protocol(&self) -> &'static str {
        self.like.client_protocol()
    }
    fn runs_on_host(&self) -> bool {
        self.like.runs_on_host()
    }
    fn stop_signal(&self) -> &'static str {
        self.like.stop_signal()
    }
    fn variables_script(&self) -> Option<String> {
        self.like.variables_script()
    }
    fn variables(&self, output: &str) -> super::variables::ServerVariables {
        self.like.variables(output)
    }
    fn option_name(
        &self,
        names: &super::variables::ServerVariables,
        key: &str,
    ) -> super::variables::OptionName {
        self.like.option_name(names, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::mysql::MySql;

    static FORK: Variant = Variant {
        name: "fork",
        like: &MySql,
        identify: |v| {
            if v.contains("-fork") {
                Ok(())
            } else {
                Err(format!("`{v}` is no fork"))
            }
        },
    };

    #[test]
    fn a_variant_is_its_base_under_its_own_name_and_identity() {
        assert_eq!(FORK.name(), "fork");
        assert_eq!(FORK.facts(), MySql.facts());
        assert_eq!(FORK.process_name(), "mysqld");
        // its options are checked against its base's list of them
        assert_eq!(FORK.variables_script(), MySql.variables_script());
        let names = FORK.variables("  --max-connections=#  The number of ...\n");
        assert_eq!(
            FORK.option_name(&names, "max_connections"),
            crate::system::variables::OptionName::Known
        );
        assert_eq!(FORK.variant_query(), MySql.variant_query());
        assert_eq!(FORK.client_protocol(), "mysql");
        FORK.identify("8.4.3-fork").unwrap();
        assert!(FORK.identify("8.4.3").is_err());
        // the base still tells MariaDB from itself
        assert!(MySql.identify("10.11.11-MariaDB").is_err());
    }
}
