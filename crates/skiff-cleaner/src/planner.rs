//! The pure planner: which offsets of a log are cleanable now and why the limit is where it is
//! (docs/compaction.md §2.2), how dirty the log is and whether it is overdue (§2.3), which log to
//! clean first (overdue by `max.compaction.lag.ms` first — Skiff's improvement — then the
//! highest dirty ratio above its threshold), and how segments are grouped into output
//! segments (§2.5).
//!
//! No I/O, no clocks, no locks: every function is a function of a [`CleanerView`] and plain
//! numbers, so every rule is unit-tested here. Thread-safe.

use skiff_log::{CleanerView, SegmentInfo};

/// Why the cleanable range ends where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UncleanableReason {
    /// The active segment is never cleaned (it rolls only on append or on Skiff's timer).
    ActiveSegment,
    /// A segment holds a record younger than `min.compaction.lag.ms`.
    MinCompactionLag,
    /// The last stable offset (open transaction, or the high watermark).
    LastStableOffset,
}

impl UncleanableReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UncleanableReason::ActiveSegment => "active segment",
            UncleanableReason::MinCompactionLag => "min.compaction.lag.ms",
            UncleanableReason::LastStableOffset => "last stable offset",
        }
    }
}

/// The planner's verdict on one log at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanablePlan {
    /// Where the next pass starts building its map.
    pub first_dirty_offset: i64,
    /// The checkpoint was missing, below the log start or past the log end: the new
    /// `first_dirty_offset` must be persisted even if no pass runs.
    pub checkpoint_reset: bool,
    /// Exclusive end of the cleanable range; always a segment base offset.
    pub first_uncleanable_offset: i64,
    pub uncleanable_reason: UncleanableReason,
    /// Bytes of segments wholly or partly below `first_dirty_offset`.
    pub clean_bytes: u64,
    /// Bytes of segments from the one holding `first_dirty_offset` up to the limit.
    pub cleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)`, 0 for an empty log.
    pub dirty_ratio: f64,
    /// `(now - max.compaction.lag.ms) - earliest first-batch timestamp` of the dirty
    /// non-active segments: > 0 means overdue by that much, <= 0 the time left. `None` when
    /// no dirty non-active segment has a timestamp.
    pub max_compaction_delay_ms: Option<i64>,
}

impl CleanablePlan {
    /// Kafka's `needCompactionNow`.
    pub fn overdue(&self) -> bool {
        self.max_compaction_delay_ms.is_some_and(|d| d > 0)
    }

    /// Kafka's eligibility: overdue with something to clean, or strictly dirtier than the
    /// topic's `min.cleanable.dirty.ratio`.
    pub fn eligible(&self, min_cleanable_ratio: f64) -> bool {
        (self.overdue() && self.cleanable_bytes > 0) || self.dirty_ratio > min_cleanable_ratio
    }
}

/// §2.2 + §2.3 for one log. `checkpoint` is the stored first dirty offset, if any;
/// `last_stable_offset` bounds the range (the oldest open transaction, else the high watermark).
pub fn plan(
    view: &CleanerView,
    checkpoint: Option<i64>,
    now_ms: i64,
    last_stable_offset: i64,
) -> CleanablePlan {
    let (first_dirty, checkpoint_reset) = match checkpoint {
        None => (view.log_start_offset, true),
        Some(c) if c < view.log_start_offset || c > view.log_end_offset => {
            (view.log_start_offset, true)
        }
        Some(c) => (c, false),
    };
    let segs = &view.segments;
    let non_active_dirty: Vec<&SegmentInfo> = segments_from(segs, first_dirty)
        .filter(|s| !s.is_active && s.base_offset < view.active_base_offset)
        .collect();

    // The smallest bound wins; on a tie the more fundamental reason is reported.
    let mut limit = (last_stable_offset, UncleanableReason::LastStableOffset);
    if view.active_base_offset <= limit.0 {
        limit = (view.active_base_offset, UncleanableReason::ActiveSegment);
    }
    let min_lag = view.config.min_compaction_lag_ms.max(0);
    if min_lag > 0 {
        let too_young_after = now_ms.saturating_sub(min_lag);
        if let Some(s) = non_active_dirty
            .iter()
            .find(|s| s.largest_timestamp > too_young_after)
        {
            if s.base_offset < limit.0 {
                limit = (s.base_offset, UncleanableReason::MinCompactionLag);
            }
        }
    }
    let uncleanable = limit.0.max(first_dirty);
    // Round down to the base of the segment holding it (the active base past the last one).
    let first_uncleanable = segments_from(segs, uncleanable)
        .find(|s| !s.is_active)
        .map(|s| s.base_offset)
        .unwrap_or(view.active_base_offset)
        .min(view.active_base_offset);

    let clean_bytes: u64 = segs
        .iter()
        .filter(|s| s.base_offset < first_dirty)
        .map(|s| s.size)
        .sum();
    let cleanable_bytes: u64 = segments_from(segs, first_dirty.min(first_uncleanable))
        .take_while(|s| s.base_offset < first_uncleanable)
        .map(|s| s.size)
        .sum();
    let total = clean_bytes + cleanable_bytes;
    let dirty_ratio = if total == 0 {
        0.0
    } else {
        cleanable_bytes as f64 / total as f64
    };

    let earliest = non_active_dirty
        .iter()
        .filter_map(|s| s.first_batch_max_timestamp)
        .filter(|&ts| ts > 0)
        .min();
    let max_lag = view.config.max_compaction_lag_ms.max(0);
    let max_compaction_delay_ms =
        earliest.map(|ts| now_ms.saturating_sub(max_lag).saturating_sub(ts));

    CleanablePlan {
        first_dirty_offset: first_dirty,
        checkpoint_reset,
        first_uncleanable_offset: first_uncleanable,
        uncleanable_reason: limit.1,
        clean_bytes,
        cleanable_bytes,
        dirty_ratio,
        max_compaction_delay_ms,
    }
}

/// Segments overlapping `[offset, ∞)`: the one containing `offset` (the last with base <=
/// offset) and every later one — Kafka's `logSegments(from, ...)`.
fn segments_from(segs: &[SegmentInfo], offset: i64) -> impl Iterator<Item = &SegmentInfo> {
    let start = segs
        .partition_point(|s| s.base_offset <= offset)
        .saturating_sub(1);
    segs.iter().skip(start)
}

/// Why a log is picked: Skiff cleans logs past their max-lag deadline first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Urgency {
    /// Past `max.compaction.lag.ms` by this many ms.
    Overdue(i64),
    /// Dirtier than its threshold.
    Dirty(f64),
    /// A tombstone delete horizon has passed (Skiff's idle-log trigger).
    HorizonExpired,
    /// Someone asked for a pass now (`CleanerHandle::compact_now`), whatever the dirty ratio.
    Requested,
}

/// A log's urgency, if it should be cleaned now. `next_horizon_ms` is the earliest delete
/// horizon of its retained tombstones (from the last pass), if any.
pub fn urgency(
    plan: &CleanablePlan,
    min_cleanable_ratio: f64,
    now_ms: i64,
    next_horizon_ms: Option<i64>,
) -> Option<Urgency> {
    if plan.overdue() && plan.cleanable_bytes > 0 {
        return plan.max_compaction_delay_ms.map(Urgency::Overdue);
    }
    if plan.dirty_ratio > min_cleanable_ratio {
        return Some(Urgency::Dirty(plan.dirty_ratio));
    }
    if next_horizon_ms.is_some_and(|h| h <= now_ms) {
        return Some(Urgency::HorizonExpired);
    }
    None
}

/// Index of the candidate to clean first: a requested one, else the most overdue, else the highest ratio, else a
/// log whose horizon expired. Ties go to the earlier candidate.
pub fn choose(candidates: &[Urgency]) -> Option<usize> {
    let rank = |u: &Urgency| match *u {
        Urgency::Overdue(d) => (2, d as f64),
        Urgency::Dirty(r) => (1, r),
        Urgency::HorizonExpired => (0, 0.0),
        Urgency::Requested => (3, 0.0),
    };
    let mut best: Option<(usize, (i32, f64))> = None;
    for (i, u) in candidates.iter().enumerate() {
        let r = rank(u);
        if best.is_none_or(|(_, b)| r.0 > b.0 || (r.0 == b.0 && r.1 > b.1)) {
            best = Some((i, r));
        }
    }
    best.map(|(i, _)| i)
}

/// Bytes of one offset index entry and one time index entry (Kafka's formats).
const OFFSET_INDEX_ENTRY: u64 = 8;
const TIME_INDEX_ENTRY: u64 = 12;

/// §2.5: splits `segments` (consecutive, oldest first) into groups that each become one
/// output segment: total size <= `segment.bytes`, each index <= `segment.index.bytes`, and the
/// group's offsets within a 32-bit relative offset (skipped for an empty next segment,
/// KAFKA-12889). Returns groups of base offsets.
pub fn group_segments(
    segments: &[SegmentInfo],
    max_size: u64,
    max_index_size: u64,
    first_uncleanable_offset: i64,
) -> Vec<Vec<i64>> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let first = &segments[i];
        let mut group = vec![first.base_offset];
        let mut size = first.size;
        let mut index = first.index_entries as u64 * OFFSET_INDEX_ENTRY;
        let mut time_index = first.time_index_entries as u64 * TIME_INDEX_ENTRY;
        i += 1;
        while let Some(next) = segments.get(i) {
            // Last offset the next segment can hold: just below the one after it.
            let next_last = segments
                .get(i + 1)
                .map(|s| s.base_offset - 1)
                .unwrap_or(first_uncleanable_offset - 1);
            let fits = size + next.size <= max_size
                && index + next.index_entries as u64 * OFFSET_INDEX_ENTRY <= max_index_size
                && time_index + next.time_index_entries as u64 * TIME_INDEX_ENTRY <= max_index_size
                && (next.size == 0 || next_last - first.base_offset <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            group.push(next.base_offset);
            size += next.size;
            index += next.index_entries as u64 * OFFSET_INDEX_ENTRY;
            time_index += next.time_index_entries as u64 * TIME_INDEX_ENTRY;
            i += 1;
        }
        groups.push(group);
    }
    groups
}

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
