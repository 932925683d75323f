//! The share partition itself: the start offset, the end offset and the records in flight
//! between them, and the transitions that do not come from a fetch or an acknowledgement:
//! lock expiry, a member leaving, the log start moving, and the start offset advancing.
//!
//! Offsets: every offset below `start_offset` is done (delivered and acknowledged, archived,
//! or gone from the log). `end_offset` is one past the last offset ever acquired (Kafka keeps
//! the last acquired offset itself; we keep the exclusive bound so an empty partition has
//! `start == end`). An offset in `[start, end)` with no entry in `records` is either a gap a
//! restored snapshot did not cover (listed in `gaps`, acquired as new when fetched) or a hole
//! the log does not hold (compaction), which counts as done.
//!
//! Thread safety: none inside; the owner serialises calls (one share partition, one lock).

use std::collections::BTreeMap;

use super::gaps::Gaps;
use super::record::{DeliveryState, InFlightRecord};

/// Kafka's `group.share.record.lock.duration.ms` default: how long a consumer holds records
/// before they go back for redelivery.
pub const DEFAULT_RECORD_LOCK_DURATION_MS: i64 = 30_000;
/// Kafka's `group.share.partition.max.record.locks` default.
pub const DEFAULT_MAX_IN_FLIGHT_RECORDS: u32 = 2_000;
/// Kafka's `group.share.delivery.count.limit` default.
pub const DEFAULT_DELIVERY_COUNT_LIMIT: u16 = 5;

/// The two limits the state machine enforces itself. The lock duration is passed per call
/// because Kafka reads it from the group config at every acquisition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// `share.partition.max.record.locks` (group) / `group.share.partition.max.record.locks`
    /// (broker): at most this many offsets between the start and the end offset; a fetch past
    /// the end acquires only what fits (rounded up to a whole log batch, as Kafka does).
    pub max_in_flight_records: u32,
    /// `share.delivery.count.limit` / `group.share.delivery.count.limit`: a record given back
    /// after this many deliveries is archived instead of redelivered.
    pub delivery_count_limit: u16,
}

impl Default for ShareLimits {
    fn default() -> Self {
        ShareLimits {
            max_in_flight_records: DEFAULT_MAX_IN_FLIGHT_RECORDS,
            delivery_count_limit: DEFAULT_DELIVERY_COUNT_LIMIT,
        }
    }
}

/// What giving records back changed (lock expiry, a member leaving), for metrics and to wake
/// fetches waiting for available records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Back to AVAILABLE, to be redelivered.
    pub made_available: u64,
    /// ARCHIVED because they had been delivered `delivery_count_limit` times.
    pub archived_at_limit: u64,
}

/// One (share group, topic-partition): see the module documentation.
#[derive(Debug, Clone)]
pub struct SharePartition {
    pub(super) start_offset: i64,
    pub(super) end_offset: i64,
    pub(super) state_epoch: i32,
    pub(super) limits: ShareLimits,
    pub(super) records: BTreeMap<i64, InFlightRecord>,
    /// Offsets below the end offset still to be delivered for the first time (restore gaps).
    pub(super) gaps: Gaps,
}

impl SharePartition {
    /// A partition with nothing in flight, starting at `start_offset` (from the persisted
    /// state, or from [`super::reset::initial_start_offset`] when there is none).
    pub fn new(start_offset: i64, state_epoch: i32, limits: ShareLimits) -> SharePartition {
        SharePartition {
            start_offset,
            end_offset: start_offset,
            state_epoch,
            limits,
            records: BTreeMap::new(),
            gaps: Gaps::default(),
        }
    }

    /// The share-partition start offset (SPSO).
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }
    /// One past the last acquired offset; equal to the start offset when nothing is in flight.
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }
    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }
    pub fn limits(&self) -> ShareLimits {
        self.limits
    }
    /// Group configs are dynamic in Kafka; new limits apply from the next transition.
    pub fn set_limits(&mut self, limits: ShareLimits) {
        self.limits = limits;
    }

    /// Offsets counted against `max_in_flight_records`: everything from the start to the end
    /// offset, whatever its state (Kafka counts the same span).
    pub fn in_flight_count(&self) -> u64 {
        (self.end_offset - self.start_offset).max(0) as u64
    }

    /// The state of one offset, if it is tracked.
    pub fn record(&self, offset: i64) -> Option<&InFlightRecord> {
        self.records.get(&offset)
    }

    /// Every tracked record, in offset order.
    pub fn records(&self) -> impl Iterator<Item = (i64, &InFlightRecord)> {
        self.records.iter().map(|(o, r)| (*o, r))
    }

    /// Where the next log read should start: the first in-flight offset that can be acquired
    /// (AVAILABLE, or a gap left by a restored snapshot), else the end offset.
    pub fn next_fetch_offset(&self) -> i64 {
        let available = self
            .records
            .range(self.start_offset..)
            .find(|(_, r)| r.state == DeliveryState::Available)
            .map(|(o, _)| *o);
        let gap = self.gaps.first_at_or_after(self.start_offset);
        match (available, gap) {
            (Some(a), Some(g)) => a.min(g),
            (Some(a), None) => a,
            (None, Some(g)) => g,
            (None, None) => self.end_offset,
        }
    }

    /// The earliest lock deadline, so the owner knows when to call [`Self::expire`].
    pub fn next_lock_deadline(&self) -> Option<i64> {
        self.records
            .values()
            .filter_map(|r| r.lock.as_ref().map(|l| l.deadline_ms))
            .min()
    }

    /// Lock expiry: every ACQUIRED record whose lock deadline is at or before `now_ms` goes
    /// back to AVAILABLE with its delivery count kept, or to ARCHIVED if it has reached the
    /// delivery limit. Then the start offset advances if it can.
    pub fn expire(&mut self, now_ms: i64) -> Released {
        let limit = self.limits.delivery_count_limit;
        let mut released = Released::default();
        for record in self.records.values_mut() {
            let expired = record
                .lock
                .as_ref()
                .is_some_and(|l| l.deadline_ms <= now_ms);
            if expired {
                count_give_back(&mut released, record.give_back(limit));
            }
        }
        self.advance_start();
        released
    }

    /// A member left the group (or its share session closed): everything it holds goes back
    /// as on lock expiry. Kafka keeps the delivery count here too, so a record at the limit
    /// is archived.
    pub fn release_member(&mut self, member_id: &str) -> Released {
        let limit = self.limits.delivery_count_limit;
        let mut released = Released::default();
        for record in self.records.values_mut() {
            if record.state == DeliveryState::Acquired && record.held_by(member_id) {
                count_give_back(&mut released, record.give_back(limit));
            }
        }
        self.advance_start();
        released
    }

    /// The log start offset moved (retention, DeleteRecords). Records below it can no longer
    /// be delivered: the start offset jumps to it and they are forgotten. Kafka archives the
    /// AVAILABLE ones and lets ACQUIRED ones finish, but acknowledgements below the start
    /// offset are ignored and releases below it archive, so forgetting them at once is the
    /// same to every client.
    pub fn log_start_moved(&mut self, log_start_offset: i64) {
        if log_start_offset <= self.start_offset {
            return;
        }
        self.start_offset = log_start_offset;
        self.records = self.records.split_off(&log_start_offset);
        self.gaps.remove(i64::MIN, log_start_offset - 1);
        self.end_offset = self.end_offset.max(self.start_offset);
        self.advance_start();
    }

    /// Moves the start offset past the ACKNOWLEDGED and ARCHIVED records at its head (and
    /// past holes the log no longer holds) and drops them. Stops at the first record still
    /// AVAILABLE or ACQUIRED, and at a restore gap, as Kafka does.
    pub(super) fn advance_start(&mut self) {
        let first_gap = self.gaps.first_at_or_after(self.start_offset);
        let mut next = self.start_offset;
        for (offset, record) in self.records.range(self.start_offset..) {
            if first_gap.is_some_and(|g| g < *offset) || !record.state.is_terminal() {
                break;
            }
            next = offset + 1;
        }
        // Nothing tracked after `next`: the rest up to the end offset is holes, unless a gap
        // is still to be delivered.
        if self.records.range(next..).next().is_none() {
            next = first_gap.map_or(self.end_offset, |g| g.min(self.end_offset));
        } else if let Some((offset, _)) = self.records.range(next..).next() {
            // Holes between `next` and the next tracked record are done as well.
            let limit = first_gap.map_or(*offset, |g| g.min(*offset));
            next = next.max(limit);
        }
        if next <= self.start_offset {
            return;
        }
        self.start_offset = next;
        self.records = self.records.split_off(&next);
        self.end_offset = self.end_offset.max(next);
    }

    /// The last tracked offset (for acknowledgement range checks).
    pub(super) fn last_tracked(&self) -> Option<i64> {
        self.records.keys().next_back().copied()
    }
}

fn count_give_back(released: &mut Released, archived: bool) {
    if archived {
        released.archived_at_limit += 1;
    } else {
        released.made_available += 1;
    }
}
