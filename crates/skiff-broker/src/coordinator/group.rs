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
    /// PreparingRebalance: when the join phase ends even if members are missing.
    join_deadline: Option<i64>,
    /// Initial delayed join from Empty: the latest the delay may be extended to.
    initial_join_limit: Option<i64>,
    /// When the group entered its current state (Kafka's currentStateTimestamp).
    pub state_since: i64,
    pub offsets: HashMap<(String, i32), Committed>,
    /// Records to append to `__consumer_offsets`, oldest first (`None` value = tombstone).
    pub outbox: Vec<(Key, Option<Value>)>,
    next_seq: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Offset(OffsetValue),
    Group(GroupValue),
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
            outbox: Vec::new(),
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
        self.members.is_empty() && self.pending.is_empty()
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

    // ------------------------------------------------------------ JoinGroup

    pub fn join(&mut self, cfg: &GroupConfig, req: JoinRequest, now: i64) -> JoinOutcome {
        let ready = |e: ResponseError, id: &str| JoinOutcome::Ready(JoinResult::error(e, id));
        if req.session_timeout_ms < cfg.min_session_timeout_ms
            || req.session_timeout_ms > cfg.max_session_timeout_ms
        {
            return ready(ResponseError::InvalidSessionTimeout, &req.member_id);
        }
        if self.state == GroupState::Dead {
            return ready(ResponseError::CoordinatorNotAvailable, &req.member_id);
        }
        if !self.supports(&req.protocol_type, &req.protocols) {
            return ready(ResponseError::InconsistentGroupProtocol, &req.member_id);
        }
        if req.member_id.is_empty() {
            return self.join_unknown(cfg, req, now);
        }
        if self.pending.remove(&req.member_id).is_some() {
            let id = req.member_id.clone();
            return self.add_member_and_rebalance(cfg, id, req, now);
        }
        // A known member id.
        if let Some(instance) = &req.group_instance_id {
            match self.static_members.get(instance) {
                Some(owner) if *owner != req.member_id => {
                    return ready(ResponseError::FencedInstanceId, &req.member_id)
                }
                None if self.members.contains_key(&req.member_id) => {}
                None => return ready(ResponseError::UnknownMemberId, &req.member_id),
                _ => {}
            }
        }
        if !self.members.contains_key(&req.member_id) {
            return ready(ResponseError::UnknownMemberId, &req.member_id);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                ready(ResponseError::UnknownMemberId, &req.member_id)
            }
            GroupState::PreparingRebalance => self.update_and_wait(cfg, req, now),
            GroupState::CompletingRebalance => {
                if self.same_protocols(&req) {
                    JoinOutcome::Ready(self.join_result_for(&req.member_id, false))
                } else {
                    self.update_and_wait(cfg, req, now)
                }
            }
            GroupState::Stable => {
                let is_leader = self.leader.as_deref() == Some(req.member_id.as_str());
                if is_leader || !self.same_protocols(&req) {
                    self.update_and_wait(cfg, req, now)
                } else {
                    self.touch(&req.member_id, now);
                    JoinOutcome::Ready(self.join_result_for(&req.member_id, false))
                }
            }
        }
    }

    fn same_protocols(&self, req: &JoinRequest) -> bool {
        self.members
            .get(&req.member_id)
            .is_some_and(|m| m.protocols == req.protocols)
    }

    fn join_unknown(&mut self, cfg: &GroupConfig, req: JoinRequest, now: i64) -> JoinOutcome {
        let new_id = Self::new_member_id(&req.client_id);
        if let Some(instance) = req.group_instance_id.clone() {
            if let Some(old_id) = self.static_members.get(&instance).cloned() {
                return self.replace_static_member(cfg, old_id, new_id, req, now);
            }
            return self.add_member_and_rebalance(cfg, new_id, req, now);
        }
        if req.require_known_member_id {
            self.pending
                .insert(new_id.clone(), now + i64::from(req.session_timeout_ms));
            return JoinOutcome::Ready(JoinResult::error(ResponseError::MemberIdRequired, &new_id));
        }
        self.add_member_and_rebalance(cfg, new_id, req, now)
    }

    /// A static member restarted with a new member id: the old id is fenced, the new one
    /// takes its place; a stable group with unchanged subscriptions does not rebalance.
    fn replace_static_member(
        &mut self,
        cfg: &GroupConfig,
        old_id: String,
        new_id: String,
        req: JoinRequest,
        now: i64,
    ) -> JoinOutcome {
        let Some(mut member) = self.members.remove(&old_id) else {
            self.static_members
                .remove(req.group_instance_id.as_deref().unwrap_or(""));
            return self.add_member_and_rebalance(cfg, new_id, req, now);
        };
        if let Some(w) = member.join_waiter.take() {
            let _ = w.send(JoinResult::error(ResponseError::FencedInstanceId, &old_id));
        }
        if let Some(w) = member.sync_waiter.take() {
            let _ = w.send(SyncResult::error(ResponseError::FencedInstanceId));
        }
        let unchanged = member.protocols == req.protocols;
        member.id = new_id.clone();
        member.client_id = req.client_id.clone();
        member.client_host = req.client_host.clone();
        member.session_timeout_ms = req.session_timeout_ms;
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.session_deadline = now + i64::from(req.session_timeout_ms);
        if let Some(instance) = &req.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        self.members.insert(new_id.clone(), member);
        match self.state {
            GroupState::Stable if unchanged => {
                self.persist_metadata();
                let is_leader = self.leader.as_deref() == Some(new_id.as_str());
                let mut result = self.join_result_for(&new_id, false);
                result.skip_assignment = is_leader && req.supports_skip_assignment;
                JoinOutcome::Ready(result)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_and_wait(cfg, req_with_id(req, &new_id), now)
            }
            _ => self.update_and_wait(cfg, req_with_id(req, &new_id), now),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        cfg: &GroupConfig,
        id: String,
        req: JoinRequest,
        now: i64,
    ) -> JoinOutcome {
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if let Some(instance) = &req.group_instance_id {
            self.static_members.insert(instance.clone(), id.clone());
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.members.insert(
            id.clone(),
            Member {
                id: id.clone(),
                instance_id: req.group_instance_id.clone(),
                client_id: req.client_id.clone(),
                client_host: req.client_host.clone(),
                rebalance_timeout_ms: req.rebalance_timeout_ms,
                session_timeout_ms: req.session_timeout_ms,
                protocol_type: req.protocol_type.clone(),
                protocols: req.protocols.clone(),
                assignment: Bytes::new(),
                seq,
                session_deadline: now + i64::from(req.session_timeout_ms),
                join_waiter: None,
                sync_waiter: None,
            },
        );
        if self.leader.is_none() {
            self.leader = Some(id.clone());
        }
        // A new member during the initial delay extends it (Kafka's InitialDelayedJoin).
        if let (Some(limit), GroupState::PreparingRebalance) = (self.initial_join_limit, self.state)
        {
            let delay = i64::from(cfg.initial_rebalance_delay_ms);
            self.join_deadline = Some((now + delay).min(limit));
        }
        self.update_and_wait(cfg, req_with_id(req, &id), now)
    }

    /// Record the member's (possibly new) protocols, park its join, start a rebalance if
    /// none is running, and complete the join phase if everyone is in.
    fn update_and_wait(&mut self, cfg: &GroupConfig, req: JoinRequest, now: i64) -> JoinOutcome {
        let (tx, rx) = oneshot::channel();
        let Some(member) = self.members.get_mut(&req.member_id) else {
            return JoinOutcome::Ready(JoinResult::error(
                ResponseError::UnknownMemberId,
                &req.member_id,
            ));
        };
        member.protocols = req.protocols;
        member.session_timeout_ms = req.session_timeout_ms;
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.session_deadline = now + i64::from(req.session_timeout_ms);
        if let Some(old) = member.join_waiter.replace(tx) {
            // A duplicate join from the same member: the older request loses.
            let _ = old.send(JoinResult::error(
                ResponseError::UnknownMemberId,
                &req.member_id,
            ));
        }
        if self.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(cfg, now);
        }
        self.try_complete_join(now, false);
        JoinOutcome::Wait(rx)
    }

    fn max_rebalance_timeout(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    fn prepare_rebalance(&mut self, cfg: &GroupConfig, now: i64) {
        if self.state == GroupState::CompletingRebalance {
            for m in self.members.values_mut() {
                m.assignment = Bytes::new();
                if let Some(w) = m.sync_waiter.take() {
                    let _ = w.send(SyncResult::error(ResponseError::RebalanceInProgress));
                }
            }
        }
        tracing::info!(group = %self.id, from = self.state.name(), "preparing rebalance");
        let from_empty = self.state == GroupState::Empty;
        self.transition(GroupState::PreparingRebalance, now);
        let timeout = self.max_rebalance_timeout();
        if from_empty && cfg.initial_rebalance_delay_ms > 0 {
            let delay = i64::from(cfg.initial_rebalance_delay_ms);
            let limit = now + timeout.max(delay);
            self.initial_join_limit = Some(limit);
            self.join_deadline = Some((now + delay).min(limit));
        } else {
            self.initial_join_limit = None;
            self.join_deadline = Some(now + timeout);
        }
    }

    /// End the join phase when every member has rejoined (outside the initial delay) or when
    /// the deadline has passed (`expired`): members that did not rejoin are removed.
    fn try_complete_join(&mut self, now: i64, expired: bool) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let all_joined =
            self.pending.is_empty() && self.members.values().all(|m| m.join_waiter.is_some());
        let ready = if self.initial_join_limit.is_some() {
            expired
        } else {
            expired || all_joined
        };
        if !ready {
            return;
        }
        self.pending.clear();
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.join_waiter.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in gone {
            self.remove_member(&id);
        }
        self.join_deadline = None;
        self.initial_join_limit = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol = None;
            self.leader = None;
            self.transition(GroupState::Empty, now);
            self.persist_metadata();
            return;
        }
        self.protocol = self.select_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members_in_order().first().map(|m| m.id.clone());
        }
        self.transition(GroupState::CompletingRebalance, now);
        tracing::info!(
            group = %self.id,
            generation = self.generation,
            members = self.members.len(),
            protocol = self.protocol.as_deref().unwrap_or(""),
            leader = self.leader.as_deref().unwrap_or(""),
            "join phase complete"
        );
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let result = self.join_result_for(&id, false);
            if let Some(m) = self.members.get_mut(&id) {
                m.session_deadline = now + i64::from(m.session_timeout_ms);
                if let Some(w) = m.join_waiter.take() {
                    let _ = w.send(result);
                }
            }
        }
    }

    /// Kafka's vote: each member votes for its most preferred protocol among those every
    /// member supports; the most votes wins (ties go to the earliest member's preference).
    fn select_protocol(&self) -> Option<String> {
        let members = self.members_in_order();
        let first = members.first()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| {
                members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == *n))
            })
            .collect();
        let mut votes: Vec<(&String, usize)> = candidates.iter().map(|c| (*c, 0)).collect();
        for m in &members {
            if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(&n)) {
                if let Some(v) = votes.iter_mut().find(|(c, _)| *c == name) {
                    v.1 += 1;
                }
            }
        }
        let best = votes.iter().map(|(_, v)| *v).max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(n, _)| n.clone())
    }

    fn join_result_for(&self, member_id: &str, skip_assignment: bool) -> JoinResult {
        let is_leader = self.leader.as_deref() == Some(member_id);
        let protocol = self.protocol.clone().unwrap_or_default();
        JoinResult {
            error: 0,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            skip_assignment,
            members: if is_leader {
                self.members_in_order()
                    .into_iter()
                    .map(|m| {
                        (
                            m.id.clone(),
                            m.instance_id.clone(),
                            m.metadata_for(&protocol),
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
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

    // ------------------------------------------------------------ SyncGroup

    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: i64,
    ) -> SyncOutcome {
        let ready = |e| SyncOutcome::Ready(SyncResult::error(e));
        if self.state == GroupState::Dead {
            return ready(ResponseError::CoordinatorNotAvailable);
        }
        if let Err(e) = self.validate_member(member_id, instance_id) {
            return ready(e);
        }
        if generation != self.generation {
            return ready(ResponseError::IllegalGeneration);
        }
        if protocol_type.is_some_and(|t| Some(t) != self.protocol_type.as_deref())
            || protocol_name.is_some_and(|p| Some(p) != self.protocol.as_deref())
        {
            return ready(ResponseError::InconsistentGroupProtocol);
        }
        self.touch(member_id, now);
        match self.state {
            GroupState::Empty | GroupState::Dead => ready(ResponseError::UnknownMemberId),
            GroupState::PreparingRebalance => ready(ResponseError::RebalanceInProgress),
            GroupState::Stable => SyncOutcome::Ready(self.sync_result_for(member_id)),
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                if let Some(m) = self.members.get_mut(member_id) {
                    if let Some(old) = m.sync_waiter.replace(tx) {
                        let _ = old.send(SyncResult::error(ResponseError::UnknownMemberId));
                    }
                }
                if self.leader.as_deref() == Some(member_id) {
                    let mut given: HashMap<String, Bytes> = assignments.into_iter().collect();
                    for m in self.members.values_mut() {
                        m.assignment = given.remove(&m.id).unwrap_or_default();
                    }
                    self.transition(GroupState::Stable, now);
                    self.persist_metadata();
                    let ids: Vec<String> = self.members.keys().cloned().collect();
                    for id in ids {
                        let result = self.sync_result_for(&id);
                        if let Some(w) =
                            self.members.get_mut(&id).and_then(|m| m.sync_waiter.take())
                        {
                            let _ = w.send(result);
                        }
                    }
                }
                SyncOutcome::Wait(rx)
            }
        }
    }

    fn sync_result_for(&self, member_id: &str) -> SyncResult {
        SyncResult {
            error: 0,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    // ------------------------------------------------------------ Heartbeat, LeaveGroup

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<(), ResponseError> {
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        self.validate_member(member_id, instance_id)?;
        if generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        self.touch(member_id, now);
        match self.state {
            GroupState::PreparingRebalance => Err(ResponseError::RebalanceInProgress),
            GroupState::Empty | GroupState::Dead => Err(ResponseError::UnknownMemberId),
            GroupState::CompletingRebalance | GroupState::Stable => Ok(()),
        }
    }

    /// One member of a LeaveGroup request (by member id, or by instance id when static).
    pub fn leave(
        &mut self,
        cfg: &GroupConfig,
        member_id: &str,
        instance_id: Option<&str>,
        now: i64,
    ) -> Result<(), ResponseError> {
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let id = match instance_id {
            Some(instance) => match self.static_members.get(instance) {
                Some(owner) if !member_id.is_empty() && owner != member_id => {
                    return Err(ResponseError::FencedInstanceId)
                }
                Some(owner) => owner.clone(),
                None => return Err(ResponseError::UnknownMemberId),
            },
            None => member_id.to_string(),
        };
        if self.pending.remove(&id).is_some() {
            self.try_complete_join(now, false);
            return Ok(());
        }
        if !self.members.contains_key(&id) {
            return Err(ResponseError::UnknownMemberId);
        }
        tracing::info!(group = %self.id, member = %id, "member left");
        self.member_gone(cfg, &id, now);
        Ok(())
    }

    // ------------------------------------------------------------ deadlines

    /// Expire sessions, pending member ids and the join phase. Returns whether anything
    /// changed.
    pub fn tick(&mut self, cfg: &GroupConfig, now: i64) -> bool {
        let mut changed = false;
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
        if self.state == GroupState::PreparingRebalance
            && self.join_deadline.is_some_and(|d| d <= now)
        {
            self.try_complete_join(now, true);
            changed = true;
        }
        changed
    }

    // ------------------------------------------------------------ offsets

    /// Check an OffsetCommit's generation and member (Kafka's classic rules): commits with
    /// generation -1 are allowed only while the group has no members.
    pub fn validate_commit(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        self.validate_member(member_id, instance_id)?;
        if generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        if self.state == GroupState::CompletingRebalance {
            return Err(ResponseError::RebalanceInProgress);
        }
        Ok(())
    }

    pub fn commit(&mut self, topic: &str, partition: i32, c: Committed) {
        self.offsets.insert((topic.to_string(), partition), c);
    }

    /// Offsets past `offsets.retention.minutes`: for an empty consumer group all of them
    /// once the group has been empty that long; for a group without a protocol (commits only,
    /// "simple" groups) each by its commit time. Removed here; tombstones go to the outbox.
    pub fn expire_offsets(&mut self, retention_ms: i64, now: i64) -> usize {
        if self.state != GroupState::Empty {
            return 0;
        }
        let since_empty = self.state_since;
        let simple = self.protocol_type.is_none();
        let expired: Vec<(String, i32)> = self
            .offsets
            .iter()
            .filter(|(_, c)| {
                let base = if simple {
                    c.commit_timestamp
                } else {
                    since_empty
                };
                base.saturating_add(retention_ms) <= now
            })
            .map(|(k, _)| k.clone())
            .collect();
        for (topic, partition) in &expired {
            self.offsets.remove(&(topic.clone(), *partition));
            self.outbox.push((
                Key::Offset {
                    group: self.id.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                },
                None,
            ));
        }
        expired.len()
    }

    /// Delete the group: tombstones for every offset and for the metadata; state Dead.
    pub fn delete(&mut self, now: i64) {
        let keys: Vec<(String, i32)> = self.offsets.keys().cloned().collect();
        for (topic, partition) in keys {
            self.outbox.push((
                Key::Offset {
                    group: self.id.clone(),
                    topic,
                    partition,
                },
                None,
            ));
        }
        self.offsets.clear();
        self.outbox.push((
            Key::Group {
                group: self.id.clone(),
            },
            None,
        ));
        self.transition(GroupState::Dead, now);
    }

    /// Topics the members subscribe to, from the consumer protocol's subscription bytes;
    /// `None` when the group does not use the consumer protocol.
    pub fn subscribed_topics(&self) -> Option<Vec<String>> {
        if self.protocol_type.as_deref() != Some("consumer") || self.members.is_empty() {
            return None;
        }
        let protocol = self.protocol.as_deref()?;
        let mut topics = Vec::new();
        for m in self.members.values() {
            topics.extend(parse_subscription_topics(&m.metadata_for(protocol))?);
        }
        Some(topics)
    }
}

fn req_with_id(mut req: JoinRequest, id: &str) -> JoinRequest {
    req.member_id = id.to_string();
    req
}

/// The topic list of a ConsumerProtocolSubscription (all versions start with `int16`
/// version and a `string` array of topics). `None` if malformed.
pub fn parse_subscription_topics(b: &[u8]) -> Option<Vec<String>> {
    let count = i32::from_be_bytes(b.get(2..6)?.try_into().ok()?);
    let mut pos = 6usize;
    let mut topics = Vec::new();
    for _ in 0..count.max(0) {
        let len =
            usize::try_from(i16::from_be_bytes(b.get(pos..pos + 2)?.try_into().ok()?)).ok()?;
        pos += 2;
        topics.push(String::from_utf8(b.get(pos..pos + len)?.to_vec()).ok()?);
        pos += len;
    }
    Some(topics)
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
