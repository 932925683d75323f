//! Client quotas end to end: AlterClientQuotas / DescribeClientQuotas through dispatch
//! (match types, defaults, strict, validation, validate_only), durability across a restart,
//! and enforcement: a producer over its byte rate is throttled and muted while another client
//! is not, a consumer over its byte rate gets an empty throttled fetch, the request-time
//! quota, and the controller mutation quota (THROTTLING_QUOTA_EXCEEDED, 89).
#![allow(clippy::unwrap_used)]

mod common;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_broker::acl_operations::Principal;
use skiff_broker::dispatch::{dispatch_as, Reply};
use skiff_broker::Broker;
use skiff_protocol::DecodedRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One request through dispatch as `user` with `client_id`.
async fn call_as(
    broker: &Arc<Broker>,
    user: &str,
    client_id: &str,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> ResponseKind {
    let request = DecodedRequest {
        api_key: key.into(),
        api_version: version,
        header: RequestHeader::default().with_client_id(Some(s(client_id))),
        body: body.into(),
    };
    let principal = Principal {
        kind: "User",
        name: Cow::Owned(user.to_string()),
    };
    match dispatch_as(broker, request, "/127.0.0.1", "", principal).await {
        Reply::Respond(r) => r,
        Reply::Later(f) => f.await,
        Reply::LaterInFiles(f) => f.await.into_response().unwrap(),
        _ => panic!("{key:?}: no response"),
    }
}

type Entity<'a> = &'a [(&'a str, Option<&'a str>)];

fn alter_entry(
    entity: Entity,
    ops: &[(&str, Option<f64>)],
) -> alter_client_quotas_request::EntryData {
    use alter_client_quotas_request::*;
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(s(t))
                        .with_entity_name(n.map(s))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(k, v)| {
                    OpData::default()
                        .with_key(s(k))
                        .with_value(v.unwrap_or(0.0))
                        .with_remove(v.is_none())
                })
                .collect(),
        )
}

/// `(code, message)` per response entry.
async fn alter(
    broker: &Arc<Broker>,
    version: i16,
    entries: Vec<alter_client_quotas_request::EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let body = RequestKind::AlterClientQuotas(
        AlterClientQuotasRequest::default()
            .with_entries(entries)
            .with_validate_only(validate_only),
    );
    match common::call(broker, ApiKey::AlterClientQuotas, version, body).await {
        ResponseKind::AlterClientQuotas(r) => r
            .entries
            .into_iter()
            .map(|e| (e.error_code, e.error_message.map(|m| m.to_string())))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// Describe with `(type, match type, match)` components: the entities as
/// `type=name|type=<default>` strings with their values, or the error.
async fn describe(
    broker: &Arc<Broker>,
    version: i16,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Result<Vec<(String, Vec<(String, f64)>)>, (i16, String)> {
    use describe_client_quotas_request::ComponentData;
    let body = RequestKind::DescribeClientQuotas(
        DescribeClientQuotasRequest::default()
            .with_components(
                components
                    .iter()
                    .map(|(t, m, n)| {
                        ComponentData::default()
                            .with_entity_type(s(t))
                            .with_match_type(*m)
                            .with_match(n.map(s))
                    })
                    .collect(),
            )
            .with_strict(strict),
    );
    match common::call(broker, ApiKey::DescribeClientQuotas, version, body).await {
        ResponseKind::DescribeClientQuotas(r) if r.error_code != 0 => Err((
            r.error_code,
            r.error_message.map(|m| m.to_string()).unwrap_or_default(),
        )),
        ResponseKind::DescribeClientQuotas(r) => {
            let mut rows: Vec<_> = r
                .entries
                .unwrap()
                .into_iter()
                .map(|e| {
                    let entity: Vec<String> = e
                        .entity
                        .iter()
                        .map(|x| {
                            format!(
                                "{}={}",
                                x.entity_type.as_str(),
                                x.entity_name.as_ref().map_or("<default>", |n| n.as_str())
                            )
                        })
                        .collect();
                    let values = e
                        .values
                        .iter()
                        .map(|v| (v.key.to_string(), v.value))
                        .collect();
                    (entity.join("|"), values)
                })
                .collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(rows)
        }
        other => panic!("{other:?}"),
    }
}

fn names(rows: &[(String, Vec<(String, f64)>)]) -> Vec<&str> {
    rows.iter().map(|(n, _)| n.as_str()).collect()
}

#[tokio::test]
async fn alter_then_describe_round_trip_with_match_types_defaults_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    for version in [0, 1] {
        assert_eq!(
            describe(&broker, version, &[], false).await.unwrap(),
            vec![]
        );
    }
    let answers = alter(
        &broker,
        1,
        vec![
            alter_entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", Some(1024.0))],
            ),
            alter_entry(&[("user", None)], &[("consumer_byte_rate", Some(2048.0))]),
            alter_entry(
                &[("user", Some("alice")), ("client-id", None)],
                &[
                    ("request_percentage", Some(12.5)),
                    ("controller_mutation_rate", Some(3.0)),
                ],
            ),
            alter_entry(
                &[("client-id", Some("app"))],
                &[("producer_byte_rate", Some(4096.0))],
            ),
            alter_entry(
                &[("client-id", None)],
                &[("producer_byte_rate", Some(100.0))],
            ),
            alter_entry(&[("user", Some("bob"))], &[("nope", Some(1.0))]),
            alter_entry(
                &[("ip", Some("127.0.0.1"))],
                &[("connection_creation_rate", Some(5.0))],
            ),
            alter_entry(
                &[("user", Some("carol"))],
                &[("consumer_byte_rate", Some(1.5))],
            ),
            alter_entry(
                &[("user", Some("dave"))],
                &[("producer_byte_rate", Some(0.0))],
            ),
        ],
        false,
    )
    .await;
    assert_eq!(
        answers,
        vec![
            (0, None),
            (0, None),
            (0, None),
            (0, None),
            (0, None),
            (42, Some("Invalid configuration key nope".into())),
            (42, Some("Unhandled client quota entity type: ip".into())),
            (
                42,
                Some("consumer_byte_rate cannot be a fractional value.".into())
            ),
            (
                42,
                Some("Quota producer_byte_rate must be greater than 0".into())
            ),
        ]
    );
    // validate_only answers the same and stores nothing.
    let checked = alter(
        &broker,
        0,
        vec![alter_entry(
            &[("user", Some("zed"))],
            &[("producer_byte_rate", Some(10.0))],
        )],
        true,
    )
    .await;
    assert_eq!(checked, vec![(0, None)]);

    let all = describe(&broker, 1, &[], false).await.unwrap();
    assert_eq!(
        names(&all),
        vec![
            "client-id=<default>",
            "client-id=app",
            "user=<default>",
            "user=alice",
            "user=alice|client-id=<default>"
        ]
    );
    let alice = describe(&broker, 0, &[("user", 0, Some("alice"))], false)
        .await
        .unwrap();
    assert_eq!(
        names(&alice),
        vec!["user=alice", "user=alice|client-id=<default>"]
    );
    let alice_only = describe(&broker, 1, &[("user", 0, Some("alice"))], true)
        .await
        .unwrap();
    assert_eq!(
        alice_only,
        vec![(
            "user=alice".to_string(),
            vec![("producer_byte_rate".to_string(), 1024.0)]
        )]
    );
    let default_user = describe(&broker, 1, &[("user", 1, None)], true)
        .await
        .unwrap();
    assert_eq!(names(&default_user), vec!["user=<default>"]);
    let any_user = describe(&broker, 1, &[("user", 2, None)], true)
        .await
        .unwrap();
    assert_eq!(names(&any_user), vec!["user=<default>", "user=alice"]);
    let any_client = describe(&broker, 1, &[("client-id", 2, None)], false)
        .await
        .unwrap();
    assert_eq!(
        names(&any_client),
        vec![
            "client-id=<default>",
            "client-id=app",
            "user=alice|client-id=<default>"
        ]
    );
    let pair = describe(
        &broker,
        1,
        &[("user", 0, Some("alice")), ("client-id", 1, None)],
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        pair[0].1,
        vec![
            ("controller_mutation_rate".to_string(), 3.0),
            ("request_percentage".to_string(), 12.5)
        ]
    );
    // Bad filters: Kafka's codes and messages at the top level.
    assert_eq!(
        describe(&broker, 1, &[("group", 2, None)], false)
            .await
            .unwrap_err(),
        (35, "Unsupported entity type group".into())
    );
    assert_eq!(
        describe(&broker, 1, &[("user", 0, None)], false)
            .await
            .unwrap_err(),
        (
            42,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.".into()
        )
    );
    assert_eq!(
        describe(&broker, 1, &[("ip", 2, None), ("user", 2, None)], false)
            .await
            .unwrap_err()
            .0,
        42
    );

    // Remove one value: the entity goes when its last value goes.
    let removed = alter(
        &broker,
        1,
        vec![alter_entry(
            &[("client-id", Some("app"))],
            &[("producer_byte_rate", None)],
        )],
        false,
    )
    .await;
    assert_eq!(removed, vec![(0, None)]);

    // Durable: a restart on the same data dir describes the same set.
    common::stop(broker).await;
    let broker = common::broker(dir.path()).start().await;
    let after = describe(&broker, 1, &[], false).await.unwrap();
    assert_eq!(
        names(&after),
        vec![
            "client-id=<default>",
            "user=<default>",
            "user=alice",
            "user=alice|client-id=<default>"
        ]
    );
    assert!(dir.path().join("client-quotas.json").exists());
    common::stop(broker).await;
}

fn produce(topic: &str, value_len: usize) -> ProduceRequest {
    use produce_request::*;
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(common::one_record_batch(value_len)))])])
}

fn frame<R: Encodable>(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &R,
) -> Bytes {
    common::request_frame(key, version, correlation_id, client_id, body)
}

/// Sends one Produce v9 and returns (its response's throttle_time_ms, error code, latency).
async fn produce_over(
    stream: &mut TcpStream,
    client_id: &str,
    corr: i32,
    value_len: usize,
) -> (i32, i16, Duration) {
    let started = Instant::now();
    stream
        .write_all(&frame(
            ApiKey::Produce,
            9,
            corr,
            client_id,
            &produce("t", value_len),
        ))
        .await
        .unwrap();
    let mut body = common::read_frame(stream, Duration::from_secs(20))
        .await
        .expect("a Produce response within 20 s");
    let header = ResponseHeader::decode(&mut body, 1).unwrap();
    assert_eq!(header.correlation_id, corr);
    let r = ProduceResponse::decode(&mut body, 9).unwrap();
    let code = r.responses[0].partition_responses[0].error_code;
    (r.throttle_time_ms, code, started.elapsed())
}

#[tokio::test]
async fn a_producer_over_its_byte_rate_is_throttled_and_muted_while_another_is_not() {
    let dir = tempfile::tempdir().unwrap();
    // Two samples of one second: the rate is divided by at least one second, so the test
    // reaches its steady state within a second or two.
    let served = common::broker(dir.path())
        .sets(&["quota.window.num=2", "quota.window.size.seconds=1"])
        .serve()
        .await;
    common::create_topic(&served.broker, "t", 1).await;
    const QUOTA: f64 = 100_000.0;
    let set = alter(
        &served.broker,
        1,
        vec![alter_entry(
            &[("client-id", Some("greedy"))],
            &[("producer_byte_rate", Some(QUOTA))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);

    let addr = served.addr;
    let run_for = Duration::from_secs(3);
    // The greedy client sends 25 kB batches back to back and ignores the throttle.
    let greedy = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let (mut sent, mut throttles, mut muted_ok) = (0usize, Vec::new(), true);
        let started = Instant::now();
        let mut last_throttle = 0;
        let mut corr = 0;
        while started.elapsed() < run_for {
            let (throttle, code, latency) = produce_over(&mut stream, "greedy", corr, 25_000).await;
            assert_eq!(code, 0);
            // The request after a throttled response waits out the mute.
            if last_throttle > 50
                && latency < Duration::from_millis(u64::try_from(last_throttle).unwrap() * 8 / 10)
            {
                muted_ok = false;
            }
            last_throttle = throttle;
            throttles.push(throttle);
            sent += 25_000;
            corr += 1;
        }
        (sent, throttles, muted_ok, started.elapsed())
    });
    // Meanwhile a client without a quota sends the same batches.
    let mut other = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let (mut other_sent, mut other_worst) = (0usize, Duration::ZERO);
    let mut corr = 0;
    while started.elapsed() < run_for {
        let (throttle, code, latency) = produce_over(&mut other, "polite", corr, 25_000).await;
        assert_eq!(
            (throttle, code),
            (0, 0),
            "the unthrottled client is never throttled"
        );
        other_worst = other_worst.max(latency);
        other_sent += 25_000;
        corr += 1;
    }
    let (sent, throttles, muted_ok, elapsed) = greedy.await.unwrap();
    let throughput = sent as f64 / elapsed.as_secs_f64();
    eprintln!(
        "greedy: {sent} B in {elapsed:?} = {throughput:.0} B/s (quota {QUOTA}), {} requests, max throttle {:?} ms; polite: {other_sent} B, worst latency {other_worst:?}",
        throttles.len(),
        throttles.iter().max()
    );
    assert!(throttles.iter().any(|&t| t > 0), "{throttles:?}");
    assert!(throttles.iter().all(|&t| t <= 2_000), "{throttles:?}");
    let stats = served.broker.quotas.throttle_stats();
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert_eq!(
        (
            stats[0].quota,
            stats[0].user.as_str(),
            stats[0].client_id.as_str()
        ),
        ("producer_byte_rate", "", "greedy")
    );
    let throttled = throttles.iter().filter(|&&t| t > 0).count() as u64;
    assert_eq!(stats[0].throttled, throttled);
    assert!(
        muted_ok,
        "a request after a throttled response was handled before the mute ended"
    );
    // Bounded near the quota: one window's burst plus the quota over the run.
    assert!(throughput < 2.0 * QUOTA, "{throughput} B/s");
    assert!(throughput > 0.5 * QUOTA, "{throughput} B/s");
    // The other client kept going at full speed.
    assert!(
        other_sent > 4 * sent,
        "polite {other_sent} vs greedy {sent}"
    );
    assert!(other_worst < Duration::from_secs(1), "{other_worst:?}");
}

fn fetch(topic: &str, max_bytes: i32) -> FetchRequest {
    use fetch_request::*;
    FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(s(topic)))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(max_bytes)])])
}

fn fetched(r: &ResponseKind) -> (i32, usize) {
    let ResponseKind::Fetch(r) = r else {
        panic!("{r:?}")
    };
    let bytes = r
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
        .sum();
    (r.throttle_time_ms, bytes)
}

#[tokio::test]
async fn a_consumer_over_its_byte_rate_gets_a_throttled_empty_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    common::create_topic(&broker, "t", 1).await;
    for i in 0..4 {
        let r = call_as(
            &broker,
            "alice",
            "w",
            ApiKey::Produce,
            9,
            RequestKind::Produce(produce("t", 20_000)),
        )
        .await;
        let ResponseKind::Produce(r) = r else {
            panic!()
        };
        assert_eq!(
            r.responses[0].partition_responses[0].error_code, 0,
            "{i} {r:?}"
        );
    }
    // 2100 B/s for alice: a fetch may return at most 10 windows' worth, 21 000 bytes.
    let set = alter(
        &broker,
        1,
        vec![alter_entry(
            &[("user", Some("alice"))],
            &[("consumer_byte_rate", Some(2_100.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);
    let first = call_as(
        &broker,
        "alice",
        "r",
        ApiKey::Fetch,
        12,
        RequestKind::Fetch(fetch("t", 1 << 20)),
    )
    .await;
    let (throttle, bytes) = fetched(&first);
    // max_bytes was capped to 21 000: the first batch (about 20 070 bytes) and no more,
    // within the quota (20 070 bytes over 10 windows).
    assert!(bytes > 20_000 && bytes < 21_000, "{bytes}");
    assert_eq!(throttle, 0);
    let second = call_as(
        &broker,
        "alice",
        "r",
        ApiKey::Fetch,
        12,
        RequestKind::Fetch(fetch("t", 1 << 20)),
    )
    .await;
    let (throttle, bytes) = fetched(&second);
    assert!(throttle > 5_000, "{throttle}");
    assert_eq!(bytes, 0, "a throttled fetch returns no records");
    // Bob has no quota.
    let bob = call_as(
        &broker,
        "bob",
        "r",
        ApiKey::Fetch,
        12,
        RequestKind::Fetch(fetch("t", 1 << 20)),
    )
    .await;
    let (throttle, bytes) = fetched(&bob);
    assert_eq!(throttle, 0);
    assert!(bytes > 80_000, "{bytes}");
    common::stop(broker).await;
}

/// A session fetch (v12, by name) of `topic` partitions `(partition, fetch offset)`.
fn session_fetch(id: i32, epoch: i32, topic: &str, parts: &[(i32, i64)]) -> FetchRequest {
    use fetch_request::*;
    FetchRequest::default()
        .with_session_id(id)
        .with_session_epoch(epoch)
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(s(topic)))
            .with_partitions(
                parts
                    .iter()
                    .map(|&(p, offset)| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(1 << 20)
                    })
                    .collect(),
            )])
}

async fn fetch_as_alice(broker: &Arc<Broker>, request: FetchRequest) -> FetchResponse {
    match call_as(
        broker,
        "alice",
        "r",
        ApiKey::Fetch,
        12,
        RequestKind::Fetch(request),
    )
    .await
    {
        ResponseKind::Fetch(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_throttled_fetch_opens_no_session_and_leaves_an_open_one_unsent() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    common::create_topic(&broker, "t", 2).await;
    for _ in 0..4 {
        call_as(
            &broker,
            "w",
            "w",
            ApiKey::Produce,
            9,
            RequestKind::Produce(produce("t", 20_000)),
        )
        .await;
    }
    // One record in t-1, which the session will fetch from its end.
    let mut one = produce("t", 10);
    one.topic_data[0].partition_data[0].index = 1;
    call_as(
        &broker,
        "w",
        "w",
        ApiKey::Produce,
        9,
        RequestKind::Produce(one),
    )
    .await;
    let set = alter(
        &broker,
        1,
        vec![alter_entry(
            &[("user", Some("alice"))],
            &[("consumer_byte_rate", Some(2_100.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);
    let parts = [(0, 0), (1, 1)];
    // Within the quota: the session opens.
    let first = fetch_as_alice(&broker, session_fetch(0, 0, "t", &parts)).await;
    assert_eq!(first.throttle_time_ms, 0);
    assert_ne!(first.session_id, 0);
    let id = first.session_id;
    // Over it: a full fetch answers nothing and opens no session.
    let full = fetch_as_alice(&broker, session_fetch(0, 0, "t", &parts)).await;
    assert!(full.throttle_time_ms > 0, "{full:?}");
    assert!(full.responses.is_empty(), "{full:?}");
    assert_eq!(
        full.session_id, 0,
        "a throttled full fetch opened a session"
    );
    // t-1's log start moves on: news for the session, with no records.
    let delete = DeleteRecordsRequest::default().with_topics(vec![
        delete_records_request::DeleteRecordsTopic::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default()
                    .with_partition_index(1)
                    .with_offset(1),
            ]),
    ]);
    let deleted = common::call(
        &broker,
        ApiKey::DeleteRecords,
        2,
        RequestKind::DeleteRecords(delete),
    )
    .await;
    let ResponseKind::DeleteRecords(deleted) = deleted else {
        panic!("{deleted:?}")
    };
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
    // The incremental fetch is throttled: the session answers with its id and nothing else.
    let throttled = fetch_as_alice(&broker, session_fetch(id, 1, "t", &[])).await;
    assert!(throttled.throttle_time_ms > 0, "{throttled:?}");
    assert_eq!((throttled.error_code, throttled.session_id), (0, id));
    assert!(throttled.responses.is_empty(), "{throttled:?}");
    // With the quota lifted, the next epoch still brings t-1's news: the throttled fetch
    // did not count it as sent.
    let lifted = alter(
        &broker,
        1,
        vec![alter_entry(
            &[("user", Some("alice"))],
            &[("consumer_byte_rate", None)],
        )],
        false,
    )
    .await;
    assert_eq!(lifted, vec![(0, None)]);
    let next = fetch_as_alice(&broker, session_fetch(id, 2, "t", &[])).await;
    assert_eq!(
        (next.error_code, next.session_id, next.throttle_time_ms),
        (0, id, 0)
    );
    let t1 = next.responses[0]
        .partitions
        .iter()
        .find(|p| p.partition_index == 1)
        .unwrap_or_else(|| panic!("t-1's new log start was never sent: {next:?}"));
    assert_eq!(t1.log_start_offset, 1);
    common::stop(broker).await;
}

/// User `busy` gets `request_percentage` 0.0001: 1 µs of request time per second, 10 µs over
/// the 10 s window, so a few requests put it over.
async fn give_busy_a_tiny_request_time_quota(broker: &Arc<Broker>) {
    let set = alter(
        broker,
        0,
        vec![alter_entry(
            &[("user", Some("busy"))],
            &[("request_percentage", Some(0.0001))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);
}

#[tokio::test]
async fn the_request_time_quota_throttles_at_most_one_window() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    give_busy_a_tiny_request_time_quota(&broker).await;
    let mut throttles = Vec::new();
    for _ in 0..200 {
        let r = call_as(
            &broker,
            "busy",
            "c",
            ApiKey::Metadata,
            12,
            RequestKind::Metadata(MetadataRequest::default()),
        )
        .await;
        let ResponseKind::Metadata(r) = r else {
            panic!()
        };
        throttles.push(r.throttle_time_ms);
    }
    assert!(throttles.iter().any(|&t| t > 0), "{throttles:?}");
    assert!(
        throttles.iter().all(|&t| t <= 1_000),
        "capped at quota.window.size.seconds: {throttles:?}"
    );
    let r = call_as(
        &broker,
        "idle",
        "c",
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default()),
    )
    .await;
    let ResponseKind::Metadata(r) = r else {
        panic!()
    };
    assert_eq!(r.throttle_time_ms, 0);
    common::stop(broker).await;
}

#[tokio::test]
async fn the_request_time_quota_throttles_answers_of_apis_skiff_codes_itself() {
    use skiff_protocol::streams::describe::StreamsGroupDescribeRequest;
    use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    give_busy_a_tiny_request_time_quota(&broker).await;
    let mut throttles = Vec::new();
    for _ in 0..200 {
        let request = DecodedRequest {
            api_key: OwnApi::StreamsGroupDescribe.into(),
            api_version: 1,
            header: RequestHeader::default().with_client_id(Some(s("c"))),
            body: OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
                group_ids: vec!["g".into()],
                ..Default::default()
            })
            .into(),
        };
        let principal = Principal {
            kind: "User",
            name: Cow::Borrowed("busy"),
        };
        let Reply::Own(answer) = dispatch_as(&broker, request, "/127.0.0.1", "", principal).await
        else {
            panic!("not an own-API answer")
        };
        let OwnResponse::StreamsGroupDescribe(r) = answer.await else {
            panic!("wrong response type")
        };
        throttles.push(r.throttle_time_ms);
    }
    assert!(throttles.iter().any(|&t| t > 0), "{throttles:?}");
    common::stop(broker).await;
}

fn create(name: &str, partitions: i32) -> RequestKind {
    use create_topics_request::CreatableTopic;
    RequestKind::CreateTopics(
        CreateTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(s(name)))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)]),
    )
}

#[tokio::test]
async fn controller_mutations_over_quota_answer_throttling_quota_exceeded() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    // One partition per second for every user: a bucket of 11.
    let set = alter(
        &broker,
        1,
        vec![alter_entry(
            &[("user", None)],
            &[("controller_mutation_rate", Some(1.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);
    let topic = |r: ResponseKind| {
        let ResponseKind::CreateTopics(r) = r else {
            panic!("{r:?}")
        };
        let t = &r.topics[0];
        (
            t.error_code,
            t.error_message.as_ref().map(|m| m.to_string()),
            r.throttle_time_ms,
        )
    };
    // 20 partitions fit in a full bucket and leave a debt of 9.
    let (code, _, throttle) = topic(
        call_as(
            &broker,
            "alice",
            "a",
            ApiKey::CreateTopics,
            7,
            create("big", 20),
        )
        .await,
    );
    assert_eq!((code, throttle), (0, 0));
    // Strict (v6+): refused while in debt, with the time to repay it.
    let (code, message, throttle) = topic(
        call_as(
            &broker,
            "alice",
            "a",
            ApiKey::CreateTopics,
            6,
            create("small", 1),
        )
        .await,
    );
    assert_eq!(code, 89);
    assert_eq!(
        message.as_deref(),
        Some("The throttling quota has been exceeded.")
    );
    assert!((8_000..=9_000).contains(&throttle), "{throttle}");
    assert!(broker.topics.get("small").is_none());
    // Permissive (v5): created anyway, throttled.
    let (code, _, throttle) = topic(
        call_as(
            &broker,
            "alice",
            "a",
            ApiKey::CreateTopics,
            5,
            create("older", 1),
        )
        .await,
    );
    assert_eq!(code, 0);
    assert!(throttle > 8_000, "{throttle}");
    // DeleteTopics v5+ and CreatePartitions v3 are strict too.
    let deleted = call_as(
        &broker,
        "alice",
        "a",
        ApiKey::DeleteTopics,
        5,
        RequestKind::DeleteTopics(
            DeleteTopicsRequest::default().with_topic_names(vec![TopicName(s("big"))]),
        ),
    )
    .await;
    let ResponseKind::DeleteTopics(d) = deleted else {
        panic!()
    };
    assert_eq!(d.responses[0].error_code, 89);
    assert!(d.throttle_time_ms > 8_000);
    assert!(broker.topics.get("big").is_some());
    let grown = call_as(
        &broker,
        "alice",
        "a",
        ApiKey::CreatePartitions,
        3,
        RequestKind::CreatePartitions(CreatePartitionsRequest::default().with_topics(vec![
            create_partitions_request::CreatePartitionsTopic::default()
                .with_name(TopicName(s("older")))
                .with_count(2),
        ])),
    )
    .await;
    let ResponseKind::CreatePartitions(g) = grown else {
        panic!()
    };
    assert_eq!(g.results[0].error_code, 89);
    // Another user has a bucket of its own.
    let (code, _, throttle) = topic(
        call_as(
            &broker,
            "bob",
            "a",
            ApiKey::CreateTopics,
            7,
            create("bobs", 3),
        )
        .await,
    );
    assert_eq!((code, throttle), (0, 0));
    common::stop(broker).await;
}

#[tokio::test]
async fn without_quotas_a_request_pays_only_the_enabled_checks() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let ctx = skiff_broker::context::RequestContext::new(broker.clone(), ApiKey::Produce, 9);
    let mut body = RequestKind::Produce(produce("t", 100));
    let n = 200_000u32;
    let started = Instant::now();
    for _ in 0..n {
        assert!(skiff_broker::quotas::meter(&ctx, &mut body).is_none());
    }
    let per_call = started.elapsed() / n;
    eprintln!("quota check without quotas: {per_call:?} per request");
    // A debug build; three atomic loads cost nanoseconds.
    assert!(per_call < Duration::from_micros(1), "{per_call:?}");
    common::stop(broker).await;
}

#[tokio::test]
async fn an_acks0_producer_over_its_byte_rate_is_muted() {
    let dir = tempfile::tempdir().unwrap();
    let served = common::broker(dir.path())
        .sets(&["quota.window.num=2", "quota.window.size.seconds=1"])
        .serve()
        .await;
    common::create_topic(&served.broker, "t", 1).await;
    let set = alter(
        &served.broker,
        1,
        vec![alter_entry(
            &[("client-id", Some("fire-and-forget"))],
            &[("producer_byte_rate", Some(100_000.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set, vec![(0, None)]);
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    let started = Instant::now();
    // 250 kB with acks=0 against 100 kB/s (the first second's worth is free): no responses,
    // but each request over the quota mutes the connection before the next is handled.
    for corr in 0..5 {
        let request = produce("t", 50_000).with_acks(0);
        stream
            .write_all(&frame(
                ApiKey::Produce,
                9,
                corr,
                "fire-and-forget",
                &request,
            ))
            .await
            .unwrap();
    }
    // A Metadata request behind them is answered only after the mutes.
    let metadata = MetadataRequest::default().with_topics(Some(vec![]));
    stream
        .write_all(&frame(
            ApiKey::Metadata,
            12,
            99,
            "fire-and-forget",
            &metadata,
        ))
        .await
        .unwrap();
    let mut size = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(20), stream.read_exact(&mut size))
        .await
        .unwrap()
        .unwrap();
    let waited = started.elapsed();
    eprintln!("acks=0: Metadata answered after {waited:?}");
    assert!(waited >= Duration::from_millis(1_000), "{waited:?}");
    let stats = served.broker.quotas.throttle_stats();
    assert!(
        stats
            .iter()
            .any(|s| s.client_id == "fire-and-forget" && s.throttled >= 2),
        "{stats:?}"
    );
}
