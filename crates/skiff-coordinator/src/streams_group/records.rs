//! The streams group records of `__consumer_offsets`, in Apache Kafka's own schemas
//! (group-coordinator `StreamsGroup*Key/Value`), so streams groups survive a restart and
//! Kafka's tools can read what Skiff writes.
//!
//! Keys are non-flexible: `int16` record type, group `string`, and for member records the
//! member `string`:
//! - 17 `StreamsGroupMetadata` (group) → epoch `int32`, metadataHash `int64`, tags:
//!   0 validatedTopologyEpoch `int32`, 1 lastAssignmentConfigs `[]{key, value}`, 2 and 3 the
//!   stored/failed topology-description epochs (not used by Skiff, skipped);
//! - 19 `StreamsGroupMemberMetadata` (group, member) → instanceId, rackId (nullable),
//!   clientId, clientHost, rebalanceTimeoutMs, topologyEpoch, processId, userEndpoint
//!   (nullable {host, port `uint16`}), clientTags `[]{key, value}`;
//! - 20 `StreamsGroupTargetAssignmentMetadata` (group) → assignmentEpoch, tag 0
//!   assignmentTimestamp `int64`;
//! - 21 `StreamsGroupTargetAssignmentMember` (group, member) → active, standby and warm-up
//!   task lists, each `[]{subtopologyId, partitions []int32}`;
//! - 22 `StreamsGroupCurrentMemberAssignment` (group, member) → memberEpoch,
//!   previousMemberEpoch, state `int8`, then six task lists: active, standby, warm-up, and the
//!   same three pending revocation (the entries of the two active lists carry tag 0
//!   AssignmentEpochs `[]int32`, the member epoch each partition was assigned at, KIP-1251);
//! - 23 `StreamsGroupTopology` (group) → epoch, sub-topologies (as declared in the
//!   heartbeat).
//!
//! Values are `int16` version 0, then the flexible encoding (a tag section after every
//! struct). Skiff writes the metadata hash as 0: it does not compute Kafka's topic hash; a
//! Kafka reading it would see a metadata change and bump the epoch once.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::Tasks;
use super::member::{Endpoint, MemberState, TaskSet};
use super::topology::{CopartitionGroup, InternalTopic, StreamsTopology, Subtopology};
use crate::groups::assignment_codec::{put_epochs_tag, read_epochs_tag, start_value, value_reader};
use crate::groups::commit_fence::AssignmentEpochs;
use crate::wire::{
    put_compact_len, put_compact_nullable, put_compact_str, put_i16, put_i32, put_i64,
    put_str_cut_at_byte, put_uvarint, CodecError, Reader,
};

pub const METADATA: i16 = 17;
pub const MEMBER: i16 = 19;
pub const TARGET_METADATA: i16 = 20;
pub const TARGET_MEMBER: i16 = 21;
pub const CURRENT_ASSIGNMENT: i16 = 22;
pub const TOPOLOGY: i16 = 23;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamsKey {
    Metadata { group: String },
    Member { group: String, member: String },
    TargetMetadata { group: String },
    TargetMember { group: String, member: String },
    Current { group: String, member: String },
    Topology { group: String },
}

impl StreamsKey {
    pub fn group(&self) -> &str {
        match self {
            StreamsKey::Metadata { group }
            | StreamsKey::TargetMetadata { group }
            | StreamsKey::Topology { group }
            | StreamsKey::Member { group, .. }
            | StreamsKey::TargetMember { group, .. }
            | StreamsKey::Current { group, .. } => group,
        }
    }
}

/// StreamsGroupMetadataValue, as far as Skiff uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupMetadata {
    pub epoch: i32,
    pub validated_topology_epoch: i32,
    pub last_assignment_configs: BTreeMap<String, String>,
}

/// StreamsGroupMemberMetadataValue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberMetadata {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
}

/// StreamsGroupCurrentMemberAssignmentValue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentAssignment {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    pub assigned: TaskSet,
    pub pending_revocation: TaskSet,
    /// The member epoch each active task of `assigned` and `pending_revocation` was assigned
    /// at. One missing is written as `epoch`; a record without them reads as all assigned at
    /// `epoch`, as Kafka reads it.
    pub active_assigned_at: AssignmentEpochs,
}

/// Kafka's `MemberState` byte.
fn state_byte(s: MemberState) -> i8 {
    match s {
        MemberState::Stable => 0,
        MemberState::UnrevokedTasks => 1,
        MemberState::UnreleasedTasks => 2,
    }
}

fn state_of(b: i8) -> Result<MemberState, CodecError> {
    match b {
        0 => Ok(MemberState::Stable),
        1 => Ok(MemberState::UnrevokedTasks),
        2 => Ok(MemberState::UnreleasedTasks),
        _ => Err(CodecError::Invalid("member state")),
    }
}

pub fn encode_key(key: &StreamsKey) -> Vec<u8> {
    let (kind, group, member) = match key {
        StreamsKey::Metadata { group } => (METADATA, group, None),
        StreamsKey::Member { group, member } => (MEMBER, group, Some(member)),
        StreamsKey::TargetMetadata { group } => (TARGET_METADATA, group, None),
        StreamsKey::TargetMember { group, member } => (TARGET_MEMBER, group, Some(member)),
        StreamsKey::Current { group, member } => (CURRENT_ASSIGNMENT, group, Some(member)),
        StreamsKey::Topology { group } => (TOPOLOGY, group, None),
    };
    let mut out = Vec::with_capacity(4 + group.len());
    put_i16(&mut out, kind);
    put_str_cut_at_byte(&mut out, group);
    if let Some(m) = member {
        put_str_cut_at_byte(&mut out, m);
    }
    out
}

/// A key of `__consumer_offsets`; `Ok(None)` for types that are not streams group records.
pub fn decode_key(buf: &[u8]) -> Result<Option<StreamsKey>, CodecError> {
    let mut r = Reader::new(buf);
    let kind = r.i16("record type")?;
    let key = match kind {
        METADATA => StreamsKey::Metadata {
            group: r.str("group")?,
        },
        TARGET_METADATA => StreamsKey::TargetMetadata {
            group: r.str("group")?,
        },
        TOPOLOGY => StreamsKey::Topology {
            group: r.str("group")?,
        },
        MEMBER | TARGET_MEMBER | CURRENT_ASSIGNMENT => {
            let group = r.str("group")?;
            let member = r.str("member id")?;
            match kind {
                MEMBER => StreamsKey::Member { group, member },
                TARGET_MEMBER => StreamsKey::TargetMember { group, member },
                _ => StreamsKey::Current { group, member },
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(key))
}

pub fn encode_metadata(m: &GroupMetadata) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, m.epoch);
    put_i64(&mut out, 0);
    let mut configs = Vec::new();
    put_key_values(&mut configs, &m.last_assignment_configs);
    // Kafka leaves a tagged field at its default (-1) out.
    let validated = m.validated_topology_epoch != -1;
    put_uvarint(&mut out, if validated { 2 } else { 1 });
    if validated {
        put_tag(&mut out, 0, &m.validated_topology_epoch.to_be_bytes());
    }
    put_tag(&mut out, 1, &configs);
    out
}

pub fn decode_metadata(buf: &[u8]) -> Result<GroupMetadata, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("epoch")?;
    r.i64("metadata hash")?;
    let mut m = GroupMetadata {
        epoch,
        validated_topology_epoch: -1,
        last_assignment_configs: BTreeMap::new(),
    };
    r.tags(|tag, bytes| {
        match tag {
            0 => {
                let b: [u8; 4] = bytes
                    .try_into()
                    .map_err(|_| CodecError::Invalid("validated topology epoch"))?;
                m.validated_topology_epoch = i32::from_be_bytes(b);
            }
            1 => {
                let mut t = Reader::new(bytes);
                t.flexible = true;
                m.last_assignment_configs = read_key_values(&mut t, "assignment configs")?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(m)
}

pub fn encode_member(m: &MemberMetadata) -> Vec<u8> {
    let mut out = start_value();
    put_compact_nullable(&mut out, m.instance_id.as_deref());
    put_compact_nullable(&mut out, m.rack_id.as_deref());
    put_compact_str(&mut out, &m.client_id);
    put_compact_str(&mut out, &m.client_host);
    put_i32(&mut out, m.rebalance_timeout_ms);
    put_i32(&mut out, m.topology_epoch);
    put_compact_str(&mut out, &m.process_id);
    // A nullable struct: -1 for null, 1 before its fields.
    match &m.user_endpoint {
        None => out.push(0xff),
        Some(e) => {
            out.push(1);
            put_compact_str(&mut out, &e.host);
            out.extend_from_slice(&e.port.to_be_bytes());
            out.push(0);
        }
    }
    put_key_values(&mut out, &m.client_tags);
    out.push(0);
    out
}

pub fn decode_member(buf: &[u8]) -> Result<MemberMetadata, CodecError> {
    let mut r = value_reader(buf)?;
    let instance_id = r.compact_nullable("instance id")?;
    let rack_id = r.compact_nullable("rack id")?;
    let client_id = r.compact_str("client id")?;
    let client_host = r.compact_str("client host")?;
    let rebalance_timeout_ms = r.i32("rebalance timeout")?;
    let topology_epoch = r.i32("topology epoch")?;
    let process_id = r.compact_str("process id")?;
    let user_endpoint = match r.i8("user endpoint")? {
        marker if marker < 0 => None,
        _ => {
            let host = r.compact_str("endpoint host")?;
            let port = u16::from_be_bytes(r.array::<2>("endpoint port")?);
            r.skip_tags()?;
            Some(Endpoint { host, port })
        }
    };
    let client_tags = read_key_values(&mut r, "client tags")?;
    r.skip_tags()?;
    Ok(MemberMetadata {
        instance_id,
        rack_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        topology_epoch,
        process_id,
        user_endpoint,
        client_tags,
    })
}

/// StreamsGroupTargetAssignmentMetadataValue, with the timestamp as tag 0 when known.
pub fn encode_target_metadata(assignment_epoch: i32, timestamp: Option<i64>) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, assignment_epoch);
    match timestamp {
        Some(ts) => {
            put_uvarint(&mut out, 1);
            put_tag(&mut out, 0, &ts.to_be_bytes());
        }
        None => out.push(0),
    }
    out
}

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

pub fn encode_target_member(t: &TaskSet) -> Vec<u8> {
    let mut out = start_value();
    for tasks in [&t.active, &t.standby, &t.warmup] {
        put_tasks(&mut out, tasks);
    }
    out.push(0);
    out
}

pub fn decode_target_member(buf: &[u8]) -> Result<TaskSet, CodecError> {
    let mut r = value_reader(buf)?;
    let t = TaskSet {
        active: read_tasks(&mut r)?,
        standby: read_tasks(&mut r)?,
        warmup: read_tasks(&mut r)?,
    };
    r.skip_tags()?;
    Ok(t)
}

pub fn encode_current(c: &CurrentAssignment) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, c.epoch);
    put_i32(&mut out, c.previous_epoch);
    out.push(state_byte(c.state) as u8);
    for set in [&c.assigned, &c.pending_revocation] {
        put_tasks_with_epochs(&mut out, &set.active, |s, p| {
            let key = (s.to_string(), p);
            c.active_assigned_at.get(&key).copied().unwrap_or(c.epoch)
        });
        put_tasks(&mut out, &set.standby);
        put_tasks(&mut out, &set.warmup);
    }
    out.push(0);
    out
}

pub fn decode_current(buf: &[u8]) -> Result<CurrentAssignment, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("member epoch")?;
    let previous_epoch = r.i32("previous member epoch")?;
    let state = state_of(r.i8("member state")?)?;
    let mut sets = [TaskSet::default(), TaskSet::default()];
    let mut active_assigned_at = AssignmentEpochs::new();
    for set in &mut sets {
        set.active = read_tasks_with_epochs(&mut r, epoch.max(0), &mut active_assigned_at)?;
        set.standby = read_tasks(&mut r)?;
        set.warmup = read_tasks(&mut r)?;
    }
    r.skip_tags()?;
    let [assigned, pending_revocation] = sets;
    Ok(CurrentAssignment {
        epoch,
        previous_epoch,
        state,
        assigned,
        pending_revocation,
        active_assigned_at,
    })
}

pub fn encode_topology(t: &StreamsTopology) -> Vec<u8> {
    let mut out = start_value();
    put_i32(&mut out, t.epoch);
    put_compact_len(&mut out, t.subtopologies.len());
    for s in t.subtopologies.values() {
        put_compact_str(&mut out, &s.id);
        put_strings(&mut out, &s.source_topics);
        put_strings(&mut out, &s.source_topic_regex);
        put_topic_infos(&mut out, &s.state_changelog_topics);
        put_strings(&mut out, &s.repartition_sink_topics);
        put_topic_infos(&mut out, &s.repartition_source_topics);
        put_compact_len(&mut out, s.copartition_groups.len());
        for g in &s.copartition_groups {
            for idx in [
                &g.source_topics,
                &g.source_topic_regex,
                &g.repartition_source_topics,
            ] {
                put_compact_len(&mut out, idx.len());
                for i in idx {
                    put_i16(&mut out, *i);
                }
            }
            out.push(0);
        }
        out.push(0);
    }
    out.push(0);
    out
}

pub fn decode_topology(buf: &[u8]) -> Result<StreamsTopology, CodecError> {
    let mut r = value_reader(buf)?;
    let epoch = r.i32("topology epoch")?;
    let n = r.array_len(7, "subtopologies")?;
    let mut subtopologies = BTreeMap::new();
    for _ in 0..n {
        let id = r.compact_str("subtopology id")?;
        let source_topics = read_strings(&mut r, "source topics")?;
        let source_topic_regex = read_strings(&mut r, "source topic regex")?;
        let state_changelog_topics = read_topic_infos(&mut r)?;
        let repartition_sink_topics = read_strings(&mut r, "repartition sink topics")?;
        let repartition_source_topics = read_topic_infos(&mut r)?;
        let groups = r.array_len(4, "copartition groups")?;
        let mut copartition_groups = Vec::with_capacity(groups);
        for _ in 0..groups {
            let mut lists = [Vec::new(), Vec::new(), Vec::new()];
            for list in &mut lists {
                let k = r.array_len(2, "copartition indexes")?;
                for _ in 0..k {
                    list.push(r.i16("copartition index")?);
                }
            }
            r.skip_tags()?;
            let [source_topics, source_topic_regex, repartition_source_topics] = lists;
            copartition_groups.push(CopartitionGroup {
                source_topics,
                source_topic_regex,
                repartition_source_topics,
            });
        }
        r.skip_tags()?;
        subtopologies.insert(
            id.clone(),
            Subtopology {
                id,
                source_topics,
                source_topic_regex,
                state_changelog_topics,
                repartition_sink_topics,
                repartition_source_topics,
                copartition_groups,
            },
        );
    }
    r.skip_tags()?;
    Ok(StreamsTopology {
        epoch,
        subtopologies,
    })
}

fn put_tag(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_uvarint(out, tag);
    put_uvarint(out, u32::try_from(bytes.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(bytes);
}

fn put_strings(out: &mut Vec<u8>, items: &[String]) {
    put_compact_len(out, items.len());
    for s in items {
        put_compact_str(out, s);
    }
}

fn read_strings(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<String>, CodecError> {
    let n = r.array_len(1, what)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(r.compact_str(what)?);
    }
    Ok(out)
}

/// `[]{key, value}` with a tag section after each entry.
fn put_key_values(out: &mut Vec<u8>, kv: &BTreeMap<String, String>) {
    put_compact_len(out, kv.len());
    for (k, v) in kv {
        put_compact_str(out, k);
        put_compact_str(out, v);
        out.push(0);
    }
}

fn read_key_values(
    r: &mut Reader<'_>,
    what: &'static str,
) -> Result<BTreeMap<String, String>, CodecError> {
    let n = r.array_len(3, what)?;
    let mut out = BTreeMap::new();
    for _ in 0..n {
        let k = r.compact_str(what)?;
        let v = r.compact_str(what)?;
        r.skip_tags()?;
        out.insert(k, v);
    }
    Ok(out)
}

fn put_topic_infos(out: &mut Vec<u8>, topics: &[InternalTopic]) {
    put_compact_len(out, topics.len());
    for t in topics {
        put_compact_str(out, &t.name);
        put_i32(out, t.partitions);
        put_i16(out, t.replication_factor);
        put_key_values(out, &t.configs);
        out.push(0);
    }
}

fn read_topic_infos(r: &mut Reader<'_>) -> Result<Vec<InternalTopic>, CodecError> {
    let n = r.array_len(9, "topic infos")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.compact_str("topic name")?;
        let partitions = r.i32("partitions")?;
        let replication_factor = r.i16("replication factor")?;
        let configs = read_key_values(r, "topic configs")?;
        r.skip_tags()?;
        out.push(InternalTopic {
            name,
            partitions,
            replication_factor,
            configs,
        });
    }
    Ok(out)
}

/// `[]{subtopologyId, partitions []int32}` with an empty tag section after each entry.
fn put_tasks(out: &mut Vec<u8>, tasks: &Tasks) {
    put_task_entries(out, tasks, |out, _, _| out.push(0));
}

/// [`put_tasks`] with each entry's assignment epochs (`epoch_of(subtopology, partition)`).
fn put_tasks_with_epochs(out: &mut Vec<u8>, tasks: &Tasks, epoch_of: impl Fn(&str, i32) -> i32) {
    put_task_entries(out, tasks, |out, s, ps| {
        let epochs: Vec<i32> = ps.iter().map(|p| epoch_of(s, *p)).collect();
        put_epochs_tag(out, Some(&epochs));
    });
}

/// A task list; `tags` writes each entry's tag section.
fn put_task_entries(
    out: &mut Vec<u8>,
    tasks: &Tasks,
    tags: impl Fn(&mut Vec<u8>, &str, &BTreeSet<i32>),
) {
    let entries: Vec<(&String, &BTreeSet<i32>)> =
        tasks.iter().filter(|(_, ps)| !ps.is_empty()).collect();
    put_compact_len(out, entries.len());
    for (s, ps) in entries {
        put_compact_str(out, s);
        put_compact_len(out, ps.len());
        for p in ps {
            put_i32(out, *p);
        }
        tags(out, s, ps);
    }
}

/// What [`put_tasks`] writes; duplicates merge, and the per-partition epochs Kafka may tag on
/// an entry are skipped.
fn read_tasks(r: &mut Reader<'_>) -> Result<Tasks, CodecError> {
    read_task_entries(r, |r, _, _| r.skip_tags())
}

/// What [`put_tasks_with_epochs`] writes; each task's assignment epoch into `assigned_at`
/// (`default` where the entry has none).
fn read_tasks_with_epochs(
    r: &mut Reader<'_>,
    default: i32,
    assigned_at: &mut AssignmentEpochs,
) -> Result<Tasks, CodecError> {
    read_task_entries(r, |r, s, ps| {
        let epochs = read_epochs_tag(r, ps.len())?;
        for (i, p) in ps.iter().enumerate() {
            let at = epochs.as_ref().map_or(default, |e| e[i]);
            assigned_at.insert((s.to_string(), *p), at);
        }
        Ok(())
    })
}

/// A task list; `tags` reads each entry's tag section, given its partitions in order.
fn read_task_entries(
    r: &mut Reader<'_>,
    mut tags: impl FnMut(&mut Reader<'_>, &str, &[i32]) -> Result<(), CodecError>,
) -> Result<Tasks, CodecError> {
    let n = r.array_len(3, "task ids")?;
    let mut out = Tasks::new();
    for _ in 0..n {
        let s = r.compact_str("subtopology id")?;
        let k = r.array_len(4, "task partitions")?;
        let mut ps = Vec::with_capacity(k);
        for _ in 0..k {
            ps.push(r.i32("task partition")?);
        }
        tags(r, &s, &ps)?;
        out.entry(s).or_default().extend(ps);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
