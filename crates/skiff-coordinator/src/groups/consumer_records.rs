//! The KIP-848 consumer group records of `__consumer_offsets`, in Apache Kafka's own schemas
//! (group-coordinator `ConsumerGroup*Key/Value`), so a restarted Skiff keeps its consumer
//! groups and Kafka tools read what Skiff wrote.
//!
//! On-disk format (big-endian). Keys are non-flexible: `int16` record type, group `string`,
//! and for member records member `string`:
//! - 3 `ConsumerGroupMetadataKey` (group) -> value: epoch `int32`;
//! - 5 `ConsumerGroupMemberMetadataKey` (group, member) -> value: instanceId, rackId
//!   (nullable), clientId, clientHost, subscribedTopicNames `[]string`, subscribedTopicRegex
//!   (nullable), rebalanceTimeoutMs `int32`, serverAssignor (nullable);
//! - 6 `ConsumerGroupTargetAssignmentMetadataKey` (group) -> value: assignmentEpoch `int32`;
//! - 7 `ConsumerGroupTargetAssignmentMemberKey` (group, member) -> value: `[]` of topicId
//!   `uuid`, partitions `[]int32`;
//! - 8 `ConsumerGroupCurrentMemberAssignmentKey` (group, member) -> value: memberEpoch,
//!   previousMemberEpoch `int32`, state `int8`, assignedPartitions and
//!   partitionsPendingRevocation (both as in 7, each entry with tag 0 AssignmentEpochs
//!   `[]int32`: the member epoch each partition was assigned at, KIP-1251).
//!
//! Values are `int16` version 0 followed by the flexible encoding: compact strings and
//! arrays (unsigned varint length + 1, 0 = null) and a tagged-field section after every
//! struct. Skiff writes no other tags and skips any others it reads. Type 4 (partition
//! metadata) is not used. Pure functions: safe from any thread; decoding is bounds-checked.
//!
//! The value framing and the topic-partition lists are shared with the share group records
//! (`assignment_codec.rs`).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::assignment_codec::{self, read_topic_partitions, start_value, value_reader};
use crate::wire::{
    put_compact_len, put_compact_nullable, put_compact_str, put_i16, put_i32, put_str, put_uuid,
    CodecError, Reader,
};

pub const METADATA: i16 = 3;
pub const MEMBER: i16 = 5;
pub const TARGET_METADATA: i16 = 6;
pub const TARGET_MEMBER: i16 = 7;
pub const CURRENT_ASSIGNMENT: i16 = 8;

/// Kafka's `MemberState` byte in the current assignment record.
pub const STATE_STABLE: i8 = 0;
pub const STATE_UNREVOKED: i8 = 1;
pub const STATE_UNRELEASED: i8 = 2;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConsumerKey {
    Metadata { group: String },
    Member { group: String, member: String },
    TargetMetadata { group: String },
    TargetMember { group: String, member: String },
    Current { group: String, member: String },
}

impl ConsumerKey {
    pub fn group(&self) -> &str {
        match self {
            ConsumerKey::Metadata { group }
            | ConsumerKey::TargetMetadata { group }
            | ConsumerKey::Member { group, .. }
            | ConsumerKey::TargetMember { group, .. }
            | ConsumerKey::Current { group, .. } => group,
        }
    }
}

/// Topic id -> partitions, in the order written.
pub type TopicPartitions = Vec<(Uuid, Vec<i32>)>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberMetadata {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
    pub regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// Tagged field 0: set for a member using the classic protocol (online migration).
    pub classic: Option<ClassicMemberMetadata>,
}

/// Kafka's `ClassicMemberMetadata` struct of the member value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// (protocol name, metadata), in the member's order of preference.
    pub protocols: Vec<(String, bytes::Bytes)>,
}

/// The member value's tag carrying [`ClassicMemberMetadata`].
const CLASSIC_MEMBER_TAG: u32 = 0;

fn encode_classic(c: &ClassicMemberMetadata) -> Vec<u8> {
    let mut out = Vec::new();
    put_i32(&mut out, c.session_timeout_ms);
    put_compact_len(&mut out, c.protocols.len());
    for (name, metadata) in &c.protocols {
        put_compact_str(&mut out, name);
        put_compact_len(&mut out, metadata.len());
        out.extend_from_slice(metadata);
        out.push(0);
    }
    out.push(0);
    out
}

fn decode_classic(buf: &[u8]) -> Result<ClassicMemberMetadata, CodecError> {
    let mut r = Reader::new(buf);
    r.flexible = true;
    let session_timeout_ms = r.i32("classic session timeout")?;
    let n = r.array_len(2, "classic protocols")?;
    let mut protocols = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.str("classic protocol name")?;
        let metadata = r.bytes("classic protocol metadata")?;
        r.skip_tags()?;
        protocols.push((name, metadata));
    }
    r.skip_tags()?;
    Ok(ClassicMemberMetadata {
        session_timeout_ms,
        protocols,
    })
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentAssignment {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: i8,
    pub assigned: TopicPartitions,
    pub revoking: TopicPartitions,
    /// The member epoch each partition of `assigned` and `revoking` was assigned at
    /// (KIP-1251). One missing is written as `epoch`; a record without them reads as all
    /// assigned at `epoch`, as Kafka reads it.
    pub assigned_at: BTreeMap<(Uuid, i32), i32>,
}

pub fn encode_key(out: &mut Vec<u8>, key: &ConsumerKey) {
    let (kind, group, member) = match key {
        ConsumerKey::Metadata { group } => (METADATA, group, None),
        ConsumerKey::Member { group, member } => (MEMBER, group, Some(member)),
        ConsumerKey::TargetMetadata { group } => (TARGET_METADATA, group, None),
        ConsumerKey::TargetMember { group, member } => (TARGET_MEMBER, group, Some(member)),
        ConsumerKey::Current { group, member } => (CURRENT_ASSIGNMENT, group, Some(member)),
    };
    put_i16(out, kind);
    put_str(out, group);
    if let Some(m) = member {
        put_str(out, m);
    }
}

/// The key after its type; `None` for types that are not consumer group records.
pub(super) fn decode_key(kind: i16, r: &mut Reader<'_>) -> Result<Option<ConsumerKey>, CodecError> {
    let key = match kind {
        METADATA => ConsumerKey::Metadata {
            group: r.str("group")?,
        },
        TARGET_METADATA => ConsumerKey::TargetMetadata {
            group: r.str("group")?,
        },
        MEMBER | TARGET_MEMBER | CURRENT_ASSIGNMENT => {
            let group = r.str("group")?;
            let member = r.str("member id")?;
            match kind {
                MEMBER => ConsumerKey::Member { group, member },
                TARGET_MEMBER => ConsumerKey::TargetMember { group, member },
                _ => ConsumerKey::Current { group, member },
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(key))
}

// ---------------------------------------------------------------- value writers

fn put_topic_partitions(out: &mut Vec<u8>, tps: &TopicPartitions) {
    assignment_codec::put_topic_partitions(out, tps.iter().map(|(id, parts)| (id, parts)));
}

/// ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue: one epoch.
pub fn encode_epoch(epoch: i32) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, epoch);
    out.push(0);
    out
}

pub fn encode_member(m: &MemberMetadata) -> Vec<u8> {
    let mut out = start_value();
    put_compact_nullable(&mut out, m.instance_id.as_deref());
    put_compact_nullable(&mut out, m.rack_id.as_deref());
    put_compact_str(&mut out, &m.client_id);
    put_compact_str(&mut out, &m.client_host);
    put_compact_len(&mut out, m.subscribed.len());
    for t in &m.subscribed {
        put_compact_str(&mut out, t);
    }
    put_compact_nullable(&mut out, m.regex.as_deref());
    put_i32(&mut out, m.rebalance_timeout_ms);
    put_compact_nullable(&mut out, m.server_assignor.as_deref());
    match &m.classic {
        None => out.push(0),
        Some(c) => {
            let body = encode_classic(c);
            out.push(1);
            crate::wire::put_uvarint(&mut out, CLASSIC_MEMBER_TAG);
            crate::wire::put_uvarint(&mut out, u32::try_from(body.len()).unwrap_or(u32::MAX));
            out.extend_from_slice(&body);
        }
    }
    out
}

pub fn encode_target_member(tps: &TopicPartitions) -> Vec<u8> {
    let mut out = start_value();
    put_topic_partitions(&mut out, tps);
    out.push(0);
    out
}

pub fn encode_current(c: &CurrentAssignment) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, c.epoch);
    put_i32(&mut out, c.previous_epoch);
    out.push(c.state as u8);
    for tps in [&c.assigned, &c.revoking] {
        put_compact_len(&mut out, tps.len());
        for (id, parts) in tps {
            put_uuid(&mut out, id);
            put_compact_len(&mut out, parts.len());
            for p in parts {
                put_i32(&mut out, *p);
            }
            let epochs: Vec<i32> = parts
                .iter()
                .map(|p| c.assigned_at.get(&(*id, *p)).copied().unwrap_or(c.epoch))
                .collect();
            assignment_codec::put_epochs_tag(&mut out, Some(&epochs));
        }
    }
    out.push(0);
    out
}

/// A current assignment's partition list; each partition's assignment epoch into
/// `assigned_at` (`default` where the record has none).
fn read_held(
    r: &mut Reader<'_>,
    default: i32,
    assigned_at: &mut BTreeMap<(Uuid, i32), i32>,
) -> Result<TopicPartitions, CodecError> {
    assignment_codec::read_topic_partition_entries(r, |r, id, parts| {
        let epochs = assignment_codec::read_epochs_tag(r, parts.len())?;
        for (i, p) in parts.iter().enumerate() {
            let at = epochs.as_ref().map_or(default, |e| e[i]);
            assigned_at.insert((id, *p), at);
        }
        Ok(())
    })
}

// ---------------------------------------------------------------- decoding

pub fn decode_epoch(buf: &[u8]) -> Result<i32, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("epoch")?;
    r.skip_tags()?;
    Ok(epoch)
}

pub fn decode_member(buf: &[u8]) -> Result<MemberMetadata, CodecError> {
    let mut r = value_reader(buf)?;
    let instance_id = r.nullable_str("instance id")?;
    let rack_id = r.nullable_str("rack id")?;
    let client_id = r.str("client id")?;
    let client_host = r.str("client host")?;
    let n = r.array_len(1, "subscribed topics")?;
    let mut subscribed = Vec::with_capacity(n);
    for _ in 0..n {
        subscribed.push(r.str("subscribed topic")?);
    }
    let regex = r.nullable_str("subscribed topic regex")?;
    let rebalance_timeout_ms = r.i32("rebalance timeout")?;
    let server_assignor = r.nullable_str("server assignor")?;
    let mut classic = None;
    r.tags(|tag, body| {
        if tag == CLASSIC_MEMBER_TAG {
            classic = Some(decode_classic(body)?);
        }
        Ok(())
    })?;
    Ok(MemberMetadata {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed,
        regex,
        rebalance_timeout_ms,
        server_assignor,
        classic,
    })
}

pub fn decode_target_member(buf: &[u8]) -> Result<TopicPartitions, CodecError> {
    let mut r = value_reader(buf)?;
    let tps = read_topic_partitions(&mut r)?;
    r.skip_tags()?;
    Ok(tps)
}

pub fn decode_current(buf: &[u8]) -> Result<CurrentAssignment, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("member epoch")?;
    let previous_epoch = r.i32("previous member epoch")?;
    let state = r.take(1, "member state")?[0] as i8;
    let mut assigned_at = BTreeMap::new();
    let assigned = read_held(&mut r, epoch.max(0), &mut assigned_at)?;
    let revoking = read_held(&mut r, epoch.max(0), &mut assigned_at)?;
    r.skip_tags()?;
    Ok(CurrentAssignment {
        epoch,
        previous_epoch,
        state,
        assigned,
        revoking,
        assigned_at,
    })
}

#[cfg(test)]
mod tests {
    use super::super::records::{decode_key, encode_key as encode_any_key, Key};
    use super::*;

    #[test]
    fn keys_golden_bytes() {
        let k = Key::Consumer(ConsumerKey::Metadata { group: "g".into() });
        let b = encode_any_key(&k);
        assert_eq!(b, [0, 3, 0, 1, b'g']);
        assert_eq!(decode_key(&b).unwrap(), k);
        let k = Key::Consumer(ConsumerKey::Current {
            group: "g".into(),
            member: "m1".into(),
        });
        let b = encode_any_key(&k);
        assert_eq!(b, [0, 8, 0, 1, b'g', 0, 2, b'm', b'1']);
        assert_eq!(decode_key(&b).unwrap(), k);
        for (kind, want) in [
            (
                5,
                ConsumerKey::Member {
                    group: "g".into(),
                    member: "m1".into(),
                },
            ),
            (
                7,
                ConsumerKey::TargetMember {
                    group: "g".into(),
                    member: "m1".into(),
                },
            ),
        ] {
            let mut b = b.clone();
            b[1] = kind;
            assert_eq!(decode_key(&b).unwrap(), Key::Consumer(want));
        }
        assert_eq!(
            decode_key(&[0, 6, 0, 1, b'g']).unwrap(),
            Key::Consumer(ConsumerKey::TargetMetadata { group: "g".into() })
        );
        // Partition metadata (4) is not used.
        assert_eq!(decode_key(&[0, 4, 0, 1, b'g']).unwrap(), Key::Other(4));
        assert!(decode_key(&[0, 8, 0, 1, b'g', 0]).is_err());
    }

    #[test]
    fn epoch_value_golden_bytes() {
        let b = encode_epoch(7);
        assert_eq!(b, [0, 0, 0, 0, 0, 7, 0]);
        assert_eq!(decode_epoch(&b).unwrap(), 7);
        // Kafka 4.1+ writes a tagged MetadataHash (tag 0, 8 bytes): skipped.
        let tagged = [0, 0, 0, 0, 0, 9, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(decode_epoch(&tagged).unwrap(), 9);
        assert_eq!(
            decode_epoch(&[0, 1, 0, 0, 0, 7, 0]),
            Err(CodecError::UnknownVersion(1))
        );
    }

    #[test]
    fn member_value_golden_bytes() {
        let m = MemberMetadata {
            instance_id: None,
            rack_id: Some("r".into()),
            client_id: "c".into(),
            client_host: "/h".into(),
            subscribed: vec!["t".into()],
            regex: None,
            rebalance_timeout_ms: 300,
            server_assignor: Some("uniform".into()),
            classic: None,
        };
        let b = encode_member(&m);
        let mut want = vec![0, 0, 0, 2, b'r', 2, b'c', 3, b'/', b'h', 2, 2, b't', 0];
        want.extend_from_slice(&300i32.to_be_bytes());
        want.push(8);
        want.extend_from_slice(b"uniform");
        want.push(0);
        assert_eq!(b, want);
        assert_eq!(decode_member(&b).unwrap(), m);
        for cut in 0..b.len() {
            assert!(decode_member(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn classic_member_metadata_is_tag_zero() {
        let m = MemberMetadata {
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout_ms: 300,
            classic: Some(ClassicMemberMetadata {
                session_timeout_ms: 45_000,
                protocols: vec![("range".into(), bytes::Bytes::from_static(&[0, 1]))],
            }),
            ..MemberMetadata::default()
        };
        let b = encode_member(&m);
        // Body: session timeout, one protocol ("range", 2 bytes, no tags), no tags.
        let mut body = 45_000i32.to_be_bytes().to_vec();
        body.extend_from_slice(&[2, 6, b'r', b'a', b'n', b'g', b'e', 3, 0, 1, 0, 0]);
        let mut tail = vec![1, 0, body.len() as u8];
        tail.extend_from_slice(&body);
        assert!(b.ends_with(&tail), "{b:?}");
        assert_eq!(decode_member(&b).unwrap(), m);
        for cut in 0..b.len() {
            assert!(decode_member(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn assignment_values_golden_bytes() {
        let id = Uuid::from_bytes([1; 16]);
        let tps: TopicPartitions = vec![(id, vec![0, 2])];
        let b = encode_target_member(&tps);
        let mut want = vec![0, 0, 2];
        want.extend_from_slice(&[1; 16]);
        want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0]);
        assert_eq!(b, want);
        assert_eq!(decode_target_member(&b).unwrap(), tps);

        // A record written before KIP-1251 (no tags): every partition assigned at its epoch.
        let c = CurrentAssignment {
            epoch: 5,
            previous_epoch: 4,
            state: STATE_UNREVOKED,
            assigned: tps.clone(),
            revoking: vec![(id, vec![1])],
            assigned_at: [((id, 0), 5), ((id, 2), 5), ((id, 1), 5)].into(),
        };
        let mut old = vec![0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 1, 2];
        old.extend_from_slice(&[1; 16]);
        old.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2]);
        old.extend_from_slice(&[1; 16]);
        old.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0]);
        assert_eq!(decode_current(&old).unwrap(), c);

        // With assignment epochs, as Kafka 4.4 writes them
        // (testdata/ConsumerCurrentAssignment.java).
        let c = CurrentAssignment {
            assigned_at: [((id, 0), 3), ((id, 2), 5), ((id, 1), 4)].into(),
            ..c
        };
        let b = encode_current(&c);
        let kafka = "0000000000050000000401020101010101010101010101010101010103000000000000000201000903000000030000000502010101010101010101010101010101010200000001010005020000000400";
        let kafka: Vec<u8> = (0..kafka.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&kafka[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(b, kafka);
        assert_eq!(decode_current(&b).unwrap(), c);
        for cut in 0..b.len() {
            assert!(decode_current(&b[..cut]).is_err(), "cut at {cut}");
        }
        // A hostile array count is an error, not an allocation.
        assert!(decode_target_member(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
