//! Datasets: schemas and generated data that workloads run against (sysbench's `sbtestN` tables so far).

pub mod sysbench;
