//! AlterShareGroupOffsets v0 (KIP-932): where an empty share group starts reading each
//! partition (`kafka-share-groups --reset-offsets`). Each named partition gets a fresh share
//! state at the given offset (`share::offsets`), durable before the answer.
//!
//! As Kafka answers: an empty group id is INVALID_GROUP_ID; the group needs GROUP READ
//! (GROUP_AUTHORIZATION_FAILED); the id of a consumer or classic group is GROUP_ID_NOT_FOUND,
//! a share group with members NON_EMPTY_GROUP, and a missing share group is created (empty).
//! Then per partition: TOPIC READ (TOPIC_AUTHORIZATION_FAILED), a topic or partition that does
//! not exist is UNKNOWN_TOPIC_OR_PARTITION.

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition as PartitionAnswer,
    AlterShareGroupOffsetsResponseTopic as TopicAnswer,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, ResponseKind,
};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: AlterShareGroupOffsetsRequest) -> Reply {
    Reply::Respond(ResponseKind::AlterShareGroupOffsets(
        answer(ctx, request).await,
    ))
}

/// A whole-request refusal, with Kafka's message where it has one.
pub(super) fn group_error(ctx: &RequestContext, e: BrokerError) -> (i16, Option<String>) {
    let code = ctx.code(&e);
    let message = match e {
        BrokerError::Coordinator(ResponseError::NonEmptyGroup) => {
            Some("The group is not empty.".to_string())
        }
        BrokerError::Coordinator(ResponseError::GroupIdNotFound) => {
            Some("The group id does not exist.".to_string())
        }
        _ => None,
    };
    (code, message)
}

async fn answer(
    ctx: &RequestContext,
    request: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let group = request.group_id.0.to_string();
    let fail = |e: BrokerError| {
        let (code, message) = group_error(ctx, e);
        AlterShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(message.map(|m| str_bytes(&m)))
    };
    if group.is_empty() {
        return fail(BrokerError::InvalidGroupId(String::new()));
    }
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Read, ResourceType::Group, &group) {
        return fail(BrokerError::Unauthorized(ResourceType::Group));
    }
    let broker = ctx.broker.clone();
    if let Err(e) = broker.coordinator.share_offsets_writable(&group, true) {
        return fail(BrokerError::Coordinator(e));
    }
    let unknown = |p: i32| {
        PartitionAnswer::default()
            .with_partition_index(p)
            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
            .with_error_message(Some(str_bytes(
                "This server does not host this topic-partition.",
            )))
    };
    let mut answers = Vec::with_capacity(request.topics.len());
    let mut starts = Vec::new();
    for t in request.topics {
        let topic = broker.topics.get(&t.topic_name.0);
        let allowed = authz.allows(AclOperation::Read, ResourceType::Topic, &t.topic_name.0);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let index = p.partition_index;
            let answer = match &topic {
                _ if !allowed => PartitionAnswer::default()
                    .with_partition_index(index)
                    .with_error_code(ctx.code(&BrokerError::Unauthorized(ResourceType::Topic))),
                Some(topic) if (0..topic.partition_count()).contains(&index) => {
                    starts.push((topic.id, index, p.start_offset));
                    PartitionAnswer::default().with_partition_index(index)
                }
                _ => unknown(index),
            };
            partitions.push(answer);
        }
        answers.push(
            TopicAnswer::default()
                .with_topic_name(t.topic_name)
                .with_topic_id(
                    topic
                        .filter(|_| allowed)
                        .map_or(uuid::Uuid::nil(), |t| t.id),
                )
                .with_partitions(partitions),
        );
    }
    if !starts.is_empty() {
        let share = broker.share.clone();
        let reset = blocking(move || share.reset_start_offsets(&group, &starts)).await;
        let written = match reset {
            Ok(Ok(pending)) => broker.share.wait_durable(pending).await,
            Ok(Err(e)) | Err(e) => Err(e),
        };
        if let Err(e) = written {
            let code = ctx.code(&e);
            for t in &mut answers {
                for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                    p.error_code = code;
                }
            }
        }
    }
    AlterShareGroupOffsetsResponse::default().with_responses(answers)
}
