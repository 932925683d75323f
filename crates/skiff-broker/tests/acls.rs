//! The ACL authorizer wired into the broker (issue 14, "Authorization"): with
//! `authorizer.class.name` set to Kafka's StandardAuthorizer, the ACL APIs are served and
//! persisted in `acls.json`, and the data, group and transaction APIs check the requester's
//! ACLs with Kafka's error codes. Requests go through `dispatch_request` with a chosen
//! principal. (Without an authorizer every other test file covers the unchanged answers.)
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::acl_operations::Principal;
use skiff_broker::context::RequestContext;
use skiff_broker::dispatch::{dispatch_request, Reply};
use skiff_broker::Broker;

const STANDARD: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";

// Kafka's codes.
const TOPIC_DENIED: i16 = 29;
const GROUP_DENIED: i16 = 30;
const CLUSTER_DENIED: i16 = 31;
const TXN_DENIED: i16 = 53;
const SECURITY_DISABLED: i16 = 54;
// ResourceType, PatternType, AclOperation, PermissionType codes.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TRANSACTIONAL_ID: i8 = 5;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ANY: i8 = 1;
const ALL: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DESCRIBE: i8 = 8;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The principal a request is sent as (`User:<name>`).
fn user(name: &'static str) -> Principal<'static> {
    Principal {
        kind: "User",
        name: name.into(),
    }
}

async fn start(dir: &std::path::Path, extra: &[&str]) -> Arc<Broker> {
    let mut sets = vec![
        STANDARD,
        "super.users=User:admin",
        "offsets.topic.num.partitions=1",
        "transaction.state.log.num.partitions=1",
    ];
    sets.extend_from_slice(extra);
    common::broker(dir)
        .sets(&sets)
        .wait_coordinators()
        .start()
        .await
}

async fn send_as(
    broker: &Arc<Broker>,
    who: &'static str,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> ResponseKind {
    let mut ctx = RequestContext::new(broker.clone(), key, version);
    ctx.client_host = "/127.0.0.1".to_string();
    ctx.principal = user(who);
    let response = match dispatch_request(ctx, body).await {
        Reply::Respond(r) => r,
        Reply::Later(f) => f.await,
        Reply::NoResponse => panic!("{key:?}: no response"),
        Reply::Close(why) => panic!("{key:?}: closed: {why}"),
    };
    skiff_protocol::encode_response(1, key, version, &response)
        .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
    response
}

fn creation(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    operation: i8,
    permission: i8,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(s(name))
        .with_resource_pattern_type(pattern)
        .with_principal(s(principal))
        .with_host(s("*"))
        .with_operation(operation)
        .with_permission_type(permission)
}

async fn create_acls(
    broker: &Arc<Broker>,
    who: &'static str,
    creations: Vec<create_acls_request::AclCreation>,
) -> Vec<i16> {
    let body = CreateAclsRequest::default().with_creations(creations);
    match send_as(
        broker,
        who,
        ApiKey::CreateAcls,
        3,
        RequestKind::CreateAcls(body),
    )
    .await
    {
        ResponseKind::CreateAcls(r) => r.results.iter().map(|r| r.error_code).collect(),
        other => panic!("{other:?}"),
    }
}

/// As admin (a super user): every ACL, as (type, name, pattern, principal, op, permission).
async fn describe_all(broker: &Arc<Broker>) -> Vec<(i8, String, i8, String, i8, i8)> {
    let body = DescribeAclsRequest::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(ANY)
        .with_pattern_type_filter(ANY)
        .with_operation(ANY)
        .with_permission_type(ANY);
    let r = match send_as(
        broker,
        "admin",
        ApiKey::DescribeAcls,
        3,
        RequestKind::DescribeAcls(body),
    )
    .await
    {
        ResponseKind::DescribeAcls(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, 0);
    let mut out = Vec::new();
    for res in r.resources {
        for a in res.acls {
            out.push((
                res.resource_type,
                res.resource_name.to_string(),
                res.pattern_type,
                a.principal.to_string(),
                a.operation,
                a.permission_type,
            ));
        }
    }
    out
}

async fn metadata(
    broker: &Arc<Broker>,
    who: &'static str,
    topics: Option<&[&str]>,
) -> MetadataResponse {
    let body = MetadataRequest::default()
        .with_topics(topics.map(|ts| {
            ts.iter()
                .map(|t| {
                    metadata_request::MetadataRequestTopic::default()
                        .with_name(Some(TopicName(s(t))))
                })
                .collect()
        }))
        .with_allow_auto_topic_creation(true)
        .with_include_topic_authorized_operations(true);
    match send_as(
        broker,
        who,
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(body),
    )
    .await
    {
        ResponseKind::Metadata(r) => r,
        other => panic!("{other:?}"),
    }
}

fn batch() -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
    b.push(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
    Bytes::from(b.build().unwrap())
}

/// Produce one batch to `topic`-0 (acks=1); the partition's error code.
async fn produce(broker: &Arc<Broker>, who: &'static str, topic: &str) -> i16 {
    let body = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch())),
            ])]);
    match send_as(broker, who, ApiKey::Produce, 9, RequestKind::Produce(body)).await {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// Fetch `topic`-0 from offset 0 without waiting; the partition's error code.
async fn fetch(broker: &Arc<Broker>, who: &'static str, topic: &str) -> i16 {
    let body = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default()
            .with_topic(TopicName(s(topic)))
            .with_partitions(vec![fetch_request::FetchPartition::default()
                .with_partition(0)
                .with_partition_max_bytes(1 << 20)])]);
    match send_as(broker, who, ApiKey::Fetch, 12, RequestKind::Fetch(body)).await {
        ResponseKind::Fetch(r) => r.responses[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_are_created_described_deleted_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    // Only CLUSTER ALTER (here: a super user) may create.
    let refused = create_acls(
        &broker,
        "alice",
        vec![creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    assert_eq!(refused, vec![CLUSTER_DENIED]);
    let created = create_acls(
        &broker,
        "admin",
        vec![
            creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW),
            creation(GROUP, "g-", PREFIXED, "User:bob", ALL, DENY),
            // Kafka's validation: a CLUSTER resource must be named kafka-cluster.
            creation(CLUSTER, "other", LITERAL, "User:bob", ALL, ALLOW),
        ],
    )
    .await;
    assert_eq!(created[..2], [0, 0]);
    assert_eq!(created[2], 42, "INVALID_REQUEST");
    let expected = vec![
        (
            TOPIC,
            "t".to_string(),
            LITERAL,
            "User:alice".to_string(),
            READ,
            ALLOW,
        ),
        (
            GROUP,
            "g-".to_string(),
            PREFIXED,
            "User:bob".to_string(),
            ALL,
            DENY,
        ),
    ];
    let mut got = describe_all(&broker).await;
    got.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(got, want);
    // A non-super user without CLUSTER DESCRIBE may not list them.
    let body = DescribeAclsRequest::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(ANY)
        .with_pattern_type_filter(ANY)
        .with_operation(ANY)
        .with_permission_type(ANY);
    match send_as(
        &broker,
        "bob",
        ApiKey::DescribeAcls,
        3,
        RequestKind::DescribeAcls(body),
    )
    .await
    {
        ResponseKind::DescribeAcls(r) => {
            assert_eq!(r.error_code, CLUSTER_DENIED);
            assert!(r.resources.is_empty());
        }
        other => panic!("{other:?}"),
    }

    common::stop(broker).await;
    let broker = start(dir.path(), &[]).await;
    let mut again = describe_all(&broker).await;
    again.sort();
    assert_eq!(again, want, "ACLs persisted in acls.json");

    // Delete the group ACL by a filter.
    let filter = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(GROUP)
        .with_pattern_type_filter(ANY)
        .with_operation(ANY)
        .with_permission_type(ANY);
    let body = DeleteAclsRequest::default().with_filters(vec![filter]);
    match send_as(
        &broker,
        "admin",
        ApiKey::DeleteAcls,
        3,
        RequestKind::DeleteAcls(body),
    )
    .await
    {
        ResponseKind::DeleteAcls(r) => {
            assert_eq!(r.filter_results[0].error_code, 0);
            assert_eq!(r.filter_results[0].matching_acls.len(), 1);
            assert_eq!(
                r.filter_results[0].matching_acls[0].resource_name.as_str(),
                "g-"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(describe_all(&broker).await, vec![expected[0].clone()]);
    common::stop(broker).await;
    let broker = start(dir.path(), &[]).await;
    assert_eq!(describe_all(&broker).await, vec![expected[0].clone()]);
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorizer_the_acl_apis_stay_security_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    assert!(broker.acls.is_none());
    let codes = create_acls(
        &broker,
        "alice",
        vec![creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW)],
    )
    .await;
    assert_eq!(codes, vec![SECURITY_DISABLED]);
    // And every data API answers for anyone.
    common::create_topic(&broker, "t", 1).await;
    assert_eq!(produce(&broker, "alice", "t").await, 0);
    assert_eq!(fetch(&broker, "alice", "t").await, 0);
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_hides_and_refuses_topics_not_described() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &["auto.create.topics.enable=true"]).await;
    common::create_topic(&broker, "a", 1).await;
    common::create_topic(&broker, "b", 1).await;
    let codes = create_acls(
        &broker,
        "admin",
        vec![creation(TOPIC, "a", LITERAL, "User:alice", DESCRIBE, ALLOW)],
    )
    .await;
    assert_eq!(codes, vec![0]);
    // All topics: only "a".
    let all = metadata(&broker, "alice", None).await;
    let names: Vec<_> = all
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["a"]);
    // DESCRIBE(8) only on "a"; the bits come from the authorizer.
    assert_eq!(all.topics[0].topic_authorized_operations, 1 << 8);
    // Named: "b" is refused; an unknown name without CREATE is refused, not created.
    let named = metadata(&broker, "alice", Some(&["a", "b", "c"])).await;
    let codes: Vec<_> = named.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, vec![0, TOPIC_DENIED, TOPIC_DENIED]);
    assert_eq!(named.topics[1].topic_authorized_operations, i32::MIN);
    assert!(broker.topics.get("c").is_none());
    // With DESCRIBE and CREATE on "c" it is auto-created.
    create_acls(
        &broker,
        "admin",
        vec![
            creation(TOPIC, "c", LITERAL, "User:alice", DESCRIBE, ALLOW),
            creation(TOPIC, "c", LITERAL, "User:alice", CREATE, ALLOW),
        ],
    )
    .await;
    let created = metadata(&broker, "alice", Some(&["c"])).await;
    assert_eq!(created.topics[0].error_code, 0);
    assert!(broker.topics.get("c").is_some());
    // A super user sees everything (the internal topics too).
    let admin = metadata(&broker, "admin", None).await;
    for name in ["a", "b", "c"] {
        assert!(admin
            .topics
            .iter()
            .any(|t| t.name.as_ref().is_some_and(|n| n.as_str() == name)));
    }
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_and_fetch_follow_the_acls_and_deny_wins() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "t", 1).await;
    // No ACL at all and allow.everyone.if.no.acl.found=false: refused.
    assert_eq!(produce(&broker, "alice", "t").await, TOPIC_DENIED);
    assert_eq!(fetch(&broker, "alice", "t").await, TOPIC_DENIED);
    // A super user needs no ACL.
    assert_eq!(produce(&broker, "admin", "t").await, 0);
    create_acls(
        &broker,
        "admin",
        vec![
            creation(TOPIC, "t", LITERAL, "User:alice", WRITE, ALLOW),
            creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, "*", LITERAL, "User:*", READ, DENY),
        ],
    )
    .await;
    assert_eq!(produce(&broker, "alice", "t").await, 0);
    assert_eq!(produce(&broker, "bob", "t").await, TOPIC_DENIED);
    // DENY READ for everyone on every topic wins over alice's ALLOW READ.
    assert_eq!(fetch(&broker, "alice", "t").await, TOPIC_DENIED);
    // An unknown topic name is refused before it is looked up.
    assert_eq!(produce(&broker, "alice", "nope").await, TOPIC_DENIED);
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &["allow.everyone.if.no.acl.found=true"]).await;
    common::create_topic(&broker, "open", 1).await;
    common::create_topic(&broker, "closed", 1).await;
    create_acls(
        &broker,
        "admin",
        vec![creation(
            TOPIC,
            "closed",
            LITERAL,
            "User:alice",
            WRITE,
            ALLOW,
        )],
    )
    .await;
    assert_eq!(produce(&broker, "bob", "open").await, 0);
    assert_eq!(fetch(&broker, "bob", "open").await, 0);
    assert_eq!(produce(&broker, "bob", "closed").await, TOPIC_DENIED);
    assert_eq!(produce(&broker, "alice", "closed").await, 0);
    common::stop(broker).await;
}

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
