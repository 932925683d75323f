//! The share partition's view of a data partition's log: where a share partition without state
//! starts ([`LogOffsets`]), and a read from the next fetch offset described as
//! [`FetchedBatch`]es (offsets and transaction facts only) for the state machine, with the
//! bytes kept aside and cut down to the batches that were handed out.
//!
//! Thread safety: reads take the log's published snapshot and read segment files with
//! positioned reads (no append lock); they touch disk, so callers run them on the blocking
//! pool (see `handlers/mod.rs`).

use bytes::{Bytes, BytesMut};
use skiff_coordinator::share::{AbortedTxn, AcquiredRecords, FetchedBatch, Isolation, LogOffsets};
use skiff_log::{ControlType, LogError};
use skiff_records::Batches;

use crate::partition::Partition;

/// [`LogOffsets`] over a partition (ListOffsets read_uncommitted, as Kafka asks).
pub struct LogView<'a>(pub &'a Partition);

impl LogOffsets for LogView<'_> {
    fn log_start_offset(&self) -> i64 {
        self.0.log.log_start_offset()
    }

    fn latest_offset(&self) -> i64 {
        self.0.log.high_watermark()
    }

    fn offset_for_timestamp(&self, timestamp_ms: i64) -> Option<i64> {
        match self.0.log.offset_for_timestamp(timestamp_ms) {
            Ok(found) => found.map(|(offset, _)| offset),
            Err(e) => {
                tracing::warn!(topic = %self.0.topic, partition = self.0.index, error = %e,
                    "share.auto.offset.reset by_duration: timestamp lookup failed");
                None
            }
        }
    }
}

/// One read of the log for an acquisition.
pub struct ShareRead {
    /// The offset the read started at.
    pub fetch_offset: i64,
    pub batches: Vec<FetchedBatch>,
    pub isolation: Isolation,
    /// The whole batches read, in order, each with its first and last offset.
    pieces: Vec<(i64, i64, Bytes)>,
}

impl ShareRead {
    /// The bytes of the batches that hold at least one acquired offset, in log order.
    pub fn bytes_for(&self, acquired: &[AcquiredRecords]) -> Bytes {
        let mut out = BytesMut::new();
        for (first, last, bytes) in &self.pieces {
            if acquired
                .iter()
                .any(|a| a.first_offset <= *last && a.last_offset >= *first)
            {
                out.extend_from_slice(bytes);
            }
        }
        out.freeze()
    }
}

/// Reads whole batches from `offset` up to `max_bytes` (at least one batch), stopping at the
/// last stable offset under read_committed. An offset past the log end reads nothing.
pub fn read(
    partition: &Partition,
    offset: i64,
    max_bytes: usize,
    read_committed: bool,
) -> Result<ShareRead, LogError> {
    let log = &partition.log;
    let empty = |isolation| ShareRead {
        fetch_offset: offset,
        batches: Vec::new(),
        isolation,
        pieces: Vec::new(),
    };
    if offset >= log.log_end_offset() {
        return Ok(empty(Isolation::ReadUncommitted));
    }
    let info = log.read_isolated(offset, max_bytes, true, read_committed)?;
    let isolation = if read_committed {
        Isolation::ReadCommitted {
            last_stable_offset: info.last_stable_offset,
            aborted: log
                .aborted_transactions(offset, info.last_stable_offset)
                .into_iter()
                .map(|(producer_id, first_offset)| AbortedTxn {
                    producer_id,
                    first_offset,
                })
                .collect(),
        }
    } else {
        Isolation::ReadUncommitted
    };
    let mut read = empty(isolation);
    let records = info.records;
    let mut position = 0usize;
    for batch in Batches::new(&records) {
        // The log wrote and validated these bytes; a batch that does not parse ends the read.
        let Ok((header, whole)) = batch else { break };
        let start = position;
        position += whole.len();
        let is_abort_marker = header.is_control()
            && skiff_log::parse_marker(whole).is_some_and(|(c, _)| c == ControlType::Abort);
        read.batches.push(FetchedBatch {
            base_offset: header.base_offset,
            last_offset: header.last_offset(),
            producer_id: header.producer_id,
            is_transactional: header.is_transactional(),
            is_abort_marker,
        });
        read.pieces.push((
            header.base_offset,
            header.last_offset(),
            records.slice(start..position),
        ));
    }
    Ok(read)
}
