//! acks=all across many partitions: one Produce request that writes 12 partitions, and 12
//! concurrent requests that write one each, are answered only once every partition they wrote
//! is on disk (the flusher fsyncs a round's partitions in parallel; none may be left out or
//! answered early).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use common::{call, create_topic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;

const PARTITIONS: i32 = 12;

fn batch(n: usize) -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
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

/// Produces `n` records to each of `partitions` of `t` with acks=all; every partition's
/// answer must be no error.
async fn produce_all(broker: &Arc<Broker>, partitions: &[i32], n: usize) {
    let data = partitions
        .iter()
        .map(|&p| {
            PartitionProduceData::default()
                .with_index(p)
                .with_records(Some(batch(n)))
        })
        .collect();
    let body = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(data)]);
    match call(broker, ApiKey::Produce, 9, RequestKind::Produce(body)).await {
        ResponseKind::Produce(r) => {
            for p in &r.responses[0].partition_responses {
                assert_eq!(p.error_code, 0, "partition {}: {p:?}", p.index);
            }
            assert_eq!(r.responses[0].partition_responses.len(), partitions.len());
        }
        other => panic!("{other:?}"),
    }
}

/// Every partition of `t` is durable to its end and holds `records` records.
fn assert_durable(broker: &Broker, records: i64) {
    let topic = broker.topics.get("t").unwrap();
    for p in 0..PARTITIONS {
        let log = &topic.partition(p).unwrap().log;
        assert_eq!(log.log_end_offset(), records, "partition {p}");
        assert_eq!(
            log.flushed_offset(),
            records,
            "partition {p} answered before its fsync"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_on_many_partitions_answers_after_every_partition_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    create_topic(&broker, "t", PARTITIONS).await;
    let all: Vec<i32> = (0..PARTITIONS).collect();

    // One request, twelve partitions: one flusher round with twelve fsyncs.
    produce_all(&broker, &all, 3).await;
    assert_durable(&broker, 3);

    // Twelve requests at once, one partition each, a few rounds of them.
    for round in 1..=5 {
        let requests: Vec<_> = all
            .iter()
            .map(|&p| {
                let b = broker.clone();
                tokio::spawn(async move { produce_all(&b, &[p], 2).await })
            })
            .collect();
        for r in requests {
            r.await.unwrap();
        }
        assert_durable(&broker, 3 + 2 * round);
    }
    common::stop(broker).await;
}
