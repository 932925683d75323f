//! Produce-side validation of an append, before anything is written (Kafka's
//! `analyzeAndValidateRecords` + `LogValidator`): framing, magic 2, sizes, CRC32C, batch
//! consistency, and — only when a rule needs it — per-record checks (keys on compacted topics,
//! CreateTime bounds) by an allocation-free walk over the records. Nothing is written if any
//! batch fails.
//!
//! Pure functions over borrowed bytes; thread-safe.

use crate::config::LogConfig;
use crate::error::{LogError, Result};
use skiff_records::{
    validate_batch, validate_produce_batch, walk_records, BatchHeader, Batches, RecordsError,
    TimestampType, MAGIC_V2,
};

/// Cap on the decompressed size of one batch decoded for validation: generous for real
/// producers (1 MiB compressed batches rarely inflate beyond a few tens of MiB) while bounding
/// the memory a decompression bomb can take.
pub(crate) const MAX_DECOMPRESSED_BATCH: usize = 128 << 20;

/// Kafka's NO_TIMESTAMP: exempt from timestamp bounds.
const NO_TIMESTAMP: i64 = -1;

/// Who produced the bytes: clients get every produce rule; the broker's own writes
/// (coordinator records, transaction markers) only the integrity and size checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    Client,
    Internal,
}

/// Validates a produce payload and returns the header and byte length of each batch.
pub(crate) fn validate_append(
    payload: &[u8],
    config: &LogConfig,
    now_ms: i64,
    origin: Origin,
) -> Result<Vec<(BatchHeader, usize)>> {
    if payload.is_empty() {
        return Err(LogError::InvalidRecord {
            message: "produce request holds no record batch".to_string(),
            record_errors: Vec::new(),
        });
    }
    let mut out = Vec::new();
    let mut total = 0usize;
    let mut it = Batches::new(payload);
    loop {
        let start = it.position();
        let Some(item) = it.next() else { break };
        let (h, bytes) = item.map_err(|e| {
            // Magic first, as Kafka does: an old-format batch is INVALID_RECORD even when
            // its length is not a valid v2 length.
            match payload.get(start + 16).map(|&m| m as i8) {
                Some(magic) if magic != MAGIC_V2 => LogError::UnsupportedMagic(magic),
                _ => corrupt(e, out.len()),
            }
        })?;
        if h.magic != MAGIC_V2 {
            return Err(LogError::UnsupportedMagic(h.magic));
        }
        if bytes.len() > usize::try_from(config.max_message_bytes).unwrap_or(0) {
            return Err(LogError::MessageTooLarge {
                size: bytes.len(),
                max: config.max_message_bytes,
            });
        }
        let checked = match origin {
            Origin::Client => validate_produce_batch(bytes),
            Origin::Internal => validate_batch(bytes),
        };
        checked.map_err(|e| match e {
            RecordsError::UnsupportedMagic(m) => LogError::UnsupportedMagic(m),
            RecordsError::InvalidBatch(msg) => LogError::InvalidRecord {
                message: msg,
                record_errors: Vec::new(),
            },
            other => corrupt(other, out.len()),
        })?;
        if origin == Origin::Internal {
            total += bytes.len();
            out.push((h, bytes.len()));
            continue;
        }
        if h.base_offset != 0 {
            return Err(LogError::InvalidRecord {
                message: format!(
                    "batch {} has base offset {}; producers must send 0",
                    out.len(),
                    h.base_offset
                ),
                record_errors: Vec::new(),
            });
        }
        check_records(&h, bytes, config, now_ms)?;
        total += bytes.len();
        out.push((h, bytes.len()));
    }
    if it.position() != payload.len() {
        return Err(LogError::CorruptMessage(format!(
            "{} trailing bytes after batch {} do not form a whole batch",
            payload.len() - it.position(),
            out.len()
        )));
    }
    if total > usize::try_from(config.segment_bytes).unwrap_or(0) {
        return Err(LogError::RecordListTooLarge {
            size: total,
            max: config.segment_bytes,
        });
    }
    Ok(out)
}

fn corrupt(e: RecordsError, batch_index: usize) -> LogError {
    LogError::CorruptMessage(format!("batch {batch_index}: {e}"))
}

/// Per-record rules; walks the records only when a rule requires it.
///
/// The walk checks every record's framing and fields exactly as a full decode would (same
/// errors) but reads only what the rules need, so no key, value or header is copied. The
/// timestamp window cannot be decided from the header: `baseTimestamp` is the first record's
/// timestamp, later deltas may be negative, and `maxTimestamp` is the producer's unverified
/// claim — so every record's delta is checked (two comparisons on a value the walk has
/// already decoded).
fn check_records(h: &BatchHeader, batch: &[u8], config: &LogConfig, now_ms: i64) -> Result<()> {
    let create_time = config.message_timestamp_type == TimestampType::CreateTime;
    if create_time && h.timestamp_type() == TimestampType::LogAppendTime {
        return Err(LogError::InvalidTimestamp {
            message: "producer batch claims LogAppendTime on a CreateTime topic".to_string(),
            record_errors: Vec::new(),
        });
    }
    let check_ts = create_time
        && (config.message_timestamp_before_max_ms != i64::MAX
            || config.message_timestamp_after_max_ms != i64::MAX);
    let need_keys = config.cleanup_policy.compact;
    if !check_ts && !need_keys {
        return Ok(());
    }
    let lower = now_ms.saturating_sub(config.message_timestamp_before_max_ms);
    let upper = now_ms.saturating_add(config.message_timestamp_after_max_ms);
    let mut ts_errors = Vec::new();
    let mut key_errors = Vec::new();
    let count = walk_records(batch, MAX_DECOMPRESSED_BATCH, |i, r| {
        let idx = i32::try_from(i).unwrap_or(i32::MAX);
        if check_ts {
            let ts = h.base_timestamp.saturating_add(r.timestamp_delta);
            if ts != NO_TIMESTAMP && (ts < lower || ts > upper) {
                ts_errors.push((
                    idx,
                    format!(
                        "Timestamp {ts} of message with offset {i} is out of range. \
                         The timestamp should be within [{lower}, {upper}]"
                    ),
                ));
            }
        }
        if need_keys && r.key_is_null {
            key_errors.push((
                idx,
                "Compacted topic cannot accept message without key".to_string(),
            ));
        }
    })
    .map_err(|e| LogError::CorruptMessage(format!("cannot decode records: {e}")))?;
    if count != usize::try_from(h.record_count).unwrap_or(usize::MAX) {
        return Err(LogError::InvalidRecord {
            message: format!(
                "batch declares {} records but holds {count}",
                h.record_count
            ),
            record_errors: Vec::new(),
        });
    }
    if let Some((_, first)) = ts_errors.first() {
        let message = first.clone();
        ts_errors.extend(key_errors);
        return Err(LogError::InvalidTimestamp {
            message,
            record_errors: ts_errors,
        });
    }
    if let Some((_, first)) = key_errors.first() {
        return Err(LogError::InvalidRecord {
            message: first.clone(),
            record_errors: key_errors,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
