//! skiff-log: the synchronous storage engine of one broker (std threads, no async runtime, no
//! protocol types). Owns the on-disk layout, which follows Apache Kafka's so Kafka's tools can
//! read it: one directory per partition (`<topic>-<partition>`), segments named by their
//! 20-digit base offset (`.log` batches as appended, `.index` sparse offset index,
//! `.timeindex` time index), and the log-dir files `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `.kafka_cleanshutdown` and `.lock`, and per partition the
//! producer-state snapshots `<offset>.snapshot` (idempotent producers, `producer_state`) and
//! the transaction indexes `<base>.txnindex` (aborted transactions, `txn_index`).
//!
//! Entry points: [`Log`] (one partition: append, read, flush, retention, timestamp lookups,
//! and for the log cleaner: [`CleanerView`], [`SegmentBatches`], [`CleanedSegmentWriter`],
//! `replace_segments`) and [`LogDir`] (the root directory: lock, checkpoints including
//! `cleaner-offset-checkpoint`, clean-shutdown marker). Every operation on a `Log` lives in the
//! `log` module tree, whose `AppendLocked` guard is the only way to the state behind a log's
//! append lock; the other modules are file formats and helpers (segments, indexes, snapshots,
//! the transaction index, recovery, validation).
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod checkpoint;
mod cleaning;
pub mod clock;
pub mod config;
mod error;
pub mod file_cache;
pub mod fsutil;
mod index;
mod key_index;
mod log;
mod log_dir;
pub mod parallel;
mod producer_snapshot;
pub mod producer_state;
mod recompress;
mod recovery;
mod segment;
mod swap_recovery;
mod time_index;
mod txn_index;
mod validate;

#[cfg(test)]
mod tests;

pub use cleaning::{
    disk_space, free_space, CleanedSegmentWriter, CleanerView, DiskSpace, SegmentBatches,
    SegmentInfo,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{CleanupPolicy, LogConfig};
pub use error::{LogError, Result};
pub use fsutil::{fsync_dir, write_atomically, write_private_atomically};
pub use key_index::{KeyIndexBudget, KeyIndexPhase, KeyIndexStatus, KeyLookup, KeyedRecord};
pub use log::{
    AppendInfo, AppendValidation, FileRange, FileRecords, Log, PinnedBatches, PinnedLog, ReadInfo,
    RetentionOutcome,
};
pub use log_dir::LogDir;
pub use producer_state::{BatchMetadata, CompletedTxn, ControlType, ProducerEntry};
pub use recompress::target_codec;
pub use recovery::Recovery;
pub use txn_index::{
    control_batch, decode_txn_index, parse_marker, AbortedTxn, VerificationGuard,
    TXN_INDEX_ENTRY_LEN,
};
