//! `__transaction_state` (created on first use, see `crate::internal_topic`): appending one
//! record per state change or a tombstone
//! for an expired transactional id (waiting for the fsync), and replaying it at start (the latest value of each transactional id wins; a
//! tombstone removes the id).
//!
//! On-disk format: Kafka's `TransactionLogKey`/`TransactionLogValue` (`records.rs`), one
//! uncompressed batch per change, appended with [`InternalPartition::append`] (the broker's `Log::append_internal`) to partition
//! `abs(javaHash(transactional id)) % partitions`, where Kafka puts it. The topic is compacted.
//!
//! Thread safety: callers serialise writes per transactional id (the `pending` flag); the
//! log's own lock orders concurrent appends.

use std::collections::HashMap;
use std::sync::Arc;

use skiff_records::{BatchBuilder, Batches, Compression};
use tracing::warn;

use super::records;
use super::state::TxnMetadata;
use crate::host::{InternalPartition, LEADER_EPOCH};

pub const TXN_STATE_TOPIC: &str = "__transaction_state";
/// Read size while replaying a partition.
const REPLAY_CHUNK: usize = 4 << 20;
/// Cap on the decompressed size of one replayed batch.
const MAX_DECOMPRESSED: usize = 64 << 20;

/// Appends `m` and fsyncs it.
pub fn write<P: InternalPartition>(partition: &P, m: &TxnMetadata, now: i64) -> Result<(), String> {
    let value = records::encode_value(m);
    append(partition, &m.transactional_id, Some(&value), now)
}

/// Appends a tombstone for `transactional_id` (an expired id) and fsyncs it: replay then
/// forgets the id, and compaction eventually drops its records.
pub fn write_tombstone<P: InternalPartition>(
    partition: &P,
    transactional_id: &str,
    now: i64,
) -> Result<(), String> {
    append(partition, transactional_id, None, now)
}

/// Appends to `partition`, the one `abs(javaHash(transactional id)) % partitions` names.
fn append<P: InternalPartition>(
    partition: &P,
    transactional_id: &str,
    value: Option<&[u8]>,
    now: i64,
) -> Result<(), String> {
    let mut b = BatchBuilder::new(0, Compression::None);
    b.push(
        now,
        Some(&records::encode_key(transactional_id)),
        value,
        &[],
    );
    let batch = b.build().map_err(|e| e.to_string())?;
    partition
        .append(&batch, LEADER_EPOCH, now)
        .map_err(|e| e.to_string())?;
    partition.flush().map_err(|e| e.to_string())?;
    partition.wake_readers();
    Ok(())
}

/// Every transactional id's latest metadata, and how many records were read.
pub fn replay<P: InternalPartition>(partitions: &[Arc<P>]) -> (Vec<TxnMetadata>, u64) {
    let mut latest: HashMap<String, Option<TxnMetadata>> = HashMap::new();
    let mut count = 0u64;
    for partition in partitions {
        let mut offset = partition.log_start_offset();
        let end = partition.log_end_offset();
        while offset < end {
            let records = match partition.read(offset, REPLAY_CHUNK) {
                Ok(r) if !r.is_empty() => r,
                Ok(_) => break,
                Err(e) => {
                    warn!(partition = partition.index(), offset, error = %e,
                        "{TXN_STATE_TOPIC} replay read failed; skipping the rest of this partition");
                    break;
                }
            };
            let mut next = offset;
            for batch in Batches::new(&records) {
                let Ok((header, bytes)) = batch else { break };
                next = header.next_offset();
                if header.is_control() {
                    continue;
                }
                let Ok(recs) = skiff_records::records(bytes, MAX_DECOMPRESSED) else {
                    warn!(
                        partition = partition.index(),
                        offset = header.base_offset,
                        "skipping an unreadable {TXN_STATE_TOPIC} batch"
                    );
                    continue;
                };
                for r in recs {
                    let Some(key) = r.key.as_deref() else {
                        continue;
                    };
                    let id = match records::decode_key(key) {
                        Ok(id) => id,
                        Err(e) => {
                            warn!(error = %e.in_topic(TXN_STATE_TOPIC), "skipping a record with an unreadable key");
                            continue;
                        }
                    };
                    count += 1;
                    match r.value.as_deref().map(|v| records::decode_value(&id, v)) {
                        None => {
                            latest.insert(id, None);
                        }
                        Some(Ok(m)) => {
                            latest.insert(id, Some(m));
                        }
                        Some(Err(e)) => {
                            warn!(error = %e.in_topic(TXN_STATE_TOPIC), "skipping an unreadable value")
                        }
                    }
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
    }
    (latest.into_values().flatten().collect(), count)
}
