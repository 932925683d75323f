//! skiff-log: synchronous storage engine for one broker's partitions (segments, indexes,
//! recovery, retention). No async runtime, no protocol types.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod config;

pub use config::{CleanupPolicy, LogConfig};
