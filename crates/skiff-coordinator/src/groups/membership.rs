//! Group membership requests: the classic protocol (JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) and KIP-848's ConsumerGroupHeartbeat. Each runs under the groups lock and
//! queues the records the change produced; none waits for I/O.
//!
//! A share group's id is not in the groups map, so SyncGroup, Heartbeat and LeaveGroup
//! answer it as an unknown group (UNKNOWN_MEMBER_ID), as Kafka does; JoinGroup and
//! ConsumerGroupHeartbeat, which would create a group, check the share groups first.

use std::collections::{BTreeSet, HashMap};

use kafka_protocol::ResponseError;

use super::group::{Group, JoinOutcome, JoinRequest, JoinResult, SyncOutcome, SyncResult};
use super::{consumer, Coordinator};
use crate::host::Storage;

impl<S: Storage> Coordinator<S> {
    pub fn join(&self, group_id: &str, req: JoinRequest) -> Result<JoinOutcome, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        // A share group's id: after the session timeout check, Kafka answers a classic join
        // with INCONSISTENT_GROUP_PROTOCOL and an empty member id, before any member check.
        if self.shared.share().groups.get(group_id).is_some() {
            let cfg = &self.shared.settings.group;
            if req.session_timeout_ms < cfg.min_session_timeout_ms
                || req.session_timeout_ms > cfg.max_session_timeout_ms
            {
                return Err(ResponseError::InvalidSessionTimeout);
            }
            let refused = JoinResult::error(ResponseError::InconsistentGroupProtocol, "");
            return Ok(JoinOutcome::Ready(refused));
        }
        if !groups.contains_key(group_id) && !req.member_id.is_empty() {
            return Err(ResponseError::UnknownMemberId);
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now));
        if group.is_streams_group() {
            // A streams group with members refuses classic members (Kafka); an empty one
            // becomes a classic group, keeping its offsets.
            if !group.is_empty() {
                let refused = JoinResult::error(ResponseError::InconsistentGroupProtocol, "");
                return Ok(JoinOutcome::Ready(refused));
            }
            group.drop_streams_state();
        }
        if group.consumer.as_ref().is_some_and(|c| !c.is_empty()) {
            // A classic member of a consumer group (online migration); Kafka checks the
            // session timeout before anything else.
            let cfg = &self.shared.settings.group;
            if req.session_timeout_ms < cfg.min_session_timeout_ms
                || req.session_timeout_ms > cfg.max_session_timeout_ms
            {
                return Err(ResponseError::InvalidSessionTimeout);
            }
            let counts = self.counts_with(group, &req);
            let member_id = req.member_id.clone();
            let Some(state) = group.consumer.as_mut() else {
                return Err(ResponseError::InconsistentGroupProtocol);
            };
            let replaced = state.replaced_by_join(&req);
            let result = state
                .classic_join(req, &counts, now)
                .unwrap_or_else(|e| JoinResult::error(e, &member_id));
            // A static classic member replacing the last consumer-protocol member downgrades
            // the group at once, without a rebalance (Kafka).
            if result.error == 0
                && replaced.is_some()
                && group.should_downgrade_after_replace(&result.member_id, cfg.migration)
            {
                group.downgrade_after_replace(now);
            }
            self.shared.persist_consumer(group);
            self.shared.drain(group, None);
            return Ok(JoinOutcome::Ready(result));
        }
        // An empty consumer group is replaced by a classic one (its records tombstoned).
        group.consumer = None;
        let outcome = group.join(&self.shared.settings.group, req, now);
        self.shared.persist_consumer(group);
        self.shared.drain(group, None);
        Ok(outcome)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, bytes::Bytes)>,
    ) -> Result<SyncOutcome, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        let group = groups
            .get_mut(group_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if let Some(state) = group.consumer.as_mut() {
            let result = state
                .classic_sync(
                    member_id,
                    instance_id,
                    generation,
                    protocol_type,
                    protocol_name,
                    now,
                )
                .unwrap_or_else(SyncResult::error);
            return Ok(SyncOutcome::Ready(result));
        }
        let outcome = group.sync(
            member_id,
            instance_id,
            generation,
            protocol_type,
            protocol_name,
            assignments,
            now,
        );
        self.shared.drain(group, None);
        Ok(outcome)
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        match groups.get_mut(group_id) {
            Some(group) => match group.consumer.as_mut() {
                Some(state) => state.classic_heartbeat(member_id, instance_id, generation, now),
                None => group.heartbeat(member_id, instance_id, generation, now),
            },
            None => Err(ResponseError::UnknownMemberId),
        }
    }

    /// Remove members `(member id, group instance id)`; one error per member.
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        let Some(group) = groups.get_mut(group_id) else {
            return Ok(vec![Err(ResponseError::UnknownMemberId); members.len()]);
        };
        let cfg = &self.shared.settings.group;
        let errors = match group.consumer.as_mut() {
            Some(state) => {
                let errors = members
                    .iter()
                    .map(|(id, instance)| state.classic_leave(id, instance.as_deref()).map(|_| ()))
                    .collect();
                self.shared.persist_consumer(group);
                errors
            }
            None => members
                .iter()
                .map(|(id, instance)| group.leave(cfg, id, instance.as_deref(), now))
                .collect(),
        };
        self.shared.drain(group, None);
        Ok(errors)
    }

    /// ConsumerGroupHeartbeat (KIP-848). `partitions` gives a topic's partition count;
    /// `all_topics` lists every topic (internal ones included, as Kafka's regexes see them),
    /// asked only when a regex is in use.
    pub fn consumer_heartbeat(
        &self,
        group_id: &str,
        hb: consumer::Heartbeat,
        partitions: impl Fn(&str) -> Option<i32>,
        all_topics: impl Fn() -> BTreeSet<String>,
    ) -> Result<consumer::HeartbeatResult, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        // A share group's id: GROUP_ID_NOT_FOUND, as Kafka (no conversion between the two).
        if self.shared.share().groups.get(group_id).is_some() {
            return Err(ResponseError::GroupIdNotFound);
        }
        // Only a join (epoch 0) creates the group or converts an empty classic one; any
        // other heartbeat (a leave too) to a missing or classic group is GROUP_ID_NOT_FOUND,
        // as in Kafka.
        if groups.get(group_id).is_some_and(Group::is_streams_group) {
            return Err(ResponseError::GroupIdNotFound);
        }
        let exists_as_consumer = groups.get(group_id).map(|g| g.consumer.is_some());
        if hb.member_epoch != 0 && exists_as_consumer != Some(true) {
            return Err(ResponseError::GroupIdNotFound);
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now));
        let cfg = &self.shared.settings.group;
        if group.consumer.is_none() {
            let topics = &self.shared.topics;
            group.become_consumer_group(cfg.migration, &|t| topics.partition_count(t), now)?;
        }
        if hb.member_epoch == consumer::LEAVE {
            // The last consumer-protocol member leaving a group of classic members turns it
            // back into a classic group (policy permitting), as Kafka does.
            let leaving = match group.consumer.as_ref() {
                Some(state) => state.leaving_member(&hb)?,
                None => return Err(ResponseError::GroupIdNotFound),
            };
            if group.should_downgrade(&leaving, cfg.migration) {
                group.downgrade(&leaving, cfg, now);
                self.shared.persist_consumer(group);
                self.shared.drain(group, None);
                return Ok(consumer::HeartbeatResult {
                    member_id: leaving,
                    member_epoch: consumer::LEAVE,
                    assignment: None,
                });
            }
        }
        let Some(state) = group.consumer.as_mut() else {
            return Err(ResponseError::GroupIdNotFound);
        };
        let mut topics = state.subscribed_topics();
        if let Some(s) = &hb.subscribed {
            topics.extend(s.iter().cloned());
        }
        if state.uses_regex() || matches!(hb.regex, Some(Some(_))) {
            let all = all_topics();
            topics.extend(all.iter().cloned());
            state.observe_topics(all);
        }
        let counts: HashMap<String, i32> = topics
            .into_iter()
            .filter_map(|t| partitions(&t).map(|c| (t, c)))
            .collect();
        let result = state.heartbeat(
            hb,
            &counts,
            self.shared.consumer_session_timeout_ms(group_id),
            now,
        );
        self.shared.persist_consumer(group);
        self.shared.drain(group, None);
        result
    }

    /// Partition counts of every topic the consumer group subscribes to, plus those of a
    /// classic member's JoinGroup subscription.
    fn counts_with(&self, group: &Group, req: &JoinRequest) -> HashMap<String, i32> {
        let mut topics = group
            .consumer
            .as_ref()
            .map(|c| c.subscribed_topics())
            .unwrap_or_default();
        for (_, metadata) in &req.protocols {
            if let Ok(sub) = super::embedded_protocol::parse_subscription(metadata) {
                topics.extend(sub.topics);
            }
        }
        topics
            .into_iter()
            .filter_map(|t| self.shared.topics.partition_count(&t).map(|c| (t, c)))
            .collect()
    }
}
