//! ListOffsets: earliest, latest, max-timestamp and by-timestamp lookups (time index). With
//! isolation_level read_committed, LATEST is the last stable offset and no lookup answers an
//! offset at or above it.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, ResponseKind};
use kafka_protocol::ResponseError;

use super::LEADER_EPOCH;
use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::log_error_code;
use crate::partition::Partition;

/// Special timestamps of the ListOffsets protocol.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const EARLIEST_PENDING_UPLOAD: i64 = -5;
/// `isolation_level` of read_committed consumers (v2+).
const READ_COMMITTED: i8 = 1;

pub async fn handle(broker: &Arc<Broker>, version: i16, request: ListOffsetsRequest) -> Reply {
    let b = broker.clone();
    let read_committed = version >= 2 && request.isolation_level == READ_COMMITTED;
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
                        let response = ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_timestamp(-1)
                            .with_offset(-1)
                            .with_leader_epoch(-1);
                        match topic.as_ref().and_then(|t| t.partition(p.partition_index)) {
                            None => response
                                .with_error_code(ResponseError::UnknownTopicOrPartition.code()),
                            Some(_) if p.current_leader_epoch > LEADER_EPOCH => {
                                response.with_error_code(ResponseError::UnknownLeaderEpoch.code())
                            }
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
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::ListOffsets(response)),
        Err(e) => Reply::Close(e),
    }
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
            return response.with_error_code(ResponseError::UnsupportedVersion.code());
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
        Err(e) => response.with_error_code(log_error_code(&e).code()),
    }
}
