//! Operator controls of the pool (docs/compaction.md §5.9): a dry run of a pass, compact-now
//! requests with tickets, and the committed-offsets source of consumer-aware tombstones.
//!
//! Dry run: planned exactly as a thread would plan the partition now (same checkpoint, last
//! stable offset, clock), then [`crate::pass::dry_run_pass`]: the pass's own map building and
//! filter, with a map of the size one cleaner thread has, and a writer that only counts. It
//! never marks the partition in progress and writes nothing (no `.cleaned` file, checkpoint
//! untouched), so it may run beside a real pass on the same partition; if that pass swaps a
//! segment the dry run is reading, the dry run fails with "log moved on" and can be asked
//! again. Dry runs are serialized among themselves (`Shared::dry_runs`), so at most one extra
//! map is allocated at a time; they share the cleaner's I/O throttle.
//!
//! Compact now: a ticket is queued under the pool's lock and the threads woken; the next pick
//! takes the partition first whatever its dirty ratio (`Urgency::Requested`), with the same
//! plan as any pass: `min.compaction.lag.ms`, the last stable offset and the active segment
//! still bound it, `delete.retention.ms` still keeps tombstones.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError};

use skiff_log::Log;

use super::{Key, Shared};
use crate::consumers::GroupOffsetsSource;
use crate::error::{CleanerError, Result};
use crate::offset_map::OffsetMap;
use crate::pass::{dry_run_pass, PassContext, PassStats};
use crate::planner::{plan, urgency, UncleanableReason};
use crate::tickets::{PassTicket, TicketId, TicketStatus};
use crate::CleanerHandle;

/// What a pass on one partition would do if it ran now.
#[derive(Clone, Debug, PartialEq)]
pub struct DryRunReport {
    pub topic: String,
    pub partition: i32,
    /// The range the pass would cover: `[first_dirty_offset, first_uncleanable_offset)`.
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// What limits the range (active segment, `min.compaction.lag.ms`, last stable offset).
    pub uncleanable_reason: UncleanableReason,
    /// Where the pass would actually stop: below `first_uncleanable_offset` when the map
    /// (`log.cleaner.dedupe.buffer.size` / threads) fills first (`partial`).
    pub end_offset: i64,
    pub partial: bool,
    pub dirty_ratio: f64,
    pub min_cleanable_ratio: f64,
    /// Whether the pool would pick it by itself now (dirty enough, overdue or a tombstone
    /// horizon passed); `compact_now` runs it either way.
    pub eligible_now: bool,
    /// Records read from the segments the pass would rewrite, and removed from them.
    pub records_read: u64,
    pub records_removed: u64,
    /// Bytes of those segments before and after the pass.
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub tombstones_removed: u64,
    pub tombstones_kept: u64,
    /// Distinct keys of the dirty range (the map's keys).
    pub keys_in_dirty_range: usize,
    /// Records with a value that the rewritten segments would keep: the live keys below
    /// `end_offset`.
    pub live_records_kept: u64,
    /// Expired tombstones kept because consumer groups have not read them, and the groups
    /// holding most of them (at most [`crate::consumers::TOP_HOLDERS`]).
    pub tombstones_held_for_consumers: u64,
    pub holding_groups: Vec<(String, u64)>,
    /// Every figure of the simulated pass.
    pub stats: PassStats,
}

impl DryRunReport {
    fn new(topic: &str, partition: i32, eligible_now: bool, ratio: f64, s: PassStats) -> Self {
        DryRunReport {
            topic: topic.to_string(),
            partition,
            first_dirty_offset: s.first_dirty_offset,
            first_uncleanable_offset: s.first_uncleanable_offset,
            uncleanable_reason: UncleanableReason::ActiveSegment,
            end_offset: s.end_offset,
            partial: s.partial,
            dirty_ratio: 0.0,
            min_cleanable_ratio: ratio,
            eligible_now,
            records_read: s.records_read,
            records_removed: s.records_read.saturating_sub(s.records_kept),
            bytes_before: s.bytes_before,
            bytes_after: s.bytes_written,
            tombstones_removed: s.tombstones_removed,
            tombstones_kept: s.tombstones_kept,
            keys_in_dirty_range: s.map_keys,
            live_records_kept: s.records_kept.saturating_sub(s.tombstones_kept),
            tombstones_held_for_consumers: s.held_for_consumers.tombstones,
            holding_groups: s.held_for_consumers.top(),
            stats: s,
        }
    }
}

impl CleanerHandle {
    /// Sets where consumer-aware tombstones (`skiff.tombstone.wait.for.consumers`) read the
    /// groups' committed offsets. Until it is set, such tombstones are all kept (up to
    /// `skiff.tombstone.wait.max.ms`).
    pub fn set_group_offsets(&self, source: Arc<dyn GroupOffsetsSource>) {
        *self
            .shared
            .groups
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(source);
    }

    /// What a pass on the partition would remove if it ran now, changing nothing. See the
    /// module docs for how it relates to a real pass.
    pub fn dry_run(&self, topic: &str, partition: i32) -> Result<DryRunReport> {
        let shared = &*self.shared;
        let log = compacted_log(shared, topic, partition)?;
        let _one_at_a_time = shared
            .dry_runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key: Key = (topic.to_string(), partition);
        let (stored, next_horizon) = {
            let st = shared.lock();
            let horizon = st.entries.get(&key).and_then(|e| e.next_delete_horizon_ms);
            (st.checkpoints.get(&key).copied(), horizon)
        };
        let now = shared.clock.now_ms();
        let view = log.cleaner_view();
        let lso = log.last_stable_offset().min(view.log_end_offset);
        let p = plan(&view, stored, now, lso);
        let ratio = view.config.min_cleanable_dirty_ratio;
        let eligible = urgency(&p, ratio, now, next_horizon).is_some();

        let threads = shared.threads.max(1);
        let (_, map_bytes) = super::split_dedupe_buffer(shared.config.dedupe_buffer_size, threads);
        let mut map = OffsetMap::new(map_bytes, shared.config.io_buffer_load_factor);
        let hold = super::consumer_hold(shared, &key, &view);
        let never = AtomicBool::new(false);
        let ctx = PassContext {
            topic,
            partition,
            now_ms: now,
            io_buffer_size: (shared.config.io_buffer_size / threads / 2).max(1),
            abort: &never,
            throttler: &shared.throttler,
            consumer_hold: hold.as_ref(),
            // A dry run never archives (nor removes) anything.
            archive: None,
            // Read only: a dry run skips what a pass would, and records no summary.
            summaries: Some(&shared.summaries),
        };
        let stats = dry_run_pass(&log, &view, &p, &mut map, &ctx)?;
        let mut report = DryRunReport::new(topic, partition, eligible, ratio, stats);
        report.uncleanable_reason = p.uncleanable_reason;
        report.dirty_ratio = p.dirty_ratio;
        Ok(report)
    }

    /// Asks for a pass on the partition now, whatever its dirty ratio; returns its ticket (the
    /// partition's already queued one, if any). Fails when no cleaner thread runs, for an
    /// unknown or non-compacted partition, or one marked uncleanable.
    pub fn compact_now(&self, topic: &str, partition: i32) -> Result<PassTicket> {
        let shared = &*self.shared;
        if shared.threads == 0 {
            return Err(CleanerError::Unavailable(
                "the log cleaner is disabled (log.cleaner.enable=false)".into(),
            ));
        }
        compacted_log(shared, topic, partition)?;
        let key: Key = (topic.to_string(), partition);
        let now = shared.clock.now_ms();
        let mut st = shared.lock();
        if let Some(why) = st.cleaning.uncleanable(&key) {
            return Err(CleanerError::Unavailable(format!(
                "{topic}-{partition} is uncleanable until the topic is deleted or the broker \
                 restarts: {why}"
            )));
        }
        let ticket = st.tickets.request(topic, partition, now);
        st.wakes = st.wakes.wrapping_add(1);
        shared.changed.notify_all();
        Ok(ticket)
    }

    /// [`CleanerHandle::compact_now`] for every partition of a compacted topic, in partition
    /// order. An unknown topic is [`CleanerError::UnknownPartition`] with partition -1.
    pub fn compact_topic_now(&self, topic: &str) -> Result<Vec<PassTicket>> {
        let mut partitions: Vec<i32> = self
            .shared
            .source
            .logs()
            .into_iter()
            .filter(|(t, _, _)| t == topic)
            .map(|(_, p, _)| p)
            .collect();
        if partitions.is_empty() {
            return Err(CleanerError::UnknownPartition {
                topic: topic.to_string(),
                partition: -1,
            });
        }
        partitions.sort_unstable();
        partitions
            .into_iter()
            .map(|p| self.compact_now(topic, p))
            .collect()
    }

    /// A ticket's state; `None` for an unknown id or a finished ticket already forgotten
    /// (after [`crate::tickets::MAX_FINISHED_TICKETS`] newer ones finished).
    pub fn ticket_status(&self, id: TicketId) -> Option<TicketStatus> {
        self.shared.lock().tickets.status(id)
    }
}

/// The partition's log, if it exists and is compacted.
fn compacted_log(shared: &Shared, topic: &str, partition: i32) -> Result<Arc<Log>> {
    let log = shared
        .source
        .logs()
        .into_iter()
        .find(|(t, p, _)| t == topic && *p == partition)
        .map(|(_, _, log)| log)
        .ok_or_else(|| CleanerError::UnknownPartition {
            topic: topic.to_string(),
            partition,
        })?;
    if !log.cleaner_view().config.cleanup_policy.compact {
        return Err(CleanerError::NotCompacted {
            topic: topic.to_string(),
            partition,
        });
    }
    Ok(log)
}
