//! DeleteTopics: by name (v0-5) or by name or id (v6+).

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    DeleteTopicsRequest, DeleteTopicsResponse, ResponseKind, TopicName,
};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{str_bytes, topic_name};
use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::topic_error_code;

pub async fn handle(broker: &Arc<Broker>, version: i16, request: DeleteTopicsRequest) -> Reply {
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
    let b = broker.clone();
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
                let Some(topic) = topic else {
                    // Kafka's answer carries the error's standard description.
                    let (error, message) = if name.is_some() {
                        (
                            ResponseError::UnknownTopicOrPartition,
                            "This server does not host this topic-partition.",
                        )
                    } else {
                        (
                            ResponseError::UnknownTopicId,
                            "This server does not host this topic ID.",
                        )
                    };
                    return result
                        .with_error_code(error.code())
                        .with_error_message(Some(str_bytes(message)));
                };
                if !b.config.delete_topic_enable {
                    return result.with_error_code(ResponseError::TopicDeletionDisabled.code());
                }
                match b.delete_topic(&topic.name) {
                    Ok(id) => result
                        .with_name(Some(topic_name(&topic.name)))
                        .with_topic_id(if version >= 6 { id } else { Uuid::nil() }),
                    Err(e) => result
                        .with_error_code(topic_error_code(&e).code())
                        .with_error_message(Some(str_bytes(&e.to_string()))),
                }
            })
            .collect();
        DeleteTopicsResponse::default().with_responses(responses)
    })
    .await;
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::DeleteTopics(response)),
        Err(e) => Reply::Close(e),
    }
}
