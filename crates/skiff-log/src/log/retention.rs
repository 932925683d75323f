//! Retention (`cleanup.policy=delete`) and DeleteRecords, following Kafka's
//! `UnifiedLog.deleteOldSegments`: log-start breach, then size, then time; each rule walks from
//! the oldest segment and stops at the first one that does not qualify. The active segment may
//! go too (it is rolled first so the log end offset is kept); an empty active segment never goes.
//!
//! Segments pinned by a running swap (`swap.rs`) and those after them are left for the next
//! pass; the log start offset still moves. Offsets may have gaps after compaction: every rule
//! works on segment base offsets, never on contiguity.
//!
//! Thread-safety: segments are chosen and removed under the log's append lock (`delete_oldest`
//! is a method of [`AppendLocked`]); readers keep reading removed segments through their
//! snapshot (files are unlinked but stay open). The snapshot a retention roll queued, and the
//! transaction index rewrite, happen after the lock is released.

use super::{AppendLocked, Inner, Log};
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::segment::Segment;
use std::sync::Arc;

/// What one retention pass removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    pub deleted_segments: usize,
    pub deleted_bytes: u64,
    /// Log start offset after the pass.
    pub log_start_offset: i64,
}

impl Log {
    /// DeleteRecords: moves the log start offset up to `offset` (-1 = the high watermark;
    /// never backwards) and removes segments wholly below it. Returns the new low watermark.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64> {
        let config = self.config_arc();
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        let hw = inner.leo;
        let target = if offset == -1 { hw } else { offset };
        if target < 0 || target > hw {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start: inner.log_start,
                log_end: hw,
            });
        }
        inner.log_start = inner.log_start.max(target);
        let mut out = RetentionOutcome::default();
        let n = start_breach_count(&inner);
        inner.delete_oldest(n, &config, now, &mut out)?;
        inner.publish();
        let log_start = inner.log_start;
        drop(inner);
        self.after_segment_removal(&out)?;
        Ok(log_start)
    }

    /// One retention pass. Only the log-start rule applies unless `cleanup.policy` has
    /// `delete`.
    pub fn apply_retention(&self) -> Result<RetentionOutcome> {
        let config = self.config_arc();
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        let mut out = RetentionOutcome::default();
        let n = start_breach_count(&inner);
        inner.delete_oldest(n, &config, now, &mut out)?;
        if config.cleanup_policy.delete {
            if config.retention_bytes >= 0 {
                let n = size_breach_count(&inner.segments, config.retention_bytes);
                inner.delete_oldest(n, &config, now, &mut out)?;
            }
            if config.retention_ms >= 0 {
                let n = inner
                    .segments
                    .iter()
                    .take_while(|s| now.saturating_sub(s.largest_timestamp()) > config.retention_ms)
                    .count();
                inner.delete_oldest(n, &config, now, &mut out)?;
            }
        }
        inner.publish();
        out.log_start_offset = inner.log_start;
        if out.deleted_segments > 0 {
            tracing::info!(dir = %self.dir.display(), deleted_segments = out.deleted_segments,
                deleted_bytes = out.deleted_bytes, log_start = inner.log_start, "retention");
        }
        drop(inner);
        self.after_segment_removal(&out)?;
        Ok(out)
    }

    /// Writes the snapshot a retention roll queued and removes producer snapshots older than
    /// the first remaining segment. Runs without the append lock (fsync).
    fn after_segment_removal(&self, out: &RetentionOutcome) -> Result<()> {
        self.write_pending_snapshots()?;
        if out.deleted_segments > 0 {
            self.delete_old_snapshots()?;
            self.reconcile_txn_index()?;
        }
        Ok(())
    }
}

impl AppendLocked<'_> {
    /// Removes the `n` oldest segments (never an empty active one), rolling first when that
    /// would remove the active segment, and raises the log start to the first survivor.
    pub(super) fn delete_oldest(
        &mut self,
        n: usize,
        config: &LogConfig,
        now: i64,
        out: &mut RetentionOutcome,
    ) -> Result<()> {
        let len = self.segments.len();
        let mut n = n.min(len);
        if let Some(&pin) = self.pins.iter().min() {
            // A swap is replacing segments from `pin` on: leave them to the next pass.
            n = n.min(self.segments.partition_point(|s| s.base_offset < pin));
        }
        if n == len && self.segments.last().is_some_and(|s| s.size() == 0) {
            n -= 1;
        }
        if n == 0 {
            return Ok(());
        }
        if n == len {
            let leo = self.leo;
            self.roll(leo, config, now)?;
        }
        let doomed: Vec<Arc<Segment>> = self.segments.iter().take(n).cloned().collect();
        let kept: Vec<Arc<Segment>> = self.segments.iter().skip(n).cloned().collect();
        if let Some(first) = kept.first() {
            self.log_start = self.log_start.max(first.base_offset);
        }
        self.segments = Arc::new(kept);
        self.publish();
        for seg in doomed {
            out.deleted_segments += 1;
            out.deleted_bytes += seg.size();
            seg.delete_files()?;
        }
        Ok(())
    }
}

/// Segments whose successor starts at or below the log start offset.
fn start_breach_count(inner: &Inner) -> usize {
    inner
        .segments
        .windows(2)
        .take_while(|w| w[1].base_offset <= inner.log_start)
        .count()
}

/// Oldest segments that can go while the log stays >= `retention_bytes`.
fn size_breach_count(segments: &[Arc<Segment>], retention_bytes: i64) -> usize {
    let total: u64 = segments.iter().map(|s| s.size()).sum();
    let total = i64::try_from(total).unwrap_or(i64::MAX);
    if total < retention_bytes {
        return 0;
    }
    let mut diff = total - retention_bytes;
    let mut n = 0;
    for s in segments {
        let size = i64::try_from(s.size()).unwrap_or(i64::MAX);
        if diff - size < 0 {
            break;
        }
        diff -= size;
        n += 1;
    }
    n
}
