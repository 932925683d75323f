//! Classic members inside a consumer group (KIP-848 online migration): JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup from consumers still on `group.protocol=classic` after their
//! group became a consumer group. They are ordinary members of [`ConsumerState`] with
//! [`ClassicMeta`]: the server-side assignor computes their partitions, JoinGroup reconciles
//! them like a ConsumerGroupHeartbeat would (their owned partitions come from the embedded
//! subscription), SyncGroup hands the result out as an embedded assignment, and Heartbeat
//! answers REBALANCE_IN_PROGRESS when they must rejoin to move on. Their generation is their
//! member epoch. As in Kafka, no member is "leader": the client never runs an assignor.
//!
//! Sans-IO, no locking inside (the coordinator lock covers it), like the rest of the state.

use std::collections::{BTreeSet, HashMap};

use kafka_protocol::ResponseError;

use super::consumer::{Assignment, ClassicMeta, ConsumerMember, ConsumerState, RegexScope};
use super::embedded_protocol::{self as ep, Subscription};
use super::group::{JoinRequest, JoinResult, SyncResult};

/// The only protocol type a classic member of a consumer group may use.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

impl ConsumerState {
    /// How many members speak the classic protocol.
    pub fn classic_count(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.classic.is_some())
            .count()
    }

    /// Kafka's check before a classic member joins: the "consumer" protocol type, and (once
    /// the group has classic members) a protocol name every one of them supports.
    fn supports_classic(&self, protocol_type: &str, protocols: &[(String, bytes::Bytes)]) -> bool {
        if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
            return false;
        }
        let classic: Vec<&ClassicMeta> = self
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        protocols.iter().any(|(name, _)| {
            classic
                .iter()
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// The member a classic request names, checked as Kafka does: by instance id when one is
    /// given (FENCED_INSTANCE_ID if another member holds it), and it must use the classic
    /// protocol (UNKNOWN_MEMBER_ID otherwise).
    fn classic_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<&ConsumerMember, ResponseError> {
        let m = match instance_id {
            None => self.members.get(member_id),
            Some(instance) => {
                let m = self
                    .static_member(instance)
                    .ok_or(ResponseError::UnknownMemberId)?;
                if m.id != member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
                Some(m)
            }
        };
        match m {
            Some(m) if m.classic.is_some() => Ok(m),
            _ => Err(ResponseError::UnknownMemberId),
        }
    }

    /// JoinGroup from a classic member. `counts` has the partition counts of the topics the
    /// group subscribes to, this member's subscription included. The caller has checked the
    /// session timeout against the broker's limits.
    pub fn classic_join(
        &mut self,
        req: JoinRequest,
        counts: &HashMap<String, i32>,
        now: i64,
    ) -> Result<JoinResult, ResponseError> {
        if !self.supports_classic(&req.protocol_type, &req.protocols) {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            uuid::Uuid::new_v4().to_string()
        } else {
            req.member_id.clone()
        };
        if unknown && req.require_known_member_id && req.group_instance_id.is_none() {
            return Ok(JoinResult::error(
                ResponseError::MemberIdRequired,
                &member_id,
            ));
        }
        let sub = req
            .protocols
            .first()
            .and_then(|(_, metadata)| ep::parse_subscription(metadata).ok())
            .ok_or(ResponseError::InconsistentGroupProtocol)?;
        let mut replaced = false;
        if let Some(instance) = &req.group_instance_id {
            if let Some(old) = self.static_member(instance) {
                if unknown {
                    // A restarted static member takes its predecessor's place: a copy of it
                    // under the new id at epoch 0, with its partitions and target (Kafka).
                    let old_id = old.id.clone();
                    if let Some(mut m) = self.members.remove(&old_id) {
                        m.id = member_id.clone();
                        m.epoch = 0;
                        m.previous_epoch = 0;
                        m.last_sent = None;
                        self.members.insert(member_id.clone(), m);
                    }
                    if let Some(t) = self.target.remove(&old_id) {
                        self.target.insert(member_id.clone(), t);
                    }
                    replaced = true;
                } else if old.id != req.member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
            } else if !unknown && !self.members.contains_key(&req.member_id) {
                return Err(ResponseError::UnknownMemberId);
            }
        }
        if let Some(existing) = self.members.get(&member_id) {
            if existing.classic.is_none() && !replaced {
                return Err(ResponseError::UnknownMemberId);
            }
        }
        let changed = self.upsert_classic(&member_id, &req, &sub, now);
        if changed {
            self.epoch += 1;
        }
        let result = self.reconcile(&member_id, Some(&sub.owned), counts, now, true);
        let m = self
            .members
            .get_mut(&member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if let Some(c) = m.classic.as_mut() {
            c.join_deadline = None;
            c.sync_deadline = Some(now + i64::from(req.rebalance_timeout_ms));
        }
        m.session_deadline = now + i64::from(req.session_timeout_ms);
        Ok(JoinResult {
            error: 0,
            generation_id: result.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: req.protocols.first().map(|(n, _)| n.clone()),
            leader: String::new(),
            member_id,
            skip_assignment: false,
            members: Vec::new(),
        })
    }

    /// The static member holding a JoinGroup's instance id before it is handled (the member
    /// itself, or the one it replaces): Kafka then checks whether the group can be
    /// downgraded at once ([`super::group::Group::should_downgrade_after_replace`]).
    pub fn replaced_by_join(&self, req: &JoinRequest) -> Option<String> {
        let instance = req.group_instance_id.as_deref()?;
        self.static_member(instance).map(|m| m.id.clone())
    }

    /// Create or update the classic member; whether its subscription is new or changed
    /// (which bumps the group epoch).
    fn upsert_classic(
        &mut self,
        member_id: &str,
        req: &JoinRequest,
        sub: &Subscription,
        now: i64,
    ) -> bool {
        let classic = ClassicMeta {
            session_timeout_ms: req.session_timeout_ms,
            protocols: req.protocols.clone(),
            ..ClassicMeta::default()
        };
        let topics: Vec<String> = sub
            .topics
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect();
        if let Some(m) = self.members.get_mut(member_id) {
            let changed = m.subscribed != topics;
            m.subscribed = topics;
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.client_id = req.client_id.clone();
            m.client_host = req.client_host.clone();
            if sub.rack_id.is_some() {
                m.rack_id = sub.rack_id.clone();
            }
            m.classic = Some(classic);
            return changed;
        }
        self.members.insert(
            member_id.to_string(),
            ConsumerMember {
                id: member_id.to_string(),
                instance_id: req.group_instance_id.clone(),
                rack_id: sub.rack_id.clone(),
                client_id: req.client_id.clone(),
                client_host: req.client_host.clone(),
                epoch: 0,
                previous_epoch: 0,
                subscribed: topics,
                regex: None,
                matched: BTreeSet::new(),
                regex_scope: RegexScope::All,
                rebalance_timeout_ms: req.rebalance_timeout_ms,
                assigned: Assignment::new(),
                revoking: Assignment::new(),
                assigned_at: Default::default(),
                revoke_deadline: None,
                session_deadline: now + i64::from(req.session_timeout_ms),
                last_sent: None,
                classic: Some(classic),
            },
        );
        true
    }

    /// SyncGroup from a classic member: its current partitions as an embedded assignment in
    /// the version of its subscription.
    #[allow(clippy::too_many_arguments)]
    pub fn classic_sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        now: i64,
    ) -> Result<SyncResult, ResponseError> {
        let m = self.classic_member(member_id, instance_id)?;
        if generation != m.epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        let first = m
            .classic
            .as_ref()
            .and_then(|c| c.protocols.first().cloned())
            .unwrap_or_default();
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|p| p != first.0)
        {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        let behind = self.epoch > m.epoch && m.revoking.is_empty();
        let id = m.id.clone();
        let epoch = self.epoch;
        let Some(m) = self.members.get_mut(&id) else {
            return Err(ResponseError::UnknownMemberId);
        };
        let Some(c) = m.classic.as_mut() else {
            return Err(ResponseError::UnknownMemberId);
        };
        if behind {
            // A newer rebalance started since it joined: it must rejoin first.
            c.join_deadline
                .get_or_insert(now + i64::from(m.rebalance_timeout_ms));
            tracing::debug!(member = %id, group_epoch = epoch, "classic member must rejoin");
            return Err(ResponseError::RebalanceInProgress);
        }
        c.sync_deadline = None;
        m.session_deadline = now + i64::from(c.session_timeout_ms);
        m.last_sent = Some(m.assigned.clone());
        Ok(SyncResult {
            error: 0,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(first.0),
            assignment: ep::encode_assignment(ep::version_of(&first.1), &m.assigned),
        })
    }

    /// Heartbeat from a classic member: REBALANCE_IN_PROGRESS when it must rejoin (the group
    /// epoch moved on, it has partitions to give up, or partitions it waits for are free).
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<(), ResponseError> {
        let m = self.classic_member(member_id, instance_id)?;
        if generation != m.epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        let id = m.id.clone();
        let rejoin = m.epoch < self.epoch || !m.revoking.is_empty() || self.unreleased_free(m);
        let Some(m) = self.members.get_mut(&id) else {
            return Err(ResponseError::UnknownMemberId);
        };
        let timeout = i64::from(m.rebalance_timeout_ms);
        let Some(c) = m.classic.as_mut() else {
            return Err(ResponseError::UnknownMemberId);
        };
        m.session_deadline = now + i64::from(c.session_timeout_ms);
        if rejoin {
            c.join_deadline.get_or_insert(now + timeout);
            return Err(ResponseError::RebalanceInProgress);
        }
        Ok(())
    }

    /// Some partition of `m`'s target it does not hold yet is held by nobody now.
    fn unreleased_free(&self, m: &ConsumerMember) -> bool {
        if m.epoch != self.assignment_epoch {
            return false;
        }
        let Some(target) = self.target.get(&m.id) else {
            return false;
        };
        target.iter().any(|(t, ps)| {
            ps.iter().any(|p| {
                !m.assigned.get(t).is_some_and(|a| a.contains(p))
                    && !self.members.values().any(|o| {
                        o.id != m.id
                            && (o.assigned.get(t).is_some_and(|a| a.contains(p))
                                || o.revoking.get(t).is_some_and(|a| a.contains(p)))
                    })
            })
        })
    }

    /// One member of a LeaveGroup (by member id, or by instance id with an optional member
    /// id): it must be a classic member. Returns the id removed. Kafka does not downgrade the
    /// group here.
    pub fn classic_leave(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<String, ResponseError> {
        let id = match instance_id {
            None => {
                self.classic_member(member_id, None)?;
                member_id.to_string()
            }
            Some(instance) => {
                let m = self
                    .static_member(instance)
                    .ok_or(ResponseError::UnknownMemberId)?;
                if !member_id.is_empty() && m.id != member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
                if m.classic.is_none() {
                    return Err(ResponseError::UnknownMemberId);
                }
                m.id.clone()
            }
        };
        self.remove_member(&id);
        Ok(id)
    }
}

#[cfg(test)]
#[path = "classic_members_tests.rs"]
mod tests;
