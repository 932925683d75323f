//! Unit tests of the planner: every rule of docs/compaction.md §2.2, §2.3 and §2.5, including the
//! strictness of each comparison.

use super::*;
use skiff_log::LogConfig;

fn seg(base: i64, next: i64, size: u64, largest_ts: i64, first_ts: Option<i64>) -> SegmentInfo {
    SegmentInfo {
        id: 0,
        base_offset: base,
        next_offset: next,
        size,
        largest_timestamp: largest_ts,
        first_batch_max_timestamp: first_ts,
        index_entries: 0,
        time_index_entries: 0,
        is_active: false,
    }
}

/// Segments [0,10) [10,20) [20,30) and active [30,35), 100 bytes each, timestamps = base.
fn view() -> CleanerView {
    let mut segments: Vec<SegmentInfo> = (0..4)
        .map(|i| seg(i * 10, i * 10 + 10, 100, i * 10 + 9, Some(i * 10)))
        .collect();
    segments[3].next_offset = 35;
    segments[3].is_active = true;
    let mut config = LogConfig::default();
    config.cleanup_policy.compact = true;
    CleanerView {
        log_start_offset: 0,
        log_end_offset: 35,
        active_base_offset: 30,
        segments,
        config,
    }
}

#[test]
fn first_dirty_from_checkpoint_or_log_start() {
    let v = view();
    let p = plan(&v, None, 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (0, true));
    let p = plan(&v, Some(15), 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (15, false));
    // Exactly at the log end is still valid.
    let p = plan(&v, Some(35), 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (35, false));
}

#[test]
fn checkpoint_below_start_or_past_end_resets() {
    let mut v = view();
    v.log_start_offset = 12;
    let p = plan(&v, Some(11), 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (12, true));
    let p = plan(&v, Some(12), 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (12, false));
    let p = plan(&v, Some(36), 1000, 35);
    assert_eq!((p.first_dirty_offset, p.checkpoint_reset), (12, true));
}

#[test]
fn active_segment_bounds_the_range() {
    let p = plan(&view(), Some(0), 1000, 35);
    assert_eq!(p.first_uncleanable_offset, 30);
    assert_eq!(p.uncleanable_reason, UncleanableReason::ActiveSegment);
    assert_eq!((p.clean_bytes, p.cleanable_bytes), (0, 300));
    assert_eq!(p.dirty_ratio, 1.0);
}

#[test]
fn empty_active_segment_still_reported_as_active() {
    let mut v = view();
    v.segments[3].next_offset = 30;
    v.log_end_offset = 30;
    let p = plan(&v, Some(0), 1000, 30);
    assert_eq!(p.first_uncleanable_offset, 30);
    assert_eq!(p.uncleanable_reason, UncleanableReason::ActiveSegment);
}

#[test]
fn lso_rounds_down_to_its_segment() {
    let p = plan(&view(), Some(0), 1000, 25);
    assert_eq!(p.first_uncleanable_offset, 20);
    assert_eq!(p.uncleanable_reason, UncleanableReason::LastStableOffset);
    // LSO exactly on a boundary: that segment is not touched either.
    let p = plan(&view(), Some(0), 1000, 20);
    assert_eq!(p.first_uncleanable_offset, 20);
    assert_eq!(p.cleanable_bytes, 200);
}

#[test]
fn min_lag_uses_largest_timestamp_strictly() {
    let mut v = view();
    v.config.min_compaction_lag_ms = 100;
    // Segment [10,20) has largest timestamp 19: too young while 19 > now - 100.
    let p = plan(&v, Some(0), 118, 35);
    assert_eq!(p.first_uncleanable_offset, 10);
    assert_eq!(p.uncleanable_reason, UncleanableReason::MinCompactionLag);
    // 19 > 119 - 100 is false: old enough, the limit moves to [20,30) (29 > 19).
    let p = plan(&v, Some(0), 119, 35);
    assert_eq!(p.first_uncleanable_offset, 20);
    let p = plan(&v, Some(0), 1000, 35);
    assert_eq!(p.uncleanable_reason, UncleanableReason::ActiveSegment);
}

#[test]
fn min_lag_zero_ignores_young_segments() {
    let p = plan(&view(), Some(0), 0, 35);
    assert_eq!(p.first_uncleanable_offset, 30);
}

#[test]
fn min_lag_only_looks_from_first_dirty() {
    let mut v = view();
    v.config.min_compaction_lag_ms = 100;
    v.segments[0].largest_timestamp = 10_000; // young, but already clean
    let p = plan(&v, Some(10), 1000, 35);
    assert_eq!(p.first_uncleanable_offset, 30);
}

#[test]
fn limit_clamped_to_first_dirty() {
    let p = plan(&view(), Some(25), 1000, 12);
    assert_eq!(p.first_dirty_offset, 25);
    assert_eq!(p.first_uncleanable_offset, 20);
    assert_eq!(p.cleanable_bytes, 0);
}

#[test]
fn partly_cleaned_segment_counts_on_both_sides() {
    let p = plan(&view(), Some(15), 1000, 35);
    assert_eq!(p.clean_bytes, 200); // [0,10) and [10,20) (base 10 < 15)
    assert_eq!(p.cleanable_bytes, 200); // [10,20) and [20,30)
    assert!((p.dirty_ratio - 0.5).abs() < 1e-12);
}

#[test]
fn dirty_ratio_comparison_is_strict() {
    let p = plan(&view(), Some(15), 1000, 35);
    assert!(!p.eligible(0.5));
    assert!(p.eligible(0.49));
    let clean = plan(&view(), Some(30), 1000, 35);
    assert_eq!(clean.cleanable_bytes, 0);
    assert!(!clean.eligible(0.0), "ratio 0 is not > 0");
    assert!(p.eligible(0.0));
}

#[test]
fn empty_log_has_ratio_zero() {
    let mut v = view();
    v.segments = vec![seg(0, 0, 0, -1, None)];
    v.segments[0].is_active = true;
    v.active_base_offset = 0;
    v.log_end_offset = 0;
    let p = plan(&v, None, 1000, 0);
    assert_eq!(p.dirty_ratio, 0.0);
    assert!(!p.eligible(0.0));
}

#[test]
fn max_lag_delay_and_strictness() {
    let mut v = view();
    v.config.max_compaction_lag_ms = 100;
    // Earliest dirty non-active first-batch timestamp from offset 10 is 10.
    let p = plan(&v, Some(10), 110, 35);
    assert_eq!(p.max_compaction_delay_ms, Some(0));
    assert!(!p.overdue(), "delay must be > 0");
    let p = plan(&v, Some(10), 111, 35);
    assert_eq!(p.max_compaction_delay_ms, Some(1));
    assert!(p.overdue());
    assert!(p.eligible(0.99));
    let p = plan(&v, Some(10), 50, 35);
    assert_eq!(p.max_compaction_delay_ms, Some(-60), "time left");
}

#[test]
fn max_lag_ignores_non_positive_timestamps_and_active_segment() {
    let mut v = view();
    v.config.max_compaction_lag_ms = 100;
    for s in v.segments.iter_mut().take(3) {
        s.first_batch_max_timestamp = Some(0);
    }
    let p = plan(&v, Some(0), 10_000, 35);
    assert_eq!(
        p.max_compaction_delay_ms, None,
        "active segment's timestamp is not used"
    );
    assert!(!p.overdue());
}

#[test]
fn overdue_without_cleanable_bytes_not_eligible() {
    let mut v = view();
    v.config.max_compaction_lag_ms = 1;
    // LSO at 0 leaves nothing cleanable, yet [0,10) is dirty and old.
    let p = plan(&v, Some(0), 10_000, 0);
    assert!(p.overdue());
    assert_eq!(p.cleanable_bytes, 0);
    assert!(!p.eligible(0.5));
    assert_eq!(urgency(&p, 0.5, 10_000, None), None);
}

#[test]
fn default_max_lag_never_overdue() {
    let p = plan(&view(), Some(0), i64::MAX, 35);
    assert!(!p.overdue());
}

#[test]
fn overdue_logs_beat_dirtier_ones() {
    let us = [
        Urgency::Dirty(0.9),
        Urgency::Overdue(5),
        Urgency::HorizonExpired,
        Urgency::Overdue(50),
        Urgency::Dirty(0.95),
    ];
    assert_eq!(choose(&us), Some(3));
    assert_eq!(choose(&us[..1]), Some(0));
    assert_eq!(choose(&[Urgency::Dirty(0.6), Urgency::Dirty(0.7)]), Some(1));
    assert_eq!(
        choose(&[Urgency::HorizonExpired, Urgency::Dirty(0.1)]),
        Some(1)
    );
    assert_eq!(choose(&[]), None);
}

#[test]
fn horizon_expiry_makes_a_clean_log_urgent() {
    let p = plan(&view(), Some(30), 1000, 35);
    assert_eq!(urgency(&p, 0.5, 1000, Some(1001)), None);
    assert_eq!(
        urgency(&p, 0.5, 1000, Some(1000)),
        Some(Urgency::HorizonExpired)
    );
    assert_eq!(urgency(&p, 0.5, 1000, None), None);
}

#[test]
fn grouping_by_log_size() {
    let segs: Vec<SegmentInfo> = (0..5)
        .map(|i| seg(i * 10, i * 10 + 10, 40, 0, None))
        .collect();
    assert_eq!(
        group_segments(&segs, 80, 1 << 20, 50),
        vec![vec![0, 10], vec![20, 30], vec![40]]
    );
    // Exactly at the limit still fits.
    assert_eq!(
        group_segments(&segs, 120, 1 << 20, 50),
        vec![vec![0, 10, 20], vec![30, 40]]
    );
    assert_eq!(group_segments(&segs, 10, 1 << 20, 50).len(), 5);
    assert!(group_segments(&[], 10, 10, 0).is_empty());
}

#[test]
fn grouping_by_index_sizes() {
    let mut segs: Vec<SegmentInfo> = (0..3)
        .map(|i| seg(i * 10, i * 10 + 10, 1, 0, None))
        .collect();
    for s in &mut segs {
        s.index_entries = 2; // 16 bytes
    }
    assert_eq!(
        group_segments(&segs, 1 << 20, 32, 30),
        vec![vec![0, 10], vec![20]]
    );
    for s in &mut segs {
        s.index_entries = 0;
        s.time_index_entries = 2; // 24 bytes
    }
    assert_eq!(
        group_segments(&segs, 1 << 20, 48, 30),
        vec![vec![0, 10], vec![20]]
    );
}

#[test]
fn grouping_by_relative_offset_range() {
    let max = i64::from(i32::MAX);
    let segs = vec![
        seg(0, 10, 10, 0, None),
        seg(max - 5, max, 10, 0, None),
        seg(max + 1, max + 3, 10, 0, None),
    ];
    // [0..] + [max-5, max+1): last offset max <= max fits; adding the third (to max+9) does not.
    assert_eq!(
        group_segments(&segs, 1 << 20, 1 << 20, max + 10),
        vec![vec![0, max - 5], vec![max + 1]]
    );
    // An empty next segment skips the check (KAFKA-12889).
    let mut segs = segs;
    segs[2].size = 0;
    assert_eq!(
        group_segments(&segs, 1 << 20, 1 << 20, max + 10),
        vec![vec![0, max - 5, max + 1]]
    );
}
