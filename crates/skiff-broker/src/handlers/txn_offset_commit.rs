//! TxnOffsetCommit: offsets committed inside a transaction. Checked like Kafka does (the
//! producer is the transactional id's current one, the member and generation when given,
//! known partitions, metadata size), written to the group's `__consumer_offsets` partition
//! as a transactional batch of the producer (fsynced before the answer), and held by the
//! group coordinator as pending until EndTxn's marker commits or aborts them.

use std::sync::Arc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::ResponseError;
use skiff_records::{BatchBuilder, Compression};

use crate::broker::Broker;
use crate::coordinator::records::{encode_key, encode_offset_value, Key, OffsetValue};
use crate::coordinator::txn_offsets::RawRecord;
use crate::dispatch::{blocking, Reply};

pub fn handle(broker: &Arc<Broker>, version: i16, request: TxnOffsetCommitRequest) -> Reply {
    let broker = broker.clone();
    Reply::Later(Box::pin(async move {
        let answered = blocking(move || answer(&broker, version, request)).await;
        ResponseKind::TxnOffsetCommit(answered.unwrap_or_else(|e| {
            tracing::error!(error = %e, "TxnOffsetCommit task failed");
            TxnOffsetCommitResponse::default()
        }))
    }))
}

fn answer(
    broker: &Broker,
    version: i16,
    request: TxnOffsetCommitRequest,
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
            let error = if known
                .as_ref()
                .is_none_or(|k| k.partition(p.partition_index).is_none())
            {
                Some(ResponseError::UnknownTopicOrPartition)
            } else if metadata.len() > max_metadata {
                Some(ResponseError::OffsetMetadataTooLarge)
            } else {
                None
            };
            if error.is_none() {
                slots.push((ti, partitions.len()));
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
                    .with_error_code(error.map_or(0, |e| e.code())),
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
    let result = (|| -> Result<(), ResponseError> {
        broker.txn.check_producer(
            &request.transactional_id.0,
            request.producer_id.0,
            request.producer_epoch,
        )?;
        broker.coordinator.check_txn_commit(
            &group,
            &member,
            instance.as_deref(),
            request.generation_id,
        )?;
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
        for (ti, pi) in slots {
            if let Some(p) = topics
                .get_mut(ti)
                .and_then(|t: &mut TxnOffsetCommitResponseTopic| t.partitions.get_mut(pi))
            {
                p.error_code = e.code();
            }
        }
    }
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// Appends the offsets as one transactional batch of the producer and fsyncs it.
fn write(
    broker: &Broker,
    group: &str,
    producer_id: i64,
    epoch: i16,
    recs: &[RawRecord],
    now: i64,
) -> Result<(), ResponseError> {
    let partition = broker
        .coordinator
        .offsets_partition(group)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(producer_id)
        .producer_epoch(epoch)
        .transactional(true);
    for (k, v) in recs {
        b.push(now, Some(k), v.as_deref(), &[]);
    }
    let batch = b.build().map_err(|_| ResponseError::UnknownServerError)?;
    let stored = partition
        .log
        .append_internal(&batch, crate::handlers::LEADER_EPOCH, now)
        .and_then(|_| partition.log.flush());
    if let Err(e) = stored {
        tracing::error!(group, error = %e, "writing transactional offsets failed");
        return Err(crate::errors::log_error_code(&e));
    }
    Ok(())
}
