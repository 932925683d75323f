//! The streams group coordinator behind the broker's StreamsGroupHeartbeat and
//! StreamsGroupDescribe handlers ([`StreamsGroups`]): the request checks Kafka's broker makes
//! before its group coordinator (the ones KafkaApis and the coordinator service make), the
//! wire structs to and from `skiff_coordinator::streams_group`, and the internal topics a
//! heartbeat asks for ([`crate::streams_topics`]).
//!
//! Thread-safety: shared; a heartbeat runs on the blocking pool (the coordinator's lock and,
//! for internal topics, file creation).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use kafka_protocol::ResponseError;
use skiff_coordinator::host::GroupConfigs;
use skiff_coordinator::streams_group::{
    self as sg, describe, Endpoint, Heartbeat, HeartbeatResult, StreamsGroupError, TaskId, TaskSet,
    Tasks, ASSIGNOR_NAME, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
};
use skiff_protocol::streams::describe as wd;
use skiff_protocol::streams::heartbeat::{
    self as wh, KeyValue, StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse, TaskIds,
    TaskOffset, TopicInfo,
};

use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::BrokerError;
use crate::streams_groups::{Caller, HeartbeatFuture, StreamsGroups};
use crate::streams_topics::create_internal_topics;
use crate::topics::validate_topic_name;

/// The streams group service of one broker.
pub struct StreamsGroupService {
    broker: Weak<Broker>,
}

impl StreamsGroupService {
    pub fn new(broker: &Arc<Broker>) -> StreamsGroupService {
        StreamsGroupService {
            broker: Arc::downgrade(broker),
        }
    }
}

impl StreamsGroups for StreamsGroupService {
    fn heartbeat(&self, caller: Caller, request: StreamsGroupHeartbeatRequest) -> HeartbeatFuture {
        let broker = self.broker.clone();
        Box::pin(async move {
            let broker = broker
                .upgrade()
                .ok_or(BrokerError::CoordinatorUnavailable)?;
            tokio::task::spawn_blocking(move || heartbeat(&broker, &caller, request))
                .await
                .map_err(|e| BrokerError::Internal(format!("streams group heartbeat: {e}")))
        })
    }

    fn describe(
        &self,
        _caller: &Caller,
        group_id: &str,
        _include_topology_description: bool,
    ) -> Result<wd::DescribedGroup, BrokerError> {
        let broker = self
            .broker
            .upgrade()
            .ok_or(BrokerError::CoordinatorUnavailable)?;
        let described = broker
            .coordinator
            .with_streams_group(group_id, |g| g.and_then(describe))
            .map_err(|e| BrokerError::Coordinator(e.response_error()))?;
        if let Some(d) = described {
            return Ok(described_group(&d));
        }
        // Kafka names the reason: another kind of group holds the id, or none does.
        let other = broker
            .coordinator
            .holds_other_group(group_id)
            .map_err(|e| BrokerError::Coordinator(e.response_error()))?;
        let message = if other {
            StreamsGroupError::NotStreamsGroup(group_id.to_string()).to_string()
        } else {
            format!("Group {group_id} not found.")
        };
        Ok(wd::DescribedGroup {
            group_id: group_id.to_string(),
            error_code: ResponseError::GroupIdNotFound.code(),
            error_message: Some(message),
            ..Default::default()
        })
    }
}

/// One heartbeat, answered in full (a refusal is an error response).
fn heartbeat(
    broker: &Broker,
    caller: &Caller,
    request: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    let refused = |code: i16, message: String| StreamsGroupHeartbeatResponse {
        error_code: code,
        error_message: Some(message),
        ..Default::default()
    };
    if let Err(e) = validate(&request) {
        return refused(e.code(), e.to_string());
    }
    if let Some(t) = &request.topology {
        if let Err((code, message)) = check_topology_topics(caller, t) {
            return refused(code, message);
        }
    }
    let group_id = request.group_id.clone();
    let settings = broker.dynamic.streams_group_settings(&group_id);
    let hb = match to_heartbeat(request, caller) {
        Ok(hb) => hb,
        Err(e) => return refused(e.code(), e.to_string()),
    };
    match broker
        .coordinator
        .streams_heartbeat(&group_id, hb, &settings)
    {
        Err(e) => refused(e.code(), e.to_string()),
        Ok(mut result) => {
            create_internal_topics(broker, &caller.authz, &result.to_create, &mut result.status);
            response(result, &settings, caller.version)
        }
    }
}

/// The checks Kafka's group coordinator service makes before touching any group.
fn validate(r: &StreamsGroupHeartbeatRequest) -> Result<(), StreamsGroupError> {
    let invalid = |m: &str| Err(StreamsGroupError::InvalidRequest(m.to_string()));
    if let Some(t) = &r.topology {
        if t.subtopologies
            .iter()
            .any(|s| !s.source_topic_regex.is_empty())
        {
            return invalid("Regular expressions for source topics are not supported yet.");
        }
    }
    if r.member_id.trim().is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if r.group_id.trim().is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if r.instance_id
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        return invalid("InstanceId can't be empty.");
    }
    if r.rack_id.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return invalid("RackId can't be empty.");
    }
    // A join states its tasks: three lists, all empty (null is not empty).
    let some_tasks = |t: &Option<Vec<TaskIds>>| t.as_ref().is_none_or(|v| !v.is_empty());
    match r.member_epoch {
        0 => {
            if r.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if some_tasks(&r.active_tasks) {
                return invalid("ActiveTasks must be empty when (re-)joining.");
            }
            if some_tasks(&r.standby_tasks) {
                return invalid("StandbyTasks must be empty when (re-)joining.");
            }
            if some_tasks(&r.warmup_tasks) {
                return invalid("WarmupTasks must be empty when (re-)joining.");
            }
            let Some(t) = &r.topology else {
                return invalid("Topology must be non-null when (re-)joining.");
            };
            topology(t.clone())
                .check_changelogs()
                .map_err(StreamsGroupError::InvalidTopology)?;
            // Kafka fails this with an unhandled exception (UNKNOWN_SERVER_ERROR, see
            // tests/diff/KNOWN_DIFFERENCES.md); Skiff refuses it before any group changes.
            let mut ids = std::collections::BTreeSet::new();
            if let Some(s) = t
                .subtopologies
                .iter()
                .find(|s| !ids.insert(s.subtopology_id.as_str()))
            {
                return Err(StreamsGroupError::InvalidTopology(format!(
                    "Subtopology {} is declared more than once.",
                    s.subtopology_id
                )));
            }
        }
        STATIC_LEAVE_EPOCH if r.instance_id.is_none() => {
            return invalid("InstanceId can't be null.")
        }
        e if e < STATIC_LEAVE_EPOCH => {
            return Err(StreamsGroupError::InvalidRequest(format!(
                "MemberEpoch is {e}, but must be greater than or equal to -2."
            )))
        }
        _ => {}
    }
    let given = [&r.active_tasks, &r.standby_tasks, &r.warmup_tasks]
        .iter()
        .filter(|t| t.is_some())
        .count();
    if given != 0 && given != 3 {
        return invalid("If one task-type is non-null, all must be non-null.");
    }
    if r.member_epoch != 0 && r.topology.is_some() {
        return invalid("Topology can only be provided when (re-)joining.");
    }
    Ok(())
}

/// KafkaApis' checks of the topics a topology names: no Kafka-internal topic, only valid
/// names, and DESCRIBE on every one of them.
fn check_topology_topics(caller: &Caller, t: &wh::Topology) -> Result<(), (i16, String)> {
    let mut topics: Vec<&str> = Vec::new();
    for s in &t.subtopologies {
        topics.extend(s.source_topics.iter().map(String::as_str));
        topics.extend(s.repartition_sink_topics.iter().map(String::as_str));
        topics.extend(s.repartition_source_topics.iter().map(|t| t.name.as_str()));
        topics.extend(s.state_changelog_topics.iter().map(|t| t.name.as_str()));
    }
    let mut seen = std::collections::BTreeSet::new();
    topics.retain(|t| seen.insert(*t));
    // Each rule names every topic that breaks it.
    let refuse = |breaks: &dyn Fn(&str) -> bool, message: &dyn Fn(String) -> String| {
        let named: Vec<&str> = topics.iter().copied().filter(|t| breaks(t)).collect();
        if named.is_empty() {
            return Ok(());
        }
        Err((
            ResponseError::StreamsInvalidTopology.code(),
            message(named.join(",")),
        ))
    };
    refuse(&crate::topics::is_internal_name, &|names| {
        format!("Use of Kafka internal topics {names} in a Kafka Streams topology is prohibited.")
    })?;
    refuse(&|t| validate_topic_name(t).is_err(), &|names| {
        format!("Topic names {names} are not valid topic names.")
    })?;
    if topics.iter().any(|t| {
        !caller
            .authz
            .allows(AclOperation::Describe, ResourceType::Topic, t)
    }) {
        return Err((
            ResponseError::TopicAuthorizationFailed.code(),
            String::new(),
        ));
    }
    Ok(())
}

fn to_heartbeat(
    r: StreamsGroupHeartbeatRequest,
    caller: &Caller,
) -> Result<Heartbeat, StreamsGroupError> {
    let owned = match (r.active_tasks, r.standby_tasks, r.warmup_tasks) {
        (Some(a), Some(s), Some(w)) => Some(TaskSet {
            active: tasks(&a),
            standby: tasks(&s),
            warmup: tasks(&w),
        }),
        _ => None,
    };
    Ok(Heartbeat {
        version: caller.version,
        member_id: r.member_id,
        member_epoch: r.member_epoch,
        endpoint_epoch: r.endpoint_information_epoch,
        instance_id: r.instance_id,
        rack_id: r.rack_id,
        rebalance_timeout_ms: r.rebalance_timeout_ms,
        topology: r.topology.map(topology),
        owned,
        process_id: r.process_id,
        user_endpoint: r.user_endpoint.map(|e| Endpoint {
            host: e.host,
            port: e.port,
        }),
        client_tags: r.client_tags.map(key_value_map),
        task_offsets: r.task_offsets.map(|o| offsets(&o)),
        task_end_offsets: r.task_end_offsets.map(|o| offsets(&o)),
        shutdown_application: r.shutdown_application,
        client_id: caller.client_id.clone(),
        client_host: caller.client_host.clone(),
    })
}

fn topology(t: wh::Topology) -> sg::StreamsTopology {
    let internal = |infos: Vec<TopicInfo>| {
        infos
            .into_iter()
            .map(|i| sg::InternalTopic {
                name: i.name,
                partitions: i.partitions,
                replication_factor: i.replication_factor,
                configs: key_value_map(i.topic_configs),
            })
            .collect()
    };
    sg::StreamsTopology {
        epoch: t.epoch,
        subtopologies: t
            .subtopologies
            .into_iter()
            .map(|s| {
                let sub = sg::Subtopology {
                    id: s.subtopology_id.clone(),
                    source_topics: s.source_topics,
                    source_topic_regex: s.source_topic_regex,
                    state_changelog_topics: internal(s.state_changelog_topics),
                    repartition_sink_topics: s.repartition_sink_topics,
                    repartition_source_topics: internal(s.repartition_source_topics),
                    copartition_groups: s
                        .copartition_groups
                        .into_iter()
                        .map(|g| sg::CopartitionGroup {
                            source_topics: g.source_topics,
                            source_topic_regex: g.source_topic_regex,
                            repartition_source_topics: g.repartition_source_topics,
                        })
                        .collect(),
                };
                (s.subtopology_id, sub)
            })
            .collect(),
    }
}

fn tasks(ids: &[TaskIds]) -> Tasks {
    let mut out = Tasks::new();
    for t in ids {
        out.entry(t.subtopology_id.clone())
            .or_default()
            .extend(t.partitions.iter().copied());
    }
    out
}

fn offsets(o: &[TaskOffset]) -> Vec<(TaskId, i64)> {
    o.iter()
        .map(|t| {
            (
                TaskId {
                    subtopology: t.subtopology_id.clone(),
                    partition: t.partition,
                },
                t.offset,
            )
        })
        .collect()
}

fn task_ids(tasks: &Tasks) -> Vec<TaskIds> {
    tasks
        .iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(s, ps)| TaskIds {
            subtopology_id: s.clone(),
            partitions: ps.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn response(
    r: HeartbeatResult,
    settings: &sg::StreamsGroupSettings,
    version: i16,
) -> StreamsGroupHeartbeatResponse {
    if r.member_epoch == LEAVE_EPOCH {
        // Kafka answers a leave with the member id and epoch -1 alone; every other field
        // keeps its default.
        return StreamsGroupHeartbeatResponse {
            member_id: r.member_id,
            member_epoch: r.member_epoch,
            ..Default::default()
        };
    }
    // Kafka 4.4 fills only the int64 lag (v1+); v0's int32 field stays at its default 0.
    let lag = if version == 0 {
        -1
    } else {
        settings.acceptable_recovery_lag
    };
    StreamsGroupHeartbeatResponse {
        member_id: r.member_id,
        member_epoch: r.member_epoch,
        heartbeat_interval_ms: settings.heartbeat_interval_ms,
        acceptable_recovery_lag: lag,
        task_offset_interval_ms: settings.task_offset_interval_ms,
        status: Some(
            r.status
                .into_iter()
                .map(|s| wh::Status {
                    status_code: s.code as i8,
                    status_detail: s.detail,
                    ..Default::default()
                })
                .collect(),
        ),
        active_tasks: r.tasks.as_ref().map(|t| task_ids(&t.active)),
        standby_tasks: r.tasks.as_ref().map(|t| task_ids(&t.standby)),
        warmup_tasks: r.tasks.as_ref().map(|t| task_ids(&t.warmup)),
        endpoint_information_epoch: r.endpoint_epoch,
        partitions_by_user_endpoint: r.endpoints.map(|all| {
            all.into_iter()
                .map(|e| wh::EndpointToPartitions {
                    user_endpoint: wh::Endpoint {
                        host: e.endpoint.host,
                        port: e.endpoint.port,
                        ..Default::default()
                    },
                    active_partitions: topic_partitions(&e.active),
                    standby_partitions: topic_partitions(&e.standby),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

fn topic_partitions(
    tps: &BTreeMap<String, std::collections::BTreeSet<i32>>,
) -> Vec<wh::TopicPartition> {
    tps.iter()
        .map(|(t, ps)| wh::TopicPartition {
            topic: t.clone(),
            partitions: ps.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

/// Wire key-value pairs as a map (a repeated key keeps its last value).
fn key_value_map(pairs: Vec<KeyValue>) -> BTreeMap<String, String> {
    pairs.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

/// A map as wire key-value pairs, in key order.
fn key_values(map: &BTreeMap<String, String>) -> Vec<KeyValue> {
    map.iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: v.clone(),
            ..Default::default()
        })
        .collect()
}

fn described_group(d: &sg::DescribedGroup) -> wd::DescribedGroup {
    let info = |t: &sg::InternalTopic| TopicInfo {
        name: t.name.clone(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        topic_configs: key_values(&t.configs),
        ..Default::default()
    };
    let assignment = |t: &TaskSet| wd::Assignment {
        active_tasks: task_ids(&t.active),
        standby_tasks: task_ids(&t.standby),
        warmup_tasks: task_ids(&t.warmup),
        ..Default::default()
    };
    let offsets = |o: &BTreeMap<TaskId, i64>| {
        o.iter()
            .map(|(t, off)| TaskOffset {
                subtopology_id: t.subtopology.clone(),
                partition: t.partition,
                offset: *off,
                ..Default::default()
            })
            .collect()
    };
    wd::DescribedGroup {
        group_id: d.group_id.clone(),
        group_state: d.state.to_string(),
        group_epoch: d.epoch,
        assignment_epoch: d.assignment_epoch,
        topology: Some(wd::Topology {
            epoch: d.topology.epoch,
            subtopologies: Some(
                d.topology
                    .subtopologies
                    .values()
                    .map(|s| wd::Subtopology {
                        subtopology_id: s.id.clone(),
                        source_topics: s.source_topics.clone(),
                        repartition_sink_topics: s.repartition_sink_topics.clone(),
                        state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
                        repartition_source_topics: s
                            .repartition_source_topics
                            .iter()
                            .map(info)
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        members: d
            .members
            .iter()
            .map(|m| wd::Member {
                member_id: m.member.id.clone(),
                member_epoch: m.member.epoch,
                instance_id: m.member.instance_id.clone(),
                rack_id: m.member.rack_id.clone(),
                client_id: m.member.client_id.clone(),
                client_host: m.member.client_host.clone(),
                topology_epoch: m.member.topology_epoch,
                process_id: m.member.process_id.clone(),
                user_endpoint: m.member.user_endpoint.as_ref().map(|e| wh::Endpoint {
                    host: e.host.clone(),
                    port: e.port,
                    ..Default::default()
                }),
                client_tags: key_values(&m.member.client_tags),
                task_offsets: offsets(&m.task_offsets),
                task_end_offsets: offsets(&m.task_end_offsets),
                assignment: assignment(&m.assignment),
                target_assignment: assignment(&m.target),
                is_classic: false,
                ..Default::default()
            })
            .collect(),
        assignor_name: Some(ASSIGNOR_NAME.to_string()),
        ..Default::default()
    }
}
