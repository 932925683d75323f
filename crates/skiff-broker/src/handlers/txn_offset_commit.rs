//! TxnOffsetCommit: offsets committed inside a transaction. Checked like Kafka does (the
//! producer is the transactional id's current one — from v5, transaction version 2, the
//! group's offsets partition is also added to the transaction here, as AddOffsetsToTxn did
//! before — the member and generation when given, where a consumer or streams group member at
//! an older member epoch must have been assigned every partition of the commit by then
//! (KIP-1251), known partitions, metadata size), written to the group's `__consumer_offsets` partition
//! as a transactional batch of the producer (fsynced before the answer), and held by the
//! group coordinator as pending until EndTxn's marker commits or aborts them.
//!
//! With an authorizer (Kafka 4's KafkaApis): TRANSACTIONAL_ID WRITE, then GROUP READ, else
//! every partition answers TRANSACTIONAL_ID / GROUP _AUTHORIZATION_FAILED; then each topic
//! needs TOPIC READ, else its partitions answer TOPIC_AUTHORIZATION_FAILED (the others are
//! committed).

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::ResponseError;
use skiff_records::{BatchBuilder, Compression};

use std::collections::HashSet;

use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};
use skiff_coordinator::groups::records::{encode_key, encode_offset_value, Key, OffsetValue};
use skiff_coordinator::groups::txn_offsets::RawRecord;
use skiff_coordinator::groups::OFFSETS_TOPIC;

/// The first version that adds the group's offsets partition to the transaction itself
/// (KIP-890 part 2; Kafka's `txnOffsetCommitRequestVersionToTransactionSupportedOperation`).
const IMPLICIT_ADD_VERSION: i16 = 5;

pub async fn handle(ctx: &RequestContext, request: TxnOffsetCommitRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    // What a failed task answers: every requested partition carries the error.
    let wanted: Vec<(kafka_protocol::messages::TopicName, Vec<i32>)> = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
            (t.name.clone(), partitions)
        })
        .collect();
    let authz = ctx.authz();
    let denied = if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &request.transactional_id.0,
    ) {
        Some(ResourceType::TransactionalId)
    } else if !authz.allows(AclOperation::Read, ResourceType::Group, &request.group_id.0) {
        Some(ResourceType::Group)
    } else {
        None
    };
    let unreadable: HashSet<String> = request
        .topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|n| !authz.allows(AclOperation::Read, ResourceType::Topic, n))
        .collect();
    Reply::Later(Box::pin(async move {
        let answered = match denied {
            Some(rt) => Err(BrokerError::Unauthorized(rt)),
            None => blocking(move || answer(&broker, version, request, &unreadable)).await,
        };
        ResponseKind::TxnOffsetCommit(answered.unwrap_or_else(|e| {
            let code = code(version, &e);
            let topics = wanted
                .into_iter()
                .map(|(name, partitions)| {
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(name)
                        .with_partitions(
                            partitions
                                .into_iter()
                                .map(|p| {
                                    TxnOffsetCommitResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_error_code(code)
                                })
                                .collect(),
                        )
                })
                .collect();
            TxnOffsetCommitResponse::default().with_topics(topics)
        }))
    }))
}

fn code(version: i16, err: &BrokerError) -> i16 {
    kafka_error(ApiKey::TxnOffsetCommit, version, err).code()
}

fn answer(
    broker: &Broker,
    version: i16,
    request: TxnOffsetCommitRequest,
    unreadable: &HashSet<String>,
) -> TxnOffsetCommitResponse {
    let max_metadata = broker.coordinator.settings().metadata_max_bytes;
    let now = broker.clock.now_ms();
    let group = request.group_id.0.to_string();
    let mut topics = Vec::new();
    let mut recs: Vec<RawRecord> = Vec::new();
    let mut slots = Vec::new();
    for (ti, t) in request.topics.iter().enumerate() {
        let known = broker.topics.get(&t.name.0);
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let metadata = p.committed_metadata.as_deref().unwrap_or("").to_string();
            let error = if unreadable.contains(&*t.name.0) {
                Some(BrokerError::Unauthorized(ResourceType::Topic))
            } else if known
                .as_ref()
                .is_none_or(|k| k.partition(p.partition_index).is_none())
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
                slots.push((
                    ti,
                    partitions.len(),
                    t.name.0.to_string(),
                    p.partition_index,
                ));
                let key = Key::Offset {
                    group: group.clone(),
                    topic: t.name.0.to_string(),
                    partition: p.partition_index,
                };
                let value = OffsetValue {
                    offset: p.committed_offset,
                    leader_epoch: if version >= 2 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata,
                    commit_timestamp: now,
                    expire_timestamp: -1,
                };
                recs.push((encode_key(&key), Some(encode_offset_value(&value))));
            }
            partitions.push(
                TxnOffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error.map_or(0, |e| code(version, &e))),
            );
        }
        topics.push(
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    let member = request.member_id.to_string();
    let instance = request.group_instance_id.as_ref().map(|s| s.to_string());
    let result = (|| -> Result<(), BrokerError> {
        if version >= IMPLICIT_ADD_VERSION {
            // Transaction version 2: no AddOffsetsToTxn came first; the group's offsets
            // partition joins the transaction here (checking the producer as it does).
            let partition = broker.coordinator.partition_for(&group);
            broker.txn.add_partitions_implicitly(
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
                &[(OFFSETS_TOPIC.to_string(), partition)],
            )?;
        } else {
            broker.txn.check_producer(
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
            )?;
        }
        broker
            .coordinator
            .check_txn_commit(
                &group,
                &member,
                instance.as_deref(),
                request.generation_id,
                slots
                    .iter()
                    .map(|(_, _, topic, partition)| (topic.as_str(), *partition)),
            )
            .map_err(|e| BrokerError::Coordinator(member_error_before_v6(version, e)))?;
        if recs.is_empty() {
            return Ok(());
        }
        write(
            broker,
            &group,
            request.producer_id.0,
            request.producer_epoch,
            &recs,
            now,
        )?;
        broker
            .coordinator
            .add_pending_txn_offsets(request.producer_id.0, recs);
        Ok(())
    })();
    if let Err(e) = result {
        for (ti, pi, _, _) in slots {
            if let Some(p) = topics
                .get_mut(ti)
                .and_then(|t: &mut TxnOffsetCommitResponseTopic| t.partitions.get_mut(pi))
            {
                p.error_code = code(version, &e);
            }
        }
    }
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// TxnOffsetCommit before v6 knows neither STALE_MEMBER_EPOCH nor GROUP_ID_NOT_FOUND: Kafka
/// answers ILLEGAL_GENERATION in their place (`TxnOffsetCommitRequest.supports*Error`).
fn member_error_before_v6(version: i16, e: ResponseError) -> ResponseError {
    match e {
        ResponseError::StaleMemberEpoch | ResponseError::GroupIdNotFound if version < 6 => {
            ResponseError::IllegalGeneration
        }
        e => e,
    }
}

/// Appends the offsets as one transactional batch of the producer and fsyncs it.
fn write(
    broker: &Broker,
    group: &str,
    producer_id: i64,
    epoch: i16,
    recs: &[RawRecord],
    now: i64,
) -> Result<(), BrokerError> {
    let partition = broker
        .coordinator
        .offsets_partition(group)
        .ok_or(BrokerError::CoordinatorUnavailable)?;
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(producer_id)
        .producer_epoch(epoch)
        .transactional(true);
    for (k, v) in recs {
        b.push(now, Some(k), v.as_deref(), &[]);
    }
    let batch = b
        .build()
        .map_err(|e| BrokerError::Internal(format!("cannot build the offsets batch: {e}")))?;
    let stored = partition
        .log
        .append_internal(&batch, crate::handlers::LEADER_EPOCH, now)
        .and_then(|_| partition.log.flush());
    if let Err(e) = stored {
        tracing::error!(group, error = %e, "writing transactional offsets failed");
        return Err(BrokerError::Storage(e));
    }
    Ok(())
}
