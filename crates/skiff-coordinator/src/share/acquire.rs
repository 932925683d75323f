//! Acquisition: handing records of a log read to one member, under a time-limited lock.
//!
//! In offset order, records already in flight that are AVAILABLE are taken again (their
//! delivery count goes up), gaps a restored snapshot left are taken as new, and then new
//! records past the end offset, as whole log batches, as far as `max_records` and the
//! in-flight limit allow. Records near the delivery limit are handed out in ever smaller
//! groups, so that one poison record does not drag a whole batch to the limit with it (Kafka
//! 4.2+ throttling; see [`throttle_threshold`]).

use std::sync::Arc;

use super::fetch::{aborted_batches, AbortedTxn, AcquiredRecords, Fetch, FetchedBatch, Isolation};
use super::partition::SharePartition;
use super::record::{DeliveryState, InFlightRecord};

/// The smallest delivery count at which throttling starts (Kafka's minimum).
const MIN_THROTTLE_THRESHOLD: u16 = 2;

/// From this delivery count on, a record is re-delivered in a shrinking group: half the
/// delivery limit, rounded up, and at least 2.
pub fn throttle_threshold(delivery_count_limit: u16) -> u16 {
    MIN_THROTTLE_THRESHOLD.max(delivery_count_limit.div_ceil(2))
}

/// The state of one acquisition while it runs.
struct Acquiring {
    member: Arc<str>,
    deadline_ms: i64,
    /// How many offsets this acquisition may take (before rounding up to a whole batch).
    max: u64,
    count: u64,
    out: Vec<AcquiredRecords>,
    /// The in-flight batch the last entry of `out` was re-acquired from, so that offsets of
    /// one batch are reported as one range and different batches are not merged.
    open_batch: Option<i64>,
    /// Throttling or the last delivery attempt ended this acquisition early.
    stopped: bool,
}

impl Acquiring {
    fn push_offset(&mut self, offset: i64, delivery_count: u16, batch: i64) {
        if self.open_batch == Some(batch) {
            if let Some(last) = self.out.last_mut() {
                if last.last_offset + 1 == offset && last.delivery_count == delivery_count {
                    last.last_offset = offset;
                    self.count += 1;
                    return;
                }
            }
        }
        self.out.push(AcquiredRecords {
            first_offset: offset,
            last_offset: offset,
            delivery_count,
        });
        self.open_batch = Some(batch);
        self.count += 1;
    }

    fn push_new(&mut self, first_offset: i64, last_offset: i64) {
        self.out.push(AcquiredRecords {
            first_offset,
            last_offset,
            delivery_count: 1,
        });
        self.open_batch = None;
        self.count += (last_offset - first_offset + 1) as u64;
    }
}

impl SharePartition {
    /// Acquires records of `fetch` for its member and returns them as ShareFetch's
    /// AcquiredRecords. Returns nothing when the read holds nothing acquirable, when the
    /// in-flight limit is reached past the end offset, or when `max_records` is 0.
    pub fn acquire(&mut self, fetch: &Fetch<'_>) -> Vec<AcquiredRecords> {
        if fetch.max_records == 0 {
            return Vec::new();
        }
        let visible: Vec<FetchedBatch> = fetch
            .batches
            .iter()
            .filter(|b| b.base_offset <= b.last_offset)
            .filter(|b| match fetch.isolation {
                Isolation::ReadUncommitted => true,
                Isolation::ReadCommitted {
                    last_stable_offset, ..
                } => b.last_offset < *last_stable_offset,
            })
            .copied()
            .collect();
        let (Some(first_batch), Some(last_batch)) = (visible.first(), visible.last()) else {
            return Vec::new();
        };
        if last_batch.last_offset < self.start_offset {
            return Vec::new();
        }
        let Some((last_to_acquire, max)) = self.acquire_bounds(
            fetch.fetch_offset,
            fetch.max_records,
            last_batch.last_offset,
        ) else {
            return Vec::new();
        };
        let first_base = first_batch.base_offset;
        self.archive_compacted(fetch.fetch_offset, first_base);

        let mut run = Acquiring {
            member: Arc::from(fetch.member_id),
            deadline_ms: fetch.now_ms.saturating_add(fetch.lock_duration_ms),
            max,
            count: 0,
            out: Vec::new(),
            open_batch: None,
            stopped: false,
        };
        let lo = first_base.max(self.start_offset);
        let hi = last_to_acquire.min(self.end_offset - 1);
        if lo <= hi {
            self.reacquire(lo, hi, &visible, fetch.batch_size, &mut run);
        }
        let new_first = lo.max(self.end_offset);
        if !run.stopped && run.count < run.max && new_first <= last_to_acquire {
            self.acquire_new(
                new_first,
                last_to_acquire,
                &visible,
                fetch.batch_size,
                &mut run,
            );
        }
        let mut out = run.out;
        if let Isolation::ReadCommitted { aborted, .. } = fetch.isolation {
            if !aborted.is_empty() {
                out = self.archive_aborted(&visible, aborted, out);
            }
        }
        self.advance_start();
        out
    }

    /// The last offset and the number of offsets this acquisition may take. Past the end
    /// offset only what fits under the in-flight limit is taken; at the limit, a read that
    /// starts inside the in-flight span may still re-acquire released records there.
    fn acquire_bounds(&self, fetch_offset: i64, max_records: u32, last: i64) -> Option<(i64, u64)> {
        let room = i64::from(self.limits.max_in_flight_records) - self.in_flight_count() as i64;
        let mut max = i64::from(max_records).min(room);
        let mut last_to_acquire = last;
        if max <= 0 {
            if fetch_offset >= self.end_offset {
                return None;
            }
            max = i64::from(max_records).min(self.end_offset - fetch_offset);
            last_to_acquire = last.min(self.end_offset - 1);
        }
        (max > 0).then_some((last_to_acquire, max as u64))
    }

    /// The read started at `fetch_offset` but its first batch is at `first_base`: whatever was
    /// in between is gone from the log (compaction). AVAILABLE records there are archived and
    /// restore gaps there forgotten, as Kafka archives its stale batches.
    fn archive_compacted(&mut self, fetch_offset: i64, first_base: i64) {
        if fetch_offset >= first_base {
            return;
        }
        for record in self
            .records
            .range_mut(fetch_offset..first_base)
            .map(|(_, r)| r)
        {
            if record.state == DeliveryState::Available {
                record.finish(DeliveryState::Archived);
            }
        }
        self.gaps.remove(fetch_offset, first_base - 1);
    }

    /// Re-acquires AVAILABLE records and restore gaps in `[lo, hi]`, one in-flight batch at a
    /// time, stopping at a batch boundary once `max` is reached.
    fn reacquire(
        &mut self,
        lo: i64,
        hi: i64,
        batches: &[FetchedBatch],
        batch_size: u32,
        run: &mut Acquiring,
    ) {
        let mut offset = lo;
        while offset <= hi && !run.stopped && run.count < run.max {
            let next_tracked = self
                .records
                .range(offset..=hi)
                .next()
                .map_or(hi + 1, |(o, _)| *o);
            if next_tracked > offset {
                // Untracked: a restore gap to deliver, or a hole the log does not hold.
                if let Some((_, gap_last)) = self.gaps.containing(offset) {
                    let to = gap_last.min(next_tracked - 1);
                    let acquired_to = self.acquire_new(offset, to, batches, batch_size, run);
                    if acquired_to < to {
                        return;
                    }
                    offset = to + 1;
                } else {
                    let next_gap = self.gaps.first_at_or_after(offset).unwrap_or(i64::MAX);
                    offset = next_tracked.min(next_gap);
                }
                continue;
            }
            let Some(batch) = self.records.get(&offset).map(|r| r.batch) else {
                return;
            };
            let batch_end = self
                .records
                .range(offset..=hi)
                .take_while(|(_, r)| r.batch == batch)
                .last()
                .map_or(offset, |(o, _)| *o);
            self.reacquire_batch(offset, batch_end, batch, run);
            offset = batch_end + 1;
        }
    }

    /// Re-acquires the AVAILABLE records of one in-flight batch within `[from, to]`.
    fn reacquire_batch(&mut self, from: i64, to: i64, batch: i64, run: &mut Acquiring) {
        let limit = self.limits.delivery_count_limit;
        let threshold = throttle_threshold(limit);
        let available: Vec<(i64, u16)> = self
            .records
            .range(from..=to)
            .filter(|(_, r)| r.state == DeliveryState::Available)
            .map(|(o, r)| (*o, r.delivery_count))
            .collect();
        let Some(highest) = available.iter().map(|(_, dc)| *dc).max() else {
            return;
        };
        let throttled = highest >= threshold;
        if throttled && run.count > 0 {
            // Deliver this batch on its own in a later fetch.
            run.stopped = true;
            return;
        }
        let batch_len = self
            .records
            .range(batch..)
            .take_while(|(_, r)| r.batch == batch)
            .count() as u64;
        let mut cap: Option<u64> = None;
        let mut taken = 0u64;
        for (offset, count) in available {
            // A record on its last attempt goes out alone.
            if limit > 2 && count == limit - 1 && run.count > 0 {
                run.stopped = true;
                break;
            }
            if count >= threshold && cap.is_none() {
                let halvings = u32::from(count - threshold) + 1;
                cap = Some(batch_len.checked_shr(halvings).unwrap_or(0).max(1));
            }
            let Some(record) = self.records.get_mut(&offset) else {
                continue;
            };
            *record = InFlightRecord::acquired(
                &run.member,
                run.deadline_ms,
                batch,
                count.saturating_add(1),
            );
            let delivered = record.delivery_count;
            run.push_offset(offset, delivered, batch);
            taken += 1;
            if (limit > 2 && delivered == limit) || cap == Some(taken) {
                run.stopped = true;
                break;
            }
        }
        if throttled && taken > 0 {
            run.stopped = true;
        }
    }

    /// Acquires never-delivered offsets from `first` up to `last`, as far as the room left in
    /// `run` allows, rounded up to the end of the log batch the limit falls in. Returns the
    /// last offset acquired (`first - 1` when none).
    fn acquire_new(
        &mut self,
        first: i64,
        last: i64,
        batches: &[FetchedBatch],
        batch_size: u32,
        run: &mut Acquiring,
    ) -> i64 {
        let remaining = run.max.saturating_sub(run.count);
        if remaining == 0 || first > last {
            return first - 1;
        }
        let span = (last - first + 1) as u64;
        let mut last_acquired = last;
        if remaining < span {
            let target = first + remaining as i64 - 1;
            let batch_end = batches
                .iter()
                .find(|b| b.base_offset <= target && target <= b.last_offset)
                .map_or(target, |b| b.last_offset);
            last_acquired = batch_end.min(last);
        }
        for (range_first, range_last) in
            split_by_batch_size(first, last_acquired, batches, batch_size)
        {
            for offset in range_first..=range_last {
                self.records.insert(
                    offset,
                    InFlightRecord::acquired(&run.member, run.deadline_ms, range_first, 1),
                );
            }
            run.push_new(range_first, range_last);
        }
        self.gaps.remove(first, last_acquired);
        self.end_offset = self.end_offset.max(last_acquired + 1);
        last_acquired
    }

    /// Under read_committed, the batches of aborted transactions are archived (never handed
    /// out) and cut out of the acquired ranges.
    fn archive_aborted(
        &mut self,
        batches: &[FetchedBatch],
        aborted: &[AbortedTxn],
        acquired: Vec<AcquiredRecords>,
    ) -> Vec<AcquiredRecords> {
        let to_archive = aborted_batches(batches, aborted);
        if to_archive.is_empty() {
            return acquired;
        }
        let mut out = Vec::with_capacity(acquired.len());
        for range in acquired {
            let mut pieces = vec![range];
            for &(first, last) in &to_archive {
                if last < range.first_offset || first > range.last_offset {
                    continue;
                }
                for offset in first.max(range.first_offset)..=last.min(range.last_offset) {
                    if let Some(record) = self.records.get_mut(&offset) {
                        record.finish(DeliveryState::Archived);
                    }
                }
                pieces = pieces
                    .into_iter()
                    .flat_map(|p| cut(p, first, last))
                    .collect();
            }
            out.extend(pieces);
        }
        out
    }
}

/// `range` without `[first, last]`: zero, one or two pieces.
fn cut(range: AcquiredRecords, first: i64, last: i64) -> Vec<AcquiredRecords> {
    if last < range.first_offset || first > range.last_offset {
        return vec![range];
    }
    let mut pieces = Vec::new();
    if range.first_offset < first {
        pieces.push(AcquiredRecords {
            last_offset: first - 1,
            ..range
        });
    }
    if range.last_offset > last {
        pieces.push(AcquiredRecords {
            first_offset: last + 1,
            ..range
        });
    }
    pieces
}

/// Cuts `[first, last]` into ranges of at least `batch_size` offsets, only where a log batch
/// starts, as Kafka does for new records (a batch is never split). 0 means one range.
fn split_by_batch_size(
    first: i64,
    last: i64,
    batches: &[FetchedBatch],
    batch_size: u32,
) -> Vec<(i64, i64)> {
    let mut ranges = Vec::new();
    let mut current = first;
    if batch_size > 0 && last - first + 1 > i64::from(batch_size) {
        for batch in batches {
            if batch.base_offset > last {
                break;
            }
            if batch.base_offset - current >= i64::from(batch_size) {
                ranges.push((current, batch.base_offset - 1));
                current = batch.base_offset;
            }
        }
    }
    ranges.push((current, last));
    ranges
}
