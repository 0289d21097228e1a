//! cairn-exec: the places a step runs — host processes (`process`) and Docker containers (`docker`).

pub mod cancel;
pub mod docker;
pub mod host_server;
pub mod machine;
pub mod process;
