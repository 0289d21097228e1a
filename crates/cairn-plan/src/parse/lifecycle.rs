//! The lifecycle children of a `trials` block (`settle "60s"`, `runs 3`), checked at their
//! place.

use kdl::KdlNode;

use super::{node_name, FileParser};
use crate::diagnostics::problem;
use crate::lifecycle::{Lifecycle, MAX_RUNS, MAX_SETTLE};
use crate::model::Sp;

impl FileParser<'_> {
    /// Read `c`, a `settle` or `runs` of a trials block, into `lifecycle`.
    pub(super) fn lifecycle_child(&mut self, c: &KdlNode, lifecycle: &mut Lifecycle) {
        match node_name(c) {
            "settle" => lifecycle.settle = self.settle(c),
            _ => lifecycle.runs = self.runs(c),
        }
    }

    /// `runs 3`: 1 to [`MAX_RUNS`].
    fn runs(&mut self, c: &KdlNode) -> Option<Sp<u32>> {
        let n = self.one_int(c, 1, i128::from(u32::MAX))?;
        if n.value > i128::from(MAX_RUNS) {
            let p = problem(
                "bad_value",
                format!("`runs` is at most {MAX_RUNS}, found {}", n.value),
            )
            .label(n.loc, "too many")
            .help("every run of a server start is recorded in its one trial; for more samples, measure more `passes` (each a fresh server start)");
            self.push(p);
            return None;
        }
        Some(Sp::new(n.value as u32, n.loc))
    }

    /// `settle "60s"`: a duration up to [`MAX_SETTLE`].
    fn settle(&mut self, c: &KdlNode) -> Option<Sp<std::time::Duration>> {
        self.props_only(c, &[]);
        self.no_children(c);
        let e = self.single_arg(c)?;
        let d = self.duration_of(e)?;
        if d.value > MAX_SETTLE {
            let p = problem(
                "bad_value",
                format!(
                    "`settle` is at most {} s, found {} s",
                    MAX_SETTLE.as_secs(),
                    d.value.as_secs()
                ),
            )
            .label(d.loc, "too long")
            .help("the machine is held for other measurements while a server settles; a minute or two is what a server needs to finish its start-up work");
            self.push(p);
            return None;
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    fn trials(body: &str) -> Result<crate::Trials, String> {
        let text = format!(
            r#"image "i" {{ debian suite="bookworm"; packages "mariadb-server" }}
server "a" {{ image "i" }}
workload "w" {{ sysbench "oltp_read_only"; threads 1 }}
trials "t" {{ servers "a"; workload "w"{body} }}"#
        );
        crate::parse_str("x.kdl", &text)
            .map(|p| p.trials[0].clone())
            .map_err(|e| crate::render(&e))
    }

    #[test]
    fn settle_and_runs_are_read() {
        let t = trials("; settle \"1m30s\"; runs 3").unwrap();
        assert_eq!(
            t.lifecycle.settle.as_ref().unwrap().value,
            Duration::from_secs(90)
        );
        assert_eq!(t.lifecycle.settle_seconds(), Some(90.0));
        assert_eq!(t.lifecycle.run_count(), 3);
        assert!(!t.lifecycle.is_default());
        let t = trials("").unwrap();
        assert!(t.lifecycle.is_default());
        assert_eq!(t.lifecycle.run_count(), 1);
        // what equals the default is the default
        assert!(trials("; settle \"0s\"; runs 1")
            .unwrap()
            .lifecycle
            .is_default());
    }

    #[test]
    fn bad_lifecycles_are_refused_at_their_place() {
        for (body, says) in [
            ("; runs 0", "`runs` must be at least 1"),
            ("; runs 101", "`runs` is at most 100"),
            ("; runs \"3\"", "an integer"),
            ("; settle \"soon\"", "is not a duration"),
            ("; settle 60", "a string"),
            ("; settle \"2h\"", "`settle` is at most 3600 s"),
            ("; settle \"1s\"; settle \"2s\"", "settle"),
            ("; runs 2; runs 3", "runs"),
        ] {
            let err = trials(body).expect_err(body);
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
