//! The join phase of a classic rebalance (JoinGroup): member ids and MEMBER_ID_REQUIRED,
//! static members replacing their predecessor, the (initial) rebalance delay, protocol
//! selection and leader election. Part of [`super::Group`]'s state machine; sans-IO.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::*;

impl Group {
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

    pub(super) fn same_protocols(&self, req: &JoinRequest) -> bool {
        self.members
            .get(&req.member_id)
            .is_some_and(|m| m.protocols == req.protocols)
    }

    pub(super) fn join_unknown(
        &mut self,
        cfg: &GroupConfig,
        req: JoinRequest,
        now: i64,
    ) -> JoinOutcome {
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
    pub(super) fn replace_static_member(
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

    pub(super) fn add_member_and_rebalance(
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
    pub(super) fn update_and_wait(
        &mut self,
        cfg: &GroupConfig,
        req: JoinRequest,
        now: i64,
    ) -> JoinOutcome {
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

    pub(super) fn max_rebalance_timeout(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    pub(super) fn prepare_rebalance(&mut self, cfg: &GroupConfig, now: i64) {
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
    pub(super) fn try_complete_join(&mut self, now: i64, expired: bool) {
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
        self.join_deadline = Some(now + self.max_rebalance_timeout());
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
    pub(super) fn select_protocol(&self) -> Option<String> {
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

    pub(super) fn join_result_for(&self, member_id: &str, skip_assignment: bool) -> JoinResult {
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
}

fn req_with_id(mut req: JoinRequest, id: &str) -> JoinRequest {
    req.member_id = id.to_string();
    req
}
