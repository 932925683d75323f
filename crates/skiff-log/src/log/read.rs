//! Lock-free reads of a partition log: fetch (whole batches from an offset up to a byte
//! budget), ListOffsets by timestamp and MAX_TIMESTAMP.
//!
//! Thread-safety: every function here works on a `Snapshot` (Arc'd segment list + offsets)
//! taken at entry, and reads segment files with positioned reads; the append lock is never
//! taken. Bytes below a segment's published size never change, and batches at or above the
//! snapshot's log end offset are never returned.

use super::{Log, ReadInfo, Snapshot};
use crate::error::{LogError, Result};
use crate::segment::{read_guard, Segment};
use crate::validate::MAX_DECOMPRESSED_BATCH;
use skiff_records::{records, BatchHeader, Batches, TimestampType};

impl Log {
    /// Whole batches starting with the one containing `offset`, up to `max_bytes` in total,
    /// continuing across segments. If the first batch alone is larger than `max_bytes` it is
    /// returned whole when `min_one_batch`, else nothing is. `offset == LEO` reads nothing.
    pub fn read(&self, offset: i64, max_bytes: usize, min_one_batch: bool) -> Result<ReadInfo> {
        self.read_isolated(offset, max_bytes, min_one_batch, false)
    }

    /// Like [`Log::read`]; with `read_committed` nothing at or above the last stable offset is
    /// returned (it always lies on a batch boundary: an open transaction's first batch, or the
    /// log end).
    pub fn read_isolated(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
    ) -> Result<ReadInfo> {
        let snap = self.snapshot();
        let lso = snap.first_unstable.map_or(snap.leo, |f| f.min(snap.leo));
        let upper = if read_committed { lso } else { snap.leo };
        if offset < snap.log_start || offset > snap.leo {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start: snap.log_start,
                log_end: snap.leo,
            });
        }
        let mut out: Vec<u8> = Vec::new();
        if offset < upper {
            read_into(&snap, offset, upper, max_bytes, min_one_batch, &mut out)?;
        }
        Ok(ReadInfo {
            records: bytes::Bytes::from(out),
            high_watermark: snap.leo,
            log_start_offset: snap.log_start,
            log_end_offset: snap.leo,
            last_stable_offset: lso,
        })
    }

    /// ListOffsets by timestamp: the first record (offset >= log start) whose timestamp is
    /// >= `ts`, as (offset, timestamp); None when there is none.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>> {
        let snap = self.snapshot();
        for seg in snap.segments.iter() {
            if seg.max_timestamp() < ts || seg.next_offset() <= snap.log_start {
                continue;
            }
            let start = read_guard(&seg.state).time_index.start_offset_for(ts);
            let found = scan_records(seg, &snap, start, snap.log_start, |h, rec_ts, _| {
                h.max_timestamp >= ts && rec_ts >= ts
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// ListOffsets MAX_TIMESTAMP: the record with the largest timestamp (the first one on a
    /// tie) as (timestamp, offset); None for an empty log or one without timestamps.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>> {
        let snap = self.snapshot();
        let mut best: Option<(&std::sync::Arc<Segment>, i64, i64)> = None;
        for seg in snap.segments.iter() {
            let (max, at) = {
                let st = read_guard(&seg.state);
                (st.max_timestamp, st.offset_of_max_timestamp)
            };
            if max >= 0 && best.is_none_or(|(_, b, _)| max > b) {
                best = Some((seg, max, at));
            }
        }
        let Some((seg, max, at)) = best else {
            return Ok(None);
        };
        // `at` is the last offset of the first batch reaching `max`: start from its batch.
        let start = seg.base_offset.max(at).max(snap.log_start);
        let found = scan_records(seg, &snap, start, snap.log_start, |h, rec_ts, _| {
            h.max_timestamp == max && rec_ts == max
        })?;
        Ok(found.map(|(off, ts)| (ts, off)))
    }
}

/// Appends whole batches from `offset` (stopping before `upper`) to `out`; see [`Log::read`].
fn read_into(
    snap: &Snapshot,
    offset: i64,
    upper: i64,
    max_bytes: usize,
    min_one_batch: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    let first = snap
        .segments
        .partition_point(|s| s.base_offset <= offset)
        .saturating_sub(1);
    for seg in snap.segments.iter().skip(first) {
        let size = seg.size();
        let Some((pos, first_h)) = seg.find_position(offset, size)? else {
            continue;
        };
        if first_h.base_offset >= upper {
            return Ok(());
        }
        let avail = size - pos;
        let budget = max_bytes.saturating_sub(out.len()) as u64;
        let want = usize::try_from(avail.min(budget)).unwrap_or(usize::MAX);
        let mut buf = seg.read_exact(pos, want)?;
        let mut it = Batches::new(&buf);
        let mut end = 0usize;
        let mut reached_leo = false;
        while let Some(item) = it.next() {
            match item {
                Ok((h, _)) if h.base_offset >= upper => {
                    reached_leo = true;
                    break;
                }
                Ok(_) => {}
                Err(e) if out.is_empty() && end == 0 => {
                    return Err(LogError::CorruptMessage(format!(
                        "{} at position {pos}: {e}",
                        seg.log_path().display()
                    )))
                }
                Err(_) => break,
            }
            end = it.position();
        }
        if end == 0 {
            if out.is_empty() && min_one_batch {
                out.extend_from_slice(&seg.read_exact(pos, first_h.total_size())?);
            }
            return Ok(());
        }
        if out.is_empty() {
            // The common case, one segment: the read buffer becomes the answer, uncopied.
            buf.truncate(end);
            *out = buf;
        } else {
            out.extend_from_slice(buf.get(..end).unwrap_or(&[]));
        }
        if reached_leo || (end as u64) < avail {
            return Ok(());
        }
    }
    Ok(())
}

/// Scans the batches of `seg` from the one containing `start`, decoding records of batches
/// for which a record may match, and returns the first record (offset >= `min_offset`) for which
/// `matches(batch header, record timestamp, record offset)` holds, as (offset, timestamp).
fn scan_records(
    seg: &Segment,
    snap: &Snapshot,
    start: i64,
    min_offset: i64,
    matches: impl Fn(&BatchHeader, i64, i64) -> bool,
) -> Result<Option<(i64, i64)>> {
    let size = seg.size();
    let Some((mut pos, _)) = seg.find_position(start, size)? else {
        return Ok(None);
    };
    while let Some(h) = seg.header_at(pos, size)? {
        if h.base_offset >= snap.leo {
            break;
        }
        // A batch-level pre-check with the max timestamp avoids decoding most batches.
        if h.last_offset() >= min_offset && matches(&h, h.max_timestamp, h.last_offset()) {
            let batch = seg.read_exact(pos, h.total_size())?;
            let recs = records(&batch, MAX_DECOMPRESSED_BATCH).map_err(|e| {
                LogError::CorruptMessage(format!(
                    "{} at position {pos}: {e}",
                    seg.log_path().display()
                ))
            })?;
            for r in &recs {
                let off = h.base_offset + i64::from(r.offset_delta);
                let ts = match h.timestamp_type() {
                    TimestampType::LogAppendTime => h.max_timestamp,
                    TimestampType::CreateTime => h.base_timestamp.saturating_add(r.timestamp_delta),
                };
                if off >= min_offset && matches(&h, ts, off) {
                    return Ok(Some((off, ts)));
                }
            }
        }
        pos += h.total_size() as u64;
    }
    Ok(None)
}
