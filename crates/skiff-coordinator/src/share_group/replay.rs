//! Share groups to and from their `__consumer_offsets` records: every record that describes a
//! group now, the tombstones a departure writes, and rebuilding groups at load.
//!
//! As in Kafka, members are persisted (metadata and current assignment) and come back at
//! load with a fresh session timeout: one that does not heartbeat again is expired as usual.

use std::collections::BTreeMap;

use super::assignor::TopicAssignment;
use super::group::ShareGroup;
use super::member::ShareMember;
use super::records::{
    decode_current, decode_member, decode_metadata, decode_target_member, decode_target_metadata,
    encode_current, encode_key, encode_member, encode_metadata, encode_target_member,
    encode_target_metadata, CurrentAssignment, MemberMetadata, ShareKey, STATE_STABLE,
};
use crate::host::TopicCatalog;
use crate::wire::CodecError;

/// One record: key bytes, and value bytes or `None` for a tombstone.
pub type RawRecord = (Vec<u8>, Option<Vec<u8>>);

/// Every record that describes `group` as it is: what compaction would keep. The group
/// metadata comes first, so a replay of these alone rebuilds the group.
pub fn group_records(group: &ShareGroup) -> Vec<RawRecord> {
    let gid = || group.id.clone();
    let mut out = vec![
        (
            encode_key(&ShareKey::Metadata { group: gid() }),
            Some(encode_metadata(group.epoch)),
        ),
        (
            encode_key(&ShareKey::TargetMetadata { group: gid() }),
            Some(encode_target_metadata(
                group.assignment_epoch,
                group.assignment_timestamp(),
            )),
        ),
    ];
    for m in group.members.values() {
        let metadata = MemberMetadata {
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed: m.subscribed.iter().cloned().collect(),
        };
        out.push((
            encode_key(&ShareKey::Member {
                group: gid(),
                member: m.id.clone(),
            }),
            Some(encode_member(&metadata)),
        ));
        out.push((
            encode_key(&ShareKey::Current {
                group: gid(),
                member: m.id.clone(),
            }),
            Some(encode_current(&CurrentAssignment {
                epoch: m.epoch,
                previous_epoch: m.previous_epoch,
                state: STATE_STABLE,
                assigned: m.assigned.clone(),
            })),
        ));
    }
    for (member, target) in &group.target {
        out.push((
            encode_key(&ShareKey::TargetMember {
                group: gid(),
                member: member.clone(),
            }),
            Some(encode_target_member(target)),
        ));
    }
    out
}

/// What Kafka writes when a member leaves or expires: tombstones of its current assignment,
/// target and metadata, then the group's new epoch.
pub fn member_removed_records(group: &ShareGroup, member_id: &str) -> Vec<RawRecord> {
    let key = |k: ShareKey| encode_key(&k);
    let (group_id, member) = (group.id.clone(), member_id.to_string());
    vec![
        (
            key(ShareKey::Current {
                group: group_id.clone(),
                member: member.clone(),
            }),
            None,
        ),
        (
            key(ShareKey::TargetMember {
                group: group_id.clone(),
                member: member.clone(),
            }),
            None,
        ),
        (
            key(ShareKey::Member {
                group: group_id.clone(),
                member,
            }),
            None,
        ),
        (
            key(ShareKey::Metadata { group: group_id }),
            Some(encode_metadata(group.epoch)),
        ),
    ]
}

/// Groups being rebuilt from records, in log order.
#[derive(Default)]
pub struct ShareReplay {
    groups: BTreeMap<String, Loaded>,
}

#[derive(Default)]
struct Loaded {
    /// Set by the group metadata record: without it there is no group.
    epoch: Option<i32>,
    assignment: (i32, Option<i64>),
    members: BTreeMap<String, MemberMetadata>,
    current: BTreeMap<String, CurrentAssignment>,
    target: BTreeMap<String, TopicAssignment>,
}

impl ShareReplay {
    /// Apply one record (`value` `None`: a tombstone). A later record for the same key
    /// replaces an earlier one; a tombstone of the group metadata deletes the group.
    pub fn apply(&mut self, key: &ShareKey, value: Option<&[u8]>) -> Result<(), CodecError> {
        if let (ShareKey::Metadata { group }, None) = (key, value) {
            self.groups.remove(group);
            return Ok(());
        }
        let group = self.groups.entry(key.group().to_string()).or_default();
        match (key, value) {
            (ShareKey::Metadata { .. }, None) => {}
            (ShareKey::Metadata { .. }, Some(v)) => group.epoch = Some(decode_metadata(v)?),
            (ShareKey::TargetMetadata { .. }, None) => group.assignment = (0, None),
            (ShareKey::TargetMetadata { .. }, Some(v)) => {
                group.assignment = decode_target_metadata(v)?;
            }
            (ShareKey::Member { member, .. }, None) => {
                group.members.remove(member);
            }
            (ShareKey::Member { member, .. }, Some(v)) => {
                group.members.insert(member.clone(), decode_member(v)?);
            }
            (ShareKey::Current { member, .. }, None) => {
                group.current.remove(member);
            }
            (ShareKey::Current { member, .. }, Some(v)) => {
                group.current.insert(member.clone(), decode_current(v)?);
            }
            (ShareKey::TargetMember { member, .. }, None) => {
                group.target.remove(member);
            }
            (ShareKey::TargetMember { member, .. }, Some(v)) => {
                group
                    .target
                    .insert(member.clone(), decode_target_member(v)?);
            }
            // Share-partition initialization state: read once a share coordinator exists.
            (ShareKey::StatePartitionMetadata { .. }, _) => {}
        }
        Ok(())
    }

    /// The rebuilt groups. Every member gets a new session deadline of
    /// `now + session_timeout_ms`, as Kafka restarts the session timers at load.
    pub fn finish(
        self,
        topics: &dyn TopicCatalog,
        session_timeout_ms: i32,
        now: i64,
    ) -> BTreeMap<String, ShareGroup> {
        let mut out = BTreeMap::new();
        for (id, loaded) in self.groups {
            let Some(epoch) = loaded.epoch else {
                continue;
            };
            let mut members = BTreeMap::new();
            for (member_id, meta) in loaded.members {
                let mut m = ShareMember::new(&member_id);
                m.rack_id = meta.rack_id;
                m.client_id = meta.client_id;
                m.client_host = meta.client_host;
                m.subscribed = meta.subscribed.into_iter().collect();
                if let Some(c) = loaded.current.get(&member_id) {
                    m.epoch = c.epoch;
                    m.previous_epoch = c.previous_epoch;
                    m.assigned = c.assigned.clone();
                }
                m.session_deadline = now + i64::from(session_timeout_ms);
                members.insert(member_id, m);
            }
            // A target is kept only for a member that still exists.
            let target = loaded
                .target
                .into_iter()
                .filter(|(m, _)| members.contains_key(m))
                .collect();
            let group = ShareGroup::restore(&id, epoch, loaded.assignment, members, target, topics);
            out.insert(id, group);
        }
        out
    }
}
