//! Per-partition compaction status (Skiff's "say why": docs/compaction.md §5.6, one of its
//! additions): where cleaning stands, why it stops where it does, how dirty and how late the log
//! is, its tombstones' next horizon, the last pass's figures, and the last error with its retry
//! time.
//!
//! Plain data, cloned out of the pool's state under its lock; no I/O.

use crate::pass::PassStats;
use crate::planner::{CleanablePlan, UncleanableReason};

/// First retry delay after a failed pass when `log.cleaner.backoff.ms` is smaller.
const MIN_RETRY_MS: u64 = 1_000;
/// Longest retry delay: a failing partition is retried at least this often (KAFKA-19895).
const MAX_RETRY_MS: u64 = 300_000;

/// What the cleaner knows about one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionStatus {
    /// Start of the dirty section (the checkpoint, or the log start).
    pub first_dirty_offset: i64,
    /// End of what may be cleaned now (a segment base).
    pub first_uncleanable_offset: i64,
    /// Why the cleanable range ends there.
    pub uncleanable_reason: Option<UncleanableReason>,
    /// cleanable / (clean + cleanable) bytes.
    pub dirty_ratio: f64,
    /// The topic's `min.cleanable.dirty.ratio`.
    pub min_cleanable_ratio: f64,
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// > 0: overdue past `max.compaction.lag.ms` by that many ms; <= 0: time left.
    pub max_compaction_delay_ms: Option<i64>,
    /// Map utilization of the last pass (0..=1).
    pub map_fill: f64,
    /// Tombstones kept by the last pass.
    pub tombstones_seen: u64,
    /// Of those, tombstones past their delete horizon kept only because consumer groups have
    /// not read them (`skiff.tombstone.wait.for.consumers`).
    pub tombstones_held_for_consumers: u64,
    /// The groups holding them back and how many each holds, most first: at most
    /// [`crate::consumers::TOP_HOLDERS`] groups.
    pub holding_groups: Vec<(String, u64)>,
    /// Earliest delete horizon still ahead among retained tombstones; Skiff runs a pass when
    /// it passes so tombstones leave on time on idle logs.
    pub next_delete_horizon_ms: Option<i64>,
    pub last_pass: Option<PassStats>,
    /// Wall-clock time the last successful pass ended.
    pub last_pass_end_ms: Option<i64>,
    /// The last failure (cleared by a successful pass).
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// No new attempt before this time (ms) after a failure.
    pub retry_at_ms: Option<i64>,
    /// Why an eligible log is not being cleaned (e.g. not enough free disk space).
    pub waiting_for: Option<String>,
    /// Why the topic's archive (`skiff.compaction.archive.topic`) cannot take records now
    /// (missing, compacted, the topic itself): nothing is cleaned until it can.
    pub archive_blocked: Option<String>,
    pub in_progress: bool,
    /// Set when a pass (or the planning of this log) panicked: the partition is marked
    /// uncleanable and skipped, as Kafka's `LogCleanerManager.markPartitionUncleanable` does,
    /// until the topic is deleted (or re-created) or the broker restarts. Holds the panic's
    /// message. Unlike an error (retried with back-off), a panic is a bug in Skiff: retrying
    /// would panic again and again.
    pub uncleanable: Option<String>,
    /// Figures summed over every successful pass since the broker started (for counters).
    pub totals: PassTotals,
}

/// Cumulative cleaning figures of one partition since start-up; only ever grow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassTotals {
    pub passes: u64,
    pub bytes_read: u64,
    /// Bytes of clean segments passes left unread (their summary proved them unchanged).
    pub bytes_skipped: u64,
    pub bytes_written: u64,
    /// Records dropped from rewritten segments (superseded, tombstones, keyless).
    pub records_removed: u64,
    pub tombstones_removed: u64,
    pub failures: u64,
    /// Records appended to the archive topic (`skiff.compaction.archive.topic`) and the
    /// bytes of their batches.
    pub records_archived: u64,
    pub bytes_archived: u64,
}

impl CompactionStatus {
    /// Refreshes the planner figures.
    pub fn apply_plan(&mut self, plan: &CleanablePlan, min_cleanable_ratio: f64) {
        self.first_dirty_offset = plan.first_dirty_offset;
        self.first_uncleanable_offset = plan.first_uncleanable_offset;
        self.uncleanable_reason = Some(plan.uncleanable_reason);
        self.dirty_ratio = plan.dirty_ratio;
        self.min_cleanable_ratio = min_cleanable_ratio;
        self.clean_bytes = plan.clean_bytes;
        self.cleanable_bytes = plan.cleanable_bytes;
        self.max_compaction_delay_ms = plan.max_compaction_delay_ms;
    }

    /// Records a completed pass.
    pub fn record_pass(&mut self, stats: &PassStats, end_ms: i64) {
        self.first_dirty_offset = stats.end_offset;
        self.map_fill = stats.map_fill;
        self.tombstones_seen = stats.tombstones_kept;
        self.tombstones_held_for_consumers = stats.held_for_consumers.tombstones;
        self.holding_groups = stats.held_for_consumers.top();
        self.next_delete_horizon_ms = stats.next_delete_horizon_ms;
        let t = &mut self.totals;
        t.passes = t.passes.saturating_add(1);
        t.bytes_read = t.bytes_read.saturating_add(stats.bytes_read);
        t.bytes_skipped = t.bytes_skipped.saturating_add(stats.bytes_skipped);
        t.bytes_written = t.bytes_written.saturating_add(stats.bytes_written);
        t.records_removed = t
            .records_removed
            .saturating_add(stats.records_read.saturating_sub(stats.records_kept));
        t.tombstones_removed = t
            .tombstones_removed
            .saturating_add(stats.tombstones_removed);
        t.records_archived = t.records_archived.saturating_add(stats.records_archived);
        t.bytes_archived = t.bytes_archived.saturating_add(stats.bytes_archived);
        self.last_pass = Some(stats.clone());
        self.last_pass_end_ms = Some(end_ms);
        self.last_error = None;
        self.consecutive_failures = 0;
        self.retry_at_ms = None;
        self.waiting_for = None;
    }

    /// Records a failed pass and schedules the retry with exponential back-off.
    pub fn record_failure(&mut self, error: String, now_ms: i64, backoff_ms: u64) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.totals.failures = self.totals.failures.saturating_add(1);
        let delay = retry_delay_ms(self.consecutive_failures, backoff_ms);
        self.retry_at_ms = Some(now_ms.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX)));
        self.last_error = Some(error);
    }

    /// Records a pass that panicked: counted as a failure, and the partition is marked
    /// uncleanable (no retry is scheduled; see [`CompactionStatus::uncleanable`]).
    pub fn record_panic(&mut self, message: String) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.totals.failures = self.totals.failures.saturating_add(1);
        self.retry_at_ms = None;
        self.last_error = Some(message.clone());
        self.uncleanable = Some(message);
    }
}

/// Delay before retry number `failures` (1-based): `max(backoff, 1 s) × 2^(failures-1)`, at
/// most 5 minutes.
pub fn retry_delay_ms(failures: u32, backoff_ms: u64) -> u64 {
    let base = backoff_ms.max(MIN_RETRY_MS);
    let shift = failures.saturating_sub(1).min(20);
    base.saturating_mul(1u64 << shift).min(MAX_RETRY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delay_grows_and_is_capped() {
        assert_eq!(retry_delay_ms(1, 100), 1_000);
        assert_eq!(retry_delay_ms(2, 100), 2_000);
        assert_eq!(retry_delay_ms(3, 15_000), 60_000);
        assert_eq!(retry_delay_ms(40, 15_000), MAX_RETRY_MS);
    }

    #[test]
    fn failure_then_success() {
        let mut s = CompactionStatus::default();
        s.record_failure("boom".into(), 10_000, 100);
        assert_eq!(s.retry_at_ms, Some(11_000));
        s.record_failure("boom".into(), 11_000, 100);
        assert_eq!(s.retry_at_ms, Some(13_000));
        assert_eq!(s.consecutive_failures, 2);
        let stats = PassStats {
            end_offset: 42,
            map_fill: 0.5,
            tombstones_kept: 3,
            next_delete_horizon_ms: Some(99),
            ..PassStats::default()
        };
        s.record_pass(&stats, 20_000);
        assert_eq!(s.last_error, None);
        assert_eq!(s.retry_at_ms, None);
        assert_eq!(s.consecutive_failures, 0);
        assert_eq!(s.first_dirty_offset, 42);
        assert_eq!(s.next_delete_horizon_ms, Some(99));
        assert_eq!(s.tombstones_seen, 3);
        assert_eq!(s.totals.failures, 2);
    }

    #[test]
    fn a_panic_marks_uncleanable_without_a_retry() {
        let mut s = CompactionStatus::default();
        s.record_failure("io".into(), 10_000, 100);
        s.record_panic("cleaning pass panicked: bug".into());
        assert_eq!(
            s.uncleanable.as_deref(),
            Some("cleaning pass panicked: bug")
        );
        assert_eq!(s.retry_at_ms, None);
        assert_eq!((s.consecutive_failures, s.totals.failures), (2, 2));
    }

    #[test]
    fn totals_add_up_over_passes() {
        let mut s = CompactionStatus::default();
        let stats = PassStats {
            bytes_read: 100,
            bytes_skipped: 1000,
            bytes_written: 40,
            records_read: 10,
            records_kept: 4,
            tombstones_removed: 2,
            records_archived: 5,
            bytes_archived: 300,
            ..PassStats::default()
        };
        s.record_pass(&stats, 1);
        s.record_pass(&stats, 2);
        let want = PassTotals {
            passes: 2,
            bytes_read: 200,
            bytes_skipped: 2000,
            bytes_written: 80,
            records_removed: 12,
            tombstones_removed: 4,
            failures: 0,
            records_archived: 10,
            bytes_archived: 600,
        };
        assert_eq!(s.totals, want);
    }
}
