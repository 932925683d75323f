//! DescribeProducers v0: the producer state each requested partition keeps (idempotent and
//! transactional producers: epoch, last sequence and timestamp, coordinator epoch, the first
//! offset of the open transaction). Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.
//! With an authorizer a topic needs TOPIC READ, else its partitions answer
//! TOPIC_AUTHORIZATION_FAILED (before the existence check, as Kafka 4's KafkaApis).
//!
//! Producer state is read under the log's append lock, so the reads run on the blocking pool
//! (the rule in [`crate::handlers`]).

use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, DescribeProducersRequest, DescribeProducersResponse, ProducerId, ResponseKind,
};

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: DescribeProducersRequest) -> Reply {
    let b = ctx.broker.clone();
    let version = ctx.version();
    let topics = request.topics;
    let wanted = topics.clone();
    let authz = ctx.authz();
    let answered = blocking(move || describe(&b, version, topics, &authz)).await;
    let topics = answered.unwrap_or_else(|e| failed(version, wanted, &e));
    Reply::Respond(ResponseKind::DescribeProducers(
        DescribeProducersResponse::default().with_topics(topics),
    ))
}

fn describe(
    broker: &Broker,
    version: i16,
    topics: Vec<TopicRequest>,
    authz: &Authz,
) -> Vec<TopicResponse> {
    topics
        .into_iter()
        .map(|t| {
            let readable = authz.allows(AclOperation::Read, ResourceType::Topic, &t.name.0);
            let topic = broker.topics.get(&t.name.0);
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&i| {
                    let response = PartitionResponse::default().with_partition_index(i);
                    if !readable {
                        let denied = BrokerError::Unauthorized(ResourceType::Topic);
                        return response.with_error_code(code(version, &denied));
                    }
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(i)) else {
                        let unknown = BrokerError::UnknownPartition {
                            topic: t.name.0.to_string(),
                            partition: i,
                        };
                        return response.with_error_code(code(version, &unknown));
                    };
                    let producers = partition
                        .log
                        .producer_entries()
                        .into_iter()
                        .map(|e| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(e.producer_id))
                                .with_producer_epoch(i32::from(e.epoch))
                                .with_last_sequence(e.last_seq())
                                .with_last_timestamp(e.last_timestamp)
                                .with_coordinator_epoch(e.coordinator_epoch)
                                .with_current_txn_start_offset(
                                    e.current_txn_first_offset.unwrap_or(-1),
                                )
                        })
                        .collect();
                    response.with_active_producers(producers)
                })
                .collect();
            TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect()
}

/// Every requested partition answers `err` (the reads failed as a whole).
fn failed(version: i16, topics: Vec<TopicRequest>, err: &BrokerError) -> Vec<TopicResponse> {
    topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&i| {
                    PartitionResponse::default()
                        .with_partition_index(i)
                        .with_error_code(code(version, err))
                })
                .collect();
            TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect()
}

fn code(version: i16, err: &BrokerError) -> i16 {
    kafka_error(ApiKey::DescribeProducers, version, err).code()
}
