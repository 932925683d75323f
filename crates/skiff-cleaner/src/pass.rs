//! One cleaning pass over one log (Kafka's `Cleaner.doClean`): build the key → offset map over
//! `[first dirty, first uncleanable)` (reading only those segments; the producers' last batches
//! come from the log's producer state), then filter every segment below the map's end, group by
//! group, through `skiff-log`'s cleaned-segment writer and crash-safe swap. A segment the
//! filter leaves exactly as it is (no key of the map, nothing expired, no horizon to stamp) and
//! that is not merged with its neighbours is neither written nor swapped: Kafka rewrites it
//! anyway; here it costs only its reading, and not even that when its summary (`summary.rs`)
//! proves it would be left as it is (`skippable`). Each group's output is summarized as it is
//! filtered, for the next passes.
//!
//! Thread-safety: a pass runs on one cleaner thread and owns its map; the log serves appends
//! and reads meanwhile (the writer and the swap take the log's lock only briefly). The shared
//! [`Throttler`] is a `Mutex`. An abort flag is checked between batches; on abort the cleaned
//! files are deleted and nothing changes in the log.
//!
//! Disk: the `.cleaned` segment files of the group in progress (formats in `skiff-log`); with
//! an archive topic, also appends to its partition and the pass intent file (`archive.rs`),
//! both before the group's swap. The cleaner checkpoint is written by the pool after the pass.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use skiff_log::{CleanedSegmentWriter, CleanerView, Log, LogError, SegmentInfo};
use skiff_records::{walk_record_keys, BatchHeader};

use crate::archive::{self, ArchiveSink, ArchivedOffsets, Archiver, PassIntent};
use crate::consumers::{ConsumerHold, HeldBack};
use crate::error::{CleanerError, Result};
use crate::filter::{
    aborted_ranges, filter_batch_summarized, is_aborted, producer_last_records, AbortedRanges,
    BatchOutput, BatchResult, FilterContext,
};
use crate::markers::{MarkerTracker, Seen};
use crate::offset_map::OffsetMap;
use crate::planner::{group_segments, CleanablePlan};
use crate::summary::{SegmentSummary, SummaryBuilder, SummaryStore};
use skiff_log::ControlType;

/// Cap on one batch's decompressed size, as the log's own reads use.
pub const MAX_DECOMPRESSED_BATCH: usize = 128 << 20;

/// Figures of one pass (Kafka's `CleanerStats`), also the "last pass" of the status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassStats {
    /// Wall-clock start `T` of the pass (ms), the base of new delete horizons.
    pub start_ms: i64,
    pub duration: Duration,
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// The new first dirty offset: `map.latest_offset + 1` (mid-segment after a partial pass).
    pub end_offset: i64,
    /// The map filled before `first_uncleanable_offset`.
    pub partial: bool,
    /// Bytes read building the map and rewriting (what was actually read).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Bytes of the segments that were rewritten, before cleaning.
    pub bytes_before: u64,
    pub records_read: u64,
    pub records_kept: u64,
    pub tombstones_removed: u64,
    /// Tombstones still in the rewritten segments.
    pub tombstones_kept: u64,
    pub keyless_removed: u64,
    pub segments_rewritten: usize,
    /// Segments read and left as they were: each alone in its group, which the pass would
    /// have copied byte for byte (not counted in `bytes_before` and `bytes_written`).
    pub segments_unchanged: usize,
    /// Clean segments left unread: their summary proved the filter would copy them as they
    /// are (`summary.rs`). Not counted in `segments_unchanged`.
    pub segments_skipped: usize,
    /// Bytes of those segments (not read, not in `bytes_read`).
    pub bytes_skipped: u64,
    /// Groups swapped (rewritten).
    pub groups: usize,
    /// Distinct keys in the map and its slot utilization (0..=1).
    pub map_keys: usize,
    pub map_fill: f64,
    /// Earliest delete horizon later than `start_ms` among the rewritten segments (or the
    /// earliest time a tombstone held back by consumers goes whatever they do).
    pub next_delete_horizon_ms: Option<i64>,
    /// Tombstones past their horizon kept because consumer groups have not read them
    /// (`skiff.tombstone.wait.for.consumers`), with the groups holding them.
    pub held_for_consumers: HeldBack,
    /// Records appended to the archive topic before the swap (`skiff.compaction.archive.topic`).
    pub records_archived: u64,
    /// Bytes of the batches appended to the archive topic.
    pub bytes_archived: u64,
    /// Records an interrupted earlier attempt had archived, found by the recovery scan (not
    /// archived again).
    pub records_already_archived: u64,
}

/// Shared bandwidth limit of all cleaner threads (`log.cleaner.io.max.bytes.per.second`),
/// checked over 300 ms windows as Kafka's throttler does.
pub struct Throttler {
    max_bytes_per_second: f64,
    window: Mutex<(Instant, u64)>,
}

const THROTTLE_WINDOW: Duration = Duration::from_millis(300);

impl Throttler {
    pub fn new(max_bytes_per_second: f64) -> Throttler {
        Throttler {
            max_bytes_per_second,
            window: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Accounts `bytes` and sleeps when the window's rate is above the limit.
    pub fn acquire(&self, bytes: u64) {
        if !(self.max_bytes_per_second.is_finite() && self.max_bytes_per_second > 0.0) {
            return;
        }
        let sleep = {
            let mut w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
            w.1 += bytes;
            let elapsed = w.0.elapsed();
            if elapsed < THROTTLE_WINDOW {
                return;
            }
            let wanted = Duration::from_secs_f64(w.1 as f64 / self.max_bytes_per_second);
            *w = (Instant::now(), 0);
            wanted.saturating_sub(elapsed)
        };
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
}

/// Everything a pass needs besides the log and its map.
pub struct PassContext<'a> {
    pub topic: &'a str,
    pub partition: i32,
    /// `T`: the pass's start time (ms).
    pub now_ms: i64,
    /// Read buffer per segment reader (`log.cleaner.io.buffer.size` / threads / 2).
    pub io_buffer_size: usize,
    pub abort: &'a AtomicBool,
    pub throttler: &'a Throttler,
    /// The consumer rule when the topic has `skiff.tombstone.wait.for.consumers=true`.
    pub consumer_hold: Option<&'a ConsumerHold>,
    /// The archive partition when the topic has `skiff.compaction.archive.topic`: removed
    /// records go there, fsynced, before each swap (`archive.rs`). Ignored by a dry run.
    pub archive: Option<&'a dyn ArchiveSink>,
    /// Segment summaries (`summary.rs`): used to leave clean segments unread, and (not by a
    /// dry run) filled with the summary of every group the pass filters. `None`: every
    /// segment below the map's end is read.
    pub summaries: Option<&'a SummaryStore>,
}

impl PassContext<'_> {
    fn check_abort(&self, log: &Log) -> Result<()> {
        if self.abort.load(Ordering::Acquire) {
            return Err(CleanerError::Aborted(format!(
                "{}-{}: abort requested",
                self.topic, self.partition
            )));
        }
        if log.is_closed() {
            return Err(CleanerError::Aborted(format!(
                "{}-{}: log closed",
                self.topic, self.partition
            )));
        }
        Ok(())
    }
}

fn moved_on(e: LogError) -> CleanerError {
    match e {
        LogError::SegmentGone(m) => CleanerError::LogMovedOn(m),
        LogError::Aborted(m) => CleanerError::Aborted(m),
        other => CleanerError::Log(other),
    }
}

/// Runs one pass with the plan computed from `view` (taken just before).
pub fn run_pass(
    log: &Log,
    view: &CleanerView,
    plan: &CleanablePlan,
    map: &mut OffsetMap,
    ctx: &PassContext<'_>,
) -> Result<PassStats> {
    pass(log, view, plan, map, ctx, Mode::Clean)
}

/// What [`run_pass`] would do now, without changing anything: the same map building and the
/// same filter over the same groups, but the output is only counted (no `.cleaned` file, no
/// transaction index change, no swap). `bytes_written` is what the cleaned segments would
/// hold. The log may be appended to and cleaned meanwhile: it only reads, through the same
/// segment readers as a pass; a segment swapped away under it ends it with
/// [`CleanerError::LogMovedOn`].
pub fn dry_run_pass(
    log: &Log,
    view: &CleanerView,
    plan: &CleanablePlan,
    map: &mut OffsetMap,
    ctx: &PassContext<'_>,
) -> Result<PassStats> {
    pass(log, view, plan, map, ctx, Mode::DryRun)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Clean,
    DryRun,
}

fn pass(
    log: &Log,
    view: &CleanerView,
    plan: &CleanablePlan,
    map: &mut OffsetMap,
    ctx: &PassContext<'_>,
    mode: Mode,
) -> Result<PassStats> {
    let started = Instant::now();
    let mut stats = PassStats {
        start_ms: ctx.now_ms,
        first_dirty_offset: plan.first_dirty_offset,
        first_uncleanable_offset: plan.first_uncleanable_offset,
        ..PassStats::default()
    };
    // Before anything is archived: the intent, and what an interrupted attempt archived.
    let (mut archiver, already) = match (mode, ctx.archive) {
        (Mode::Clean, Some(sink)) => {
            let already = begin_archiving(log, sink, ctx)?;
            stats.records_already_archived = already.len() as u64;
            (
                Some(Archiver::new(sink, ctx.topic, ctx.partition, ctx.now_ms)),
                already,
            )
        }
        (Mode::Clean, None) => {
            // Archiving was turned off: an old intent has nothing left to protect.
            archive::clear_intent(log.dir())?;
            (None, ArchivedOffsets::default())
        }
        (Mode::DryRun, _) => (None, ArchivedOffsets::default()),
    };
    // Everything below the first uncleanable offset is decided (it is at most the LSO).
    let aborted = aborted_ranges(&log.aborted_txn_index());
    // Taken before the map, as Kafka does: a producer writing meanwhile only moves its last
    // batch above this pass's range.
    let producers = producer_last_records(log);
    // A dry run changes nothing, not even the summaries.
    if let (Some(store), Mode::Clean) = (ctx.summaries, mode) {
        store.retain_segments(ctx.topic, ctx.partition, view);
    }
    build_map(log, view, plan, map, ctx, &aborted, &mut stats)?;
    stats.end_offset = map.latest_offset() + 1;
    stats.partial = stats.end_offset < plan.first_uncleanable_offset;
    stats.map_keys = map.len();
    stats.map_fill = map.utilization();

    // Records an interrupted attempt archived must leave the log in this pass even when its
    // range is shorter (a smaller map, a raised min.compaction.lag.ms): their segments were
    // sealed and cleanable then, so they are rewritten too; past the map's end only those
    // records go.
    let rewrite_end = already
        .last()
        .map_or(stats.end_offset, |last| stats.end_offset.max(last + 1));
    let to_rewrite: Vec<_> = view
        .segments
        .iter()
        .filter(|s| !s.is_active && s.base_offset < rewrite_end)
        .cloned()
        .collect();
    let config = &view.config;
    let groups = group_segments(
        &to_rewrite,
        u64::try_from(config.segment_bytes).unwrap_or(0),
        u64::try_from(config.segment_index_bytes).unwrap_or(0),
        plan.first_uncleanable_offset.max(rewrite_end),
    );
    // Below this the log no longer holds what an earlier attempt archived: the segments
    // before the first one are gone (retention), and then what this pass swapped in.
    let mut rewritten_upto = view.segments.first().map_or(i64::MAX, |s| s.base_offset);
    let filter = FilterContext {
        map,
        now_ms: ctx.now_ms,
        delete_retention_ms: config.delete_retention_ms,
        upper_bound_offset: plan.first_uncleanable_offset,
        producer_last_offsets: &producers,
        max_decompressed_bytes: MAX_DECOMPRESSED_BATCH,
        aborted: &aborted,
        consumer_hold: ctx.consumer_hold,
        collect_removed: archiver.is_some(),
        already_archived: (!already.is_empty()).then_some(&already),
    };
    // Markers are judged walking the log from its start (the groups are in offset order).
    // A skipped segment holds no transactional batch, so the walk needs nothing from it.
    let mut markers = MarkerTracker::default();
    let summarize = mode == Mode::Clean && filter.map.has_default_hasher();
    for (gi, group) in groups.iter().enumerate() {
        if let Some((seg, summary)) = skippable(view, group, plan, &filter, ctx, &already) {
            stats.segments_skipped += 1;
            stats.bytes_skipped += seg.size;
            if let Some(hz) = summary.tombstone_horizon_ms {
                // Still a due horizon for §5.2 (skippable means it is later than now).
                stats.next_delete_horizon_ms =
                    Some(stats.next_delete_horizon_ms.map_or(hz, |cur| cur.min(hz)));
            }
            rewritten_upto = segment_end(view, group);
            continue;
        }
        if mode == Mode::DryRun {
            let mut out = GroupOutput::counting(group);
            clean_group(
                log,
                &mut out,
                None,
                &filter,
                ctx,
                &mut markers,
                &mut stats,
                None,
            )?;
            match out.changed {
                Some(c) => {
                    stats.bytes_before += c.bytes_before;
                    stats.bytes_written += c.bytes_written;
                    stats.groups += 1;
                    stats.segments_rewritten += group.len();
                }
                None => stats.segments_unchanged += group.len(),
            }
            continue;
        }
        let mut out = GroupOutput::writing(group);
        let mut summary = match (ctx.summaries, summarize) {
            (Some(store), true) => store.builder(group_span(view, group)),
            _ => None,
        };
        let cleaned = clean_group(
            log,
            &mut out,
            archiver.as_mut(),
            &filter,
            ctx,
            &mut markers,
            &mut stats,
            summary.as_mut(),
        )
        .and_then(|()| match archiver.as_mut() {
            // Nothing leaves the log before it is durably in the archive.
            Some(a) => a.flush_and_sync(),
            None => Ok(()),
        })
        .and_then(|()| fault_point(ctx, archiver.is_some(), FaultStep::AfterSync));
        let (changed, writer) = match (cleaned, out.changed, out.writer) {
            (Err(e), _, writer) => {
                if let Some(Err(ae)) = writer.map(CleanedSegmentWriter::abort) {
                    tracing::warn!(error = %ae, "could not delete an aborted cleaned segment");
                }
                return Err(e);
            }
            (Ok(()), None, _) => {
                // Every batch would be copied as it is: the segments stay.
                stats.segments_unchanged += group.len();
                rewritten_upto = segment_end(view, group);
                let seg = view
                    .segments
                    .iter()
                    .find(|s| Some(&s.base_offset) == group.first());
                if let (Some(store), Some(b), Some(seg), 1) =
                    (ctx.summaries, summary, seg, group.len())
                {
                    // Only if the segment read is still the one of the view.
                    if log.segment_id(seg.base_offset) == Some(seg.id) {
                        store.finish(
                            ctx.topic,
                            ctx.partition,
                            seg.base_offset,
                            b,
                            seg.id,
                            seg.size,
                        );
                    }
                }
                continue;
            }
            (Ok(()), Some(changed), Some(writer)) => (changed, writer),
            (Ok(()), Some(_), None) => {
                return Err(CleanerError::Aborted(format!(
                    "{}-{}: a changed group has no cleaned segment",
                    ctx.topic, ctx.partition
                )))
            }
        };
        let removed_aborts = changed.removed_aborts;
        stats.bytes_before += changed.bytes_before;
        stats.bytes_read += changed.bytes_reread;
        let cleaned_size = writer.size();
        stats.bytes_written += cleaned_size;
        // The transaction index must not name an ABORT marker readers will no longer find.
        if let Err(e) = log.forget_aborted_txns(&removed_aborts) {
            if let Err(ae) = writer.abort() {
                tracing::warn!(error = %ae, "could not delete an aborted cleaned segment");
            }
            return Err(moved_on(e));
        }
        log.replace_segments(group, writer).map_err(moved_on)?;
        if let (Some(store), Some(b), Some(id)) = (ctx.summaries, summary, log.segment_id(group[0]))
        {
            store.finish(ctx.topic, ctx.partition, group[0], b, id, cleaned_size);
        }
        stats.groups += 1;
        stats.segments_rewritten += group.len();
        rewritten_upto = segment_end(view, group);
        fault_point(ctx, archiver.is_some(), FaultStep::AfterSwap)?;
        if let (Some(a), Some(next)) = (archiver.as_ref(), groups.get(gi + 1)) {
            if a.records >= a.max_records_per_pass() {
                // Bounds what a rerun's recovery scan must hold: the rest waits for the next
                // pass. Below `next[0]` every key is now at most once (docs/compaction.md §5.11).
                stats.end_offset = next[0].max(plan.first_dirty_offset).min(stats.end_offset);
                stats.partial = true;
                break;
            }
        }
    }
    if let Some(a) = archiver {
        stats.records_archived = a.records;
        stats.bytes_archived = a.batch_bytes;
        // What this pass archived is gone from the log; the intent goes too unless records an
        // earlier attempt archived lie beyond what was swapped (a pass stopped at its bound):
        // then the next pass must still know them.
        if already.last().is_none_or(|last| last < rewritten_upto) {
            archive::clear_intent(log.dir())?;
        }
    }
    stats.duration = started.elapsed();
    if mode == Mode::Clean {
        log_summary(ctx, &stats);
    }
    Ok(stats)
}

/// Fills the map over the cleanable range, reading only the segments that overlap it. Control
/// batches and aborted transactional data are never put in the map (an aborted value must not
/// shadow the committed one before it).
fn build_map(
    log: &Log,
    view: &CleanerView,
    plan: &CleanablePlan,
    map: &mut OffsetMap,
    ctx: &PassContext<'_>,
    aborted: &AbortedRanges,
    stats: &mut PassStats,
) -> Result<()> {
    let (start, end) = (plan.first_dirty_offset, plan.first_uncleanable_offset);
    map.clear(start - 1);
    let mut full = false;
    for (i, seg) in view.segments.iter().enumerate() {
        let in_range = !full && seg.base_offset < end && seg.next_offset > start;
        if !in_range {
            continue;
        }
        let batches = log
            .segment_batches(seg.base_offset, ctx.io_buffer_size)
            .map_err(moved_on)?;
        for item in batches {
            ctx.check_abort(log)?;
            let (h, bytes) = item.map_err(moved_on)?;
            stats.bytes_read += bytes.len() as u64;
            ctx.throttler.acquire(bytes.len() as u64);
            if full || h.last_offset() < start || h.base_offset >= end {
                continue;
            }
            if !h.is_control() && !is_aborted(aborted, &h) {
                // Keys and offsets only: values and headers are skipped, not copied.
                walk_record_keys(&bytes, MAX_DECOMPRESSED_BATCH, |_, r, key| {
                    let offset = h.base_offset + i64::from(r.offset_delta);
                    if let (Some(key), true, false) = (key, offset >= start, full) {
                        full = !map.put(key, offset);
                    }
                })
                .map_err(|source| CleanerError::Corrupt {
                    offset: h.base_offset,
                    source,
                })?;
            }
            if !full {
                map.update_latest_offset(h.last_offset());
            }
        }
        if !full {
            // Offset gaps between segments must not stall progress.
            if let Some(next) = view.segments.get(i + 1) {
                map.update_latest_offset(next.base_offset.min(end) - 1);
            }
        }
    }
    Ok(())
}

/// The segment of a one-segment `group` with its summary when the pass may leave it unread:
/// the filter would provably copy every batch of it as it is. That needs all of:
/// - the segment is alone in its group (a group of several is merged, so written) and sealed;
/// - it lies wholly below the first dirty offset, so any key of the map has a later record
///   and every record of the segment is at or below the map's last offset;
/// - a summary of this very segment exists (`summary.rs`: it has one only if it holds no
///   transactional or control batch, no batch left empty and no keyless record; so neither the
///   aborted-data rule, nor the producers' last batches, nor the marker walk, nor a keyless
///   record can change anything in it);
/// - none of its tombstones' delete horizons has passed (so no tombstone goes, and the
///   consumer hold, which only acts after the horizon, has nothing to hold);
/// - no key of the map may be in it (the Bloom filter answers "no" for every map key; a false
///   "maybe" only means it is read);
/// - no record an interrupted attempt archived is pending (those go whatever the filter says).
fn skippable<'v>(
    view: &'v CleanerView,
    group: &[i64],
    plan: &CleanablePlan,
    filter: &FilterContext<'_>,
    ctx: &PassContext<'_>,
    already: &ArchivedOffsets,
) -> Option<(&'v SegmentInfo, Arc<SegmentSummary>)> {
    let store = ctx.summaries?;
    let [base] = group else {
        return None;
    };
    if !already.is_empty() {
        return None;
    }
    let seg = view.segments.iter().find(|s| s.base_offset == *base)?;
    if seg.is_active || seg.next_offset > plan.first_dirty_offset {
        return None;
    }
    let summary = store.get(ctx.topic, ctx.partition, seg)?;
    if summary
        .tombstone_horizon_ms
        .is_some_and(|h| ctx.now_ms >= h)
    {
        return None;
    }
    if summary.may_hold_a_key_of(filter.map) {
        return None;
    }
    Some((seg, summary))
}

/// Offsets spanned by `group` (sizes its summary's filter before it is read).
fn group_span(view: &CleanerView, group: &[i64]) -> i64 {
    let first = group.first().copied().unwrap_or(0);
    let last = group.last().copied().unwrap_or(first);
    let end = view
        .segments
        .iter()
        .find(|s| s.base_offset == last)
        .map_or(first + 1, |s| s.next_offset);
    end.saturating_sub(first).max(1)
}

/// What `summary` must know about a batch that stays, beyond its keys.
fn summarize_batch(summary: &mut SummaryBuilder<'_>, h: &BatchHeader, r: &BatchResult) {
    if matches!(r.output, BatchOutput::Dropped) {
        return;
    }
    if h.is_transactional() || h.is_control() || r.records_kept == 0 {
        summary.block();
    } else if r.tombstones_kept > 0 {
        match r.horizon_ms {
            Some(hz) => summary.tombstones_until(hz),
            None => summary.block(),
        }
    }
}

/// Where one group's filtered batches go. Nothing is written until the first batch whose output
/// differs from its source: then the cleaned segment is created (when writing) and the batches
/// before it are copied in as they were, so a lone segment that would come out byte for byte
/// the same is never written. A group of several segments is always written ([`Self::finish`]):
/// merging small segments is worth a rewrite.
struct GroupOutput<'g> {
    group: &'g [i64],
    /// Creates the cleaned segment when the group changes; `false` for a dry run.
    write: bool,
    /// Bytes of the group's source batches filtered so far (all of them unchanged until
    /// `changed` is set: what the output starts with when the group changes).
    bytes_seen: u64,
    /// Set at the first changed batch.
    changed: Option<ChangedGroup>,
    writer: Option<CleanedSegmentWriter>,
}

/// Figures of a group that is rewritten.
struct ChangedGroup {
    bytes_before: u64,
    bytes_written: u64,
    /// Offsets of ABORT markers whose records all went (the transaction index forgets them).
    removed_aborts: Vec<i64>,
    /// Bytes read a second time to copy the unchanged batches before the first changed one.
    bytes_reread: u64,
}

impl<'g> GroupOutput<'g> {
    fn counting(group: &'g [i64]) -> Self {
        GroupOutput {
            group,
            write: false,
            bytes_seen: 0,
            changed: None,
            writer: None,
        }
    }

    fn writing(group: &'g [i64]) -> Self {
        GroupOutput {
            write: true,
            ..GroupOutput::counting(group)
        }
    }

    /// Takes the output for the source batch `source` (of segment `segment`, at `h`); the
    /// group's figures once it has changed.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        log: &Log,
        ctx: &PassContext<'_>,
        segment: i64,
        h: &BatchHeader,
        source: &[u8],
        output: &[u8],
        copied: bool,
    ) -> Result<Option<&mut ChangedGroup>> {
        if self.changed.is_none() && !copied {
            self.start_changed(log, ctx, segment, h.base_offset)?;
        }
        self.bytes_seen += source.len() as u64;
        let Some(changed) = self.changed.as_mut() else {
            return Ok(None);
        };
        changed.bytes_before += source.len() as u64;
        changed.bytes_written += output.len() as u64;
        if let (Some(w), false) = (self.writer.as_mut(), output.is_empty()) {
            w.append_batch(output).map_err(moved_on)?;
            ctx.throttler.acquire(output.len() as u64);
        }
        Ok(Some(changed))
    }

    /// Called after the whole group went through [`Self::push`].
    fn finish(&mut self, log: &Log, ctx: &PassContext<'_>) -> Result<()> {
        match (&self.changed, self.group.last()) {
            (None, Some(&last)) if self.group.len() > 1 => {
                self.start_changed(log, ctx, last, i64::MAX)
            }
            _ => Ok(()),
        }
    }

    /// The first changed batch is at `upto` in `segment`: the batches of the group before it
    /// go into the output unchanged.
    fn start_changed(
        &mut self,
        log: &Log,
        ctx: &PassContext<'_>,
        segment: i64,
        upto: i64,
    ) -> Result<()> {
        let mut changed = ChangedGroup {
            bytes_before: self.bytes_seen,
            bytes_written: self.bytes_seen,
            removed_aborts: Vec::new(),
            bytes_reread: 0,
        };
        if self.write {
            let mut writer = log
                .cleaned_segment_writer(self.group[0])
                .map_err(moved_on)?;
            match copy_prefix(log, ctx, self.group, segment, upto, &mut writer) {
                Ok(n) => changed.bytes_reread = n,
                Err(e) => {
                    if let Err(ae) = writer.abort() {
                        tracing::warn!(error = %ae, "could not delete an aborted cleaned segment");
                    }
                    return Err(e);
                }
            }
            changed.bytes_written = writer.size();
            self.writer = Some(writer);
        }
        self.changed = Some(changed);
        Ok(())
    }
}

/// Appends the batches of `group` below offset `upto` of `segment` to `writer` as they are;
/// returns the bytes copied.
fn copy_prefix(
    log: &Log,
    ctx: &PassContext<'_>,
    group: &[i64],
    segment: i64,
    upto: i64,
    writer: &mut CleanedSegmentWriter,
) -> Result<u64> {
    let mut copied = 0u64;
    for &base in group.iter().take_while(|&&b| b <= segment) {
        let batches = log
            .segment_batches(base, ctx.io_buffer_size)
            .map_err(moved_on)?;
        for item in batches {
            ctx.check_abort(log)?;
            let (h, bytes) = item.map_err(moved_on)?;
            if base == segment && h.base_offset >= upto {
                break;
            }
            ctx.throttler.acquire(2 * bytes.len() as u64);
            writer.append_batch(&bytes).map_err(moved_on)?;
            copied += bytes.len() as u64;
        }
    }
    Ok(copied)
}

/// Filters every batch of `out`'s group into it (the caller aborts its writer on error), and
/// tells `summary` what the output holds.
#[allow(clippy::too_many_arguments)]
fn clean_group(
    log: &Log,
    out: &mut GroupOutput<'_>,
    mut archiver: Option<&mut Archiver<'_>>,
    filter: &FilterContext<'_>,
    ctx: &PassContext<'_>,
    markers: &mut MarkerTracker,
    stats: &mut PassStats,
    mut summary: Option<&mut SummaryBuilder<'_>>,
) -> Result<()> {
    for &base in out.group {
        let batches = log
            .segment_batches(base, ctx.io_buffer_size)
            .map_err(moved_on)?;
        for item in batches {
            ctx.check_abort(log)?;
            let (h, bytes) = item.map_err(moved_on)?;
            stats.bytes_read += bytes.len() as u64;
            ctx.throttler.acquire(bytes.len() as u64);
            let seen = markers.observe(&h, &bytes, filter.aborted);
            let removable = matches!(seen, Seen::RemovableMarker(_));
            let mut r =
                filter_batch_summarized(&h, &bytes, filter, removable, summary.as_deref_mut())?;
            if let Some(b) = summary.as_deref_mut() {
                summarize_batch(b, &h, &r);
            }
            if let Some(a) = archiver.as_deref_mut() {
                a.add(std::mem::take(&mut r.removed))?;
            }
            let removed_abort = seen == Seen::RemovableMarker(ControlType::Abort)
                && r.records_read > 0
                && r.records_kept == 0;
            stats.records_read += r.records_read;
            stats.records_kept += r.records_kept;
            stats.tombstones_removed += r.tombstones_removed;
            stats.tombstones_kept += r.tombstones_kept;
            stats.keyless_removed += r.keyless_removed;
            stats.held_for_consumers.merge(&r.held);
            let due = r.horizon_ms.filter(|&hz| hz > ctx.now_ms);
            for hz in due.into_iter().chain(r.held_until_ms) {
                stats.next_delete_horizon_ms =
                    Some(stats.next_delete_horizon_ms.map_or(hz, |cur| cur.min(hz)));
            }
            let (output, copied): (&[u8], bool) = match &r.output {
                BatchOutput::Copy => (&bytes, true),
                BatchOutput::Rewritten(b) => (b, false),
                BatchOutput::Dropped => (&[], false),
            };
            // A removed ABORT marker always changes its batch, so the group is rewritten.
            let copied = copied && !removed_abort;
            let changed = out.push(log, ctx, base, &h, &bytes, output, copied)?;
            if let (Some(c), true) = (changed, removed_abort) {
                c.removed_aborts.push(h.base_offset);
            }
        }
    }
    out.finish(log, ctx)
}

/// The base offset of the segment after the last one of `group` (the log end when none).
fn segment_end(view: &CleanerView, group: &[i64]) -> i64 {
    let last = group.last().copied().unwrap_or(i64::MIN);
    view.segments
        .iter()
        .find(|s| s.base_offset > last)
        .map_or(view.log_end_offset, |s| s.base_offset)
}

/// Reads the intent of an unfinished pass, if any, learns what it archived, and makes sure an
/// intent naming this archive partition is on disk before the first append.
fn begin_archiving(
    log: &Log,
    sink: &dyn ArchiveSink,
    ctx: &PassContext<'_>,
) -> Result<ArchivedOffsets> {
    let (topic, partition) = sink.target();
    let end = sink.end_offset();
    let same = |i: &PassIntent| i.archive_topic == topic && i.archive_partition == partition;
    let existing = archive::read_intent(log.dir())?;
    match existing {
        // The archive was not truncated or re-created since: its tail is that pass's output.
        Some(i) if same(&i) && i.from_offset <= end => {
            let already = archive::scan_archived(sink, i.from_offset, ctx.topic, ctx.partition)?;
            if !already.is_empty() {
                tracing::info!(topic = ctx.topic, partition = ctx.partition,
                    archive_topic = topic, archive_partition = partition,
                    records = already.len(),
                    "an interrupted cleaning pass had archived records; they are not archived again");
            }
            Ok(already)
        }
        other => {
            if let Some(i) = other {
                tracing::warn!(topic = ctx.topic, partition = ctx.partition,
                    old_archive = %i.archive_topic, archive_topic = topic,
                    "the archive of an interrupted pass changed; records it archived may be                      archived again in the new one");
            }
            archive::write_intent(
                log.dir(),
                &PassIntent {
                    archive_topic: topic.to_string(),
                    archive_partition: partition,
                    from_offset: end,
                },
            )?;
            Ok(ArchivedOffsets::default())
        }
    }
}

/// Where a test may stop an archiving pass (`fault.rs`); nothing in normal builds.
#[derive(Clone, Copy)]
enum FaultStep {
    AfterSync,
    AfterSwap,
}

#[allow(unused_variables)]
fn fault_point(ctx: &PassContext<'_>, archiving: bool, step: FaultStep) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    if archiving {
        let step = match step {
            FaultStep::AfterSync => crate::fault::ArchiveStep::AfterSync,
            FaultStep::AfterSwap => crate::fault::ArchiveStep::AfterSwap,
        };
        return crate::fault::archive_step(ctx.topic, step);
    }
    Ok(())
}

/// One line per pass, like Kafka's cleaner log.
fn log_summary(ctx: &PassContext<'_>, s: &PassStats) {
    let secs = s.duration.as_secs_f64().max(1e-6);
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    tracing::info!(
        topic = ctx.topic,
        partition = ctx.partition,
        first_dirty = s.first_dirty_offset,
        end_offset = s.end_offset,
        first_uncleanable = s.first_uncleanable_offset,
        partial = s.partial,
        records_archived = s.records_archived,
        bytes_archived = s.bytes_archived,
        segments_unchanged = s.segments_unchanged,
        segments_skipped = s.segments_skipped,
        bytes_skipped = s.bytes_skipped,
        "cleaned log in {:.3} s: read {:.2} MB ({:.2} MB/s), wrote {:.2} MB ({:.2} MB/s), \
         {:.1}% size reduction of {} segments in {} groups; kept {}/{} records, removed {} \
         tombstones; map {} keys, {:.1}% full",
        secs,
        mb(s.bytes_read),
        mb(s.bytes_read) / secs,
        mb(s.bytes_written),
        mb(s.bytes_written) / secs,
        if s.bytes_before == 0 {
            0.0
        } else {
            100.0 * (1.0 - s.bytes_written as f64 / s.bytes_before as f64)
        },
        s.segments_rewritten,
        s.groups,
        s.records_kept,
        s.records_read,
        s.tombstones_removed,
        s.map_keys,
        100.0 * s.map_fill,
    );
}
