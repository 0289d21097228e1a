//! A trials block's server lifecycle (`settle`, `runs`) as its trials' definition holds it.

use cairn_defs::LifecycleDef;
use cairn_plan::Trials;

/// The lifecycle of trials block `t` for its trials' definitions: `None` when it declares
/// neither a settle window nor more than one run, so those trials keep their keys.
pub(crate) fn lifecycle_def(t: &Trials) -> Option<LifecycleDef> {
    LifecycleDef::of(t.lifecycle.settle_seconds(), t.lifecycle.run_count())
}
