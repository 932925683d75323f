//! Every advertised API version: a representative request goes through dispatch and its
//! response encodes at that version (kafka-protocol refuses fields a version lacks).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;

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
            RequestKind::Metadata(
                MetadataRequest::default()
                    .with_topics(Some(vec![
                        metadata_request::MetadataRequestTopic::default()
                            .with_name(Some(t.clone())),
                        metadata_request::MetadataRequestTopic::default()
                            .with_name(Some(TopicName(s(&format!("auto-{version}"))))),
                    ]))
                    // Asked at every version: the answer must still encode where the
                    // fields do not exist.
                    .with_include_topic_authorized_operations(true)
                    .with_include_cluster_authorized_operations(true),
            ),
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
        ApiKey::DescribeLogDirs => vec![
            RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None)),
            RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(Some(
                vec![
                describe_log_dirs_request::DescribableLogDirTopic::default()
                    .with_topic(t.clone())
                    .with_partitions(vec![0, 5]),
            ],
            ))),
        ],
        ApiKey::DescribeCluster => vec![RequestKind::DescribeCluster(
            DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
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
        ApiKey::FindCoordinator => {
            if version >= 4 {
                vec![
                    RequestKind::FindCoordinator(
                        FindCoordinatorRequest::default()
                            .with_key_type(0)
                            .with_coordinator_keys(vec![s("g"), s("")]),
                    ),
                    RequestKind::FindCoordinator(
                        FindCoordinatorRequest::default()
                            .with_key_type(1)
                            .with_coordinator_keys(vec![s("txn")]),
                    ),
                ]
            } else {
                let mut v = vec![RequestKind::FindCoordinator(
                    FindCoordinatorRequest::default().with_key(s("g")),
                )];
                if version >= 1 {
                    v.push(RequestKind::FindCoordinator(
                        FindCoordinatorRequest::default()
                            .with_key(s("txn"))
                            .with_key_type(1),
                    ));
                }
                v
            }
        }
        ApiKey::JoinGroup => {
            // The static member joins its own group: a pending dynamic member (after
            // MEMBER_ID_REQUIRED) holds a rebalance open until it rejoins or expires.
            let join = |instance: Option<&str>| {
                let group = match instance {
                    None => format!("g{version}"),
                    Some(_) => format!("static-{version}"),
                };
                RequestKind::JoinGroup(
                    JoinGroupRequest::default()
                        .with_group_id(GroupId(s(&group)))
                        .with_session_timeout_ms(10_000)
                        .with_rebalance_timeout_ms(if version >= 1 { 30_000 } else { -1 })
                        .with_group_instance_id(instance.map(s))
                        .with_protocol_type(s("consumer"))
                        .with_protocols(vec![
                            join_group_request::JoinGroupRequestProtocol::default()
                                .with_name(s("range"))
                                .with_metadata(Bytes::from_static(b"meta")),
                        ]),
                )
            };
            let mut v = vec![join(None)];
            if version >= 5 {
                v.push(join(Some("inst")));
            }
            v
        }
        ApiKey::SyncGroup => vec![RequestKind::SyncGroup(
            SyncGroupRequest::default()
                .with_group_id(GroupId(s(&format!("g{version}"))))
                .with_generation_id(1)
                .with_member_id(s("unknown"))
                .with_protocol_type(if version >= 5 {
                    Some(s("consumer"))
                } else {
                    None
                })
                .with_protocol_name(if version >= 5 { Some(s("range")) } else { None }),
        )],
        ApiKey::Heartbeat => vec![RequestKind::Heartbeat(
            HeartbeatRequest::default()
                .with_group_id(GroupId(s("g0")))
                .with_generation_id(1)
                .with_member_id(s("unknown")),
        )],
        ApiKey::LeaveGroup => vec![RequestKind::LeaveGroup(if version >= 3 {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s("static-5")))
                .with_members(vec![
                    leave_group_request::MemberIdentity::default()
                        .with_member_id(s("unknown"))
                        .with_group_instance_id(None),
                    leave_group_request::MemberIdentity::default()
                        .with_member_id(s(""))
                        .with_group_instance_id(Some(s("inst"))),
                ])
        } else {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s("g0")))
                .with_member_id(s("unknown"))
        })],
        ApiKey::OffsetCommit => vec![RequestKind::OffsetCommit(
            OffsetCommitRequest::default()
                .with_group_id(GroupId(s(&format!("simple-{version}"))))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![
                    offset_commit_request::OffsetCommitRequestTopic::default()
                        .with_name(t.clone())
                        .with_partitions(vec![
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(2)
                                .with_committed_leader_epoch(if version >= 6 { 0 } else { -1 })
                                .with_committed_metadata(Some(s("m"))),
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(9)
                                .with_committed_offset(2),
                        ]),
                ]),
        )],
        ApiKey::OffsetFetch => vec![RequestKind::OffsetFetch(if version >= 8 {
            OffsetFetchRequest::default().with_groups(vec![
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(s("simple-9")))
                    .with_topics(None),
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(s("nope")))
                    .with_topics(Some(vec![
                        offset_fetch_request::OffsetFetchRequestTopics::default()
                            .with_name(t.clone())
                            .with_partition_indexes(vec![0, 1]),
                    ])),
            ])
        } else {
            OffsetFetchRequest::default()
                .with_group_id(GroupId(s(&format!("simple-{}", version.max(2)))))
                .with_topics(if version >= 2 {
                    None
                } else {
                    Some(vec![
                        offset_fetch_request::OffsetFetchRequestTopic::default()
                            .with_name(t.clone())
                            .with_partition_indexes(vec![0, 1]),
                    ])
                })
        })],
        ApiKey::ListGroups => vec![RequestKind::ListGroups(
            ListGroupsRequest::default()
                .with_states_filter(if version >= 4 {
                    vec![s("empty")]
                } else {
                    vec![]
                })
                .with_types_filter(if version >= 5 {
                    vec![s("classic")]
                } else {
                    vec![]
                }),
        )],
        ApiKey::DescribeGroups => vec![RequestKind::DescribeGroups(
            DescribeGroupsRequest::default()
                .with_groups(vec![
                    GroupId(s("g9")),
                    GroupId(s("simple-2")),
                    GroupId(s("nope")),
                ])
                .with_include_authorized_operations(true),
        )],
        ApiKey::DeleteGroups => vec![RequestKind::DeleteGroups(
            DeleteGroupsRequest::default().with_groups_names(vec![
                GroupId(s(&format!("simple-{}", version + 2))),
                GroupId(s("g9")),
                GroupId(s("nope")),
            ]),
        )],
        ApiKey::ConsumerGroupHeartbeat => {
            let member = if version >= 1 { "m-cg" } else { "" };
            vec![
                RequestKind::ConsumerGroupHeartbeat(
                    ConsumerGroupHeartbeatRequest::default()
                        .with_group_id(GroupId(s(&format!("cg{version}"))))
                        .with_member_id(s(member))
                        .with_member_epoch(0)
                        .with_rebalance_timeout_ms(30_000)
                        .with_subscribed_topic_names(Some(vec![t.clone()]))
                        .with_topic_partitions(Some(vec![])),
                ),
                RequestKind::ConsumerGroupHeartbeat(
                    ConsumerGroupHeartbeatRequest::default()
                        .with_group_id(GroupId(s(&format!("cg{version}"))))
                        .with_member_id(s("unknown"))
                        .with_member_epoch(3),
                ),
            ]
        }
        // A share member joins, fetches (opening a session) with an acknowledgement of an
        // offset it does not hold, acknowledges, and the group's offsets are described,
        // altered and deleted (refused while the member is in it).
        ApiKey::ShareGroupHeartbeat => vec![RequestKind::ShareGroupHeartbeat(
            ShareGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("sg")))
                .with_member_id(s("m-share"))
                .with_member_epoch(0)
                .with_subscribed_topic_names(Some(vec![t.clone()])),
        )],
        ApiKey::ShareGroupDescribe => vec![RequestKind::ShareGroupDescribe(
            ShareGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(s("sg")), GroupId(s("nope"))])
                .with_include_authorized_operations(true),
        )],
        ApiKey::ShareFetch => {
            use share_fetch_request::*;
            vec![RequestKind::ShareFetch(
                ShareFetchRequest::default()
                    .with_group_id(Some(GroupId(s("sg"))))
                    .with_member_id(Some(s("m-share")))
                    .with_share_session_epoch(0)
                    .with_max_wait_ms(0)
                    .with_min_bytes(1)
                    .with_max_bytes(1 << 20)
                    .with_max_records(100)
                    .with_batch_size(100)
                    .with_topics(vec![FetchTopic::default()
                        .with_topic_id(topic_id)
                        .with_partitions(vec![
                            FetchPartition::default().with_partition_index(0)
                        ])]),
            )]
        }
        ApiKey::ShareAcknowledge => {
            use share_acknowledge_request::*;
            vec![RequestKind::ShareAcknowledge(
                ShareAcknowledgeRequest::default()
                    .with_group_id(Some(GroupId(s("sg"))))
                    .with_member_id(Some(s("m-share")))
                    .with_share_session_epoch(1)
                    .with_topics(vec![AcknowledgeTopic::default()
                        .with_topic_id(topic_id)
                        .with_partitions(vec![AcknowledgePartition::default()
                            .with_partition_index(0)
                            .with_acknowledgement_batches(vec![
                                AcknowledgementBatch::default()
                                    .with_first_offset(0)
                                    .with_last_offset(0)
                                    .with_acknowledge_types(vec![1]),
                            ])])]),
            )]
        }
        ApiKey::DescribeShareGroupOffsets => {
            use describe_share_group_offsets_request::*;
            vec![RequestKind::DescribeShareGroupOffsets(
                DescribeShareGroupOffsetsRequest::default().with_groups(vec![
                    DescribeShareGroupOffsetsRequestGroup::default()
                        .with_group_id(GroupId(s("sg")))
                        .with_topics(Some(vec![DescribeShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(t.clone())
                            .with_partitions(vec![0, 7])])),
                    DescribeShareGroupOffsetsRequestGroup::default()
                        .with_group_id(GroupId(s("sg")))
                        .with_topics(None),
                ]),
            )]
        }
        ApiKey::AlterShareGroupOffsets => {
            use alter_share_group_offsets_request::*;
            vec![RequestKind::AlterShareGroupOffsets(
                AlterShareGroupOffsetsRequest::default()
                    .with_group_id(GroupId(s("sg-empty")))
                    .with_topics(vec![AlterShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(t.clone())
                        .with_partitions(vec![
                            AlterShareGroupOffsetsRequestPartition::default()
                                .with_partition_index(0)
                                .with_start_offset(0),
                            AlterShareGroupOffsetsRequestPartition::default()
                                .with_partition_index(9)
                                .with_start_offset(0),
                        ])]),
            )]
        }
        ApiKey::DeleteShareGroupOffsets => {
            use delete_share_group_offsets_request::*;
            vec![RequestKind::DeleteShareGroupOffsets(
                DeleteShareGroupOffsetsRequest::default()
                    .with_group_id(GroupId(s("sg-empty")))
                    .with_topics(vec![
                        DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(t.clone()),
                        DeleteShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(TopicName(s("nope"))),
                    ]),
            )]
        }
        ApiKey::ConsumerGroupDescribe => vec![RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![
                    GroupId(s(&format!("cg{version}"))),
                    GroupId(s("g9")),
                    GroupId(s("nope")),
                ])
                .with_include_authorized_operations(true),
        )],
        ApiKey::OffsetDelete => vec![RequestKind::OffsetDelete(
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(s("simple-9")))
                .with_topics(vec![
                    offset_delete_request::OffsetDeleteRequestTopic::default()
                        .with_name(t.clone())
                        .with_partitions(vec![
                            offset_delete_request::OffsetDeleteRequestPartition::default()
                                .with_partition_index(0),
                        ]),
                ]),
        )],
        ApiKey::InitProducerId => {
            let mut v = vec![
                RequestKind::InitProducerId(
                    InitProducerIdRequest::default().with_transaction_timeout_ms(60_000),
                ),
                // Transactional: a new producer id, then epoch bumps.
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
        ApiKey::AddPartitionsToTxn => {
            let topics = vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(t.clone())
                    .with_partitions(vec![0]),
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(s("missing")))
                    .with_partitions(vec![0]),
            ];
            if version <= 3 {
                vec![RequestKind::AddPartitionsToTxn(
                    AddPartitionsToTxnRequest::default()
                        .with_v3_and_below_transactional_id(TransactionalId(s("tx")))
                        .with_v3_and_below_producer_id(ProducerId(0))
                        .with_v3_and_below_producer_epoch(0)
                        .with_v3_and_below_topics(topics),
                )]
            } else {
                let txn = |verify: bool| {
                    add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(s("tx")))
                        .with_producer_id(ProducerId(0))
                        .with_producer_epoch(0)
                        .with_verify_only(verify)
                        .with_topics(topics.clone())
                };
                vec![RequestKind::AddPartitionsToTxn(
                    AddPartitionsToTxnRequest::default()
                        .with_transactions(vec![txn(false), txn(true)]),
                )]
            }
        }
        ApiKey::AddOffsetsToTxn => vec![RequestKind::AddOffsetsToTxn(
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_producer_id(ProducerId(0))
                .with_group_id(GroupId(s("g-txn"))),
        )],
        ApiKey::EndTxn => vec![RequestKind::EndTxn(
            EndTxnRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_producer_id(ProducerId(0))
                .with_committed(true),
        )],
        ApiKey::TxnOffsetCommit => vec![RequestKind::TxnOffsetCommit(
            TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(s("tx")))
                .with_group_id(GroupId(s("g-txn")))
                .with_producer_id(ProducerId(0))
                .with_generation_id(if version >= 3 { -1 } else { 0 })
                .with_topics(vec![
                    txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                        .with_name(t.clone())
                        .with_partitions(vec![
                            txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(1),
                        ]),
                ]),
        )],
        ApiKey::ListTransactions => vec![
            RequestKind::ListTransactions(ListTransactionsRequest::default()),
            RequestKind::ListTransactions(
                ListTransactionsRequest::default()
                    .with_state_filters(vec![s("Ongoing"), s("Bogus")])
                    .with_producer_id_filters(vec![ProducerId(0)])
                    .with_duration_filter(if version >= 1 { 10 } else { -1 })
                    .with_transactional_id_pattern((version >= 2).then(|| s("t.*"))),
            ),
        ],
        ApiKey::DescribeTransactions => vec![RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default().with_transactional_ids(vec![
                TransactionalId(s("tx")),
                TransactionalId(s("unknown-txn")),
            ]),
        )],
        ApiKey::DescribeProducers => vec![RequestKind::DescribeProducers(
            DescribeProducersRequest::default().with_topics(vec![
                describe_producers_request::TopicRequest::default()
                    .with_name(t.clone())
                    .with_partition_indexes(vec![0, 7]),
            ]),
        )],
        // What kafka-configs sends: one upsertion (SCRAM-SHA-256), then a describe of all users.
        ApiKey::AlterUserScramCredentials => vec![RequestKind::AlterUserScramCredentials(
            AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
                    .with_name(s("alice"))
                    .with_mechanism(1)
                    .with_iterations(4096)
                    .with_salt(Bytes::from_static(b"salt"))
                    .with_salted_password(Bytes::from_static(&[7; 32])),
            ]),
        )],
        ApiKey::DescribeUserScramCredentials => vec![
            RequestKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsRequest::default(),
            ),
            RequestKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                    describe_user_scram_credentials_request::UserName::default()
                        .with_name(s("nobody")),
                ])),
            ),
        ],
        // What kafka-configs sends for quotas: an alteration, a describe of all users.
        ApiKey::AlterClientQuotas => vec![RequestKind::AlterClientQuotas(
            AlterClientQuotasRequest::default().with_entries(vec![
                alter_client_quotas_request::EntryData::default()
                    .with_entity(vec![alter_client_quotas_request::EntityData::default()
                        .with_entity_type(s("user"))
                        .with_entity_name(Some(s("alice")))])
                    .with_ops(vec![alter_client_quotas_request::OpData::default()
                        .with_key(s("producer_byte_rate"))
                        .with_value(1024.0)]),
            ]),
        )],
        ApiKey::DescribeClientQuotas => vec![RequestKind::DescribeClientQuotas(
            DescribeClientQuotasRequest::default().with_components(vec![
                describe_client_quotas_request::ComponentData::default()
                    .with_entity_type(s("user"))
                    .with_match_type(2)
                    .with_match(None),
            ]),
        )],
        // What MirrorMaker 2 and kafka-acls.sh send: TOPIC (2) / ANY (1) codes, one null string.
        ApiKey::DescribeAcls => vec![RequestKind::DescribeAcls(
            DescribeAclsRequest::default()
                .with_resource_type_filter(2)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1),
        )],
        ApiKey::CreateAcls => vec![RequestKind::CreateAcls(
            CreateAclsRequest::default().with_creations(vec![
                create_acls_request::AclCreation::default()
                    .with_resource_type(2)
                    .with_resource_name(s("t"))
                    .with_resource_pattern_type(3)
                    .with_principal(s("User:alice"))
                    .with_host(s("*"))
                    .with_operation(3)
                    .with_permission_type(3),
            ]),
        )],
        ApiKey::DeleteAcls => vec![RequestKind::DeleteAcls(
            DeleteAclsRequest::default().with_filters(vec![
                delete_acls_request::DeleteAclsFilter::default()
                    .with_resource_type_filter(2)
                    .with_resource_name_filter(Some(s("t")))
                    .with_pattern_type_filter(1)
                    .with_operation(1)
                    .with_permission_type(1),
            ]),
        )],
        // Through dispatch (a PLAINTEXT listener): ILLEGAL_SASL_STATE, as Kafka's KafkaApis.
        ApiKey::SaslHandshake => vec![RequestKind::SaslHandshake(
            SaslHandshakeRequest::default().with_mechanism(s("PLAIN")),
        )],
        ApiKey::SaslAuthenticate => vec![RequestKind::SaslAuthenticate(
            SaslAuthenticateRequest::default()
                .with_auth_bytes(bytes::Bytes::from_static(b"\0a\0b")),
        )],
        other => panic!("no representative request for advertised API {other:?}: add one"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_version_answers_and_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let broker: Arc<Broker> = common::broker(dir.path())
        .sets(&[
            // Group joins complete at once instead of waiting for more members.
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=3",
        ])
        .start()
        .await;
    let b = broker.clone();
    let topic =
        tokio::task::spawn_blocking(move || b.topics.create("t", 1, Default::default(), false))
            .await
            .unwrap()
            .unwrap();
    common::wait_until("the coordinators to load", || {
        broker.coordinator.is_loaded() && broker.txn.is_loaded()
    })
    .await;
    for &(key, min, max) in skiff_protocol::SUPPORTED {
        for version in min..=max {
            for body in requests(version, key, topic.id) {
                let response = common::call(&broker, key, version, body).await;
                skiff_protocol::encode_response(1, key, version, &response)
                    .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
            }
        }
    }
}
