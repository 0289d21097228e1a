//! Structured step failures: whether a failure is worth another try (transient), is final
//! (permanent) or is the user's stop (cancelled), with the chain of causes that led to it.
//!
//! The class decides what the scheduler does: a transient failure (the container engine
//! hiccuped, a node was lost) may be retried a bounded number of times
//! ([`crate::RetryPolicy`]); a permanent one fails the step; a cancellation stops the run.

use std::fmt;

/// How the scheduler treats a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// May succeed if tried again unchanged (an engine or network hiccup, a lost node).
    Transient,
    /// Will fail again the same way: bad input, a server that does not start, a failing command.
    Permanent,
    /// The run was cancelled (Ctrl-C) while the step ran: not a failure of the step.
    Cancelled,
}

impl FailureClass {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::Permanent => "permanent",
            FailureClass::Cancelled => "cancelled",
        }
    }
}

/// Why a step did not finish: its class and its causes, outermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    pub class: FailureClass,
    /// What went wrong, outermost first: `["loading dataset/x@y", "connection refused"]`.
    /// Never empty.
    pub chain: Vec<String>,
}

impl StepError {
    /// A failure that will happen again if tried again.
    pub fn permanent(what: impl fmt::Display) -> StepError {
        StepError {
            class: FailureClass::Permanent,
            chain: vec![what.to_string()],
        }
    }

    /// A failure that may not happen again (the scheduler may retry it).
    pub fn transient(what: impl fmt::Display) -> StepError {
        StepError {
            class: FailureClass::Transient,
            chain: vec![what.to_string()],
        }
    }

    /// The run was cancelled while the step ran.
    pub fn cancelled() -> StepError {
        StepError {
            class: FailureClass::Cancelled,
            chain: vec!["the run was cancelled".into()],
        }
    }

    /// A failure from an error value, with its `source()` chain as the causes.
    pub fn from_error(class: FailureClass, e: &(dyn std::error::Error + 'static)) -> StepError {
        let mut chain = vec![e.to_string()];
        let mut next = e.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            // `#[error("{op}: {source}")]` already printed the cause: don't say it twice
            if !chain.last().is_some_and(|outer| outer.ends_with(&text)) {
                chain.push(text);
            }
            next = cause.source();
        }
        StepError { class, chain }
    }

    /// The same failure, described from one level further out.
    pub fn context(mut self, outer: impl fmt::Display) -> StepError {
        self.chain.insert(0, outer.to_string());
        self
    }

    pub fn is_cancelled(&self) -> bool {
        self.class == FailureClass::Cancelled
    }

    pub fn is_transient(&self) -> bool {
        self.class == FailureClass::Transient
    }

    /// The whole chain as one message: `outer: cause: root`.
    pub fn message(&self) -> String {
        self.chain.join(": ")
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for StepError {}

/// A permanent failure, with why (the short form step modules use with `map_err`).
pub fn failed(what: impl fmt::Display) -> StepError {
    StepError::permanent(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("reading the snapshot")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_chain_follows_sources_and_context() {
        let e = Outer(std::io::Error::other("disk on fire"));
        let s = StepError::from_error(FailureClass::Transient, &e).context("dataset/x@y");
        assert_eq!(
            s.chain,
            ["dataset/x@y", "reading the snapshot", "disk on fire"]
        );
        assert!(s.is_transient());
        assert_eq!(
            s.to_string(),
            "dataset/x@y: reading the snapshot: disk on fire"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug)]
        struct Said(std::io::Error);
        impl fmt::Display for Said {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "open x: {}", self.0)
            }
        }
        impl std::error::Error for Said {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let s = StepError::from_error(
            FailureClass::Permanent,
            &Said(std::io::Error::other("gone")),
        );
        assert_eq!(s.chain, ["open x: gone"]);
    }
}
