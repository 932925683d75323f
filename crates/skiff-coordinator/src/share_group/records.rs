//! The share group records of `__consumer_offsets`, in Apache Kafka's own schemas
//! (group-coordinator `ShareGroup*Key/Value`), so share groups can survive a restart and
//! Kafka's tools can read what Skiff writes.
//!
//! Keys are non-flexible: `int16` record type, group `string`, and for member records the
//! member `string`:
//! - 10 `ShareGroupMemberMetadata` (group, member) → rackId (nullable), clientId,
//!   clientHost, subscribedTopicNames `[]string`;
//! - 11 `ShareGroupMetadata` (group) → epoch `int32`, metadataHash `int64`;
//! - 12 `ShareGroupTargetAssignmentMetadata` (group) → assignmentEpoch `int32`, tag 0:
//!   assignmentTimestamp `int64`;
//! - 13 `ShareGroupTargetAssignmentMember` (group, member) → `[]` of topicId `uuid`,
//!   partitions `[]int32`;
//! - 14 `ShareGroupCurrentMemberAssignment` (group, member) → memberEpoch,
//!   previousMemberEpoch `int32`, state `int8`, assignedPartitions (as in 13);
//! - 15 `ShareGroupStatePartitionMetadata` (group): which share partitions are initialized;
//!   its key is recognised, its value is not read yet (Skiff has no share coordinator).
//!
//! Values are `int16` version 0, then the flexible encoding with a tagged-field section after
//! every struct. Skiff writes the metadata hash as 0: it does not compute Kafka's topic hash,
//! and a Kafka reading it would only see a metadata change and bump the epoch once.
//!
//! The value framing and the topic-partition lists are encoded as in the consumer group
//! records, by `groups/assignment_codec.rs`.

use super::assignor::TopicAssignment;
use crate::groups::assignment_codec::{
    put_topic_partitions, read_topic_partitions, start_value, value_reader,
};
use crate::wire::{
    put_compact_len, put_compact_nullable, put_compact_str, put_i16, put_i32, put_i64,
    put_str_cut_at_byte, put_uvarint, CodecError, Reader,
};

pub const MEMBER: i16 = 10;
pub const METADATA: i16 = 11;
pub const TARGET_METADATA: i16 = 12;
pub const TARGET_MEMBER: i16 = 13;
pub const CURRENT_ASSIGNMENT: i16 = 14;
pub const STATE_PARTITION_METADATA: i16 = 15;

/// Kafka's `MemberState` byte: share members are always STABLE (no revocation).
pub const STATE_STABLE: i8 = 0;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShareKey {
    Member { group: String, member: String },
    Metadata { group: String },
    TargetMetadata { group: String },
    TargetMember { group: String, member: String },
    Current { group: String, member: String },
    StatePartitionMetadata { group: String },
}

impl ShareKey {
    pub fn group(&self) -> &str {
        match self {
            ShareKey::Metadata { group }
            | ShareKey::TargetMetadata { group }
            | ShareKey::StatePartitionMetadata { group }
            | ShareKey::Member { group, .. }
            | ShareKey::TargetMember { group, .. }
            | ShareKey::Current { group, .. } => group,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberMetadata {
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentAssignment {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: i8,
    pub assigned: TopicAssignment,
}

pub fn encode_key(key: &ShareKey) -> Vec<u8> {
    let (kind, group, member) = match key {
        ShareKey::Member { group, member } => (MEMBER, group, Some(member)),
        ShareKey::Metadata { group } => (METADATA, group, None),
        ShareKey::TargetMetadata { group } => (TARGET_METADATA, group, None),
        ShareKey::TargetMember { group, member } => (TARGET_MEMBER, group, Some(member)),
        ShareKey::Current { group, member } => (CURRENT_ASSIGNMENT, group, Some(member)),
        ShareKey::StatePartitionMetadata { group } => (STATE_PARTITION_METADATA, group, None),
    };
    let mut out = Vec::with_capacity(4 + group.len());
    put_i16(&mut out, kind);
    put_str_cut_at_byte(&mut out, group);
    if let Some(m) = member {
        put_str_cut_at_byte(&mut out, m);
    }
    out
}

/// A key of `__consumer_offsets`; `Ok(None)` for types that are not share group records.
pub fn decode_key(buf: &[u8]) -> Result<Option<ShareKey>, CodecError> {
    let mut r = Reader::new(buf);
    let kind = r.i16("record type")?;
    let key = match kind {
        METADATA => ShareKey::Metadata {
            group: r.str("group")?,
        },
        TARGET_METADATA => ShareKey::TargetMetadata {
            group: r.str("group")?,
        },
        STATE_PARTITION_METADATA => ShareKey::StatePartitionMetadata {
            group: r.str("group")?,
        },
        MEMBER | TARGET_MEMBER | CURRENT_ASSIGNMENT => {
            let group = r.str("group")?;
            let member = r.str("member id")?;
            match kind {
                MEMBER => ShareKey::Member { group, member },
                TARGET_MEMBER => ShareKey::TargetMember { group, member },
                _ => ShareKey::Current { group, member },
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(key))
}

pub fn encode_member(m: &MemberMetadata) -> Vec<u8> {
    let mut out = start_value();
    put_compact_nullable(&mut out, m.rack_id.as_deref());
    put_compact_str(&mut out, &m.client_id);
    put_compact_str(&mut out, &m.client_host);
    put_compact_len(&mut out, m.subscribed.len());
    for t in &m.subscribed {
        put_compact_str(&mut out, t);
    }
    out.push(0);
    out
}

/// ShareGroupMetadataValue: the group epoch (metadata hash 0, see the module doc).
pub fn encode_metadata(epoch: i32) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, epoch);
    put_i64(&mut out, 0);
    out.push(0);
    out
}

/// ShareGroupTargetAssignmentMetadataValue, with the timestamp as tag 0 when known.
pub fn encode_target_metadata(assignment_epoch: i32, timestamp: Option<i64>) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, assignment_epoch);
    match timestamp {
        Some(ts) => {
            put_uvarint(&mut out, 1);
            put_uvarint(&mut out, 0);
            put_uvarint(&mut out, 8);
            put_i64(&mut out, ts);
        }
        None => out.push(0),
    }
    out
}

pub fn encode_target_member(a: &TopicAssignment) -> Vec<u8> {
    let mut out = start_value();
    put_topic_partitions(&mut out, a.iter());
    out.push(0);
    out
}

pub fn encode_current(c: &CurrentAssignment) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, c.epoch);
    put_i32(&mut out, c.previous_epoch);
    out.push(c.state as u8);
    put_topic_partitions(&mut out, c.assigned.iter());
    out.push(0);
    out
}

/// The assignment as read, duplicates merged.
fn assignment(r: &mut Reader<'_>) -> Result<TopicAssignment, CodecError> {
    let mut out = TopicAssignment::new();
    for (id, parts) in read_topic_partitions(r)? {
        out.entry(id).or_default().extend(parts);
    }
    Ok(out)
}

pub fn decode_member(buf: &[u8]) -> Result<MemberMetadata, CodecError> {
    let mut r = value_reader(buf)?;
    let rack_id = r.compact_nullable("rack id")?;
    let client_id = r.compact_str("client id")?;
    let client_host = r.compact_str("client host")?;
    let n = r.array_len(1, "subscribed topics")?;
    let mut subscribed = Vec::with_capacity(n);
    for _ in 0..n {
        subscribed.push(r.compact_str("subscribed topic")?);
    }
    r.skip_tags()?;
    Ok(MemberMetadata {
        rack_id,
        client_id,
        client_host,
        subscribed,
    })
}

/// The group epoch (the metadata hash is read and dropped).
pub fn decode_metadata(buf: &[u8]) -> Result<i32, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("epoch")?;
    r.i64("metadata hash")?;
    r.skip_tags()?;
    Ok(epoch)
}

/// The assignment epoch and, when tagged, the assignment timestamp.
pub fn decode_target_metadata(buf: &[u8]) -> Result<(i32, Option<i64>), CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("assignment epoch")?;
    let mut timestamp = None;
    r.tags(|tag, bytes| {
        if tag == 0 {
            let b: [u8; 8] = bytes
                .try_into()
                .map_err(|_| CodecError::Invalid("assignment timestamp"))?;
            timestamp = Some(i64::from_be_bytes(b));
        }
        Ok(())
    })?;
    Ok((epoch, timestamp))
}

pub fn decode_target_member(buf: &[u8]) -> Result<TopicAssignment, CodecError> {
    let mut r = value_reader(buf)?;
    let a = assignment(&mut r)?;
    r.skip_tags()?;
    Ok(a)
}

pub fn decode_current(buf: &[u8]) -> Result<CurrentAssignment, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("member epoch")?;
    let previous_epoch = r.i32("previous member epoch")?;
    let state = r.i8("member state")?;
    let assigned = assignment(&mut r)?;
    r.skip_tags()?;
    Ok(CurrentAssignment {
        epoch,
        previous_epoch,
        state,
        assigned,
    })
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
