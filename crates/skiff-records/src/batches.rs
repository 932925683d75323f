//! Framing and validation of whole batches: the iterator over batches stored back to back (a
//! segment file or a produce payload), the batch checks (Kafka's `DefaultRecordBatch.ensureValid`
//! plus the offset-range checks of `LogValidator`), and the CRC32C helper.
//!
//! Pure functions over borrowed bytes; thread-safe. Nothing here allocates per batch.

use crate::error::RecordsError;
use crate::header::{
    BatchHeader, ATTRIBUTES_OFFSET, HEADER_LEN, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_V2,
};

/// Smallest legal `batchLength`: a header with no records.
const MIN_BATCH_LENGTH: usize = HEADER_LEN - LOG_OVERHEAD;

/// Iterates the whole batches stored back to back in a buffer (a segment file or a produce
/// payload).
///
/// Yields `Ok((header, whole_batch_slice))` per batch and stops (`None`) when the remaining bytes
/// cannot hold the next batch: a torn tail, which the caller detects by comparing
/// [`Batches::position`] with the buffer length. A declared length that can never be valid
/// yields one `Err`, then `None`. CRCs are not checked here: see [`validate_batch`].
#[derive(Clone, Debug)]
pub struct Batches<'a> {
    buf: &'a [u8],
    pos: usize,
    max_batch_size: usize,
    failed: bool,
}

impl<'a> Batches<'a> {
    /// Iterates `buf` with no size cap beyond what Kafka's 32-bit length field allows.
    pub fn new(buf: &'a [u8]) -> Self {
        Self::with_max_batch_size(buf, usize::MAX)
    }

    /// Like [`Batches::new`], but a batch whose declared total size exceeds `max_batch_size` is an
    /// error instead of a (possibly) torn tail. Use the topic's `max.message.bytes` on produce.
    pub fn with_max_batch_size(buf: &'a [u8], max_batch_size: usize) -> Self {
        Batches {
            buf,
            pos: 0,
            max_batch_size,
            failed: false,
        }
    }

    /// Bytes consumed by the batches yielded so far (the start of the first batch not yielded).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Batches<'a> {
    type Item = Result<(BatchHeader, &'a [u8]), RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.buf.get(self.pos..)?;
        let len_bytes: [u8; 4] = rest.get(LENGTH_OFFSET..LOG_OVERHEAD)?.try_into().ok()?;
        let declared = i32::from_be_bytes(len_bytes);
        let body = match usize::try_from(declared) {
            Ok(b) if b >= MIN_BATCH_LENGTH => b,
            _ => {
                self.failed = true;
                return Some(Err(RecordsError::CorruptLength(format!(
                    "batch at position {} declares length {declared}, below the minimum of \
                     {MIN_BATCH_LENGTH}",
                    self.pos
                ))));
            }
        };
        let total = body.saturating_add(LOG_OVERHEAD);
        if total > self.max_batch_size {
            self.failed = true;
            return Some(Err(RecordsError::CorruptLength(format!(
                "batch at position {} declares {total} bytes, above the limit of {}",
                self.pos, self.max_batch_size
            ))));
        }
        let batch = rest.get(..total)?;
        let header = match BatchHeader::parse(batch) {
            Ok(h) => h,
            Err(e) => {
                // Unreachable given total >= HEADER_LEN, but never panic on input.
                self.failed = true;
                return Some(Err(e));
            }
        };
        self.pos += total;
        Some(Ok((header, batch)))
    }
}

/// CRC32C (Castagnoli) of the bytes the batch CRC covers: from the attributes field to the end.
/// Returns the CRC of nothing for a buffer shorter than the header start of that range.
pub fn crc_of(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or(&[]))
}

/// Checks that `batch` is exactly one well-formed v2 batch and returns its header.
///
/// Checks, in Kafka's order: size, magic 2, `batchLength` equals the bytes present, CRC32C,
/// a known codec, `recordCount >= 0`, `lastOffsetDelta >= 0` and, for a non-empty batch,
/// `recordCount - 1 <= lastOffsetDelta` (compaction may leave fewer records than the offset range,
/// never more). Records themselves are not decoded: see [`crate::records`].
pub fn validate_batch(batch: &[u8]) -> Result<BatchHeader, RecordsError> {
    let header = BatchHeader::parse(batch)?;
    if header.magic != MAGIC_V2 {
        return Err(RecordsError::UnsupportedMagic(header.magic));
    }
    let consistent = usize::try_from(header.batch_length)
        .ok()
        .filter(|&l| l >= MIN_BATCH_LENGTH)
        .map(|l| l + LOG_OVERHEAD == batch.len())
        .unwrap_or(false);
    if !consistent {
        return Err(RecordsError::CorruptLength(format!(
            "batch declares length {} (total {} bytes) but {} bytes were given",
            header.batch_length,
            i64::from(header.batch_length) + LOG_OVERHEAD as i64,
            batch.len()
        )));
    }
    let computed = crc_of(batch);
    if computed != header.crc {
        return Err(RecordsError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    header.compression()?;
    if header.record_count < 0 {
        return Err(RecordsError::InvalidBatch(format!(
            "negative record count {}",
            header.record_count
        )));
    }
    if header.last_offset_delta < 0 {
        return Err(RecordsError::InvalidBatch(format!(
            "negative last offset delta {}",
            header.last_offset_delta
        )));
    }
    if header.record_count > 0 && header.record_count - 1 > header.last_offset_delta {
        return Err(RecordsError::InvalidBatch(format!(
            "{} records cannot fit the offset range of {} (last offset delta {})",
            header.record_count,
            i64::from(header.last_offset_delta) + 1,
            header.last_offset_delta
        )));
    }
    Ok(header)
}

/// [`validate_batch`] plus the stricter checks Kafka's `LogValidator` applies to batches sent by
/// a client in a produce request: at least one record, an offset range exactly as long as the
/// record count, no control batch, and a non-negative base sequence when a producer id is set.
pub fn validate_produce_batch(batch: &[u8]) -> Result<BatchHeader, RecordsError> {
    let header = validate_batch(batch)?;
    if header.record_count == 0 {
        return Err(RecordsError::InvalidBatch(
            "produced batch has no records".to_string(),
        ));
    }
    if i64::from(header.last_offset_delta) + 1 != i64::from(header.record_count) {
        return Err(RecordsError::InvalidBatch(format!(
            "inconsistent offset range (last offset delta {}) and record count {}",
            header.last_offset_delta, header.record_count
        )));
    }
    if header.is_control() {
        return Err(RecordsError::InvalidBatch(
            "clients may not produce control batches".to_string(),
        ));
    }
    if header.producer_id >= 0 && header.base_sequence < 0 {
        return Err(RecordsError::InvalidBatch(format!(
            "invalid base sequence {} for producer id {}",
            header.base_sequence, header.producer_id
        )));
    }
    Ok(header)
}
