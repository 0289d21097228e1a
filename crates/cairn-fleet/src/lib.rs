//! cairn-fleet: measurements on a cluster. The engine hands a [`cairn_engine::fleet::Fleet`]
//! its measurements a block at a time; the Slurm fleet ([`slurm`]) submits each block as a
//! batch job on an exclusive node. A block travels in a job directory ([`job`]): what the
//! node performs, the images and snapshots shipped to it, and what comes back, which this
//! crate gathers into the store in a local run's form.

pub mod job;
pub mod slurm;
