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
        self.read_with(offset, max_bytes, min_one_batch, read_committed, false)
            .map(|(info, _)| info)
    }

    /// [`Log::read_isolated`] for a reader that can send file ranges as they are (sendfile on
    /// a plaintext socket): the same batches, left in their segment files when they are large
    /// (the `FileRecords`, with `ReadInfo::records` empty), else read into memory as
    /// `read_isolated` does.
    pub fn read_in_place(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
    ) -> Result<(ReadInfo, Option<FileRecords>)> {
        self.read_with(offset, max_bytes, min_one_batch, read_committed, true)
    }

    fn read_with(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
        in_place: bool,
    ) -> Result<(ReadInfo, Option<FileRecords>)> {
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
        let mut info = ReadInfo {
            records: bytes::Bytes::new(),
            high_watermark: snap.leo,
            log_start_offset: snap.log_start,
            log_end_offset: snap.leo,
            last_stable_offset: lso,
        };
        if offset >= upper {
            return Ok((info, None));
        }
        if in_place {
            if let Some(files) = file_ranges(&snap, offset, upper, max_bytes, min_one_batch)? {
                return Ok((info, Some(files)));
            }
        }
        let mut out: Vec<u8> = Vec::new();
        read_into(&snap, offset, upper, max_bytes, min_one_batch, &mut out)?;
        info.records = bytes::Bytes::from(out);
        Ok((info, None))
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

/// Batches whose headers are walked one positioned read each: a read that would need more
/// is of small batches, cheaper to copy than to walk.
const MAX_HEADER_READS: usize = 128;

/// A first batch smaller than this is read into memory: sending small batches from the file
/// would save little and cost a header read per batch.
const IN_PLACE_MIN_BATCH: usize = 4096;

/// Whole batches left in segment files: the ranges, in order, hold exactly the batches
/// [`Log::read_isolated`] would return.
#[derive(Clone, Debug)]
pub struct FileRecords {
    pub ranges: Vec<FileRange>,
    /// Total bytes of the ranges.
    pub len: usize,
    /// Records in the batches (their header counts).
    pub record_count: u64,
}

/// `len` bytes at `pos` of a segment file, through a handle that stays valid if the segment
/// is deleted or cleaned meanwhile (those bytes never change while the segment lives).
#[derive(Clone, Debug)]
pub struct FileRange {
    pub file: std::sync::Arc<std::fs::File>,
    pub pos: u64,
    pub len: usize,
}

/// The batches [`read_into`] would copy, found by walking their headers instead: `None`
/// when they are small (see [`IN_PLACE_MIN_BATCH`], [`MAX_HEADER_READS`]) or a header past
/// the first does not parse (the copying read decides where such a read stops).
fn file_ranges(
    snap: &Snapshot,
    offset: i64,
    upper: i64,
    max_bytes: usize,
    min_one_batch: bool,
) -> Result<Option<FileRecords>> {
    let first = snap
        .segments
        .partition_point(|s| s.base_offset <= offset)
        .saturating_sub(1);
    let mut out = FileRecords {
        ranges: Vec::new(),
        len: 0,
        record_count: 0,
    };
    let mut header_reads = 0usize;
    for seg in snap.segments.iter().skip(first) {
        let size = seg.size();
        let Some((pos, first_h)) = seg.find_position(offset, size)? else {
            continue;
        };
        if out.len == 0 && first_h.total_size() < IN_PLACE_MIN_BATCH {
            return Ok(None);
        }
        let mut at = pos;
        let mut next = Some(first_h);
        let mut stopped = false;
        while let Some(h) = next {
            let end = at + h.total_size() as u64;
            if h.base_offset >= upper || end > size {
                stopped = true;
                break;
            }
            let taken = out.len + usize::try_from(end - pos).unwrap_or(usize::MAX);
            if taken > max_bytes {
                // KIP-74: the very first batch goes out whole even over the budget.
                if out.len == 0 && at == pos && min_one_batch {
                    out.record_count += u64::try_from(h.record_count).unwrap_or(0);
                    at = end;
                }
                stopped = true;
                break;
            }
            out.record_count += u64::try_from(h.record_count).unwrap_or(0);
            at = end;
            header_reads += 1;
            if header_reads > MAX_HEADER_READS {
                return Ok(None);
            }
            next = match seg.header_at(at, size) {
                Ok(h) => h,
                Err(_) => return Ok(None),
            };
        }
        if at > pos {
            let len = usize::try_from(at - pos).unwrap_or(usize::MAX);
            out.ranges.push(FileRange {
                file: seg.log_file()?,
                pos,
                len,
            });
            out.len += len;
        }
        if stopped || at < size {
            break;
        }
    }
    Ok(Some(out))
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
