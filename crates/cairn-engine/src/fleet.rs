//! Fleet execution: the measurements of a run performed on the nodes of a cluster instead of
//! on this machine, a *block* at a time, and recorded here exactly as a local run records
//! them. The scheduler (`run.rs`) forms the blocks and hands each to a [`Fleet`]; how a
//! block reaches a node and comes back (Slurm: `cairn_fleet::slurm`) is the fleet's.
//!
//! A block is one pass of every variant of one matrix point (one trials node's point: the
//! servers it compares), in the seeded order. It runs on one node, so a comparison of
//! variants never confounds the variant with the node; blocks of one pass spread over the
//! nodes, and pass `p + 1` starts only when no block of an earlier pass is still out (the
//! adaptive rule decides a conditional pass from the passes before it, and drift over time
//! hits the variants alike, as in a local run).
//!
//! Build steps (images, datasets) are not a fleet's: they run once, on this machine, as in
//! a local run, and their outputs are shipped to the nodes (see `cairn_fleet::job`).

use std::sync::Arc;
use std::time::Duration;

use cairn_graph::{Step, StepGraph, StepId};
use serde_json::{Map, Value};

use crate::context::Env;
use crate::error::StepError;
use crate::execute::Done;

/// One measurement of a block as the scheduler hands it over: its step, its key (hash), its
/// inputs (done), and what the scheduler records beside the kind's `extra` (the measurement
/// order, an adaptive decision, earlier attempts).
#[derive(Debug, Clone)]
pub struct BlockStep {
    pub id: StepId,
    pub key: String,
    pub inputs: Vec<Arc<Done>>,
    pub extra: Map<String, Value>,
}

/// What became of one step of a block: recorded (its `Done` and its own command's time) or
/// failed, and how long it took where it ran.
pub struct BlockResult {
    pub result: Result<(Done, crate::execute::StepTimes), StepError>,
    pub elapsed: Duration,
}

/// Somewhere else to run measurements: a cluster's nodes.
pub trait Fleet: Send + Sync {
    /// For a person: where the work goes, e.g. "Slurm partition `cairn`: 2 nodes".
    fn describe(&self) -> String;

    /// How many blocks may be out at once (one per usable node).
    fn capacity(&self) -> usize;

    /// Perform `block`'s steps on one node, in the given order, and record each that
    /// finished in `env.store` (with [`crate::execute::record`], so the record has the form a
    /// local run gives it); one result per step, in order. Lost work (a job that died, a
    /// node that disappeared) is retried on another node a bounded number of times, each
    /// try noted in the steps' `extra.attempts`; what is still lost after that is a
    /// transient failure. Nothing of a lost try is recorded. On cancellation the block's
    /// work is stopped on the node and its steps come back cancelled.
    fn run_block(&self, env: &Env<'_>, graph: &StepGraph, block: &[BlockStep]) -> Vec<BlockResult>;
}

/// Which block a measurement belongs to: its declaring node, pass and matrix point. The
/// variants of the point (its servers) are what differs inside one block.
pub fn block_key(step: &Step) -> (String, u32, String) {
    (
        step.name.clone(),
        step.pass,
        serde_json::to_string(&step.params).unwrap_or_default(),
    )
}
