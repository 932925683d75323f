//! Fetch sessions (KIP-227) over a real plaintext listener, so that record sets of 4 KiB and
//! more go out with sendfile: a full fetch opens a session, incremental fetches answer only
//! the partitions with news, forgotten partitions leave, epochs and ids are checked, epoch -1
//! closes, one cache slot is shared by Kafka's eviction rule, and sessions by topic name
//! (v7-v12) and by topic id (v13+) keep to their kind. Also the long poll's rule for
//! partitions refused before the read (they do not end the wait).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{
    produce_request, ApiKey, FetchRequest, FetchResponse, ProduceRequest, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::ResponseError;
use skiff_broker::Broker;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use uuid::Uuid;

const NOT_FOUND: i16 = 70;
const INVALID_EPOCH: i16 = 71;

struct Server {
    served: common::Served,
    _dir: tempfile::TempDir,
}

impl Server {
    fn broker(&self) -> &Arc<Broker> {
        &self.served.broker
    }

    fn topic_id(&self, name: &str) -> Uuid {
        self.broker().topics.get(name).unwrap().id
    }

    /// The log's batches of `topic`-`partition` from `offset` on.
    fn log(&self, topic: &str, partition: i32, offset: i64) -> Bytes {
        let topic = self.broker().topics.get(topic).unwrap();
        let log = &topic.partition(partition).unwrap().log;
        log.read(offset, usize::MAX, true).unwrap().records
    }

    async fn client(&self) -> Client {
        Client {
            s: TcpStream::connect(self.served.addr).await.unwrap(),
            correlation: 0,
        }
    }
}

async fn start(sets: &[&str], clock: Option<Arc<skiff_log::ManualClock>>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut b = common::broker(dir.path()).sets(sets);
    if let Some(clock) = clock {
        b = b.clock(clock);
    }
    let served = b.serve().await;
    common::create_topic(&served.broker, "t", 3).await;
    common::create_topic(&served.broker, "u", 1).await;
    Server { served, _dir: dir }
}

struct Client {
    s: TcpStream,
    correlation: i32,
}

impl Client {
    async fn fetch(&mut self, version: i16, request: &FetchRequest) -> FetchResponse {
        self.correlation += 1;
        let frame = common::request_frame(
            ApiKey::Fetch,
            version,
            self.correlation,
            "sessions",
            request,
        );
        self.s.write_all(&frame).await.unwrap();
        let mut body = common::read_frame(&mut self.s, Duration::from_secs(10))
            .await
            .unwrap();
        let header =
            ResponseHeader::decode(&mut body, ApiKey::Fetch.response_header_version(version))
                .unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        let response = FetchResponse::decode(&mut body, version).unwrap();
        assert!(body.is_empty(), "v{version}: bytes after the response");
        response
    }

    /// One batch with one record of `value_len` bytes to each of `partitions` of `topic`.
    async fn produce(&mut self, topic: &str, partitions: &[i32], value_len: usize) {
        let parts = partitions
            .iter()
            .map(|&p| {
                produce_request::PartitionProduceData::default()
                    .with_index(p)
                    .with_records(Some(common::one_record_batch(value_len)))
            })
            .collect();
        let produce = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(parts)]);
        self.correlation += 1;
        let frame = common::request_frame(ApiKey::Produce, 9, self.correlation, "p", &produce);
        self.s.write_all(&frame).await.unwrap();
        assert!(common::read_frame(&mut self.s, Duration::from_secs(10))
            .await
            .is_some());
    }
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// A topic of a request: by id from v13 on, else by name.
fn topic(server: &Server, version: i16, topic: &str, partitions: &[(i32, i64)]) -> FetchTopic {
    let t = FetchTopic::default().with_partitions(
        partitions
            .iter()
            .map(|&(p, offset)| {
                FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)
            })
            .collect(),
    );
    if version >= 13 {
        t.with_topic_id(server.topic_id(topic))
    } else {
        t.with_topic(name(topic))
    }
}

fn request(id: i32, epoch: i32, topics: Vec<FetchTopic>) -> FetchRequest {
    FetchRequest::default()
        .with_session_id(id)
        .with_session_epoch(epoch)
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_topics(topics)
}

/// (topic name or id, partition, error code, record bytes) of each partition answered, in
/// response order.
fn answered(r: &FetchResponse) -> Vec<(String, i32, i16, Bytes)> {
    r.responses
        .iter()
        .flat_map(|t| {
            let topic = if t.topic_id.is_nil() {
                t.topic.0.to_string()
            } else {
                t.topic_id.to_string()
            };
            t.partitions.iter().map(move |p| {
                (
                    topic.clone(),
                    p.partition_index,
                    p.error_code,
                    p.records.clone().unwrap_or_default(),
                )
            })
        })
        .collect()
}

/// The partitions answered, as (topic, partition).
fn which(r: &FetchResponse) -> Vec<(String, i32)> {
    answered(r).into_iter().map(|(t, p, _, _)| (t, p)).collect()
}

/// The high watermark of `topic`-`partition`.
fn hw(server: &Server, topic: &str, partition: i32) -> i64 {
    let topic = server.broker().topics.get(topic).unwrap();
    topic.partition(partition).unwrap().log.high_watermark()
}

/// The full fetch of `t` 0-2 from their high watermarks that opens a session; its id.
async fn open(server: &Server, c: &mut Client, version: i16) -> i32 {
    let from: Vec<(i32, i64)> = (0..3).map(|p| (p, hw(server, "t", p))).collect();
    let topics = vec![topic(server, version, "t", &from)];
    let r = c.fetch(version, &request(0, 0, topics)).await;
    assert_eq!(r.error_code, 0);
    assert_ne!(r.session_id, 0, "v{version}: no session opened");
    assert_eq!(
        answered(&r).len(),
        3,
        "v{version}: a full fetch answers all"
    );
    r.session_id
}

fn label(server: &Server, version: i16, topic: &str) -> String {
    if version >= 13 {
        server.topic_id(topic).to_string()
    } else {
        topic.to_string()
    }
}

#[tokio::test]
async fn an_incremental_fetch_answers_only_partitions_with_news() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    for version in [7, 12, 13, 17] {
        let t = label(&server, version, "t");
        let from: Vec<i64> = (0..3).map(|p| hw(&server, "t", p)).collect();
        let id = open(&server, &mut c, version).await;
        // Nothing new: the fetch waits max_wait_ms, then answers no partitions.
        let idle = request(id, 1, Vec::new()).with_max_wait_ms(300);
        let began = Instant::now();
        let r = c.fetch(version, &idle).await;
        assert!(began.elapsed() >= Duration::from_millis(250), "v{version}");
        assert_eq!((r.error_code, r.session_id), (0, id), "v{version}");
        assert!(r.responses.is_empty(), "v{version}: {:?}", which(&r));
        // A produce to partition 1 only: that partition, with its record, and nothing else.
        c.produce("t", &[1], 100).await;
        let r = c.fetch(version, &request(id, 2, Vec::new())).await;
        let got = answered(&r);
        assert_eq!(which(&r), vec![(t.clone(), 1)], "v{version}");
        assert_eq!(got[0].2, 0);
        assert_eq!(got[0].3, server.log("t", 1, from[1]), "v{version}");
        // The client moves partition 1's offset on (the only one it sends): nothing new.
        let moved = vec![topic(&server, version, "t", &[(1, from[1] + 1)])];
        let r = c
            .fetch(version, &request(id, 3, moved).with_max_wait_ms(100))
            .await;
        assert!(r.responses.is_empty(), "v{version}: {:?}", which(&r));
        // A produce wakes a parked incremental fetch long before max_wait_ms.
        let mut p = server.client().await;
        let waiting = async {
            let began = Instant::now();
            let parked = request(id, 4, Vec::new()).with_max_wait_ms(10_000);
            let r = c.fetch(version, &parked).await;
            (r, began.elapsed())
        };
        let producing = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            p.produce("t", &[2], 10).await;
        };
        let ((r, took), ()) = tokio::join!(waiting, producing);
        assert!(took < Duration::from_secs(5), "v{version}: not woken");
        assert_eq!(which(&r), vec![(t.clone(), 2)], "v{version}");
        assert_eq!(answered(&r)[0].3, server.log("t", 2, from[2]));
        // Close before the next version opens its own.
        let r = c.fetch(version, &request(id, -1, Vec::new())).await;
        assert_eq!((r.error_code, r.session_id), (0, 0));
    }
}

#[tokio::test]
async fn record_sets_from_files_land_on_their_partitions_when_others_are_omitted() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    for version in [12, 13] {
        let t = label(&server, version, "t");
        let from: Vec<i64> = (0..3).map(|p| hw(&server, "t", p)).collect();
        let id = open(&server, &mut c, version).await;
        // 10 kB batches (sent from their files) on 1 and 2; 0 has nothing and is left out,
        // so partition 1 is the response's first partition, not its second.
        c.produce("t", &[1, 2], 10_000).await;
        c.produce("t", &[1, 2], 10_000).await;
        let r = c.fetch(version, &request(id, 1, Vec::new())).await;
        let got = answered(&r);
        assert_eq!(which(&r), vec![(t.clone(), 1), (t.clone(), 2)]);
        assert!(got[0].3.len() > 20_000);
        assert_eq!(got[0].3, server.log("t", 1, from[1]), "v{version}");
        assert_eq!(got[1].3, server.log("t", 2, from[2]), "v{version}");
        let r = c.fetch(version, &request(id, -1, Vec::new())).await;
        assert_eq!(r.session_id, 0);
    }
}

fn forgotten(server: &Server, version: i16, topic: &str, partitions: Vec<i32>) -> ForgottenTopic {
    let f = ForgottenTopic::default().with_partitions(partitions);
    if version >= 13 {
        f.with_topic_id(server.topic_id(topic))
    } else {
        f.with_topic(name(topic))
    }
}

#[tokio::test]
async fn forgotten_partitions_leave_and_added_ones_are_answered_at_once() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    for version in [12, 13] {
        let id = open(&server, &mut c, version).await;
        let (t, u) = (label(&server, version, "t"), label(&server, version, "u"));
        // Forget t-1, add u-0: u-0 has never been answered in this session, so it is.
        let add = vec![topic(&server, version, "u", &[(0, hw(&server, "u", 0))])];
        let forget = vec![forgotten(&server, version, "t", vec![1])];
        let r = c
            .fetch(
                version,
                &request(id, 1, add).with_forgotten_topics_data(forget),
            )
            .await;
        assert_eq!(which(&r), vec![(u.clone(), 0)], "v{version}");
        c.produce("t", &[0, 1, 2], 10).await;
        let r = c.fetch(version, &request(id, 2, Vec::new())).await;
        assert_eq!(
            which(&r),
            vec![(t.clone(), 0), (t.clone(), 2)],
            "v{version}"
        );
        // t-0 and t-2 got data, so they moved behind u-0 in the session's order (they
        // still have data at the offsets the session holds).
        c.produce("u", &[0], 10).await;
        let r = c.fetch(version, &request(id, 3, Vec::new())).await;
        assert_eq!(
            which(&r),
            vec![(u.clone(), 0), (t.clone(), 0), (t.clone(), 2)],
            "v{version}"
        );
        // Forgetting every partition closes the session: answered without one.
        let all = vec![
            forgotten(&server, version, "t", vec![0, 2]),
            forgotten(&server, version, "u", vec![0]),
        ];
        let r = c
            .fetch(
                version,
                &request(id, 4, Vec::new()).with_forgotten_topics_data(all),
            )
            .await;
        assert_eq!((r.error_code, r.session_id), (0, 0));
        let r = c.fetch(version, &request(id, 5, Vec::new())).await;
        assert_eq!(r.error_code, NOT_FOUND);
    }
}

#[tokio::test]
async fn wrong_epochs_unknown_ids_and_closing_get_kafkas_answers() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    let id = open(&server, &mut c, 12).await;
    for wrong in [99, 2, 5, -2] {
        let r = c.fetch(12, &request(id, wrong, Vec::new())).await;
        assert_eq!(r.error_code, INVALID_EPOCH, "epoch {wrong}");
        assert_eq!(r.session_id, 0);
        assert!(r.responses.is_empty());
    }
    // A wrong epoch leaves the session as it was.
    let r = c.fetch(12, &request(id, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (0, id));
    let unknown = if id == 1 { 2 } else { 1 };
    let r = c.fetch(12, &request(unknown, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (NOT_FOUND, 0));
    // Epoch -1 closes it and is answered in full, without a session.
    let full = vec![topic(&server, 12, "t", &[(0, 0), (1, 0), (2, 0)])];
    let r = c.fetch(12, &request(id, -1, full.clone())).await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    assert_eq!(answered(&r).len(), 3);
    let r = c.fetch(12, &request(id, 2, Vec::new())).await;
    assert_eq!(r.error_code, NOT_FOUND);
    // Epoch 0 naming a session closes it and opens another.
    let first = open(&server, &mut c, 12).await;
    let r = c.fetch(12, &request(first, 0, full)).await;
    assert!(r.session_id != 0 && r.session_id != first);
    let r = c.fetch(12, &request(first, 1, Vec::new())).await;
    assert_eq!(r.error_code, NOT_FOUND);
    // Below v7 there are no sessions.
    let r = c
        .fetch(6, &request(0, 0, vec![topic(&server, 6, "t", &[(0, 0)])]))
        .await;
    assert_eq!(r.session_id, 0);
}

#[tokio::test]
async fn a_session_by_names_refuses_ids_and_the_other_way_round() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    let mismatch = ResponseError::FetchSessionTopicIdError.code();
    let by_name = open(&server, &mut c, 12).await;
    let r = c.fetch(13, &request(by_name, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (mismatch, 0));
    let by_id = open(&server, &mut c, 13).await;
    let r = c.fetch(12, &request(by_id, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (mismatch, 0));
    // Both still work with their own kind of version.
    let r = c.fetch(12, &request(by_name, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (0, by_name));
    let r = c.fetch(13, &request(by_id, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (0, by_id));
}

#[tokio::test]
async fn a_session_by_ids_keeps_its_topics_names_as_kafka_does() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    let old_id = server.topic_id("u");
    let never = Uuid::from_u128(42);
    let r = c
        .fetch(
            13,
            &request(
                0,
                0,
                vec![
                    topic(&server, 13, "u", &[(0, 0)]),
                    FetchTopic::default()
                        .with_topic_id(never)
                        .with_partitions(vec![FetchPartition::default().with_partition(0)]),
                ],
            ),
        )
        .await;
    let id = r.session_id;
    assert_ne!(id, 0);
    let codes: Vec<i16> = answered(&r).iter().map(|a| a.2).collect();
    assert_eq!(codes, vec![0, ResponseError::UnknownTopicId.code()]);
    // Errors are answered every time.
    let r = c.fetch(13, &request(id, 1, Vec::new())).await;
    assert_eq!(which(&r), vec![(never.to_string(), 0)]);
    // The topic is deleted: its partition answers UNKNOWN_TOPIC_OR_PARTITION (the session
    // looks it up by the name its id had).
    let b = server.broker().clone();
    tokio::task::spawn_blocking(move || b.topics.delete("u"))
        .await
        .unwrap()
        .unwrap();
    let r = c.fetch(13, &request(id, 2, Vec::new())).await;
    let got: Vec<(String, i16)> = answered(&r).into_iter().map(|a| (a.0, a.2)).collect();
    assert_eq!(
        got,
        vec![
            (
                old_id.to_string(),
                ResponseError::UnknownTopicOrPartition.code()
            ),
            (never.to_string(), ResponseError::UnknownTopicId.code()),
        ]
    );
    // Created again under the same name (a new id): INCONSISTENT_TOPIC_ID.
    common::create_topic(server.broker(), "u", 1).await;
    assert_ne!(server.topic_id("u"), old_id);
    let r = c.fetch(13, &request(id, 3, Vec::new())).await;
    assert_eq!(answered(&r)[0].2, ResponseError::InconsistentTopicId.code());
}

#[tokio::test]
async fn one_slot_goes_to_a_stale_session_or_a_larger_old_one() {
    let clock = common::manual_clock();
    let server = start(
        &["max.incremental.fetch.session.cache.slots=1"],
        Some(clock.clone()),
    )
    .await;
    let mut c = server.client().await;
    let one = |p: i32| vec![topic(&server, 12, "t", &[(p, 0)])];
    let three = || vec![topic(&server, 12, "t", &[(0, 0), (1, 0), (2, 0)])];
    let two = c
        .fetch(
            12,
            &request(0, 0, vec![topic(&server, 12, "t", &[(0, 0), (1, 0)])]),
        )
        .await
        .session_id;
    assert_ne!(two, 0);
    // The slot is taken by a fresh session: no session for another client, even a larger
    // one, and the fetch is still answered (without a session).
    for topics in [one(2), three()] {
        let r = c.fetch(12, &request(0, 0, topics)).await;
        assert_eq!((r.error_code, r.session_id), (0, 0));
        assert!(!answered(&r).is_empty());
    }
    // Unused for more than two minutes, it gives way to any new session.
    clock.advance(120_001);
    let small = c.fetch(12, &request(0, 0, one(2))).await.session_id;
    assert_ne!(small, 0);
    let r = c.fetch(12, &request(two, 1, Vec::new())).await;
    assert_eq!(r.error_code, NOT_FOUND);
    // Used when over two minutes old, it may give way to a session with more partitions
    // (not to one of the same size).
    clock.advance(120_001);
    let r = c.fetch(12, &request(small, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (0, small));
    let r = c.fetch(12, &request(0, 0, one(1))).await;
    assert_eq!(r.session_id, 0);
    let big = c.fetch(12, &request(0, 0, three())).await.session_id;
    assert_ne!(big, 0);
    let r = c.fetch(12, &request(small, 2, Vec::new())).await;
    assert_eq!(r.error_code, NOT_FOUND);
    let r = c.fetch(12, &request(big, 1, Vec::new())).await;
    assert_eq!((r.error_code, r.session_id), (0, big));
}

#[tokio::test]
async fn zero_slots_serve_every_fetch_without_a_session() {
    let server = start(&["max.incremental.fetch.session.cache.slots=0"], None).await;
    let mut c = server.client().await;
    let r = c
        .fetch(12, &request(0, 0, vec![topic(&server, 12, "t", &[(0, 0)])]))
        .await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    assert_eq!(answered(&r).len(), 1);
}

/// Partition `partition` of `topic` named by name, from `offset`.
fn by_name(topic: &str, partition: i32, offset: i64) -> FetchTopic {
    FetchTopic::default()
        .with_topic(name(topic))
        .with_partitions(vec![FetchPartition::default()
            .with_partition(partition)
            .with_fetch_offset(offset)
            .with_partition_max_bytes(1 << 20)])
}

#[tokio::test]
async fn partitions_refused_before_the_read_do_not_cut_the_wait_short() {
    let server = start(&[], None).await;
    let mut c = server.client().await;
    let mut p = server.client().await;
    let from = hw(&server, "t", 0);
    // An unknown topic and a partition the topic does not have, beside one that waits.
    let topics = vec![
        by_name("nosuch", 0, 0),
        by_name("t", 7, 0),
        by_name("t", 0, from),
    ];
    let long_poll = request(0, -1, topics).with_max_wait_ms(10_000);
    let waiting = c.fetch(12, &long_poll);
    let producing = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        p.produce("t", &[0], 10).await;
    };
    let (r, ()) = tokio::join!(waiting, producing);
    let got = answered(&r);
    let codes: Vec<(String, i32, i16)> =
        got.iter().map(|(t, p, e, _)| (t.clone(), *p, *e)).collect();
    assert_eq!(
        codes,
        vec![
            ("nosuch".to_string(), 0, 3),
            ("t".to_string(), 7, 3),
            ("t".to_string(), 0, 0),
        ]
    );
    assert_eq!(
        got[2].3,
        server.log("t", 0, from),
        "answered before the records came"
    );
    // With no partition left to read, the answer comes at once.
    let began = Instant::now();
    let only_refused = vec![by_name("nosuch", 0, 0)];
    let r = c
        .fetch(12, &request(0, -1, only_refused).with_max_wait_ms(10_000))
        .await;
    assert_eq!(answered(&r)[0].2, 3);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}
