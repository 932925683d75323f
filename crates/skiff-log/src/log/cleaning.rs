//! The log's side of cleaning (the types are in the crate's `cleaning.rs`): the planning view,
//! a reader of one segment's batches and the writer of a cleaned segment in this log's
//! directory. The swap itself is in `swap.rs`.
//!
//! Thread-safety: `cleaner_view` takes the append lock briefly (a consistent segment list);
//! the reader and the writer work on their own handles without the log's locks.

use super::Log;
use crate::cleaning::{CleanedSegmentWriter, CleanerView, SegmentBatches, SegmentInfo};
use crate::error::{LogError, Result};
use crate::segment::{read_guard, Segment};

fn segment_info(seg: &Segment, is_active: bool) -> SegmentInfo {
    let st = read_guard(&seg.state);
    SegmentInfo {
        base_offset: seg.base_offset,
        id: seg.id,
        next_offset: st.next_offset,
        size: st.size,
        largest_timestamp: if st.max_timestamp >= 0 {
            st.max_timestamp
        } else {
            st.last_modified_ms
        },
        first_batch_max_timestamp: st.rolling_base_ts,
        index_entries: st.index.len(),
        time_index_entries: st.time_index.len(),
        is_active,
    }
}

impl Log {
    /// A consistent snapshot of the segments for the cleaner's planner.
    pub fn cleaner_view(&self) -> CleanerView {
        let config = self.config();
        let inner = self.lock();
        let n = inner.segments.len();
        let segments: Vec<SegmentInfo> = inner
            .segments
            .iter()
            .enumerate()
            .map(|(i, s)| segment_info(s, i + 1 == n))
            .collect();
        CleanerView {
            log_start_offset: inner.log_start,
            log_end_offset: inner.leo,
            active_base_offset: inner.segments.last().map(|s| s.base_offset).unwrap_or(0),
            segments,
            config,
        }
    }

    /// Sequential reader of the whole batches of one segment, in file order, reading at most
    /// `buffer_size` bytes at a time (more when one batch is larger). `SegmentGone` when no
    /// segment has this base offset any more.
    pub fn segment_batches(&self, base_offset: i64, buffer_size: usize) -> Result<SegmentBatches> {
        let snap = self.snapshot();
        let seg = snap
            .segments
            .iter()
            .find(|s| s.base_offset == base_offset)
            .cloned()
            .ok_or_else(|| {
                LogError::SegmentGone(format!(
                    "{} has no segment with base offset {base_offset}",
                    self.dir.display()
                ))
            })?;
        Ok(SegmentBatches::new(seg, buffer_size))
    }

    /// [`SegmentInfo::id`] of the segment now at `base_offset`, if there is one.
    pub fn segment_id(&self, base_offset: i64) -> Option<u64> {
        self.snapshot()
            .segments
            .iter()
            .find(|s| s.base_offset == base_offset)
            .map(|s| s.id)
    }

    /// Starts a cleaned replacement for the segments starting at `base_offset`: files
    /// `<base>.log.cleaned`, `<base>.index.cleaned`, `<base>.timeindex.cleaned` in the log
    /// directory (stale ones are overwritten).
    pub fn cleaned_segment_writer(&self, base_offset: i64) -> Result<CleanedSegmentWriter> {
        CleanedSegmentWriter::create(
            &self.dir,
            base_offset,
            self.config_arc(),
            self.clock.now_ms(),
        )
    }
}
