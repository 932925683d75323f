//! DeleteRecords: move a partition's log start offset forward (offset -1 = high watermark).
//! A compact-only topic refuses with POLICY_VIOLATION, as Kafka does.

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::log_error_code;

pub async fn handle(broker: &Arc<Broker>, _version: i16, request: DeleteRecordsRequest) -> Reply {
    let b = broker.clone();
    let answered = blocking(move || {
        let topics = request
            .topics
            .into_iter()
            .map(|t| {
                let topic = b.topics.get(&t.name.0);
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let result = DeleteRecordsPartitionResult::default()
                            .with_partition_index(p.partition_index)
                            .with_low_watermark(-1);
                        let Some(partition) =
                            topic.as_ref().and_then(|t| t.partition(p.partition_index))
                        else {
                            return result
                                .with_error_code(ResponseError::UnknownTopicOrPartition.code());
                        };
                        let policy = partition.log.config().cleanup_policy;
                        if policy.compact && !policy.delete {
                            return result.with_error_code(ResponseError::PolicyViolation.code());
                        }
                        match partition.log.delete_records_before(p.offset) {
                            Ok(low) => result.with_low_watermark(low),
                            Err(e) => result.with_error_code(log_error_code(&e).code()),
                        }
                    })
                    .collect();
                DeleteRecordsTopicResult::default()
                    .with_name(t.name)
                    .with_partitions(partitions)
            })
            .collect();
        DeleteRecordsResponse::default().with_topics(topics)
    })
    .await;
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::DeleteRecords(response)),
        Err(e) => Reply::Close(e),
    }
}
