//! Whether an offset commit at an older member epoch may still be written (KIP-1251, Kafka
//! 4.4), for consumer and streams groups alike.
//!
//! A member commits with the member epoch it knows. When the group moves on (a member joins,
//! the member's epoch is bumped), commits already on their way carry the epoch before. So the
//! coordinator remembers, for each partition a member holds, the member epoch at which it was
//! handed that partition (its assignment epoch), kept unchanged while the member keeps it. A
//! commit at an older epoch is accepted when every partition in it is still held (or being
//! revoked) and was assigned at or before that epoch. One that is not fails the whole commit,
//! as in Kafka, so a late commit cannot overwrite what a partition's next owner commits.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;

/// OffsetCommit versions below 9 carry a generation, not a member epoch: Kafka refuses them
/// from members of the consumer and streams protocols (UNSUPPORTED_VERSION).
pub const FIRST_MEMBER_EPOCH_COMMIT_VERSION: i16 = 9;

/// (topic, or sub-topology of a streams task; partition) → the member epoch it was assigned at.
pub type AssignmentEpochs = BTreeMap<(String, i32), i32>;

/// Keeps `epochs` to exactly the partitions in `held`: one not there yet was assigned now, at
/// `epoch`; the others keep the epoch they were assigned at.
pub fn settle(epochs: &mut AssignmentEpochs, held: BTreeSet<(String, i32)>, epoch: i32) {
    epochs.retain(|k, _| held.contains(k));
    for k in held {
        epochs.entry(k).or_insert(epoch);
    }
}

/// The partitions of `assignments` (name → partitions), as [`settle`] takes them.
pub fn held<'a>(
    assignments: impl IntoIterator<Item = &'a BTreeMap<String, BTreeSet<i32>>>,
) -> BTreeSet<(String, i32)> {
    assignments
        .into_iter()
        .flat_map(|a| a.iter())
        .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
        .collect()
}

/// How an offset commit's partitions are checked once its member passed (Kafka's
/// `CommitPartitionValidator`): one refused partition refuses the commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitFence {
    /// Every partition may be written: the member's current epoch, an admin commit, or a
    /// classic group (whose generation check is all or nothing).
    Open,
    /// A commit at an older member epoch: each partition must be in `assigned_at` (by topic
    /// name) with an epoch at or below `epoch`; any other gets `error`.
    Older {
        epoch: i32,
        error: ResponseError,
        assigned_at: AssignmentEpochs,
    },
}

impl CommitFence {
    /// Every partition of a commit, in order: the first refusal, if any.
    pub fn check_all<'a>(
        &self,
        partitions: impl IntoIterator<Item = (&'a str, i32)>,
    ) -> Result<(), ResponseError> {
        partitions
            .into_iter()
            .try_for_each(|(topic, partition)| self.check(topic, partition))
    }

    pub fn check(&self, topic: &str, partition: i32) -> Result<(), ResponseError> {
        match self {
            CommitFence::Open => Ok(()),
            CommitFence::Older {
                epoch,
                error,
                assigned_at,
            } => match assigned_at.get(&(topic.to_string(), partition)) {
                Some(at) if at <= epoch => Ok(()),
                _ => Err(*error),
            },
        }
    }
}

/// Kafka's checks of an offset commit before its epoch, for consumer and streams groups: a
/// negative epoch while the group has no members is an admin commit (`None`: nothing more to
/// check); otherwise the member must exist (UNKNOWN_MEMBER_ID) and, unless `exempt` (a
/// classic member), commit with OffsetCommit v9 or later (UNSUPPORTED_VERSION).
/// `offset_commit_version` is None for TxnOffsetCommit, which has no such floor.
pub fn commit_member<'a, M>(
    members: &'a BTreeMap<String, M>,
    member_id: &str,
    epoch: i32,
    offset_commit_version: Option<i16>,
    exempt: impl Fn(&M) -> bool,
) -> Result<Option<&'a M>, ResponseError> {
    if epoch < 0 && members.is_empty() {
        return Ok(None);
    }
    let m = members
        .get(member_id)
        .ok_or(ResponseError::UnknownMemberId)?;
    let too_old = offset_commit_version.is_some_and(|v| v < FIRST_MEMBER_EPOCH_COMMIT_VERSION);
    if too_old && !exempt(m) {
        return Err(ResponseError::UnsupportedVersion);
    }
    Ok(Some(m))
}

/// Kafka's member-epoch rule for a commit from a member at `current`: its current epoch
/// may write any partition, a newer one none, an older one those `assigned_at` (by topic)
/// allows. A classic-protocol member (inside a consumer group) is refused with
/// ILLEGAL_GENERATION, every other member with STALE_MEMBER_EPOCH.
pub fn member_fence(
    current: i32,
    epoch: i32,
    classic: bool,
    assigned_at: impl FnOnce() -> AssignmentEpochs,
) -> Result<CommitFence, ResponseError> {
    let error = if classic {
        ResponseError::IllegalGeneration
    } else {
        ResponseError::StaleMemberEpoch
    };
    if epoch == current {
        Ok(CommitFence::Open)
    } else if epoch > current {
        Err(error)
    } else {
        Ok(CommitFence::Older {
            epoch,
            error,
            assigned_at: assigned_at(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str, p: i32) -> (String, i32) {
        (t.to_string(), p)
    }

    #[test]
    fn settle_keeps_old_epochs_and_stamps_new_partitions() {
        let mut e = AssignmentEpochs::new();
        settle(&mut e, [key("t", 0), key("t", 1)].into(), 3);
        settle(&mut e, [key("t", 1), key("t", 2)].into(), 5);
        assert_eq!(e, [(key("t", 1), 3), (key("t", 2), 5)].into());
    }

    #[test]
    fn older_epochs_pass_only_partitions_assigned_by_then() {
        let at = || AssignmentEpochs::from([(key("t", 0), 3), (key("t", 1), 5)]);
        assert_eq!(member_fence(5, 5, false, at), Ok(CommitFence::Open));
        assert_eq!(
            member_fence(5, 6, false, at),
            Err(ResponseError::StaleMemberEpoch)
        );
        assert_eq!(
            member_fence(5, 6, true, at),
            Err(ResponseError::IllegalGeneration)
        );
        let fence = member_fence(5, 4, false, at).unwrap();
        assert_eq!(fence.check("t", 0), Ok(()));
        assert_eq!(fence.check("t", 1), Err(ResponseError::StaleMemberEpoch));
        assert_eq!(fence.check("t", 2), Err(ResponseError::StaleMemberEpoch));
        assert_eq!(fence.check("u", 0), Err(ResponseError::StaleMemberEpoch));
        let classic = member_fence(5, 2, true, at).unwrap();
        assert_eq!(classic.check("t", 0), Err(ResponseError::IllegalGeneration));
        assert_eq!(CommitFence::Open.check("any", 9), Ok(()));
        assert_eq!(fence.check_all([("t", 0)]), Ok(()));
        assert_eq!(
            fence.check_all([("t", 0), ("t", 1)]),
            Err(ResponseError::StaleMemberEpoch)
        );
    }
}
