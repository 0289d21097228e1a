//! Which option names a server program takes: the list a system's own program prints (read
//! once per image, see [`crate::system::DbSystem::variables_script`]), and whether a plan's
//! option, as its configuration file spells it, names one of them.
//!
//! A typo (`innodb_bufer_pool_size`) would otherwise be found only when the server refuses to
//! start, after the image build; with the list it is refused before anything starts.

use std::collections::BTreeSet;

/// The variable and option names one server program takes, normalised (lower case, `_` for
/// `-`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerVariables {
    names: BTreeSet<String>,
}

/// What a list says of one option name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionName {
    /// The program takes it.
    Known,
    /// The program would take it whatever the list says (`loose-…` in my.cnf, a module's
    /// `ext.param` in PostgreSQL): not checked.
    Unchecked,
    /// The program does not take it; the closest name it takes, if one is close.
    Unknown { closest: Option<String> },
}

impl ServerVariables {
    /// A list from names in any spelling.
    pub fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) -> Self {
        ServerVariables {
            names: names
                .into_iter()
                .map(|n| normalise(n.as_ref()))
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the (normalised) `name` is on the list.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(&normalise(name))
    }

    /// The names, one a line (what the store keeps).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for n in &self.names {
            s.push_str(n);
            s.push('\n');
        }
        s
    }

    /// A list kept by [`ServerVariables::to_text`].
    pub fn from_text(text: &str) -> Self {
        ServerVariables::new(text.lines().map(str::trim))
    }

    /// The closest name on the list to `name`, in `name`'s spelling (`-` if it used `-`), if
    /// it is a few edits away (a third of its length at most).
    pub fn closest(&self, name: &str) -> Option<String> {
        let want = normalise(name);
        let limit = (want.chars().count() / 3).max(1);
        let best = self
            .names
            .iter()
            .map(|n| (distance(&want, n), n))
            .filter(|(d, _)| *d <= limit)
            .min_by_key(|(d, _)| *d)?
            .1;
        Some(if name.contains('-') && !name.contains('_') {
            best.replace('_', "-")
        } else {
            best.clone()
        })
    }

    fn unknown(&self, name: &str) -> OptionName {
        OptionName::Unknown {
            closest: self.closest(name),
        }
    }

    /// A my.cnf option (MariaDB, MySQL) against the list: `-` and `_` are one; `loose-`
    /// (the server ignores the option where it does not know it, as for a plugin not
    /// loaded) is not checked; `skip-`, `enable-`, `disable-` (a boolean's forms) and
    /// `maximum-` (the most a session may set) name the option after them.
    pub fn my_cnf_option(&self, key: &str) -> OptionName {
        let k = normalise(key);
        if k.starts_with("loose_") {
            return OptionName::Unchecked;
        }
        if self.names.contains(&k) {
            return OptionName::Known;
        }
        let prefixed = ["skip_", "enable_", "disable_", "maximum_"]
            .iter()
            .filter_map(|p| k.strip_prefix(p))
            .any(|rest| self.names.contains(rest));
        if prefixed {
            OptionName::Known
        } else {
            self.unknown(key)
        }
    }

    /// A postgresql.conf parameter against the list: names are case-insensitive; a name with
    /// a `.` is a module's (an extension may define it when it loads) and is not checked.
    pub fn postgresql_parameter(&self, key: &str) -> OptionName {
        if key.contains('.') {
            return OptionName::Unchecked;
        }
        if self.names.contains(&normalise(key)) {
            OptionName::Known
        } else {
            self.unknown(key)
        }
    }
}

/// Lower case, `_` for `-`.
fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// The option and variable names in `mariadbd --verbose --help` (or `mysqld`'s): each
/// `--name` that starts a line of the options list (`  --name[=…]`, `  -a, --name`), and the
/// first word of each line of the variables table (after its line of dashes).
pub fn parse_my_cnf_help(help: &str) -> ServerVariables {
    let mut names = Vec::new();
    let mut in_table = false;
    for line in help.lines() {
        if in_table {
            match line.split_whitespace().next() {
                Some(n) => names.push(n.to_string()),
                None => in_table = false,
            }
            continue;
        }
        if line.starts_with("-----") {
            in_table = true;
            continue;
        }
        let t = line.trim_start();
        let option = match t.strip_prefix("--") {
            Some(rest) => Some(rest),
            // `-a, --ansi`
            None => t
                .strip_prefix('-')
                .and_then(|r| r.get(1..))
                .and_then(|r| r.strip_prefix(", --")),
        };
        if let Some(rest) = option {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    ServerVariables::new(names)
}

/// The parameter names in `postgres --describe-config` (tab-separated, the name first).
pub fn parse_postgresql_describe_config(out: &str) -> ServerVariables {
    ServerVariables::new(
        out.lines()
            .filter_map(|l| l.split('\t').next())
            .filter(|n| !n.is_empty() && !n.contains(' ')),
    )
}

/// Levenshtein distance, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "\
mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)
Starts the MariaDB database server.

Usage: mariadbd [OPTIONS]
  --allow-suspicious-udfs 
                      Allows use of user-defined functions (UDFs) consisting of
                      only one symbol xxx() without corresponding xxx_init()
  -a, --ansi          Use ANSI SQL syntax instead of MySQL syntax. This mode
                      will also set transaction isolation level 'serializable'.
  --plugin-load-add=name 
                      Optional semicolon-separated list of plugins to load.
  --innodb[=name]     Enable or disable InnoDB plugin. One of: ON, OFF, FORCE
  --skip-name-resolve Don't resolve hostnames. All hostnames are IP's or
                      'localhost'.

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                           Value (after reading options)
---------------------------------------------------------- ---------------
allow-suspicious-udfs                                      FALSE
innodb-buffer-pool-size                                    134217728
max-connections                                            151
name-resolve                                               TRUE

To see what values a running MariaDB server is using, type
'mariadb-admin variables' instead of 'mariadbd --verbose --help'.
";

    #[test]
    fn the_help_text_gives_options_and_variables() {
        let v = parse_my_cnf_help(HELP);
        for n in [
            "allow_suspicious_udfs",
            "ansi",
            "plugin_load_add",
            "innodb",
            "skip_name_resolve",
            "innodb_buffer_pool_size",
            "max_connections",
            "name_resolve",
        ] {
            assert!(v.contains(n), "{n} in {v:?}");
        }
        // words of the descriptions and of the text after the table are not names
        assert!(!v.contains("only"));
        assert!(!v.contains("to"));
        assert!(!v.contains("mariadbd"));
        assert_eq!(ServerVariables::from_text(&v.to_text()), v);
    }

    #[test]
    fn my_cnf_spellings_are_one_name_and_typos_are_refused_with_the_closest() {
        let v = parse_my_cnf_help(HELP);
        for ok in [
            "innodb_buffer_pool_size",
            "innodb-buffer-pool-size",
            "Max_Connections",
            "skip-name-resolve",
            "skip_allow_suspicious_udfs",
            "enable-ansi",
            "disable_innodb",
            "maximum-max_connections",
        ] {
            assert_eq!(v.my_cnf_option(ok), OptionName::Known, "{ok}");
        }
        assert_eq!(v.my_cnf_option("loose-rocksdb-foo"), OptionName::Unchecked);
        assert_eq!(
            v.my_cnf_option("innodb_bufer_pool_size"),
            OptionName::Unknown {
                closest: Some("innodb_buffer_pool_size".into())
            }
        );
        assert_eq!(
            v.my_cnf_option("max-conections"),
            OptionName::Unknown {
                closest: Some("max-connections".into())
            }
        );
        assert_eq!(
            v.my_cnf_option("no_such_option"),
            OptionName::Unknown { closest: None }
        );
    }

    #[test]
    fn postgresql_parameters_are_case_insensitive_and_modules_unchecked() {
        let v = parse_postgresql_describe_config(
            "shared_buffers\tpostmaster\tResource Usage / Memory\tINTEGER\t1024\t16\t1073741823\tSets the number of shared memory buffers used by the server.\t\nwork_mem\tuser\tResource Usage / Memory\tINTEGER\t4096\t64\t2147483647\tSets the maximum memory.\t\n",
        );
        assert_eq!(v.len(), 2);
        assert_eq!(v.postgresql_parameter("Shared_Buffers"), OptionName::Known);
        assert_eq!(
            v.postgresql_parameter("auto_explain.log_min_duration"),
            OptionName::Unchecked
        );
        assert_eq!(
            v.postgresql_parameter("shared_bufers"),
            OptionName::Unknown {
                closest: Some("shared_buffers".into())
            }
        );
    }
}
