//! The fixed 61-byte RecordBatch v2 header: field offsets, parsing and attribute decoding.
//!
//! Pure functions over borrowed bytes; thread-safe. On-disk/wire format (big endian), offsets
//! from the start of the batch:
//!
//! ```text
//! 0  baseOffset i64          | 8  batchLength i32 (bytes after this field)
//! 12 partitionLeaderEpoch i32| 16 magic i8 | 17 crc u32 (CRC32C of bytes 21..end)
//! 21 attributes i16          | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
//! 35 maxTimestamp i64        | 43 producerId i64      | 51 producerEpoch i16
//! 53 baseSequence i32        | 57 recordCount i32     | 61 records...
//! ```

use crate::error::RecordsError;

/// Bytes before the part counted by `batchLength`: baseOffset (8) + batchLength (4).
pub const LOG_OVERHEAD: usize = 12;
/// Size of the fixed RecordBatch v2 header; records start here.
pub const HEADER_LEN: usize = 61;
/// The only batch format version this crate understands.
pub const MAGIC_V2: i8 = 2;

pub(crate) const BASE_OFFSET_OFFSET: usize = 0;
pub(crate) const LENGTH_OFFSET: usize = 8;
pub(crate) const LEADER_EPOCH_OFFSET: usize = 12;
pub(crate) const MAGIC_OFFSET: usize = 16;
pub(crate) const CRC_OFFSET: usize = 17;
/// The CRC covers everything from the attributes field to the end of the batch, so the base
/// offset and leader epoch can be stamped by the broker without recomputing it.
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_OFFSET: usize = 23;
pub(crate) const BASE_TIMESTAMP_OFFSET: usize = 27;
pub(crate) const MAX_TIMESTAMP_OFFSET: usize = 35;
pub(crate) const PRODUCER_ID_OFFSET: usize = 43;
pub(crate) const PRODUCER_EPOCH_OFFSET: usize = 51;
pub(crate) const BASE_SEQUENCE_OFFSET: usize = 53;
pub(crate) const RECORD_COUNT_OFFSET: usize = 57;

pub(crate) const CODEC_MASK: i16 = 0x07;
pub(crate) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(crate) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(crate) const CONTROL_BIT: i16 = 0x20;
pub(crate) const DELETE_HORIZON_BIT: i16 = 0x40;

/// Compression codec of a batch's records section (attribute bits 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// Decodes bits 0-2 of a batch's attributes; ids 5..=7 are not defined by Kafka.
    pub fn from_attributes(attributes: i16) -> Result<Compression, RecordsError> {
        match attributes & CODEC_MASK {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(RecordsError::UnknownCodec(other)),
        }
    }

    /// Kafka's codec id, as stored in attribute bits 0-2.
    pub fn id(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }
}

/// Meaning of a batch's timestamps (attribute bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker at append; `maxTimestamp` holds the append time.
    LogAppendTime,
}

/// The decoded fixed header of one batch. Plain values; nothing here has been validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Reads the 61 header bytes at the start of `buf`. Only the length of `buf` is checked:
    /// use [`crate::validate_batch`] before trusting any field.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, RecordsError> {
        let h: &[u8; HEADER_LEN] = buf
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(RecordsError::TooShort {
                needed: HEADER_LEN,
                have: buf.len(),
            })?;
        Ok(BatchHeader {
            base_offset: i64_at(h, BASE_OFFSET_OFFSET),
            batch_length: i32_at(h, LENGTH_OFFSET),
            partition_leader_epoch: i32_at(h, LEADER_EPOCH_OFFSET),
            magic: i8::from_be_bytes([h[MAGIC_OFFSET]]),
            crc: u32::from_be_bytes(arr(h, CRC_OFFSET)),
            attributes: i16_at(h, ATTRIBUTES_OFFSET),
            last_offset_delta: i32_at(h, LAST_OFFSET_DELTA_OFFSET),
            base_timestamp: i64_at(h, BASE_TIMESTAMP_OFFSET),
            max_timestamp: i64_at(h, MAX_TIMESTAMP_OFFSET),
            producer_id: i64_at(h, PRODUCER_ID_OFFSET),
            producer_epoch: i16_at(h, PRODUCER_EPOCH_OFFSET),
            base_sequence: i32_at(h, BASE_SEQUENCE_OFFSET),
            record_count: i32_at(h, RECORD_COUNT_OFFSET),
        })
    }

    /// Whole size of the batch in bytes (`batch_length + LOG_OVERHEAD`). Meaningful only once
    /// the length has been checked; a negative length counts as 0 and the sum saturates.
    pub fn total_size(&self) -> usize {
        usize::try_from(self.batch_length)
            .unwrap_or(0)
            .saturating_add(LOG_OVERHEAD)
    }

    /// Offset of the last record the batch covers (`base_offset + last_offset_delta`).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// The offset following this batch: where the next batch must start.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// The codec of the records section.
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        Compression::from_attributes(self.attributes)
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// Control batches carry transaction markers (commit/abort), not user data.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// Set by the log cleaner: `base_timestamp` then holds the tombstone delete horizon (ms).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_BIT != 0
    }
}

fn arr<const N: usize>(h: &[u8; HEADER_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&h[at..at + N]);
    out
}

fn i16_at(h: &[u8; HEADER_LEN], at: usize) -> i16 {
    i16::from_be_bytes(arr(h, at))
}

fn i32_at(h: &[u8; HEADER_LEN], at: usize) -> i32 {
    i32::from_be_bytes(arr(h, at))
}

fn i64_at(h: &[u8; HEADER_LEN], at: usize) -> i64 {
    i64::from_be_bytes(arr(h, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_needs_full_header() {
        let buf = [0u8; HEADER_LEN - 1];
        assert_eq!(
            BatchHeader::parse(&buf),
            Err(RecordsError::TooShort {
                needed: HEADER_LEN,
                have: HEADER_LEN - 1
            })
        );
    }

    #[test]
    fn parse_reads_big_endian_fields() {
        let mut buf = vec![0u8; HEADER_LEN];
        buf[0..8].copy_from_slice(&42i64.to_be_bytes());
        buf[8..12].copy_from_slice(&49i32.to_be_bytes());
        buf[12..16].copy_from_slice(&(-1i32).to_be_bytes());
        buf[16] = 2;
        buf[17..21].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        buf[21..23].copy_from_slice(&(0x0008 | 0x0010 | 0x0020 | 0x0040 | 3i16).to_be_bytes());
        buf[23..27].copy_from_slice(&4i32.to_be_bytes());
        buf[27..35].copy_from_slice(&1000i64.to_be_bytes());
        buf[35..43].copy_from_slice(&2000i64.to_be_bytes());
        buf[43..51].copy_from_slice(&7i64.to_be_bytes());
        buf[51..53].copy_from_slice(&3i16.to_be_bytes());
        buf[53..57].copy_from_slice(&11i32.to_be_bytes());
        buf[57..61].copy_from_slice(&5i32.to_be_bytes());
        let h = BatchHeader::parse(&buf).unwrap();
        assert_eq!(h.base_offset, 42);
        assert_eq!(h.batch_length, 49);
        assert_eq!(h.partition_leader_epoch, -1);
        assert_eq!(h.magic, 2);
        assert_eq!(h.crc, 0xdead_beef);
        assert_eq!(h.last_offset_delta, 4);
        assert_eq!(h.base_timestamp, 1000);
        assert_eq!(h.max_timestamp, 2000);
        assert_eq!(h.producer_id, 7);
        assert_eq!(h.producer_epoch, 3);
        assert_eq!(h.base_sequence, 11);
        assert_eq!(h.record_count, 5);
        assert_eq!(h.total_size(), 61);
        assert_eq!(h.last_offset(), 46);
        assert_eq!(h.next_offset(), 47);
        assert_eq!(h.compression(), Ok(Compression::Lz4));
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert!(h.is_transactional() && h.is_control() && h.has_delete_horizon());
    }

    #[test]
    fn codec_ids_round_trip_and_unknown_rejected() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert_eq!(Compression::from_attributes(c.id() | 0x78), Ok(c));
        }
        for id in 5..=7 {
            assert_eq!(
                Compression::from_attributes(id),
                Err(RecordsError::UnknownCodec(id))
            );
        }
    }

    #[test]
    fn derived_values_saturate_on_hostile_fields() {
        let mut h = BatchHeader::parse(&[0u8; HEADER_LEN]).unwrap();
        h.batch_length = -5;
        assert_eq!(h.total_size(), LOG_OVERHEAD);
        h.base_offset = i64::MAX;
        h.last_offset_delta = 10;
        assert_eq!(h.last_offset(), i64::MAX);
        assert_eq!(h.next_offset(), i64::MAX);
    }
}
