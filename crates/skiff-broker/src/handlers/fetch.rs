//! Fetch: whole batches from each requested partition within the byte budgets (the request's
//! `max_bytes` capped by the broker's `fetch.max.bytes`, and each partition's own limit),
//! parked until `min_bytes` arrive or `max_wait_ms` passes (woken by appends, never polling).
//!
//! On a connection that can send file ranges (plaintext), large record sets stay in their
//! segment files and are answered as a [`FileAnswer`]: the connection sends them with
//! sendfile. Elsewhere (TLS, the console) they are read into the response.
//!
//! Fetch sessions (KIP-227) are not kept: every response carries session id 0, which tells
//! clients to keep sending full fetch requests — what Kafka does when its session cache is
//! full.
//!
//! With an authorizer (as Kafka 4's KafkaApis): each topic needs TOPIC READ, else its
//! partitions answer TOPIC_AUTHORIZATION_FAILED (a topic id is resolved first; an unknown
//! one stays UNKNOWN_TOPIC_ID). A fetch naming a replica id (a follower's) needs CLUSTER
//! CLUSTER_ACTION instead, else every partition answers TOPIC_AUTHORIZATION_FAILED.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ProducerId, ResponseKind, TopicName,
};
use skiff_log::{FileRange, FileRecords, LogError};
use skiff_protocol::Outside;
use tokio::sync::Notify;
use uuid::Uuid;

use super::LEADER_EPOCH;
use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, sends_files, FileAnswer, Reply};
use crate::errors::{kafka_error, BrokerError};
use crate::partition::Partition;

/// Session epochs with a meaning of their own (KIP-227).
const FINAL_EPOCH: i32 = -1;
const INITIAL_EPOCH: i32 = 0;
const READ_COMMITTED: i8 = 1;

struct Wanted {
    topic: usize,
    index: i32,
    /// The partition, or the error code it answers.
    partition: Result<Arc<Partition>, i16>,
    offset: i64,
    max_bytes: usize,
}

pub async fn handle(ctx: &RequestContext, request: FetchRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let authz = ctx.authz();
    if sends_files() {
        return Reply::LaterInFiles(Box::pin(async move {
            let (response, outside) = fetch(broker, version, request, &authz, true).await;
            FileAnswer {
                response: ResponseKind::Fetch(response),
                outside,
            }
        }));
    }
    Reply::Later(Box::pin(async move {
        ResponseKind::Fetch(fetch(broker, version, request, &authz, false).await.0)
    }))
}

/// A partition's read: the answer, and its record sets when they stayed in their files.
type Read = (PartitionData, Option<FileRecords>);

fn code(version: i16, err: &BrokerError) -> i16 {
    kafka_error(ApiKey::Fetch, version, err).code()
}

/// The response, and (with `in_files`) the record sets left in their files.
async fn fetch(
    broker: Arc<Broker>,
    version: i16,
    request: FetchRequest,
    authz: &Authz,
    in_files: bool,
) -> (FetchResponse, Vec<Outside<Vec<FileRange>>>) {
    if version >= 7 {
        let session_error = if request.session_id != 0 {
            Some(BrokerError::UnknownFetchSession(request.session_id))
        } else if request.session_epoch != FINAL_EPOCH && request.session_epoch != INITIAL_EPOCH {
            Some(BrokerError::InvalidFetchSessionEpoch(request.session_epoch))
        } else {
            None
        };
        if let Some(error) = session_error {
            return (
                FetchResponse::default().with_error_code(code(version, &error)),
                Vec::new(),
            );
        }
    }
    let read_committed = version >= 4 && request.isolation_level == READ_COMMITTED;
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    // A follower's fetch is authorized on the cluster, a consumer's per topic.
    let follower = (replica_id >= 0).then(|| authz.allows_cluster(AclOperation::ClusterAction));
    let (topics, wanted) = resolve(&broker, version, request.topics, authz, follower);
    let wanted = Arc::new(wanted);
    // The broker's `fetch.max.bytes` caps what the client asks for, and min_bytes cannot
    // exceed the cap (as Kafka computes fetchMaxBytes and fetchMinBytes).
    let max_bytes =
        usize::try_from(request.max_bytes.min(broker.config.fetch_max_bytes)).unwrap_or(0);
    let min_bytes = usize::try_from(request.min_bytes)
        .unwrap_or(0)
        .min(max_bytes);
    let deadline = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
    let waiter = Arc::new(Notify::new());
    let mut parked = false;
    loop {
        let w = wanted.clone();
        let read =
            blocking(move || read_all(&w, version, max_bytes, read_committed, in_files)).await;
        let results = match read {
            Ok(results) => results,
            // A failed read fails every partition.
            Err(e) => {
                let failed = wanted
                    .iter()
                    .map(|w| (error_data(w.index, code(version, &e)), None))
                    .collect();
                return build_response(topics, &wanted, failed, read_committed);
            }
        };
        let total: usize = results
            .iter()
            .map(|(r, files)| {
                r.records.as_ref().map_or(0, |b| b.len()) + files.as_ref().map_or(0, |f| f.len)
            })
            .sum();
        let has_error = results.iter().any(|(r, _)| r.error_code != 0);
        if total >= min_bytes || has_error || tokio::time::Instant::now() >= deadline {
            return build_response(topics, &wanted, results, read_committed);
        }
        if !parked {
            // Park before reading again, so an append between the read and the wait wakes us.
            for w in wanted.iter() {
                if let Ok(p) = &w.partition {
                    p.park(&waiter);
                }
            }
            parked = true;
            continue;
        }
        if tokio::time::timeout_at(deadline, waiter.notified())
            .await
            .is_err()
        {
            // Deadline passed: one last read below answers with whatever is there.
            continue;
        }
        for w in wanted.iter() {
            if let Ok(p) = &w.partition {
                p.park(&waiter);
            }
        }
    }
}

fn resolve(
    broker: &Broker,
    version: i16,
    topics: Vec<FetchTopic>,
    authz: &Authz,
    follower: Option<bool>,
) -> (Vec<FetchableTopicResponse>, Vec<Wanted>) {
    let mut responses = Vec::new();
    let mut wanted = Vec::new();
    for (i, t) in topics.into_iter().enumerate() {
        let (topic, missing) = if version >= 13 {
            (
                broker.topics.get_by_id(t.topic_id),
                BrokerError::UnknownTopic(t.topic_id.to_string()),
            )
        } else {
            (
                broker.topics.get(&t.topic.0),
                BrokerError::UnknownTopic(t.topic.0.to_string()),
            )
        };
        responses.push(
            FetchableTopicResponse::default()
                .with_topic(if version >= 13 {
                    TopicName::default()
                } else {
                    t.topic.clone()
                })
                .with_topic_id(if version >= 13 {
                    t.topic_id
                } else {
                    Uuid::nil()
                }),
        );
        let name = match &topic {
            Some(topic) => Some(topic.name.as_str()),
            None if version < 13 => Some(&*t.topic.0),
            None => None,
        };
        let denied = match follower {
            Some(allowed) => !allowed,
            None => name.is_some_and(|n| !authz.allows(AclOperation::Read, ResourceType::Topic, n)),
        };
        for p in t.partitions {
            let partition = match &topic {
                _ if denied => Err(code(
                    version,
                    &BrokerError::Unauthorized(ResourceType::Topic),
                )),
                None => Err(code(version, &missing)),
                Some(topic) => match topic.partition(p.partition) {
                    None => Err(code(
                        version,
                        &BrokerError::UnknownPartition {
                            topic: topic.name.clone(),
                            partition: p.partition,
                        },
                    )),
                    Some(_) if p.current_leader_epoch > LEADER_EPOCH => Err(code(
                        version,
                        &BrokerError::UnknownLeaderEpoch(p.current_leader_epoch),
                    )),
                    Some(partition) => Ok(partition),
                },
            };
            wanted.push(Wanted {
                topic: i,
                index: p.partition,
                partition,
                offset: p.fetch_offset,
                max_bytes: usize::try_from(p.partition_max_bytes).unwrap_or(0),
            });
        }
    }
    (responses, wanted)
}

/// Read every partition within the request's total budget. The first partition that has
/// data returns at least one whole batch even when it exceeds the limits (KIP-74).
/// read_committed reads stop at the last stable offset and carry the aborted transactions
/// that may have data in the returned range (the client drops their batches). With
/// `in_files`, large record sets are left in their files.
fn read_all(
    wanted: &[Wanted],
    version: i16,
    max_bytes: usize,
    read_committed: bool,
    in_files: bool,
) -> Vec<Read> {
    let mut remaining = max_bytes;
    let mut first_data = true;
    wanted
        .iter()
        .map(|w| {
            let data = PartitionData::default()
                .with_partition_index(w.index)
                .with_preferred_read_replica(BrokerId(-1));
            let partition = match &w.partition {
                Ok(p) => p,
                Err(code) => return (error_data(w.index, *code), None),
            };
            let limit = w.max_bytes.min(remaining);
            let log = &partition.log;
            let read = if in_files {
                log.read_in_place(w.offset, limit, first_data, read_committed)
            } else {
                log.read_isolated(w.offset, limit, first_data, read_committed)
                    .map(|read| (read, None))
            };
            match read {
                Ok((read, files)) => {
                    let len = read.records.len() + files.as_ref().map_or(0, |f| f.len);
                    if len > 0 {
                        first_data = false;
                    }
                    remaining = remaining.saturating_sub(len);
                    let aborted = (read_committed && len > 0).then(|| {
                        partition
                            .log
                            .aborted_transactions(w.offset, read.last_stable_offset)
                            .into_iter()
                            .map(|(pid, first)| {
                                AbortedTransaction::default()
                                    .with_producer_id(ProducerId(pid))
                                    .with_first_offset(first)
                            })
                            .collect()
                    });
                    let data = data
                        .with_high_watermark(read.high_watermark)
                        .with_last_stable_offset(read.last_stable_offset)
                        .with_log_start_offset(read.log_start_offset)
                        .with_aborted_transactions(aborted)
                        .with_records(Some(read.records));
                    (data, files)
                }
                Err(e) => {
                    if !matches!(e, LogError::OffsetOutOfRange { .. }) {
                        tracing::error!(topic = %partition.topic, partition = w.index, error = %e, "fetch read failed");
                    }
                    let data = data
                        .with_error_code(code(version, &BrokerError::Storage(e)))
                        .with_high_watermark(partition.log.high_watermark())
                        .with_last_stable_offset(partition.log.last_stable_offset())
                        .with_log_start_offset(partition.log.log_start_offset())
                        .with_records(Some(Bytes::new()));
                    (data, None)
                }
            }
        })
        .collect()
}

/// A partition that answers only an error code.
fn error_data(index: i32, code: i16) -> PartitionData {
    PartitionData::default()
        .with_partition_index(index)
        .with_preferred_read_replica(BrokerId(-1))
        .with_error_code(code)
        .with_high_watermark(-1)
        .with_last_stable_offset(-1)
        .with_log_start_offset(-1)
        .with_records(Some(Bytes::new()))
}

/// Puts each partition's answer under its topic, in request order; the record sets left in
/// files are returned beside the response, by the partition's place in it.
fn build_response(
    mut topics: Vec<FetchableTopicResponse>,
    wanted: &[Wanted],
    results: Vec<Read>,
    read_committed: bool,
) -> (FetchResponse, Vec<Outside<Vec<FileRange>>>) {
    let mut outside = Vec::new();
    for (w, (mut data, files)) in wanted.iter().zip(results) {
        if let Ok(partition) = &w.partition {
            match (&files, &data.records) {
                (Some(f), _) => partition
                    .counters
                    .fetched_counted(f.len as u64, f.record_count),
                (None, Some(records)) => partition.counters.fetched(records),
                (None, None) => {}
            }
        }
        if read_committed && data.aborted_transactions.is_none() {
            data.aborted_transactions = Some(Vec::new());
        }
        topics[w.topic].partitions.push(data);
        if let Some(files) = files {
            // `resolve` lists a topic's partitions together and topics in order, so the
            // place among the response's partitions is the count of those before it.
            let partition = topics[..w.topic]
                .iter()
                .map(|t| t.partitions.len())
                .sum::<usize>()
                + topics[w.topic].partitions.len()
                - 1;
            outside.push(Outside {
                partition,
                len: files.len,
                records: files.ranges,
            });
        }
    }
    (FetchResponse::default().with_responses(topics), outside)
}
