//! Table snapshots of compacted topics (issue 16, `docs/snapshots.md`): one record per live
//! key of a partition, as of an end offset fixed when the partition was pinned, computed with
//! the cleaner's bounded [`OffsetMap`] so memory stays bounded whatever the partition's size.
//!
//! The answer for a pinned view `[log start, E)`: for each key, its last record in the view
//! (control batches never count; with `read_committed`, neither do the data batches of aborted
//! transactions), emitted when that record is not a tombstone. Keyless records are skipped
//! (a compacted topic refuses them on produce; only data written before the topic became
//! compacted can have none).
//!
//! How: the 64-bit key hash space is cut into *slices*. Per slice, one scan of the view builds
//! key → last offset for the keys of the slice, a second scan emits each record of the slice
//! whose offset is its key's last and whose value is not null. A slice starts as the whole
//! hash space; when its map fills, the slice is halved and the build starts again on the lower
//! half (the upper half waits its turn), so a partition with more keys than the budget holds
//! costs about `2 × slices + log2(slices)` scans, and one that fits costs two. Records come in
//! offset order within a slice; with several slices, slice after slice (ascending hash range).
//!
//! Consistency: both scans of every slice read the same [`PinnedLog`], whose segments stay
//! readable whatever the cleaner or retention do meanwhile (see `skiff_log::PinnedLog`), so
//! every slice sees exactly the same bytes and the union of the slices is the answer as of
//! the pin.
//!
//! Thread-safety: pure computation over one pinned view, run on the caller's thread (a
//! blocking thread in the broker); nothing is shared.

use crate::filter::{aborted_ranges, is_aborted, AbortedRanges};
use crate::offset_map::{Lookup, OffsetMap};
use crate::pass::MAX_DECOMPRESSED_BATCH;
use bytes::Bytes;
use skiff_log::{LogError, PinnedLog};
use skiff_records::{records, BatchHeader, RecordsError, TimestampType};
use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Load factor of the snapshot's map: the cleaner's default (Kafka's 0.9).
const LOAD_FACTOR: f64 = 0.9;
/// Seed of the slice hash, distinct from the map's own hash so the two are independent.
const SLICE_SEED: u64 = 0x5eed_51ce;
/// Hash space size (slices are ranges of `[0, 2^64)`).
const HASH_SPACE: u128 = 1 << 64;

/// How a snapshot reads and how much memory its map may use.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotLimits {
    /// Bound of the key → offset map (slots and key arena), `skiff.snapshot.memory.bytes`.
    pub memory_bytes: u64,
    /// Bytes read from a segment at a time.
    pub io_buffer_size: usize,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        SnapshotLimits {
            memory_bytes: 32 << 20,
            io_buffer_size: 512 << 10,
        }
    }
}

/// One live key's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRecord {
    pub offset: i64,
    /// The record's timestamp (the batch's for LogAppendTime).
    pub timestamp: i64,
    pub key: Bytes,
    pub value: Bytes,
    /// Header key (UTF-8 by Kafka's contract, kept as stored) and value (None = null).
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

/// Figures of one partition's snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Slices the hash space ended up cut into.
    pub slices: u32,
    /// Map builds abandoned because the map filled (each costs part of a scan).
    pub restarts: u32,
    /// Records emitted (live keys).
    pub records: u64,
    /// Batch bytes read over all scans.
    pub bytes_read: u64,
    /// Bytes of the pinned view (one scan).
    pub view_bytes: u64,
}

/// Why a snapshot stopped.
#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("log error: {0}")]
    Log(#[from] LogError),

    #[error("corrupt batch at offset {offset}: {source}")]
    Corrupt {
        offset: i64,
        #[source]
        source: RecordsError,
    },

    /// Two distinct keys share the map's 128-bit hash: the map can not tell which record is
    /// each key's last. Astronomically unlikely with a real hash; reported, never guessed.
    #[error("two distinct keys share a 128-bit hash (record at offset {offset}); the snapshot can not be exact")]
    HashCollision { offset: i64 },

    /// The consumer of the records stopped listening (a client went away).
    #[error("snapshot cancelled: {0}")]
    Cancelled(String),
}

/// Outcome of one map build.
enum Build {
    Complete,
    /// The map filled before the scan ended.
    Full,
}

/// Snapshot of one pinned partition: calls `emit` for every live key's record, and
/// `between_scans` after each slice's map is built and before its emit scan (progress
/// reports; tests run cleaner passes and retention there). See the module docs.
pub fn snapshot_partition(
    pinned: &PinnedLog,
    limits: &SnapshotLimits,
    emit: &mut dyn FnMut(TableRecord) -> Result<(), SnapshotError>,
    between_scans: &mut dyn FnMut(),
) -> Result<SnapshotStats, SnapshotError> {
    snapshot_partition_with(pinned, limits, emit, between_scans, None)
}

/// [`snapshot_partition`] with the map's hash function replaced (tests force collisions).
pub fn snapshot_partition_with(
    pinned: &PinnedLog,
    limits: &SnapshotLimits,
    emit: &mut dyn FnMut(TableRecord) -> Result<(), SnapshotError>,
    between_scans: &mut dyn FnMut(),
    map_hasher: Option<fn(&[u8]) -> u128>,
) -> Result<SnapshotStats, SnapshotError> {
    let aborted = if pinned.read_committed() {
        aborted_ranges(pinned.aborted_txns())
    } else {
        AbortedRanges::new()
    };
    let mut map = match map_hasher {
        Some(h) => OffsetMap::with_hasher(limits.memory_bytes, LOAD_FACTOR, h),
        None => OffsetMap::new(limits.memory_bytes, LOAD_FACTOR),
    };
    let mut stats = SnapshotStats {
        view_bytes: pinned.size_bytes(),
        ..SnapshotStats::default()
    };
    // Slices still to do, the next one last: ascending hash order.
    let mut todo: Vec<(u128, u128)> = vec![(0, HASH_SPACE)];
    while let Some((lo, hi)) = todo.pop() {
        map.clear(-1);
        let scan = Scan {
            pinned,
            aborted: &aborted,
            lo,
            hi,
            io: limits.io_buffer_size,
        };
        match scan.build(&mut map, &mut stats)? {
            Build::Full if hi - lo > 1 => {
                let mid = lo + (hi - lo) / 2;
                todo.push((mid, hi));
                todo.push((lo, mid));
                stats.restarts += 1;
                continue;
            }
            // One hash value whose keys do not fit: only a map smaller than one key can get
            // here, and the map always holds one key; go on with what it holds.
            Build::Full | Build::Complete => {}
        }
        between_scans();
        scan.emit(&map, &mut stats, emit)?;
        stats.slices += 1;
    }
    Ok(stats)
}

/// One scan of the pinned view restricted to the keys of slice `[lo, hi)`.
struct Scan<'a> {
    pinned: &'a PinnedLog,
    aborted: &'a AbortedRanges,
    lo: u128,
    hi: u128,
    io: usize,
}

impl Scan<'_> {
    fn in_slice(&self, key: &[u8]) -> bool {
        let h = u128::from(xxh3_64_with_seed(key, SLICE_SEED));
        self.lo <= h && h < self.hi
    }

    /// Calls `f(header, record)` for every keyed data record of the slice in the view, in
    /// offset order.
    fn each(
        &self,
        stats: &mut SnapshotStats,
        mut f: impl FnMut(&BatchHeader, i64, skiff_records::Record) -> Result<bool, SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let (start, end) = (self.pinned.log_start_offset(), self.pinned.end_offset());
        let mut batches = self.pinned.batches(self.io);
        for item in batches.by_ref() {
            let (h, bytes) = item?;
            if h.is_control() || is_aborted(self.aborted, &h) {
                continue;
            }
            let recs = records(&bytes, MAX_DECOMPRESSED_BATCH).map_err(|source| {
                SnapshotError::Corrupt {
                    offset: h.base_offset,
                    source,
                }
            })?;
            for r in recs {
                let offset = h.base_offset + i64::from(r.offset_delta);
                if offset < start || offset >= end {
                    continue;
                }
                let Some(key) = r.key.as_ref() else { continue };
                if !self.in_slice(key) {
                    continue;
                }
                if !f(&h, offset, r)? {
                    stats.bytes_read += batches.bytes_read();
                    return Ok(());
                }
            }
        }
        stats.bytes_read += batches.bytes_read();
        Ok(())
    }

    fn build(
        &self,
        map: &mut OffsetMap,
        stats: &mut SnapshotStats,
    ) -> Result<Build, SnapshotError> {
        let mut full = false;
        self.each(stats, |_, offset, r| {
            let key = r.key.as_deref().unwrap_or(&[]);
            if map.put(key, offset) {
                Ok(true)
            } else {
                full = true;
                Ok(false)
            }
        })?;
        Ok(if full { Build::Full } else { Build::Complete })
    }

    fn emit(
        &self,
        map: &OffsetMap,
        stats: &mut SnapshotStats,
        emit: &mut dyn FnMut(TableRecord) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let mut emitted = 0u64;
        self.each(stats, |h, offset, r| {
            let key = r.key.clone().unwrap_or_default();
            match map.get(&key) {
                Lookup::Latest(last) if last == offset => {}
                Lookup::Latest(_) => return Ok(true),
                // Only a key past the map's bound when the build stopped full on one hash
                // value (see the caller); it is not part of this answer.
                Lookup::Absent => return Ok(true),
                Lookup::Unknown => return Err(SnapshotError::HashCollision { offset }),
            }
            let Some(value) = r.value else {
                return Ok(true);
            };
            let timestamp = match h.timestamp_type() {
                TimestampType::LogAppendTime => h.max_timestamp,
                TimestampType::CreateTime => h.base_timestamp.saturating_add(r.timestamp_delta),
            };
            emit(TableRecord {
                offset,
                timestamp,
                key,
                value,
                headers: r.headers,
            })?;
            emitted += 1;
            Ok(true)
        })?;
        stats.records += emitted;
        Ok(())
    }
}
