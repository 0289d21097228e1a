//! The names a plan uses that other crates own: the database systems and server runtimes
//! cairn-exec registers, and the step kinds a `step "…" kind="…"` may name. The plan language cannot depend on the crate that runs servers, so
//! the parser takes any name there and [`check_vocabulary`] — which every command that
//! loads a plan runs with the registries' names — refuses an unknown one at its span.

use crate::diagnostics::{did_you_mean, one_of, problem_at, PlanError, Problem};
use crate::model::{Plan, Sp};

/// The names the registries hold, as the caller reads them from there.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary<'a> {
    /// Database systems (`system "…"` of a server).
    pub systems: &'a [&'a str],
    /// Server runtimes (`executor "…"` of a server).
    pub runtimes: &'a [&'a str],
    /// Step kinds registered for plans' own steps (`step "…" kind="…"`).
    pub kinds: &'a [&'a str],
}

/// Every server's `system` and `executor` against `names`; all unknown ones at once.
pub fn check_vocabulary(plan: &Plan, names: &Vocabulary<'_>) -> Result<(), PlanError> {
    let mut problems = Vec::new();
    for server in &plan.servers {
        let named = [
            ("system", server.system.as_ref(), names.systems),
            ("executor", server.executor.as_ref(), names.runtimes),
        ];
        for (what, value, allowed) in named {
            if let Some(v) = value.filter(|v| !allowed.contains(&v.value.as_str())) {
                problems.push(unknown(plan, what, v, allowed));
            }
        }
    }
    for step in &plan.steps {
        if let Some(k) = step
            .kind
            .as_ref()
            .filter(|k| !names.kinds.contains(&k.value.as_str()))
        {
            problems.push(unknown(plan, "step kind", k, names.kinds));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PlanError::Invalid { problems })
    }
}

/// The help line that lists a registry's names, as an unknown name's diagnostic writes it.
pub fn allowed_values(names: &[&str]) -> String {
    if names.is_empty() {
        return "none is registered".to_string();
    }
    format!("allowed values: {}", one_of(names))
}

fn unknown(plan: &Plan, what: &str, value: &Sp<String>, allowed: &[&str]) -> Problem {
    let mut help = did_you_mean(&value.value, allowed.iter().copied())
        .map(|d| format!("{d}\n"))
        .unwrap_or_default();
    help.push_str(&allowed_values(allowed));
    problem_at(
        plan,
        value.loc,
        "bad_value",
        format!("invalid {what} `{}`", value.value),
        format!("not a known {what}"),
        Some(help),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: Vocabulary<'static> = Vocabulary {
        systems: &["mariadb", "mysql"],
        runtimes: &["docker", "process"],
        kinds: &["note"],
    };

    fn plan(server: &str) -> Plan {
        let text = format!(
            "image \"i\" {{ debian suite=\"bookworm\"; packages \"mariadb-server\" }}\nserver \"s\" {{ image \"i\"; {server} }}\n"
        );
        crate::parse_str("p.kdl", &text).expect("parses")
    }

    #[test]
    fn known_names_pass_and_unknown_ones_are_refused_at_their_span() {
        check_vocabulary(&plan("system \"mysql\"; executor \"process\""), &NAMES).unwrap();
        let p = plan("system \"mysqll\"; executor \"kubernetes\"");
        let PlanError::Invalid { problems } = check_vocabulary(&p, &NAMES).unwrap_err() else {
            panic!("not a plan problem")
        };
        assert_eq!(problems.len(), 2);
        assert_eq!(problems[0].message(), "invalid system `mysqll`");
        let help = problems[0].help_text().unwrap();
        assert!(help.contains("did you mean `mysql`?"), "{help}");
        assert!(help.contains("`mariadb` or `mysql`"), "{help}");
        assert_eq!(problems[1].message(), "invalid executor `kubernetes`");
        let at = problems[0].loc().unwrap();
        let k = crate::parse_str("k.kdl", "step \"n\" kind=\"nots\" text=\"x\"\n").unwrap();
        let PlanError::Invalid { problems: kinds } = check_vocabulary(&k, &NAMES).unwrap_err()
        else {
            panic!("not a plan problem")
        };
        assert_eq!(kinds[0].message(), "invalid step kind `nots`");
        assert!(kinds[0]
            .help_text()
            .unwrap()
            .contains("did you mean `note`?"));
        assert_eq!(&p.sources[0].text[at.span.offset()..][..8], "\"mysqll\"");
    }
}
