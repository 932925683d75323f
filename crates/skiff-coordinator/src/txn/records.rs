//! The record format of `__transaction_state`, Kafka's `TransactionLogKey` (version 0:
//! `version i16, transactional_id string`) and `TransactionLogValue` version 0:
//! `version i16, producer_id i64, producer_epoch i16, transaction_timeout_ms i32,
//! transaction_status i8, transaction_partitions [topic string, partition_ids [i32]] (nullable),
//! last_update_timestamp_ms i64, start_timestamp_ms i64`. Strings are i16-length-prefixed
//! UTF-8, arrays i32-count-prefixed, all big-endian. Version 1 (flexible, KIP-890 tagged
//! fields) is not written; reading one is refused with an error (the record is skipped).
//!
//! Pure functions; bounds-checked decoding of bytes read from disk.

use std::collections::BTreeSet;

use super::state::{TxnMetadata, TxnState};

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("__transaction_state record: {0}")]
pub struct CodecError(String);

fn put_str(out: &mut Vec<u8>, s: &str) {
    let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes().get(..len.max(0) as usize).unwrap_or(&[]));
}

pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&KEY_VERSION.to_be_bytes());
    put_str(&mut out, transactional_id);
    out
}

pub fn encode_value(m: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&m.producer_id.to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.to_be_bytes());
    out.extend_from_slice(&m.timeout_ms.to_be_bytes());
    out.push(m.state.id() as u8);
    let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
    for (topic, p) in &m.partitions {
        match by_topic.last_mut() {
            Some((t, ps)) if *t == topic.as_str() => ps.push(*p),
            _ => by_topic.push((topic.as_str(), vec![*p])),
        }
    }
    out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
    for (topic, ps) in by_topic {
        put_str(&mut out, topic);
        out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&m.last_update_ms.to_be_bytes());
    out.extend_from_slice(&m.start_ms.to_be_bytes());
    out
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(CodecError(format!("truncated at {what}")));
        };
        let s = self.buf.get(self.pos..end).unwrap_or(&[]);
        self.pos = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self, what: &str) -> Result<[u8; N], CodecError> {
        <[u8; N]>::try_from(self.take(N, what)?).map_err(|_| CodecError(what.to_string()))
    }
    fn i8(&mut self, what: &str) -> Result<i8, CodecError> {
        Ok(i8::from_be_bytes(self.arr(what)?))
    }
    fn i16(&mut self, what: &str) -> Result<i16, CodecError> {
        Ok(i16::from_be_bytes(self.arr(what)?))
    }
    fn i32(&mut self, what: &str) -> Result<i32, CodecError> {
        Ok(i32::from_be_bytes(self.arr(what)?))
    }
    fn i64(&mut self, what: &str) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(self.arr(what)?))
    }
    fn string(&mut self, what: &str) -> Result<String, CodecError> {
        let len = self.i16(what)?;
        let len = usize::try_from(len).map_err(|_| CodecError(format!("null {what}")))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CodecError(format!("{what} is not UTF-8")))
    }
}

pub fn decode_key(buf: &[u8]) -> Result<String, CodecError> {
    let mut r = Reader { buf, pos: 0 };
    let version = r.i16("key version")?;
    if version != KEY_VERSION {
        return Err(CodecError(format!("unknown key version {version}")));
    }
    r.string("transactional id")
}

pub fn decode_value(transactional_id: &str, buf: &[u8]) -> Result<TxnMetadata, CodecError> {
    let mut r = Reader { buf, pos: 0 };
    let version = r.i16("value version")?;
    if version != VALUE_VERSION {
        return Err(CodecError(format!("unsupported value version {version}")));
    }
    let producer_id = r.i64("producer id")?;
    let producer_epoch = r.i16("producer epoch")?;
    let timeout_ms = r.i32("timeout")?;
    let status = r.i8("status")?;
    let state =
        TxnState::from_id(status).ok_or_else(|| CodecError(format!("unknown status {status}")))?;
    let mut partitions = BTreeSet::new();
    let topics = r.i32("partition count")?;
    for _ in 0..topics.max(0) {
        let topic = r.string("topic")?;
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
}
