//! AddPartitionsToTxn: v0-3 (one transaction, from producers) and v4-5 (KIP-890 batched form:
//! several transactions, each possibly `verify_only`). Partitions of unknown topics fail with
//! UNKNOWN_TOPIC_OR_PARTITION and the rest of that transaction with OPERATION_NOT_ATTEMPTED,
//! as in Kafka; otherwise the coordinator's answer applies to every partition, except that a
//! `verify_only` check answers per partition (TRANSACTION_ABORTABLE for one outside the
//! ongoing transaction, the same check the produce path makes: `txn/verify.rs`).
//!
//! With an authorizer (Kafka 4's KafkaApis): v0-3 need TRANSACTIONAL_ID WRITE (else every
//! partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and TOPIC WRITE per topic (else
//! its partitions answer TOPIC_AUTHORIZATION_FAILED, before the existence check, and the
//! rest of the transaction OPERATION_NOT_ATTEMPTED); v4+ (broker to broker) need CLUSTER
//! CLUSTER_ACTION, else CLUSTER_AUTHORIZATION_FAILED for the request.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ResponseKind, TransactionalId,
};

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: AddPartitionsToTxnRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let authz = ctx.authz();
    if version >= 4 && !authz.allows_cluster(AclOperation::ClusterAction) {
        let denied = BrokerError::Unauthorized(ResourceType::Cluster);
        return Reply::Respond(ResponseKind::AddPartitionsToTxn(
            AddPartitionsToTxnResponse::default().with_error_code(code(version, &denied)),
        ));
    }
    Reply::Later(Box::pin(async move {
        let answered = blocking(move || answer(&broker, version, request, &authz)).await;
        // A failed task: the request as a whole (the response's top-level code).
        ResponseKind::AddPartitionsToTxn(answered.unwrap_or_else(|e| {
            AddPartitionsToTxnResponse::default().with_error_code(code(version, &e))
        }))
    }))
}

fn code(version: i16, err: &BrokerError) -> i16 {
    kafka_error(ApiKey::AddPartitionsToTxn, version, err).code()
}

fn answer(
    broker: &Broker,
    version: i16,
    request: AddPartitionsToTxnRequest,
    authz: &Authz,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let results = one(
            broker,
            Some(authz),
            version,
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
                    None,
                    version,
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

/// `((topic, partition), error code)`.
type PartitionCode = ((String, i32), i16);

/// The per-partition results of one transaction; `authz`: the producer-side checks (v0-3).
#[allow(clippy::too_many_arguments)]
fn one(
    broker: &Broker,
    authz: Option<&Authz>,
    version: i16,
    transactional_id: &TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &[AddPartitionsToTxnTopic],
) -> Vec<AddPartitionsToTxnTopicResult> {
    if authz.is_some_and(|a| {
        !a.allows(
            AclOperation::Write,
            ResourceType::TransactionalId,
            &transactional_id.0,
        )
    }) {
        let denied = code(
            version,
            &BrokerError::Unauthorized(ResourceType::TransactionalId),
        );
        return topics
            .iter()
            .map(|t| {
                AddPartitionsToTxnTopicResult::default()
                    .with_name(t.name.clone())
                    .with_results_by_partition(
                        t.partitions
                            .iter()
                            .map(|&p| {
                                AddPartitionsToTxnPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_partition_error_code(denied)
                            })
                            .collect(),
                    )
            })
            .collect();
    }
    let mut wanted = Vec::new();
    let mut unknown = Vec::new();
    let mut denied = Vec::new();
    for t in topics {
        let topic = broker.topics.get(&t.name.0);
        let writable =
            authz.is_none_or(|a| a.allows(AclOperation::Write, ResourceType::Topic, &t.name.0));
        for &p in &t.partitions {
            let known = topic.as_ref().is_some_and(|k| k.partition(p).is_some());
            if !writable {
                denied.push((t.name.0.to_string(), p));
            } else if known {
                wanted.push((t.name.0.to_string(), p));
            } else {
                unknown.push((t.name.0.to_string(), p));
            }
        }
    }
    // Per partition: an error code for the partitions of known topics.
    let outcome: Result<Vec<PartitionCode>, BrokerError> =
        if !unknown.is_empty() || !denied.is_empty() {
            // Kafka does not try the rest of a transaction with an unknown partition.
            Err(BrokerError::NotAttempted)
        } else if transactional_id.0.is_empty() {
            Err(BrokerError::InvalidRequest(
                "empty transactional id".to_string(),
            ))
        } else if verify_only {
            // KIP-890 (Kafka's handleVerifyPartitionsInTransaction): a partition outside the
            // ongoing transaction is TRANSACTION_ABORTABLE; the others pass.
            broker
                .txn
                .verify_partitions(&transactional_id.0, producer_id, epoch, &wanted)
                .map(|verdicts| {
                    wanted
                        .iter()
                        .cloned()
                        .zip(verdicts)
                        .map(|(p, ok)| {
                            let code = if ok {
                                0
                            } else {
                                code(version, &BrokerError::NotInTransaction)
                            };
                            (p, code)
                        })
                        .collect()
                })
                .map_err(BrokerError::Coordinator)
        } else {
            broker
                .txn
                .add_partitions(&transactional_id.0, producer_id, epoch, &wanted)
                .map(|()| wanted.iter().map(|p| (p.clone(), 0)).collect())
                .map_err(BrokerError::Coordinator)
        };
    topics
        .iter()
        .map(|t| {
            let results = t
                .partitions
                .iter()
                .map(|&p| {
                    let key = (t.name.0.to_string(), p);
                    let code = if denied.contains(&key) {
                        code(version, &BrokerError::Unauthorized(ResourceType::Topic))
                    } else if unknown.contains(&key) {
                        code(
                            version,
                            &BrokerError::UnknownPartition {
                                topic: key.0.clone(),
                                partition: p,
                            },
                        )
                    } else {
                        match &outcome {
                            Err(e) => code(version, e),
                            Ok(codes) => {
                                codes.iter().find(|(k, _)| *k == key).map_or(0, |(_, c)| *c)
                            }
                        }
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
