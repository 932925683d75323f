//! Broker-level compaction controls for the HTTP API and the CLI (docs/compaction.md §5.9): a
//! dry run of the next pass, compact-now with tickets, and the committed offsets that
//! consumer-aware tombstones wait for. Every answer is a plain serde-serializable struct, so
//! a route or a subcommand only has to call one function and serialize its result.
//!
//! Blocking: a dry run reads the partition's sealed segments (like a pass, with the cleaner's
//! I/O throttle); call it from a blocking thread (`tokio::task::spawn_blocking`), never on a
//! runtime worker. `compact_now` and `compaction_ticket` only take the cleaner's state lock.
//!
//! Thread-safety: each function clones the cleaner's handle out of `Broker::cleaner` first, so
//! no broker lock is held while a dry run reads.

use std::sync::{Arc, Weak};

use serde::Serialize;
use skiff_cleaner::{
    CleanerError, DryRunReport, GroupOffsetsSource, PassStats, TicketState, TicketStatus,
};

use crate::broker::Broker;

/// Why a compaction control could not answer.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CompactionError {
    #[error("unknown topic or partition: {0}")]
    UnknownTopicOrPartition(String),
    #[error("{0}")]
    NotCompacted(String),
    /// The cleaner is stopped or disabled, or the partition is marked uncleanable.
    #[error("{0}")]
    Unavailable(String),
    /// No such ticket, or a finished one already forgotten (the last 1024 are kept).
    #[error("unknown compaction ticket {0} (finished tickets are kept for the last 1024)")]
    UnknownTicket(u64),
    /// The dry run failed reading the log (I/O, corruption, a segment swapped under it).
    #[error("{0}")]
    Failed(String),
}

impl CompactionError {
    /// A stable name for the error, for a JSON body or an exit message.
    pub fn kind(&self) -> &'static str {
        match self {
            CompactionError::UnknownTopicOrPartition(_) => "unknown_topic_or_partition",
            CompactionError::NotCompacted(_) => "not_compacted",
            CompactionError::Unavailable(_) => "unavailable",
            CompactionError::UnknownTicket(_) => "unknown_ticket",
            CompactionError::Failed(_) => "failed",
        }
    }
}

fn from_cleaner(e: CleanerError) -> CompactionError {
    match e {
        CleanerError::UnknownPartition { .. } => {
            CompactionError::UnknownTopicOrPartition(e.to_string())
        }
        CleanerError::NotCompacted { .. } => CompactionError::NotCompacted(e.to_string()),
        CleanerError::Unavailable(m) => CompactionError::Unavailable(m),
        other => CompactionError::Failed(other.to_string()),
    }
}

/// The figures of a pass (done ticket) or of a simulated one (dry run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassFigures {
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// Where the pass stopped (below `first_uncleanable_offset` when `partial`).
    pub end_offset: i64,
    pub partial: bool,
    pub records_read: u64,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub tombstones_removed: u64,
    pub tombstones_kept: u64,
    pub tombstones_held_for_consumers: u64,
    /// `[group, tombstones]`, most first, at most 5.
    pub holding_groups: Vec<(String, u64)>,
    pub segments_rewritten: usize,
    /// Segments read and left as they were (nothing in them changed, nothing to merge).
    pub segments_unchanged: usize,
    /// Clean segments left unread: their key summary proved nothing in them would change.
    pub segments_skipped: usize,
    /// Bytes of those segments (not in what was read).
    pub bytes_skipped: u64,
    /// Bytes read (the map's range and every segment filtered).
    pub bytes_read: u64,
    pub duration_ms: u64,
    /// Records appended to the archive topic first (`skiff.compaction.archive.topic`; always
    /// 0 for a dry run, which archives nothing) and the bytes of their batches.
    pub records_archived: u64,
    pub bytes_archived: u64,
}

impl From<&PassStats> for PassFigures {
    fn from(s: &PassStats) -> Self {
        PassFigures {
            first_dirty_offset: s.first_dirty_offset,
            first_uncleanable_offset: s.first_uncleanable_offset,
            end_offset: s.end_offset,
            partial: s.partial,
            records_read: s.records_read,
            records_removed: s.records_read.saturating_sub(s.records_kept),
            bytes_before: s.bytes_before,
            bytes_after: s.bytes_written,
            tombstones_removed: s.tombstones_removed,
            tombstones_kept: s.tombstones_kept,
            tombstones_held_for_consumers: s.held_for_consumers.tombstones,
            holding_groups: s.held_for_consumers.top(),
            segments_rewritten: s.segments_rewritten,
            segments_unchanged: s.segments_unchanged,
            segments_skipped: s.segments_skipped,
            bytes_skipped: s.bytes_skipped,
            bytes_read: s.bytes_read,
            duration_ms: u64::try_from(s.duration.as_millis()).unwrap_or(u64::MAX),
            records_archived: s.records_archived,
            bytes_archived: s.bytes_archived,
        }
    }
}

/// One partition's dry run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DryRun {
    pub topic: String,
    pub partition: i32,
    /// What ends the cleanable range: `active_segment`, `min_compaction_lag` or
    /// `last_stable_offset`.
    pub limited_by: &'static str,
    pub dirty_ratio: f64,
    pub min_cleanable_dirty_ratio: f64,
    /// Whether the cleaner would pick it by itself now.
    pub eligible_now: bool,
    pub keys_in_dirty_range: usize,
    pub live_records_kept: u64,
    pub figures: PassFigures,
}

impl From<&DryRunReport> for DryRun {
    fn from(r: &DryRunReport) -> Self {
        DryRun {
            topic: r.topic.clone(),
            partition: r.partition,
            limited_by: limit_name(r.uncleanable_reason),
            dirty_ratio: r.dirty_ratio,
            min_cleanable_dirty_ratio: r.min_cleanable_ratio,
            eligible_now: r.eligible_now,
            keys_in_dirty_range: r.keys_in_dirty_range,
            live_records_kept: r.live_records_kept,
            figures: PassFigures::from(&r.stats),
        }
    }
}

fn limit_name(r: skiff_cleaner::UncleanableReason) -> &'static str {
    match r {
        skiff_cleaner::UncleanableReason::ActiveSegment => "active_segment",
        skiff_cleaner::UncleanableReason::MinCompactionLag => "min_compaction_lag",
        skiff_cleaner::UncleanableReason::LastStableOffset => "last_stable_offset",
    }
}

/// A compact-now ticket as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ticket {
    pub id: u64,
    pub topic: String,
    pub partition: i32,
    /// `queued`, `running`, `done`, `failed` or `nothing_to_clean`.
    pub state: &'static str,
    pub requested_ms: i64,
    pub finished_ms: Option<i64>,
    /// The pass's figures once `done`.
    pub pass: Option<PassFigures>,
    /// Why it `failed`.
    pub error: Option<String>,
}

impl From<&TicketStatus> for Ticket {
    fn from(t: &TicketStatus) -> Self {
        Ticket {
            id: t.ticket.id,
            topic: t.ticket.topic.clone(),
            partition: t.ticket.partition,
            state: t.state.name(),
            requested_ms: t.requested_ms,
            finished_ms: t.finished_ms,
            pass: match &t.state {
                TicketState::Done(s) => Some(PassFigures::from(s.as_ref())),
                _ => None,
            },
            error: match &t.state {
                TicketState::Failed(e) => Some(e.clone()),
                _ => None,
            },
        }
    }
}

/// The group coordinator's committed offsets, for the cleaner. Holds the broker weakly: the
/// cleaner is owned by the broker.
pub(crate) struct CoordinatorOffsets(pub(crate) Weak<Broker>);

impl GroupOffsetsSource for CoordinatorOffsets {
    fn committed(&self, topic: &str, partition: i32) -> Option<Vec<(String, i64)>> {
        self.0
            .upgrade()?
            .coordinator
            .committed_by_groups(topic, partition)
    }
}

impl Broker {
    fn cleaner_or_unavailable(&self) -> Result<skiff_cleaner::CleanerHandle, CompactionError> {
        self.cleaner_handle()
            .ok_or_else(|| CompactionError::Unavailable("the log cleaner is stopped".into()))
    }

    /// The partitions of `topic` (all, or just `partition`), in order; unknown ones are errors.
    fn compaction_targets(
        &self,
        topic: &str,
        partition: Option<i32>,
    ) -> Result<Vec<i32>, CompactionError> {
        let t = self.topics.get(topic).ok_or_else(|| {
            CompactionError::UnknownTopicOrPartition(format!("unknown topic {topic}"))
        })?;
        let mut all: Vec<i32> = t.partitions().iter().map(|p| p.index).collect();
        all.sort_unstable();
        match partition {
            None => Ok(all),
            Some(p) if all.contains(&p) => Ok(vec![p]),
            Some(p) => Err(CompactionError::UnknownTopicOrPartition(format!(
                "{topic}-{p}"
            ))),
        }
    }

    /// What a compaction pass would remove now from one partition of `topic`, or from each of
    /// them, without changing anything. Blocking (reads segments): see the module docs.
    pub fn compaction_dry_run(
        &self,
        topic: &str,
        partition: Option<i32>,
    ) -> Result<Vec<DryRun>, CompactionError> {
        let cleaner = self.cleaner_or_unavailable()?;
        self.compaction_targets(topic, partition)?
            .into_iter()
            .map(|p| {
                let report = cleaner.dry_run(topic, p).map_err(from_cleaner)?;
                Ok(DryRun::from(&report))
            })
            .collect()
    }

    /// Asks for a compaction pass now on one partition of `topic`, or on each, whatever the
    /// dirty ratio (`min.compaction.lag.ms`, `delete.retention.ms`, open transactions and the
    /// active segment still apply). Returns one queued ticket per partition.
    pub fn compact_now(
        &self,
        topic: &str,
        partition: Option<i32>,
    ) -> Result<Vec<Ticket>, CompactionError> {
        let cleaner = self.cleaner_or_unavailable()?;
        let mut out = Vec::new();
        for p in self.compaction_targets(topic, partition)? {
            let t = cleaner.compact_now(topic, p).map_err(from_cleaner)?;
            let status = cleaner
                .ticket_status(t.id)
                .ok_or(CompactionError::UnknownTicket(t.id))?;
            out.push(Ticket::from(&status));
        }
        Ok(out)
    }

    /// A compact-now ticket's state.
    pub fn compaction_ticket(&self, id: u64) -> Result<Ticket, CompactionError> {
        let cleaner = self.cleaner_or_unavailable()?;
        cleaner
            .ticket_status(id)
            .map(|s| Ticket::from(&s))
            .ok_or(CompactionError::UnknownTicket(id))
    }

    /// Connects the cleaner to the group coordinator's committed offsets (at start and after
    /// the cleaner restarts with new settings).
    pub(crate) fn connect_cleaner_to_groups(self: &Arc<Self>) {
        let source: Arc<dyn GroupOffsetsSource> =
            Arc::new(CoordinatorOffsets(Arc::downgrade(self)));
        let source = self.group_offsets.get_or_init(|| source).clone();
        if let Some(c) = self.cleaner_handle() {
            c.set_group_offsets(source);
        }
    }
}
