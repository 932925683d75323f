//! [`BatchBuilder`]: encodes one RecordBatch v2 (magic 2) from records, computing offset and
//! timestamp deltas, lengths and the CRC, and compressing the records section. Used by tests,
//! benchmarks and the log cleaner's writer.
//!
//! Owned by one thread while building; the result is plain bytes in the format described in
//! `header`.

use crate::batches::crc_of;
use crate::compression::compress;
use crate::error::RecordsError;
use crate::header::{
    Compression, ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, BASE_SEQUENCE_OFFSET,
    BASE_TIMESTAMP_OFFSET, CONTROL_BIT, CRC_OFFSET, DELETE_HORIZON_BIT, HEADER_LEN,
    LAST_OFFSET_DELTA_OFFSET, LEADER_EPOCH_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET,
    MAGIC_V2, MAX_TIMESTAMP_OFFSET, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET, RECORD_COUNT_OFFSET,
    TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
};
use crate::record::{encode_record, HeaderRef};

/// Kafka's "no timestamp" value, used for the timestamps of a batch without records.
pub const NO_TIMESTAMP: i64 = -1;

struct PendingRecord {
    offset_delta: i32,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// Builds one batch. Defaults match a non-idempotent Kafka producer: producer id, epoch and base
/// sequence -1, partition leader epoch -1, CreateTime.
pub struct BatchBuilder {
    base_offset: i64,
    compression: Compression,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    log_append_time: bool,
    delete_horizon_ms: Option<i64>,
    last_offset_delta: Option<i32>,
    records: Vec<PendingRecord>,
}

impl BatchBuilder {
    pub fn new(base_offset: i64, compression: Compression) -> Self {
        BatchBuilder {
            base_offset,
            compression,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            control: false,
            log_append_time: false,
            delete_horizon_ms: None,
            last_offset_delta: None,
            records: Vec::new(),
        }
    }

    pub fn producer_id(mut self, producer_id: i64) -> Self {
        self.producer_id = producer_id;
        self
    }

    pub fn producer_epoch(mut self, epoch: i16) -> Self {
        self.producer_epoch = epoch;
        self
    }

    pub fn base_sequence(mut self, base_sequence: i32) -> Self {
        self.base_sequence = base_sequence;
        self
    }

    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Marks the batch LogAppendTime; `maxTimestamp` is still the largest record timestamp
    /// (use [`crate::stamp_log_append_time`] to set the append time itself).
    pub fn log_append_time(mut self, on: bool) -> Self {
        self.log_append_time = on;
        self
    }

    /// Sets the delete-horizon flag (cleaner): `baseTimestamp` becomes `horizon_ms` and record
    /// timestamps are stored as deltas against it.
    pub fn delete_horizon_ms(mut self, horizon_ms: Option<i64>) -> Self {
        self.delete_horizon_ms = horizon_ms;
        self
    }

    /// Overrides `lastOffsetDelta` so a rewritten batch keeps its original offset range even
    /// when its last records were removed (the cleaner keeps it, as Kafka does). Must be at least
    /// the last record's offset delta.
    pub fn last_offset_delta(mut self, delta: i32) -> Self {
        self.last_offset_delta = Some(delta);
        self
    }

    /// Appends a record at the next offset (previous offset delta + 1, or 0).
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) {
        let offset_delta = self
            .records
            .last()
            .map(|r| r.offset_delta.saturating_add(1))
            .unwrap_or(0);
        self.push_at(offset_delta, timestamp, key, value, headers);
    }

    /// Appends a record at an explicit offset delta (the cleaner keeps original offsets, so it
    /// leaves gaps). Deltas must strictly increase; `build` rejects them otherwise.
    pub fn push_at(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) {
        self.records.push(PendingRecord {
            offset_delta,
            timestamp,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect(),
        });
    }

    /// Number of records pushed so far.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Encodes the batch: deltas, max timestamp, lengths, compression and CRC.
    pub fn build(self) -> Result<Vec<u8>, RecordsError> {
        let mut prev: Option<i32> = None;
        for r in &self.records {
            if r.offset_delta < 0 || prev.is_some_and(|p| r.offset_delta <= p) {
                return Err(RecordsError::InvalidRecord(format!(
                    "offset delta {} is negative or does not increase (previous {prev:?})",
                    r.offset_delta
                )));
            }
            prev = Some(r.offset_delta);
        }
        let last_record_delta = prev.unwrap_or(0);
        let last_offset_delta = match self.last_offset_delta {
            Some(d) if d < last_record_delta || d < 0 => {
                return Err(RecordsError::InvalidBatch(format!(
                    "last offset delta {d} is below the last record's delta {last_record_delta}"
                )))
            }
            Some(d) => d,
            None => last_record_delta,
        };
        let record_count = i32::try_from(self.records.len())
            .map_err(|_| RecordsError::TooLarge(format!("{} records", self.records.len())))?;

        let first_ts = self.records.first().map(|r| r.timestamp);
        let base_timestamp = self.delete_horizon_ms.or(first_ts).unwrap_or(NO_TIMESTAMP);
        let max_timestamp = self
            .records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);

        let mut section = Vec::new();
        let mut scratch = Vec::new();
        for r in &self.records {
            let headers: Vec<HeaderRef<'_>> = r
                .headers
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_deref()))
                .collect();
            encode_record(
                &mut section,
                &mut scratch,
                r.timestamp.wrapping_sub(base_timestamp),
                r.offset_delta,
                r.key.as_deref(),
                r.value.as_deref(),
                &headers,
            )?;
        }
        let section = compress(self.compression, &section)?;

        let total = HEADER_LEN + section.len();
        let batch_length = i32::try_from(total - LOG_OVERHEAD)
            .map_err(|_| RecordsError::TooLarge(format!("batch of {total} bytes")))?;

        let mut attributes = self.compression.id();
        if self.log_append_time {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= CONTROL_BIT;
        }
        if self.delete_horizon_ms.is_some() {
            attributes |= DELETE_HORIZON_BIT;
        }

        let mut out = vec![0u8; HEADER_LEN];
        let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
        put(BASE_OFFSET_OFFSET, &self.base_offset.to_be_bytes());
        put(LENGTH_OFFSET, &batch_length.to_be_bytes());
        put(
            LEADER_EPOCH_OFFSET,
            &self.partition_leader_epoch.to_be_bytes(),
        );
        put(MAGIC_OFFSET, &MAGIC_V2.to_be_bytes());
        put(ATTRIBUTES_OFFSET, &attributes.to_be_bytes());
        put(LAST_OFFSET_DELTA_OFFSET, &last_offset_delta.to_be_bytes());
        put(BASE_TIMESTAMP_OFFSET, &base_timestamp.to_be_bytes());
        put(MAX_TIMESTAMP_OFFSET, &max_timestamp.to_be_bytes());
        put(PRODUCER_ID_OFFSET, &self.producer_id.to_be_bytes());
        put(PRODUCER_EPOCH_OFFSET, &self.producer_epoch.to_be_bytes());
        put(BASE_SEQUENCE_OFFSET, &self.base_sequence.to_be_bytes());
        put(RECORD_COUNT_OFFSET, &record_count.to_be_bytes());
        out.extend_from_slice(&section);
        let crc = crc_of(&out);
        out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(out)
    }
}
