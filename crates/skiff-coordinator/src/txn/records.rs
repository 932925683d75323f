//! The record format of `__transaction_state`, Kafka's `TransactionLogKey` (version 0:
//! `version i16, transactional_id string`) and `TransactionLogValue`. Version 0:
//! `version i16, producer_id i64, producer_epoch i16, transaction_timeout_ms i32,
//! transaction_status i8, transaction_partitions [topic string, partition_ids [i32]] (nullable),
//! last_update_timestamp_ms i64, start_timestamp_ms i64`; strings i16-length-prefixed UTF-8,
//! arrays i32-count-prefixed, all big-endian. Version 1 (flexible, KIP-890) has the same
//! fields with compact strings and arrays, a tagged-field section after each partition
//! entry and after the value, and three tagged fields: 0 the previous producer id, 1 the
//! next producer id (both i64, default -1), 2 the client transaction version (i16, default
//! 0). Skiff writes version 1, as Kafka 4.4 does with `transaction.version` 2 finalized
//! (tagged fields only when not at their default), and reads both.
//!
//! Pure functions; bounds-checked decoding of bytes read from disk, with the primitives of
//! `crate::wire`. Errors do not name the topic: log them with `in_topic(TXN_STATE_TOPIC)`.

use std::collections::BTreeSet;

use super::state::{TxnMetadata, TxnState, NO_PRODUCER_ID, TV_0};
use crate::wire::{
    put_compact_len, put_compact_str, put_i16, put_i32, put_i64, put_str_cut_at_byte, put_uvarint,
    Reader,
};

/// Shared with every internal-topic codec; log it with `in_topic(TXN_STATE_TOPIC)` to name
/// the topic.
pub use crate::wire::CodecError;

const KEY_VERSION: i16 = 0;
/// The value version written: 1 (flexible, with the KIP-890 tagged fields).
const VALUE_VERSION: i16 = 1;
const TAG_PREV_PRODUCER_ID: u32 = 0;
const TAG_NEXT_PRODUCER_ID: u32 = 1;
const TAG_CLIENT_TV: u32 = 2;

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
    put_compact_len(&mut out, by_topic.len());
    for (topic, ps) in by_topic {
        put_compact_str(&mut out, topic);
        put_compact_len(&mut out, ps.len());
        for p in ps {
            put_i32(&mut out, p);
        }
        put_uvarint(&mut out, 0); // no tagged fields in a partition entry
    }
    put_i64(&mut out, m.last_update_ms);
    put_i64(&mut out, m.start_ms);
    let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
    if m.prev_producer_id != NO_PRODUCER_ID {
        tags.push((
            TAG_PREV_PRODUCER_ID,
            m.prev_producer_id.to_be_bytes().to_vec(),
        ));
    }
    if m.next_producer_id != NO_PRODUCER_ID {
        tags.push((
            TAG_NEXT_PRODUCER_ID,
            m.next_producer_id.to_be_bytes().to_vec(),
        ));
    }
    if m.client_tv != TV_0 {
        tags.push((TAG_CLIENT_TV, m.client_tv.to_be_bytes().to_vec()));
    }
    put_uvarint(&mut out, tags.len() as u32);
    for (tag, value) in tags {
        put_uvarint(&mut out, tag);
        put_uvarint(&mut out, value.len() as u32);
        out.extend_from_slice(&value);
    }
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

/// Versions 0 and 1; later ones are refused. Negative (or null) array counts read as
/// empty, unknown tagged fields are skipped, and trailing bytes are ignored.
pub fn decode_value(transactional_id: &str, buf: &[u8]) -> Result<TxnMetadata, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("value version")?;
    if !(0..=1).contains(&version) {
        return Err(CodecError::UnsupportedVersion("value", version));
    }
    let flexible = version >= 1;
    let producer_id = r.i64("producer id")?;
    let producer_epoch = r.i16("producer epoch")?;
    let timeout_ms = r.i32("timeout")?;
    let status = r.i8("status")?;
    let state = TxnState::from_id(status).ok_or(CodecError::Invalid("transaction status"))?;
    let mut partitions = BTreeSet::new();
    // A partition entry takes at least 2 bytes (flexible) or 6; an id 4.
    let topics = if flexible {
        r.array_len(2, "partition count")?
    } else {
        usize::try_from(r.i32("partition count")?).unwrap_or(0)
    };
    for _ in 0..topics {
        let topic = if flexible {
            r.compact_str("topic")?
        } else {
            r.str("topic")?
        };
        let n = if flexible {
            r.array_len(4, "partition id count")?
        } else {
            usize::try_from(r.i32("partition id count")?).unwrap_or(0)
        };
        for _ in 0..n {
            partitions.insert((topic.clone(), r.i32("partition id")?));
        }
        if flexible {
            r.skip_tags()?;
        }
    }
    let last_update_ms = r.i64("last update time")?;
    let start_ms = r.i64("start time")?;
    let mut m = TxnMetadata::new(transactional_id, producer_id, timeout_ms, last_update_ms);
    m.producer_epoch = producer_epoch;
    m.state = state;
    m.partitions = partitions;
    m.start_ms = start_ms;
    if flexible {
        r.tags(|tag, value| {
            match tag {
                TAG_PREV_PRODUCER_ID => m.prev_producer_id = tagged_i64(value)?,
                TAG_NEXT_PRODUCER_ID => m.next_producer_id = tagged_i64(value)?,
                TAG_CLIENT_TV => {
                    let mut t = Reader::new(value);
                    m.client_tv = t.i16("client transaction version")?;
                }
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok(m)
}

fn tagged_i64(value: &[u8]) -> Result<i64, CodecError> {
    Reader::new(value).i64("tagged producer id")
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
        let e = decode_value("tx-1", &[0, 2]).unwrap_err();
        assert_eq!(
            e.in_topic(topic).to_string(),
            "__transaction_state value version 2 is not one Skiff reads"
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

    #[test]
    fn the_tv2_fields_survive_a_round_trip_and_version_0_still_reads() {
        let mut m = TxnMetadata::new("tx-2", 99, 60_000, 5);
        m.state = TxnState::PrepareCommit;
        m.producer_epoch = i16::MAX;
        m.prev_producer_id = 98;
        m.next_producer_id = 100;
        m.client_tv = crate::txn::state::TV_2;
        m.partitions.insert(("t".into(), 3));
        let v = encode_value(&m);
        assert_eq!(&v[..2], &[0, 1], "written as version 1");
        assert_eq!(decode_value("tx-2", &v).unwrap(), m);
        // Defaults write no tagged field: the value ends with an empty tag section.
        let plain = TxnMetadata::new("tx-3", 1, 1000, 5);
        assert_eq!(*encode_value(&plain).last().unwrap(), 0);
        // A version 0 value (what Skiff wrote before transaction version 2) reads as TV0.
        let mut v0 = vec![0, 0];
        v0.extend_from_slice(&42i64.to_be_bytes());
        v0.extend_from_slice(&3i16.to_be_bytes());
        v0.extend_from_slice(&60_000i32.to_be_bytes());
        v0.push(1); // Ongoing
        v0.extend_from_slice(&1i32.to_be_bytes());
        v0.extend_from_slice(&[0, 1, b'a']);
        v0.extend_from_slice(&1i32.to_be_bytes());
        v0.extend_from_slice(&7i32.to_be_bytes());
        v0.extend_from_slice(&1234i64.to_be_bytes());
        v0.extend_from_slice(&1000i64.to_be_bytes());
        let old = decode_value("tx-1", &v0).unwrap();
        assert_eq!(
            (old.producer_id, old.producer_epoch, old.state),
            (42, 3, TxnState::Ongoing)
        );
        assert_eq!(old.partitions.iter().next(), Some(&("a".to_string(), 7)));
        assert_eq!(
            (old.client_tv, old.prev_producer_id, old.next_producer_id),
            (0, -1, -1)
        );
    }
}
