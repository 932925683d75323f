//! Per-batch and per-record retention of a cleaning pass (docs/compaction.md §2.6, §2.7, §2.9;
//! Kafka's `Cleaner.cleanInto` + `MemoryRecords.filterTo`).
//!
//! Pure: takes one stored batch and the pass context, returns what to write (the batch copied
//! byte for byte, a rebuilt batch, or nothing). Thread-safe; no I/O.
//!
//! Output format: RecordBatch v2 exactly as `skiff-records` encodes it. A rebuilt batch keeps its
//! base offset, last offset, codec, timestamp type, producer id/epoch/base sequence, leader
//! epoch and the transactional/control flags; record offsets, keys, values, headers and absolute
//! timestamps are unchanged. A batch that keeps a tombstone and has no delete horizon yet gets
//! one (attribute bit 6, `baseTimestamp = T + delete.retention.ms`, record timestamp deltas
//! recomputed against it). A header-only batch (no records, codec none, `baseTimestamp = -1`,
//! original `maxTimestamp`) replaces a batch whose records all went but which must stay.
//!
//! Transactions (docs/compaction.md §2.8): [`FilterContext::discard_batch_records`] answers `true`
//! for data batches of aborted transactions (from the log's transaction index; the pass never
//! covers undecided ones, it stops at the last stable offset), so they go whatever their keys,
//! leaving only an empty header when it is the producer's last batch (§2.9). A marker the pass
//! found removable (`markers.rs`) is first stamped with a delete horizon
//! (`now + delete.retention.ms`), like a tombstone, and goes in a pass after the horizon
//! (as an empty control batch when it is its producer's last entry); other markers are kept.

use std::collections::HashMap;

use skiff_records::{
    crc_of, records, walk_record_keys, BatchBuilder, BatchHeader, Compression, TimestampType,
    NO_TIMESTAMP,
};

use crate::archive::{ArchiveReason, ArchivedOffsets, RemovedRecord};
use crate::consumers::{ConsumerHold, HeldBack};
use crate::error::{CleanerError, Result};
use crate::offset_map::{Lookup, OffsetMap};
use crate::summary::SummaryBuilder;

/// Byte positions in the v2 header that the empty-batch writer patches (see `skiff-records`).
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const CRC_AT: usize = 17;

/// Everything the filter needs to know about the pass.
pub struct FilterContext<'a> {
    /// Latest offset per key over the covered range; records above its `latest_offset` are kept.
    pub map: &'a OffsetMap,
    /// `T`, the wall-clock time the pass started.
    pub now_ms: i64,
    /// The topic's `delete.retention.ms` at the start of the pass.
    pub delete_retention_ms: i64,
    /// The pass's first uncleanable offset: the batch ending right below it is always kept
    /// (KAFKA-17076).
    pub upper_bound_offset: i64,
    /// What the log's producer state says about each producer id it still has (§2.9):
    /// producers that expired are not in it, so their last batch is no longer protected.
    pub producer_last_offsets: &'a ProducerLastRecords,
    /// Cap on a batch's decompressed size (protects against decompression bombs).
    pub max_decompressed_bytes: usize,
    /// Aborted transactions by producer id: `(first offset, marker offset)` ranges.
    pub aborted: &'a AbortedRanges,
    /// `skiff.tombstone.wait.for.consumers`: tombstones past their horizon that consumer
    /// groups have not read yet stay (`consumers.rs`); `None` when the topic does not wait.
    pub consumer_hold: Option<&'a ConsumerHold>,
    /// `skiff.compaction.archive.topic` is set: every superseded value and expired tombstone
    /// removed is also returned in [`BatchResult::removed`] so the pass can archive it first.
    pub collect_removed: bool,
    /// Source offsets an interrupted attempt of this pass already archived (`archive.rs`):
    /// removed whatever the filter would decide now (the earlier decision stands, so the
    /// archive and the log never both hold a record) and not returned again.
    pub already_archived: Option<&'a ArchivedOffsets>,
}

/// The last entry the log's producer state holds for one producer (Kafka's `LastRecord`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerLast {
    /// Last offset of its last data batch; `None` when the state knows no data batch of its
    /// current epoch (only markers: a bumped epoch forgets the older batches).
    pub last_data_offset: Option<i64>,
    pub epoch: i16,
}

/// [`ProducerLast`] by producer id.
pub type ProducerLastRecords = HashMap<i64, ProducerLast>;

/// The producer state of `log` as the cleaner needs it: no scan of the log, expired producers
/// already gone (docs/compaction.md §2.9).
pub fn producer_last_records(log: &skiff_log::Log) -> ProducerLastRecords {
    log.producer_entries()
        .into_iter()
        .map(|e| {
            let last = ProducerLast {
                last_data_offset: e.batches.back().map(|b| b.last_offset),
                epoch: e.epoch,
            };
            (e.producer_id, last)
        })
        .collect()
}

/// Aborted transactions of a log by producer id: `(first offset, marker offset)`.
pub type AbortedRanges = HashMap<i64, Vec<(i64, i64)>>;

/// Groups a log's aborted transactions by producer id.
pub fn aborted_ranges(list: &[skiff_log::AbortedTxn]) -> AbortedRanges {
    let mut out: AbortedRanges = HashMap::new();
    for a in list {
        out.entry(a.producer_id)
            .or_default()
            .push((a.first_offset, a.last_offset));
    }
    out
}

/// Whether a transactional data batch belongs to an aborted transaction.
pub fn is_aborted(aborted: &AbortedRanges, header: &BatchHeader) -> bool {
    header.is_transactional()
        && !header.is_control()
        && aborted.get(&header.producer_id).is_some_and(|ranges| {
            ranges
                .iter()
                .any(|&(first, marker)| first <= header.base_offset && header.base_offset < marker)
        })
}

impl FilterContext<'_> {
    /// Whether all records of `header`'s batch may go regardless of keys: aborted
    /// transactional data. Markers are never discarded (see the module docs).
    pub fn discard_batch_records(&self, header: &BatchHeader) -> bool {
        is_aborted(self.aborted, header)
    }

    /// The batch holds its producer's last entry: the last data batch the producer state
    /// knows, or, when it knows none, a marker of the producer's current epoch.
    fn is_last_batch_of_producer(&self, header: &BatchHeader) -> bool {
        if header.producer_id < 0 {
            return false;
        }
        match self.producer_last_offsets.get(&header.producer_id) {
            None => false,
            Some(ProducerLast {
                last_data_offset: Some(last),
                ..
            }) => header.last_offset() == *last,
            Some(ProducerLast {
                last_data_offset: None,
                epoch,
            }) => header.is_control() && header.producer_epoch == *epoch,
        }
    }
}

/// What the filter decided for one record of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Keep,
    Remove,
    /// Removed, and returned in [`BatchResult::removed`] for the archive.
    Archive,
}

/// What to write for one source batch.
#[derive(Debug, PartialEq)]
pub enum BatchOutput {
    /// Write the source batch unchanged.
    Copy,
    /// Write these bytes instead.
    Rewritten(Vec<u8>),
    /// Write nothing.
    Dropped,
}

/// The outcome and figures for one batch.
#[derive(Debug, PartialEq)]
pub struct BatchResult {
    pub output: BatchOutput,
    pub records_read: u64,
    pub records_kept: u64,
    pub tombstones_removed: u64,
    /// Tombstones still in the output batch.
    pub tombstones_kept: u64,
    /// Keyless records dropped (data written before the topic became compacted).
    pub keyless_removed: u64,
    /// The output batch's delete horizon when it keeps tombstones.
    pub horizon_ms: Option<i64>,
    /// The horizon was added by this pass.
    pub horizon_stamped: bool,
    /// Tombstones past their horizon kept only because consumer groups have not read them.
    pub held: HeldBack,
    /// When the first of those stops being held whatever the groups do (horizon +
    /// `skiff.tombstone.wait.max.ms`).
    pub held_until_ms: Option<i64>,
    /// With [`FilterContext::collect_removed`]: the data records removed (superseded values,
    /// expired tombstones, keyless records; not aborted data), in offset order.
    pub removed: Vec<RemovedRecord>,
}

impl BatchResult {
    fn dropped() -> BatchResult {
        BatchResult {
            output: BatchOutput::Dropped,
            records_read: 0,
            records_kept: 0,
            tombstones_removed: 0,
            tombstones_kept: 0,
            keyless_removed: 0,
            horizon_ms: None,
            horizon_stamped: false,
            held: HeldBack::default(),
            held_until_ms: None,
            removed: Vec::new(),
        }
    }
}

/// Decides the fate of one stored batch (docs/compaction.md §2.6 steps 1–4); markers are kept.
pub fn filter_batch(
    header: &BatchHeader,
    batch: &[u8],
    ctx: &FilterContext<'_>,
) -> Result<BatchResult> {
    filter_batch_with(header, batch, ctx, false)
}

/// [`filter_batch`], where `marker_removable` says a control batch's transaction has no data
/// left (`markers.rs`): it gets a delete horizon, then goes once the horizon passed.
pub fn filter_batch_with(
    header: &BatchHeader,
    batch: &[u8],
    ctx: &FilterContext<'_>,
    marker_removable: bool,
) -> Result<BatchResult> {
    filter_batch_summarized(header, batch, ctx, marker_removable, None)
}

/// [`filter_batch_with`], also giving `summary` the hash of every key that stays (and blocking
/// it for a keyless record that stays). The caller judges the batch as a whole (flags, empty
/// output, horizons) from the result.
pub fn filter_batch_summarized(
    header: &BatchHeader,
    batch: &[u8],
    ctx: &FilterContext<'_>,
    marker_removable: bool,
    mut summary: Option<&mut SummaryBuilder<'_>>,
) -> Result<BatchResult> {
    let corrupt = |source| CleanerError::Corrupt {
        offset: header.base_offset,
        source,
    };
    if header.is_control() && marker_removable {
        return filter_marker(header, batch, ctx).map_err(corrupt);
    }
    let discard = ctx.discard_batch_records(header);
    let retain_empty =
        ctx.is_last_batch_of_producer(header) || header.next_offset() == ctx.upper_bound_offset;
    if discard && !retain_empty {
        return Ok(BatchResult::dropped());
    }
    let existing_horizon = header.has_delete_horizon().then_some(header.base_timestamp);
    let keep_deletes = existing_horizon.is_none_or(|h| ctx.now_ms < h);
    let control = header.is_control();

    // First the fate of every record from its key, offset and value's nullness alone: most
    // batches of a cleaned range go whole or stay whole, and those are never decoded.
    let mut res = BatchResult::dropped();
    let mut fates = Vec::new();
    let count = walk_record_keys(batch, ctx.max_decompressed_bytes, |_, rec, key| {
        let offset = header.base_offset + i64::from(rec.offset_delta);
        let covered = !discard && !control && offset <= ctx.map.latest_offset();
        // Hashed at most once, when the map's table or the summary needs it.
        let mut hash = None;
        let retain = if discard {
            false
        } else if !covered {
            true
        } else {
            match key {
                None => {
                    res.keyless_removed += 1;
                    false
                }
                Some(key) => {
                    let latest = match ctx.map.superseded(offset) {
                        Some(superseded) => !superseded,
                        None => {
                            let h = *hash.get_or_insert_with(|| ctx.map.hash_of(key));
                            match ctx.map.get_hashed(key, h) {
                                Lookup::Absent | Lookup::Unknown => true,
                                Lookup::Latest(p) => offset >= p,
                            }
                        }
                    };
                    latest
                        && (!rec.value_is_null
                            || keep_deletes
                            || held_by_consumers(ctx, offset, existing_horizon, &mut res))
                }
            }
        };
        let tombstone = rec.value_is_null && !control;
        let archived_before =
            !discard && !control && ctx.already_archived.is_some_and(|a| a.contains(offset));
        // A record an interrupted attempt archived goes now, whatever the filter decided.
        let fate = if retain && !archived_before {
            if tombstone {
                res.tombstones_kept += 1;
            }
            if let Some(b) = summary.as_deref_mut() {
                match key {
                    Some(k) => b.add_key(hash.unwrap_or_else(|| ctx.map.hash_of(k))),
                    None => b.block(),
                }
            }
            Fate::Keep
        } else {
            if tombstone && key.is_some() {
                res.tombstones_removed += 1;
            }
            if ctx.collect_removed && !archived_before && !discard && !control {
                Fate::Archive
            } else {
                Fate::Remove
            }
        };
        fates.push(fate);
    })
    .map_err(corrupt)?;
    res.records_read = count as u64;
    let kept = fates.iter().filter(|f| **f == Fate::Keep).count();
    res.records_kept = kept as u64;

    let need_horizon = res.tombstones_kept > 0 && existing_horizon.is_none();
    let horizon = if need_horizon {
        Some(ctx.now_ms.saturating_add(ctx.delete_retention_ms))
    } else {
        existing_horizon
    };
    if res.tombstones_kept > 0 {
        res.horizon_ms = horizon;
        res.horizon_stamped = need_horizon;
    }
    // Nothing stays: the batch goes, or only its header stays (step 2).
    let emptied = |mut res: BatchResult| {
        if retain_empty {
            res.output = BatchOutput::Rewritten(empty_batch(header).map_err(corrupt)?);
        }
        Ok(res)
    };
    let archives = fates.contains(&Fate::Archive);
    if kept == 0 && !archives {
        return emptied(res);
    }
    if kept == count && !need_horizon {
        res.output = BatchOutput::Copy;
        return Ok(res);
    }

    // Some records stay and some go, or the archive wants what goes: decode the batch.
    let recs = records(batch, ctx.max_decompressed_bytes).map_err(corrupt)?;
    let mut kept_recs = Vec::with_capacity(kept);
    for (rec, fate) in recs.iter().zip(&fates) {
        match fate {
            Fate::Keep => kept_recs.push(rec),
            Fate::Archive => {
                let offset = header.base_offset + i64::from(rec.offset_delta);
                let tombstone = rec.value.is_none();
                res.removed
                    .push(removed_record(header, rec, offset, tombstone, ctx));
            }
            Fate::Remove => {}
        }
    }
    if kept_recs.is_empty() {
        return emptied(res);
    }
    let codec = header.compression().map_err(corrupt)?;
    let mut b = builder_like(header, codec).delete_horizon_ms(horizon);
    for rec in kept_recs {
        let headers: Vec<(&[u8], Option<&[u8]>)> = rec
            .headers
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_deref()))
            .collect();
        b.push_at(
            rec.offset_delta,
            header.base_timestamp.wrapping_add(rec.timestamp_delta),
            rec.key.as_deref(),
            rec.value.as_deref(),
            &headers,
        );
    }
    let mut out = b.build().map_err(corrupt)?;
    if header.timestamp_type() == TimestampType::LogAppendTime {
        // Readers take every record's time from maxTimestamp, which must not change.
        skiff_records::stamp_log_append_time(&mut out, header.max_timestamp);
    }
    res.output = BatchOutput::Rewritten(out);
    Ok(res)
}

/// A copy of a record the pass removes, for the archive.
fn removed_record(
    header: &BatchHeader,
    rec: &skiff_records::Record,
    offset: i64,
    tombstone: bool,
    ctx: &FilterContext<'_>,
) -> RemovedRecord {
    let reason = match &rec.key {
        None => ArchiveReason::Keyless,
        Some(key) if tombstone && !superseded_by(ctx, key, offset) => ArchiveReason::Tombstone,
        Some(_) => ArchiveReason::Superseded,
    };
    RemovedRecord {
        offset,
        // LogAppendTime batches give every record the batch's time.
        timestamp: if header.timestamp_type() == TimestampType::LogAppendTime {
            header.max_timestamp
        } else {
            header.base_timestamp.wrapping_add(rec.timestamp_delta)
        },
        key: rec.key.clone(),
        value: rec.value.clone(),
        headers: rec.headers.clone(),
        reason,
    }
}

/// Whether a later record of `key` exists (the map names a later offset).
fn superseded_by(ctx: &FilterContext<'_>, key: &[u8], offset: i64) -> bool {
    matches!(ctx.map.get(key), Lookup::Latest(p) if p > offset)
}

/// Whether a tombstone at `offset` past its horizon stays because consumer groups have not
/// read it yet (recorded in `res`).
fn held_by_consumers(
    ctx: &FilterContext<'_>,
    offset: i64,
    horizon: Option<i64>,
    res: &mut BatchResult,
) -> bool {
    let (Some(hold), Some(horizon)) = (ctx.consumer_hold, horizon) else {
        return false;
    };
    let holders = hold.holders(offset, horizon, ctx.now_ms);
    if holders.is_empty() {
        return false;
    }
    res.held.add(&holders);
    let until = horizon.saturating_add(hold.max_wait_ms.max(0));
    res.held_until_ms = Some(res.held_until_ms.map_or(until, |u| u.min(until)));
    true
}

/// A removable marker: stamped with a horizon, kept until it passes, then removed (an empty
/// control batch stays when it is its producer's last entry, §2.9).
fn filter_marker(
    header: &BatchHeader,
    batch: &[u8],
    ctx: &FilterContext<'_>,
) -> std::result::Result<BatchResult, skiff_records::RecordsError> {
    let recs = records(batch, ctx.max_decompressed_bytes)?;
    let mut res = BatchResult::dropped();
    res.records_read = recs.len() as u64;
    match header.has_delete_horizon().then_some(header.base_timestamp) {
        Some(h) if ctx.now_ms >= h => {
            let last = ctx.is_last_batch_of_producer(header)
                || header.next_offset() == ctx.upper_bound_offset;
            if last {
                res.output = BatchOutput::Rewritten(empty_batch(header)?);
            }
        }
        Some(h) => {
            res.records_kept = res.records_read;
            res.horizon_ms = Some(h);
            res.output = BatchOutput::Copy;
        }
        None => {
            let horizon = ctx.now_ms.saturating_add(ctx.delete_retention_ms);
            let mut b =
                builder_like(header, header.compression()?).delete_horizon_ms(Some(horizon));
            for rec in &recs {
                let headers: Vec<(&[u8], Option<&[u8]>)> = rec
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_ref(), v.as_deref()))
                    .collect();
                b.push_at(
                    rec.offset_delta,
                    header.base_timestamp.wrapping_add(rec.timestamp_delta),
                    rec.key.as_deref(),
                    rec.value.as_deref(),
                    &headers,
                );
            }
            res.records_kept = res.records_read;
            res.horizon_ms = Some(horizon);
            res.horizon_stamped = true;
            res.output = BatchOutput::Rewritten(b.build()?);
        }
    }
    Ok(res)
}

/// A builder carrying over everything of `header` except records and timestamps.
fn builder_like(header: &BatchHeader, codec: Compression) -> BatchBuilder {
    BatchBuilder::new(header.base_offset, codec)
        .producer_id(header.producer_id)
        .producer_epoch(header.producer_epoch)
        .base_sequence(header.base_sequence)
        .transactional(header.is_transactional())
        .control(header.is_control())
        .partition_leader_epoch(header.partition_leader_epoch)
        .log_append_time(header.timestamp_type() == TimestampType::LogAppendTime)
        .last_offset_delta(header.last_offset_delta)
}

/// Kafka's `writeEmptyHeader`: same offsets, producer fields, flags and max timestamp; no
/// records, codec none, base timestamp -1, no delete horizon.
fn empty_batch(header: &BatchHeader) -> Result<Vec<u8>, skiff_records::RecordsError> {
    let mut out = builder_like(header, Compression::None).build()?;
    put_i64(&mut out, BASE_TIMESTAMP_AT, NO_TIMESTAMP);
    put_i64(&mut out, MAX_TIMESTAMP_AT, header.max_timestamp);
    let crc = crc_of(&out);
    if let Some(dst) = out.get_mut(CRC_AT..CRC_AT + 4) {
        dst.copy_from_slice(&crc.to_be_bytes());
    }
    Ok(out)
}

fn put_i64(buf: &mut [u8], at: usize, v: i64) {
    if let Some(dst) = buf.get_mut(at..at + 8) {
        dst.copy_from_slice(&v.to_be_bytes());
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
