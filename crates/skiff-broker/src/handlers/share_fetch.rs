//! ShareFetch (API 78) v1 (KIP-932): a share consumer's piggybacked acknowledgements, then
//! records acquired for it from the partitions of its share session.
//!
//! In Kafka's order: GROUP READ on the group (GROUP_AUTHORIZATION_FAILED for the whole
//! request), a member id of 1 to 36 characters (INVALID_REQUEST), the share session
//! (`share::session`: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
//! SHARE_SESSION_LIMIT_REACHED after `MaxWaitMs` as Kafka, INVALID_REQUEST for
//! acknowledgements in an opening request); then the acknowledgements, durable before the answer (`AcknowledgeErrorCode` per
//! partition); then, unless the session is closing (epoch -1), acquisition: per partition
//! UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED (TOPIC READ), UNKNOWN_TOPIC_OR_PARTITION, or
//! the acquired ranges with the batches holding them. `MaxBytes` (capped by `fetch.max.bytes`)
//! and `MaxRecords` are shared by the partitions in order; the request waits up to
//! `MaxWaitMs` for `MinBytes`, woken by appends to the partitions and by records given back
//! (release, lock expiry). A partition acquires at most once per request, so its batches
//! stay in offset order.
//!
//! A continued session answers only the partitions with something to say (records, an error,
//! an acknowledgement result), as Kafka prunes the rest; an opening one answers all.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{ResponseKind, ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::protocol::StrBytes;
use skiff_coordinator::share_state::SharePartitionKey;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;
use crate::partition::Partition;
use crate::share::acks::{acknowledge_all, batches, AckItem, AckOutcome};
use crate::share::{AcquireLimits, AcquiredData, FetchContext, Pending, SessionError, SessionKey};

pub async fn handle(ctx: &RequestContext, request: ShareFetchRequest) -> Reply {
    let connection = crate::share::connection::current();
    let refuse = |err: BrokerError| {
        Reply::Respond(ResponseKind::ShareFetch(
            ShareFetchResponse::default().with_error_code(ctx.code(&err)),
        ))
    };
    let authz = ctx.authz();
    let (group, member) = match crate::share::share_requester(
        &authz,
        request.group_id.as_ref(),
        request.member_id.as_ref(),
    ) {
        Ok(ids) => ids,
        Err(e) => return refuse(e),
    };
    let broker = ctx.broker.clone();
    let mut wanted: Vec<(Uuid, i32)> = Vec::new();
    let mut acks = Vec::new();
    for topic in &request.topics {
        for p in &topic.partitions {
            wanted.push((topic.topic_id, p.partition_index));
            if !p.acknowledgement_batches.is_empty() {
                acks.push(AckItem {
                    topic_id: topic.topic_id,
                    partition: p.partition_index,
                    batches: batches(
                        p.acknowledgement_batches
                            .iter()
                            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone())),
                    ),
                });
            }
        }
    }
    let forgotten: Vec<(Uuid, i32)> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let key = SessionKey {
        group: group.clone(),
        member: member.clone(),
    };
    let session = broker.share.sessions().fetch(
        &key,
        request.share_session_epoch,
        &wanted,
        &forgotten,
        !acks.is_empty(),
        connection,
    );
    let context = match session {
        Ok(c) => c,
        // Kafka holds the answer for MaxWaitMs first, so a consumer does not retry at once
        // against a full cache.
        Err(e @ SessionError::LimitReached) => {
            let code = ctx.code(&BrokerError::ShareSession(e));
            let wait = Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
            return Reply::Later(Box::pin(async move {
                tokio::time::sleep(wait).await;
                ResponseKind::ShareFetch(ShareFetchResponse::default().with_error_code(code))
            }));
        }
        Err(e) => return refuse(BrokerError::ShareSession(e)),
    };
    broker.share.ensure_timer();
    let settings = broker.share.settings(&group);
    let version = ctx.version();
    let code = move |e: &BrokerError| {
        crate::errors::kafka_error(kafka_protocol::messages::ApiKey::ShareFetch, version, e).code()
    };
    let max_bytes =
        usize::try_from(request.max_bytes.min(broker.config.fetch_max_bytes)).unwrap_or(0);
    let params = Params {
        max_bytes,
        min_bytes: usize::try_from(request.min_bytes)
            .unwrap_or(0)
            .min(max_bytes),
        max_records: u32::try_from(request.max_records).unwrap_or(0),
        batch_size: u32::try_from(request.batch_size).unwrap_or(0),
        max_wait: Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0)),
    };
    Reply::Later(Box::pin(async move {
        let acked = acknowledge_all(&broker, &authz, &group, &member, acks).await;
        let (partitions, prune) = match context {
            FetchContext::Closing => {
                let (b, g, m) = (broker.clone(), group.clone(), member.clone());
                if let Ok(pending) = blocking(move || b.share.close_session(&g, &m)).await {
                    let _ = broker.share.wait_durable(pending).await;
                }
                (Vec::new(), true)
            }
            FetchContext::Opened(p) => (p, false),
            FetchContext::Continued(p) => (p, true),
        };
        let resolved: Vec<Wanted> = partitions
            .into_iter()
            .map(|(topic_id, index)| Wanted {
                topic_id,
                index,
                partition: resolve(&broker, &authz, topic_id, index).map_err(|e| code(&e)),
                acquired: None,
            })
            .collect();
        let fetched = acquire_loop(&broker, &group, &member, resolved, params, &code).await;
        let response = build(fetched, acked, prune, &code).with_acquisition_lock_timeout_ms(
            i32::try_from(settings.lock_duration_ms).unwrap_or(i32::MAX),
        );
        ResponseKind::ShareFetch(response)
    }))
}

#[derive(Clone, Copy)]
struct Params {
    max_bytes: usize,
    min_bytes: usize,
    max_records: u32,
    batch_size: u32,
    max_wait: Duration,
}

struct Wanted {
    topic_id: Uuid,
    index: i32,
    /// The data partition, or the code the partition answers.
    partition: Result<Arc<Partition>, i16>,
    /// Set once the partition acquired (or failed to).
    acquired: Option<Result<AcquiredData, i16>>,
}

/// The data partition of a fetch, in Kafka's order of checks.
fn resolve(
    broker: &Broker,
    authz: &crate::authz::Authz,
    topic_id: Uuid,
    index: i32,
) -> Result<Arc<Partition>, BrokerError> {
    let topic = broker
        .topics
        .get_by_id(topic_id)
        .ok_or(BrokerError::UnknownTopicId(topic_id))?;
    if !authz.allows(AclOperation::Read, ResourceType::Topic, &topic.name) {
        return Err(BrokerError::Unauthorized(ResourceType::Topic));
    }
    topic
        .partition(index)
        .ok_or_else(|| BrokerError::UnknownPartition {
            topic: topic.name.clone(),
            partition: index,
        })
}

/// Acquires from the partitions until `min_bytes` were handed out or `max_wait` passed.
async fn acquire_loop(
    broker: &Arc<Broker>,
    group: &str,
    member: &str,
    mut wanted: Vec<Wanted>,
    params: Params,
    code: &(dyn Fn(&BrokerError) -> i16 + Sync),
) -> Vec<Wanted> {
    let deadline = tokio::time::Instant::now() + params.max_wait;
    let waiter = Arc::new(Notify::new());
    let mut parked = false;
    let mut bytes_so_far = 0usize;
    let mut records_so_far = 0u64;
    loop {
        let open = wanted
            .iter()
            .any(|w| w.partition.is_ok() && w.acquired.is_none());
        if !open || params.max_records == 0 || params.max_bytes == 0 {
            return wanted;
        }
        let b = broker.clone();
        let (g, m) = (group.to_string(), member.to_string());
        let (bytes_before, records_before) = (bytes_so_far, records_so_far);
        // What this round acquires from: the open partitions, in request order.
        let jobs: Vec<(usize, SharePartitionKey, Arc<Partition>)> = wanted
            .iter()
            .enumerate()
            .filter_map(|(i, w)| match (&w.partition, &w.acquired) {
                (Ok(p), None) => Some((
                    i,
                    SharePartitionKey {
                        group: g.clone(),
                        topic_id: w.topic_id,
                        partition: w.index,
                    },
                    p.clone(),
                )),
                _ => None,
            })
            .collect();
        let indexes: Vec<usize> = jobs.iter().map(|j| j.0).collect();
        let round = blocking(move || {
            let mut pending = Pending::default();
            let mut bytes = bytes_before;
            let mut records = records_before;
            let mut got: Vec<(usize, Result<AcquiredData, BrokerError>)> = Vec::new();
            for (i, key, partition) in jobs {
                let left_records = u64::from(params.max_records).saturating_sub(records);
                let left_bytes = params.max_bytes.saturating_sub(bytes);
                if left_records == 0 || left_bytes == 0 {
                    break;
                }
                let limits = AcquireLimits {
                    max_records: u32::try_from(left_records).unwrap_or(u32::MAX),
                    batch_size: params.batch_size,
                    max_bytes: left_bytes,
                };
                let r = b.share.acquire(&key, &partition, &m, limits, &mut pending);
                if let Ok(data) = &r {
                    bytes += data.bytes.len();
                    records += data.count();
                }
                got.push((i, r));
            }
            (got, pending)
        })
        .await;
        let (got, pending) = match round {
            Ok(r) => r,
            // The task failed: every partition it was acquiring from answers the failure.
            Err(e) => {
                for i in indexes {
                    if let Some(w) = wanted.get_mut(i) {
                        w.acquired = Some(Err(code(&e)));
                    }
                }
                return wanted;
            }
        };
        let durable = broker.share.wait_durable(pending).await;
        for (i, r) in got {
            let Some(w) = wanted.get_mut(i) else { continue };
            match r {
                Ok(data) if data.records.is_empty() => {}
                Ok(data) => {
                    bytes_so_far += data.bytes.len();
                    records_so_far += data.count();
                    w.acquired = Some(match &durable {
                        Ok(()) => Ok(data),
                        Err(e) => Err(code(e)),
                    });
                }
                Err(e) => w.acquired = Some(Err(code(&e))),
            }
        }
        let done = (bytes_so_far > 0 && bytes_so_far >= params.min_bytes)
            || params.min_bytes == 0
            || u64::from(params.max_records) <= records_so_far
            || tokio::time::Instant::now() >= deadline;
        if done {
            return wanted;
        }
        if !parked {
            // Park before acquiring again, so a wake-up between the two is not lost.
            for w in &wanted {
                if let Ok(p) = &w.partition {
                    p.park(&waiter);
                    broker.share.park(
                        &SharePartitionKey {
                            group: group.to_string(),
                            topic_id: w.topic_id,
                            partition: w.index,
                        },
                        &waiter,
                    );
                }
            }
            parked = true;
            continue;
        }
        let _ = tokio::time::timeout_at(deadline, waiter.notified()).await;
        parked = false;
    }
}

/// A refused acknowledgement's message, in Kafka's words, as Kafka sends it back.
pub(super) fn ack_error_message(result: &Result<(), BrokerError>) -> Option<StrBytes> {
    match result {
        Err(BrokerError::Share(e)) => e.client_message().map(|m| super::str_bytes(&m)),
        _ => None,
    }
}

fn build(
    fetched: Vec<Wanted>,
    acked: Vec<AckOutcome>,
    prune: bool,
    code: &dyn Fn(&BrokerError) -> i16,
) -> ShareFetchResponse {
    let mut ack_codes: BTreeMap<(Uuid, i32), (i16, Option<StrBytes>)> = acked
        .into_iter()
        .map(|o| {
            let c = o.result.as_ref().err().map_or(0, code);
            ((o.topic_id, o.partition), (c, ack_error_message(&o.result)))
        })
        .collect();
    let mut topics: Vec<ShareFetchableTopicResponse> = Vec::new();
    let mut push = |topic_id: Uuid, data: PartitionData| match topics
        .iter_mut()
        .find(|t| t.topic_id == topic_id)
    {
        Some(t) => t.partitions.push(data),
        None => topics.push(
            ShareFetchableTopicResponse::default()
                .with_topic_id(topic_id)
                .with_partitions(vec![data]),
        ),
    };
    for w in fetched {
        let ack = ack_codes.remove(&(w.topic_id, w.index));
        let mut data = PartitionData::default()
            .with_partition_index(w.index)
            .with_records(Some(Bytes::new()))
            .with_acknowledge_error_code(ack.as_ref().map_or(0, |a| a.0))
            .with_acknowledge_error_message(ack.as_ref().and_then(|a| a.1.clone()));
        let mut quiet = ack.is_none();
        match (w.partition, w.acquired) {
            (Err(c), _) | (Ok(_), Some(Err(c))) => {
                data = data.with_error_code(c);
                quiet = false;
            }
            (Ok(_), Some(Ok(got))) => {
                data = data.with_records(Some(got.bytes)).with_acquired_records(
                    got.records
                        .iter()
                        .map(|r| {
                            AcquiredRecords::default()
                                .with_first_offset(r.first_offset)
                                .with_last_offset(r.last_offset)
                                .with_delivery_count(
                                    i16::try_from(r.delivery_count).unwrap_or(i16::MAX),
                                )
                        })
                        .collect(),
                );
                quiet = false;
            }
            (Ok(_), None) => {}
        }
        if prune && quiet {
            continue;
        }
        push(w.topic_id, data);
    }
    for ((topic_id, index), (c, message)) in ack_codes {
        push(
            topic_id,
            PartitionData::default()
                .with_partition_index(index)
                .with_records(Some(Bytes::new()))
                .with_acknowledge_error_code(c)
                .with_acknowledge_error_message(message),
        );
    }
    ShareFetchResponse::default().with_responses(topics)
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
