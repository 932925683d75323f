//! CreatePartitions: grow a topic; partitions are never removed.

use std::sync::Arc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, ResponseKind};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::topic_error_code;
use crate::topics::TopicError;

pub async fn handle(
    broker: &Arc<Broker>,
    _version: i16,
    request: CreatePartitionsRequest,
) -> Reply {
    let b = broker.clone();
    let validate_only = request.validate_only;
    let answered = blocking(move || {
        let node = b.node_id();
        let results = request
            .topics
            .into_iter()
            .map(|t| {
                let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
                let fail = |error: ResponseError, message: String| {
                    result
                        .clone()
                        .with_error_code(error.code())
                        .with_error_message(Some(str_bytes(&message)))
                };
                if let Some(assignments) = &t.assignments {
                    if assignments
                        .iter()
                        .any(|a| a.broker_ids.len() != 1 || a.broker_ids[0].0 != node)
                    {
                        return fail(
                            ResponseError::InvalidReplicaAssignment,
                            format!(
                                "Every new partition must be assigned to the single broker {node}."
                            ),
                        );
                    }
                }
                match b.topics.add_partitions(&t.name.0, t.count, validate_only) {
                    Ok(()) => result,
                    // Kafka gives an unknown topic its code and no message.
                    Err(e @ TopicError::Unknown(_)) => {
                        result.with_error_code(topic_error_code(&e).code())
                    }
                    Err(e) => fail(topic_error_code(&e), e.to_string()),
                }
            })
            .collect();
        CreatePartitionsResponse::default().with_results(results)
    })
    .await;
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::CreatePartitions(response)),
        Err(e) => Reply::Close(e),
    }
}
