//! ShareFetch and ShareAcknowledge called directly on a real broker (temp data dir, manual
//! clock): acquisition, each acknowledgement type, lock expiry, the delivery limit, share
//! session errors, durability across a restart, and releases when a connection ends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckReqBatch,
};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, ResponseKind, ShareAcknowledgeRequest, ShareAcknowledgeResponse,
    ShareFetchRequest, ShareFetchResponse,
};
use skiff_coordinator::share::AutoOffsetReset;
use skiff_log::ManualClock;
use skiff_records::{BatchBuilder, Compression};
use uuid::Uuid;

use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::handlers::str_bytes;
use crate::share::ShareGroupSettings;

const T0: i64 = 1_700_000_000_000;

/// A clean shutdown of `b`, as the broker's own exit path runs it.
async fn shut_down(b: Arc<Broker>) {
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || b2.shutdown())
        .await
        .unwrap()
        .unwrap();
    drop(b);
}

async fn start(dir: &Path, clock: Arc<ManualClock>) -> Arc<Broker> {
    let sets = vec![
        format!("log.dirs={}", dir.display()),
        "offsets.topic.num.partitions=1".to_string(),
    ];
    let (config, _) = skiff_config::load(None, &sets, Vec::<(String, String)>::new()).unwrap();
    let broker = tokio::task::spawn_blocking(move || Broker::builder(config).clock(clock).start())
        .await
        .unwrap()
        .unwrap();
    set_limit(&broker, 5);
    broker
}

/// Every group starts at the earliest offset, with `limit` deliveries.
fn set_limit(broker: &Arc<Broker>, limit: u16) {
    broker
        .share
        .set_settings(Arc::new(move |_: &str| ShareGroupSettings {
            auto_offset_reset: AutoOffsetReset::Earliest,
            delivery_count_limit: limit,
            ..ShareGroupSettings::default()
        }));
}

async fn topic(broker: &Arc<Broker>) -> Uuid {
    let b = broker.clone();
    tokio::task::spawn_blocking(move || b.topics.create("t", 1, Default::default(), false))
        .await
        .unwrap()
        .unwrap()
        .id
}

/// Appends one batch of `n` records to t-0.
async fn produce(broker: &Arc<Broker>, n: usize) {
    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        let mut builder = BatchBuilder::new(0, Compression::None);
        for i in 0..n {
            builder.push(T0, None, Some(format!("v{i}").as_bytes()), &[]);
        }
        let batch = builder.build().unwrap();
        let p = b.topics.get("t").unwrap().partition(0).unwrap();
        p.log.append_internal(&batch, 0, T0).unwrap();
        p.wake_all();
    })
    .await
    .unwrap();
}

async fn answer(
    broker: &Arc<Broker>,
    key: ApiKey,
    reply: impl FnOnce(RequestContext) -> Reply,
) -> ResponseKind {
    let _ = broker;
    match reply(RequestContext::new(broker.clone(), key, 1)) {
        Reply::Respond(r) => r,
        Reply::Later(f) => f.await,
        Reply::LaterInFiles(f) => f.await.into_response().unwrap(),
        _ => panic!("no answer"),
    }
}

fn fetch_request(
    member: &str,
    epoch: i32,
    id: Uuid,
    acks: &[(i64, i64, i8)],
    wait_ms: i32,
) -> ShareFetchRequest {
    let batches = acks
        .iter()
        .map(|(f, l, t)| {
            AcknowledgementBatch::default()
                .with_first_offset(*f)
                .with_last_offset(*l)
                .with_acknowledge_types(vec![*t])
        })
        .collect();
    ShareFetchRequest::default()
        .with_group_id(Some(GroupId(str_bytes("g"))))
        .with_member_id(Some(str_bytes(member)))
        .with_share_session_epoch(epoch)
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_max_records(500)
        .with_topics(vec![FetchTopic::default()
            .with_topic_id(id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(batches)])])
}

async fn share_fetch(broker: &Arc<Broker>, request: ShareFetchRequest) -> ShareFetchResponse {
    let reply = crate::handlers::share_fetch::handle(
        &RequestContext::new(broker.clone(), ApiKey::ShareFetch, 1),
        request,
    )
    .await;
    match answer(broker, ApiKey::ShareFetch, |_| reply).await {
        ResponseKind::ShareFetch(r) => {
            encodes(ApiKey::ShareFetch, ResponseKind::ShareFetch(r.clone()));
            r
        }
        other => panic!("{other:?}"),
    }
}

async fn share_ack(
    broker: &Arc<Broker>,
    member: &str,
    epoch: i32,
    id: Uuid,
    acks: &[(i64, i64, i8)],
) -> ShareAcknowledgeResponse {
    let request = ShareAcknowledgeRequest::default()
        .with_group_id(Some(GroupId(str_bytes("g"))))
        .with_member_id(Some(str_bytes(member)))
        .with_share_session_epoch(epoch)
        .with_topics(vec![AcknowledgeTopic::default()
            .with_topic_id(id)
            .with_partitions(vec![AcknowledgePartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(
                    acks.iter()
                        .map(|(f, l, t)| {
                            AckReqBatch::default()
                                .with_first_offset(*f)
                                .with_last_offset(*l)
                                .with_acknowledge_types(vec![*t])
                        })
                        .collect(),
                )])]);
    let reply = crate::handlers::share_acknowledge::handle(
        &RequestContext::new(broker.clone(), ApiKey::ShareAcknowledge, 1),
        request,
    )
    .await;
    match answer(broker, ApiKey::ShareAcknowledge, |_| reply).await {
        ResponseKind::ShareAcknowledge(r) => {
            encodes(
                ApiKey::ShareAcknowledge,
                ResponseKind::ShareAcknowledge(r.clone()),
            );
            r
        }
        other => panic!("{other:?}"),
    }
}

/// Every answer is a valid v1 response.
fn encodes(key: ApiKey, response: ResponseKind) {
    skiff_protocol::encode_response(1, key, 1, &response).unwrap();
}

/// (first, last, delivery count) of every acquired range.
fn acquired(r: &ShareFetchResponse) -> Vec<(i64, i64, i16)> {
    assert_eq!(r.error_code, 0, "{r:?}");
    r.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .flat_map(|p| p.acquired_records.iter())
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

fn ack_code(r: &ShareFetchResponse) -> i16 {
    r.responses[0].partitions[0].acknowledge_error_code
}

fn spso(broker: &Broker) -> i64 {
    broker.share.partition_states()[0].1
}

#[tokio::test]
async fn accepted_records_are_done_and_the_bytes_come_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 3).await;
    // The group hooks of a group that never used share groups create nothing.
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || {
        b2.share.group_deleted("other");
        b2.share.member_removed("other", "m");
    })
    .await
    .unwrap();
    assert!(
        !b.share.store_is_open(),
        "no share state topic before a share fetch"
    );
    assert!(b.topics.get("__share_group_state").is_none());
    let r = share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(0, 2, 1)]);
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
    let records = r.responses[0].partitions[0].records.clone().unwrap();
    assert!(!records.is_empty());
    assert!(b.share.store_is_open());
    let r = share_fetch(&b, fetch_request("m1", 1, id, &[(0, 2, 1)], 0)).await;
    assert_eq!(ack_code(&r), 0);
    assert!(acquired(&r).is_empty());
    assert_eq!(spso(&b), 3);
    let text = crate::metrics::render::render(&b);
    assert!(
        text.contains("skiff_share_records_accepted_total 3"),
        "{text}"
    );
    assert!(
        text.contains("skiff_share_partition_in_flight_records{group=\"g\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_release_redelivers_with_the_next_delivery_count() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 3).await;
    assert_eq!(
        acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await),
        vec![(0, 2, 1)]
    );
    let r = share_fetch(&b, fetch_request("m1", 1, id, &[(0, 2, 2)], 0)).await;
    assert_eq!(ack_code(&r), 0);
    assert_eq!(acquired(&r), vec![(0, 2, 2)]);
    // /metrics: three records held, all on their second delivery.
    let text = crate::metrics::render::render(&b);
    let labels = format!("group=\"g\",topic_id=\"{id}\",partition=\"0\"");
    assert!(
        text.contains(&format!(
            "skiff_share_partition_acquired_records{{{labels}}} 3"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "skiff_share_partition_unfinished_records{{{labels},delivery_count=\"2\"}} 3"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_reject_archives_and_is_never_redelivered() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 3).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    let r = share_ack(&b, "m1", 1, id, &[(0, 2, 3)]).await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
    let r = share_fetch(&b, fetch_request("m1", 2, id, &[], 0)).await;
    assert!(acquired(&r).is_empty());
    assert_eq!(spso(&b), 3);
    // Acknowledging records the member does not hold: INVALID_RECORD_STATE (121).
    let r = share_ack(&b, "m1", 3, id, &[(0, 0, 1)]).await;
    assert_eq!(
        r.responses[0].partitions[0].error_code, 0,
        "below the start offset: ignored"
    );
    produce(&b, 1).await;
    let r = share_ack(&b, "m1", 4, id, &[(3, 3, 1)]).await;
    assert_ne!(r.responses[0].partitions[0].error_code, 0);
}

#[tokio::test]
async fn an_expired_lock_redelivers_to_another_member() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let b = start(dir.path(), clock.clone()).await;
    let id = topic(&b).await;
    produce(&b, 3).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    assert!(acquired(&share_fetch(&b, fetch_request("m2", 0, id, &[], 0)).await).is_empty());
    clock.advance(30_000);
    let r = share_fetch(&b, fetch_request("m2", 1, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(0, 2, 2)]);
    // m1's lock is gone: its acknowledgement fails.
    let r = share_ack(&b, "m1", 1, id, &[(0, 2, 1)]).await;
    assert_eq!(r.responses[0].partitions[0].error_code, 121);
    assert_eq!(
        b.share
            .metrics
            .lock_expiries
            .load(std::sync::atomic::Ordering::Relaxed),
        3
    );
}

#[tokio::test]
async fn the_expiry_timer_wakes_a_waiting_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let b = start(dir.path(), clock.clone()).await;
    let id = topic(&b).await;
    produce(&b, 1).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    let b2 = b.clone();
    let waiting =
        tokio::spawn(
            async move { share_fetch(&b2, fetch_request("m2", 0, id, &[], 10_000)).await },
        );
    tokio::time::sleep(Duration::from_millis(50)).await;
    clock.advance(30_000);
    let r = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(acquired(&r), vec![(0, 0, 2)]);
}

#[tokio::test]
async fn a_waiting_fetch_is_answered_when_records_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    let b2 = b.clone();
    let waiting =
        tokio::spawn(
            async move { share_fetch(&b2, fetch_request("m1", 0, id, &[], 10_000)).await },
        );
    tokio::time::sleep(Duration::from_millis(50)).await;
    produce(&b, 2).await;
    let r = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(acquired(&r), vec![(0, 1, 1)]);
}

#[tokio::test]
async fn the_delivery_limit_archives_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    set_limit(&b, 2);
    let id = topic(&b).await;
    produce(&b, 1).await;
    assert_eq!(
        acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await),
        vec![(0, 0, 1)]
    );
    assert_eq!(
        acquired(&share_fetch(&b, fetch_request("m1", 1, id, &[(0, 0, 2)], 0)).await),
        vec![(0, 0, 2)]
    );
    let r = share_fetch(&b, fetch_request("m1", 2, id, &[(0, 0, 2)], 0)).await;
    assert_eq!(ack_code(&r), 0);
    assert!(acquired(&r).is_empty());
    assert_eq!(spso(&b), 1);
    assert_eq!(
        b.share
            .metrics
            .archived_at_limit
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

/// read_committed: an open transaction holds the fetch back at the last stable offset; an
/// aborted one is archived, never handed out; the marker offsets go out as Kafka hands them.
#[tokio::test]
async fn read_committed_skips_aborted_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    b.share.set_settings(Arc::new(|_: &str| ShareGroupSettings {
        auto_offset_reset: AutoOffsetReset::Earliest,
        isolation: crate::share::ShareIsolation::ReadCommitted,
        ..ShareGroupSettings::default()
    }));
    let id = topic(&b).await;
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || {
        let p = b2.topics.get("t").unwrap().partition(0).unwrap();
        let mut txn = BatchBuilder::new(0, Compression::None)
            .producer_id(7)
            .producer_epoch(0)
            .base_sequence(0)
            .transactional(true);
        txn.push(T0, None, Some(b"aborted-0"), &[]);
        txn.push(T0, None, Some(b"aborted-1"), &[]);
        let validation = skiff_log::AppendValidation { now_ms: T0 };
        p.log.append(&txn.build().unwrap(), 0, &validation).unwrap();
    })
    .await
    .unwrap();
    // The transaction is open: nothing is stable yet.
    assert!(acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await).is_empty());
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || {
        let p = b2.topics.get("t").unwrap().partition(0).unwrap();
        p.log
            .write_txn_marker(7, 0, 0, skiff_log::ControlType::Abort, 0, T0)
            .unwrap();
    })
    .await
    .unwrap();
    produce(&b, 1).await;
    let r = share_fetch(&b, fetch_request("m1", 1, id, &[], 0)).await;
    // 0-1 aborted (archived), 2 the ABORT marker (handed out; the consumer skips it), 3 data.
    assert_eq!(acquired(&r), vec![(2, 3, 1)]);
    assert_eq!(spso(&b), 2);
}

#[tokio::test]
async fn share_session_errors() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    // SHARE_SESSION_NOT_FOUND (122), INVALID_SHARE_SESSION_EPOCH (123), INVALID_REQUEST (42).
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 1, id, &[], 0))
            .await
            .error_code,
        122
    );
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 0, id, &[(0, 0, 1)], 0))
            .await
            .error_code,
        42
    );
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 0, id, &[], 0))
            .await
            .error_code,
        0
    );
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 5, id, &[], 0))
            .await
            .error_code,
        123
    );
    assert_eq!(share_ack(&b, "m1", 0, id, &[]).await.error_code, 123);
    // Acknowledging in a share partition never fetched: UNKNOWN_TOPIC_OR_PARTITION (3).
    let b2 = b.clone();
    let other =
        tokio::task::spawn_blocking(move || b2.topics.create("u", 1, Default::default(), false))
            .await
            .unwrap()
            .unwrap()
            .id;
    let r = share_ack(&b, "m1", 1, other, &[(0, 0, 1)]).await;
    assert_eq!(r.responses[0].partitions[0].error_code, 3);
    assert_eq!(share_ack(&b, "m2", 1, id, &[]).await.error_code, 122);
    assert_eq!(
        share_fetch(&b, fetch_request("", 0, id, &[], 0))
            .await
            .error_code,
        42
    );
    let long = "x".repeat(37);
    assert_eq!(
        share_fetch(&b, fetch_request(&long, 0, id, &[], 0))
            .await
            .error_code,
        42
    );
    // Closing with -1, then the session is gone.
    assert_eq!(
        share_fetch(&b, fetch_request("m1", -1, id, &[], 0))
            .await
            .error_code,
        0
    );
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 1, id, &[], 0))
            .await
            .error_code,
        122
    );
    // An unknown topic id answers UNKNOWN_TOPIC_ID (100) for its partition.
    let r = share_fetch(
        &b,
        fetch_request("m1", 0, Uuid::from_u64_pair(9, 9), &[], 0),
    )
    .await;
    assert_eq!(r.responses[0].partitions[0].error_code, 100);
}

#[tokio::test]
async fn the_session_cache_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    for i in 0..crate::share::MAX_SHARE_SESSIONS {
        let r = share_fetch(
            &b,
            fetch_request(&format!("m{i}"), 0, id, &[], 0).with_max_records(0),
        )
        .await;
        assert_eq!(r.error_code, 0);
    }
    // SHARE_SESSION_LIMIT_REACHED (133); an existing member may still reopen its own.
    let r = share_fetch(&b, fetch_request("late", 0, id, &[], 0)).await;
    assert_eq!(r.error_code, 133);
    let r = share_fetch(&b, fetch_request("m7", 0, id, &[], 0).with_max_records(0)).await;
    assert_eq!(r.error_code, 0);
}

/// MaxRecords is met with whole log batches; a continued session fetches its partitions
/// without naming them, answers only those with something to say, and forgets what the
/// request lists in ForgottenTopicsData.
#[tokio::test]
async fn max_records_whole_batches_and_forgotten_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 2).await;
    produce(&b, 2).await;
    produce(&b, 2).await;
    let r = share_fetch(&b, fetch_request("m1", 0, id, &[], 0).with_max_records(1)).await;
    assert_eq!(acquired(&r), vec![(0, 1, 1)]);
    let continued = ShareFetchRequest::default()
        .with_group_id(Some(GroupId(str_bytes("g"))))
        .with_member_id(Some(str_bytes("m1")))
        .with_share_session_epoch(1)
        .with_max_bytes(1 << 20)
        .with_max_records(3);
    let r = share_fetch(&b, continued.clone()).await;
    assert_eq!(acquired(&r), vec![(2, 5, 1)]);
    // Nothing left: a continued session leaves the partition out of the answer.
    let r = share_fetch(&b, continued.clone().with_share_session_epoch(2)).await;
    assert!(r.responses.is_empty(), "{r:?}");
    let forget = kafka_protocol::messages::share_fetch_request::ForgottenTopic::default()
        .with_topic_id(id)
        .with_partitions(vec![0]);
    let r = share_fetch(
        &b,
        continued
            .clone()
            .with_share_session_epoch(3)
            .with_forgotten_topics_data(vec![forget]),
    )
    .await;
    assert!(r.responses.is_empty());
    produce(&b, 1).await;
    let r = share_fetch(&b, continued.with_share_session_epoch(4)).await;
    assert!(acquired(&r).is_empty(), "the partition was forgotten");
}

#[tokio::test]
async fn closing_a_session_releases_the_members_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 2).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    assert_eq!(
        share_ack(&b, "m1", -1, id, &[(0, 0, 1)]).await.error_code,
        0
    );
    let r = share_fetch(&b, fetch_request("m2", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(1, 1, 2)]);
}

#[tokio::test]
async fn a_dropped_connection_releases_its_sessions_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 2).await;
    let r =
        crate::share::connection::scope(42, share_fetch(&b, fetch_request("m1", 0, id, &[], 0)))
            .await;
    assert_eq!(acquired(&r), vec![(0, 1, 1)]);
    b.share.connection_closed(7); // another connection: nothing happens
    assert!(acquired(&share_fetch(&b, fetch_request("m2", 0, id, &[], 0)).await).is_empty());
    b.share.connection_closed(42);
    let mut got = Vec::new();
    for epoch in 1..200 {
        got = acquired(&share_fetch(&b, fetch_request("m2", epoch, id, &[], 0)).await);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(got, vec![(0, 1, 2)]);
    assert_eq!(
        share_fetch(&b, fetch_request("m1", 1, id, &[], 0))
            .await
            .error_code,
        122
    );
}

#[tokio::test]
async fn member_removed_releases_and_group_deleted_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 2).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || b2.share.member_removed("g", "m1"))
        .await
        .unwrap();
    assert_eq!(
        acquired(&share_fetch(&b, fetch_request("m2", 0, id, &[], 0)).await),
        vec![(0, 1, 2)]
    );
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || b2.share.group_deleted("g"))
        .await
        .unwrap();
    assert!(b.share.partition_states().is_empty());
    assert!(b.share.store().unwrap().snapshots().is_empty());
}

/// The group coordinator's listener is wired: a member leaving its share group with a
/// ShareGroupHeartbeat at epoch -1 gets its records released.
#[tokio::test]
async fn a_member_leaving_its_share_group_releases_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    while !b.coordinator.is_loaded() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let id = topic(&b).await;
    produce(&b, 2).await;
    let heartbeat = |epoch: i32| {
        kafka_protocol::messages::ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes("m1"))
            .with_member_epoch(epoch)
            .with_subscribed_topic_names(
                (epoch == 0).then(|| vec![crate::handlers::topic_name("t")]),
            )
    };
    let joined = crate::handlers::share_group_heartbeat::handle(
        &RequestContext::new(b.clone(), ApiKey::ShareGroupHeartbeat, 1),
        heartbeat(0),
    )
    .await;
    let _ = answer(&b, ApiKey::ShareGroupHeartbeat, |_| joined).await;
    assert_eq!(
        acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await),
        vec![(0, 1, 1)]
    );
    let left = crate::handlers::share_group_heartbeat::handle(
        &RequestContext::new(b.clone(), ApiKey::ShareGroupHeartbeat, 1),
        heartbeat(-1),
    )
    .await;
    match answer(&b, ApiKey::ShareGroupHeartbeat, |_| left).await {
        ResponseKind::ShareGroupHeartbeat(r) => assert_eq!(r.error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    let mut got = Vec::new();
    for epoch in 0..200 {
        got = acquired(&share_fetch(&b, fetch_request("m2", epoch, id, &[], 0)).await);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(got, vec![(0, 1, 2)]);
}

#[tokio::test]
async fn deleting_the_topic_deletes_its_share_state() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 1).await;
    acquired(&share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await);
    assert_eq!(b.share.store().unwrap().snapshots().len(), 1);
    let b2 = b.clone();
    tokio::task::spawn_blocking(move || b2.delete_topic("t"))
        .await
        .unwrap()
        .unwrap();
    assert!(b.share.partition_states().is_empty());
    assert!(b.share.store().unwrap().snapshots().is_empty());
    let r = share_fetch(&b, fetch_request("m1", 1, id, &[], 0)).await;
    assert_eq!(r.responses[0].partitions[0].error_code, 100);
}

/// Acknowledged records stay done after a crash; records acquired but not acknowledged come
/// back, with their delivery counted. The data dir is copied while the broker runs (no clean
/// shutdown, as after kill -9), once the acknowledgement was answered.
#[tokio::test]
async fn acknowledgements_survive_a_crash_and_unacknowledged_records_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), Arc::new(ManualClock::new(T0))).await;
    let id = topic(&b).await;
    produce(&b, 3).await;
    produce(&b, 3).await;
    let r = share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(0, 5, 1)]);
    let r = share_ack(&b, "m1", 1, id, &[(0, 2, 1)]).await;
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
    // The answer came after the fsync: everything written to the share state is flushed.
    assert_all_flushed(&b);
    let copy = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), copy.path());
    let c = start(copy.path(), Arc::new(ManualClock::new(T0 + 1))).await;
    assert!(
        c.share.store_is_open(),
        "an existing share state topic is replayed at start"
    );
    let r = share_fetch(&c, fetch_request("m2", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(3, 5, 2)]);
    drop(c);
    // And the same after a clean restart on the same data dir.
    shut_down(b).await;
    let b = start(dir.path(), Arc::new(ManualClock::new(T0 + 2))).await;
    let r = share_fetch(&b, fetch_request("m3", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(3, 5, 2)]);
}

/// The housekeeper's share state jobs, run by hand on the manual clock: after 5 minutes the
/// share partition's initial snapshot is old, so it is written again (a cold snapshot) and
/// everything before it is deleted. The state is the same after a crash (no log-start
/// checkpoint: the deleted records come back, and are redundant) and after a clean restart
/// (the log start stays where pruning put it).
#[tokio::test]
async fn cold_snapshots_and_pruning_shrink_the_share_state_and_keep_it_the_same() {
    use skiff_coordinator::share_state::{partition_for, SharePartitionKey};
    const MIN: i64 = 60_000;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let b = start(dir.path(), clock.clone()).await;
    let id = topic(&b).await;
    produce(&b, 10).await;
    let r = share_fetch(&b, fetch_request("m1", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(0, 9, 1)]);
    for epoch in 1..=5 {
        let offset = i64::from(epoch) - 1;
        let r = share_ack(&b, "m1", epoch, id, &[(offset, offset, 1)]).await;
        assert_eq!(r.responses[0].partitions[0].error_code, 0);
    }
    let key = SharePartitionKey {
        group: "g".into(),
        topic_id: id,
        partition: 0,
    };
    let home = partition_for(&key, 50);
    let state_log = |b: &Broker| {
        b.topics
            .get("__share_group_state")
            .unwrap()
            .partition(home)
            .unwrap()
            .log
            .clone()
    };
    // The initial snapshot, then one update per acknowledgement.
    assert_eq!(state_log(&b).log_end_offset(), 6);

    let jobs = |b: &Arc<Broker>| {
        let b = b.clone();
        tokio::task::spawn_blocking(move || {
            let mut jobs = crate::background::ShareStateJobs::new(&b, T0);
            jobs.run_due(&b);
        })
    };
    clock.set(T0 + 5 * MIN - 1);
    jobs(&b).await.unwrap();
    assert_eq!(state_log(&b).log_start_offset(), 0, "nothing due yet");
    assert_eq!(state_log(&b).log_end_offset(), 6);
    clock.set(T0 + 5 * MIN);
    jobs(&b).await.unwrap();
    let log = state_log(&b);
    assert_eq!(log.log_end_offset(), 7, "a cold snapshot");
    assert_eq!(log.log_start_offset(), 6, "everything before it pruned");
    assert!(log.read(0, 1 << 20, true).is_err());
    let before = b.share.store().unwrap().get(&key).unwrap();
    assert_eq!(before.state.start_offset, 5);
    assert_eq!(
        (before.create_timestamp, before.write_timestamp),
        (T0, T0 + 5 * MIN)
    );

    // A crash: the log-start checkpoint was not written, so the log starts at 0 again.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), copy.path());
    let c = start(copy.path(), Arc::new(ManualClock::new(T0 + 6 * MIN))).await;
    assert_eq!(state_log(&c).log_start_offset(), 0);
    assert_eq!(c.share.store().unwrap().get(&key), Some(before.clone()));
    drop(c);

    // A clean restart keeps the pruned log start.
    shut_down(b).await;
    let b = start(dir.path(), Arc::new(ManualClock::new(T0 + 6 * MIN))).await;
    assert_eq!(state_log(&b).log_start_offset(), 6);
    assert_eq!(b.share.store().unwrap().get(&key), Some(before));
    let r = share_fetch(&b, fetch_request("m2", 0, id, &[], 0)).await;
    assert_eq!(acquired(&r), vec![(5, 9, 2)]);
}

fn assert_all_flushed(b: &Broker) {
    let topic = b.topics.get("__share_group_state").unwrap();
    let mut written = 0;
    for p in topic.partitions() {
        assert_eq!(
            p.log.flushed_offset(),
            p.log.log_end_offset(),
            "partition {}",
            p.index
        );
        written += p.log.log_end_offset();
    }
    assert!(written >= 2, "the initial snapshot and the acknowledgement");
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != ".lock" {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
