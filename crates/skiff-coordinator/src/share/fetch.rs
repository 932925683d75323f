//! What a log read hands the state machine: the batches it returned (only their offsets and
//! transaction facts; the bytes stay with the caller) and the isolation level with what it
//! needs (the last stable offset and the aborted transactions).

/// One record batch of the log read. Offsets between two batches hold no record (compacted
/// away); Kafka hands them out inside the acquired ranges and the consumer acknowledges them
/// as GAP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 when the batch has no producer id.
    pub producer_id: i64,
    pub is_transactional: bool,
    /// A control batch whose marker is ABORT (it closes the producer's aborted transaction).
    pub is_abort_marker: bool,
}

impl FetchedBatch {
    /// A plain, non-transactional batch.
    pub fn data(base_offset: i64, last_offset: i64) -> FetchedBatch {
        FetchedBatch {
            base_offset,
            last_offset,
            producer_id: -1,
            is_transactional: false,
            is_abort_marker: false,
        }
    }

    /// A batch written inside a transaction of `producer_id`.
    pub fn transactional(base_offset: i64, last_offset: i64, producer_id: i64) -> FetchedBatch {
        FetchedBatch {
            producer_id,
            is_transactional: true,
            ..FetchedBatch::data(base_offset, last_offset)
        }
    }

    /// The ABORT control marker of `producer_id` at `offset`.
    pub fn abort_marker(offset: i64, producer_id: i64) -> FetchedBatch {
        FetchedBatch {
            is_abort_marker: true,
            ..FetchedBatch::transactional(offset, offset, producer_id)
        }
    }
}

/// An aborted transaction as the log reports it for a read (Fetch's AbortedTransactions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
}

/// `share.isolation.level` of the group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Isolation {
    #[default]
    ReadUncommitted,
    /// Nothing at or after the last stable offset is handed out, and batches of aborted
    /// transactions are archived instead of delivered.
    ReadCommitted {
        last_stable_offset: i64,
        aborted: Vec<AbortedTxn>,
    },
}

/// How ShareFetch v2 asks records to be acquired (KIP-1206). Only the default is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcquireMode {
    /// Whole batches, so `max_records` may be exceeded to end on a batch boundary.
    #[default]
    BatchOptimized,
}

/// One ShareFetch of one partition by one member.
#[derive(Debug, Clone)]
pub struct Fetch<'a> {
    pub member_id: &'a str,
    /// The offset the log read started at (normally [`super::SharePartition::next_fetch_offset`]).
    pub fetch_offset: i64,
    /// The batches the read returned, in offset order.
    pub batches: &'a [FetchedBatch],
    pub isolation: &'a Isolation,
    /// ShareFetch `MaxRecords`; Kafka exceeds it to hand out whole batches.
    pub max_records: u32,
    /// ShareFetch `BatchSize`: new records are cut into acquired ranges of about this many
    /// records, on batch boundaries. 0 means no cutting.
    pub batch_size: u32,
    pub mode: AcquireMode,
    /// `share.record.lock.duration.ms` of the group.
    pub lock_duration_ms: i64,
    pub now_ms: i64,
}

/// One ShareFetch `AcquiredRecords` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRecords {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_count: u16,
}

/// The batches of aborted transactions among `batches`: a transactional batch whose producer
/// has an aborted transaction starting at or before the batch's end, until that producer's
/// ABORT marker.
pub(super) fn aborted_batches(batches: &[FetchedBatch], aborted: &[AbortedTxn]) -> Vec<(i64, i64)> {
    let mut pending: Vec<AbortedTxn> = aborted.to_vec();
    pending.sort_by_key(|t| std::cmp::Reverse(t.first_offset));
    let mut open = std::collections::HashSet::new();
    let mut out = Vec::new();
    for batch in batches {
        if batch.producer_id < 0 {
            continue;
        }
        while pending
            .last()
            .is_some_and(|t| t.first_offset <= batch.last_offset)
        {
            if let Some(t) = pending.pop() {
                open.insert(t.producer_id);
            }
        }
        if batch.is_abort_marker {
            open.remove(&batch.producer_id);
        } else if batch.is_transactional && open.contains(&batch.producer_id) {
            out.push((batch.base_offset, batch.last_offset));
        }
    }
    out
}
