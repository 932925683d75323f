//! Online migration between the classic and the consumer group protocol (KIP-848), as Kafka
//! does it under `group.consumer.migration.policy`:
//!
//! - upgrade: a ConsumerGroupHeartbeat joining a classic group with members that uses the
//!   "consumer" protocol type turns it into a consumer group; the classic members become
//!   members of it with their generation as member epoch and their last assignment as both
//!   current and target assignment, and keep speaking the classic protocol
//!   (`classic_members.rs`);
//! - downgrade: when a consumer-protocol member leaves or is fenced and every other member
//!   speaks the classic protocol, the group becomes a classic group again (generation = group
//!   epoch, each member's target assignment as its assignment) and starts a rebalance;
//! - an empty group of the other type is simply replaced, whatever the policy says.
//!
//! A conversion queues the tombstones of the old type's records and the records of the new
//! one (the caller persists and drains them), so it survives a restart. Part of
//! [`super::Group`]'s state machine; sans-IO, under the coordinator lock.

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::super::commit_fence::held;
use super::super::consumer::{Assignment, ClassicMeta, ConsumerMember, ConsumerState, RegexScope};
use super::super::embedded_protocol as ep;
use super::*;

/// `group.consumer.migration.policy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MigrationPolicy {
    #[default]
    Bidirectional,
    Upgrade,
    Downgrade,
    Disabled,
}

impl MigrationPolicy {
    /// Kafka's parsing: case is ignored; an unknown name means disabled (the config
    /// validator has refused those already).
    pub fn parse(name: &str) -> MigrationPolicy {
        match name.to_ascii_lowercase().as_str() {
            "bidirectional" => MigrationPolicy::Bidirectional,
            "upgrade" => MigrationPolicy::Upgrade,
            "downgrade" => MigrationPolicy::Downgrade,
            _ => MigrationPolicy::Disabled,
        }
    }
    pub fn upgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade
        )
    }
    pub fn downgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
    }
}

impl Group {
    /// Make this group a consumer group for a joining ConsumerGroupHeartbeat: an empty classic
    /// group is replaced; one with members is converted if the policy allows it and it uses
    /// the "consumer" protocol type, else GROUP_ID_NOT_FOUND (Kafka's answer). A group that
    /// already is a consumer group is left alone.
    pub fn become_consumer_group(
        &mut self,
        policy: MigrationPolicy,
        partitions: &dyn Fn(&str) -> Option<i32>,
        now: i64,
    ) -> Result<(), ResponseError> {
        if self.consumer.is_some() {
            return Ok(());
        }
        if self.state == GroupState::Dead {
            return Err(ResponseError::GroupIdNotFound);
        }
        if self.state == GroupState::Empty && self.members.is_empty() {
            if self.generation > 0 || self.protocol_type.is_some() {
                self.tombstone_metadata();
            }
            self.reset_classic(now);
            self.consumer = Some(ConsumerState::default());
            return Ok(());
        }
        if !policy.upgrade_enabled() {
            tracing::info!(group = %self.id, "not upgrading the classic group: online upgrade is disabled");
            return Err(ResponseError::GroupIdNotFound);
        }
        if self.protocol_type.as_deref() != Some("consumer") {
            tracing::info!(group = %self.id, "not upgrading the classic group: it does not use the consumer protocol type");
            return Err(ResponseError::GroupIdNotFound);
        }
        let state = self.consumer_state_from_classic(partitions, now).map_err(|e| {
            tracing::warn!(group = %self.id, error = %e, "not upgrading the classic group: malformed embedded consumer protocol");
            ResponseError::GroupIdNotFound
        })?;
        for m in self.members.values_mut() {
            if let Some(w) = m.join_waiter.take() {
                let _ = w.send(JoinResult::error(ResponseError::RebalanceInProgress, &m.id));
            }
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(SyncResult::error(ResponseError::RebalanceInProgress));
            }
        }
        tracing::info!(group = %self.id, generation = self.generation, members = self.members.len(), "upgraded classic group to a consumer group");
        self.tombstone_metadata();
        self.reset_classic(now);
        self.consumer = Some(state);
        Ok(())
    }

    /// Kafka's `ConsumerGroup.fromClassicGroup`; fails (changing nothing) on a subscription
    /// or assignment that cannot be read.
    fn consumer_state_from_classic(
        &self,
        partitions: &dyn Fn(&str) -> Option<i32>,
        now: i64,
    ) -> Result<ConsumerState, crate::wire::CodecError> {
        let mut state = ConsumerState {
            epoch: self.generation,
            assignment_epoch: self.generation,
            ..ConsumerState::default()
        };
        for m in self.members.values() {
            let protocol = self
                .protocol
                .clone()
                .or_else(|| m.protocols.first().map(|(n, _)| n.clone()))
                .unwrap_or_default();
            let sub = ep::parse_subscription(&m.metadata_for(&protocol))?;
            let assigned: Assignment = ep::parse_assignment(&m.assignment)?;
            let mut subscribed = sub.topics.clone();
            subscribed.sort();
            subscribed.dedup();
            state.target.insert(m.id.clone(), assigned.clone());
            state.members.insert(
                m.id.clone(),
                ConsumerMember {
                    id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: sub.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    epoch: self.generation,
                    previous_epoch: self.generation,
                    subscribed,
                    regex: None,
                    matched: Default::default(),
                    regex_scope: RegexScope::All,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    // Held since the generation the group converts at.
                    assigned_at: held([&assigned])
                        .into_iter()
                        .map(|k| (k, self.generation))
                        .collect(),
                    assigned,
                    revoking: Assignment::new(),
                    revoke_deadline: None,
                    session_deadline: now + i64::from(m.session_timeout_ms),
                    last_sent: None,
                    classic: Some(ClassicMeta {
                        session_timeout_ms: m.session_timeout_ms,
                        protocols: m.protocols.clone(),
                        ..ClassicMeta::default()
                    }),
                },
            );
        }
        state.counts = state
            .subscribed_topics()
            .into_iter()
            .filter_map(|t| partitions(&t).map(|n| (t, n)))
            .collect();
        Ok(state)
    }

    /// Kafka's rule for downgrading when a static classic member (now `joined`) replaced
    /// `replaced`: every member of the group before the join except the replaced one speaks
    /// the classic protocol and the policy allows it. Checked after the join, so the joined
    /// member (classic) stands in for the replaced one.
    pub fn should_downgrade_after_replace(&self, joined: &str, policy: MigrationPolicy) -> bool {
        let Some(c) = &self.consumer else {
            return false;
        };
        c.members.contains_key(joined)
            && c.members.values().all(|m| m.classic.is_some())
            && policy.downgrade_enabled()
    }

    /// Kafka's rule for downgrading when `leaving` is fenced or leaves: every other member
    /// speaks the classic protocol, at least one is left, and the policy allows it.
    pub fn should_downgrade(&self, leaving: &str, policy: MigrationPolicy) -> bool {
        let Some(c) = &self.consumer else {
            return false;
        };
        let others_classic = c
            .members
            .values()
            .all(|m| m.id == leaving || m.classic.is_some());
        others_classic
            && c.members.len() > 1
            && c.members.contains_key(leaving)
            && policy.downgrade_enabled()
    }

    /// Kafka's `ClassicGroup.fromConsumerGroup` followed by a rebalance: the remaining
    /// (classic) members form a stable classic group at the group epoch with their target
    /// assignments, which then prepares a rebalance so they all rejoin.
    pub fn downgrade(&mut self, leaving: &str, cfg: &GroupConfig, now: i64) {
        self.convert_to_classic(leaving, now);
        self.prepare_rebalance(cfg, now);
    }

    /// The downgrade triggered by a static member replacement: the joined member takes the
    /// replaced one's place (and target, already moved to it) and no rebalance starts.
    pub fn downgrade_after_replace(&mut self, now: i64) {
        self.convert_to_classic("", now);
    }

    /// Kafka's `ClassicGroup.fromConsumerGroup`: every member but `leaving`, stable.
    fn convert_to_classic(&mut self, leaving: &str, now: i64) {
        let Some(c) = self.consumer.take() else {
            return;
        };
        self.reset_classic(now);
        self.generation = c.epoch;
        self.protocol_type = Some("consumer".to_string());
        for m in c.members.values().filter(|m| m.id != leaving) {
            let Some(classic) = &m.classic else { continue };
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some(instance) = &m.instance_id {
                self.static_members.insert(instance.clone(), m.id.clone());
            }
            self.members.insert(
                m.id.clone(),
                Member {
                    id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: classic.session_timeout_ms,
                    protocol_type: "consumer".to_string(),
                    protocols: classic.protocols.clone(),
                    assignment: Bytes::new(),
                    seq,
                    session_deadline: now + i64::from(classic.session_timeout_ms),
                    join_waiter: None,
                    sync_waiter: None,
                },
            );
            if self.leader.is_none() {
                self.leader = Some(m.id.clone());
            }
        }
        self.protocol = self.select_protocol();
        let protocol = self.protocol.clone().unwrap_or_default();
        for m in self.members.values_mut() {
            let target = c.target.get(&m.id).cloned().unwrap_or_default();
            let version = ep::version_of(&m.metadata_for(&protocol));
            m.assignment = ep::encode_assignment(version, &target);
        }
        self.transition(GroupState::Stable, now);
        self.persist_metadata();
        tracing::info!(group = %self.id, generation = self.generation, members = self.members.len(), "downgraded consumer group to a classic group");
    }

    /// The consumer group's deadlines: an expired member is fenced, which downgrades the
    /// group when it was the last consumer-protocol member (policy permitting). Whether
    /// anything changed.
    pub(super) fn tick_consumer(&mut self, cfg: &GroupConfig, now: i64) -> bool {
        let Some(c) = &self.consumer else {
            return false;
        };
        let gone = c.expired(now);
        for id in &gone {
            tracing::info!(group = %self.id, member = %id, "consumer group member expired");
            if self.should_downgrade(id, cfg.migration) {
                self.downgrade(id, cfg, now);
            }
            match self.consumer.as_mut() {
                Some(c) => {
                    c.remove_member(id);
                }
                // Classic now: the classic deadlines take over for the others.
                None => break,
            }
        }
        !gone.is_empty()
    }

    /// A GroupMetadata tombstone: the classic group is gone (its offsets stay).
    fn tombstone_metadata(&mut self) {
        self.outbox.push((
            Key::Group {
                group: self.id.clone(),
            },
            None,
        ));
    }

    /// Forget every classic field (members, generation, protocol), keeping offsets, the
    /// outbox and the consumer state.
    fn reset_classic(&mut self, now: i64) {
        self.members.clear();
        self.static_members.clear();
        self.pending.clear();
        self.generation = 0;
        self.protocol_type = None;
        self.protocol = None;
        self.leader = None;
        self.join_deadline = None;
        self.initial_join_limit = None;
        self.transition(GroupState::Empty, now);
    }
}
