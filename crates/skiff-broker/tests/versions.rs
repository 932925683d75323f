//! Every advertised API version: a representative request goes through dispatch and its
//! response encodes at that version (kafka-protocol refuses fields a version lacks).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::dispatch::{dispatch, Reply};
use skiff_broker::Broker;
use skiff_protocol::DecodedRequest;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn batch() -> Bytes {
    let mut builder = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
    for i in 0..3i64 {
        builder.push(
            1_700_000_000_000 + i,
            Some(format!("k{i}").as_bytes()),
            Some(b"value"),
            &[],
        );
    }
    Bytes::from(builder.build().unwrap())
}

fn requests(version: i16, key: ApiKey, topic_id: uuid::Uuid) -> Vec<RequestKind> {
    let t = TopicName(s("t"));
    let by_id = |v: i16, min: i16| v >= min;
    match key {
        ApiKey::ApiVersions => vec![RequestKind::ApiVersions(ApiVersionsRequest::default())],
        ApiKey::Metadata => vec![
            RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
            RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
                    metadata_request::MetadataRequestTopic::default().with_name(Some(t.clone())),
                    metadata_request::MetadataRequestTopic::default()
                        .with_name(Some(TopicName(s(&format!("auto-{version}"))))),
                ]))),
        ],
        ApiKey::Produce => {
            let topic = produce_request::TopicProduceData::default()
                .with_name(if by_id(version, 13) {
                    TopicName::default()
                } else {
                    t.clone()
                })
                .with_topic_id(if by_id(version, 13) {
                    topic_id
                } else {
                    uuid::Uuid::nil()
                })
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch())),
                    produce_request::PartitionProduceData::default()
                        .with_index(7)
                        .with_records(Some(batch())),
                    produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(Bytes::from_static(b"garbage"))),
                ]);
            [1i16, -1]
                .iter()
                .map(|&acks| {
                    RequestKind::Produce(
                        ProduceRequest::default()
                            .with_acks(acks)
                            .with_timeout_ms(1000)
                            .with_topic_data(vec![topic.clone()]),
                    )
                })
                .collect()
        }
        ApiKey::Fetch => {
            let partitions = vec![
                fetch_request::FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20),
                fetch_request::FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(1_000_000)
                    .with_partition_max_bytes(1 << 20),
                fetch_request::FetchPartition::default()
                    .with_partition(9)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20),
            ];
            vec![RequestKind::Fetch(
                FetchRequest::default()
                    .with_max_wait_ms(0)
                    .with_min_bytes(1)
                    .with_max_bytes(1 << 20)
                    .with_isolation_level(1)
                    .with_topics(vec![fetch_request::FetchTopic::default()
                        .with_topic(if by_id(version, 13) {
                            TopicName::default()
                        } else {
                            t.clone()
                        })
                        .with_topic_id(if by_id(version, 13) {
                            topic_id
                        } else {
                            uuid::Uuid::nil()
                        })
                        .with_partitions(partitions)]),
            )]
        }
        ApiKey::ListOffsets => {
            let partitions = [-1i64, -2, -3, -4, 0, 1_700_000_000_001]
                .iter()
                .filter(|&&ts| (ts != -3 || version >= 7) && (ts != -4 || version >= 8))
                .map(|&ts| {
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(ts)
                })
                .collect();
            vec![RequestKind::ListOffsets(
                ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                        .with_name(t.clone())
                        .with_partitions(partitions)]),
            )]
        }
        ApiKey::CreateTopics => vec![RequestKind::CreateTopics(
            CreateTopicsRequest::default().with_topics(vec![
                create_topics_request::CreatableTopic::default()
                    .with_name(TopicName(s(&format!("new-{version}"))))
                    .with_num_partitions(2)
                    .with_replication_factor(1)
                    .with_configs(vec![create_topics_request::CreatableTopicConfig::default()
                        .with_name(s("retention.ms"))
                        .with_value(Some(s("1000")))]),
                create_topics_request::CreatableTopic::default()
                    .with_name(t.clone())
                    .with_num_partitions(1)
                    .with_replication_factor(3),
            ]),
        )],
        ApiKey::DeleteTopics => vec![RequestKind::DeleteTopics(if version >= 6 {
            DeleteTopicsRequest::default().with_topics(vec![
                delete_topics_request::DeleteTopicState::default()
                    .with_name(Some(TopicName(s(&format!("gone-{version}"))))),
                delete_topics_request::DeleteTopicState::default()
                    .with_topic_id(uuid::Uuid::new_v4())
                    .with_name(None),
            ])
        } else {
            DeleteTopicsRequest::default()
                .with_topic_names(vec![TopicName(s(&format!("gone-{version}")))])
        })],
        ApiKey::CreatePartitions => vec![RequestKind::CreatePartitions(
            CreatePartitionsRequest::default().with_topics(vec![
                create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(t.clone())
                    .with_count(1),
            ]),
        )],
        ApiKey::DescribeConfigs => vec![RequestKind::DescribeConfigs(
            DescribeConfigsRequest::default()
                .with_include_synonyms(true)
                .with_include_documentation(version >= 3)
                .with_resources(vec![
                    describe_configs_request::DescribeConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(s("t")),
                    describe_configs_request::DescribeConfigsResource::default()
                        .with_resource_type(4)
                        .with_resource_name(s("1")),
                    describe_configs_request::DescribeConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(s("nope")),
                ]),
        )],
        ApiKey::AlterConfigs => vec![RequestKind::AlterConfigs(
            AlterConfigsRequest::default().with_resources(vec![
                alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_configs(vec![alter_configs_request::AlterableConfig::default()
                        .with_name(s("retention.ms"))
                        .with_value(Some(s("86400000")))]),
            ]),
        )],
        ApiKey::IncrementalAlterConfigs => vec![RequestKind::IncrementalAlterConfigs(
            IncrementalAlterConfigsRequest::default().with_resources(vec![
                incremental_alter_configs_request::AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_configs(vec![
                        incremental_alter_configs_request::AlterableConfig::default()
                            .with_name(s("segment.ms"))
                            .with_config_operation(0)
                            .with_value(Some(s("3600000"))),
                    ]),
            ]),
        )],
        ApiKey::DeleteRecords => vec![RequestKind::DeleteRecords(
            DeleteRecordsRequest::default().with_topics(vec![
                delete_records_request::DeleteRecordsTopic::default()
                    .with_name(t.clone())
                    .with_partitions(vec![
                        delete_records_request::DeleteRecordsPartition::default()
                            .with_partition_index(0)
                            .with_offset(0),
                    ]),
            ]),
        )],
        ApiKey::DescribeCluster => vec![RequestKind::DescribeCluster(
            DescribeClusterRequest::default(),
        )],
        ApiKey::OffsetForLeaderEpoch => vec![RequestKind::OffsetForLeaderEpoch(
            OffsetForLeaderEpochRequest::default().with_topics(vec![
                offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                    .with_topic(t.clone())
                    .with_partitions(vec![
                        offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                            .with_partition(0)
                            .with_leader_epoch(0),
                    ]),
            ]),
        )],
        ApiKey::InitProducerId => {
            let mut v = vec![
                RequestKind::InitProducerId(
                    InitProducerIdRequest::default().with_transaction_timeout_ms(60_000),
                ),
                // Transactional: answered with an error until transactions exist.
                RequestKind::InitProducerId(
                    InitProducerIdRequest::default()
                        .with_transactional_id(Some(TransactionalId(s("tx"))))
                        .with_transaction_timeout_ms(60_000),
                ),
            ];
            if version >= 3 {
                // KIP-360: the producer's current id and epoch.
                v.push(RequestKind::InitProducerId(
                    InitProducerIdRequest::default()
                        .with_producer_id(ProducerId(0))
                        .with_producer_epoch(0),
                ));
            }
            v
        }
        other => panic!("no representative request for advertised API {other:?}: add one"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_version_answers_and_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let sets = vec![format!("log.dirs={}", dir.path().display())];
    let (config, _) = skiff_config::load(None, &sets, Vec::<(String, String)>::new()).unwrap();
    let broker: Arc<Broker> = tokio::task::spawn_blocking(move || Broker::start(config))
        .await
        .unwrap()
        .unwrap();
    let b = broker.clone();
    let topic =
        tokio::task::spawn_blocking(move || b.topics.create("t", 1, Default::default(), false))
            .await
            .unwrap()
            .unwrap();
    for &(key, min, max) in skiff_protocol::SUPPORTED {
        for version in min..=max {
            for body in requests(version, key, topic.id) {
                let request = DecodedRequest {
                    api_key: key,
                    api_version: version,
                    header: RequestHeader::default(),
                    body,
                };
                let response = match dispatch(&broker, request).await {
                    Reply::Respond(r) => r,
                    Reply::Later(f) => f.await,
                    Reply::NoResponse => panic!("{key:?} v{version}: no response"),
                    Reply::Close(why) => panic!("{key:?} v{version}: closed: {why}"),
                };
                skiff_protocol::encode_response(1, key, version, &response)
                    .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
            }
        }
    }
}
