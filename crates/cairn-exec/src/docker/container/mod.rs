//! Server and client containers: a database server in a container on the run's network
//! (started, waited for, archived as a snapshot), its TLS material, and client containers
//! beside it.

pub mod client;
pub mod network;
pub mod readiness;
pub mod server;
pub mod tls;
