//! ListOffsets: earliest, latest, max-timestamp and by-timestamp lookups (time index). With
//! isolation_level read_committed, LATEST is the last stable offset and no lookup answers an
//! offset at or above it.
//!
//! With an authorizer: each topic needs TOPIC DESCRIBE, else its partitions answer
//! TOPIC_AUTHORIZATION_FAILED (Kafka 4's KafkaApis).

use kafka_protocol::messages::list_offsets_request::ListOffsetsTopic;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse, ResponseKind};

use super::LEADER_EPOCH;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};
use crate::partition::Partition;

/// Special timestamps of the ListOffsets protocol.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const EARLIEST_PENDING_UPLOAD: i64 = -5;
/// `isolation_level` of read_committed consumers (v2+).
const READ_COMMITTED: i8 = 1;

pub async fn handle(ctx: &RequestContext, request: ListOffsetsRequest) -> Reply {
    let b = ctx.broker.clone();
    let version = ctx.version();
    let code = move |e: &BrokerError| kafka_error(ApiKey::ListOffsets, version, e).code();
    let read_committed = version >= 2 && request.isolation_level == READ_COMMITTED;
    let topics = request.topics;
    let authz = ctx.authz();
    let denied: std::collections::HashSet<String> = topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|n| !authz.allows(AclOperation::Describe, ResourceType::Topic, n))
        .collect();
    let wanted = topics.clone();
    let answered = blocking(move || {
        let topics = topics
            .into_iter()
            .map(|t| {
                let refused = denied.contains(&*t.name.0);
                let topic = b.topics.get(&t.name.0);
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let response = ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_timestamp(-1)
                            .with_offset(-1)
                            .with_leader_epoch(-1);
                        match topic.as_ref().and_then(|t| t.partition(p.partition_index)) {
                            _ if refused => response.with_error_code(code(
                                &BrokerError::Unauthorized(ResourceType::Topic),
                            )),
                            None => {
                                response.with_error_code(code(&BrokerError::UnknownPartition {
                                    topic: t.name.0.to_string(),
                                    partition: p.partition_index,
                                }))
                            }
                            Some(_) if p.current_leader_epoch > LEADER_EPOCH => response
                                .with_error_code(code(&BrokerError::UnknownLeaderEpoch(
                                    p.current_leader_epoch,
                                ))),
                            Some(partition) => {
                                lookup(&partition, version, p.timestamp, read_committed, response)
                            }
                        }
                    })
                    .collect();
                ListOffsetsTopicResponse::default()
                    .with_name(t.name)
                    .with_partitions(partitions)
            })
            .collect();
        ListOffsetsResponse::default().with_topics(topics)
    })
    .await;
    // A failed task fails every partition.
    let response = answered.unwrap_or_else(|e| failed(wanted, code(&e)));
    Reply::Respond(ResponseKind::ListOffsets(response))
}

fn failed(topics: Vec<ListOffsetsTopic>, code: i16) -> ListOffsetsResponse {
    let topics = topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_timestamp(-1)
                        .with_offset(-1)
                        .with_leader_epoch(-1)
                        .with_error_code(code)
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

fn lookup(
    partition: &Partition,
    version: i16,
    timestamp: i64,
    read_committed: bool,
    response: ListOffsetsPartitionResponse,
) -> ListOffsetsPartitionResponse {
    let log = &partition.log;
    // Kafka's "last fetchable offset": read_committed clients never see past the LSO.
    let fetchable = if read_committed {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    let found: Result<Option<(i64, i64)>, _> = match timestamp {
        LATEST => Ok(Some((fetchable, -1))),
        EARLIEST => Ok(Some((log.log_start_offset(), -1))),
        EARLIEST_LOCAL if version >= 8 => Ok(Some((log.log_start_offset(), -1))),
        // No tiered storage: nothing is pending upload.
        EARLIEST_PENDING_UPLOAD if version >= 9 => Ok(None),
        MAX_TIMESTAMP if version >= 7 => log
            .max_timestamp()
            .map(|m| m.map(|(ts, offset)| (offset, ts))),
        ts if ts < 0 => {
            let unknown = BrokerError::UnknownSpecialTimestamp(ts);
            return response
                .with_error_code(kafka_error(ApiKey::ListOffsets, version, &unknown).code());
        }
        ts => log.offset_for_timestamp(ts),
    };
    let by_time = timestamp >= 0 || timestamp == MAX_TIMESTAMP;
    let found = found.map(|f| f.filter(|(offset, _)| !by_time || *offset < fetchable));
    match found {
        Ok(Some((offset, ts))) => {
            let response = response.with_offset(offset).with_timestamp(ts);
            // v0-3 have no leader epoch field; the encoder refuses a non-default value.
            if version >= 4 {
                response.with_leader_epoch(LEADER_EPOCH)
            } else {
                response
            }
        }
        Ok(None) => response,
        Err(e) => response.with_error_code(
            kafka_error(ApiKey::ListOffsets, version, &BrokerError::Storage(e)).code(),
        ),
    }
}
