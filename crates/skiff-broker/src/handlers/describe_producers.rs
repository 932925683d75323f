//! DescribeProducers v0: the producer state each requested partition keeps (idempotent and
//! transactional producers: epoch, last sequence and timestamp, coordinator epoch, the first
//! offset of the open transaction). Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.

use std::sync::Arc;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::ResponseError;

use crate::broker::Broker;

pub fn handle(
    broker: &Arc<Broker>,
    _version: i16,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let topic = broker.topics.get(&t.name.0);
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&i| {
                    let response = PartitionResponse::default().with_partition_index(i);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(i)) else {
                        return response
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
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
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}
