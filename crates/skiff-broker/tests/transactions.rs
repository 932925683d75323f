//! Transactions through dispatch, without sockets: KIP-890 part 1 verification of
//! transactional produce batches (Kafka's error codes per Produce version, AddPartitionsToTxn
//! `verify_only` per partition, the switch `transaction.partition.verification.enable`), and
//! `transactional.id.expiration.ms` (idle ids removed, tombstoned, still gone after a restart;
//! an id with an ongoing transaction kept).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use common::{call, stop};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use skiff_broker::Broker;

/// A broker with few coordinator partitions, `extra` settings applied last; starting it
/// waits for both coordinators to load.
fn txn_broker(dir: &Path, extra: &[&str]) -> common::TestBroker {
    common::broker(dir)
        .wait_coordinators()
        .sets(&[
            "transaction.state.log.num.partitions=2",
            "offsets.topic.num.partitions=1",
        ])
        .sets(extra)
}

async fn start(dir: &Path, extra: &[&str]) -> Arc<Broker> {
    txn_broker(dir, extra).start().await
}

fn tid(t: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(t.into()))
}

/// InitProducerId for `txn` (the broker has loaded its coordinators): (producer id, epoch).
async fn init(broker: &Arc<Broker>, txn: &str) -> (i64, i16) {
    let body = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid(txn)))
        .with_transaction_timeout_ms(60_000);
    let r = match call(
        broker,
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(body),
    )
    .await
    {
        ResponseKind::InitProducerId(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, 0);
    (r.producer_id.0, r.producer_epoch)
}

async fn add_partitions(broker: &Arc<Broker>, txn: &str, pid: i64, epoch: i16, parts: &[i32]) {
    let body = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid(txn))
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![
            add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(parts.to_vec()),
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

/// AddPartitionsToTxn v4 `verify_only`: the error code per partition of topic t.
async fn verify_only(
    broker: &Arc<Broker>,
    txn: &str,
    pid: i64,
    epoch: i16,
    parts: &[i32],
) -> Vec<(i32, i16)> {
    let body = AddPartitionsToTxnRequest::default().with_transactions(vec![
        add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
            .with_transactional_id(tid(txn))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_verify_only(true)
            .with_topics(vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(parts.to_vec()),
            ]),
    ]);
    match call(
        broker,
        ApiKey::AddPartitionsToTxn,
        4,
        RequestKind::AddPartitionsToTxn(body),
    )
    .await
    {
        ResponseKind::AddPartitionsToTxn(r) => r.results_by_transaction[0].topic_results[0]
            .results_by_partition
            .iter()
            .map(|p| (p.partition_index, p.partition_error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

async fn end_txn(broker: &Arc<Broker>, txn: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let body = EndTxnRequest::default()
        .with_transactional_id(tid(txn))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    match call(broker, ApiKey::EndTxn, 3, RequestKind::EndTxn(body)).await {
        ResponseKind::EndTxn(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

fn txn_batch(pid: i64, epoch: i16, seq: i32) -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None)
        .producer_id(pid)
        .producer_epoch(epoch)
        .base_sequence(seq)
        .transactional(true);
    b.push(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
    Bytes::from(b.build().unwrap())
}

/// Produces one batch to t-`partition` at `version`: (error code, base offset).
async fn produce(
    broker: &Arc<Broker>,
    version: i16,
    txn: Option<&str>,
    partition: i32,
    records: Bytes,
) -> (i16, i64) {
    let body = ProduceRequest::default()
        .with_transactional_id(txn.map(tid))
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(records)),
            ])]);
    match call(broker, ApiKey::Produce, version, RequestKind::Produce(body)).await {
        ResponseKind::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            (p.error_code, p.base_offset)
        }
        other => panic!("{other:?}"),
    }
}

async fn create_topic(broker: &Arc<Broker>, partitions: i32) {
    common::create_topic(broker, "t", partitions).await;
}

fn end_offset(broker: &Broker, partition: i32) -> i64 {
    broker
        .topics
        .get("t")
        .unwrap()
        .partition(partition)
        .unwrap()
        .log
        .log_end_offset()
}

fn ongoing(broker: &Broker, partition: i32) -> usize {
    broker
        .topics
        .get("t")
        .unwrap()
        .partition(partition)
        .unwrap()
        .log
        .ongoing_transactions()
        .len()
}

const INVALID_TXN_STATE: i16 = 48;
const TRANSACTION_ABORTABLE: i16 = 120;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_batches_need_the_partition_in_the_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    create_topic(&broker, 3).await;
    let (pid, epoch) = init(&broker, "tx").await;

    // No AddPartitionsToTxn yet: refused, nothing written, no transaction left open.
    let (code, offset) = produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch, 0)).await;
    assert_eq!((code, offset), (INVALID_TXN_STATE, -1), "Produce v9");
    let (code, _) = produce(&broker, 11, Some("tx"), 0, txn_batch(pid, epoch, 0)).await;
    assert_eq!(code, TRANSACTION_ABORTABLE, "Produce v11+");
    assert_eq!((end_offset(&broker, 0), ongoing(&broker, 0)), (0, 0));
    // Transactional records without a transactional id.
    let (code, _) = produce(&broker, 9, None, 0, txn_batch(pid, epoch, 0)).await;
    assert_eq!(
        code,
        ResponseError::TransactionalIdAuthorizationFailed.code()
    );

    add_partitions(&broker, "tx", pid, epoch, &[0]).await;
    assert_eq!(
        verify_only(&broker, "tx", pid, epoch, &[0, 1]).await,
        vec![(0, 0), (1, TRANSACTION_ABORTABLE)]
    );
    // A stale epoch is fenced with the code producers expect from a produce.
    let (code, _) = produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch - 1, 0)).await;
    assert_eq!(code, ResponseError::InvalidProducerEpoch.code());
    let (code, _) = produce(&broker, 9, Some("other"), 0, txn_batch(pid, epoch, 0)).await;
    assert_eq!(code, ResponseError::InvalidProducerIdMapping.code());
    // The added partition takes the batch; another one still does not.
    assert_eq!(
        produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch, 0)).await,
        (0, 0)
    );
    assert_eq!(
        produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch, 1)).await,
        (0, 1)
    );
    let (code, _) = produce(&broker, 9, Some("tx"), 1, txn_batch(pid, epoch, 0)).await;
    assert_eq!(code, INVALID_TXN_STATE);
    assert_eq!(end_offset(&broker, 1), 0);

    assert_eq!(end_txn(&broker, "tx", pid, epoch, true).await, 0);
    assert_eq!(ongoing(&broker, 0), 0);
    // After the commit the partition is no longer in a transaction: a late batch of the
    // ended transaction would hang the partition's last stable offset, so it is refused.
    let (code, _) = produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch, 2)).await;
    assert_eq!(code, INVALID_TXN_STATE);
    assert_eq!((end_offset(&broker, 0), ongoing(&broker, 0)), (3, 0));
    assert_eq!(
        verify_only(&broker, "tx", pid, epoch, &[0]).await,
        vec![(0, TRANSACTION_ABORTABLE)]
    );
    // Non-transactional data is not concerned.
    let plain = {
        let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
        b.push(1_700_000_000_000, None, Some(b"x"), &[]);
        Bytes::from(b.build().unwrap())
    };
    assert_eq!(produce(&broker, 9, None, 2, plain).await, (0, 0));
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(
        dir.path(),
        &["transaction.partition.verification.enable=false"],
    )
    .await;
    create_topic(&broker, 1).await;
    let (pid, epoch) = init(&broker, "tx").await;
    // Kafka before KIP-890: the batch is written although the partition was never added.
    assert_eq!(
        produce(&broker, 9, Some("tx"), 0, txn_batch(pid, epoch, 0)).await,
        (0, 0)
    );
    assert_eq!(ongoing(&broker, 0), 1);
    stop(broker).await;
}

/// The transactional ids the coordinator knows, by name.
async fn listed(broker: &Arc<Broker>) -> Vec<String> {
    let (code, ids) = listed_matching(broker, 1, None).await;
    assert_eq!(code, 0);
    ids
}

/// ListTransactions at `version` with a KIP-1152 pattern: (error code, ids sorted).
async fn listed_matching(
    broker: &Arc<Broker>,
    version: i16,
    pattern: Option<&str>,
) -> (i16, Vec<String>) {
    let body = ListTransactionsRequest::default()
        .with_transactional_id_pattern(pattern.map(|p| StrBytes::from_string(p.into())));
    match call(
        broker,
        ApiKey::ListTransactions,
        version,
        RequestKind::ListTransactions(body),
    )
    .await
    {
        ResponseKind::ListTransactions(r) => {
            let mut v: Vec<String> = r
                .transaction_states
                .iter()
                .map(|t| t.transactional_id.0.to_string())
                .collect();
            v.sort();
            (r.error_code, v)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_transactions_v2_filters_by_a_whole_id_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    for id in ["orders-1", "orders-2", "payments-1", "ab"] {
        init(&broker, id).await;
    }
    let all = ["ab", "orders-1", "orders-2", "payments-1"];
    let matching = |p: Option<&'static str>| listed_matching(&broker, 2, p);
    assert_eq!(
        matching(Some("orders-.*")).await,
        (0, vec!["orders-1".into(), "orders-2".into()])
    );
    // The whole id must match (RE2/J `matches()` in Kafka), not a part of it.
    assert_eq!(matching(Some("orders")).await, (0, vec![]));
    assert_eq!(
        matching(Some(".*-1")).await,
        (0, vec!["orders-1".into(), "payments-1".into()])
    );
    // Alternation still has to cover the whole id: "a|ab" matches "ab".
    assert_eq!(matching(Some("a|ab")).await, (0, vec!["ab".into()]));
    // Null and empty patterns filter nothing.
    assert_eq!(
        matching(None).await,
        (0, all.iter().map(|s| s.to_string()).collect())
    );
    assert_eq!(matching(Some("")).await.1.len(), 4);
    let (code, ids) = matching(Some("orders-(")).await;
    assert_eq!(code, ResponseError::InvalidRegularExpression.code());
    assert!(ids.is_empty());
    // v1 has no pattern field: a pattern set on the request object is not looked at.
    assert_eq!(
        listed_matching(&broker, 1, Some("orders-.*")).await.1.len(),
        4
    );
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_transactional_ids_expire_and_stay_gone_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Expiry is judged on the broker's clock, and so is the cleanup interval (50 ms).
    let clock = common::manual_clock();
    let settings = [
        "transactional.id.expiration.ms=300",
        "transaction.remove.expired.transaction.cleanup.interval.ms=50",
    ];
    let broker = txn_broker(dir.path(), &settings)
        .clock(clock.clone())
        .start()
        .await;
    create_topic(&broker, 1).await;
    let (idle_pid, _) = init(&broker, "idle").await;
    let (pid, epoch) = init(&broker, "busy").await;
    add_partitions(&broker, "busy", pid, epoch, &[0]).await;
    assert_eq!(listed(&broker).await, vec!["busy", "idle"]);
    // However long real time passes, nothing expires while the clock stands still.
    let b = broker.clone();
    let removed = tokio::task::spawn_blocking(move || b.txn.expire_transactional_ids(300))
        .await
        .unwrap();
    assert_eq!(removed, 0);
    assert_eq!(listed(&broker).await, vec!["busy", "idle"]);

    // Past the expiration on the clock: the coordinator thread's next pass removes the id
    // (asked for at once, no waiting for its real-time wake-up).
    clock.advance(301);
    let b = broker.clone();
    assert!(tokio::task::spawn_blocking(move || b.txn.tick_now())
        .await
        .unwrap());
    assert_eq!(listed(&broker).await, vec!["busy"]);
    // The ongoing transaction keeps its id however long it is idle (well past the expiration,
    // within its 60 s transaction timeout); asked directly, so no thread run is waited for.
    clock.advance(10_000);
    let b = broker.clone();
    let removed = tokio::task::spawn_blocking(move || b.txn.expire_transactional_ids(300))
        .await
        .unwrap();
    assert_eq!(removed, 0);
    assert_eq!(listed(&broker).await, vec!["busy"]);
    stop(broker).await;

    // The tombstone keeps it gone; a producer using the id again starts afresh.
    let broker = txn_broker(dir.path(), &settings).clock(clock).start().await;
    let _ = init(&broker, "probe").await;
    let ids = listed(&broker).await;
    assert!(!ids.contains(&"idle".to_string()), "{ids:?}");
    assert!(ids.contains(&"busy".to_string()), "{ids:?}");
    let (again, epoch) = init(&broker, "idle").await;
    assert_ne!(again, idle_pid, "a removed id gets a new producer id");
    assert_eq!(epoch, 0);
    stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_batches_of_two_producers_in_one_request_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    create_topic(&broker, 2).await;
    let (pid, epoch) = init(&broker, "tx").await;
    add_partitions(&broker, "tx", pid, epoch, &[0, 1]).await;
    let part = |index: i32, records: Bytes| {
        produce_request::PartitionProduceData::default()
            .with_index(index)
            .with_records(Some(records))
    };
    let body = ProduceRequest::default()
        .with_transactional_id(Some(tid("tx")))
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![
                part(0, txn_batch(pid, epoch, 0)),
                part(1, txn_batch(pid + 1, 0, 0)),
            ])]);
    let codes: Vec<i16> = match call(&broker, ApiKey::Produce, 9, RequestKind::Produce(body)).await
    {
        ResponseKind::Produce(r) => r.responses[0]
            .partition_responses
            .iter()
            .map(|p| p.error_code)
            .collect(),
        other => panic!("{other:?}"),
    };
    let mapping = ResponseError::InvalidProducerIdMapping.code();
    assert_eq!(codes, vec![mapping, mapping]);
    assert_eq!((end_offset(&broker, 0), end_offset(&broker, 1)), (0, 0));
    stop(broker).await;
}
