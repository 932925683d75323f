//! One share group's membership: members join, heartbeat and leave; the group epoch counts
//! changes; the target assignment is recomputed at the group epoch; members take their
//! target at once.
//!
//! Epochs, as in Kafka's share groups:
//! - the *group epoch* goes up by one when a member joins, leaves, is expired or changes its
//!   subscribed topic names, and when a subscribed topic appears, disappears or gains
//!   partitions;
//! - the *assignment epoch* is the group epoch the target assignment was computed at. It
//!   catches up on the next heartbeat, but no sooner than `assignment_interval_ms` after the
//!   previous computation, so a burst of joins is assigned once;
//! - a *member epoch* becomes the assignment epoch as soon as the member heartbeats after a
//!   new target, and it takes its target at once: share groups have no revocation step,
//!   because two members holding a partition for a moment is harmless.
//!
//! Sans-IO: time and topic metadata are passed in; the owner persists the group's records
//! (`persist.rs` says which changed).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignor::{assign, MemberSpec, Subscription, TopicAssignment};
use super::error::ShareGroupError;
use super::member::{MemberRemoved, RemovalReason, ShareMember};
use super::settings::ShareGroupSettings;
use crate::host::TopicCatalog;

/// ShareGroupHeartbeat's member epoch to leave the group.
pub const LEAVE_EPOCH: i32 = -1;

/// Kafka's share group states. There is no "assigning" or "reconciling": members take their
/// target at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareGroupState {
    Empty,
    Stable,
    /// Deleted (DeleteGroups); a deleted group is no longer found, so only the deleter sees it.
    Dead,
}

impl ShareGroupState {
    /// As ShareGroupDescribe and ListGroups spell it.
    pub fn name(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
            ShareGroupState::Dead => "Dead",
        }
    }
}

/// One validated ShareGroupHeartbeat (epoch 0 or above).
#[derive(Clone, Debug, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    /// `None`: unchanged since the last heartbeat.
    pub rack_id: Option<String>,
    /// `None`: unchanged since the last heartbeat.
    pub subscribed: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatResult {
    pub member_id: String,
    pub member_epoch: i32,
    /// `None`: the member's assignment has not changed and the request did not ask for it.
    pub assignment: Option<TopicAssignment>,
}

/// The id and partition count of every existing topic the members subscribe to.
type TopicsSeen = BTreeMap<String, (Uuid, i32)>;

#[derive(Clone, Debug)]
pub struct ShareGroup {
    pub id: String,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
    /// Each member's target at `assignment_epoch`.
    pub target: BTreeMap<String, TopicAssignment>,
    /// When the target was last computed.
    assignment_timestamp: Option<i64>,
    /// The subscribed topics as of the last group epoch: a change bumps the epoch.
    topics_seen: TopicsSeen,
    deleted: bool,
}

impl ShareGroup {
    pub fn new(id: &str) -> ShareGroup {
        ShareGroup {
            id: id.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            assignment_timestamp: None,
            topics_seen: TopicsSeen::new(),
            deleted: false,
        }
    }

    fn unknown_member(&self, member: &str) -> ShareGroupError {
        ShareGroupError::UnknownMember {
            member: member.to_string(),
            group: self.id.clone(),
        }
    }

    pub fn state(&self) -> ShareGroupState {
        if self.deleted {
            ShareGroupState::Dead
        } else if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    /// A group rebuilt from its records (`replay.rs`). The topics it subscribes to are
    /// taken as they are now, so a restart alone does not bump the epoch.
    pub(super) fn restore(
        id: &str,
        epoch: i32,
        assignment: (i32, Option<i64>),
        members: BTreeMap<String, ShareMember>,
        target: BTreeMap<String, TopicAssignment>,
        topics: &dyn TopicCatalog,
    ) -> ShareGroup {
        let mut g = ShareGroup::new(id);
        g.epoch = epoch;
        (g.assignment_epoch, g.assignment_timestamp) = assignment;
        g.members = members;
        g.target = target;
        g.topics_seen = g.topics_in_use(topics);
        g
    }

    /// When the target was last computed, if ever.
    pub fn assignment_timestamp(&self) -> Option<i64> {
        self.assignment_timestamp
    }

    pub(super) fn mark_deleted(&mut self) {
        self.deleted = true;
    }

    /// Handle a join (epoch 0) or a heartbeat (epoch > 0). On error nothing has changed.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topics: &dyn TopicCatalog,
        settings: &ShareGroupSettings,
        now: i64,
    ) -> Result<HeartbeatResult, ShareGroupError> {
        let known = self.members.contains_key(&hb.member_id);
        if self.members.len() >= settings.max_size && !known {
            return Err(ShareGroupError::GroupFull(settings.max_size));
        }
        let old = match self.members.get(&hb.member_id) {
            Some(m) => m.clone(),
            None if hb.member_epoch == 0 => ShareMember::new(&hb.member_id),
            None => return Err(self.unknown_member(&hb.member_id)),
        };
        check_epoch(&old, hb.member_epoch)?;

        let mut member = old.clone();
        if hb.rack_id.is_some() {
            member.rack_id = hb.rack_id;
        }
        if let Some(names) = &hb.subscribed {
            member.subscribed = names.iter().cloned().collect();
        }
        member.client_id = hb.client_id;
        member.client_host = hb.client_host;
        let subscription_changed = !known || member.subscribed != old.subscribed;
        let id = member.id.clone();
        self.members.insert(id.clone(), member);

        let seen = self.topics_in_use(topics);
        let metadata_changed = seen != self.topics_seen;
        self.topics_seen = seen;
        if subscription_changed || metadata_changed {
            self.epoch += 1;
        }
        if self.assignment_epoch < self.epoch && self.may_assign(settings, now) {
            self.compute_target(topics);
            self.assignment_epoch = self.epoch;
            self.assignment_timestamp = Some(now);
        }

        let target = self.target.get(&id).cloned().unwrap_or_default();
        let assignment_epoch = self.assignment_epoch;
        let Some(m) = self.members.get_mut(&id) else {
            return Err(self.unknown_member(&id));
        };
        if m.epoch != assignment_epoch {
            m.assigned = only_subscribed(&target, &m.subscribed, topics);
            m.previous_epoch = m.epoch;
            m.epoch = assignment_epoch;
        } else if subscription_changed {
            m.assigned = only_subscribed(&target, &m.subscribed, topics);
        }
        m.session_deadline = now + i64::from(settings.session_timeout_ms);

        // A join, or a "full" heartbeat (one carrying the subscription, as clients send after
        // an error), gets the assignment even when it has not changed.
        let full = hb.member_epoch == 0 || hb.subscribed.is_some();
        let assignment = (full || m.assigned != old.assigned).then(|| m.assigned.clone());
        Ok(HeartbeatResult {
            member_id: id,
            member_epoch: m.epoch,
            assignment,
        })
    }

    /// Member epoch -1. Kafka does not check the epoch of a leave.
    pub fn leave(
        &mut self,
        member_id: &str,
        topics: &dyn TopicCatalog,
    ) -> Result<MemberRemoved, ShareGroupError> {
        if !self.members.contains_key(member_id) {
            return Err(self.unknown_member(member_id));
        }
        self.remove(member_id, RemovalReason::Left, topics)
            .ok_or_else(|| self.unknown_member(member_id))
    }

    /// Removes the members whose session has expired; each removal bumps the group epoch, and
    /// the others get their new assignment on their next heartbeat.
    pub fn expire(&mut self, topics: &dyn TopicCatalog, now: i64) -> Vec<MemberRemoved> {
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| m.session_deadline <= now)
            .map(|m| m.id.clone())
            .collect();
        expired
            .iter()
            .filter_map(|id| self.remove(id, RemovalReason::SessionExpired, topics))
            .collect()
    }

    /// The earliest session deadline, for the caller's timer.
    pub fn next_deadline(&self) -> Option<i64> {
        self.members.values().map(|m| m.session_deadline).min()
    }

    fn remove(
        &mut self,
        member_id: &str,
        reason: RemovalReason,
        topics: &dyn TopicCatalog,
    ) -> Option<MemberRemoved> {
        let m = self.members.remove(member_id)?;
        self.target.remove(member_id);
        self.topics_seen = self.topics_in_use(topics);
        self.epoch += 1;
        tracing::info!(group = %self.id, member = %member_id, ?reason, "share group member removed");
        Some(MemberRemoved {
            group_id: self.id.clone(),
            member_id: m.id,
            reason,
            assignment: m.assigned,
        })
    }

    fn may_assign(&self, settings: &ShareGroupSettings, now: i64) -> bool {
        match self.assignment_timestamp {
            None => true,
            Some(_) if settings.assignment_interval_ms <= 0 => true,
            Some(last) => now >= last + i64::from(settings.assignment_interval_ms),
        }
    }

    fn topics_in_use(&self, topics: &dyn TopicCatalog) -> TopicsSeen {
        let names: BTreeSet<&String> = self.members.values().flat_map(|m| &m.subscribed).collect();
        names
            .into_iter()
            .filter_map(|name| {
                let id = topics.topic_id(name)?;
                let count = topics.partition_count(name)?;
                Some((name.clone(), (id, count)))
            })
            .collect()
    }

    /// Run the simple assignor over every member, from the previous target.
    fn compute_target(&mut self, topics: &dyn TopicCatalog) {
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                id: m.id.clone(),
                topics: topic_ids(&m.subscribed, topics),
                current: self.target.get(&m.id).cloned().unwrap_or_default(),
            })
            .collect();
        let partitions: BTreeMap<Uuid, i32> = self.topics_seen.values().copied().collect();
        let assigned = assign(&specs, &partitions, self.subscription());
        self.target = specs.into_iter().map(|s| s.id).zip(assigned).collect();
    }

    /// Homogeneous when every subscribed name has every member as subscriber (counted by
    /// name, existing topic or not, as Kafka does).
    fn subscription(&self) -> Subscription {
        let mut counts: BTreeMap<&String, usize> = BTreeMap::new();
        for name in self.members.values().flat_map(|m| &m.subscribed) {
            *counts.entry(name).or_default() += 1;
        }
        if counts.values().all(|c| *c == self.members.len()) {
            Subscription::Homogeneous
        } else {
            Subscription::Heterogeneous
        }
    }
}

/// A heartbeat's epoch must be the member's current one, or the one before it (the answer
/// carrying the bump may have been lost); 0 always passes (a rejoin).
fn check_epoch(member: &ShareMember, received: i32) -> Result<(), ShareGroupError> {
    let fenced = received != 0
        && (received > member.epoch
            || (received < member.epoch && received != member.previous_epoch));
    if fenced {
        return Err(ShareGroupError::FencedEpoch {
            received,
            current: member.epoch,
        });
    }
    Ok(())
}

fn topic_ids(names: &BTreeSet<String>, topics: &dyn TopicCatalog) -> BTreeSet<Uuid> {
    names.iter().filter_map(|n| topics.topic_id(n)).collect()
}

/// The target restricted to the topics the member subscribes to now (its target may lag
/// behind a subscription change until the next computation).
fn only_subscribed(
    target: &TopicAssignment,
    subscribed: &BTreeSet<String>,
    topics: &dyn TopicCatalog,
) -> TopicAssignment {
    let ids = topic_ids(subscribed, topics);
    target
        .iter()
        .filter(|(t, _)| ids.contains(t))
        .map(|(t, ps)| (*t, ps.clone()))
        .collect()
}
