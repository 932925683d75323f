//! The key/value record formats of `__consumer_offsets`, byte-compatible with Apache Kafka's
//! group coordinator so that tools reading that topic (lag monitors such as Burrow) understand
//! what Skiff writes, and Skiff can replay what Kafka wrote.
//!
//! On-disk format (big-endian, Kafka "data" schemas):
//! - key: `int16` record type, then
//!   - 0 or 1 `OffsetCommitKey`: group `string`, topic `string`, partition `int32`;
//!   - 2 `GroupMetadataKey`: group `string`.
//!
//!   - 3, 5, 6, 7, 8: KIP-848 consumer group records (`consumer_records.rs`).
//!
//!   - 10-15: share group records (`crate::share_group::records`).
//!
//!   - 17, 19-23: streams group records (`crate::streams_group::records`).
//!
//!   Other types (consumer group partition metadata, regular expressions) are reported as
//!   [`Key::Other`] and skipped on replay.
//! - `OffsetCommitValue`: `int16` version (0-4; Skiff writes 3), offset `int64`, leaderEpoch
//!   `int32` (v3+), metadata `string`, commitTimestamp `int64`, expireTimestamp `int64` (v1
//!   only). v4 is the flexible encoding (compact strings, tagged fields).
//! - `GroupMetadataValue`: `int16` version (0-4; Skiff writes 3), protocolType `string`,
//!   generation `int32`, protocol `nullable string`, leader `nullable string`,
//!   currentStateTimestamp `int64` (v2+), members array of: memberId, groupInstanceId
//!   (nullable, v3+), clientId, clientHost, rebalanceTimeout `int32` (v1+), sessionTimeout
//!   `int32`, subscription `bytes`, assignment `bytes`.
//! - A tombstone (null value) deletes the key, as on any compacted topic.
//!
//! Pure functions, no state: safe from any thread. Decoding is bounds-checked and never panics.

use bytes::Bytes;

use crate::wire::{put_bytes, put_i16, put_i32, put_i64, put_nullable_str, put_str, Reader};

/// Versions Skiff writes: the newest non-flexible ones, which every reader understands.
pub const OFFSET_KEY_VERSION: i16 = 1;
pub const GROUP_KEY_VERSION: i16 = 2;
pub const OFFSET_VALUE_VERSION: i16 = 3;
pub const GROUP_VALUE_VERSION: i16 = 3;

/// Shared with every internal-topic codec; log it with `in_topic(OFFSETS_TOPIC)` to name the topic.
pub use crate::wire::CodecError;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
    /// KIP-848 consumer group records (`consumer_records.rs`).
    Consumer(super::consumer_records::ConsumerKey),
    /// Share group records, types 10-15 (`crate::share_group::records`).
    Share(crate::share_group::ShareKey),
    /// Streams group records, types 17 and 19-23 (`crate::streams_group::records`).
    Streams(crate::streams_group::records::StreamsKey),
    /// A record type this coordinator does not use (kept on disk, ignored on replay).
    Other(i16),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only version 1 carries it; -1 otherwise.
    pub expire_timestamp: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberValue>,
}

// ---------------------------------------------------------------- encoding

pub fn encode_key(key: &Key) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match key {
        Key::Offset {
            group,
            topic,
            partition,
        } => {
            put_i16(&mut out, OFFSET_KEY_VERSION);
            put_str(&mut out, group);
            put_str(&mut out, topic);
            put_i32(&mut out, *partition);
        }
        Key::Group { group } => {
            put_i16(&mut out, GROUP_KEY_VERSION);
            put_str(&mut out, group);
        }
        Key::Consumer(k) => super::consumer_records::encode_key(&mut out, k),
        Key::Share(k) => out.extend(crate::share_group::encode_key(k)),
        Key::Streams(k) => out.extend(crate::streams_group::records::encode_key(k)),
        Key::Other(version) => put_i16(&mut out, *version),
    }
    out
}

/// Version 3, or version 1 when the commit carries an explicit expiry (as Kafka writes
/// commits of OffsetCommit v2-4 with `retention_time_ms`; v1 has no leader epoch).
pub fn encode_offset_value(v: &OffsetValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + v.metadata.len());
    if v.expire_timestamp >= 0 {
        put_i16(&mut out, 1);
        put_i64(&mut out, v.offset);
        put_str(&mut out, &v.metadata);
        put_i64(&mut out, v.commit_timestamp);
        put_i64(&mut out, v.expire_timestamp);
        return out;
    }
    put_i16(&mut out, OFFSET_VALUE_VERSION);
    put_i64(&mut out, v.offset);
    put_i32(&mut out, v.leader_epoch);
    put_str(&mut out, &v.metadata);
    put_i64(&mut out, v.commit_timestamp);
    out
}

pub fn encode_group_value(v: &GroupValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_i16(&mut out, GROUP_VALUE_VERSION);
    put_str(&mut out, &v.protocol_type);
    put_i32(&mut out, v.generation);
    put_nullable_str(&mut out, v.protocol.as_deref());
    put_nullable_str(&mut out, v.leader.as_deref());
    put_i64(&mut out, v.current_state_timestamp);
    put_i32(&mut out, i32::try_from(v.members.len()).unwrap_or(i32::MAX));
    for m in &v.members {
        put_str(&mut out, &m.member_id);
        put_nullable_str(&mut out, m.group_instance_id.as_deref());
        put_str(&mut out, &m.client_id);
        put_str(&mut out, &m.client_host);
        put_i32(&mut out, m.rebalance_timeout);
        put_i32(&mut out, m.session_timeout);
        put_bytes(&mut out, &m.subscription);
        put_bytes(&mut out, &m.assignment);
    }
    out
}

// ---------------------------------------------------------------- decoding

pub fn decode_key(buf: &[u8]) -> Result<Key, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("key version")?;
    match version {
        0 | 1 => Ok(Key::Offset {
            group: r.str("group")?,
            topic: r.str("topic")?,
            partition: r.i32("partition")?,
        }),
        2 => Ok(Key::Group {
            group: r.str("group")?,
        }),
        other => match super::consumer_records::decode_key(other, &mut r)? {
            Some(k) => Ok(Key::Consumer(k)),
            None => match crate::share_group::decode_key(buf)? {
                Some(k) => Ok(Key::Share(k)),
                None => match crate::streams_group::records::decode_key(buf)? {
                    Some(k) => Ok(Key::Streams(k)),
                    None => Ok(Key::Other(other)),
                },
            },
        },
    }
}

pub fn decode_offset_value(buf: &[u8]) -> Result<OffsetValue, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("value version")?;
    if !(0..=4).contains(&version) {
        return Err(CodecError::UnknownVersion(version));
    }
    r.flexible = version >= 4;
    let offset = r.i64("offset")?;
    let leader_epoch = if version >= 3 {
        r.i32("leader epoch")?
    } else {
        -1
    };
    let metadata = r.str("metadata")?;
    let commit_timestamp = r.i64("commit timestamp")?;
    let expire_timestamp = if version == 1 {
        r.i64("expire timestamp")?
    } else {
        -1
    };
    r.skip_tags_if_flexible()?;
    Ok(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
    })
}

pub fn decode_group_value(buf: &[u8]) -> Result<GroupValue, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("value version")?;
    if !(0..=4).contains(&version) {
        return Err(CodecError::UnknownVersion(version));
    }
    r.flexible = version >= 4;
    let protocol_type = r.str("protocol type")?;
    let generation = r.i32("generation")?;
    let protocol = r.nullable_str("protocol")?;
    let leader = r.nullable_str("leader")?;
    let current_state_timestamp = if version >= 2 {
        r.i64("current state timestamp")?
    } else {
        -1
    };
    let count = r.len(true, "members")?.unwrap_or(0);
    // Each member takes at least 16 bytes: a hostile count cannot make us allocate much.
    let mut members = Vec::with_capacity(count.min(buf.len() / 16));
    for _ in 0..count {
        let member_id = r.str("member id")?;
        let group_instance_id = if version >= 3 {
            r.nullable_str("group instance id")?
        } else {
            None
        };
        let client_id = r.str("client id")?;
        let client_host = r.str("client host")?;
        let session_timeout_first = r.i32("timeout")?;
        // v0 has only the session timeout; v1+ puts the rebalance timeout first.
        let (rebalance_timeout, session_timeout) = if version >= 1 {
            (session_timeout_first, r.i32("session timeout")?)
        } else {
            (session_timeout_first, session_timeout_first)
        };
        let subscription = r.bytes("subscription")?;
        let assignment = r.bytes("assignment")?;
        r.skip_tags_if_flexible()?;
        members.push(MemberValue {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            subscription,
            assignment,
        });
    }
    r.skip_tags_if_flexible()?;
    Ok(GroupValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

/// Kafka's `String.hashCode` over UTF-16 code units, used to place a group on a partition.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// `__consumer_offsets` partition of a group: `Utils.abs(hashCode) % partitions`, where
/// Kafka's `abs` maps `i32::MIN` to 0.
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let h = java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_key_golden_bytes() {
        let key = Key::Offset {
            group: "g".into(),
            topic: "t1".into(),
            partition: 5,
        };
        let bytes = encode_key(&key);
        assert_eq!(
            bytes,
            [0, 1, 0, 1, b'g', 0, 2, b't', b'1', 0, 0, 0, 5],
            "version 1, group, topic, partition"
        );
        assert_eq!(decode_key(&bytes).unwrap(), key);
        // Version 0 keys (older Kafka) have the same layout.
        let mut v0 = bytes.clone();
        v0[1] = 0;
        assert_eq!(decode_key(&v0).unwrap(), key);
    }

    #[test]
    fn group_key_golden_bytes() {
        let key = Key::Group { group: "ab".into() };
        let bytes = encode_key(&key);
        assert_eq!(bytes, [0, 2, 0, 2, b'a', b'b']);
        assert_eq!(decode_key(&bytes).unwrap(), key);
        assert_eq!(decode_key(&[0, 4, 1, 2]).unwrap(), Key::Other(4));
    }

    #[test]
    fn offset_value_v3_golden_bytes() {
        let v = OffsetValue {
            offset: 42,
            leader_epoch: 7,
            metadata: "m".into(),
            commit_timestamp: 1000,
            expire_timestamp: -1,
        };
        let bytes = encode_offset_value(&v);
        let mut want = vec![0, 3];
        want.extend_from_slice(&42i64.to_be_bytes());
        want.extend_from_slice(&7i32.to_be_bytes());
        want.extend_from_slice(&[0, 1, b'm']);
        want.extend_from_slice(&1000i64.to_be_bytes());
        assert_eq!(bytes, want);
        assert_eq!(decode_offset_value(&bytes).unwrap(), v);
    }

    #[test]
    fn offset_value_older_and_flexible_versions_decode() {
        // v1: offset, metadata, commit ts, expire ts.
        let mut v1 = vec![0, 1];
        v1.extend_from_slice(&9i64.to_be_bytes());
        v1.extend_from_slice(&[0, 0]);
        v1.extend_from_slice(&5i64.to_be_bytes());
        v1.extend_from_slice(&6i64.to_be_bytes());
        let d = decode_offset_value(&v1).unwrap();
        assert_eq!((d.offset, d.leader_epoch, d.commit_timestamp), (9, -1, 5));
        assert_eq!(d.expire_timestamp, 6);
        assert_eq!(
            encode_offset_value(&d),
            v1,
            "explicit expiry is written as v1"
        );
        // v4: flexible: compact string (len+1) and an empty tag section.
        let mut v4 = vec![0, 4];
        v4.extend_from_slice(&9i64.to_be_bytes());
        v4.extend_from_slice(&3i32.to_be_bytes());
        v4.extend_from_slice(&[3, b'h', b'i']);
        v4.extend_from_slice(&5i64.to_be_bytes());
        v4.push(0);
        let d = decode_offset_value(&v4).unwrap();
        assert_eq!((d.leader_epoch, d.metadata.as_str()), (3, "hi"));
        assert_eq!(
            decode_offset_value(&[0, 9]),
            Err(CodecError::UnknownVersion(9))
        );
    }

    #[test]
    fn group_value_v3_golden_bytes_and_round_trip() {
        let v = GroupValue {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 77,
            members: vec![MemberValue {
                member_id: "m1".into(),
                group_instance_id: None,
                client_id: "c".into(),
                client_host: "/h".into(),
                rebalance_timeout: 300,
                session_timeout: 100,
                subscription: Bytes::from_static(&[1, 2]),
                assignment: Bytes::new(),
            }],
        };
        let bytes = encode_group_value(&v);
        let mut want = vec![0, 3, 0, 8];
        want.extend_from_slice(b"consumer");
        want.extend_from_slice(&3i32.to_be_bytes());
        want.extend_from_slice(&[0, 5]);
        want.extend_from_slice(b"range");
        want.extend_from_slice(&[0, 2, b'm', b'1']);
        want.extend_from_slice(&77i64.to_be_bytes());
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&[0, 2, b'm', b'1', 0xff, 0xff, 0, 1, b'c', 0, 2, b'/', b'h']);
        want.extend_from_slice(&300i32.to_be_bytes());
        want.extend_from_slice(&100i32.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 2, 1, 2, 0, 0, 0, 0]);
        assert_eq!(bytes, want);
        assert_eq!(decode_group_value(&bytes).unwrap(), v);
        // Every truncation is an error, never a panic.
        for cut in 0..bytes.len() {
            assert!(decode_group_value(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn group_value_v0_has_one_timeout() {
        let mut v0 = vec![0, 0, 0, 1, b'x', 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        v0.extend_from_slice(&0i32.to_be_bytes());
        let d = decode_group_value(&v0).unwrap();
        assert_eq!(d.protocol_type, "x");
        assert_eq!(d.generation, 1);
        assert_eq!((d.protocol, d.leader), (None, None));
        assert!(d.members.is_empty());
    }

    #[test]
    fn partition_matches_java_hash() {
        // "hello".hashCode() == 99162322 in Java.
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash(""), 0);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's abs maps it to 0.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        // Negative hash: "test-group".hashCode() is computed via wrapping like Java.
        let h = java_string_hash("test-group");
        assert_eq!(partition_for("test-group", 50), h.abs() % 50);
    }
}
