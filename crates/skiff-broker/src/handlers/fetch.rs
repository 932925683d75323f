//! Fetch: whole batches from each requested partition within the byte budgets (the request's
//! `max_bytes` capped by the broker's `fetch.max.bytes`, and each partition's own limit),
//! parked until `min_bytes` arrive or `max_wait_ms` passes (woken by appends, never polling).
//! A failed read answers at once; a partition refused before reading (unknown, denied) does
//! not cut the others' wait short, unless no partition is left to read (as Kafka).
//!
//! On a connection that can send file ranges (plaintext), large record sets stay in their
//! segment files and are answered as a [`FileAnswer`]: the connection sends them with
//! sendfile. Elsewhere (TLS, the console) they are read into the response.
//!
//! Fetch sessions (KIP-227, v7+, held by [`crate::fetch_sessions`]): epoch 0 is a full
//! fetch that opens a session (closing the one it names) and answers with its id, or with 0
//! when the cache has no room; epoch -1 closes the named session and is served without one;
//! any other epoch is an incremental fetch of the named session: the request's partitions
//! join or update it, its forgotten ones leave it, all of its partitions are read, and only
//! those with records, an error, or offsets other than last sent are answered. An unknown
//! session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH, and a
//! version that names topics otherwise than the session FETCH_SESSION_TOPIC_ID_ERROR, each
//! for the whole request, without partitions. In a session by topic ids a partition keeps the
//! name its id had (as Kafka's): once no topic has that name it answers
//! UNKNOWN_TOPIC_OR_PARTITION, once that name has another id INCONSISTENT_TOPIC_ID; an id
//! never known answers UNKNOWN_TOPIC_ID.
//!
//! Client quotas ([`crate::quotas`]): once the records are read, the response's bytes are
//! judged before the session learns anything. A throttled fetch answers without partitions
//! and, as Kafka's `getThrottledResponse`, opens no session (full fetch) or leaves its
//! session's "last sent" figures alone (incremental fetch), so nothing the client never saw
//! counts as sent.
//!
//! With an authorizer (as Kafka 4's KafkaApis): each topic needs TOPIC READ, else its
//! partitions answer TOPIC_AUTHORIZATION_FAILED (a topic id is resolved first; an unknown
//! one stays UNKNOWN_TOPIC_ID). A fetch naming a replica id (a follower's) needs CLUSTER
//! CLUSTER_ACTION instead, else every partition answers TOPIC_AUTHORIZATION_FAILED.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ProducerId, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
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
use crate::fetch_sessions::{Outcome, Sent, SessionError, SessionPartition};
use crate::partition::Partition;
use crate::quotas::FetchQuota;
use crate::topics::Topic;

mod targets;

use targets::{sessions, settle_session, Mode, Target};

const READ_COMMITTED: i8 = 1;

struct Wanted {
    /// What was asked; its `name` is the topic's name once found.
    target: Target,
    /// The partition, or the error code it answers.
    partition: Result<Arc<Partition>, i16>,
}

pub async fn handle(ctx: &RequestContext, request: FetchRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let authz = ctx.authz();
    let quota = ctx.fetch_quota.clone();
    if sends_files() {
        return Reply::LaterInFiles(Box::pin(async move {
            let (response, outside) = fetch(broker, version, request, &authz, quota, true).await;
            FileAnswer {
                response: ResponseKind::Fetch(response),
                outside,
            }
        }));
    }
    Reply::Later(Box::pin(async move {
        ResponseKind::Fetch(
            fetch(broker, version, request, &authz, quota, false)
                .await
                .0,
        )
    }))
}

/// A partition's read: the answer, and its record sets when they stayed in their files.
type Read = (PartitionData, Option<FileRecords>);

fn code(version: i16, err: &BrokerError) -> i16 {
    kafka_error(ApiKey::Fetch, version, err).code()
}

/// A response carrying only a request-level error.
fn refused(version: i16, error: &BrokerError, session_id: i32) -> FetchResponse {
    FetchResponse::default()
        .with_error_code(code(version, error))
        .with_session_id(session_id)
}

/// The response, and (with `in_files`) the record sets left in their files.
async fn fetch(
    broker: Arc<Broker>,
    version: i16,
    mut request: FetchRequest,
    authz: &Authz,
    quota: Option<FetchQuota>,
    in_files: bool,
) -> (FetchResponse, Vec<Outside<Vec<FileRange>>>) {
    let (mode, targets) = match settle_session(&broker, version, &mut request) {
        Ok(settled) => settled,
        Err(error) => return (refused(version, &error, 0), Vec::new()),
    };
    let read_committed = version >= 4 && request.isolation_level == READ_COMMITTED;
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    // A follower's fetch is authorized on the cluster, a consumer's per topic.
    let follower = (replica_id >= 0).then(|| authz.allows_cluster(AclOperation::ClusterAction));
    let wanted = Arc::new(resolve(&broker, version, targets, authz, follower));
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
    let results = loop {
        let w = wanted.clone();
        let read =
            blocking(move || read_all(&w, version, max_bytes, read_committed, in_files)).await;
        let results = match read {
            Ok(results) => results,
            // A failed read fails every partition.
            Err(e) => {
                break wanted
                    .iter()
                    .map(|w| (error_data(w.target.partition, code(version, &e)), None))
                    .collect();
            }
        };
        let total: usize = results.iter().map(|(r, files)| read_len(r, files)).sum();
        if total >= min_bytes
            || read_failed(&wanted, &results)
            || nothing_to_read(&wanted)
            || tokio::time::Instant::now() >= deadline
        {
            break results;
        }
        if !parked {
            // Park before reading again, so an append between the read and the wait wakes us.
            park(&wanted, &waiter);
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
        park(&wanted, &waiter);
    };
    let bytes = results.iter().map(|(r, files)| read_len(r, files)).sum();
    if let Some(throttle) = quota.map(|q| q.judge(bytes)).filter(|&ms| ms > 0) {
        return (throttled(&broker, version, mode, throttle), Vec::new());
    }
    answer(&broker, version, mode, &wanted, results, read_committed)
}

/// The answer to a fetch over its client quota (Kafka's `getThrottledResponse`): no
/// partitions, so nothing was sent. A full fetch opens no session; an incremental one names
/// its session, whose "last sent" figures stay as they were (its epoch has moved on), unless
/// another request used it meanwhile.
fn throttled(broker: &Broker, version: i16, mode: Mode, throttle_ms: i32) -> FetchResponse {
    let response = match mode {
        Mode::Sessionless | Mode::Full => FetchResponse::default(),
        Mode::Incremental(ticket) => match sessions(broker).check(&ticket) {
            Ok(()) => FetchResponse::default().with_session_id(ticket.id),
            Err(SessionError::NotFound) => {
                refused(version, &BrokerError::UnknownFetchSession(ticket.id), 0)
            }
            Err(_) => refused(
                version,
                &BrokerError::InvalidFetchSessionEpoch(0),
                ticket.id,
            ),
        },
    };
    response.with_throttle_time_ms(throttle_ms)
}

/// Whether reading a partition failed: the fetch answers at once (Kafka's "error while
/// reading data"). Partitions refused before any read (an unknown topic or partition, a
/// denied topic) do not end the wait: Kafka sets them aside before it reads the others.
fn read_failed(wanted: &[Wanted], results: &[Read]) -> bool {
    wanted
        .iter()
        .zip(results)
        .any(|(w, (data, _))| w.partition.is_ok() && data.error_code != 0)
}

/// Whether no partition is readable: with nothing to wait for, the fetch answers at once, as
/// Kafka answers a fetch whose every partition was refused before the read.
fn nothing_to_read(wanted: &[Wanted]) -> bool {
    wanted.iter().all(|w| w.partition.is_err())
}

fn park(wanted: &[Wanted], waiter: &Arc<Notify>) {
    for w in wanted {
        if let Ok(p) = &w.partition {
            p.park(waiter);
        }
    }
}

/// Bytes of records a read found, in memory or left in files.
fn read_len(data: &PartitionData, files: &Option<FileRecords>) -> usize {
    data.records.as_ref().map_or(0, |b| b.len()) + files.as_ref().map_or(0, |f| f.len)
}

/// Why a topic's partitions cannot be read, before looking at each partition.
enum Missing {
    /// Named by an id no topic has.
    Id(Uuid),
    /// Named by a name no topic has.
    Name(Arc<str>),
}

/// A topic looked up for a group of targets.
struct Lookup {
    group: usize,
    found: Result<Arc<Topic>, Missing>,
    /// The topic's name, when known.
    name: Option<Arc<str>>,
    denied: bool,
}

fn lookup(broker: &Broker, t: &Target, authz: &Authz, follower: Option<bool>) -> Lookup {
    let found = match &t.name {
        None => broker
            .topics
            .get_by_id(t.topic_id)
            .ok_or(Missing::Id(t.topic_id)),
        Some(name) => broker.topics.get(name).ok_or(Missing::Name(name.clone())),
    };
    let name = match &found {
        Ok(topic) => Some(Arc::from(topic.name.as_str())),
        Err(_) => t.name.clone(),
    };
    let denied = match follower {
        Some(allowed) => !allowed,
        None => name
            .as_deref()
            .is_some_and(|n| !authz.allows(AclOperation::Read, ResourceType::Topic, n)),
    };
    Lookup {
        group: t.group,
        found,
        name,
        denied,
    }
}

fn resolve(
    broker: &Broker,
    version: i16,
    targets: Vec<Target>,
    authz: &Authz,
    follower: Option<bool>,
) -> Vec<Wanted> {
    // Targets of one group share a topic: it is looked up once per group.
    let mut current: Option<Lookup> = None;
    targets
        .into_iter()
        .map(|mut t| {
            if current.as_ref().is_some_and(|c| c.group != t.group) {
                current = None;
            }
            let topic = current.get_or_insert_with(|| lookup(broker, &t, authz, follower));
            let index = t.partition;
            let error = |e: BrokerError| Err(code(version, &e));
            // A session by ids finds its topics by the names their ids had.
            let by_old_name = t.name.is_some() && !t.topic_id.is_nil();
            let partition = match &topic.found {
                _ if topic.denied => error(BrokerError::Unauthorized(ResourceType::Topic)),
                Err(Missing::Id(id)) => error(BrokerError::UnknownTopicId(*id)),
                Err(Missing::Name(name)) => error(BrokerError::UnknownPartition {
                    topic: name.to_string(),
                    partition: index,
                }),
                Ok(found) => match found.partition(index) {
                    None => error(BrokerError::UnknownPartition {
                        topic: found.name.clone(),
                        partition: index,
                    }),
                    Some(_) if by_old_name && found.id != t.topic_id => {
                        error(BrokerError::InconsistentTopicId {
                            topic: found.name.clone(),
                            id: t.topic_id,
                        })
                    }
                    Some(_) if t.wants.leader_epoch > LEADER_EPOCH => {
                        error(BrokerError::UnknownLeaderEpoch(t.wants.leader_epoch))
                    }
                    Some(partition) => Ok(partition),
                },
            };
            t.name.clone_from(&topic.name);
            Wanted {
                target: t,
                partition,
            }
        })
        .collect()
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
            let (index, offset) = (w.target.partition, w.target.wants.fetch_offset);
            let data = PartitionData::default()
                .with_partition_index(index)
                .with_preferred_read_replica(BrokerId(-1));
            let partition = match &w.partition {
                Ok(p) => p,
                Err(code) => return (error_data(index, *code), None),
            };
            let limit = usize::try_from(w.target.wants.max_bytes)
                .unwrap_or(0)
                .min(remaining);
            let log = &partition.log;
            let read = if in_files {
                log.read_in_place(offset, limit, first_data, read_committed)
            } else {
                log.read_isolated(offset, limit, first_data, read_committed)
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
                            .aborted_transactions(offset, read.last_stable_offset)
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
                        tracing::error!(topic = %partition.topic, partition = index, error = %e, "fetch read failed");
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

/// The answer to send, by the fetch's mode: every partition (with a new session's id for a
/// full fetch), or an incremental fetch's partitions with news.
fn answer(
    broker: &Broker,
    version: i16,
    mode: Mode,
    wanted: &[Wanted],
    results: Vec<Read>,
    read_committed: bool,
) -> (FetchResponse, Vec<Outside<Vec<FileRange>>>) {
    let outcomes: Vec<Outcome> = results
        .iter()
        .map(|(data, files)| Outcome {
            sent: Sent {
                high_watermark: data.high_watermark,
                last_stable_offset: data.last_stable_offset,
                log_start_offset: data.log_start_offset,
            },
            has_records: read_len(data, files) > 0,
            error: data.error_code != 0,
        })
        .collect();
    match mode {
        Mode::Sessionless => build_response(version, wanted, results, None, read_committed),
        Mode::Full => {
            let uses_topic_ids = version >= 13;
            let partitions: Vec<SessionPartition> = wanted
                .iter()
                .zip(&outcomes)
                .filter_map(|(w, o)| {
                    Some(SessionPartition {
                        key: w.target.key(uses_topic_ids)?,
                        resolved_name: w.target.name.clone().filter(|_| uses_topic_ids),
                        wants: w.target.wants,
                        sent: o.sent,
                    })
                })
                .collect();
            let now = broker.clock.now_ms();
            let count = partitions.len();
            let id = sessions(broker).create(now, uses_topic_ids, partitions);
            tracing::debug!(
                session_id = id,
                partitions = count,
                "full fetch: session opened (0: none)"
            );
            let (response, outside) =
                build_response(version, wanted, results, None, read_committed);
            (response.with_session_id(id), outside)
        }
        Mode::Incremental(ticket) => {
            let finished = sessions(broker).finish(&ticket, &outcomes);
            match finished {
                Ok(send) => {
                    let (response, outside) =
                        build_response(version, wanted, results, Some(&send), read_committed);
                    (response.with_session_id(ticket.id), outside)
                }
                // Closed or evicted while this fetch waited.
                Err(SessionError::NotFound) => (
                    refused(version, &BrokerError::UnknownFetchSession(ticket.id), 0),
                    Vec::new(),
                ),
                // Used by another request meanwhile (Kafka answers with the session's id).
                Err(_) => (
                    refused(
                        version,
                        &BrokerError::InvalidFetchSessionEpoch(0),
                        ticket.id,
                    ),
                    Vec::new(),
                ),
            }
        }
    }
}

/// Puts the answers (those `send` keeps, or all) under their topics: consecutive answers of
/// one target group share a topic entry. The record sets left in files are returned beside
/// the response, by the partition's place among the partitions placed in it.
fn build_response(
    version: i16,
    wanted: &[Wanted],
    results: Vec<Read>,
    send: Option<&[bool]>,
    read_committed: bool,
) -> (FetchResponse, Vec<Outside<Vec<FileRange>>>) {
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let mut outside = Vec::new();
    let mut placed = 0;
    let mut group = None;
    for (i, (w, (mut data, files))) in wanted.iter().zip(results).enumerate() {
        if send.is_some_and(|send| !send.get(i).copied().unwrap_or(true)) {
            continue;
        }
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
        if group != Some(w.target.group) {
            group = Some(w.target.group);
            topics.push(topic_entry(version, &w.target));
        }
        if let Some(topic) = topics.last_mut() {
            topic.partitions.push(data);
        }
        if let Some(files) = files {
            outside.push(Outside {
                partition: placed,
                len: files.len,
                records: files.ranges,
            });
        }
        placed += 1;
    }
    (FetchResponse::default().with_responses(topics), outside)
}

/// A response topic entry: named by id from v13 on, by name before.
fn topic_entry(version: i16, target: &Target) -> FetchableTopicResponse {
    if version >= 13 {
        FetchableTopicResponse::default().with_topic_id(target.topic_id)
    } else {
        let name = target.name.as_deref().unwrap_or_default();
        FetchableTopicResponse::default()
            .with_topic(TopicName(StrBytes::from_string(name.to_string())))
    }
}
