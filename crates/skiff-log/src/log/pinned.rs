//! A pinned view of one partition for long reads (table snapshots of compacted topics,
//! `docs/snapshots.md`): the segment list, log start, an end offset and the aborted
//! transactions, all frozen at the moment [`Log::pin`] is called, plus a sequential reader of
//! every whole batch of `[log start, end)` in that frozen view.
//!
//! Why holding the view is enough to pin: a segment is an `Arc<Segment>` owning its open
//! `.log` file. A cleaner swap renames the segments it replaces to `.deleted` and unlinks them;
//! retention unlinks whole segments. Neither touches the bytes of a segment that is still
//! referenced: the open handle keeps the inode readable (POSIX unlink semantics), the
//! in-memory offset index stays with the `Segment`, and bytes below a segment's size as of the
//! pin never change. So every read through one `PinnedLog` sees exactly the data as of the
//! pin, however many times it is read, whatever the cleaner and retention do meanwhile. The
//! cost: disk space of replaced or deleted segments is released only when the last view
//! holding them is dropped.
//!
//! Thread-safety: `Log::pin` reads the published reader snapshot (no append lock). A
//! `PinnedLog` is immutable, `Send + Sync`, and may be read from any number of threads; each
//! [`PinnedBatches`] is owned by one reader.

use super::Log;
use crate::cleaning::SegmentBatches;
use crate::error::Result;
use crate::segment::Segment;
use crate::txn_index::AbortedTxn;
use bytes::Bytes;
use skiff_records::BatchHeader;
use std::sync::Arc;

/// One partition frozen at [`Log::pin`]; see the module docs.
#[derive(Clone)]
pub struct PinnedLog {
    /// Segments overlapping `[log_start, end)` with their size at the pin.
    segments: Vec<(Arc<Segment>, u64)>,
    log_start: i64,
    end: i64,
    high_watermark: i64,
    last_stable: i64,
    read_committed: bool,
    aborted: Arc<Vec<AbortedTxn>>,
}

impl Log {
    /// Freezes the current view of the log. The end offset is the high watermark, or with
    /// `read_committed` the last stable offset (it lies on a batch boundary: an open
    /// transaction's first batch, or the log end), exactly what a fetch with that isolation
    /// level would stop at right now.
    pub fn pin(&self, read_committed: bool) -> PinnedLog {
        let snap = self.snapshot();
        let lso = snap.first_unstable.map_or(snap.leo, |f| f.min(snap.leo));
        let end = if read_committed { lso } else { snap.leo };
        let segments = snap
            .segments
            .iter()
            .filter(|s| s.base_offset < end && s.next_offset() > snap.log_start)
            .map(|s| (s.clone(), s.size()))
            .collect();
        PinnedLog {
            segments,
            log_start: snap.log_start,
            end,
            high_watermark: snap.leo,
            last_stable: lso,
            read_committed,
            aborted: snap.aborted.clone(),
        }
    }
}

impl PinnedLog {
    /// The log start offset at the pin: no batch below it is returned.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start
    }

    /// The exclusive end of the view (HW or LSO, as asked at the pin).
    pub fn end_offset(&self) -> i64 {
        self.end
    }

    /// Whether the view ends at the last stable offset (aborted data must then be skipped by
    /// the reader, through [`PinnedLog::aborted_txns`]).
    pub fn read_committed(&self) -> bool {
        self.read_committed
    }

    /// The high watermark at the pin.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The last stable offset at the pin.
    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable
    }

    /// The aborted transactions indexed at the pin (ordered by marker offset). Every
    /// transaction with data below the last stable offset is decided, so under
    /// `read_committed` this list tells every aborted batch of the view.
    pub fn aborted_txns(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// Bytes of the pinned segments (an upper bound of what one read of the view costs).
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|(_, size)| size).sum()
    }

    /// Number of pinned segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Every whole batch overlapping `[log start, end)`, in offset order, read `buffer_size`
    /// bytes at a time (more when one batch is larger). May be called any number of times;
    /// each reader sees the same bytes.
    pub fn batches(&self, buffer_size: usize) -> PinnedBatches {
        PinnedBatches {
            segments: self.segments.clone(),
            next_segment: 0,
            current: None,
            buffer_size,
            log_start: self.log_start,
            end: self.end,
            bytes_read: 0,
            done: false,
        }
    }
}

/// The reader made by [`PinnedLog::batches`]: `(header, whole batch bytes)`; stops after the
/// first error.
pub struct PinnedBatches {
    segments: Vec<(Arc<Segment>, u64)>,
    next_segment: usize,
    current: Option<SegmentBatches>,
    buffer_size: usize,
    log_start: i64,
    end: i64,
    bytes_read: u64,
    done: bool,
}

impl PinnedBatches {
    /// Bytes of the batches returned so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

impl Iterator for PinnedBatches {
    type Item = Result<(BatchHeader, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let Some(reader) = self.current.as_mut() else {
                let Some((seg, size)) = self.segments.get(self.next_segment) else {
                    self.done = true;
                    return None;
                };
                self.current = Some(SegmentBatches::with_limit(
                    seg.clone(),
                    self.buffer_size,
                    *size,
                ));
                self.next_segment += 1;
                continue;
            };
            match reader.next() {
                None => self.current = None,
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Some(Ok((h, bytes))) => {
                    if h.base_offset >= self.end {
                        // Offsets only grow: nothing further in the view.
                        self.done = true;
                        return None;
                    }
                    if h.last_offset() < self.log_start {
                        continue;
                    }
                    self.bytes_read += bytes.len() as u64;
                    return Some(Ok((h, bytes)));
                }
            }
        }
        None
    }
}
