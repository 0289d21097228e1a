//! cairn-exec: the places a step runs — host processes (`process`) and Docker containers
//! (`docker`) — and the database servers started there: server runtimes (`runtime`) and the
//! database systems they run (`system`).

pub mod allocator;
pub mod cancel;
pub mod command_runner;
pub mod counters;
pub mod cpu_sets;
pub mod datadir;
pub mod docker;
pub mod elf;
pub mod host_cpu;
pub mod host_server;
pub mod host_settings;
pub mod machine;
pub mod measure_lock;
pub mod netpath;
pub mod profiler;
pub mod runtime;
pub mod server_log;
pub mod slurm;
pub mod system;
pub mod usage;
pub mod variant_checks;
