//! DeleteTopics: by name (v0-5) or by name or id (v6+).
//!
//! With an authorizer (as Kafka 4's controller): a topic needs TOPIC DELETE, else
//! TOPIC_AUTHORIZATION_FAILED — checked before existence for a name; an unknown id stays
//! UNKNOWN_TOPIC_ID.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, ResponseKind, TopicName,
};
use uuid::Uuid;

use super::{str_bytes, topic_name};
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: DeleteTopicsRequest) -> Reply {
    let version = ctx.version();
    let code = move |e: &BrokerError| kafka_error(ApiKey::DeleteTopics, version, e).code();
    let wanted: Vec<(Option<TopicName>, Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), Uuid::nil()))
            .collect()
    };
    let b = ctx.broker.clone();
    let asked = wanted.clone();
    let authz = ctx.authz();
    let mut quota = crate::quotas::MutationQuota::for_request(ctx);
    let answered = blocking(move || {
        let responses = wanted
            .into_iter()
            .map(|(name, id)| {
                let topic = match &name {
                    Some(name) => b.topics.get(&name.0),
                    None => b.topics.get_by_id(id),
                };
                let result = DeletableTopicResult::default()
                    .with_name(name.clone())
                    .with_topic_id(id);
                let checked = name
                    .as_ref()
                    .map(|n| n.0.to_string())
                    .or_else(|| topic.as_ref().map(|t| t.name.clone()));
                if checked
                    .is_some_and(|n| !authz.allows(AclOperation::Delete, ResourceType::Topic, &n))
                {
                    return result
                        .with_error_code(code(&BrokerError::Unauthorized(ResourceType::Topic)))
                        .with_error_message(Some(str_bytes("Topic authorization failed.")));
                }
                let Some(topic) = topic else {
                    // Kafka's answer carries the error's standard description.
                    let (error, message) = match &name {
                        Some(name) => (
                            BrokerError::UnknownTopic(name.0.to_string()),
                            "This server does not host this topic-partition.",
                        ),
                        None => (
                            BrokerError::UnknownTopicId(id),
                            "This server does not host this topic ID.",
                        ),
                    };
                    return result
                        .with_error_code(code(&error))
                        .with_error_message(Some(str_bytes(message)));
                };
                if !b.config.delete_topic_enable {
                    return result.with_error_code(code(&BrokerError::TopicDeletionDisabled));
                }
                // The controller mutation quota counts the topic's partitions (KIP-599).
                if quota.record(topic.partitions().len()).is_err() {
                    let e = BrokerError::ThrottlingQuotaExceeded;
                    return result
                        .with_error_code(code(&e))
                        .with_error_message(Some(str_bytes(&e.to_string())));
                }
                match b.delete_topic(&topic.name) {
                    Ok(id) => result
                        .with_name(Some(topic_name(&topic.name)))
                        .with_topic_id(if version >= 6 { id } else { Uuid::nil() }),
                    Err(e) => {
                        let e = BrokerError::Topic(e);
                        result
                            .with_error_code(code(&e))
                            .with_error_message(Some(str_bytes(&e.to_string())))
                    }
                }
            })
            .collect();
        DeleteTopicsResponse::default()
            .with_responses(responses)
            .with_throttle_time_ms(quota.throttle_ms())
    })
    .await;
    // A failed task fails every topic.
    let response = answered.unwrap_or_else(|e| {
        let responses = asked
            .into_iter()
            .map(|(name, id)| {
                DeletableTopicResult::default()
                    .with_name(name)
                    .with_topic_id(id)
                    .with_error_code(code(&e))
                    .with_error_message(Some(str_bytes(&e.to_string())))
            })
            .collect();
        DeleteTopicsResponse::default().with_responses(responses)
    });
    Reply::Respond(ResponseKind::DeleteTopics(response))
}
