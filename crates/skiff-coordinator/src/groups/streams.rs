//! Streams groups (KIP-1071) inside the group coordinator: StreamsGroupHeartbeat over a
//! [`Group`] whose `streams` state is a [`StreamsGroup`], its records in `__consumer_offsets`,
//! and what the other group APIs see of it.
//!
//! A streams group shares the group-id namespace, the offsets and the records topic with
//! classic and consumer groups, as in Kafka:
//! - a join creates the group, or converts an *empty classic* group (its offsets stay);
//! - a streams heartbeat to a consumer or share group, or to a classic group with members, is
//!   GROUP_ID_NOT_FOUND ("Group … is not a streams group.");
//! - a classic JoinGroup to a streams group with members is INCONSISTENT_GROUP_PROTOCOL, and
//!   an empty streams group becomes classic; a ConsumerGroupHeartbeat is GROUP_ID_NOT_FOUND;
//! - offsets are committed by members at their member epoch (`offsets.rs`).
//!
//! Records are queued with the groups lock held, like the consumer group's.

use super::group::{Group, GroupState, Value};
use super::records::Key;
use super::{Coordinator, Shared};
use crate::host::Storage;
use crate::streams_group::{
    self, Heartbeat, HeartbeatResult, StreamsGroup, StreamsGroupError, StreamsGroupSettings,
    LEAVE_EPOCH,
};

/// "streams": the protocol type and group type ListGroups shows for streams groups.
pub const STREAMS_GROUP_TYPE: &str = "streams";

impl<S: Storage> Coordinator<S> {
    /// StreamsGroupHeartbeat: a join (epoch 0), a heartbeat, a leave (-1) or a static
    /// member's temporary leave (-2), for a request that passed the handler's checks.
    pub fn streams_heartbeat(
        &self,
        group_id: &str,
        hb: Heartbeat,
        settings: &StreamsGroupSettings,
    ) -> Result<HeartbeatResult, StreamsGroupError> {
        let now = self.now();
        let mut groups = self.ready().map_err(StreamsGroupError::Coordinator)?;
        let not_streams = || StreamsGroupError::NotStreamsGroup(group_id.to_string());
        if self.shared.share().groups.get(group_id).is_some() {
            return Err(not_streams());
        }
        let joining = hb.member_epoch == 0;
        match groups.get(group_id) {
            None if !joining => {
                return Err(StreamsGroupError::GroupNotFound(group_id.to_string()));
            }
            Some(g) if !g.is_streams_group() => {
                let empty_classic =
                    g.consumer.is_none() && g.is_empty() && g.state == GroupState::Empty;
                if !(joining && empty_classic) {
                    return Err(not_streams());
                }
            }
            _ => {}
        }
        let topics = &self.shared.topics;
        let partitions = |t: &str| topics.partition_count(t);
        if !groups.get(group_id).is_some_and(Group::is_streams_group) {
            // A join that creates the group (or converts an empty classic one) changes
            // nothing when it is refused: no empty group is left behind.
            let mut state = StreamsGroup::new(group_id);
            let result = state.heartbeat(hb, &partitions, settings, now)?;
            let group = groups
                .entry(group_id.to_string())
                .or_insert_with(|| Group::new(group_id, now));
            group.become_streams_group(state);
            persist_streams(group);
            self.shared.drain(group, None);
            return Ok(result);
        }
        let Some(group) = groups.get_mut(group_id) else {
            return Err(StreamsGroupError::GroupNotFound(group_id.to_string()));
        };
        let Some(state) = group.streams.as_mut() else {
            return Err(not_streams());
        };
        let result = if hb.member_epoch == LEAVE_EPOCH {
            let member_id = hb.member_id.clone();
            state.leave(&member_id).map(|()| HeartbeatResult {
                member_id,
                member_epoch: LEAVE_EPOCH,
                tasks: None,
                status: Vec::new(),
                endpoint_epoch: state.endpoint_epoch,
                endpoints: None,
                to_create: Vec::new(),
            })
        } else {
            state.heartbeat(hb, &partitions, settings, now)
        };
        persist_streams(group);
        self.shared.drain(group, None);
        result
    }

    /// Read access to one streams group (StreamsGroupDescribe); `None` when the id is not a
    /// streams group.
    pub fn with_streams_group<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(Option<&StreamsGroup>) -> R,
    ) -> Result<R, StreamsGroupError> {
        let groups = self.ready().map_err(StreamsGroupError::Coordinator)?;
        Ok(f(groups.get(group_id).and_then(|g| g.streams.as_ref())))
    }

    /// Whether a group that is not a streams group (classic, consumer or share) holds this
    /// id: StreamsGroupDescribe tells such an id apart from one no group has.
    pub fn holds_other_group(&self, group_id: &str) -> Result<bool, StreamsGroupError> {
        if self.shared.share().groups.get(group_id).is_some() {
            return Ok(true);
        }
        let groups = self.ready().map_err(StreamsGroupError::Coordinator)?;
        Ok(groups.get(group_id).is_some_and(|g| !g.is_streams_group()))
    }
}

impl<S: Storage> Shared<S> {
    /// Rebuilds the streams state of a group being loaded from its records.
    pub(crate) fn restore_streams(&self, group: &mut Group, records: streams_group::Persisted) {
        let session = self
            .group_configs
            .streams_group_settings(&group.id)
            .session_timeout_ms;
        match streams_group::restore(&group.id, &records, session, self.clock.now_ms()) {
            Ok(state) => group.streams = state,
            Err(e) => tracing::warn!(
                group = %group.id,
                error = %e.in_topic(super::store::OFFSETS_TOPIC),
                "streams group records unreadable; the group starts empty"
            ),
        }
        group.streams_persisted = records;
    }
}

impl Group {
    /// An empty classic group (or a new one) becomes the streams group `state`; its offsets
    /// stay and its classic metadata is tombstoned.
    fn become_streams_group(&mut self, state: StreamsGroup) {
        if self.protocol_type.is_some() || self.generation > 0 {
            self.outbox.push((
                Key::Group {
                    group: self.id.clone(),
                },
                None,
            ));
            self.protocol_type = None;
            self.protocol = None;
            self.generation = 0;
        }
        self.streams = Some(state);
    }

    /// An empty streams group becomes classic (a classic JoinGroup): its records are
    /// tombstoned, its offsets stay.
    pub(super) fn drop_streams_state(&mut self) {
        self.streams = None;
        persist_streams(self);
    }
}

/// Queues on the group's outbox every streams record that changed since the last call, and
/// tombstones for those gone (a member that left, or the whole streams state).
pub(super) fn persist_streams(group: &mut Group) {
    if group.streams.is_none() && group.streams_persisted.is_empty() {
        return;
    }
    let now = group
        .streams
        .as_ref()
        .map(streams_group::snapshot)
        .unwrap_or_default();
    let old = std::mem::take(&mut group.streams_persisted);
    for (k, v) in &now {
        if old.get(k) != Some(v) {
            group
                .outbox
                .push((Key::Streams(k.clone()), Some(Value::Streams(v.clone()))));
        }
    }
    for k in old.keys().filter(|k| !now.contains_key(*k)) {
        group.outbox.push((Key::Streams(k.clone()), None));
    }
    group.streams_persisted = now;
}
