//! A streams group to and from its `__consumer_offsets` records: the records that describe
//! it now (what compaction would keep), and the group rebuilt from replayed records. The
//! caller diffs [`snapshot`] against what it wrote last, writes the changed values and
//! tombstones the keys that are gone (a member that left, or the whole group).
//!
//! A restarted broker keeps member ids, epochs, tasks and the topology; session and
//! revocation deadlines restart from the load time, and the topology is checked against the
//! topics again on the next heartbeat.

use std::collections::BTreeMap;

use super::assignor::MemberTasks;
use super::group::StreamsGroup;
use super::member::{StreamsMember, TaskSet};
use super::records::{
    decode_current, decode_member, decode_metadata, decode_target_member, decode_target_metadata,
    decode_topology, encode_current, encode_member, encode_metadata, encode_target_member,
    encode_target_metadata, encode_topology, CurrentAssignment, GroupMetadata, MemberMetadata,
    StreamsKey,
};
use crate::wire::CodecError;

/// Encoded values by key.
pub type Persisted = BTreeMap<StreamsKey, Vec<u8>>;

/// The records describing `group` now.
pub fn snapshot(group: &StreamsGroup) -> Persisted {
    let g = || group.id.clone();
    let mut out = Persisted::new();
    out.insert(
        StreamsKey::Metadata { group: g() },
        encode_metadata(&GroupMetadata {
            epoch: group.epoch,
            validated_topology_epoch: group.validated_topology_epoch,
            last_assignment_configs: group.assignment_configs().clone(),
        }),
    );
    if let Some(t) = &group.topology {
        out.insert(StreamsKey::Topology { group: g() }, encode_topology(t));
    }
    out.insert(
        StreamsKey::TargetMetadata { group: g() },
        encode_target_metadata(group.assignment_epoch, group.assignment_timestamp()),
    );
    for m in group.members.values() {
        let member = || m.id.clone();
        out.insert(
            StreamsKey::Member {
                group: g(),
                member: member(),
            },
            encode_member(&MemberMetadata {
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                topology_epoch: m.topology_epoch,
                process_id: m.process_id.clone(),
                user_endpoint: m.user_endpoint.clone(),
                client_tags: m.client_tags.clone(),
            }),
        );
        out.insert(
            StreamsKey::Current {
                group: g(),
                member: member(),
            },
            encode_current(&CurrentAssignment {
                epoch: m.epoch,
                previous_epoch: m.previous_epoch,
                state: m.state,
                assigned: m.assigned.clone(),
                pending_revocation: m.pending_revocation.clone(),
                active_assigned_at: m.active_assigned_at.clone(),
            }),
        );
    }
    for (id, target) in &group.target {
        if group.members.contains_key(id) {
            out.insert(
                StreamsKey::TargetMember {
                    group: g(),
                    member: id.clone(),
                },
                encode_target_member(&TaskSet {
                    active: target.active.clone(),
                    standby: target.standby.clone(),
                    warmup: Default::default(),
                }),
            );
        }
    }
    out
}

/// Rebuilds a group from its replayed records; `Ok(None)` without a group metadata record
/// (deleted, or never a streams group). Members get a fresh session of
/// `session_timeout_ms`.
pub fn restore(
    id: &str,
    records: &Persisted,
    session_timeout_ms: i32,
    now: i64,
) -> Result<Option<StreamsGroup>, CodecError> {
    let mut metadata = None;
    let mut group = StreamsGroup::new(id);
    let mut currents = BTreeMap::new();
    let mut assignment = (0, None);
    for (k, v) in records {
        match k {
            StreamsKey::Metadata { .. } => metadata = Some(decode_metadata(v)?),
            StreamsKey::Topology { .. } => group.topology = Some(decode_topology(v)?),
            StreamsKey::TargetMetadata { .. } => assignment = decode_target_metadata(v)?,
            StreamsKey::Member { member, .. } => {
                let meta = decode_member(v)?;
                let mut m = StreamsMember::new(member);
                m.instance_id = meta.instance_id;
                m.rack_id = meta.rack_id;
                m.client_id = meta.client_id;
                m.client_host = meta.client_host;
                m.rebalance_timeout_ms = meta.rebalance_timeout_ms;
                m.topology_epoch = meta.topology_epoch;
                m.process_id = meta.process_id;
                m.user_endpoint = meta.user_endpoint;
                m.client_tags = meta.client_tags;
                group.members.insert(member.clone(), m);
            }
            StreamsKey::Current { member, .. } => {
                currents.insert(member.clone(), decode_current(v)?);
            }
            StreamsKey::TargetMember { member, .. } => {
                let t = decode_target_member(v)?;
                group.target.insert(
                    member.clone(),
                    MemberTasks {
                        active: t.active,
                        standby: t.standby,
                    },
                );
            }
        }
    }
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    group.epoch = metadata.epoch;
    group.validated_topology_epoch = metadata.validated_topology_epoch;
    for (id, m) in group.members.iter_mut() {
        if let Some(c) = currents.remove(id) {
            m.epoch = c.epoch;
            m.previous_epoch = c.previous_epoch;
            m.state = c.state;
            m.assigned = c.assigned;
            m.pending_revocation = c.pending_revocation;
            m.active_assigned_at = c.active_assigned_at;
        }
    }
    let members = group.members.clone();
    group.target.retain(|m, _| members.contains_key(m));
    group.restored(
        assignment,
        metadata.last_assignment_configs,
        now,
        session_timeout_ms,
    );
    Ok(Some(group))
}
