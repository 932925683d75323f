//! The crate's error type: why a cleaning pass did not complete.
//!
//! Pure data, `Send + Sync`. Messages name the partition part (segment, offset) involved so a
//! status line or log line is actionable on its own.

use thiserror::Error;

/// Everything a cleaning pass can fail with.
#[derive(Debug, Error)]
pub enum CleanerError {
    /// The storage engine failed (I/O, offline log, ...).
    #[error("log error: {0}")]
    Log(#[from] skiff_log::LogError),

    /// A stored batch could not be decoded or re-encoded.
    #[error("corrupt batch at offset {offset}: {source}")]
    Corrupt {
        offset: i64,
        #[source]
        source: skiff_records::RecordsError,
    },

    /// The pass was asked to stop (topic deleted, policy changed, shutdown); its output was
    /// discarded and the checkpoint left alone.
    #[error("cleaning aborted: {0}")]
    Aborted(String),

    /// The log changed under the pass (retention, truncation); it is simply retried later.
    #[error("log moved on during cleaning: {0}")]
    LogMovedOn(String),

    /// A request named a partition the broker does not have.
    #[error("unknown partition {topic}-{partition}")]
    UnknownPartition { topic: String, partition: i32 },

    /// A request named a partition whose topic is not compacted (`cleanup.policy`).
    #[error("{topic}-{partition} is not compacted (cleanup.policy has no compact)")]
    NotCompacted { topic: String, partition: i32 },

    /// Archiving removed records (`skiff.compaction.archive.topic`) failed or is impossible;
    /// nothing was removed that is not durably archived.
    #[error("archive: {0}")]
    Archive(String),

    /// The partition cannot be cleaned now: no cleaner thread runs, or it was marked
    /// uncleanable after a panic.
    #[error("{0}")]
    Unavailable(String),
}

impl CleanerError {
    /// Aborts and "log moved on" are expected interruptions, not failures to back off from.
    pub fn is_interruption(&self) -> bool {
        matches!(
            self,
            CleanerError::Aborted(_)
                | CleanerError::LogMovedOn(_)
                | CleanerError::Log(skiff_log::LogError::Aborted(_))
                | CleanerError::Log(skiff_log::LogError::SegmentGone(_))
        )
    }
}

/// Result alias for this crate.
pub type Result<T, E = CleanerError> = std::result::Result<T, E>;
