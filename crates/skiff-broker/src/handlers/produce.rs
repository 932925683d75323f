//! Produce: validate and append each partition's batch, then answer at once (acks=1), after
//! the fsync that covers it (acks=all, group commit), or not at all (acks=0; on error the
//! connection is closed, as Kafka does).
//!
//! Transactional batches (KIP-890 part 1, `transaction.partition.verification.enable`): the
//! first batch of a transaction on a partition is written only if the in-process transaction
//! coordinator has the partition in the producer's ongoing transaction (`txn/verify.rs`);
//! the log's verification guard, taken before asking, makes the check and the append atomic
//! against a marker written in between. Non-transactional batches skip all of it.

use std::sync::Arc;

use kafka_protocol::messages::produce_request::TopicProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};
use kafka_protocol::ResponseError;
use skiff_log::{AppendValidation, LogError, VerificationGuard};
use uuid::Uuid;

use super::{str_bytes, LEADER_EPOCH};
use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::log_error_code;
use crate::partition::Partition;

/// Kafka 4 accepts exactly one record batch per partition in a produce request (v3+).
const ONE_BATCH: &str =
    "Produce requests with version 3+ must contain exactly one record batch per partition";

struct Target {
    topic: usize,
    index: i32,
    partition: Option<Arc<Partition>>,
    unknown: ResponseError,
    records: Option<bytes::Bytes>,
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

pub async fn handle(broker: &Arc<Broker>, version: i16, request: ProduceRequest) -> Reply {
    let acks = request.acks;
    let transactional_id = request
        .transactional_id
        .as_ref()
        .map(|t| t.0.to_string())
        .filter(|t| !t.is_empty());
    let (mut topics, targets) = resolve(broker, version, request.topic_data);
    // Without a transactional id every transactional batch is refused anyway, so requests of
    // non-transactional producers skip this pass.
    let mixed = transactional_id.is_some() && mixed_producers(&targets);
    let txn = TxnContext {
        transactional_id,
        mixed_producers: mixed,
    };
    let valid_acks = matches!(acks, -1..=1);
    let b = broker.clone();
    let outcomes = blocking(move || {
        targets
            .into_iter()
            .map(|t| append_one(&b, t, valid_acks, version, &txn))
            .collect::<Vec<_>>()
    })
    .await;
    let outcomes = match outcomes {
        Ok(outcomes) => outcomes,
        Err(e) => return Reply::Close(e),
    };
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
        for (topic, slot, (partition, end_offset)) in waits {
            if let Err(e) = broker.durability.wait_flushed(partition, end_offset).await {
                let response = &mut topics[topic].partition_responses[slot];
                response.error_code = ResponseError::KafkaStorageError.code();
                response.base_offset = -1;
                if version >= 8 {
                    response.error_message = Some(str_bytes(&e));
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
) -> (Vec<TopicProduceResponse>, Vec<Target>) {
    let mut responses = Vec::new();
    let mut targets = Vec::new();
    for (i, topic_data) in data.into_iter().enumerate() {
        let (topic, unknown) = if version >= 13 {
            (
                broker.topics.get_by_id(topic_data.topic_id),
                ResponseError::UnknownTopicId,
            )
        } else {
            (
                broker.topics.get(&topic_data.name.0),
                ResponseError::UnknownTopicOrPartition,
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
        for p in topic_data.partition_data {
            targets.push(Target {
                topic: i,
                index: p.index,
                partition: topic.as_ref().and_then(|t| t.partition(p.index)),
                unknown: if topic.is_some() {
                    ResponseError::UnknownTopicOrPartition
                } else {
                    unknown
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

fn append_one(
    broker: &Broker,
    target: Target,
    valid_acks: bool,
    version: i16,
    txn: &TxnContext,
) -> Outcome {
    let mut response = PartitionProduceResponse::default()
        .with_index(target.index)
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1);
    let fail =
        |mut response: PartitionProduceResponse, error: ResponseError, message: Option<String>| {
            response.error_code = error.code();
            if version >= 8 {
                response.error_message = message.map(|m| str_bytes(&m));
            }
            Outcome {
                topic: target.topic,
                response,
                durable: None,
            }
        };
    if !valid_acks {
        return fail(response, ResponseError::InvalidRequiredAcks, None);
    }
    let Some(partition) = target.partition else {
        return fail(response, target.unknown, None);
    };
    let records = target.records.unwrap_or_default();
    let batch_count = skiff_records::Batches::new(&records).count();
    if batch_count != 1 {
        return fail(
            response,
            ResponseError::InvalidRecord,
            Some(ONE_BATCH.to_string()),
        );
    }
    let header = skiff_records::BatchHeader::parse(&records).ok();
    // zstd needs Produce v7+ (KIP-110): older clients could not read it back.
    let zstd = header.and_then(|h| h.compression().ok()) == Some(skiff_records::Compression::Zstd);
    if zstd && version < 7 {
        return fail(response, ResponseError::UnsupportedCompressionType, None);
    }
    let validation = AppendValidation {
        now_ms: broker.clock.now_ms(),
    };
    let appended = match header.filter(|h| h.is_transactional() && !h.is_control()) {
        None => partition.log.append(&records, LEADER_EPOCH, &validation),
        Some(h) => match verify_transactional(broker, &partition, &h, version, txn) {
            Err((error, message)) => return fail(response, error, message),
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
            let code = log_error_code(&e);
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
            fail(response, code, Some(e.to_string()))
        }
    }
}

/// The transactional checks before appending `h`'s batch: `Ok(None)` to append without
/// verification (disabled), `Ok(Some(guard))` to append with the log's guard check, or the
/// error (and message) to answer with. Error codes as Kafka 4.4's `ReplicaManager`
/// (`handleProduceAppend`) and `AddPartitionsToTxnManager` translate the coordinator's
/// answer for each Produce version (v0-10 "default error", v11 "generic error supported",
/// v12+ "add partition").
fn verify_transactional(
    broker: &Broker,
    partition: &Partition,
    h: &skiff_records::BatchHeader,
    version: i16,
    txn: &TxnContext,
) -> Result<Option<Option<VerificationGuard>>, (ResponseError, Option<String>)> {
    // KafkaApis: transactional records need a transactional id the client may use.
    let Some(transactional_id) = txn.transactional_id.as_deref() else {
        return Err((ResponseError::TransactionalIdAuthorizationFailed, None));
    };
    if txn.mixed_producers {
        return Err((
            ResponseError::InvalidProducerIdMapping,
            Some("Transactional records contained more than one producer ID".to_string()),
        ));
    }
    if !broker
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
    match broker
        .txn
        .verify_partitions(transactional_id, h.producer_id, h.producer_epoch, &key)
    {
        Ok(v) if v.first() == Some(&true) => Ok(Some(Some(guard))),
        // Produce v11+ clients know TRANSACTION_ABORTABLE; older ones get INVALID_TXN_STATE.
        Ok(_) if version >= 11 => Err((ResponseError::TransactionAbortable, None)),
        Ok(_) => Err((
            ResponseError::InvalidTxnState,
            Some("Partition was not added to the transaction".to_string()),
        )),
        // Producers expect INVALID_PRODUCER_EPOCH here (AddPartitionsToTxnManager).
        Err(ResponseError::ProducerFenced) => Err((ResponseError::InvalidProducerEpoch, None)),
        // Produce v12+ clients (KIP-890 part 2) retry CONCURRENT_TRANSACTIONS themselves.
        Err(ResponseError::ConcurrentTransactions) if version >= 12 => {
            Err((ResponseError::ConcurrentTransactions, None))
        }
        // Retriable coordinator errors become one every client retries without a metadata
        // refresh, as Kafka does.
        Err(
            e @ (ResponseError::ConcurrentTransactions
            | ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator),
        ) => Err((
            ResponseError::NotEnoughReplicas,
            Some(format!(
                "Unable to verify the partition has been added to the transaction. \
                 Underlying error: {e:?}"
            )),
        )),
        Err(e) => Err((e, None)),
    }
}

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
