//! `include_*_authorized_operations` in Metadata, DescribeCluster, DescribeGroups and
//! ConsumerGroupDescribe (issue 12, item 5): without an authorizer Kafka answers with every
//! operation the resource type supports; not asked (or a version without the field): the
//! schema default i32::MIN. Every answer must also encode at its version.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;

const NOT_REQUESTED: i32 = i32::MIN;
/// READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS.
const TOPIC: i32 = 3576;
/// READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS.
const GROUP: i32 = 3400;
/// CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE.
const CLUSTER: i32 = 8096;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

async fn start() -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&[
            "auto.create.topics.enable=false",
            "offsets.topic.num.partitions=1",
        ])
        .wait_groups()
        .start()
        .await;
    common::create_topic(&broker, "t", 1).await;
    (dir, broker)
}

async fn send(broker: &Arc<Broker>, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
    let response = common::call(broker, key, version, body).await;
    skiff_protocol::encode_response(1, key, version, &response)
        .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
    response
}

async fn metadata(
    broker: &Arc<Broker>,
    version: i16,
    topic: bool,
    cluster: bool,
) -> MetadataResponse {
    let topics = vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(s("t")))),
        metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(s("nope")))),
    ];
    let r = MetadataRequest::default()
        .with_topics(Some(topics))
        .with_include_topic_authorized_operations(topic)
        .with_include_cluster_authorized_operations(cluster);
    match send(broker, ApiKey::Metadata, version, RequestKind::Metadata(r)).await {
        ResponseKind::Metadata(m) => m,
        other => panic!("{other:?}"),
    }
}

fn topic_ops(m: &MetadataResponse) -> Vec<i32> {
    m.topics
        .iter()
        .map(|t| t.topic_authorized_operations)
        .collect()
}

#[tokio::test]
async fn metadata_answers_topic_and_cluster_operations_when_asked() {
    let (_dir, b) = start().await;
    let m = metadata(&b, 8, true, true).await;
    // The unknown topic is named in the answer, so it gets its operations too (as Kafka).
    assert_eq!(m.topics[1].error_code, 3);
    assert_eq!(topic_ops(&m), vec![TOPIC, TOPIC]);
    assert_eq!(m.cluster_authorized_operations, CLUSTER);

    let m = metadata(&b, 8, false, false).await;
    assert_eq!(topic_ops(&m), vec![NOT_REQUESTED, NOT_REQUESTED]);
    assert_eq!(m.cluster_authorized_operations, NOT_REQUESTED);

    // v11+ has no cluster operations (DescribeCluster answers them).
    let m = metadata(&b, 12, true, true).await;
    assert_eq!(topic_ops(&m), vec![TOPIC, TOPIC]);
    assert_eq!(m.cluster_authorized_operations, NOT_REQUESTED);

    // Before v8 there are no such fields at all.
    let m = metadata(&b, 7, true, true).await;
    assert_eq!(topic_ops(&m), vec![NOT_REQUESTED, NOT_REQUESTED]);
    assert_eq!(m.cluster_authorized_operations, NOT_REQUESTED);
}

#[tokio::test]
async fn describe_cluster_answers_cluster_operations_when_asked() {
    let (_dir, b) = start().await;
    for (include, expected) in [(true, CLUSTER), (false, NOT_REQUESTED)] {
        let r =
            DescribeClusterRequest::default().with_include_cluster_authorized_operations(include);
        let ResponseKind::DescribeCluster(d) = send(
            &b,
            ApiKey::DescribeCluster,
            1,
            RequestKind::DescribeCluster(r),
        )
        .await
        else {
            panic!("not a DescribeCluster answer")
        };
        assert_eq!(d.error_code, 0);
        assert_eq!(
            d.cluster_authorized_operations, expected,
            "include={include}"
        );
    }
}

async fn describe_groups(b: &Arc<Broker>, version: i16, include: bool) -> Vec<(i16, i32)> {
    let r = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(s("cg")), GroupId(s("nope"))])
        .with_include_authorized_operations(include);
    let ResponseKind::DescribeGroups(d) = send(
        b,
        ApiKey::DescribeGroups,
        version,
        RequestKind::DescribeGroups(r),
    )
    .await
    else {
        panic!("not a DescribeGroups answer")
    };
    d.groups
        .iter()
        .map(|g| (g.error_code, g.authorized_operations))
        .collect()
}

async fn consumer_group_describe(b: &Arc<Broker>, include: bool) -> Vec<(i16, i32)> {
    let r = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(s("cg")), GroupId(s("nope"))])
        .with_include_authorized_operations(include);
    let ResponseKind::ConsumerGroupDescribe(d) = send(
        b,
        ApiKey::ConsumerGroupDescribe,
        1,
        RequestKind::ConsumerGroupDescribe(r),
    )
    .await
    else {
        panic!("not a ConsumerGroupDescribe answer")
    };
    d.groups
        .iter()
        .map(|g| (g.error_code, g.authorized_operations))
        .collect()
}

#[tokio::test]
async fn group_describes_answer_group_operations_for_groups_without_errors() {
    let (_dir, b) = start().await;
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("cg")))
        .with_member_id(s("m1"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
        .with_topic_partitions(Some(vec![]));
    let ResponseKind::ConsumerGroupHeartbeat(h) = send(
        &b,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(join),
    )
    .await
    else {
        panic!("not a ConsumerGroupHeartbeat answer")
    };
    assert_eq!(h.error_code, 0, "{:?}", h.error_message);

    // v3-5: an unknown group is "Dead" without an error, so it gets operations too.
    assert_eq!(
        describe_groups(&b, 5, true).await,
        vec![(0, GROUP), (0, GROUP)]
    );
    assert_eq!(
        describe_groups(&b, 5, false).await,
        vec![(0, NOT_REQUESTED), (0, NOT_REQUESTED)]
    );
    // v6: GROUP_ID_NOT_FOUND (69) for the unknown group, which gets none.
    assert_eq!(
        describe_groups(&b, 6, true).await,
        vec![(0, GROUP), (69, NOT_REQUESTED)]
    );
    // Before v3 the field does not exist.
    assert_eq!(
        describe_groups(&b, 2, true).await,
        vec![(0, NOT_REQUESTED), (0, NOT_REQUESTED)]
    );

    assert_eq!(
        consumer_group_describe(&b, true).await,
        vec![(0, GROUP), (69, NOT_REQUESTED)]
    );
    assert_eq!(
        consumer_group_describe(&b, false).await,
        vec![(0, NOT_REQUESTED), (69, NOT_REQUESTED)]
    );
}
