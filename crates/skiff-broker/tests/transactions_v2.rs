//! Transaction version 2 (KIP-890 part 2) over a real listener on 127.0.0.1, the way a Java
//! 4.x producer speaks it: ApiVersions finalizes `transaction.version` 2 and advertises
//! EndTxn v5; Produce v12 and TxnOffsetCommit v5 add their partitions without
//! AddPartitionsToTxn/AddOffsetsToTxn; EndTxn v5 bumps the epoch (markers carry it) and
//! answers with it; a retried EndTxn is answered as Kafka does; the old epoch is fenced with
//! Kafka's codes; Produce v11 keeps the part-1 check.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::ResponseError;
use skiff_records::{BatchBuilder, Batches};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

struct Client {
    s: TcpStream,
    correlation: i32,
}

impl Client {
    async fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation += 1;
        let frame = common::request_frame(key, version, self.correlation, "tv2", request);
        self.s.write_all(&frame).await.unwrap();
        let mut body = common::read_frame(&mut self.s, Duration::from_secs(10))
            .await
            .unwrap();
        let header =
            ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        let response = Resp::decode(&mut body, version).unwrap();
        assert!(
            body.is_empty(),
            "{key:?} v{version}: bytes after the response"
        );
        response
    }

    async fn end_txn(
        &mut self,
        version: i16,
        pid: i64,
        epoch: i16,
        commit: bool,
    ) -> EndTxnResponse {
        let body = EndTxnRequest::default()
            .with_transactional_id(tid("tx"))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_committed(commit);
        self.send(ApiKey::EndTxn, version, &body).await
    }

    /// One transactional batch to t-`partition`: its error code.
    async fn produce(
        &mut self,
        version: i16,
        partition: i32,
        pid: i64,
        epoch: i16,
        seq: i32,
    ) -> i16 {
        let body = ProduceRequest::default()
            .with_transactional_id(Some(tid("tx")))
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(txn_batch(pid, epoch, seq))),
                ])]);
        let r: ProduceResponse = self.send(ApiKey::Produce, version, &body).await;
        r.responses[0].partition_responses[0].error_code
    }

    /// TxnOffsetCommit of offset `offset` for t-0 in group g: its error code.
    async fn commit_offset(&mut self, version: i16, pid: i64, epoch: i16, offset: i64) -> i16 {
        let body = TxnOffsetCommitRequest::default()
            .with_transactional_id(tid("tx"))
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_generation_id(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_topics(vec![
                txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![
                        txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(offset),
                    ]),
            ]);
        let r: TxnOffsetCommitResponse = self.send(ApiKey::TxnOffsetCommit, version, &body).await;
        r.topics[0].partitions[0].error_code
    }
}

fn tid(t: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(t.into()))
}

fn txn_batch(pid: i64, epoch: i16, seq: i32) -> Bytes {
    let mut b = BatchBuilder::new(0, skiff_records::Compression::None)
        .producer_id(pid)
        .producer_epoch(epoch)
        .base_sequence(seq)
        .transactional(true);
    b.push(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
    Bytes::from(b.build().unwrap())
}

/// (producer id, epoch) of each control batch in t-`partition`.
fn markers(broker: &skiff_broker::Broker, partition: i32) -> Vec<(i64, i16)> {
    let log = &broker
        .topics
        .get("t")
        .unwrap()
        .partition(partition)
        .unwrap()
        .log;
    let read = log.read(0, 1 << 20, true).unwrap();
    Batches::new(&read.records)
        .map(|b| b.unwrap().0)
        .filter(|h| h.is_control())
        .map(|h| (h.producer_id, h.producer_epoch))
        .collect()
}

const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTION_ABORTABLE: i16 = 120;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tv2_producer_bumps_its_epoch_at_every_end_and_its_zombie_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let served = common::broker(dir.path())
        .wait_coordinators()
        .sets(&[
            "transaction.state.log.num.partitions=2",
            "offsets.topic.num.partitions=1",
        ])
        .serve()
        .await;
    let broker = served.broker.clone();
    common::create_topic(&broker, "t", 2).await;
    let mut c = Client {
        s: TcpStream::connect(served.addr).await.unwrap(),
        correlation: 0,
    };

    // What the Java producer looks at to turn transaction version 2 on.
    let versions: ApiVersionsResponse = c
        .send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default())
        .await;
    let tv = versions
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .unwrap();
    assert_eq!((tv.min_version_level, tv.max_version_level), (2, 2));
    let supported = versions
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .unwrap();
    assert_eq!((supported.min_version, supported.max_version), (0, 2));
    let end_txn = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::EndTxn as i16)
        .unwrap();
    assert_eq!(end_txn.max_version, 5);

    let init: InitProducerIdResponse = c
        .send(
            ApiKey::InitProducerId,
            5,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(tid("tx")))
                .with_transaction_timeout_ms(60_000),
        )
        .await;
    assert_eq!(init.error_code, 0);
    let (pid, epoch) = (init.producer_id.0, init.producer_epoch);

    // No AddPartitionsToTxn, no AddOffsetsToTxn: Produce v12 and TxnOffsetCommit v5 add.
    assert_eq!(c.produce(12, 0, pid, epoch, 0).await, 0);
    assert_eq!(c.commit_offset(5, pid, epoch, 42).await, 0);
    let m = broker.txn.describe("tx").unwrap().unwrap();
    assert_eq!(
        m.partitions.len(),
        2,
        "t-0 and the offsets partition: {m:?}"
    );

    let r = c.end_txn(5, pid, epoch, true).await;
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (0, pid, epoch + 1)
    );
    assert_eq!(
        markers(&broker, 0),
        [(pid, epoch + 1)],
        "marker at the bumped epoch"
    );
    assert_eq!(
        broker.coordinator.committed_by_groups("t", 0).unwrap(),
        [("g".to_string(), 42)]
    );

    // The commit retried with the epoch it went out with: NONE and the new epoch; the abort
    // of a committed transaction: INVALID_TXN_STATE with no id.
    let r = c.end_txn(5, pid, epoch, true).await;
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (0, pid, epoch + 1)
    );
    let r = c.end_txn(5, pid, epoch, false).await;
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (INVALID_TXN_STATE, -1, -1)
    );
    assert_eq!(markers(&broker, 0).len(), 1);

    // The zombie at the old epoch: fenced on every path.
    assert_eq!(
        c.produce(12, 1, pid, epoch, 0).await,
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        c.commit_offset(5, pid, epoch, 7).await,
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        c.end_txn(4, pid, epoch, true).await.error_code,
        PRODUCER_FENCED
    );
    assert_eq!(
        broker
            .topics
            .get("t")
            .unwrap()
            .partition(1)
            .unwrap()
            .log
            .log_end_offset(),
        0
    );

    // The producer goes on at the new epoch (sequence 0 again) and aborts: bumped again.
    let epoch = epoch + 1;
    assert_eq!(c.produce(12, 1, pid, epoch, 0).await, 0);
    let r = c.end_txn(5, pid, epoch, false).await;
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (0, pid, epoch + 1)
    );
    assert_eq!(markers(&broker, 1), [(pid, epoch + 1)]);
    // An abort with nothing in the transaction bumps too, and writes nothing.
    let r = c.end_txn(5, pid, epoch + 1, false).await;
    assert_eq!((r.error_code, r.producer_epoch), (0, epoch + 2));
    assert_eq!(markers(&broker, 1).len(), 1);

    // An older client keeps KIP-890 part 1: Produce v11 needs AddPartitionsToTxn first.
    let epoch = epoch + 2;
    assert_eq!(c.produce(11, 0, pid, epoch, 0).await, TRANSACTION_ABORTABLE);
    let r = c.end_txn(5, pid + 1, epoch, true).await;
    assert_eq!(r.error_code, ResponseError::InvalidProducerIdMapping.code());
    drop(c);
    let _ = served.stop.send(true);
    let _ = served.server.await;
    common::stop(broker).await;
}

/// With `transaction.partition.verification.enable=false`, Produce v12 still adds the
/// partition (checked against Kafka 4.4, which does the same): without it EndTxn would leave
/// the partition's transaction open for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_v12_adds_the_partition_even_without_verification() {
    let dir = tempfile::tempdir().unwrap();
    let served = common::broker(dir.path())
        .wait_coordinators()
        .sets(&[
            "transaction.state.log.num.partitions=2",
            "offsets.topic.num.partitions=1",
            "transaction.partition.verification.enable=false",
        ])
        .serve()
        .await;
    let broker = served.broker.clone();
    common::create_topic(&broker, "t", 1).await;
    let mut c = Client {
        s: TcpStream::connect(served.addr).await.unwrap(),
        correlation: 0,
    };
    let init: InitProducerIdResponse = c
        .send(
            ApiKey::InitProducerId,
            5,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(tid("tx")))
                .with_transaction_timeout_ms(60_000),
        )
        .await;
    let (pid, epoch) = (init.producer_id.0, init.producer_epoch);
    assert_eq!(c.produce(12, 0, pid, epoch, 0).await, 0);
    let m = broker.txn.describe("tx").unwrap().unwrap();
    assert!(m.partitions.contains(&("t".to_string(), 0)), "{m:?}");
    let r = c.end_txn(5, pid, epoch, true).await;
    assert_eq!((r.error_code, r.producer_epoch), (0, epoch + 1));
    assert_eq!(markers(&broker, 0), [(pid, epoch + 1)]);
    drop(c);
    let _ = served.stop.send(true);
    let _ = served.server.await;
    common::stop(broker).await;
}
