//! The record format of `__transaction_state`, Kafka's `TransactionLogKey` (version 0:
//! `version i16, transactional_id string`) and `TransactionLogValue` version 0:
//! `version i16, producer_id i64, producer_epoch i16, transaction_timeout_ms i32,
//! transaction_status i8, transaction_partitions [topic string, partition_ids [i32]] (nullable),
//! last_update_timestamp_ms i64, start_timestamp_ms i64`. Strings are i16-length-prefixed
//! UTF-8, arrays i32-count-prefixed, all big-endian. Version 1 (flexible, KIP-890 tagged
//! fields) is not written; reading one is refused with an error (the record is skipped).
//!
//! Pure functions; bounds-checked decoding of bytes read from disk, with the primitives of
//! `crate::wire`. Errors do not name the topic: log them with `in_topic(TXN_STATE_TOPIC)`.

use std::collections::BTreeSet;

use super::state::{TxnMetadata, TxnState};
use crate::wire::{put_i16, put_i32, put_i64, put_str_cut_at_byte, Reader};

/// Shared with every internal-topic codec; log it with `in_topic(TXN_STATE_TOPIC)` to name
/// the topic.
pub use crate::wire::CodecError;

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

/// Strings are cut at exactly `i16::MAX` bytes, as this topic has always been written.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    put_i16(&mut out, KEY_VERSION);
    put_str_cut_at_byte(&mut out, transactional_id);
    out
}

pub fn encode_value(m: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_i16(&mut out, VALUE_VERSION);
    put_i64(&mut out, m.producer_id);
    put_i16(&mut out, m.producer_epoch);
    put_i32(&mut out, m.timeout_ms);
    out.push(m.state.id() as u8);
    let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
    for (topic, p) in &m.partitions {
        match by_topic.last_mut() {
            Some((t, ps)) if *t == topic.as_str() => ps.push(*p),
            _ => by_topic.push((topic.as_str(), vec![*p])),
        }
    }
    put_i32(&mut out, by_topic.len() as i32);
    for (topic, ps) in by_topic {
        put_str_cut_at_byte(&mut out, topic);
        put_i32(&mut out, ps.len() as i32);
        for p in ps {
            put_i32(&mut out, p);
        }
    }
    put_i64(&mut out, m.last_update_ms);
    put_i64(&mut out, m.start_ms);
    out
}

/// The transactional id. Trailing bytes after it are ignored.
pub fn decode_key(buf: &[u8]) -> Result<String, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("key version")?;
    if version != KEY_VERSION {
        return Err(CodecError::UnsupportedVersion("key", version));
    }
    r.str("transactional id")
}

/// Version 0 only; version 1 (which Kafka defines) is refused. Negative array counts read
/// as empty, and trailing bytes are ignored.
pub fn decode_value(transactional_id: &str, buf: &[u8]) -> Result<TxnMetadata, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("value version")?;
    if version != VALUE_VERSION {
        return Err(CodecError::UnsupportedVersion("value", version));
    }
    let producer_id = r.i64("producer id")?;
    let producer_epoch = r.i16("producer epoch")?;
    let timeout_ms = r.i32("timeout")?;
    let status = r.i8("status")?;
    let state = TxnState::from_id(status).ok_or(CodecError::Invalid("transaction status"))?;
    let mut partitions = BTreeSet::new();
    let topics = r.i32("partition count")?;
    for _ in 0..topics.max(0) {
        let topic = r.str("topic")?;
        let n = r.i32("partition id count")?;
        for _ in 0..n.max(0) {
            partitions.insert((topic.clone(), r.i32("partition id")?));
        }
    }
    let last_update_ms = r.i64("last update time")?;
    let start_ms = r.i64("start time")?;
    Ok(TxnMetadata {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        start_ms,
        last_update_ms,
        pending: false,
        ending: false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut m = TxnMetadata::new("tx-1", 42, 60_000, 1234);
        m.state = TxnState::Ongoing;
        m.producer_epoch = 3;
        m.start_ms = 1000;
        m.partitions.insert(("a".into(), 0));
        m.partitions.insert(("a".into(), 2));
        m.partitions.insert(("b".into(), 1));
        let k = encode_key("tx-1");
        assert_eq!(k, [0, 0, 0, 4, b't', b'x', b'-', b'1']);
        assert_eq!(decode_key(&k).unwrap(), "tx-1");
        let v = encode_value(&m);
        assert_eq!(decode_value("tx-1", &v).unwrap(), m);
        for cut in 0..v.len() {
            assert!(decode_value("tx-1", &v[..cut]).is_err(), "cut {cut}");
        }
        let mut bad = v.clone();
        bad[16] = 9; // status byte
        assert!(decode_value("tx-1", &bad).is_err());
    }

    #[test]
    fn errors_name_the_topic_and_what_was_refused() {
        let topic = super::super::TXN_STATE_TOPIC;
        let e = decode_value("tx-1", &[0, 1]).unwrap_err();
        assert_eq!(
            e.in_topic(topic).to_string(),
            "__transaction_state value version 1 is not one Skiff reads"
        );
        let e = decode_key(&[0, 0, 0, 4, b't']).unwrap_err();
        assert_eq!(
            e.in_topic(topic).to_string(),
            "__transaction_state record truncated while reading transactional id"
        );
        let mut v = encode_value(&TxnMetadata::new("tx-1", 42, 60_000, 1234));
        v[16] = 9; // status byte
        assert_eq!(
            decode_value("tx-1", &v).unwrap_err(),
            CodecError::Invalid("transaction status")
        );
    }
}
