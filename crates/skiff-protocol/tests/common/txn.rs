//! Filled sample requests of the idempotence/transaction APIs and DescribeLogDirs, one per
//! version, built with kafka-protocol. Only fields that exist in the version are set (the
//! crate's encoders refuse others); every array has two elements.

use super::{s, topic};
use kafka_protocol::messages::*;

fn txn_id(x: &'static str) -> TransactionalId {
    TransactionalId(s(x))
}

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not one of these APIs.
pub fn sample(key: ApiKey, v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdRequest::default()
                .with_transactional_id(Some(txn_id("tx-1")))
                .with_transaction_timeout_ms(60_000);
            if v >= 3 {
                r = r.with_producer_id(ProducerId(77)).with_producer_epoch(2);
            }
            RequestKind::InitProducerId(tag!(r, f))
        }
        ApiKey::AddPartitionsToTxn => {
            use add_partitions_to_txn_request::*;
            let t = |n| {
                tag!(
                    AddPartitionsToTxnTopic::default()
                        .with_name(topic(n))
                        .with_partitions(vec![0, 1]),
                    f
                )
            };
            let mut r = AddPartitionsToTxnRequest::default();
            if v <= 3 {
                r = r
                    .with_v3_and_below_transactional_id(txn_id("tx-1"))
                    .with_v3_and_below_producer_id(ProducerId(77))
                    .with_v3_and_below_producer_epoch(2)
                    .with_v3_and_below_topics(vec![t("a"), t("bb")]);
            } else {
                let tx = |id, verify| {
                    tag!(
                        AddPartitionsToTxnTransaction::default()
                            .with_transactional_id(txn_id(id))
                            .with_producer_id(ProducerId(77))
                            .with_producer_epoch(2)
                            .with_verify_only(verify)
                            .with_topics(vec![t("a"), t("bb")]),
                        f
                    )
                };
                r = r.with_transactions(vec![tx("tx-1", true), tx("tx-2", false)]);
            }
            RequestKind::AddPartitionsToTxn(tag!(r, f))
        }
        ApiKey::AddOffsetsToTxn => {
            let r = AddOffsetsToTxnRequest::default()
                .with_transactional_id(txn_id("tx-1"))
                .with_producer_id(ProducerId(77))
                .with_producer_epoch(2)
                .with_group_id(GroupId(s("g")));
            RequestKind::AddOffsetsToTxn(tag!(r, f))
        }
        ApiKey::EndTxn => {
            let r = EndTxnRequest::default()
                .with_transactional_id(txn_id("tx-1"))
                .with_producer_id(ProducerId(77))
                .with_producer_epoch(2)
                .with_committed(true);
            RequestKind::EndTxn(tag!(r, f))
        }
        ApiKey::TxnOffsetCommit => {
            use txn_offset_commit_request::*;
            let p = |i, meta: Option<&'static str>| {
                let mut p = TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(i)
                    .with_committed_offset(500)
                    .with_committed_metadata(meta.map(s));
                if v >= 2 {
                    p = p.with_committed_leader_epoch(4);
                }
                tag!(p, f)
            };
            let t = |n| {
                tag!(
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(topic(n))
                        .with_partitions(vec![p(0, Some("m")), p(1, None)]),
                    f
                )
            };
            let mut r = TxnOffsetCommitRequest::default()
                .with_transactional_id(txn_id("tx-1"))
                .with_group_id(GroupId(s("g")))
                .with_producer_id(ProducerId(77))
                .with_producer_epoch(2)
                .with_topics(vec![t("a"), t("bb")]);
            if v >= 3 {
                r = r
                    .with_generation_id(3)
                    .with_member_id(s("member-1"))
                    .with_group_instance_id(Some(s("instance-a")));
            }
            RequestKind::TxnOffsetCommit(tag!(r, f))
        }
        ApiKey::WriteTxnMarkers => {
            use write_txn_markers_request::*;
            let t = |n| {
                tag!(
                    WritableTxnMarkerTopic::default()
                        .with_name(topic(n))
                        .with_partition_indexes(vec![0, 1]),
                    f
                )
            };
            let m = |pid, commit| {
                tag!(
                    WritableTxnMarker::default()
                        .with_producer_id(ProducerId(pid))
                        .with_producer_epoch(2)
                        .with_transaction_result(commit)
                        .with_topics(vec![t("a"), t("bb")])
                        .with_coordinator_epoch(9),
                    f
                )
            };
            let r = WriteTxnMarkersRequest::default().with_markers(vec![m(77, true), m(78, false)]);
            RequestKind::WriteTxnMarkers(tag!(r, f))
        }
        ApiKey::DescribeProducers => {
            use describe_producers_request::*;
            let t = |n| {
                tag!(
                    TopicRequest::default()
                        .with_name(topic(n))
                        .with_partition_indexes(vec![0, 1]),
                    f
                )
            };
            let r = DescribeProducersRequest::default().with_topics(vec![t("a"), t("bb")]);
            RequestKind::DescribeProducers(tag!(r, f))
        }
        ApiKey::ListTransactions => {
            let mut r = ListTransactionsRequest::default()
                .with_state_filters(vec![s("Ongoing"), s("PrepareCommit")])
                .with_producer_id_filters(vec![ProducerId(77), ProducerId(78)]);
            if v >= 1 {
                r = r.with_duration_filter(60_000);
            }
            if v >= 2 {
                r = r.with_transactional_id_pattern(Some(s("tx-.*")));
            }
            RequestKind::ListTransactions(tag!(r, f))
        }
        ApiKey::DescribeTransactions => {
            let r = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![txn_id("tx-1"), txn_id("tx-2")]);
            RequestKind::DescribeTransactions(tag!(r, f))
        }
        ApiKey::DescribeLogDirs => {
            use describe_log_dirs_request::*;
            let t = |n| {
                tag!(
                    DescribableLogDirTopic::default()
                        .with_topic(topic(n))
                        .with_partitions(vec![0, 1]),
                    f
                )
            };
            let r = DescribeLogDirsRequest::default().with_topics(Some(vec![t("a"), t("bb")]));
            RequestKind::DescribeLogDirs(tag!(r, f))
        }
        _ => return None,
    })
}
