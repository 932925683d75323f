//! SyncGroup, Heartbeat and LeaveGroup for [`super::Group`]: assignments relayed from the
//! leader, session keep-alive, and members leaving (by member id or group instance id).
//! Sans-IO like the rest of the state machine.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::*;

impl Group {
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

    pub(super) fn sync_result_for(&self, member_id: &str) -> SyncResult {
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
}
