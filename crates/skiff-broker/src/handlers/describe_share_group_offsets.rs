//! DescribeShareGroupOffsets v0 (KIP-932): each share partition's start offset, as
//! `kafka-share-groups --describe` and Admin's listShareGroupOffsets show it (`share::offsets`).
//!
//! As Kafka answers: a group needs GROUP DESCRIBE (else GROUP_AUTHORIZATION_FAILED for the
//! group); named topics need TOPIC DESCRIBE (else TOPIC_AUTHORIZATION_FAILED on each
//! partition); a named partition without state, or of a topic that does not exist (topic id
//! zero), has start offset -1. Null topics mean every share partition the group has state
//! for, in the topics the requester may DESCRIBE; then a group that is not a share group is
//! GROUP_ID_NOT_FOUND. v1 (with the lag) is not served: kafka-protocol 0.18 has no v1.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup as Group,
    DescribeShareGroupOffsetsResponsePartition as PartitionAnswer,
    DescribeShareGroupOffsetsResponseTopic as TopicAnswer,
};
use kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ResponseKind,
};
use uuid::Uuid;

use super::{str_bytes, topic_name, LEADER_EPOCH};
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

/// Kafka's start offset of a share partition without state.
const UNINITIALIZED: i64 = -1;

pub async fn handle(ctx: &RequestContext, request: DescribeShareGroupOffsetsRequest) -> Reply {
    let mut groups = Vec::with_capacity(request.groups.len());
    for group in request.groups {
        groups.push(describe(ctx, group).await);
    }
    Reply::Respond(ResponseKind::DescribeShareGroupOffsets(
        DescribeShareGroupOffsetsResponse::default().with_groups(groups),
    ))
}

async fn describe(ctx: &RequestContext, request: DescribeShareGroupOffsetsRequestGroup) -> Group {
    let group_id = request.group_id.clone();
    let fail = |e: BrokerError| {
        Group::default()
            .with_group_id(group_id.clone())
            .with_error_code(ctx.code(&e))
    };
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Describe, ResourceType::Group, &group_id.0) {
        return fail(BrokerError::Unauthorized(ResourceType::Group));
    }
    let broker = ctx.broker.clone();
    if request.topics.is_none() && !broker.coordinator.is_share_group(&group_id.0) {
        return fail(BrokerError::GroupNotFound(group_id.0.to_string())).with_error_message(Some(
            str_bytes(&format!("Group {} is not a share group.", group_id.0)),
        ));
    }
    let share = broker.share.clone();
    let gid = group_id.0.to_string();
    let stored = match blocking(move || share.stored_start_offsets(&gid)).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let answer = |partition: i32, stored: Option<i64>| {
        PartitionAnswer::default()
            .with_partition_index(partition)
            .with_start_offset(stored.unwrap_or(UNINITIALIZED))
            .with_leader_epoch(if stored.is_some() { LEADER_EPOCH } else { -1 })
    };
    let mut topics = Vec::new();
    match request.topics {
        Some(wanted) => {
            for t in wanted {
                let topic = broker.topics.get(&t.topic_name.0);
                let allowed =
                    authz.allows(AclOperation::Describe, ResourceType::Topic, &t.topic_name.0);
                let partitions = t
                    .partitions
                    .iter()
                    .map(|&p| {
                        if !allowed {
                            return PartitionAnswer::default()
                                .with_partition_index(p)
                                .with_start_offset(UNINITIALIZED)
                                .with_leader_epoch(-1)
                                .with_error_code(
                                    ctx.code(&BrokerError::Unauthorized(ResourceType::Topic)),
                                );
                        }
                        let offset = topic
                            .as_ref()
                            .and_then(|topic| stored.get(&(topic.id, p)).copied());
                        answer(p, offset)
                    })
                    .collect();
                topics.push(
                    TopicAnswer::default()
                        .with_topic_name(t.topic_name)
                        .with_topic_id(topic.filter(|_| allowed).map_or(Uuid::nil(), |t| t.id))
                        .with_partitions(partitions),
                );
            }
        }
        None => {
            let mut by_topic: BTreeMap<Uuid, Vec<PartitionAnswer>> = BTreeMap::new();
            for ((topic_id, partition), offset) in stored {
                by_topic
                    .entry(topic_id)
                    .or_default()
                    .push(answer(partition, Some(offset)));
            }
            for (topic_id, partitions) in by_topic {
                let Some(topic) = broker.topics.get_by_id(topic_id) else {
                    continue;
                };
                if !authz.allows(AclOperation::Describe, ResourceType::Topic, &topic.name) {
                    continue;
                }
                topics.push(
                    TopicAnswer::default()
                        .with_topic_name(topic_name(&topic.name))
                        .with_topic_id(topic_id)
                        .with_partitions(partitions),
                );
            }
        }
    }
    Group::default().with_group_id(group_id).with_topics(topics)
}
