//! OffsetForLeaderEpoch: every partition has had one leader epoch (0), so the end offset of
//! epoch 0 is the log end offset; later epochs are unknown. Reads only the log's published
//! snapshot (no disk, no append lock), so it runs on the worker.
//!
//! With an authorizer: each topic needs TOPIC DESCRIBE, else TOPIC_AUTHORIZATION_FAILED.

use super::LEADER_EPOCH;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ResponseKind,
};

const UNDEFINED: i64 = -1;

pub async fn handle(ctx: &RequestContext, request: OffsetForLeaderEpochRequest) -> Reply {
    let broker = &ctx.broker;
    let authz = ctx.authz();
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let refused = !authz.allows(AclOperation::Describe, ResourceType::Topic, &t.topic.0);
            let topic = broker.topics.get(&t.topic.0);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let result = EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(UNDEFINED);
                    if refused {
                        let e = BrokerError::Unauthorized(ResourceType::Topic);
                        return result.with_error_code(ctx.code(&e));
                    }
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(p.partition))
                    else {
                        return result.with_error_code(ctx.code(&BrokerError::UnknownPartition {
                            topic: t.topic.0.to_string(),
                            partition: p.partition,
                        }));
                    };
                    if p.current_leader_epoch > LEADER_EPOCH {
                        let newer = BrokerError::UnknownLeaderEpoch(p.current_leader_epoch);
                        return result.with_error_code(ctx.code(&newer));
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
