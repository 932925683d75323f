//! Shared test helpers: a filled request of every guarded API (every API that has a guard
//! schema, a superset of SUPPORTED) at every version, built with kafka-protocol itself, and
//! frame assembly the way a client does it. Group samples live in `groups.rs`, transaction
//! and DescribeLogDirs samples in `txn.rs`, ACL samples in `acls.rs`.
#![allow(dead_code, clippy::unwrap_used)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::*;
use kafka_protocol::messages::list_offsets_request::*;
use kafka_protocol::messages::metadata_request::*;
use kafka_protocol::messages::produce_request::*;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use skiff_protocol::{guarded_apis, SUPPORTED};
use uuid::Uuid;

fn s(x: &'static str) -> StrBytes {
    StrBytes::from_static_str(x)
}

fn topic(x: &'static str) -> TopicName {
    TopicName(s(x))
}

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// Adds an unknown tagged field (tag 99) so the walker's tagged-field skipping is exercised.
/// Only in flexible versions: older versions cannot carry tagged fields.
macro_rules! tag {
    ($x:expr, $flex:expr) => {{
        let mut x = $x;
        if $flex {
            x.unknown_tagged_fields
                .insert(99, ::bytes::Bytes::from_static(b"\x01\x02\x03"));
        }
        x
    }};
}

mod acls;
mod groups;
mod quotas;
mod scram;
mod share;
mod txn;

/// Every (key, version) pair in SUPPORTED.
pub fn all_supported() -> Vec<(ApiKey, i16)> {
    SUPPORTED
        .iter()
        .flat_map(|&(k, min, max)| (min..=max).map(move |v| (k, v)))
        .collect()
}

/// Every (key, version) pair that has a guard schema (a superset of [`all_supported`]).
pub fn all_guarded() -> Vec<(ApiKey, i16)> {
    guarded_apis()
        .flat_map(|(k, min, max)| (min..=max).map(move |v| (k, v)))
        .collect()
}

/// Guarded (key, version) pairs that are not served, so `decode_request` must refuse them.
pub fn guarded_not_supported() -> Vec<(ApiKey, i16)> {
    let supported = all_supported();
    all_guarded()
        .into_iter()
        .filter(|kv| !supported.contains(kv))
        .collect()
}

fn flexible(key: ApiKey, v: i16) -> bool {
    key.request_header_version(v) >= 2
}

/// A non-trivial request: arrays of 2, nested structs filled, tagged fields where allowed.
pub fn sample_request(key: ApiKey, v: i16) -> RequestKind {
    let f = flexible(key, v);
    match key {
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsRequest::default();
            if v >= 3 {
                r = r
                    .with_client_software_name(s("skiff-test"))
                    .with_client_software_version(s("1.2.3"));
            }
            RequestKind::ApiVersions(tag!(r, f))
        }
        ApiKey::Metadata => {
            let t = |n| {
                let mut t = MetadataRequestTopic::default().with_name(Some(topic(n)));
                if v >= 10 {
                    t = t.with_topic_id(uuid(7));
                }
                tag!(t, f)
            };
            let mut r = MetadataRequest::default().with_topics(Some(vec![t("a"), t("bb")]));
            if v >= 4 {
                r = r.with_allow_auto_topic_creation(false);
            }
            if (8..=10).contains(&v) {
                r = r.with_include_cluster_authorized_operations(true);
            }
            if v >= 8 {
                r = r.with_include_topic_authorized_operations(true);
            }
            RequestKind::Metadata(tag!(r, f))
        }
        ApiKey::Produce => {
            let p = |i| {
                tag!(
                    PartitionProduceData::default()
                        .with_index(i)
                        .with_records(Some(Bytes::from_static(b"not-really-a-batch"))),
                    f
                )
            };
            let t = |n, id| {
                let mut t = TopicProduceData::default().with_partition_data(vec![p(0), p(1)]);
                if v <= 12 {
                    t = t.with_name(topic(n));
                } else {
                    t = t.with_topic_id(uuid(id));
                }
                tag!(t, f)
            };
            let r = ProduceRequest::default()
                .with_transactional_id(Some(TransactionalId(s("tx"))))
                .with_acks(-1)
                .with_timeout_ms(1500)
                .with_topic_data(vec![t("a", 1), t("b", 2)]);
            RequestKind::Produce(tag!(r, f))
        }
        ApiKey::Fetch => {
            let p = |i| {
                let mut p = FetchPartition::default()
                    .with_partition(i)
                    .with_fetch_offset(42)
                    .with_partition_max_bytes(1 << 20);
                if v >= 9 {
                    p = p.with_current_leader_epoch(3);
                }
                if v >= 12 {
                    p = p.with_last_fetched_epoch(2);
                }
                if v >= 5 {
                    p = p.with_log_start_offset(5);
                }
                if v >= 17 {
                    p = p.with_replica_directory_id(uuid(11));
                }
                if v >= 18 {
                    p = p.with_high_watermark(77);
                }
                tag!(p, f)
            };
            let t = |n, id| {
                let mut t = FetchTopic::default().with_partitions(vec![p(0), p(1)]);
                if v <= 12 {
                    t = t.with_topic(topic(n));
                } else {
                    t = t.with_topic_id(uuid(id));
                }
                tag!(t, f)
            };
            let forgotten = |n, id| {
                let mut t = ForgottenTopic::default().with_partitions(vec![4, 5]);
                if v <= 12 {
                    t = t.with_topic(topic(n));
                } else {
                    t = t.with_topic_id(uuid(id));
                }
                tag!(t, f)
            };
            let mut r = FetchRequest::default()
                .with_max_wait_ms(500)
                .with_min_bytes(1)
                .with_max_bytes(50 << 20)
                .with_isolation_level(1)
                .with_topics(vec![t("a", 1), t("b", 2)]);
            if v <= 14 {
                r = r.with_replica_id(BrokerId(-1));
            }
            if v >= 7 {
                r = r
                    .with_session_id(9)
                    .with_session_epoch(1)
                    .with_forgotten_topics_data(vec![forgotten("c", 3), forgotten("d", 4)]);
            }
            if v >= 11 {
                r = r.with_rack_id(s("rack-1"));
            }
            if v >= 12 {
                r = r.with_cluster_id(Some(s("cluster-xyz")));
            }
            if v >= 15 {
                r = r.with_replica_state(tag!(
                    fetch_request::ReplicaState::default()
                        .with_replica_id(BrokerId(1))
                        .with_replica_epoch(8),
                    f
                ));
            }
            RequestKind::Fetch(tag!(r, f))
        }
        ApiKey::ListOffsets => {
            let p = |i| {
                let mut p = ListOffsetsPartition::default()
                    .with_partition_index(i)
                    .with_timestamp(-2);
                if v >= 4 {
                    p = p.with_current_leader_epoch(6);
                }
                tag!(p, f)
            };
            let t = |n| {
                tag!(
                    ListOffsetsTopic::default()
                        .with_name(topic(n))
                        .with_partitions(vec![p(0), p(1)]),
                    f
                )
            };
            let mut r = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![t("a"), t("b")]);
            if v >= 2 {
                r = r.with_isolation_level(1);
            }
            if v >= 10 {
                r = r.with_timeout_ms(3000);
            }
            RequestKind::ListOffsets(tag!(r, f))
        }
        ApiKey::OffsetForLeaderEpoch => {
            let p = |i| {
                tag!(
                    offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                        .with_partition(i)
                        .with_current_leader_epoch(4)
                        .with_leader_epoch(3),
                    f
                )
            };
            let t = |n| {
                tag!(
                    offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                        .with_topic(topic(n))
                        .with_partitions(vec![p(0), p(1)]),
                    f
                )
            };
            let mut r = OffsetForLeaderEpochRequest::default().with_topics(vec![t("a"), t("b")]);
            if v >= 3 {
                r = r.with_replica_id(BrokerId(-1));
            }
            RequestKind::OffsetForLeaderEpoch(tag!(r, f))
        }
        ApiKey::CreateTopics => {
            use create_topics_request::*;
            let a = |i| {
                tag!(
                    CreatableReplicaAssignment::default()
                        .with_partition_index(i)
                        .with_broker_ids(vec![BrokerId(1), BrokerId(2)]),
                    f
                )
            };
            let c = |n, val| {
                tag!(
                    CreatableTopicConfig::default()
                        .with_name(s(n))
                        .with_value(val),
                    f
                )
            };
            let t = |n| {
                tag!(
                    CreatableTopic::default()
                        .with_name(topic(n))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1)
                        .with_assignments(vec![a(0), a(1)])
                        .with_configs(vec![
                            c("cleanup.policy", Some(s("compact"))),
                            c("retention.ms", None),
                        ]),
                    f
                )
            };
            let r = CreateTopicsRequest::default()
                .with_topics(vec![t("a"), t("b")])
                .with_timeout_ms(30000)
                .with_validate_only(true);
            RequestKind::CreateTopics(tag!(r, f))
        }
        ApiKey::DeleteTopics => {
            let mut r = DeleteTopicsRequest::default().with_timeout_ms(1000);
            if v >= 6 {
                let st = |n, id| {
                    tag!(
                        delete_topics_request::DeleteTopicState::default()
                            .with_name(n)
                            .with_topic_id(uuid(id)),
                        f
                    )
                };
                r = r.with_topics(vec![st(Some(topic("a")), 1), st(None, 2)]);
            } else {
                r = r.with_topic_names(vec![topic("a"), topic("bb")]);
            }
            RequestKind::DeleteTopics(tag!(r, f))
        }
        ApiKey::CreatePartitions => {
            use create_partitions_request::*;
            let a = || {
                tag!(
                    CreatePartitionsAssignment::default()
                        .with_broker_ids(vec![BrokerId(1), BrokerId(2)]),
                    f
                )
            };
            let t = |n, assign: bool| {
                tag!(
                    CreatePartitionsTopic::default()
                        .with_name(topic(n))
                        .with_count(4)
                        .with_assignments(assign.then(|| vec![a(), a()])),
                    f
                )
            };
            let r = CreatePartitionsRequest::default()
                .with_topics(vec![t("a", true), t("b", false)])
                .with_timeout_ms(1000)
                .with_validate_only(true);
            RequestKind::CreatePartitions(tag!(r, f))
        }
        ApiKey::DescribeConfigs => {
            let res = |n, keys: bool| {
                tag!(
                    describe_configs_request::DescribeConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(s(n))
                        .with_configuration_keys(
                            keys.then(|| vec![s("cleanup.policy"), s("segment.bytes")])
                        ),
                    f
                )
            };
            let mut r = DescribeConfigsRequest::default()
                .with_resources(vec![res("a", true), res("b", false)])
                .with_include_synonyms(true);
            if v >= 3 {
                r = r.with_include_documentation(true);
            }
            RequestKind::DescribeConfigs(tag!(r, f))
        }
        ApiKey::AlterConfigs => {
            use alter_configs_request::*;
            let c = |n, val| {
                tag!(
                    AlterableConfig::default().with_name(s(n)).with_value(val),
                    f
                )
            };
            let res = |n| {
                tag!(
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(s(n))
                        .with_configs(vec![c("retention.ms", Some(s("1000"))), c("x", None)]),
                    f
                )
            };
            let r = AlterConfigsRequest::default()
                .with_resources(vec![res("a"), res("b")])
                .with_validate_only(true);
            RequestKind::AlterConfigs(tag!(r, f))
        }
        ApiKey::IncrementalAlterConfigs => {
            use incremental_alter_configs_request::*;
            let c = |n, op, val| {
                tag!(
                    AlterableConfig::default()
                        .with_name(s(n))
                        .with_config_operation(op)
                        .with_value(val),
                    f
                )
            };
            let res = |n| {
                tag!(
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(s(n))
                        .with_configs(vec![
                            c("retention.ms", 0, Some(s("1000"))),
                            c("segment.ms", 1, None),
                        ]),
                    f
                )
            };
            let r = IncrementalAlterConfigsRequest::default()
                .with_resources(vec![res("a"), res("b")])
                .with_validate_only(true);
            RequestKind::IncrementalAlterConfigs(tag!(r, f))
        }
        ApiKey::DeleteRecords => {
            use delete_records_request::*;
            let p = |i| {
                tag!(
                    DeleteRecordsPartition::default()
                        .with_partition_index(i)
                        .with_offset(100),
                    f
                )
            };
            let t = |n| {
                tag!(
                    DeleteRecordsTopic::default()
                        .with_name(topic(n))
                        .with_partitions(vec![p(0), p(1)]),
                    f
                )
            };
            let r = DeleteRecordsRequest::default()
                .with_topics(vec![t("a"), t("b")])
                .with_timeout_ms(1000);
            RequestKind::DeleteRecords(tag!(r, f))
        }
        ApiKey::DescribeCluster => {
            let mut r =
                DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
            if v >= 1 {
                r = r.with_endpoint_type(2);
            }
            if v >= 2 {
                r = r.with_include_fenced_brokers(true);
            }
            RequestKind::DescribeCluster(tag!(r, f))
        }
        other => groups::sample(other, v, f)
            .or_else(|| txn::sample(other, v, f))
            .or_else(|| acls::sample(other, v, f))
            .or_else(|| scram::sample(other, v, f))
            .or_else(|| quotas::sample(other, v, f))
            .or_else(|| share::sample(other, v, f))
            .unwrap_or_else(|| panic!("no sample for {other:?}: add one with its schema")),
    }
}

/// Encodes only the body of `req` at `v`.
pub fn encode_body(req: &RequestKind, v: i16) -> Bytes {
    let mut buf = BytesMut::new();
    req.encode(&mut buf, v).unwrap();
    buf.freeze()
}

/// The request header a client would send for `key`/`v`.
pub fn sample_header(key: ApiKey, v: i16, correlation_id: i32) -> RequestHeader {
    let mut h = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(v)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(s("rdkafka")));
    if key.request_header_version(v) >= 2 {
        h.unknown_tagged_fields
            .insert(5, Bytes::from_static(b"\xaa"));
    }
    h
}

/// A frame (no size prefix) holding `header` then `body`.
pub fn frame(header: &RequestHeader, key: ApiKey, v: i16, body: &[u8]) -> Bytes {
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, key.request_header_version(v))
        .unwrap();
    buf.extend_from_slice(body);
    buf.freeze()
}

/// A full valid frame for every guarded (key, version): body and header as a client sends
/// them, whether or not the API is in SUPPORTED.
pub fn all_guarded_frames() -> Vec<(ApiKey, i16, Bytes)> {
    all_guarded()
        .into_iter()
        .map(|(k, v)| {
            let body = encode_body(&sample_request(k, v), v);
            (k, v, frame(&sample_header(k, v, 1234), k, v, &body))
        })
        .collect()
}

/// A full valid frame for every supported (key, version).
pub fn all_sample_frames() -> Vec<(ApiKey, i16, Bytes)> {
    all_supported()
        .into_iter()
        .map(|(k, v)| {
            let body = encode_body(&sample_request(k, v), v);
            (k, v, frame(&sample_header(k, v, 1234), k, v, &body))
        })
        .collect()
}
