//! OffsetCommit: validate the member and generation (a consumer or streams group member at an
//! older member epoch must have been assigned every partition of the commit by then,
//! KIP-1251), append the offsets to `__consumer_offsets`, and answer after the fsync that
//! covers them (acks=all semantics).
//!
//! With an authorizer (Kafka 4's KafkaApis): GROUP READ, else every partition answers
//! GROUP_AUTHORIZATION_FAILED; then each topic needs TOPIC READ, else its partitions answer
//! TOPIC_AUTHORIZATION_FAILED (before the existence check).

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetCommitRequest, OffsetCommitResponse, ResponseKind};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};
use skiff_coordinator::groups::{CommitEntry, OffsetCommit};

pub async fn handle(ctx: &RequestContext, request: OffsetCommitRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let max_metadata = broker.coordinator.settings().metadata_max_bytes;
    let mut topics = Vec::new();
    let mut entries = Vec::new();
    // (topic slot, partition slot) of each entry, to fill in the group-level result.
    let mut slots = Vec::new();
    // v2-4 may ask for a retention other than the broker's (-1 means the broker default).
    let expire_timestamp = (version <= 4 && request.retention_time_ms >= 0).then(|| {
        broker
            .clock
            .now_ms()
            .saturating_add(request.retention_time_ms)
    });
    let authz = ctx.authz();
    let group_denied = !authz.allows(AclOperation::Read, ResourceType::Group, &request.group_id.0);
    for (ti, t) in request.topics.iter().enumerate() {
        let known = broker.topics.get(&t.name.0);
        let topic_denied = !authz.allows(AclOperation::Read, ResourceType::Topic, &t.name.0);
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let metadata = p.committed_metadata.as_deref().unwrap_or("").to_string();
            let error = if group_denied {
                Some(BrokerError::Unauthorized(ResourceType::Group))
            } else if topic_denied {
                Some(BrokerError::Unauthorized(ResourceType::Topic))
            } else if known
                .as_ref()
                .is_none_or(|k| p.partition_index < 0 || p.partition_index >= k.partition_count())
            {
                Some(BrokerError::UnknownPartition {
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                })
            } else if metadata.len() > max_metadata {
                Some(BrokerError::OffsetMetadataTooLarge {
                    len: metadata.len(),
                    max: max_metadata,
                })
            } else {
                None
            };
            if error.is_none() {
                slots.push((ti, partitions.len()));
                entries.push(CommitEntry {
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if version >= 6 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata,
                    expire_timestamp,
                });
            }
            partitions.push(
                OffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error.map_or(0, |e| ctx.code(&e))),
            );
        }
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    if group_denied {
        return Reply::Respond(ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(topics),
        ));
    }
    let broker = broker.clone();
    let group_id = request.group_id.0.to_string();
    let member_id = request.member_id.to_string();
    let instance = request.group_instance_id.as_ref().map(|s| s.to_string());
    let generation = request.generation_id_or_member_epoch;
    Reply::Later(Box::pin(async move {
        let commit = OffsetCommit {
            group_id: &group_id,
            member_id: &member_id,
            instance_id: instance.as_deref(),
            generation,
            version,
        };
        if let Err(e) = broker.coordinator.commit_offsets(commit, entries).await {
            let code =
                kafka_error(ApiKey::OffsetCommit, version, &BrokerError::Coordinator(e)).code();
            for (ti, pi) in slots {
                topics[ti].partitions[pi].error_code = code;
            }
        }
        ResponseKind::OffsetCommit(OffsetCommitResponse::default().with_topics(topics))
    }))
}
