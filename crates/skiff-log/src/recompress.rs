//! Broker-side recompression for a topic's `compression.type` (Kafka's LogValidator): when
//! the topic names a codec and a producer batch uses another, the batch is rebuilt with the
//! topic's codec, keeping its records, timestamps, headers and producer fields.
//! `producer` (the default) keeps every batch exactly as sent.
//!
//! Pure functions over borrowed bytes; thread-safe.

use skiff_records::{records, BatchBuilder, BatchHeader, Compression};

use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::validate::MAX_DECOMPRESSED_BATCH;

/// The codec a topic's `compression.type` asks for; `None` for `producer`. Also used by
/// writers that build their own batches for a topic (the cleaner's archive).
pub fn target_codec(compression_type: &str) -> Option<Compression> {
    match compression_type {
        "uncompressed" => Some(Compression::None),
        "gzip" => Some(Compression::Gzip),
        "snappy" => Some(Compression::Snappy),
        "lz4" => Some(Compression::Lz4),
        "zstd" => Some(Compression::Zstd),
        _ => None,
    }
}

/// Rebuilds the payload when some batch's codec differs from the topic's; `None` when every
/// batch may be stored as sent.
pub(crate) fn recompress_for_topic(
    payload: &[u8],
    batches: &[(BatchHeader, usize)],
    config: &LogConfig,
) -> Result<Option<Vec<u8>>> {
    let Some(target) = target_codec(&config.compression_type) else {
        return Ok(None);
    };
    if batches
        .iter()
        .all(|(h, _)| h.compression().ok() == Some(target))
    {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(payload.len());
    let mut pos = 0usize;
    for (h, len) in batches {
        let batch = payload
            .get(pos..pos + len)
            .ok_or_else(|| LogError::CorruptMessage("batch bounds changed".to_string()))?;
        pos += len;
        if h.compression().ok() == Some(target) {
            out.extend_from_slice(batch);
            continue;
        }
        out.extend(rebuild(h, batch, target)?);
    }
    Ok(Some(out))
}

fn rebuild(h: &BatchHeader, batch: &[u8], target: Compression) -> Result<Vec<u8>> {
    let recs = records(batch, MAX_DECOMPRESSED_BATCH)
        .map_err(|e| LogError::CorruptMessage(format!("cannot decode records: {e}")))?;
    let mut builder = BatchBuilder::new(0, target)
        .producer_id(h.producer_id)
        .producer_epoch(h.producer_epoch)
        .base_sequence(h.base_sequence)
        .transactional(h.is_transactional());
    for r in &recs {
        let headers: Vec<(&[u8], Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_deref()))
            .collect();
        builder.push_at(
            r.offset_delta,
            h.base_timestamp.saturating_add(r.timestamp_delta),
            r.key.as_deref(),
            r.value.as_deref(),
            &headers,
        );
    }
    builder
        .build()
        .map_err(|e| LogError::CorruptMessage(format!("cannot recompress batch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_records::{BatchHeader, Batches};

    fn one_batch(codec: Compression) -> (Vec<u8>, Vec<(BatchHeader, usize)>) {
        let mut b = BatchBuilder::new(0, codec);
        b.push(1_000, Some(b"k"), Some(b"v1"), &[(b"h", Some(b"x"))]);
        b.push(1_005, Some(b"k2"), None, &[]);
        let bytes = b.build().unwrap();
        let h = BatchHeader::parse(&bytes).unwrap();
        let len = bytes.len();
        (bytes, vec![(h, len)])
    }

    #[test]
    fn producer_keeps_batches_and_a_codec_rewrites_them() {
        let (payload, batches) = one_batch(Compression::None);
        let mut config = LogConfig::default();
        assert!(recompress_for_topic(&payload, &batches, &config)
            .unwrap()
            .is_none());
        config.compression_type = "none-such".to_string();
        assert!(recompress_for_topic(&payload, &batches, &config)
            .unwrap()
            .is_none());
        config.compression_type = "uncompressed".to_string();
        assert!(recompress_for_topic(&payload, &batches, &config)
            .unwrap()
            .is_none());

        config.compression_type = "lz4".to_string();
        let out = recompress_for_topic(&payload, &batches, &config)
            .unwrap()
            .unwrap();
        let (h, batch) = Batches::new(&out).next().unwrap().unwrap();
        assert_eq!(h.compression().unwrap(), Compression::Lz4);
        skiff_records::validate_batch(batch).unwrap();
        let before = records(&payload, 1 << 20).unwrap();
        let after = records(batch, 1 << 20).unwrap();
        assert_eq!(before, after);
        assert_eq!(h.max_timestamp, 1_005);
    }
}
