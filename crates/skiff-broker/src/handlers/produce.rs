//! Produce: validate and append each partition's batch, then answer at once (acks=1), after
//! the fsync that covers it (acks=all, group commit), or not at all (acks=0; on error the
//! connection is closed, as Kafka does).
//!
//! Transactional batches (KIP-890 part 1, `transaction.partition.verification.enable`): the
//! first batch of a transaction on a partition is written only if the in-process transaction
//! coordinator has the partition in the producer's ongoing transaction (`txn/verify.rs`);
//! from Produce v12 (KIP-890 part 2, transaction version 2) the coordinator adds the
//! partition to the transaction instead (`txn/tv2.rs`). Either way the log's verification
//! guard, taken before asking, makes the check and the append atomic against a marker
//! written in between. Non-transactional batches skip all of it.
//!
//! With an authorizer (as Kafka 4's KafkaApis): a transactional id needs TRANSACTIONAL_ID
//! WRITE, else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic
//! needs TOPIC WRITE, else its partitions answer TOPIC_AUTHORIZATION_FAILED (checked before
//! existence when named; a topic id is first resolved). Idempotent producers are checked at
//! InitProducerId, not here (Kafka 4 does the same).
//!
//! Error codes come from [`crate::errors::kafka_error`] (Produce's translation of the
//! coordinator's answers per version lives there); this module decides only which message
//! accompanies each (`message`).

use std::sync::Arc;

use kafka_protocol::messages::produce_request::TopicProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, ResponseKind};
use kafka_protocol::ResponseError;
use skiff_log::{AppendValidation, LogError, VerificationGuard};
use uuid::Uuid;

use super::{str_bytes, LEADER_EPOCH};
use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{quick_or_blocking, Reply};
use crate::errors::{kafka_error, BrokerError};
use crate::partition::Partition;

/// Kafka 4 accepts exactly one record batch per partition in a produce request (v3+).
const ONE_BATCH: &str =
    "Produce requests with version 3+ must contain exactly one record batch per partition";

struct Target {
    topic: usize,
    index: i32,
    partition: Result<Arc<Partition>, BrokerError>,
    records: Option<bytes::Bytes>,
}

/// Largest produce (per partition) appended on the worker thread: a default-size batch of
/// the Java client or librdkafka is far below it.
const QUICK_APPEND_MAX: usize = 1 << 20;

impl Target {
    /// Whether appending this target's records only copies them into the page cache (see
    /// `handlers` on the blocking pool). A target that fails before any append is light.
    fn is_light(&self) -> bool {
        let len = self.records.as_ref().map_or(0, |r| r.len());
        match &self.partition {
            Err(_) => true,
            Ok(p) => len <= QUICK_APPEND_MAX && p.log.append_is_light(len),
        }
    }
}

struct Outcome {
    topic: usize,
    response: PartitionProduceResponse,
    /// The partition and end offset an acks=all reply must wait for.
    durable: Option<(Arc<Partition>, i64)>,
}

/// What the transactional checks of one request need.
struct TxnContext {
    transactional_id: Option<String>,
    /// Kafka refuses a request whose transactional batches come from several producers.
    mixed_producers: bool,
}

pub async fn handle(ctx: &RequestContext, request: ProduceRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let acks = request.acks;
    let transactional_id = request
        .transactional_id
        .as_ref()
        .map(|t| t.0.to_string())
        .filter(|t| !t.is_empty());
    let authz = ctx.authz();
    let txn_denied = transactional_id
        .as_deref()
        .is_some_and(|id| !authz.allows(AclOperation::Write, ResourceType::TransactionalId, id));
    let (mut topics, mut targets) = resolve(broker, version, request.topic_data, &authz);
    if txn_denied {
        for t in &mut targets {
            t.partition = Err(BrokerError::Unauthorized(ResourceType::TransactionalId));
        }
    }
    // Without a transactional id every transactional batch is refused anyway, so requests of
    // non-transactional producers skip this pass.
    let mixed = transactional_id.is_some() && mixed_producers(&targets);
    let txn = TxnContext {
        transactional_id,
        mixed_producers: mixed,
    };
    let append = (acks == -1).then(|| broker.durability.append_started());
    let quick = txn.transactional_id.is_none() && targets.iter().all(Target::is_light);
    let b = broker.clone();
    let slots: Vec<(usize, i32)> = targets.iter().map(|t| (t.topic, t.index)).collect();
    let outcomes = quick_or_blocking(&broker.quick_appends, quick, move || {
        targets
            .into_iter()
            .map(|t| append_one(&b, t, acks, version, &txn))
            .collect::<Vec<_>>()
    })
    .await;
    // A failed task fails every partition (and, with acks=0, closes the connection below).
    let outcomes = outcomes.unwrap_or_else(|e| {
        slots
            .into_iter()
            .map(|(topic, index)| failed(topic, empty_response(index), version, &e))
            .collect()
    });
    let failed = outcomes.iter().any(|o| o.response.error_code != 0);
    if acks == 0 {
        return if failed {
            Reply::Close("acks=0 produce failed".into())
        } else {
            Reply::NoResponse
        };
    }
    let mut waits = Vec::new();
    for outcome in outcomes {
        let slot = topics[outcome.topic].partition_responses.len();
        if acks == -1 {
            if let Some(durable) = outcome.durable {
                waits.push((outcome.topic, slot, durable));
            }
        }
        topics[outcome.topic]
            .partition_responses
            .push(outcome.response);
    }
    if waits.is_empty() {
        return Reply::Respond(ResponseKind::Produce(
            ProduceResponse::default().with_responses(topics),
        ));
    }
    let broker = broker.clone();
    Reply::Later(Box::pin(async move {
        let (slots, durable): (Vec<_>, Vec<_>) = waits
            .into_iter()
            .map(|(topic, slot, durable)| ((topic, slot), durable))
            .unzip();
        let answers = broker.durability.wait_all_flushed(durable, append).await;
        for ((topic, slot), answer) in slots.into_iter().zip(answers) {
            if let Err(e) = answer {
                let e = BrokerError::StorageFailure(e.to_string());
                let response = &mut topics[topic].partition_responses[slot];
                response.error_code = kafka_error(ApiKey::Produce, version, &e).code();
                response.base_offset = -1;
                if version >= 8 {
                    response.error_message = message(version, &e).map(|m| str_bytes(&m));
                }
            }
        }
        ResponseKind::Produce(ProduceResponse::default().with_responses(topics))
    }))
}

/// Look up every partition; v13 names topics by id.
fn resolve(
    broker: &Broker,
    version: i16,
    data: Vec<TopicProduceData>,
    authz: &Authz,
) -> (Vec<TopicProduceResponse>, Vec<Target>) {
    let mut responses = Vec::new();
    let mut targets = Vec::new();
    for (i, topic_data) in data.into_iter().enumerate() {
        let (topic, label) = if version >= 13 {
            (
                broker.topics.get_by_id(topic_data.topic_id),
                topic_data.topic_id.to_string(),
            )
        } else {
            (
                broker.topics.get(&topic_data.name.0),
                topic_data.name.0.to_string(),
            )
        };
        responses.push(
            TopicProduceResponse::default()
                .with_name(if version >= 13 {
                    Default::default()
                } else {
                    topic_data.name.clone()
                })
                .with_topic_id(if version >= 13 {
                    topic_data.topic_id
                } else {
                    Uuid::nil()
                }),
        );
        let name = match &topic {
            Some(t) => Some(t.name.as_str()),
            None if version < 13 => Some(label.as_str()),
            None => None,
        };
        let denied =
            name.is_some_and(|n| !authz.allows(AclOperation::Write, ResourceType::Topic, n));
        for p in topic_data.partition_data {
            targets.push(Target {
                topic: i,
                index: p.index,
                partition: match &topic {
                    _ if denied => Err(BrokerError::Unauthorized(ResourceType::Topic)),
                    None => Err(BrokerError::UnknownTopic(label.clone())),
                    Some(t) => t.partition(p.index).ok_or(BrokerError::UnknownPartition {
                        topic: t.name.clone(),
                        partition: p.index,
                    }),
                },
                records: p.records,
            });
        }
    }
    (responses, targets)
}

/// Whether the transactional batches of the request carry more than one producer id/epoch
/// (Kafka's `handleProduceAppend` then fails the request with INVALID_PRODUCER_ID_MAPPING).
fn mixed_producers(targets: &[Target]) -> bool {
    let mut seen = None;
    for t in targets {
        let Some(h) = t
            .records
            .as_ref()
            .and_then(|r| skiff_records::BatchHeader::parse(r).ok())
        else {
            continue;
        };
        if !h.is_transactional() {
            continue;
        }
        let this = (h.producer_id, h.producer_epoch);
        match seen {
            None => seen = Some(this),
            Some(first) if first != this => return true,
            Some(_) => {}
        }
    }
    false
}

fn empty_response(index: i32) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
}

/// The outcome of a partition that failed with `error`.
fn failed(
    topic: usize,
    mut response: PartitionProduceResponse,
    version: i16,
    error: &BrokerError,
) -> Outcome {
    response.error_code = kafka_error(ApiKey::Produce, version, error).code();
    if version >= 8 {
        response.error_message = message(version, error).map(|m| str_bytes(&m));
    }
    Outcome {
        topic,
        response,
        durable: None,
    }
}

/// The message Kafka sends (v8+) with each produce error; `None` where it sends none.
fn message(version: i16, error: &BrokerError) -> Option<String> {
    match error {
        BrokerError::Storage(e) => Some(e.to_string()),
        BrokerError::StorageFailure(m) | BrokerError::InvalidRecord(m) => Some(m.clone()),
        BrokerError::Internal(m) => Some(m.clone()),
        BrokerError::MixedProducers => Some(error.to_string()),
        // Older clients get INVALID_TXN_STATE with Kafka's explanation.
        BrokerError::NotInTransaction if version < 11 => Some(error.to_string()),
        // The retriable coordinator errors Kafka folds into NOT_ENOUGH_REPLICAS say so.
        BrokerError::Coordinator(e)
            if kafka_error(ApiKey::Produce, version, error) == ResponseError::NotEnoughReplicas =>
        {
            Some(format!(
                "Unable to verify the partition has been added to the transaction. \
                 Underlying error: {e:?}"
            ))
        }
        _ => None,
    }
}

fn append_one(
    broker: &Broker,
    target: Target,
    acks: i16,
    version: i16,
    txn: &TxnContext,
) -> Outcome {
    let mut response = empty_response(target.index);
    let fail = |response: PartitionProduceResponse, error: BrokerError| {
        failed(target.topic, response, version, &error)
    };
    if !matches!(acks, -1..=1) {
        return fail(response, BrokerError::InvalidRequiredAcks(acks));
    }
    let partition = match target.partition {
        Ok(partition) => partition,
        Err(unknown) => return fail(response, unknown),
    };
    let records = target.records.unwrap_or_default();
    let batch_count = skiff_records::Batches::new(&records).count();
    if batch_count != 1 {
        return fail(response, BrokerError::InvalidRecord(ONE_BATCH.to_string()));
    }
    let header = skiff_records::BatchHeader::parse(&records).ok();
    // zstd needs Produce v7+ (KIP-110): older clients could not read it back.
    let zstd = header.and_then(|h| h.compression().ok()) == Some(skiff_records::Compression::Zstd);
    if zstd && version < 7 {
        return fail(response, BrokerError::UnsupportedCompression);
    }
    let validation = AppendValidation {
        now_ms: broker.clock.now_ms(),
    };
    let appended = match header.filter(|h| h.is_transactional() && !h.is_control()) {
        None => partition.log.append(&records, LEADER_EPOCH, &validation),
        Some(h) => match verify_transactional(broker, &partition, &h, txn, version) {
            Err(error) => return fail(response, error),
            Ok(None) => partition.log.append(&records, LEADER_EPOCH, &validation),
            Ok(Some(guard)) => {
                partition
                    .log
                    .append_verified(&records, LEADER_EPOCH, &validation, guard)
            }
        },
    };
    match appended {
        Ok(info) => {
            partition
                .counters
                .produced(records.len() as u64, crate::metrics::record_count(&records));
            partition.wake_all();
            response.base_offset = info.first_offset;
            response.log_append_time_ms = info.log_append_time.unwrap_or(-1);
            response.log_start_offset = info.log_start_offset;
            let end_offset = info.last_offset + 1;
            request_flush_if_due(broker, &partition, end_offset);
            Outcome {
                topic: target.topic,
                response,
                durable: Some((partition, end_offset)),
            }
        }
        Err(e) => {
            if let LogError::InvalidRecord { record_errors, .. }
            | LogError::InvalidTimestamp { record_errors, .. } = &e
            {
                response.record_errors = record_errors
                    .iter()
                    .map(|(index, message)| {
                        BatchIndexAndErrorMessage::default()
                            .with_batch_index(*index)
                            .with_batch_index_error_message(Some(str_bytes(message)))
                    })
                    .collect();
            }
            if matches!(e, LogError::Io { .. } | LogError::Offline(..)) {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "append failed");
            }
            fail(response, BrokerError::Storage(e))
        }
    }
}

/// The transactional checks before appending `h`'s batch: `Ok(None)` to append without
/// verification (disabled), `Ok(Some(guard))` to append with the log's guard check, or the
/// error to answer with. The coordinator's answer is translated per Produce version in
/// [`kafka_error`], as Kafka 4.4's `ReplicaManager` (`handleProduceAppend`) and
/// `AddPartitionsToTxnManager` do (v0-10 "default error", v11 "generic error supported",
/// v12+ "add partition").
///
/// From v12 (transaction version 2) the partition joins the transaction here instead of
/// through the client's AddPartitionsToTxn, whatever
/// `transaction.partition.verification.enable` says: without the add, EndTxn would never
/// mark the partition. Older versions keep the part-1 check that it was added.
fn verify_transactional(
    broker: &Broker,
    partition: &Partition,
    h: &skiff_records::BatchHeader,
    txn: &TxnContext,
    version: i16,
) -> Result<Option<Option<VerificationGuard>>, BrokerError> {
    let Some(transactional_id) = txn.transactional_id.as_deref() else {
        return Err(BrokerError::NoTransactionalId);
    };
    if txn.mixed_producers {
        return Err(BrokerError::MixedProducers);
    }
    let implicit_add = version >= IMPLICIT_ADD_VERSION;
    if !implicit_add
        && !broker
            .live_config()
            .transaction_partition_verification_enable
    {
        return Ok(None);
    }
    // The guard is taken before asking, so a marker written after the answer voids it.
    let Some(guard) = partition.log.start_txn_verification(h.producer_id) else {
        // The producer's transaction is already open here; the log checks that again.
        return Ok(Some(None));
    };
    let key = [(partition.topic.to_string(), partition.index)];
    if implicit_add {
        return match broker.txn.add_partitions_implicitly(
            transactional_id,
            h.producer_id,
            h.producer_epoch,
            &key,
        ) {
            Ok(()) => Ok(Some(Some(guard))),
            Err(e) => Err(BrokerError::Coordinator(e)),
        };
    }
    match broker
        .txn
        .verify_partitions(transactional_id, h.producer_id, h.producer_epoch, &key)
    {
        Ok(v) if v.first() == Some(&true) => Ok(Some(Some(guard))),
        Ok(_) => Err(BrokerError::NotInTransaction),
        Err(e) => Err(BrokerError::Coordinator(e)),
    }
}

/// The first Produce version whose transactional batches add their partition to the
/// transaction (KIP-890 part 2; Kafka's `produceRequestVersionToTransactionSupportedOperation`).
const IMPLICIT_ADD_VERSION: i16 = 12;

/// `flush.messages`: once that many messages are unflushed, fsync without making anyone wait.
fn request_flush_if_due(broker: &Broker, partition: &Arc<Partition>, end_offset: i64) {
    let flush_messages = partition.log.config().flush_messages;
    if flush_messages == i64::MAX || end_offset - partition.log.flushed_offset() < flush_messages {
        return;
    }
    let durability = broker.durability.clone();
    let partition = partition.clone();
    tokio::runtime::Handle::current().spawn(async move {
        let _ = durability.wait_flushed(partition, end_offset).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_task_fails_each_partition_with_unknown_server_error() {
        let e = BrokerError::Internal("storage task failed: task 7 panicked".into());
        let o = failed(1, empty_response(4), 9, &e);
        assert_eq!(
            o.response.error_code,
            ResponseError::UnknownServerError.code()
        );
        assert_eq!(
            (o.topic, o.response.index, o.response.base_offset),
            (1, 4, -1)
        );
        assert_eq!(
            o.response.error_message.as_deref(),
            Some("storage task failed: task 7 panicked")
        );
        assert!(o.durable.is_none());
        // Produce v0-7 has no error message field.
        assert!(failed(1, empty_response(4), 7, &e)
            .response
            .error_message
            .is_none());
    }

    #[test]
    fn messages_follow_kafka_per_error_and_version() {
        let not_added = BrokerError::NotInTransaction;
        assert_eq!(
            message(10, &not_added).as_deref(),
            Some("Partition was not added to the transaction")
        );
        assert_eq!(message(11, &not_added), None);
        let loading = BrokerError::Coordinator(ResponseError::CoordinatorLoadInProgress);
        assert_eq!(
            message(12, &loading).as_deref(),
            Some(
                "Unable to verify the partition has been added to the transaction. \
                 Underlying error: CoordinatorLoadInProgress"
            )
        );
        let concurrent = BrokerError::Coordinator(ResponseError::ConcurrentTransactions);
        assert!(message(11, &concurrent).is_some());
        assert_eq!(message(12, &concurrent), None);
        assert_eq!(
            message(12, &BrokerError::Coordinator(ResponseError::ProducerFenced)),
            None
        );
        assert_eq!(message(9, &BrokerError::InvalidRequiredAcks(5)), None);
        assert_eq!(message(9, &BrokerError::UnknownTopic("t".into())), None);
        assert_eq!(
            message(9, &BrokerError::InvalidRecord(ONE_BATCH.into())).as_deref(),
            Some(ONE_BATCH)
        );
    }
}
