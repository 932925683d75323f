//! Key lookups on compacted topics through the broker (`skiff_broker::table_lookup`,
//! docs/key-index.md): writes acknowledged with acks=1 and acks=all are visible to the next
//! lookup, tombstones answer not found, partitions computed by murmur2 and CRC-32,
//! read_committed vs read_uncommitted with open, committed and aborted transactions,
//! enabling through topic configs, the refusals, and a restart (loading, then found).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use common::{call, stop, wait_until};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::table_lookup::{LookupError, LookupHit, LookupRequest, Partitioner};
use skiff_broker::Broker;
use skiff_records::{BatchBuilder, Compression};

const T: i64 = 1_700_000_000_000;

async fn create(broker: &Arc<Broker>, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let b = broker.clone();
    let name = name.to_string();
    let overrides: BTreeMap<String, String> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || b.topics.create(&name, partitions, overrides, false))
        .await
        .unwrap()
        .unwrap();
}

const INDEXED: &[(&str, &str)] = &[
    ("cleanup.policy", "compact"),
    ("skiff.key.index.enable", "true"),
];

async fn lookup(
    broker: &Arc<Broker>,
    topic: &str,
    partition: Option<i32>,
    key: &[u8],
    partitioner: Partitioner,
    read_committed: bool,
) -> Result<Option<LookupHit>, LookupError> {
    let req = LookupRequest {
        topic: topic.to_string(),
        partition,
        key: Bytes::copy_from_slice(key),
        partitioner,
        read_committed,
    };
    broker.lookup_key_async(req).await
}

/// The value found for `key` (partition from murmur2), None for not found.
async fn value(broker: &Arc<Broker>, topic: &str, key: &str, rc: bool) -> Option<String> {
    lookup(
        broker,
        topic,
        None,
        key.as_bytes(),
        Partitioner::Murmur2,
        rc,
    )
    .await
    .unwrap()
    .map(|h| String::from_utf8(h.value.to_vec()).unwrap())
}

/// Waits until the topic's partitions have built their (new) indexes.
async fn wait_built(broker: &Arc<Broker>, topic: &str) {
    let t = broker.topics.get(topic).unwrap();
    wait_until("key indexes built", || {
        t.partitions().iter().all(|p| {
            p.log
                .key_index_status()
                .is_some_and(|s| s.phase == skiff_log::KeyIndexPhase::Ready)
        })
    })
    .await;
}

fn batch(txn: Option<(i64, i16, i32)>, recs: &[(&str, Option<&str>)]) -> Bytes {
    let mut b = BatchBuilder::new(0, Compression::None);
    if let Some((pid, epoch, seq)) = txn {
        b = b
            .producer_id(pid)
            .producer_epoch(epoch)
            .base_sequence(seq)
            .transactional(true);
    }
    for (k, v) in recs {
        b.push(
            T,
            Some(k.as_bytes()),
            v.map(str::as_bytes),
            &[(b"h".as_slice(), Some(b"x".as_slice()))],
        );
    }
    Bytes::from(b.build().unwrap())
}

fn tid(t: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(t.into()))
}

fn name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.into()))
}

/// Produce through dispatch (the real handler) with `acks`: (error code, base offset).
async fn produce(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    acks: i16,
    txn: Option<&str>,
    records: Bytes,
) -> (i16, i64) {
    let body = ProduceRequest::default()
        .with_transactional_id(txn.map(tid))
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(records)),
            ])]);
    match call(broker, ApiKey::Produce, 9, RequestKind::Produce(body)).await {
        ResponseKind::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            (p.error_code, p.base_offset)
        }
        other => panic!("{other:?}"),
    }
}

fn murmur(key: &str, partitions: i32) -> i32 {
    Partitioner::Murmur2
        .partition(key.as_bytes(), partitions)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_are_visible_to_the_next_lookup_and_tombstones_hide_keys() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    create(&broker, "users", 3, INDEXED).await;
    wait_built(&broker, "users").await;
    for i in 0..20 {
        let key = format!("user-{i}");
        let p = murmur(&key, 3);
        let acks = if i % 2 == 0 { 1 } else { -1 };
        let v = format!("v{i}");
        let (err, _) = produce(
            &broker,
            "users",
            p,
            acks,
            None,
            batch(None, &[(&key, Some(&v))]),
        )
        .await;
        assert_eq!(err, 0);
        // The very next lookup sees it, with the partition computed from the key.
        assert_eq!(value(&broker, "users", &key, true).await, Some(v.clone()));
    }
    let hit = lookup(
        &broker,
        "users",
        None,
        b"user-3",
        Partitioner::Murmur2,
        true,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(hit.partition, murmur("user-3", 3));
    assert_eq!(hit.timestamp, T);
    assert_eq!(hit.key.as_ref(), b"user-3");
    assert_eq!(
        hit.headers,
        vec![("h".to_string(), Some(Bytes::from_static(b"x")))]
    );
    // Looking in another partition does not find it.
    let other = (hit.partition + 1) % 3;
    assert_eq!(
        lookup(
            &broker,
            "users",
            Some(other),
            b"user-3",
            Partitioner::Murmur2,
            true
        )
        .await
        .unwrap(),
        None
    );
    // Overwrite, then tombstone (acks=all): the latest wins, a tombstone is not found.
    let p = murmur("user-3", 3);
    produce(
        &broker,
        "users",
        p,
        -1,
        None,
        batch(None, &[("user-3", Some("new"))]),
    )
    .await;
    assert_eq!(
        value(&broker, "users", "user-3", true).await.as_deref(),
        Some("new")
    );
    produce(
        &broker,
        "users",
        p,
        -1,
        None,
        batch(None, &[("user-3", None)]),
    )
    .await;
    assert_eq!(value(&broker, "users", "user-3", true).await, None);
    assert_eq!(value(&broker, "users", "user-3", false).await, None);
    assert_eq!(value(&broker, "users", "never-written", true).await, None);
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crc32_keys_are_found_where_librdkafka_puts_them() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    create(&broker, "c", 7, INDEXED).await;
    wait_built(&broker, "c").await;
    let mut differ = 0;
    for i in 0..30 {
        let key = format!("k{i}");
        let p = Partitioner::Crc32.partition(key.as_bytes(), 7).unwrap();
        produce(&broker, "c", p, 1, None, batch(None, &[(&key, Some("v"))])).await;
        let hit = lookup(&broker, "c", None, key.as_bytes(), Partitioner::Crc32, true)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hit.partition, p);
        if murmur(&key, 7) != p {
            differ += 1;
            // The Java rule looks elsewhere and does not find it.
            assert_eq!(value(&broker, "c", &key, true).await, None);
        }
    }
    assert!(
        differ > 0,
        "the two partitioners should disagree on some keys"
    );
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    create(&broker, "plain", 1, &[]).await;
    create(&broker, "compacted", 2, &[("cleanup.policy", "compact")]).await;
    let err = |r: Result<Option<LookupHit>, LookupError>| r.unwrap_err();
    let e = err(lookup(&broker, "nope", None, b"k", Partitioner::Murmur2, true).await);
    assert_eq!((e.kind(), e.http_status()), ("unknown_topic", 404));
    let e = err(lookup(
        &broker,
        "compacted",
        Some(2),
        b"k",
        Partitioner::Murmur2,
        true,
    )
    .await);
    assert_eq!(e.kind(), "unknown_partition");
    let e = err(lookup(
        &broker,
        "compacted",
        Some(-1),
        b"k",
        Partitioner::Murmur2,
        true,
    )
    .await);
    assert_eq!(e.kind(), "unknown_partition");
    let e = err(lookup(&broker, "plain", None, b"k", Partitioner::Murmur2, true).await);
    assert_eq!(e.kind(), "not_compacted");
    let e = err(lookup(&broker, "compacted", None, b"k", Partitioner::Murmur2, true).await);
    assert_eq!(e.kind(), "index_disabled");
    assert!(e.to_string().contains("skiff.key.index.enable=true"), "{e}");
    // The index needs a compacted topic: refused at create and at alter, naming the fix.
    let b = broker.clone();
    let refused = tokio::task::spawn_blocking(move || {
        let on = BTreeMap::from([("skiff.key.index.enable".to_string(), "true".to_string())]);
        let Err(create) = b.topics.create("d", 1, on.clone(), false) else {
            panic!("created an indexed topic without compact");
        };
        let alter = b.topics.set_overrides("plain", on, false).unwrap_err();
        (create.to_string(), alter.to_string())
    })
    .await
    .unwrap();
    assert!(refused.0.contains("cleanup.policy"), "{}", refused.0);
    assert!(refused.1.contains("cleanup.policy"), "{}", refused.1);
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabling_later_indexes_what_is_there_and_disabling_frees_the_memory() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    create(&broker, "late", 1, &[("cleanup.policy", "compact")]).await;
    for i in 0..50 {
        let k = format!("k{}", i % 10);
        let v = format!("v{i}");
        produce(&broker, "late", 0, 1, None, batch(None, &[(&k, Some(&v))])).await;
    }
    let set = |configs: &'static [(&'static str, &'static str)]| {
        let b = broker.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let o = configs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                b.topics.set_overrides("late", o, false).unwrap()
            })
            .await
            .unwrap()
        }
    };
    set(INDEXED).await;
    wait_built(&broker, "late").await;
    for k in 0..10 {
        let want = format!("v{}", 40 + k);
        let got = lookup(
            &broker,
            "late",
            Some(0),
            format!("k{k}").as_bytes(),
            Partitioner::Murmur2,
            true,
        )
        .await
        .unwrap()
        .map(|h| String::from_utf8(h.value.to_vec()).unwrap());
        assert_eq!(got, Some(want));
    }
    assert!(broker.topics.key_indexes.budget().used() > 0);
    set(&[("cleanup.policy", "compact")]).await;
    assert_eq!(broker.topics.key_indexes.budget().used(), 0);
    let e = lookup(&broker, "late", Some(0), b"k1", Partitioner::Murmur2, true)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "index_disabled");
    stop(broker).await;
}

// ---- transactions --------------------------------------------------------------------------

fn txn_broker(dir: &Path, extra: &[&str]) -> common::TestBroker {
    common::broker(dir)
        .wait_coordinators()
        .sets(&[
            "transaction.state.log.num.partitions=2",
            "offsets.topic.num.partitions=1",
        ])
        .sets(extra)
}

async fn init(broker: &Arc<Broker>, txn: &str) -> (i64, i16) {
    let body = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid(txn)))
        .with_transaction_timeout_ms(60_000);
    match call(
        broker,
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(body),
    )
    .await
    {
        ResponseKind::InitProducerId(r) => {
            assert_eq!(r.error_code, 0);
            (r.producer_id.0, r.producer_epoch)
        }
        other => panic!("{other:?}"),
    }
}

async fn add_partition(broker: &Arc<Broker>, txn: &str, pid: i64, epoch: i16, topic: &str) {
    let body = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid(txn))
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![
            add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![0]),
        ]);
    match call(
        broker,
        ApiKey::AddPartitionsToTxn,
        3,
        RequestKind::AddPartitionsToTxn(body),
    )
    .await
    {
        ResponseKind::AddPartitionsToTxn(r) => {
            for t in &r.results_by_topic_v3_and_below {
                for p in &t.results_by_partition {
                    assert_eq!(p.partition_error_code, 0, "{r:?}");
                }
            }
        }
        other => panic!("{other:?}"),
    }
}

async fn end_txn(broker: &Arc<Broker>, txn: &str, pid: i64, epoch: i16, commit: bool) {
    let body = EndTxnRequest::default()
        .with_transactional_id(tid(txn))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    match call(broker, ApiKey::EndTxn, 3, RequestKind::EndTxn(body)).await {
        ResponseKind::EndTxn(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
}

fn open_txns(broker: &Broker, topic: &str) -> usize {
    broker
        .topics
        .get(topic)
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .ongoing_transactions()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_hides_open_transactions_and_aborted_records_never_show() {
    let dir = tempfile::tempdir().unwrap();
    let broker = txn_broker(dir.path(), &[]).start().await;
    create(&broker, "tx", 1, INDEXED).await;
    wait_built(&broker, "tx").await;
    let look = |key: &'static str, rc: bool| {
        let b = broker.clone();
        async move {
            lookup(&b, "tx", Some(0), key.as_bytes(), Partitioner::Murmur2, rc)
                .await
                .unwrap()
                .map(|h| String::from_utf8(h.value.to_vec()).unwrap())
        }
    };
    produce(
        &broker,
        "tx",
        0,
        -1,
        None,
        batch(None, &[("a", Some("base"))]),
    )
    .await;

    // An open transaction: visible to read_uncommitted only.
    let (pid, epoch) = init(&broker, "t1").await;
    add_partition(&broker, "t1", pid, epoch, "tx").await;
    let (err, _) = produce(
        &broker,
        "tx",
        0,
        -1,
        Some("t1"),
        batch(
            Some((pid, epoch, 0)),
            &[("a", Some("txn")), ("b", Some("txn"))],
        ),
    )
    .await;
    assert_eq!(err, 0);
    assert_eq!(look("a", true).await.as_deref(), Some("base"));
    assert_eq!(look("b", true).await, None);
    assert_eq!(look("a", false).await.as_deref(), Some("txn"));
    assert_eq!(look("b", false).await.as_deref(), Some("txn"));
    // Committed: visible to both.
    end_txn(&broker, "t1", pid, epoch, true).await;
    wait_until("commit marker written", || open_txns(&broker, "tx") == 0).await;
    assert_eq!(look("a", true).await.as_deref(), Some("txn"));
    assert_eq!(look("b", true).await.as_deref(), Some("txn"));

    // Aborted: seen by read_uncommitted while open, by nobody once aborted.
    add_partition(&broker, "t1", pid, epoch, "tx").await;
    let (err, _) = produce(
        &broker,
        "tx",
        0,
        -1,
        Some("t1"),
        batch(
            Some((pid, epoch, 2)),
            &[("a", Some("aborted")), ("c", Some("aborted"))],
        ),
    )
    .await;
    assert_eq!(err, 0);
    assert_eq!(look("a", false).await.as_deref(), Some("aborted"));
    end_txn(&broker, "t1", pid, epoch, false).await;
    wait_until("abort marker written", || open_txns(&broker, "tx") == 0).await;
    for rc in [true, false] {
        assert_eq!(look("a", rc).await.as_deref(), Some("txn"));
        assert_eq!(look("c", rc).await, None);
    }
    stop(broker).await;
}

// ---- restart -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_lookups_answer_loading_then_find_the_latest_values() {
    let dir = tempfile::tempdir().unwrap();
    // A slow builder (256 KiB/s over ~1 MiB of log) keeps the loading phase going for seconds.
    let slow = ["skiff.key.index.build.bytes.per.second=262144"];
    let broker = common::broker(dir.path()).sets(&slow).start().await;
    create(&broker, "r", 1, INDEXED).await;
    wait_built(&broker, "r").await;
    let big = "x".repeat(1000);
    for i in 0..1000 {
        let k = format!("k{}", i % 100);
        let v = format!("{i}-{big}");
        produce(&broker, "r", 0, 1, None, batch(None, &[(&k, Some(&v))])).await;
    }
    produce(&broker, "r", 0, 1, None, batch(None, &[("k7", None)])).await;
    stop(broker).await;

    let broker = common::broker(dir.path()).sets(&slow).start().await;
    let e = lookup(&broker, "r", None, b"k1", Partitioner::Murmur2, true)
        .await
        .unwrap_err();
    assert_eq!((e.kind(), e.http_status()), ("loading", 503));
    wait_built(&broker, "r").await;
    for k in 0..100 {
        let key = format!("k{k}");
        let got = value(&broker, "r", &key, true).await;
        if k == 7 {
            assert_eq!(got, None);
        } else {
            let want = format!("{}-{big}", 900 + k);
            assert_eq!(got, Some(want), "{key}");
        }
    }
    stop(broker).await;
}

// ---- the cleaner ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_stay_right_across_a_real_compaction_pass_and_a_rebuild_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("skiff.key.index.enable", "true"),
        ("segment.bytes", "1048576"),
        ("delete.retention.ms", "0"),
    ];
    create(&broker, "cl", 1, &configs).await;
    wait_built(&broker, "cl").await;
    let pad = "p".repeat(10_000);
    // Rounds of 20 keys with 10 kB values (~1.6 MB: the first segment seals); keys 0-4 are
    // deleted in round 3 and not written again.
    for round in 0..8 {
        for k in 0..20 {
            let key = format!("k{k}");
            let v = format!("{round}-{pad}");
            let value = match (k < 5, round) {
                (true, 3) => None,
                (true, r) if r > 3 => continue,
                _ => Some(v.as_str()),
            };
            produce(&broker, "cl", 0, 1, None, batch(None, &[(&key, value)])).await;
        }
    }
    let check = |broker: Arc<Broker>| {
        let pad = pad.clone();
        async move {
            for k in 0..20 {
                let got = value(&broker, "cl", &format!("k{k}"), true).await;
                if k < 5 {
                    assert_eq!(got, None, "k{k}");
                } else {
                    assert_eq!(got, Some(format!("7-{pad}")), "k{k}");
                }
            }
        }
    };
    check(broker.clone()).await;
    let p = broker.topics.get("cl").unwrap().partition(0).unwrap();
    assert!(
        p.log.segment_count() >= 2,
        "the first segment must be sealed to be cleaned"
    );
    let mut removed = 0;
    for _pass in 0..2 {
        let b = broker.clone();
        let id = tokio::task::spawn_blocking(move || b.compact_now("cl", Some(0)).unwrap()[0].id)
            .await
            .unwrap();
        let b = broker.clone();
        wait_until("compaction pass finished", move || {
            let t = b.compaction_ticket(id).unwrap();
            !matches!(t.state, "queued" | "running")
        })
        .await;
        let t = broker.compaction_ticket(id).unwrap();
        assert_ne!(t.state, "failed", "{t:?}");
        removed += t.pass.map_or(0, |p| p.records_removed);
        check(broker.clone()).await;
    }
    assert!(
        removed > 0,
        "the cleaner should have removed superseded records"
    );
    stop(broker).await;

    // The rebuild reads the cleaned log and answers the same.
    let broker = common::broker(dir.path()).start().await;
    wait_built(&broker, "cl").await;
    check(broker.clone()).await;
    stop(broker).await;
}

// ---- the budget ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_is_shared_and_an_index_past_it_answers_over_budget() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.key.index.memory.bytes=65536"])
        .start()
        .await;
    create(&broker, "small", 1, INDEXED).await;
    create(&broker, "big", 1, INDEXED).await;
    wait_built(&broker, "small").await;
    wait_built(&broker, "big").await;
    produce(
        &broker,
        "small",
        0,
        1,
        None,
        batch(None, &[("s", Some("1"))]),
    )
    .await;
    // 5000 keys need ~256 kB of table: far past the 64 kB budget.
    let keys: Vec<String> = (0..5000).map(|i| format!("big-{i}")).collect();
    for chunk in keys.chunks(500) {
        let recs: Vec<(&str, Option<&str>)> =
            chunk.iter().map(|k| (k.as_str(), Some("v"))).collect();
        let (err, _) = produce(&broker, "big", 0, 1, None, batch(None, &recs)).await;
        assert_eq!(err, 0, "appends go on whatever the index does");
    }
    let e = lookup(
        &broker,
        "big",
        Some(0),
        b"big-1",
        Partitioner::Murmur2,
        true,
    )
    .await
    .unwrap_err();
    assert_eq!((e.kind(), e.http_status()), ("over_budget", 503));
    assert!(
        e.to_string().contains("skiff.key.index.memory.bytes"),
        "{e}"
    );
    // The other topic keeps its index, and the dropped one's memory went back.
    assert_eq!(
        value(&broker, "small", "s", true).await.as_deref(),
        Some("1")
    );
    let budget = broker.topics.key_indexes.budget();
    assert!(
        budget.used() <= 65536 && budget.used() > 0,
        "{}",
        budget.used()
    );
    let text = skiff_broker::metrics::render::render(&broker);
    assert!(
        text.contains(
            "skiff_key_index_state{topic=\"big\",partition=\"0\",state=\"over_budget\"} 1"
        ),
        "{text}"
    );
    stop(broker).await;
}
