//! skiff-cleaner: log compaction (`cleanup.policy=compact`) for Skiff, following Apache Kafka's
//! observable behaviour (docs/compaction.md §2) with Skiff's scheduling and visibility improvements.
//!
//! Pieces: [`planner`] (pure: which offsets are cleanable, which log to clean, segment groups),
//! [`offset_map`] (bounded key → latest offset map), [`filter`] (per-batch/per-record retention,
//! delete horizons, empty batches), [`pass`] (one cleaning pass over a [`skiff_log::Log`]),
//! [`status`] (per-partition compaction status), [`consumers`] (tombstones that wait for
//! consumer groups), [`tickets`] (compact-now requests), [`states`] (in progress / aborted / paused /
//! uncleanable, and the moves between them) and [`pool`] (the `skiff-cleaner-N` threads).
//! [`archive`] copies what a pass removes to an archive topic first, exactly once.
//! [`summary`] keeps a key summary of each clean segment so a pass can leave unread the
//! segments it would not change.
//! [`table_snapshot`] reuses the offset map for reads: one record per live key of a pinned
//! partition (compacted topics as tables, docs/snapshots.md).
//! Synchronous std threads only; no async runtime and no protocol types.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod archive;
pub mod consumers;
mod error;
#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod filter;
pub mod markers;
pub mod offset_map;
pub mod pass;
pub mod planner;
pub mod pool;
pub mod states;
pub mod status;
pub mod summary;
pub mod table_snapshot;
pub mod tickets;

pub use archive::{ArchiveSink, LogArchive};
pub use consumers::{ConsumerHold, GroupOffsetsSource, HeldBack};
pub use error::{CleanerError, Result};
pub use offset_map::{Lookup, OffsetMap};
pub use pass::{dry_run_pass, run_pass, PassContext, PassStats, Throttler};
pub use planner::{plan, CleanablePlan, UncleanableReason, Urgency};
pub use pool::{CleanerConfig, CleanerHandle, CleanerPool, DryRunReport, LogSource};
pub use states::{AbortOutcome, CleaningState, CleaningStates, StateError};
pub use status::{CompactionStatus, PassTotals};
pub use summary::SummaryStore;
pub use table_snapshot::{
    snapshot_partition, SnapshotError, SnapshotLimits, SnapshotStats, TableRecord,
};
pub use tickets::{PassTicket, TicketId, TicketState, TicketStatus};
