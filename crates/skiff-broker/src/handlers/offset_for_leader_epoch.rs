//! OffsetForLeaderEpoch: every partition has had one leader epoch (0), so the end offset of
//! epoch 0 is the log end offset; later epochs are unknown.

use std::sync::Arc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ResponseKind,
};
use kafka_protocol::ResponseError;

use super::LEADER_EPOCH;
use crate::broker::Broker;
use crate::dispatch::Reply;

const UNDEFINED: i64 = -1;

pub fn handle(broker: &Arc<Broker>, _version: i16, request: OffsetForLeaderEpochRequest) -> Reply {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let topic = broker.topics.get(&t.topic.0);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let result = EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(UNDEFINED);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(p.partition))
                    else {
                        return result
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
                    };
                    if p.current_leader_epoch > LEADER_EPOCH {
                        return result.with_error_code(ResponseError::UnknownLeaderEpoch.code());
                    }
                    if p.leader_epoch > LEADER_EPOCH || p.leader_epoch < 0 {
                        return result;
                    }
                    result
                        .with_leader_epoch(LEADER_EPOCH)
                        .with_end_offset(partition.log.log_end_offset())
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic)
                .with_partitions(partitions)
        })
        .collect();
    Reply::Respond(ResponseKind::OffsetForLeaderEpoch(
        OffsetForLeaderEpochResponse::default().with_topics(topics),
    ))
}
