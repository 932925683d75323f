//! Helpers shared by the share-partition tests.

use super::*;

pub const LOCK_MS: i64 = 30_000;

pub fn partition(max_in_flight_records: u32, delivery_count_limit: u16) -> SharePartition {
    SharePartition::new(
        0,
        0,
        ShareLimits {
            max_in_flight_records,
            delivery_count_limit,
        },
    )
}

/// Batches of `size` records from `first` up to `last` (inclusive).
pub fn log(first: i64, last: i64, size: i64) -> Vec<FetchedBatch> {
    (first..=last)
        .step_by(size as usize)
        .map(|b| FetchedBatch::data(b, (b + size - 1).min(last)))
        .collect()
}

/// The log read a broker would do from `fetch_offset`: every batch ending at or after it.
pub fn read(all: &[FetchedBatch], fetch_offset: i64) -> Vec<FetchedBatch> {
    all.iter()
        .filter(|b| b.last_offset >= fetch_offset)
        .copied()
        .collect()
}

/// Reads from the partition's next fetch offset and acquires up to `max_records` for `member`.
pub fn fetch(
    p: &mut SharePartition,
    member: &str,
    all: &[FetchedBatch],
    max_records: u32,
    now_ms: i64,
) -> Vec<(i64, i64, u16)> {
    let from = p.next_fetch_offset();
    let batches = read(all, from);
    let isolation = Isolation::ReadUncommitted;
    let got = p.acquire(&Fetch {
        member_id: member,
        fetch_offset: from,
        batches: &batches,
        isolation: &isolation,
        max_records,
        batch_size: 0,
        mode: AcquireMode::BatchOptimized,
        lock_duration_ms: LOCK_MS,
        now_ms,
    });
    ranges(&got)
}

pub fn ranges(acquired: &[AcquiredRecords]) -> Vec<(i64, i64, u16)> {
    acquired
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

pub fn ctx(now_ms: i64) -> AckContext {
    AckContext {
        now_ms,
        lock_duration_ms: LOCK_MS,
        renew_supported: true,
        is_renew_ack: false,
        renew_enabled: true,
    }
}

pub fn ack(
    p: &mut SharePartition,
    member: &str,
    first: i64,
    last: i64,
    ack_type: i8,
) -> Result<Acknowledged, ShareError> {
    p.acknowledge(member, &[AckBatch::range(first, last, ack_type)], &ctx(0))
}

pub fn state(p: &SharePartition, offset: i64) -> Option<(DeliveryState, u16)> {
    p.record(offset).map(|r| (r.state, r.delivery_count))
}
