//! In-place rewrites the broker applies to a batch at append time: base offset, partition leader
//! epoch (both outside the CRC), and LogAppendTime (inside it, so the CRC is recomputed).
//!
//! Operate on `&mut [u8]` owned by the caller; thread-safe as long as the caller's borrow is.
//! Buffers too short to hold the field are left untouched: callers stamp only validated batches.

use crate::batches::crc_of;
use crate::header::{
    ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, CRC_OFFSET, HEADER_LEN, LEADER_EPOCH_OFFSET,
    MAX_TIMESTAMP_OFFSET, TIMESTAMP_TYPE_BIT,
};

fn put(batch: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = batch.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// Writes the batch's base offset (bytes 0..8). The CRC does not cover it.
pub fn stamp_base_offset(batch: &mut [u8], base_offset: i64) {
    put(batch, BASE_OFFSET_OFFSET, &base_offset.to_be_bytes());
}

/// Writes the partition leader epoch (bytes 12..16). The CRC does not cover it.
pub fn stamp_leader_epoch(batch: &mut [u8], epoch: i32) {
    put(batch, LEADER_EPOCH_OFFSET, &epoch.to_be_bytes());
}

/// Marks the batch LogAppendTime with `timestamp` as its max timestamp and recomputes the CRC,
/// as Kafka's `DefaultRecordBatch.setMaxTimestamp` does. `baseTimestamp` and the record deltas
/// are kept: readers of a LogAppendTime batch use `maxTimestamp` for every record.
pub fn stamp_log_append_time(batch: &mut [u8], timestamp: i64) {
    if batch.len() < HEADER_LEN {
        return;
    }
    let attrs = i16::from_be_bytes([batch[ATTRIBUTES_OFFSET], batch[ATTRIBUTES_OFFSET + 1]]);
    put(
        batch,
        ATTRIBUTES_OFFSET,
        &(attrs | TIMESTAMP_TYPE_BIT).to_be_bytes(),
    );
    put(batch, MAX_TIMESTAMP_OFFSET, &timestamp.to_be_bytes());
    let crc = crc_of(batch);
    put(batch, CRC_OFFSET, &crc.to_be_bytes());
}
