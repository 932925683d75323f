//! What to write to `__consumer_offsets` after a share group changed: only the records whose
//! value changed since they were last written, as Kafka's group coordinator writes them
//! (member metadata when it changed, the group epoch on a bump, the target records on a new
//! target, a member's current assignment when its epoch or assignment changed), plus the
//! tombstones a departure or a deletion writes.
//!
//! [`Persisted`] remembers the last value queued for every key of one group, so a change is
//! found by comparing [`group_records`] with it. Pure: the caller queues the records it
//! returns, in order, while it still holds the lock that serialises the group's changes.

use std::collections::BTreeMap;

use super::group::ShareGroup;
use super::records::{
    encode_key, ShareKey, CURRENT_ASSIGNMENT, MEMBER, METADATA, TARGET_MEMBER, TARGET_METADATA,
};
use super::replay::{group_records, member_removed_records, RawRecord};

/// The last value written for each key of one share group (encoded key → encoded value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Persisted(BTreeMap<Vec<u8>, Vec<u8>>);

impl Persisted {
    /// What a group rebuilt from its records has on disk (as far as replay can tell).
    pub fn of(group: &ShareGroup) -> Persisted {
        Persisted(
            group_records(group)
                .into_iter()
                .filter_map(|(k, v)| Some((k, v?)))
                .collect(),
        )
    }

    /// The records to write after `group` changed; `removed` names a member that left or
    /// expired, whose tombstones ([`member_removed_records`]) come first. Records are ordered
    /// as Kafka writes them: tombstones, member metadata, group epoch, target members, target
    /// metadata, current assignments.
    pub fn changes(&mut self, group: &ShareGroup, removed: &[&str]) -> Vec<RawRecord> {
        let mut out = Vec::new();
        for member in removed {
            for record in member_removed_records(group, member) {
                self.note(&record);
                out.push(record);
            }
        }
        let now: BTreeMap<Vec<u8>, Vec<u8>> = group_records(group)
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        let mut gone: Vec<RawRecord> = self
            .0
            .keys()
            .filter(|k| !now.contains_key(*k))
            .map(|k| (k.clone(), None))
            .collect();
        gone.sort_by_key(|(k, _)| tombstone_rank(k));
        let mut changed: Vec<RawRecord> = now
            .into_iter()
            .filter(|(k, v)| self.0.get(k) != Some(v))
            .map(|(k, v)| (k, Some(v)))
            .collect();
        changed.sort_by_key(|(k, _)| rank(k));
        for record in gone.into_iter().chain(changed) {
            self.note(&record);
            out.push(record);
        }
        out
    }

    fn note(&mut self, (key, value): &RawRecord) {
        match value {
            Some(v) => {
                self.0.insert(key.clone(), v.clone());
            }
            None => {
                self.0.remove(key);
            }
        }
    }
}

/// The tombstones Kafka writes when a share group is deleted: every member's current
/// assignment, every target member, the target metadata, every member's metadata, the
/// share-partition state metadata (15), and last the group epoch. Targets of members no
/// longer present (none in practice) are tombstoned too, so nothing of the group is left.
pub fn group_tombstones(group: &ShareGroup, persisted: &Persisted) -> Vec<RawRecord> {
    let gid = || group.id.clone();
    let members = || group.members.keys().cloned();
    let mut keys: Vec<ShareKey> = Vec::new();
    keys.extend(members().map(|member| ShareKey::Current {
        group: gid(),
        member,
    }));
    let mut targets: Vec<String> = members().collect();
    targets.extend(
        group
            .target
            .keys()
            .filter(|m| !group.members.contains_key(*m))
            .cloned(),
    );
    keys.extend(targets.into_iter().map(|member| ShareKey::TargetMember {
        group: gid(),
        member,
    }));
    keys.push(ShareKey::TargetMetadata { group: gid() });
    keys.extend(members().map(|member| ShareKey::Member {
        group: gid(),
        member,
    }));
    keys.push(ShareKey::StatePartitionMetadata { group: gid() });
    keys.push(ShareKey::Metadata { group: gid() });
    let mut out: Vec<RawRecord> = keys.iter().map(|k| (encode_key(k), None)).collect();
    // Anything else still on disk for the group (a member record left behind) goes first.
    let listed: std::collections::BTreeSet<&Vec<u8>> = out.iter().map(|(k, _)| k).collect();
    let mut extra: Vec<RawRecord> = persisted
        .0
        .keys()
        .filter(|k| !listed.contains(k))
        .map(|k| (k.clone(), None))
        .collect();
    extra.sort_by_key(|(k, _)| tombstone_rank(k));
    extra.append(&mut out);
    extra
}

fn kind(key: &[u8]) -> i16 {
    match key {
        [a, b, ..] => i16::from_be_bytes([*a, *b]),
        _ => -1,
    }
}

/// Kafka's write order of values by record type (see [`Persisted::changes`]).
fn rank(key: &[u8]) -> u8 {
    match kind(key) {
        MEMBER => 0,
        METADATA => 1,
        TARGET_MEMBER => 2,
        TARGET_METADATA => 3,
        CURRENT_ASSIGNMENT => 4,
        _ => 5,
    }
}

/// Kafka's order of tombstones by record type: a member's current assignment, its target,
/// the target metadata, its metadata, then the group.
fn tombstone_rank(key: &[u8]) -> u8 {
    match kind(key) {
        CURRENT_ASSIGNMENT => 0,
        TARGET_MEMBER => 1,
        TARGET_METADATA => 2,
        MEMBER => 3,
        METADATA => 5,
        _ => 4,
    }
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;
