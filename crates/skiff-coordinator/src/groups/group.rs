//! One classic consumer group: Kafka's rebalance state machine (Empty, PreparingRebalance,
//! CompletingRebalance, Stable, Dead), generations, member ids, protocol selection, leader
//! election, session/rebalance deadlines, the initial rebalance delay and static membership.
//!
//! Sans-IO: every method takes the current time; waiting JoinGroup/SyncGroup requests are
//! oneshot senders answered here; records to persist are pushed to [`Group::outbox`] and the
//! caller writes them (in order) to `__consumer_offsets`. Deadlines are checked by
//! [`Group::tick`], which the coordinator calls periodically.
//!
//! Thread safety: none inside; the coordinator keeps all groups behind one std `Mutex` that
//! is never held across `.await`.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::records::{GroupValue, Key, MemberValue, OffsetValue};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The names Kafka uses in DescribeGroups and ListGroups.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// Limits from the broker config that the state machine enforces.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    /// `group.consumer.migration.policy`: which online conversions are allowed.
    pub migration: MigrationPolicy,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct JoinResult {
    pub error: i16,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    pub skip_assignment: bool,
    /// (member id, group instance id, metadata): only the leader gets them.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinResult {
    pub fn error(error: ResponseError, member_id: &str) -> JoinResult {
        JoinResult {
            error: error.code(),
            generation_id: -1,
            member_id: member_id.to_string(),
            ..JoinResult::default()
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncResult {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResult {
    pub fn error(error: ResponseError) -> SyncResult {
        SyncResult {
            error: error.code(),
            ..SyncResult::default()
        }
    }
}

/// A JoinGroup request as the state machine needs it.
#[derive(Clone, Debug)]
pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: a first join without a member id gets MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// v9+: a static leader rejoining a stable group may skip the assignment.
    pub supports_skip_assignment: bool,
}

pub enum JoinOutcome {
    Ready(JoinResult),
    Wait(oneshot::Receiver<JoinResult>),
}

pub enum SyncOutcome {
    Ready(SyncResult),
    Wait(oneshot::Receiver<SyncResult>),
}

#[derive(Debug)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// Join order: the earliest member becomes leader when the leader is gone.
    seq: u64,
    session_deadline: i64,
    join_waiter: Option<oneshot::Sender<JoinResult>>,
    sync_waiter: Option<oneshot::Sender<SyncResult>>,
}

impl Member {
    pub fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Set only by OffsetCommit v2-4 with an explicit `retention_time_ms`.
    pub expire_timestamp: Option<i64>,
}

pub struct Group {
    pub id: String,
    pub state: GroupState,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// group.instance.id -> member id.
    pub static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with the time they expire.
    pending: HashMap<String, i64>,
    /// PreparingRebalance: when the join phase ends even if members are missing;
    /// CompletingRebalance: when members that have not sent SyncGroup are dropped (Kafka's
    /// pending-sync timeout, so a leader that never assigns cannot stall the group).
    join_deadline: Option<i64>,
    /// Initial delayed join from Empty: the latest the delay may be extended to.
    initial_join_limit: Option<i64>,
    /// When the group entered its current state (Kafka's currentStateTimestamp).
    pub state_since: i64,
    pub offsets: HashMap<(String, i32), Committed>,
    /// KIP-848 state when the group uses the consumer protocol.
    pub consumer: Option<super::consumer::ConsumerState>,
    /// The KIP-848 records last queued for this group (`consumer_store.rs` diffs against it).
    pub consumer_persisted: super::consumer_store::Persisted,
    /// KIP-1071 state when the group is a streams group (`streams.rs`).
    pub streams: Option<crate::streams_group::StreamsGroup>,
    /// The streams group records last queued for this group.
    pub streams_persisted: crate::streams_group::Persisted,
    /// Records to append to `__consumer_offsets`, oldest first (`None` value = tombstone).
    pub outbox: Vec<(Key, Option<Value>)>,
    next_seq: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Offset(OffsetValue),
    Group(GroupValue),
    /// A KIP-848 consumer group value, already encoded (`consumer_records.rs`).
    Consumer(Vec<u8>),
    /// A share group value, already encoded (`crate::share_group::records`).
    Share(Vec<u8>),
    /// A streams group value, already encoded (`crate::streams_group::records`).
    Streams(Vec<u8>),
}

impl Group {
    pub fn new(id: &str, now: i64) -> Group {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending: HashMap::new(),
            join_deadline: None,
            initial_join_limit: None,
            state_since: now,
            offsets: HashMap::new(),
            streams: None,
            streams_persisted: Default::default(),
            outbox: Vec::new(),
            consumer: None,
            consumer_persisted: Default::default(),
            next_seq: 0,
        }
    }

    /// Rebuild from a replayed GroupMetadataValue: members are kept and given a fresh
    /// session, so a restarted broker keeps generations and assignments.
    pub fn restore(&mut self, v: GroupValue, now: i64) {
        self.generation = v.generation;
        self.protocol_type = Some(v.protocol_type).filter(|t| !t.is_empty());
        self.protocol = v.protocol;
        self.leader = v.leader;
        self.members.clear();
        self.static_members.clear();
        for m in v.members {
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some(instance) = &m.group_instance_id {
                self.static_members
                    .insert(instance.clone(), m.member_id.clone());
            }
            let protocols = match &self.protocol {
                Some(p) => vec![(p.clone(), m.subscription)],
                None => Vec::new(),
            };
            self.members.insert(
                m.member_id.clone(),
                Member {
                    id: m.member_id,
                    instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: m.rebalance_timeout,
                    session_timeout_ms: m.session_timeout,
                    protocol_type: self.protocol_type.clone().unwrap_or_default(),
                    protocols,
                    assignment: m.assignment,
                    seq,
                    session_deadline: now + i64::from(m.session_timeout),
                    join_waiter: None,
                    sync_waiter: None,
                },
            );
        }
        self.state = if self.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        self.state_since = if v.current_state_timestamp >= 0 {
            v.current_state_timestamp
        } else {
            now
        };
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
            && self.pending.is_empty()
            && self.consumer.as_ref().is_none_or(|c| c.is_empty())
            && self.streams.as_ref().is_none_or(|s| s.members.is_empty())
    }

    /// Whether the group is a KIP-1071 streams group (`group.protocol=streams`).
    pub fn is_streams_group(&self) -> bool {
        self.streams.is_some()
    }

    /// Whether the group runs the KIP-848 consumer protocol (`group.protocol=consumer`).
    pub fn is_consumer_group(&self) -> bool {
        self.consumer.is_some()
    }

    /// The state name clients see (the consumer protocol has its own states).
    pub fn state_name(&self) -> &'static str {
        if let Some(s) = &self.streams {
            return s.state().name();
        }
        match &self.consumer {
            Some(c) => c.state_name(),
            None => self.state.name(),
        }
    }

    fn transition(&mut self, state: GroupState, now: i64) {
        self.state = state;
        self.state_since = now;
    }

    /// The GroupMetadataValue of the group as it is now.
    pub fn metadata_value(&self) -> GroupValue {
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_since,
            members: self
                .members_in_order()
                .into_iter()
                .map(|m| MemberValue {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout: m.rebalance_timeout_ms,
                    session_timeout: m.session_timeout_ms,
                    subscription: self
                        .protocol
                        .as_deref()
                        .map(|p| m.metadata_for(p))
                        .unwrap_or_default(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    fn persist_metadata(&mut self) {
        let value = self.metadata_value();
        self.outbox.push((
            Key::Group {
                group: self.id.clone(),
            },
            Some(Value::Group(value)),
        ));
    }

    pub fn members_in_order(&self) -> Vec<&Member> {
        let mut v: Vec<&Member> = self.members.values().collect();
        v.sort_by_key(|m| m.seq);
        v
    }

    fn new_member_id(client_id: &str) -> String {
        format!("{client_id}-{}", uuid::Uuid::new_v4())
    }

    /// Protocols every member supports (the group's candidates).
    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        protocols.iter().any(|(name, _)| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    fn touch(&mut self, member_id: &str, now: i64) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.session_deadline = now + i64::from(m.session_timeout_ms);
        }
    }

    /// Drop a member, answering its parked requests; does not change the group state.
    fn remove_member(&mut self, id: &str) {
        if let Some(mut m) = self.members.remove(id) {
            if let Some(w) = m.join_waiter.take() {
                let _ = w.send(JoinResult::error(ResponseError::UnknownMemberId, id));
            }
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncResult::error(ResponseError::UnknownMemberId));
            }
            if let Some(instance) = &m.instance_id {
                if self.static_members.get(instance).map(String::as_str) == Some(id) {
                    self.static_members.remove(instance);
                }
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = self.members_in_order().first().map(|m| m.id.clone());
        }
    }

    /// A member left or expired: rebalance the others.
    fn member_gone(&mut self, cfg: &GroupConfig, id: &str, now: i64) {
        self.remove_member(id);
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.prepare_rebalance(cfg, now);
                self.try_complete_join(now, false);
            }
            GroupState::PreparingRebalance => self.try_complete_join(now, false),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    /// Check a member and generation for SyncGroup, Heartbeat and OffsetCommit.
    fn validate_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), ResponseError> {
        if let Some(instance) = instance_id {
            match self.static_members.get(instance) {
                Some(owner) if owner != member_id => return Err(ResponseError::FencedInstanceId),
                None if !self.members.contains_key(member_id) => {
                    return Err(ResponseError::UnknownMemberId)
                }
                _ => {}
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(ResponseError::UnknownMemberId);
        }
        Ok(())
    }

    // ------------------------------------------------------------ deadlines

    /// Expire sessions, pending member ids and the join phase. Returns whether anything
    /// changed.
    pub fn tick(&mut self, cfg: &GroupConfig, now: i64) -> bool {
        let mut changed = false;
        if self.consumer.is_some() {
            changed |= self.tick_consumer(cfg, now);
        }
        if let Some(s) = self.streams.as_mut() {
            changed |= !s.expire(now).is_empty();
        }
        let before = self.pending.len();
        self.pending.retain(|_, deadline| *deadline > now);
        if self.pending.len() != before {
            changed = true;
            self.try_complete_join(now, false);
        }
        // Members parked in JoinGroup or SyncGroup are alive; others must heartbeat.
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                m.join_waiter.is_none() && m.sync_waiter.is_none() && m.session_deadline <= now
            })
            .map(|m| m.id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.id, member = %id, "member session expired");
            self.member_gone(cfg, &id, now);
            changed = true;
        }
        let due = self.join_deadline.is_some_and(|d| d <= now);
        if self.state == GroupState::PreparingRebalance && due {
            // Completing the join sets the next phase's deadline: checked on a later tick.
            self.try_complete_join(now, true);
            changed = true;
        } else if self.state == GroupState::CompletingRebalance && due {
            let unsynced: Vec<String> = self
                .members
                .values()
                .filter(|m| m.sync_waiter.is_none())
                .map(|m| m.id.clone())
                .collect();
            for id in unsynced {
                tracing::info!(group = %self.id, member = %id, "no SyncGroup within the rebalance timeout");
                self.member_gone(cfg, &id, now);
            }
            changed = true;
        }
        changed
    }
}

#[path = "group_join.rs"]
mod join;
#[path = "migration.rs"]
mod migration;
#[path = "offsets.rs"]
mod offsets;
#[path = "group_sync.rs"]
mod sync;

pub use migration::MigrationPolicy;
pub use offsets::parse_subscription_topics;

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
