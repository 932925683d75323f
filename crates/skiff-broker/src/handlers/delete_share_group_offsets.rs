//! DeleteShareGroupOffsets v0 (KIP-932): forget an empty share group's state for whole topics
//! (`kafka-share-groups --delete-offsets`); its next consumer starts from
//! `share.auto.offset.reset` again. The tombstones are durable before the answer.
//!
//! As Kafka answers: an empty group id is INVALID_GROUP_ID; the group needs GROUP DELETE
//! (GROUP_AUTHORIZATION_FAILED); a group that is not a share group is GROUP_ID_NOT_FOUND, one
//! with members NON_EMPTY_GROUP. Then per topic: TOPIC READ (TOPIC_AUTHORIZATION_FAILED); a
//! topic that does not exist, or that the group has no state for, is
//! UNKNOWN_TOPIC_OR_PARTITION. Refused topics are listed first, as Kafka lists them.

use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic as TopicAnswer;
use kafka_protocol::messages::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, ResponseKind,
};
use kafka_protocol::ResponseError;

use super::alter_share_group_offsets::group_error;
use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: DeleteShareGroupOffsetsRequest) -> Reply {
    Reply::Respond(ResponseKind::DeleteShareGroupOffsets(
        answer(ctx, request).await,
    ))
}

async fn answer(
    ctx: &RequestContext,
    request: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let group = request.group_id.0.to_string();
    let fail = |e: BrokerError| {
        let (code, message) = group_error(ctx, e);
        DeleteShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(message.map(|m| str_bytes(&m)))
    };
    if group.is_empty() {
        return fail(BrokerError::InvalidGroupId(String::new()));
    }
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Delete, ResourceType::Group, &group) {
        return fail(BrokerError::Unauthorized(ResourceType::Group));
    }
    let broker = ctx.broker.clone();
    if let Err(e) = broker.coordinator.share_offsets_writable(&group, false) {
        return fail(BrokerError::Coordinator(e));
    }
    let refused = |name, code: i16, message: &str| {
        TopicAnswer::default()
            .with_topic_name(name)
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message)))
    };
    let mut errors = Vec::new();
    let mut wanted = Vec::new();
    for t in request.topics {
        if !authz.allows(AclOperation::Read, ResourceType::Topic, &t.topic_name.0) {
            let code = ctx.code(&BrokerError::Unauthorized(ResourceType::Topic));
            errors.push(refused(t.topic_name, code, "Topic authorization failed."));
            continue;
        }
        match broker.topics.get(&t.topic_name.0) {
            Some(topic) => wanted.push((t.topic_name, topic.id)),
            None => errors.push(refused(
                t.topic_name,
                ResponseError::UnknownTopicOrPartition.code(),
                "This server does not host this topic-partition.",
            )),
        }
    }
    let share = broker.share.clone();
    let gid = group.clone();
    let ids: Vec<uuid::Uuid> = wanted.iter().map(|(_, id)| *id).collect();
    let deleted = blocking(move || {
        ids.into_iter()
            .map(|id| share.delete_topic_state(&gid, id))
            .collect::<Vec<_>>()
    })
    .await;
    let deleted = match deleted {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let mut answers = errors;
    let mut pending = crate::share::manager::Pending::default();
    for ((name, id), (written, had_state)) in wanted.into_iter().zip(deleted) {
        pending.extend(written);
        answers.push(if had_state {
            TopicAnswer::default()
                .with_topic_name(name)
                .with_topic_id(id)
        } else {
            refused(
                name,
                ResponseError::UnknownTopicOrPartition.code(),
                "There is no offset information to delete.",
            )
        });
    }
    if let Err(e) = broker.share.wait_durable(pending).await {
        return fail(e);
    }
    DeleteShareGroupOffsetsResponse::default().with_responses(answers)
}
