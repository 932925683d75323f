//! AddPartitionsToTxn: v0-3 (one transaction, from producers) and v4-5 (KIP-890 batched form:
//! several transactions, each possibly `verify_only`). Partitions of unknown topics fail with
//! UNKNOWN_TOPIC_OR_PARTITION and the rest of that transaction with OPERATION_NOT_ATTEMPTED,
//! as in Kafka; otherwise the coordinator's answer applies to every partition.

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ResponseKind, TransactionalId,
};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};

pub fn handle(broker: &Arc<Broker>, version: i16, request: AddPartitionsToTxnRequest) -> Reply {
    let broker = broker.clone();
    Reply::Later(Box::pin(async move {
        let answered = blocking(move || answer(&broker, version, request)).await;
        ResponseKind::AddPartitionsToTxn(answered.unwrap_or_else(|e| {
            tracing::error!(error = %e, "AddPartitionsToTxn task failed");
            AddPartitionsToTxnResponse::default()
                .with_error_code(ResponseError::UnknownServerError.code())
        }))
    }))
}

fn answer(
    broker: &Broker,
    version: i16,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let results = one(
            broker,
            &request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id.0,
            request.v3_and_below_producer_epoch,
            false,
            &request.v3_and_below_topics,
        );
        return AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results);
    }
    let results = request
        .transactions
        .iter()
        .map(|t| {
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id.clone())
                .with_topic_results(one(
                    broker,
                    &t.transactional_id,
                    t.producer_id.0,
                    t.producer_epoch,
                    t.verify_only,
                    &t.topics,
                ))
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// The per-partition results of one transaction.
fn one(
    broker: &Broker,
    transactional_id: &TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &[AddPartitionsToTxnTopic],
) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut wanted = Vec::new();
    let mut unknown = Vec::new();
    for t in topics {
        let topic = broker.topics.get(&t.name.0);
        for &p in &t.partitions {
            let known = topic.as_ref().is_some_and(|k| k.partition(p).is_some());
            if known {
                wanted.push((t.name.0.to_string(), p));
            } else {
                unknown.push((t.name.0.to_string(), p));
            }
        }
    }
    let outcome: Result<(), ResponseError> = if !unknown.is_empty() {
        Err(ResponseError::OperationNotAttempted)
    } else if transactional_id.0.is_empty() {
        Err(ResponseError::InvalidRequest)
    } else if verify_only {
        verify(broker, &transactional_id.0, producer_id, epoch, &wanted)
    } else {
        broker
            .txn
            .add_partitions(&transactional_id.0, producer_id, epoch, &wanted)
    };
    topics
        .iter()
        .map(|t| {
            let results = t
                .partitions
                .iter()
                .map(|&p| {
                    let key = (t.name.0.to_string(), p);
                    let code = if unknown.contains(&key) {
                        ResponseError::UnknownTopicOrPartition.code()
                    } else {
                        outcome.err().map_or(0, |e| e.code())
                    };
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(p)
                        .with_partition_error_code(code)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(results)
        })
        .collect()
}

/// KIP-890 verification: the producer is current and every partition is in its ongoing
/// transaction (else INVALID_TXN_STATE).
fn verify(
    broker: &Broker,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    wanted: &[(String, i32)],
) -> Result<(), ResponseError> {
    broker
        .txn
        .check_producer(transactional_id, producer_id, epoch)?;
    let m = broker
        .txn
        .describe(transactional_id)?
        .ok_or(ResponseError::InvalidProducerIdMapping)?;
    if m.state == crate::txn::state::TxnState::Ongoing
        && wanted.iter().all(|p| m.partitions.contains(p))
    {
        Ok(())
    } else {
        Err(ResponseError::InvalidTxnState)
    }
}
