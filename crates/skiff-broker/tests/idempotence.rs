//! Idempotent producers through dispatch, without sockets: InitProducerId hands out increasing
//! ids that are never reused after a restart; a retried produce batch is answered with its
//! original base offset and stored once; gaps and stale epochs get Kafka's error codes; the
//! producer state survives a clean restart.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use common::call;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use skiff_broker::Broker;

async fn start(dir: &Path) -> Arc<Broker> {
    common::broker(dir).start().await
}

async fn init(broker: &Arc<Broker>, txn: Option<&str>) -> InitProducerIdResponse {
    let body = InitProducerIdRequest::default()
        .with_transactional_id(txn.map(|t| TransactionalId(StrBytes::from_string(t.into()))))
        .with_transaction_timeout_ms(60_000);
    match call(
        broker,
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(body),
    )
    .await
    {
        ResponseKind::InitProducerId(r) => r,
        other => panic!("{other:?}"),
    }
}

fn idem(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None)
        .producer_id(pid)
        .producer_epoch(epoch)
        .base_sequence(seq);
    for i in 0..n {
        b.push(
            1_700_000_000_000,
            Some(format!("k{i}").as_bytes()),
            Some(b"v"),
            &[],
        );
    }
    Bytes::from(b.build().unwrap())
}

/// Produces one batch to t-0 with acks=all; returns (error code, base offset).
async fn produce(broker: &Arc<Broker>, records: Bytes) -> (i16, i64) {
    let body = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_produce_end_to_end_through_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    common::create_topic(&broker, "t", 1).await;

    let first = init(&broker, None).await;
    let second = init(&broker, None).await;
    assert_eq!(first.error_code, 0);
    assert_eq!(first.producer_epoch, 0);
    assert!(second.producer_id.0 > first.producer_id.0);
    // A transactional id: the transaction coordinator answers once it has loaded, and
    // each new InitProducerId bumps the epoch of the same producer id.
    let deadline = std::time::Instant::now() + common::BOUND;
    let mut txn = init(&broker, Some("tx")).await;
    while txn.error_code == ResponseError::CoordinatorLoadInProgress.code() {
        assert!(
            std::time::Instant::now() < deadline,
            "the transaction coordinator never loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        txn = init(&broker, Some("tx")).await;
    }
    assert_eq!((txn.error_code, txn.producer_epoch), (0, 0));
    assert!(txn.producer_id.0 > second.producer_id.0);
    let again = init(&broker, Some("tx")).await;
    assert_eq!(
        (again.error_code, again.producer_id.0, again.producer_epoch),
        (0, txn.producer_id.0, 1)
    );

    let pid = first.producer_id.0;
    assert_eq!(produce(&broker, idem(pid, 0, 0, 3)).await, (0, 0));
    assert_eq!(produce(&broker, idem(pid, 0, 3, 2)).await, (0, 3));
    // Retries of both batches: success with the original offsets.
    assert_eq!(produce(&broker, idem(pid, 0, 0, 3)).await, (0, 0));
    assert_eq!(produce(&broker, idem(pid, 0, 3, 2)).await, (0, 3));
    // A gap.
    let (code, offset) = produce(&broker, idem(pid, 0, 9, 1)).await;
    assert_eq!(code, ResponseError::OutOfOrderSequenceNumber.code());
    assert_eq!(offset, -1);
    assert_eq!(produce(&broker, idem(pid, 1, 0, 1)).await, (0, 5));
    let (code, _) = produce(&broker, idem(pid, 0, 5, 1)).await;
    assert_eq!(code, ResponseError::InvalidProducerEpoch.code());
    let log = broker
        .topics
        .get("t")
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    assert_eq!(log.log_end_offset(), 6);

    common::stop(broker.clone()).await;
    drop(log);
    drop(broker);

    let broker = start(dir.path()).await;
    let after = init(&broker, None).await;
    assert!(
        after.producer_id.0 > second.producer_id.0,
        "ids are never reused"
    );
    // The producer state came back: the last batch is still a duplicate.
    assert_eq!(produce(&broker, idem(pid, 1, 0, 1)).await, (0, 5));
    assert_eq!(produce(&broker, idem(pid, 1, 1, 1)).await, (0, 6));
    common::stop(broker).await;
}
