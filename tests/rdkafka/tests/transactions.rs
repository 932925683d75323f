//! Transactions through librdkafka (`transactional.id`) against the real binary: an aborted
//! transaction is invisible to read_committed consumers and visible (markers skipped) to
//! read_uncommitted ones; committed data appears; consume-transform-produce with the consumer
//! offsets in the transaction (visible only on commit); a kill -9 during an open transaction
//! is followed, after restart, by its timeout abort, so read_committed consumers progress.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::{unique_topic, Broker};

const T: Duration = Duration::from_secs(30);

fn txn_producer(b: &Broker, id: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let mut props = vec![("transactional.id", id), ("linger.ms", "1")];
    props.extend_from_slice(extra);
    let p = producer(b, &props).unwrap();
    p.init_transactions(T).unwrap();
    p
}

async fn send(p: &FutureProducer, topic: &str, values: &[String]) {
    for v in values {
        p.send(FutureRecord::to(topic).partition(0).key("k").payload(v), T)
            .await
            .map_err(|(e, _)| e)
            .unwrap();
    }
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Every value a consumer with `isolation` reads from partition 0, from the start until
/// nothing new arrives for a while (at least `min` values are waited for).
fn read_values(b: &Broker, topic: &str, isolation: &str, min: usize) -> Vec<String> {
    let c = consumer(b, &[("isolation.level", isolation)]).unwrap();
    let mut got = consume_n(&c, topic, 0, Offset::Beginning, min, T)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap_or_default()).unwrap())
        .collect::<Vec<_>>();
    // Anything beyond `min` would be a visibility bug: give it a moment to show up.
    let quiet = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < quiet {
        if let Some(m) = c.poll(Duration::from_millis(100)) {
            let r = detach(&m.unwrap());
            got.push(String::from_utf8(r.value.unwrap_or_default()).unwrap());
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_is_invisible_to_read_committed_and_committed_is_visible() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("txn");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let p = txn_producer(&b, "txn-abort-commit", &[]);

    p.begin_transaction().unwrap();
    let aborted = values("aborted", 10);
    send(&p, &topic, &aborted).await;
    p.abort_transaction(T).unwrap();

    p.begin_transaction().unwrap();
    let committed = values("committed", 5);
    send(&p, &topic, &committed).await;
    p.commit_transaction(T).unwrap();

    // 10 aborted + marker + 5 committed + marker.
    let c = consumer(&b, &[]).unwrap();
    let (_, high) = c.fetch_watermarks(&topic, 0, T).unwrap();
    assert_eq!(high, 17);

    assert_eq!(read_values(&b, &topic, "read_committed", 5), committed);
    let mut all = aborted.clone();
    all.extend(committed.iter().cloned());
    assert_eq!(
        read_values(&b, &topic, "read_uncommitted", 15),
        all,
        "read_uncommitted sees aborted data, never the markers"
    );
    // The transaction index survives a restart.
    let mut b = b;
    b.restart().unwrap();
    assert_eq!(read_values(&b, &topic, "read_committed", 5), committed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_transaction_holds_back_read_committed_consumers() {
    let b = Broker::start().unwrap();
    let topic = unique_topic("txn-lso");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let plain = producer(&b, &[]).unwrap();
    send(&plain, &topic, &values("before", 3)).await;
    let p = txn_producer(&b, "txn-lso", &[]);
    p.begin_transaction().unwrap();
    send(&p, &topic, &values("open", 4)).await;
    send(&plain, &topic, &values("after", 2)).await;

    // The LSO stops at the open transaction: only "before" is readable.
    assert_eq!(
        read_values(&b, &topic, "read_committed", 3),
        values("before", 3)
    );
    p.commit_transaction(T).unwrap();
    let mut expected = values("before", 3);
    expected.extend(values("open", 4));
    expected.extend(values("after", 2));
    assert_eq!(read_values(&b, &topic, "read_committed", 9), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_transform_produce_commits_offsets_with_the_transaction() {
    let b = Broker::start().unwrap();
    let input = unique_topic("ctp-in");
    let output = unique_topic("ctp-out");
    let a = admin(&b).unwrap();
    create_topic(&a, &input, 1, &[]).await.unwrap();
    create_topic(&a, &output, 1, &[]).await.unwrap();
    let plain = producer(&b, &[]).unwrap();
    send(&plain, &input, &values("in", 20)).await;

    let group = unique_topic("ctp-group");
    let c: BaseConsumer = consumer(&b, &[("group.id", &group)]).unwrap();
    let records = consume_n(&c, &input, 0, Offset::Beginning, 20, T).unwrap();
    let p = txn_producer(&b, "txn-ctp", &[]);

    // First pass: transform 10, commit them with the offset 10.
    p.begin_transaction().unwrap();
    let first: Vec<String> = records[..10]
        .iter()
        .map(|r| {
            format!(
                "out-{}",
                String::from_utf8_lossy(r.value.as_deref().unwrap())
            )
        })
        .collect();
    send(&p, &output, &first).await;
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(&input, 0, Offset::Offset(10))
        .unwrap();
    p.send_offsets_to_transaction(&offsets, &c.group_metadata().unwrap(), T)
        .unwrap();
    p.commit_transaction(T).unwrap();

    // Second pass is aborted: its output and its offset 20 must not show.
    p.begin_transaction().unwrap();
    send(&p, &output, &values("never", 10)).await;
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(&input, 0, Offset::Offset(20))
        .unwrap();
    p.send_offsets_to_transaction(&offsets, &c.group_metadata().unwrap(), T)
        .unwrap();
    p.abort_transaction(T).unwrap();

    assert_eq!(read_values(&b, &output, "read_committed", 10), first);
    let committed_offset = |b: &Broker| {
        let c: BaseConsumer = consumer(b, &[("group.id", &group)]).unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&input, 0);
        let got = c.committed_offsets(tpl, T).unwrap();
        got.find_partition(&input, 0).unwrap().offset()
    };
    assert_eq!(committed_offset(&b), Offset::Offset(10));
    // The group coordinator's replay applies the committed transaction and drops the aborted one.
    let mut b = b;
    b.restart().unwrap();
    assert_eq!(committed_offset(&b), Offset::Offset(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_during_open_transaction_then_timeout_abort_unblocks_readers() {
    let mut b = Broker::start_with(&[(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "200",
    )])
    .unwrap();
    let topic = unique_topic("txn-kill");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    {
        let p = txn_producer(
            &b,
            "txn-kill",
            &[
                ("transaction.timeout.ms", "3000"),
                ("message.timeout.ms", "3000"),
                ("socket.timeout.ms", "3000"),
            ],
        );
        p.begin_transaction().unwrap();
        send(&p, &topic, &values("doomed", 5)).await;
        b.kill9().unwrap();
        // Dropping a producer with an open transaction must not block on the dead broker.
        std::mem::forget(p);
    }
    b.restart().unwrap();
    let plain = producer(&b, &[]).unwrap();
    send(&plain, &topic, &values("later", 3)).await;
    let started = Instant::now();
    // Held back by the open transaction until its timeout abort, then readable.
    assert_eq!(
        read_values(&b, &topic, "read_committed", 3),
        values("later", 3)
    );
    assert!(started.elapsed() < Duration::from_secs(25));
    let mut all = values("doomed", 5);
    all.extend(values("later", 3));
    assert_eq!(read_values(&b, &topic, "read_uncommitted", 8), all);
    // A new producer with the same transactional id works after the abort.
    let p = txn_producer(&b, "txn-kill", &[]);
    p.begin_transaction().unwrap();
    send(&p, &topic, &values("next", 2)).await;
    p.commit_transaction(T).unwrap();
    let mut expected = values("later", 3);
    expected.extend(values("next", 2));
    assert_eq!(read_values(&b, &topic, "read_committed", 5), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_see_open_transactions_and_producer_state() {
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let b = Broker::start().unwrap();
    let topic = unique_topic("txn-admin");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let p = txn_producer(&b, "txn-admin", &[]);
    p.begin_transaction().unwrap();
    send(&p, &topic, &values("open", 2)).await;

    let listed: ListTransactionsResponse = raw_call(
        &b,
        ApiKey::ListTransactions,
        1,
        &ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("Ongoing")]),
    )
    .unwrap();
    assert_eq!(listed.error_code, 0);
    let ours: Vec<_> = listed
        .transaction_states
        .iter()
        .filter(|t| t.transactional_id.0.as_str() == "txn-admin")
        .collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].transaction_state.as_str(), "Ongoing");
    let pid = ours[0].producer_id;

    let described: DescribeTransactionsResponse = raw_call(
        &b,
        ApiKey::DescribeTransactions,
        0,
        &DescribeTransactionsRequest::default().with_transactional_ids(vec![
            TransactionalId(StrBytes::from_static_str("txn-admin")),
            TransactionalId(StrBytes::from_static_str("nobody")),
        ]),
    )
    .unwrap();
    let d = &described.transaction_states[0];
    assert_eq!((d.error_code, d.producer_id), (0, pid));
    assert_eq!(d.topics.len(), 1);
    assert_eq!(d.topics[0].topic.0.as_str(), topic);
    assert_eq!(d.topics[0].partitions, vec![0]);
    assert_eq!(
        described.transaction_states[1].error_code,
        kafka_protocol::ResponseError::TransactionalIdNotFound.code()
    );

    let producers: DescribeProducersResponse = raw_call(
        &b,
        ApiKey::DescribeProducers,
        0,
        &DescribeProducersRequest::default().with_topics(vec![
            describe_producers_request::TopicRequest::default()
                .with_name(TopicName(StrBytes::from_string(topic.clone())))
                .with_partition_indexes(vec![0]),
        ]),
    )
    .unwrap();
    let part = &producers.topics[0].partitions[0];
    assert_eq!(part.error_code, 0);
    assert_eq!(part.active_producers.len(), 1);
    assert_eq!(part.active_producers[0].producer_id, pid);
    assert_eq!(part.active_producers[0].current_txn_start_offset, 0);

    p.commit_transaction(T).unwrap();
    let described: DescribeTransactionsResponse = raw_call(
        &b,
        ApiKey::DescribeTransactions,
        0,
        &DescribeTransactionsRequest::default().with_transactional_ids(vec![TransactionalId(
            StrBytes::from_static_str("txn-admin"),
        )]),
    )
    .unwrap();
    assert_eq!(
        described.transaction_states[0].transaction_state.as_str(),
        "CompleteCommit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_of_an_open_transaction_are_unstable_for_require_stable_fetches() {
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let b = Broker::start().unwrap();
    let topic = unique_topic("txn-stable");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let group = unique_topic("txn-stable-g");
    let c: BaseConsumer = consumer(&b, &[("group.id", &group)]).unwrap();
    let p = txn_producer(&b, "txn-stable", &[]);
    p.begin_transaction().unwrap();
    send(&p, &topic, &values("x", 1)).await;
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(&topic, 0, Offset::Offset(5))
        .unwrap();
    p.send_offsets_to_transaction(&offsets, &c.group_metadata().unwrap(), T)
        .unwrap();
    let fetch = |stable: bool| -> (i16, i64) {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.clone())))
            .with_require_stable(stable)
            .with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partition_indexes(vec![0]),
            ]));
        let resp: OffsetFetchResponse = raw_call(&b, ApiKey::OffsetFetch, 7, &req).unwrap();
        let part = &resp.topics[0].partitions[0];
        (part.error_code, part.committed_offset)
    };
    assert_eq!(
        fetch(true).0,
        kafka_protocol::ResponseError::UnstableOffsetCommit.code()
    );
    assert_eq!(fetch(false), (0, -1), "not visible before the commit");
    p.commit_transaction(T).unwrap();
    assert_eq!(fetch(true), (0, 5));
}

/// Key/value pairs a consumer with `isolation` reads from partition 0 (until quiet).
fn read_kv(b: &Broker, topic: &str, isolation: &str) -> Vec<(String, String)> {
    let c = consumer(b, &[("isolation.level", isolation)]).unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let mut quiet = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < quiet {
        if let Some(m) = c.poll(Duration::from_millis(100)) {
            let r = detach(&m.unwrap());
            out.push((
                String::from_utf8(r.key.unwrap_or_default()).unwrap(),
                String::from_utf8(r.value.unwrap_or_default()).unwrap(),
            ));
            quiet = Instant::now() + Duration::from_millis(1000);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_data_on_a_compacted_topic_after_cleaning() {
    let b = Broker::start_with(&[("log.cleaner.backoff.ms", "100")]).unwrap();
    let topic = unique_topic("txn-compact");
    create_topic(
        &admin(&b).unwrap(),
        &topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "1000"),
        ],
    )
    .await
    .unwrap();
    let p = txn_producer(&b, "txn-compact", &[]);
    let put = |k: &'static str, v: &'static str| {
        let p = &p;
        let topic = topic.clone();
        async move {
            p.send(FutureRecord::to(&topic).partition(0).key(k).payload(v), T)
                .await
                .map_err(|(e, _)| e)
                .unwrap();
        }
    };
    p.begin_transaction().unwrap();
    put("k1", "v1").await;
    put("k2", "v1").await;
    p.commit_transaction(T).unwrap();
    p.begin_transaction().unwrap();
    put("k1", "aborted").await;
    put("k3", "aborted").await;
    p.abort_transaction(T).unwrap();
    p.begin_transaction().unwrap();
    put("k2", "v2").await;
    p.commit_transaction(T).unwrap();
    // Roll the segment so everything above is cleanable, then wait for the cleaner.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let plain = producer(&b, &[]).unwrap();
    plain
        .send(
            FutureRecord::to(&topic)
                .partition(0)
                .key("~roll")
                .payload("r"),
            T,
        )
        .await
        .map_err(|(e, _)| e)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen;
    loop {
        seen = read_kv(&b, &topic, "read_uncommitted");
        let cleaned = !seen.iter().any(|(_, v)| v == "aborted")
            && seen.iter().filter(|(k, _)| k == "k2").count() == 1;
        if cleaned || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let expected: Vec<(String, String)> = [("k1", "v1"), ("k2", "v2"), ("~roll", "r")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(
        seen, expected,
        "the cleaner removes aborted data and keeps each key's latest committed value"
    );
    assert_eq!(read_kv(&b, &topic, "read_committed"), expected);
}

/// KIP-890 part 1 against the real binary: a transactional batch for a partition that is
/// not in the producer's ongoing transaction (a stray write, or a late one after the commit)
/// is refused with Kafka's codes (INVALID_TXN_STATE for Produce v9, TRANSACTION_ABORTABLE
/// for v11) and leaves no transaction open, so read_committed readers are never held back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_outside_the_transaction_are_refused_and_never_hang_the_partition() {
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    let b = Broker::start().unwrap();
    let topic = unique_topic("txn-verify");
    create_topic(&admin(&b).unwrap(), &topic, 2, &[])
        .await
        .unwrap();
    let p = txn_producer(&b, "txn-verify", &[]);
    p.begin_transaction().unwrap();
    send(&p, &topic, &values("in", 3)).await;

    let described: DescribeTransactionsResponse = raw_call(
        &b,
        ApiKey::DescribeTransactions,
        0,
        &DescribeTransactionsRequest::default().with_transactional_ids(vec![TransactionalId(
            StrBytes::from_static_str("txn-verify"),
        )]),
    )
    .unwrap();
    let d = &described.transaction_states[0];
    let (pid, epoch) = (d.producer_id.0, d.producer_epoch);
    let stray = |partition: i32, seq: i32, version: i16| -> (i16, i64) {
        let mut builder = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None)
            .producer_id(pid)
            .producer_epoch(epoch)
            .base_sequence(seq)
            .transactional(true);
        builder.push(1_700_000_000_000, Some(b"k"), Some(b"stray"), &[]);
        let req = ProduceRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(
                "txn-verify",
            ))))
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.clone())))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(builder.build().unwrap().into())),
                ])]);
        let r: ProduceResponse = raw_call(&b, ApiKey::Produce, version, &req).unwrap();
        let part = &r.responses[0].partition_responses[0];
        (part.error_code, part.base_offset)
    };
    // Partition 1 was never added to the transaction.
    assert_eq!(stray(1, 0, 9), (48, -1), "INVALID_TXN_STATE");
    assert_eq!(stray(1, 0, 11), (120, -1), "TRANSACTION_ABORTABLE");
    p.commit_transaction(T).unwrap();
    // After the commit partition 0 is out of the transaction too: a late batch would open a
    // transaction no marker closes.
    assert_eq!(stray(0, 3, 9), (48, -1));

    let stable = |partition: i32| -> (i64, i64) {
        let offsets = |isolation: i8| -> i64 {
            let req = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_isolation_level(isolation)
                .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partitions(vec![
                        list_offsets_request::ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_timestamp(-1),
                    ])]);
            let r: ListOffsetsResponse = raw_call(&b, ApiKey::ListOffsets, 5, &req).unwrap();
            let part = &r.topics[0].partitions[0];
            assert_eq!(part.error_code, 0);
            part.offset
        };
        (offsets(0), offsets(1))
    };
    // 3 records and the COMMIT marker; read_committed sees up to the end.
    assert_eq!(stable(0), (4, 4));
    assert_eq!(stable(1), (0, 0));
    assert_eq!(
        read_values(&b, &topic, "read_committed", 3),
        values("in", 3)
    );
}
