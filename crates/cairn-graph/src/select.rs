//! Step selectors for `--only` / `--fresh` / `explain`: a step name, a full address,
//! `kind:<kind>`, or a wildcard pattern (`*`, `?`) over addresses.

use wildmatch::WildMatch;

use crate::step::{Step, StepKind};

#[derive(Debug, Clone)]
pub enum Selector {
    /// Matches a step whose name or address is exactly this.
    Exact(String),
    /// Matches every step of the kind of this name.
    Kind(String),
    Pattern(WildMatch),
}

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, String> {
        if let Some(k) = s.strip_prefix("kind:") {
            // any kind's name: a kind no step has matches nothing, which the CLI refuses
            let k = if k == "step" {
                StepKind::COMMAND.as_str()
            } else {
                k
            };
            if k.is_empty() {
                return Err(format!("selector `{s}` names no step kind"));
            }
            return Ok(Selector::Kind(k.to_string()));
        }
        if s.contains('*') || s.contains('?') {
            return Ok(Selector::Pattern(WildMatch::new(s)));
        }
        Ok(Selector::Exact(s.to_string()))
    }

    pub fn matches(&self, step: &Step) -> bool {
        match self {
            Selector::Exact(s) => step.name == *s || step.address == *s,
            Selector::Kind(k) => step.kind.as_str() == k,
            Selector::Pattern(p) => p.matches(&step.address) || p.matches(&step.name),
        }
    }
}

/// True if any selector matches.
pub fn any_matches(selectors: &[Selector], step: &Step) -> bool {
    selectors.iter().any(|s| s.matches(step))
}
