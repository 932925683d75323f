//! Shared set-up of the ACL authorizer tests (`acls.rs`, `acls_admin.rs`): a broker with
//! Kafka's StandardAuthorizer and `User:admin` as super user, requests sent as a chosen
//! principal through `dispatch_request`, and the wire codes the assertions use.
#![allow(dead_code)]

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::acl_operations::Principal;
use skiff_broker::context::RequestContext;
use skiff_broker::dispatch::{dispatch_request, Reply};
use skiff_broker::Broker;

use crate::common;

pub const STANDARD: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";

// Kafka's codes.
pub const TOPIC_DENIED: i16 = 29;
pub const GROUP_DENIED: i16 = 30;
pub const CLUSTER_DENIED: i16 = 31;
pub const TXN_DENIED: i16 = 53;
pub const SECURITY_DISABLED: i16 = 54;
// ResourceType, PatternType, AclOperation, PermissionType codes.
pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
pub const TRANSACTIONAL_ID: i8 = 5;
pub const LITERAL: i8 = 3;
pub const PREFIXED: i8 = 4;
pub const ANY: i8 = 1;
pub const ALL: i8 = 2;
pub const READ: i8 = 3;
pub const WRITE: i8 = 4;
pub const CREATE: i8 = 5;
pub const DESCRIBE: i8 = 8;
pub const DENY: i8 = 2;
pub const ALLOW: i8 = 3;

pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The principal a request is sent as (`User:<name>`).
pub fn user(name: &'static str) -> Principal<'static> {
    Principal {
        kind: "User",
        name: name.into(),
    }
}

pub async fn start(dir: &std::path::Path, extra: &[&str]) -> Arc<Broker> {
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

pub async fn send_as(
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
        Reply::LaterInFiles(f) => f.await.into_response().unwrap(),
        Reply::NoResponse => panic!("{key:?}: no response"),
        Reply::Close(why) => panic!("{key:?}: closed: {why}"),
        Reply::Own(_) => panic!("{key:?}: an own-API answer"),
    };
    skiff_protocol::encode_response(1, key, version, &response)
        .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
    response
}

pub fn creation(
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

pub async fn create_acls(
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
pub async fn describe_all(broker: &Arc<Broker>) -> Vec<(i8, String, i8, String, i8, i8)> {
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

pub async fn metadata(
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

pub fn batch() -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
    b.push(1_700_000_000_000, Some(b"k"), Some(b"v"), &[]);
    Bytes::from(b.build().unwrap())
}

/// Produce one batch to `topic`-0 (acks=1); the partition's error code.
pub async fn produce(broker: &Arc<Broker>, who: &'static str, topic: &str) -> i16 {
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
pub async fn fetch(broker: &Arc<Broker>, who: &'static str, topic: &str) -> i16 {
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
