//! Study bundles: `cairn bundle` packs a study (its plan files, lock, every record and blob
//! its report depends on, the rendered report) into one `.tar.zst` with a manifest of
//! every file's blake3; `cairn verify` checks one (a file or an unpacked folder) — each
//! file against the manifest, and every record's key against the plan and its inputs'
//! records — and names what each problem breaks; `cairn reproduce` re-runs a verified
//! bundle here and compares what it finds with what was published ([`findings`]).
//!
//! A bundle is untrusted input ([`unpack`]): entries outside their folder, links and
//! decompression beyond the declared size are refused, and the plan's host `step`s run
//! only when asked.

pub mod chain;
pub mod check;
pub mod findings;
pub mod format;
pub mod pack;
pub mod unpack;
