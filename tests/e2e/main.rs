//! cairn's end-to-end tests, one binary: the real `cairn` runs in a sandbox per test. One
//! module per area; the Docker modules (`trials`, `images`, `clean`) need a Docker Engine.

mod support;

mod adaptive;
mod cache;
mod claims;
mod clean;
mod cli;
mod cpus;
mod efficiency;
mod failure;
mod faults;
mod host_settings;
mod images;
mod kill;
mod lifecycle;
mod mysql;
mod params;
mod postgresql;
mod profiles;
mod report;
mod repro;
mod slurm;
mod snapshots;
mod source_build;
mod store;
mod study_buildlink;
mod study_enginescaling;
mod study_malloc;
mod study_selectindex;
mod study_wordsize;
mod subsets;
mod trials;
