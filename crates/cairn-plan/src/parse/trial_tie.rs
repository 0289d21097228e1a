//! A trials block's `tie "threads" to="cpus" times=2` read into a [`Tie`]; whether the axes
//! exist and pair up is `trial_ties::check`'s question, once the whole plan is read.

use kdl::KdlNode;

use super::{node_name, prop_name, FileParser};
use crate::diagnostics::problem;
use crate::trial_ties::Tie;

/// The largest multiple a tie takes: more than any client-per-CPU ratio a study uses.
const MAX_TIMES: i128 = 1024;

impl FileParser<'_> {
    pub(super) fn trial_tie(&mut self, node: &KdlNode) -> Option<Tie> {
        self.no_children(node);
        let props = self.props_only(node, crate::grammar::TIE_PROPS);
        let axis = self.single_arg(node).and_then(|e| self.string_of(e));
        let (mut to, mut times) = (None, 1);
        for e in props {
            match prop_name(e) {
                "to" => to = self.string_of(e),
                _ => times = self.int_of("times", e, 1, MAX_TIMES)?.value as i64,
            }
        }
        let Some(to) = to else {
            let p = problem("missing", format!("`{}` needs `to=`: the axis it follows", node_name(node)))
                .label(self.name_loc(node), "no `to=`")
                .help("write `tie \"threads\" to=\"cpus\"` to measure as many client threads as the server has CPUs");
            self.push(p);
            return None;
        };
        Some(Tie {
            axis: axis?,
            to,
            times,
        })
    }
}
