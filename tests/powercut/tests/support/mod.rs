//! Workload and checks of the power-cut test.
pub mod check;
pub mod workload;
