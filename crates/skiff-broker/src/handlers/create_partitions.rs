//! CreatePartitions: grow a topic; partitions are never removed.
//!
//! With an authorizer: a topic needs TOPIC ALTER, else TOPIC_AUTHORIZATION_FAILED (before
//! the existence check, as Kafka 4's controller).

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, ResponseKind};

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;
use crate::topics::TopicError;

pub async fn handle(ctx: &RequestContext, request: CreatePartitionsRequest) -> Reply {
    let b = ctx.broker.clone();
    let validate_only = request.validate_only;
    let topics = request.topics;
    let names: Vec<_> = topics.iter().map(|t| t.name.clone()).collect();
    let authz = ctx.authz();
    let mut quota = crate::quotas::MutationQuota::for_request(ctx);
    let answered = blocking(move || {
        let outcomes = topics
            .into_iter()
            .map(|t| {
                if !authz.allows(AclOperation::Alter, ResourceType::Topic, &t.name.0) {
                    return (t.name, Err(BrokerError::Unauthorized(ResourceType::Topic)));
                }
                grow(&b, t, validate_only, &mut quota)
            })
            .collect::<Vec<_>>();
        (outcomes, quota.throttle_ms())
    })
    .await;
    let (outcomes, throttle_ms) = match answered {
        Ok(outcomes) => outcomes,
        // A failed task fails every topic.
        Err(e) => {
            let message = e.to_string();
            let code = ctx.code(&e);
            let results = names
                .into_iter()
                .map(|name| {
                    CreatePartitionsTopicResult::default()
                        .with_name(name)
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(&message)))
                })
                .collect();
            return respond(results, 0);
        }
    };
    let results = outcomes
        .into_iter()
        .map(|(name, outcome)| {
            let result = CreatePartitionsTopicResult::default().with_name(name);
            match outcome {
                Ok(()) => result,
                // Kafka gives an unknown topic its code and no message.
                Err(
                    e @ (BrokerError::Topic(TopicError::Unknown(_)) | BrokerError::Unauthorized(_)),
                ) => result.with_error_code(ctx.code(&e)),
                Err(e) => result
                    .with_error_code(ctx.code(&e))
                    .with_error_message(Some(str_bytes(&e.to_string()))),
            }
        })
        .collect();
    respond(results, throttle_ms)
}

fn respond(results: Vec<CreatePartitionsTopicResult>, throttle_ms: i32) -> Reply {
    Reply::Respond(ResponseKind::CreatePartitions(
        CreatePartitionsResponse::default()
            .with_results(results)
            .with_throttle_time_ms(throttle_ms),
    ))
}

fn grow(
    broker: &Broker,
    t: CreatePartitionsTopic,
    validate_only: bool,
    quota: &mut crate::quotas::MutationQuota,
) -> (kafka_protocol::messages::TopicName, Result<(), BrokerError>) {
    let node = broker.node_id();
    if let Some(assignments) = &t.assignments {
        if assignments
            .iter()
            .any(|a| a.broker_ids.len() != 1 || a.broker_ids[0].0 != node)
        {
            let refused = BrokerError::InvalidReplicaAssignment(format!(
                "Every new partition must be assigned to the single broker {node}."
            ));
            return (t.name, Err(refused));
        }
    }
    // The controller mutation quota counts the partitions a valid increase adds (KIP-599).
    let current = broker
        .topics
        .get(&t.name.0)
        .map(|topic| topic.partitions().len());
    if let Some(added) = current.and_then(|n| usize::try_from(t.count).ok()?.checked_sub(n)) {
        if added > 0 && quota.record(added).is_err() {
            return (t.name, Err(BrokerError::ThrottlingQuotaExceeded));
        }
    }
    let grown = broker
        .topics
        .add_partitions(&t.name.0, t.count, validate_only)
        .map_err(BrokerError::Topic);
    (t.name, grown)
}
