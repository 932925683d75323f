//! DeleteRecords: move a partition's log start offset forward (offset -1 = high watermark).
//! A compact-only topic refuses with POLICY_VIOLATION, as Kafka does.
//!
//! With an authorizer: a topic needs TOPIC DELETE, else its partitions answer
//! TOPIC_AUTHORIZATION_FAILED (Kafka 4's KafkaApis).

use kafka_protocol::messages::delete_records_request::DeleteRecordsTopic;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, ResponseKind};

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: DeleteRecordsRequest) -> Reply {
    let b = ctx.broker.clone();
    let topics = request.topics;
    let wanted = topics.clone();
    let authz = ctx.authz();
    let answered = blocking(move || delete(&b, topics, &authz)).await;
    // Each partition answers for itself: a failed task fails every one.
    let results = answered.unwrap_or_else(|e| {
        let code = ctx.code(&e);
        outcomes(wanted, |_, _| Err(code))
    });
    let topics = results
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, outcome)| {
                    let result = DeleteRecordsPartitionResult::default()
                        .with_partition_index(index)
                        .with_low_watermark(-1);
                    match outcome {
                        Ok(Ok(low)) => result.with_low_watermark(low),
                        Ok(Err(e)) => result.with_error_code(ctx.code(&e)),
                        Err(code) => result.with_error_code(code),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    Reply::Respond(ResponseKind::DeleteRecords(
        DeleteRecordsResponse::default().with_topics(topics),
    ))
}

/// Per topic, per partition: the new low watermark or why not (`Err(code)`: already a
/// Kafka code, for a failed task).
type Outcomes = Vec<(
    kafka_protocol::messages::TopicName,
    Vec<(i32, Result<Result<i64, BrokerError>, i16>)>,
)>;

fn outcomes(
    topics: Vec<DeleteRecordsTopic>,
    mut each: impl FnMut(
        &str,
        &kafka_protocol::messages::delete_records_request::DeleteRecordsPartition,
    ) -> Result<Result<i64, BrokerError>, i16>,
) -> Outcomes {
    topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, each(&t.name.0, p)))
                .collect();
            (t.name, partitions)
        })
        .collect()
}

fn delete(broker: &Broker, topics: Vec<DeleteRecordsTopic>, authz: &Authz) -> Outcomes {
    outcomes(topics, |name, p| {
        if !authz.allows(AclOperation::Delete, ResourceType::Topic, name) {
            return Ok(Err(BrokerError::Unauthorized(ResourceType::Topic)));
        }
        let unknown = || BrokerError::UnknownPartition {
            topic: name.to_string(),
            partition: p.partition_index,
        };
        let Some(partition) = broker
            .topics
            .get(name)
            .and_then(|t| t.partition(p.partition_index))
        else {
            return Ok(Err(unknown()));
        };
        let policy = partition.log.config().cleanup_policy;
        if policy.compact && !policy.delete {
            return Ok(Err(BrokerError::PolicyViolation));
        }
        Ok(partition
            .log
            .delete_records_before(p.offset)
            .map_err(BrokerError::Storage))
    })
}
