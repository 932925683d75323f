//! One streams group: its topology, members, epochs and target assignment, driven by
//! StreamsGroupHeartbeat.
//!
//! Epochs, as in Kafka's streams groups (the same scheme as KIP-848 consumer groups):
//! - the *group epoch* goes up when a member joins, leaves or is removed, when what the
//!   assignor looks at changes (a member's process, rack, client tags, instance id or topology
//!   epoch), when the topics the topology needs change (created, deleted, repartitioned), when
//!   the topology becomes ready or stops being ready, and when the standby count changes;
//! - the *assignment epoch* is the group epoch the target assignment was computed at. It
//!   catches up on a heartbeat, but not before the initial rebalance delay after the group's
//!   first member (so instances starting together are assigned at once), nor sooner than the
//!   assignment interval after the previous computation; meanwhile members are told
//!   ASSIGNMENT_DELAYED;
//! - a *member epoch* reaches the assignment epoch once the member holds its target, minus
//!   what others still hold. A member that must give up tasks keeps its epoch until it reports
//!   them gone (its owned tasks in the heartbeat); a task moves to its new owner only once
//!   released.
//!
//! The topology is set by the first member that joins with one; later members must declare the
//! same one at that epoch (a lower epoch is answered STALE_TOPOLOGY; a different topology at the
//! same or a higher epoch is refused: Kafka 4.4 does not support topology updates either).
//! Until every topic the topology needs exists with the right partition count, the group is
//! NotReady, every member's target is empty, and the heartbeat reports why (and which internal
//! topics the broker must create).
//!
//! Sans-IO: time and topic partition counts are passed in.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;

use super::assignor::{assign, task_ids, MemberSpec, MemberTasks, SubtopologySpec, TaskId, Tasks};
use super::configure::{configure, ConfiguredTopology, Status, StatusCode};
use super::error::StreamsGroupError;
use super::member::{Endpoint, MemberState, StreamsMember, TaskSet};
use super::settings::StreamsGroupSettings;
use super::topology::{InternalTopic, StreamsTopology};
use crate::groups::commit_fence::{self, AssignmentEpochs, CommitFence};

/// StreamsGroupHeartbeat's member epoch to leave the group.
pub const LEAVE_EPOCH: i32 = -1;
/// A static member's member epoch to leave for a while, keeping its tasks.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// Changelog offset sums by task.
pub type TaskOffsets = BTreeMap<TaskId, i64>;

/// A topic's partition count, `None` when it does not exist.
pub type PartitionCounts<'a> = &'a dyn Fn(&str) -> Option<i32>;

/// Kafka's streams group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamsGroupState {
    Empty,
    /// The topology's topics are not all there yet.
    NotReady,
    /// The target is older than the group epoch.
    Assigning,
    /// Some member has not reached the target.
    Reconciling,
    Stable,
}

impl StreamsGroupState {
    /// As StreamsGroupDescribe and ListGroups spell it.
    pub fn name(self) -> &'static str {
        match self {
            StreamsGroupState::Empty => "Empty",
            StreamsGroupState::NotReady => "NotReady",
            StreamsGroupState::Assigning => "Assigning",
            StreamsGroupState::Reconciling => "Reconciling",
            StreamsGroupState::Stable => "Stable",
        }
    }
}

/// One validated StreamsGroupHeartbeat (member epoch 0 or above, or -2).
#[derive(Clone, Debug, Default)]
pub struct Heartbeat {
    /// The request's version: MISSING_CLIENT_TAGS is reported from v1.
    pub version: i16,
    pub member_id: String,
    pub member_epoch: i32,
    pub endpoint_epoch: i32,
    pub instance_id: Option<String>,
    /// `None`: unchanged.
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    /// Only when joining.
    pub topology: Option<StreamsTopology>,
    /// The tasks the member holds; `None`: unchanged since the last heartbeat.
    pub owned: Option<TaskSet>,
    /// `None`: unchanged.
    pub process_id: Option<String>,
    /// `None`: unchanged (or, on a join, none).
    pub user_endpoint: Option<Endpoint>,
    /// `None`: unchanged.
    pub client_tags: Option<BTreeMap<String, String>>,
    /// Changelog offset sums per task as reported; `None`: unchanged.
    pub task_offsets: Option<Vec<(TaskId, i64)>>,
    /// Changelog end offset sums per task as reported; `None`: unchanged.
    pub task_end_offsets: Option<Vec<(TaskId, i64)>>,
    pub shutdown_application: bool,
    pub client_id: String,
    pub client_host: String,
}

/// Which partitions a member with an interactive-query endpoint serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointPartitions {
    pub endpoint: Endpoint,
    /// Topic → partitions.
    pub active: BTreeMap<String, BTreeSet<i32>>,
    pub standby: BTreeMap<String, BTreeSet<i32>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatResult {
    pub member_id: String,
    pub member_epoch: i32,
    /// The member's tasks, when they changed or it joined.
    pub tasks: Option<TaskSet>,
    pub status: Vec<Status>,
    pub endpoint_epoch: i32,
    /// Every endpoint's partitions, when the member's endpoint epoch is behind.
    pub endpoints: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker should create now.
    pub to_create: Vec<InternalTopic>,
}

/// Why a member left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovalReason {
    Left,
    SessionExpired,
    /// It did not give up its tasks within its rebalance timeout.
    RevocationTimedOut,
}

#[derive(Clone, Debug)]
pub struct StreamsGroup {
    pub id: String,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, StreamsMember>,
    /// Each member's target at `assignment_epoch`.
    pub target: BTreeMap<String, MemberTasks>,
    pub topology: Option<StreamsTopology>,
    /// The topology epoch the group was last found ready at (-1: never / not now).
    pub validated_topology_epoch: i32,
    pub endpoint_epoch: i32,
    /// The topology against the topics as they were last looked at.
    configured: Option<ConfiguredTopology>,
    /// Partition counts of the topics the topology needs, when last configured.
    topics_seen: BTreeMap<String, Option<i32>>,
    /// The assignment configs recorded with the last group epoch bump; settings that differ
    /// from them start a rebalance.
    assignment_configs: BTreeMap<String, String>,
    assignment_timestamp: Option<i64>,
    /// While set, no target is computed (initial rebalance delay).
    delayed_until: Option<i64>,
    shutdown_requested_by: Option<String>,
    /// Reported changelog offset sums per member.
    task_offsets: BTreeMap<String, BTreeMap<TaskId, i64>>,
    /// Reported changelog end offset sums per member (described, not used to assign).
    task_end_offsets: BTreeMap<String, BTreeMap<TaskId, i64>>,
}

impl StreamsGroup {
    pub fn new(id: &str) -> StreamsGroup {
        StreamsGroup {
            id: id.to_string(),
            epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            topology: None,
            validated_topology_epoch: -1,
            endpoint_epoch: 0,
            configured: None,
            topics_seen: BTreeMap::new(),
            assignment_configs: BTreeMap::new(),
            assignment_timestamp: None,
            delayed_until: None,
            shutdown_requested_by: None,
            task_offsets: BTreeMap::new(),
            task_end_offsets: BTreeMap::new(),
        }
    }

    pub fn state(&self) -> StreamsGroupState {
        if self.members.is_empty() {
            return StreamsGroupState::Empty;
        }
        let ready = self
            .topology
            .as_ref()
            .is_some_and(|t| t.epoch == self.validated_topology_epoch);
        if !ready {
            StreamsGroupState::NotReady
        } else if self.epoch > self.assignment_epoch {
            StreamsGroupState::Assigning
        } else if self
            .members
            .values()
            // A static member away (epoch -2) keeps its tasks and is not reconciling.
            .filter(|m| m.epoch != STATIC_LEAVE_EPOCH)
            .any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable)
        {
            StreamsGroupState::Reconciling
        } else {
            StreamsGroupState::Stable
        }
    }

    /// The topology as configured against the topics at the last heartbeat.
    pub fn configured(&self) -> Option<&ConfiguredTopology> {
        self.configured.as_ref()
    }

    pub fn assignment_timestamp(&self) -> Option<i64> {
        self.assignment_timestamp
    }

    /// A member's reported changelog offsets and end offsets (StreamsGroupDescribe).
    pub fn reported_offsets(
        &self,
        member_id: &str,
    ) -> (Option<&TaskOffsets>, Option<&TaskOffsets>) {
        (
            self.task_offsets.get(member_id),
            self.task_end_offsets.get(member_id),
        )
    }

    /// Every topic the topology's tasks read (user and repartition source topics).
    pub fn input_topics(&self) -> Vec<String> {
        let topics: BTreeSet<&str> = self
            .topology
            .iter()
            .flat_map(|t| t.subtopologies.values())
            .flat_map(|s| s.input_topics())
            .collect();
        topics.into_iter().map(str::to_string).collect()
    }

    /// The assignment configs recorded with the last group epoch bump.
    pub fn assignment_configs(&self) -> &BTreeMap<String, String> {
        &self.assignment_configs
    }

    /// Completes a group rebuilt from its records (`persist.rs`): the assignment epoch and
    /// time, the recorded assignment configs, and fresh session deadlines (revocations
    /// restart too).
    pub(super) fn restored(
        &mut self,
        (assignment_epoch, timestamp): (i32, Option<i64>),
        assignment_configs: BTreeMap<String, String>,
        now: i64,
        session_timeout_ms: i32,
    ) {
        self.assignment_epoch = assignment_epoch;
        self.assignment_timestamp = timestamp;
        self.assignment_configs = assignment_configs;
        for m in self.members.values_mut() {
            m.session_deadline = now + i64::from(session_timeout_ms);
            if m.state == MemberState::UnrevokedTasks {
                m.revoke_deadline = Some(now + i64::from(m.rebalance_timeout_ms.max(0)));
            }
        }
    }

    fn unknown_member(&self, member: &str) -> StreamsGroupError {
        StreamsGroupError::UnknownMember {
            member: member.to_string(),
            group: self.id.clone(),
        }
    }

    /// Handles a join (epoch 0), a heartbeat, or a static member's temporary leave (-2). On
    /// error nothing has changed.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topics: PartitionCounts<'_>,
        settings: &StreamsGroupSettings,
        now: i64,
    ) -> Result<HeartbeatResult, StreamsGroupError> {
        let mut next = self.clone();
        let result = next.apply(hb, topics, settings, now)?;
        *self = next;
        Ok(result)
    }

    fn apply(
        &mut self,
        hb: Heartbeat,
        topics: PartitionCounts<'_>,
        settings: &StreamsGroupSettings,
        now: i64,
    ) -> Result<HeartbeatResult, StreamsGroupError> {
        let joining = hb.member_epoch == 0;
        let mut replaced: Option<StreamsMember> = None;
        let old = match self.members.get(&hb.member_id) {
            Some(m) => m.clone(),
            None if joining => {
                if let Some(instance) = &hb.instance_id {
                    replaced = self.take_static_slot(&hb.member_id, instance)?;
                }
                if replaced.is_none() && self.members.len() >= settings.max_size {
                    return Err(StreamsGroupError::GroupFull(settings.max_size));
                }
                StreamsMember::new(&hb.member_id)
            }
            None => return Err(self.unknown_member(&hb.member_id)),
        };
        check_epoch(&old, hb.member_epoch, hb.owned.as_ref())?;
        if hb.member_epoch == STATIC_LEAVE_EPOCH {
            return self.static_leave(old, settings, now);
        }
        if self.members.is_empty() && settings.initial_rebalance_delay_ms > 0 {
            self.delayed_until = Some(now + i64::from(settings.initial_rebalance_delay_ms));
        }

        let mut member = old.clone();
        if let Some(r) = replaced {
            // A static member back under a new member id takes over its tasks.
            member.assigned = r.assigned;
            member.active_assigned_at = r.active_assigned_at;
            member.epoch = r.epoch;
            member.previous_epoch = r.previous_epoch;
            if let Some(t) = self.target.remove(&r.id) {
                self.target.insert(member.id.clone(), t);
            }
        }
        // A join states the endpoint (none is none); later, none means unchanged.
        if joining || hb.user_endpoint.is_some() {
            member.user_endpoint = hb.user_endpoint.clone();
        }
        if hb.instance_id.is_some() {
            member.instance_id = hb.instance_id.clone();
        }
        if hb.rack_id.is_some() {
            member.rack_id = hb.rack_id.clone();
        }
        if hb.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        if let Some(t) = &hb.topology {
            member.topology_epoch = t.epoch;
        }
        if let Some(p) = &hb.process_id {
            member.process_id = p.clone();
        }
        if let Some(tags) = &hb.client_tags {
            member.client_tags = tags.clone();
        }
        member.client_id = hb.client_id.clone();
        member.client_host = hb.client_host.clone();
        let known = self.members.contains_key(&member.id);
        let mut recompute = !known || member.assignment_inputs() != old.assignment_inputs();

        let topology = self.settle_topology(hb.topology.as_ref(), &member.id)?;
        let mut status = Vec::new();
        if member.topology_epoch < topology.epoch {
            status.push(Status {
                code: StatusCode::StaleTopology,
                detail: format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    member.topology_epoch, topology.epoch
                ),
            });
        }
        let seen = needed_topics(&topology, topics);
        if self.configured.is_none() || seen != self.topics_seen {
            if self.configured.is_some() {
                recompute = true;
            }
            let configured = configure(&topology, topics)
                .map_err(|e| StreamsGroupError::InvalidTopology(e.0))?;
            self.configured = Some(configured);
            self.topics_seen = seen;
        }
        let configured = self.configured.clone().unwrap_or_default();
        let validated = if configured.is_ready() {
            if let Some(owned) = &hb.owned {
                check_tasks_exist(&configured, owned)?;
            }
            topology.epoch
        } else {
            -1
        };
        if validated != self.validated_topology_epoch {
            recompute = true;
        }
        if let Some(offsets) = &hb.task_offsets {
            self.task_offsets
                .insert(member.id.clone(), task_offset_map(offsets)?);
        }
        if let Some(offsets) = &hb.task_end_offsets {
            self.task_end_offsets
                .insert(member.id.clone(), task_offset_map(offsets)?);
        }
        let assignment_configs = settings.assignment_configs();
        if assignment_configs != self.assignment_configs {
            recompute = true;
        }
        self.members.insert(member.id.clone(), member.clone());
        self.topology = Some(topology);
        if recompute {
            // A new group's first epoch is 2: Kafka keeps epoch 1 for the empty target its
            // first members are given while the initial rebalance delay runs.
            self.epoch = if self.epoch == 0 { 2 } else { self.epoch + 1 };
            self.validated_topology_epoch = validated;
            self.assignment_configs = assignment_configs;
        }

        self.maybe_compute_target(settings, now, &mut status);
        let owned = if joining {
            Some(TaskSet::default())
        } else {
            hb.owned.clone()
        };
        self.reconcile(&member.id, owned.as_ref(), now);
        let Some(m) = self.members.get_mut(&member.id) else {
            return Err(self.unknown_member(&member.id));
        };
        m.session_deadline = now + i64::from(settings.session_timeout_ms);
        let m = m.clone();

        if hb.shutdown_application {
            self.shutdown_requested_by = Some(m.id.clone());
        }
        let tasks_changed = m.assigned != old.assigned;
        if m.user_endpoint != old.user_endpoint || (tasks_changed && m.user_endpoint.is_some()) {
            self.endpoint_epoch += 1;
        }
        if let Some(s) = configured.status.clone() {
            status.push(s);
        }
        if let Some(by) = &self.shutdown_requested_by {
            status.push(Status {
                code: StatusCode::ShutdownApplication,
                detail: format!(
                    "Streams group member {by} encountered a fatal error and requested a shutdown for the entire application."
                ),
            });
        }
        if hb.version >= 1 {
            status.extend(missing_client_tags(settings, &m));
        }
        let endpoints =
            (hb.endpoint_epoch != self.endpoint_epoch).then(|| self.endpoint_partitions(topics));
        Ok(HeartbeatResult {
            member_id: m.id.clone(),
            member_epoch: m.epoch,
            tasks: (joining || tasks_changed).then(|| m.assigned.clone()),
            status,
            endpoint_epoch: self.endpoint_epoch,
            endpoints,
            to_create: configured.to_create.clone(),
        })
    }

    /// A static member joins under `member_id` with `instance`: the member that held the
    /// instance id must have left temporarily (epoch -2); it is replaced.
    fn take_static_slot(
        &mut self,
        member_id: &str,
        instance: &str,
    ) -> Result<Option<StreamsMember>, StreamsGroupError> {
        let holder = self
            .members
            .values()
            .find(|m| m.instance_id.as_deref() == Some(instance) && m.id != member_id)
            .cloned();
        match holder {
            None => Ok(None),
            Some(h) if h.epoch == STATIC_LEAVE_EPOCH => {
                self.members.remove(&h.id);
                self.task_offsets.remove(&h.id);
                self.task_end_offsets.remove(&h.id);
                Ok(Some(h))
            }
            Some(h) => Err(StreamsGroupError::UnreleasedInstanceId {
                member: member_id.to_string(),
                instance: instance.to_string(),
                owner: h.id,
            }),
        }
    }

    fn static_leave(
        &mut self,
        mut member: StreamsMember,
        settings: &StreamsGroupSettings,
        now: i64,
    ) -> Result<HeartbeatResult, StreamsGroupError> {
        if member.instance_id.is_none() {
            return Err(StreamsGroupError::InvalidRequest(
                "InstanceId can't be null.".to_string(),
            ));
        }
        member.previous_epoch = member.epoch;
        member.epoch = STATIC_LEAVE_EPOCH;
        member.session_deadline = now + i64::from(settings.session_timeout_ms);
        let id = member.id.clone();
        self.members.insert(id.clone(), member);
        Ok(HeartbeatResult {
            member_id: id,
            member_epoch: STATIC_LEAVE_EPOCH,
            tasks: None,
            status: Vec::new(),
            endpoint_epoch: self.endpoint_epoch,
            endpoints: None,
            to_create: Vec::new(),
        })
    }

    /// The group's topology after this heartbeat: the first one declared, kept as long as the
    /// group lives.
    fn settle_topology(
        &self,
        declared: Option<&StreamsTopology>,
        member: &str,
    ) -> Result<StreamsTopology, StreamsGroupError> {
        match (declared, &self.topology) {
            (Some(t), None) => {
                // A topology that would become the group's must be well formed (Kafka
                // fails a negative epoch or a co-partition index out of range only here,
                // when it first sets a group's topology).
                t.validate().map_err(StreamsGroupError::InvalidTopology)?;
                tracing::info!(group = %self.id, member, epoch = t.epoch, "streams group topology initialized");
                Ok(t.clone())
            }
            (Some(t), Some(current)) if current.epoch > t.epoch || current == t => {
                Ok(current.clone())
            }
            (Some(_), Some(_)) => Err(StreamsGroupError::InvalidRequest(
                "Topology updates are not supported yet.".to_string(),
            )),
            (None, Some(current)) => Ok(current.clone()),
            (None, None) => Err(StreamsGroupError::InvalidRequest(
                "Topology must be non-null when (re-)joining.".to_string(),
            )),
        }
    }

    /// OffsetCommit or TxnOffsetCommit (`offset_commit_version` None) from `member_id` at
    /// `epoch`: [`commit_fence::commit_member`], then [`commit_fence::member_fence`], where a
    /// partition counts as assigned when its task is active on the member (held or being
    /// revoked) and the topic is one of that sub-topology's inputs.
    pub fn validate_commit(
        &self,
        member_id: &str,
        epoch: i32,
        offset_commit_version: Option<i16>,
    ) -> Result<CommitFence, ResponseError> {
        let member = commit_fence::commit_member(
            &self.members,
            member_id,
            epoch,
            offset_commit_version,
            |_| false,
        )?;
        let Some(m) = member else {
            return Ok(CommitFence::Open);
        };
        commit_fence::member_fence(m.epoch, epoch, false, || {
            let mut by_topic = AssignmentEpochs::new();
            let Some(topology) = &self.topology else {
                return by_topic;
            };
            for ((subtopology, partition), at) in &m.active_assigned_at {
                let Some(s) = topology.subtopologies.get(subtopology) else {
                    continue;
                };
                for topic in s.input_topics() {
                    by_topic.insert((topic.to_string(), *partition), *at);
                }
            }
            by_topic
        })
    }

    /// OffsetFetch v9+ naming a member: it must exist at that epoch.
    pub fn validate_fetch(&self, member_id: &str, epoch: i32) -> Result<(), ResponseError> {
        let m = self
            .members
            .get(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if epoch != m.epoch {
            return Err(ResponseError::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Member epoch -1.
    pub fn leave(&mut self, member_id: &str) -> Result<(), StreamsGroupError> {
        if !self.members.contains_key(member_id) {
            return Err(self.unknown_member(member_id));
        }
        self.remove(member_id, RemovalReason::Left);
        Ok(())
    }

    /// Removes members whose session expired or who did not revoke in time. Returns who.
    pub fn expire(&mut self, now: i64) -> Vec<(String, RemovalReason)> {
        let gone: Vec<(String, RemovalReason)> = self
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    Some((m.id.clone(), RemovalReason::SessionExpired))
                } else if m.revoke_deadline.is_some_and(|d| d <= now) {
                    Some((m.id.clone(), RemovalReason::RevocationTimedOut))
                } else {
                    None
                }
            })
            .collect();
        for (id, reason) in &gone {
            self.remove(id, *reason);
        }
        gone
    }

    /// The earliest deadline, for the caller's timer.
    pub fn next_deadline(&self) -> Option<i64> {
        self.members
            .values()
            .flat_map(|m| [Some(m.session_deadline), m.revoke_deadline])
            .flatten()
            .chain(self.delayed_until)
            .min()
    }

    fn remove(&mut self, member_id: &str, reason: RemovalReason) {
        if self.members.remove(member_id).is_none() {
            return;
        }
        self.target.remove(member_id);
        self.task_offsets.remove(member_id);
        self.task_end_offsets.remove(member_id);
        self.epoch += 1;
        if self.members.is_empty() {
            self.shutdown_requested_by = None;
            // Nothing is left to assign: the (empty) target is the group's epoch at once,
            // as Kafka's describe shows for a group whose last member left.
            self.assignment_epoch = self.epoch;
        }
        tracing::info!(group = %self.id, member = %member_id, ?reason, "streams group member removed");
    }

    fn maybe_compute_target(
        &mut self,
        settings: &StreamsGroupSettings,
        now: i64,
        status: &mut Vec<Status>,
    ) {
        if let Some(until) = self.delayed_until {
            if now < until {
                status.push(Status {
                    code: StatusCode::AssignmentDelayed,
                    detail: "Assignment delayed due to the configured initial rebalance delay."
                        .to_string(),
                });
                if self.assignment_epoch == 0 && self.epoch > 0 {
                    // A new group's first members get an empty target at epoch 1, the one
                    // below the group's first epoch; the real one follows the delay.
                    self.target = self
                        .members
                        .keys()
                        .map(|id| (id.clone(), MemberTasks::default()))
                        .collect();
                    self.assignment_epoch = 1;
                }
                return;
            }
            self.delayed_until = None;
        }
        if self.assignment_epoch >= self.epoch {
            return;
        }
        let interval_passed = self.assignment_timestamp.is_none_or(|last| {
            settings.assignment_interval_ms <= 0
                || now >= last + i64::from(settings.assignment_interval_ms)
        });
        if !interval_passed {
            status.push(Status {
                code: StatusCode::AssignmentDelayed,
                detail: "Assignment delayed due to the configured assignment interval.".to_string(),
            });
            return;
        }
        self.compute_target(settings.standby_replicas);
        self.assignment_epoch = self.epoch;
        self.assignment_timestamp = Some(now);
    }

    fn compute_target(&mut self, standby_replicas: u32) {
        let ready = self
            .configured
            .as_ref()
            .filter(|c| c.is_ready())
            .and_then(|c| c.subtopologies.as_ref());
        let Some(subtopologies) = ready else {
            self.target = self
                .members
                .keys()
                .map(|id| (id.clone(), MemberTasks::default()))
                .collect();
            return;
        };
        let specs: Vec<SubtopologySpec> = subtopologies
            .iter()
            .map(|(id, s)| SubtopologySpec {
                id: id.clone(),
                tasks: s.tasks,
                stateful: s.stateful,
            })
            .collect();
        let members: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                id: m.id.clone(),
                process_id: m.process_id.clone(),
                active: m.assigned.active.clone(),
                standby: m.assigned.standby.clone(),
                task_offsets: self.task_offsets.get(&m.id).cloned().unwrap_or_default(),
            })
            .collect();
        self.target = assign(&members, &specs, standby_replicas);
    }

    /// For each member with a user endpoint, the topic partitions of its tasks: task `p` of a
    /// sub-topology reads partition `p` of each of its input topics that has one.
    fn endpoint_partitions(&self, topics: PartitionCounts<'_>) -> Vec<EndpointPartitions> {
        let Some(topology) = &self.topology else {
            return Vec::new();
        };
        let partitions_of = |tasks: &Tasks| {
            let mut out: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
            for task in task_ids(tasks) {
                let Some(s) = topology.subtopologies.get(&task.subtopology) else {
                    continue;
                };
                for t in s.input_topics() {
                    if topics(t).is_some_and(|n| task.partition < n) {
                        out.entry(t.to_string()).or_default().insert(task.partition);
                    }
                }
            }
            out
        };
        self.members
            .values()
            .filter_map(|m| {
                let endpoint = m.user_endpoint.clone()?;
                Some(EndpointPartitions {
                    endpoint,
                    active: partitions_of(&m.assigned.active),
                    standby: partitions_of(&m.assigned.standby),
                })
            })
            .collect()
    }
}

/// The partition counts of every topic the topology needs (changes re-configure it).
fn needed_topics(
    topology: &StreamsTopology,
    topics: PartitionCounts<'_>,
) -> BTreeMap<String, Option<i32>> {
    topology
        .required_topics()
        .into_iter()
        .map(|t| (t.to_string(), topics(t)))
        .collect()
}

/// A heartbeat's epoch must be the member's current one, or the one before it when the tasks
/// it reports are still within what it was given (the answer carrying the bump may have been
/// lost); 0 always passes (a rejoin).
fn check_epoch(
    member: &StreamsMember,
    received: i32,
    owned: Option<&TaskSet>,
) -> Result<(), StreamsGroupError> {
    if received == 0 || received == STATIC_LEAVE_EPOCH {
        return Ok(());
    }
    // Tasks not reported (null) cannot be shown to be within the assignment: fenced.
    let fenced = received > member.epoch
        || (received < member.epoch
            && (received != member.previous_epoch
                || owned.is_none_or(|o| !o.within(&member.assigned))));
    if fenced {
        return Err(StreamsGroupError::FencedEpoch {
            received,
            current: member.epoch,
        });
    }
    Ok(())
}

/// Reported tasks must exist in the configured topology.
fn check_tasks_exist(
    configured: &ConfiguredTopology,
    owned: &TaskSet,
) -> Result<(), StreamsGroupError> {
    for task in owned.all() {
        let Some(s) = configured
            .subtopologies
            .as_ref()
            .and_then(|s| s.get(&task.subtopology))
        else {
            return Err(StreamsGroupError::InvalidRequest(format!(
                "Subtopology {} does not exist in the topology.",
                task.subtopology
            )));
        };
        if task.partition < 0 || task.partition >= s.tasks {
            return Err(StreamsGroupError::InvalidRequest(format!(
                "Task {} for subtopology {} is invalid. Number of tasks for this subtopology: {}",
                task.partition, task.subtopology, s.tasks
            )));
        }
    }
    Ok(())
}

/// Reported task offsets (or end offsets) by task; a task listed twice is INVALID_REQUEST,
/// with the message Kafka gives for either list.
fn task_offset_map(reported: &[(TaskId, i64)]) -> Result<BTreeMap<TaskId, i64>, StreamsGroupError> {
    let mut out = BTreeMap::new();
    for (task, offset) in reported {
        if out.insert(task.clone(), *offset).is_some() {
            return Err(StreamsGroupError::InvalidRequest(format!(
                "Task offsets contain a duplicate entry for subtopology {} and partition {}.",
                task.subtopology, task.partition
            )));
        }
    }
    Ok(out)
}

/// The MISSING_CLIENT_TAGS status when the group names rack-aware assignment tags that the
/// member does not report among its client tags.
fn missing_client_tags(settings: &StreamsGroupSettings, member: &StreamsMember) -> Option<Status> {
    let missing: Vec<&str> = settings
        .rack_aware_assignment_tags
        .iter()
        .map(String::as_str)
        .filter(|tag| !member.client_tags.contains_key(*tag))
        .collect();
    (!missing.is_empty()).then(|| Status {
        code: StatusCode::MissingClientTags,
        detail: format!(
            "Missing required client tags for rack-aware standby assignment: [{}]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
            missing.join(", ")
        ),
    })
}
