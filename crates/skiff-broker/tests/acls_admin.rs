//! The ACL authorizer on the group, transaction and admin APIs, and the start-up checks of
//! the authorizer config (set-up shared with `acls.rs` in `acl_support/`).
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use acl_support::*;
use kafka_protocol::messages::*;
use skiff_broker::Broker;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_apis_need_group_acls() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "t", 1).await;
    let find = |who: &'static str| {
        let broker = broker.clone();
        async move {
            let body = FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![s("g")]);
            match send_as(
                &broker,
                who,
                ApiKey::FindCoordinator,
                4,
                RequestKind::FindCoordinator(body),
            )
            .await
            {
                ResponseKind::FindCoordinator(r) => r.coordinators[0].error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    let join = |who: &'static str| {
        let broker = broker.clone();
        async move {
            let body = JoinGroupRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
                )
                .with_name(s("range"))]);
            match send_as(
                &broker,
                who,
                ApiKey::JoinGroup,
                9,
                RequestKind::JoinGroup(body),
            )
            .await
            {
                ResponseKind::JoinGroup(r) => r.error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    let commit = |who: &'static str| {
        let broker = broker.clone();
        async move {
            let body = OffsetCommitRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![
                    offset_commit_request::OffsetCommitRequestTopic::default()
                        .with_name(TopicName(s("t")))
                        .with_partitions(vec![
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(0),
                        ]),
                ]);
            match send_as(
                &broker,
                who,
                ApiKey::OffsetCommit,
                8,
                RequestKind::OffsetCommit(body),
            )
            .await
            {
                ResponseKind::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(find("alice").await, GROUP_DENIED);
    assert_eq!(join("alice").await, GROUP_DENIED);
    assert_eq!(commit("alice").await, GROUP_DENIED);
    // READ on the group implies DESCRIBE (FindCoordinator); the commit still needs TOPIC READ.
    create_acls(
        &broker,
        "admin",
        vec![creation(GROUP, "g", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    assert_eq!(find("alice").await, 0);
    assert_eq!(
        join("alice").await,
        79,
        "MEMBER_ID_REQUIRED: the join went through"
    );
    assert_eq!(commit("alice").await, TOPIC_DENIED);
    create_acls(
        &broker,
        "admin",
        vec![creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    assert_eq!(commit("alice").await, 0);
    // ListGroups shows only what may be described.
    let listed = |who: &'static str| {
        let broker = broker.clone();
        async move {
            match send_as(
                &broker,
                who,
                ApiKey::ListGroups,
                4,
                RequestKind::ListGroups(Default::default()),
            )
            .await
            {
                ResponseKind::ListGroups(r) => r.groups.len(),
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(listed("alice").await, 1);
    assert_eq!(listed("bob").await, 0);
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_ids_need_transactional_or_idempotent_write() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let init = |who: &'static str, txn: Option<&'static str>| {
        let broker = broker.clone();
        async move {
            let body = InitProducerIdRequest::default()
                .with_transactional_id(txn.map(|t| TransactionalId(s(t))))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            match send_as(
                &broker,
                who,
                ApiKey::InitProducerId,
                4,
                RequestKind::InitProducerId(body),
            )
            .await
            {
                ResponseKind::InitProducerId(r) => r.error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(init("alice", None).await, CLUSTER_DENIED);
    assert_eq!(init("alice", Some("tx")).await, TXN_DENIED);
    // WRITE on some topic (here a prefix) is enough for an idempotent producer (Kafka 4).
    create_acls(
        &broker,
        "admin",
        vec![
            creation(TOPIC, "orders-", PREFIXED, "User:alice", WRITE, ALLOW),
            creation(TRANSACTIONAL_ID, "tx", LITERAL, "User:alice", WRITE, ALLOW),
        ],
    )
    .await;
    assert_eq!(init("alice", None).await, 0);
    assert_eq!(init("alice", Some("tx")).await, 0);
    assert_eq!(init("bob", None).await, CLUSTER_DENIED);
    // EndTxn for a transactional id without WRITE.
    let body = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s("other")))
        .with_producer_id(ProducerId(1))
        .with_producer_epoch(0)
        .with_committed(true);
    match send_as(
        &broker,
        "alice",
        ApiKey::EndTxn,
        3,
        RequestKind::EndTxn(body),
    )
    .await
    {
        ResponseKind::EndTxn(r) => assert_eq!(r.error_code, TXN_DENIED),
        other => panic!("{other:?}"),
    }
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_authorizer_and_unreadable_acl_file_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = skiff_config::load(
        None,
        &[
            format!("log.dirs={}", dir.path().display()),
            "authorizer.class.name=com.example.MyAuthorizer".to_string(),
        ],
        Vec::<(String, String)>::new(),
    )
    .unwrap();
    let err = tokio::task::spawn_blocking(move || Broker::start(config).err().unwrap())
        .await
        .unwrap();
    assert!(
        err.to_string().contains("com.example.MyAuthorizer"),
        "{err}"
    );

    std::fs::write(dir.path().join("acls.json"), "{ not json").unwrap();
    let (config, _) = skiff_config::load(
        None,
        &[
            format!("log.dirs={}", dir.path().display()),
            STANDARD.to_string(),
        ],
        Vec::<(String, String)>::new(),
    )
    .unwrap();
    let err = tokio::task::spawn_blocking(move || Broker::start(config).err().unwrap())
        .await
        .unwrap();
    assert!(err.to_string().contains("acls.json"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_apis_need_their_acls() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "t", 1).await;
    let create = |who: &'static str| {
        let broker = broker.clone();
        async move {
            let body = CreateTopicsRequest::default().with_topics(vec![
                create_topics_request::CreatableTopic::default()
                    .with_name(TopicName(s("new")))
                    .with_num_partitions(1)
                    .with_replication_factor(1),
            ]);
            match send_as(
                &broker,
                who,
                ApiKey::CreateTopics,
                5,
                RequestKind::CreateTopics(body),
            )
            .await
            {
                ResponseKind::CreateTopics(r) => r.topics[0].clone(),
                other => panic!("{other:?}"),
            }
        }
    };
    let refused = create("alice").await;
    assert_eq!(refused.error_code, TOPIC_DENIED);
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Authorization failed.")
    );
    // CREATE without DESCRIBE_CONFIGS: created, configs withheld.
    create_acls(
        &broker,
        "admin",
        vec![creation(
            CLUSTER,
            "kafka-cluster",
            LITERAL,
            "User:alice",
            CREATE,
            ALLOW,
        )],
    )
    .await;
    let created = create("alice").await;
    assert_eq!(created.error_code, 0);
    assert_eq!(created.topic_config_error_code, TOPIC_DENIED);
    assert!(created.configs.is_none());

    let body = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("t")),
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("1")),
    ]);
    match send_as(
        &broker,
        "alice",
        ApiKey::DescribeConfigs,
        4,
        RequestKind::DescribeConfigs(body),
    )
    .await
    {
        ResponseKind::DescribeConfigs(r) => {
            assert_eq!(r.results[0].error_code, TOPIC_DENIED);
            assert_eq!(r.results[1].error_code, CLUSTER_DENIED);
        }
        other => panic!("{other:?}"),
    }
    let body = DescribeLogDirsRequest::default().with_topics(None);
    match send_as(
        &broker,
        "alice",
        ApiKey::DescribeLogDirs,
        4,
        RequestKind::DescribeLogDirs(body),
    )
    .await
    {
        ResponseKind::DescribeLogDirs(r) => {
            assert_eq!(r.error_code, CLUSTER_DENIED);
            assert!(r.results.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // SCRAM credentials: CLUSTER DESCRIBE / CLUSTER ALTER.
    let body = DescribeUserScramCredentialsRequest::default().with_users(None);
    match send_as(
        &broker,
        "alice",
        ApiKey::DescribeUserScramCredentials,
        0,
        RequestKind::DescribeUserScramCredentials(body),
    )
    .await
    {
        ResponseKind::DescribeUserScramCredentials(r) => {
            assert_eq!(r.error_code, CLUSTER_DENIED);
            assert!(r.results.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let body = AlterUserScramCredentialsRequest::default().with_deletions(vec![
        alter_user_scram_credentials_request::ScramCredentialDeletion::default()
            .with_name(s("bob"))
            .with_mechanism(1),
    ]);
    match send_as(
        &broker,
        "alice",
        ApiKey::AlterUserScramCredentials,
        0,
        RequestKind::AlterUserScramCredentials(body),
    )
    .await
    {
        ResponseKind::AlterUserScramCredentials(r) => {
            assert_eq!(r.results[0].error_code, CLUSTER_DENIED)
        }
        other => panic!("{other:?}"),
    }
    // Client quotas: CLUSTER DESCRIBE_CONFIGS / CLUSTER ALTER_CONFIGS.
    match send_as(
        &broker,
        "alice",
        ApiKey::DescribeClientQuotas,
        1,
        RequestKind::DescribeClientQuotas(DescribeClientQuotasRequest::default()),
    )
    .await
    {
        ResponseKind::DescribeClientQuotas(r) => {
            assert_eq!(r.error_code, CLUSTER_DENIED);
            assert!(r.entries.is_none());
        }
        other => panic!("{other:?}"),
    }
    let body = AlterClientQuotasRequest::default().with_entries(vec![
        alter_client_quotas_request::EntryData::default()
            .with_entity(vec![alter_client_quotas_request::EntityData::default()
                .with_entity_type(s("user"))
                .with_entity_name(Some(s("alice")))])
            .with_ops(vec![alter_client_quotas_request::OpData::default()
                .with_key(s("producer_byte_rate"))
                .with_value(1.0)]),
    ]);
    match send_as(
        &broker,
        "alice",
        ApiKey::AlterClientQuotas,
        1,
        RequestKind::AlterClientQuotas(body),
    )
    .await
    {
        ResponseKind::AlterClientQuotas(r) => {
            assert_eq!(r.entries[0].error_code, CLUSTER_DENIED);
            assert!(broker.quota_store.snapshot().is_empty());
        }
        other => panic!("{other:?}"),
    }
    let body = DeleteTopicsRequest::default().with_topic_names(vec![TopicName(s("t"))]);
    match send_as(
        &broker,
        "alice",
        ApiKey::DeleteTopics,
        5,
        RequestKind::DeleteTopics(body),
    )
    .await
    {
        ResponseKind::DeleteTopics(r) => assert_eq!(r.responses[0].error_code, TOPIC_DENIED),
        other => panic!("{other:?}"),
    }
    assert!(broker.topics.get("t").is_some());
    // A transactional produce without TRANSACTIONAL_ID WRITE fails every partition.
    create_acls(
        &broker,
        "admin",
        vec![creation(TOPIC, "t", LITERAL, "User:alice", WRITE, ALLOW)],
    )
    .await;
    let body = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(s("tx"))))
        .with_acks(1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(s("t")))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch())),
            ])]);
    match send_as(
        &broker,
        "alice",
        ApiKey::Produce,
        9,
        RequestKind::Produce(body),
    )
    .await
    {
        ResponseKind::Produce(r) => {
            assert_eq!(r.responses[0].partition_responses[0].error_code, TXN_DENIED)
        }
        other => panic!("{other:?}"),
    }
    common::stop(broker).await;
}

/// `skiff.compaction.archive.topic` makes the broker write to the named topic, so naming it
/// (IncrementalAlterConfigs, CreateTopics) needs WRITE on it besides the usual ACLs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naming_an_archive_topic_needs_write_on_it() {
    const ALTER_CONFIGS: i8 = 11;
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "t", 1).await;
    common::create_topic(&broker, "hist", 1).await;
    let acls = vec![creation(
        TOPIC,
        "t",
        LITERAL,
        "User:alice",
        ALTER_CONFIGS,
        ALLOW,
    )];
    create_acls(&broker, "admin", acls).await;
    let set = |key: &'static str, value: &'static str| {
        let broker = broker.clone();
        async move {
            use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
            let body = IncrementalAlterConfigsRequest::default().with_resources(vec![
                AlterConfigsResource::default()
                    .with_resource_type(TOPIC)
                    .with_resource_name(s("t"))
                    .with_configs(vec![AlterableConfig::default()
                        .with_name(s(key))
                        .with_config_operation(0)
                        .with_value(Some(s(value)))]),
            ]);
            match send_as(
                &broker,
                "alice",
                ApiKey::IncrementalAlterConfigs,
                1,
                RequestKind::IncrementalAlterConfigs(body),
            )
            .await
            {
                ResponseKind::IncrementalAlterConfigs(r) => r.responses[0].error_code,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(
        set("skiff.compaction.archive.topic", "hist").await,
        TOPIC_DENIED
    );
    assert_eq!(
        set("retention.ms", "1000").await,
        0,
        "other configs as before"
    );
    assert_eq!(
        set("skiff.compaction.archive.topic", "").await,
        0,
        "turning it off"
    );
    let acls = vec![creation(TOPIC, "hist", LITERAL, "User:alice", WRITE, ALLOW)];
    create_acls(&broker, "admin", acls).await;
    assert_eq!(set("skiff.compaction.archive.topic", "hist").await, 0);

    // CreateTopics: CREATE on the cluster is not enough to name someone else's topic.
    let acls = vec![creation(
        CLUSTER,
        "kafka-cluster",
        LITERAL,
        "User:bob",
        CREATE,
        ALLOW,
    )];
    create_acls(&broker, "admin", acls).await;
    let body = CreateTopicsRequest::default().with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(TopicName(s("u")))
            .with_num_partitions(1)
            .with_replication_factor(1)
            .with_configs(vec![create_topics_request::CreatableTopicConfig::default()
                .with_name(s("skiff.compaction.archive.topic"))
                .with_value(Some(s("hist")))]),
    ]);
    let r = match send_as(
        &broker,
        "bob",
        ApiKey::CreateTopics,
        5,
        RequestKind::CreateTopics(body),
    )
    .await
    {
        ResponseKind::CreateTopics(r) => r.topics[0].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, TOPIC_DENIED);
    assert!(broker.topics.get("u").is_none());
}
