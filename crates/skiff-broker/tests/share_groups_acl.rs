//! ShareGroupHeartbeat and ShareGroupDescribe with Kafka's StandardAuthorizer: GROUP READ
//! and TOPIC DESCRIBE for a heartbeat, GROUP DESCRIBE per described group, and the topics of
//! a described group's assignments. (Sent through dispatch: the two APIs are routed but not
//! advertised yet.)
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use acl_support::*;
use kafka_protocol::messages::*;

fn join(group: &str, member: &str, topics: &[&str]) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_member_epoch(0)
        .with_subscribed_topic_names(Some(topics.iter().map(|t| TopicName(s(t))).collect()))
}

async fn heartbeat(
    broker: &std::sync::Arc<skiff_broker::Broker>,
    who: &'static str,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    match send_as(
        broker,
        who,
        ApiKey::ShareGroupHeartbeat,
        1,
        RequestKind::ShareGroupHeartbeat(request),
    )
    .await
    {
        ResponseKind::ShareGroupHeartbeat(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn describe(
    broker: &std::sync::Arc<skiff_broker::Broker>,
    who: &'static str,
    ids: &[&str],
) -> Vec<(String, i16, i32)> {
    let request = ShareGroupDescribeRequest::default()
        .with_group_ids(ids.iter().map(|g| GroupId(s(g))).collect())
        .with_include_authorized_operations(true);
    match send_as(
        broker,
        who,
        ApiKey::ShareGroupDescribe,
        1,
        RequestKind::ShareGroupDescribe(request),
    )
    .await
    {
        ResponseKind::ShareGroupDescribe(r) => r
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.to_string(),
                    g.error_code,
                    g.authorized_operations,
                )
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_heartbeat_needs_group_read_and_describe_on_each_subscribed_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    for t in ["open", "secret"] {
        common::create_topic(&broker, t, 1).await;
    }
    // No ACL on the group: GROUP_AUTHORIZATION_FAILED, the code alone.
    let r = heartbeat(&broker, "alice", join("sg", "m1", &["open"])).await;
    assert_eq!(r.error_code, GROUP_DENIED);
    assert!(r.error_message.is_none());
    create_acls(
        &broker,
        "admin",
        vec![
            creation(GROUP, "sg", LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, "open", LITERAL, "User:alice", DESCRIBE, ALLOW),
        ],
    )
    .await;
    // A topic alice may not describe: TOPIC_AUTHORIZATION_FAILED, and no group is created.
    let r = heartbeat(&broker, "alice", join("sg", "m1", &["open", "secret"])).await;
    assert_eq!(r.error_code, TOPIC_DENIED);
    assert!(!broker.coordinator.is_share_group("sg"));
    let r = heartbeat(&broker, "alice", join("sg", "m1", &["open"])).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    assert!(broker.coordinator.share_member_exists("sg", "m1"));
    // A heartbeat without the subscription needs only the group.
    let next = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("sg")))
        .with_member_id(s("m1"))
        .with_member_epoch(r.member_epoch);
    let r = heartbeat(&broker, "alice", next).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    common::stop(broker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_group_describe_needs_group_describe_and_hides_groups_with_hidden_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    for t in ["open", "secret"] {
        common::create_topic(&broker, t, 1).await;
    }
    assert_eq!(
        heartbeat(&broker, "admin", join("a", "m1", &["open"]))
            .await
            .error_code,
        0
    );
    assert_eq!(
        heartbeat(&broker, "admin", join("b", "m1", &["secret"]))
            .await
            .error_code,
        0
    );
    create_acls(
        &broker,
        "admin",
        vec![
            creation(GROUP, "a", LITERAL, "User:bob", DESCRIBE, ALLOW),
            creation(GROUP, "b", LITERAL, "User:bob", DESCRIBE, ALLOW),
            creation(TOPIC, "open", LITERAL, "User:bob", DESCRIBE, ALLOW),
        ],
    )
    .await;
    let described = describe(&broker, "bob", &["a", "nope", "b"]).await;
    // "nope" is refused (no GROUP DESCRIBE), and refused groups come first, as in Kafka.
    // "b" is assigned "secret", which bob may not describe.
    // DESCRIBE (8) is bit 1 << 8 in authorized operations.
    assert_eq!(
        described,
        vec![
            ("nope".to_string(), GROUP_DENIED, i32::MIN),
            ("a".to_string(), 0, 1 << 8),
            ("b".to_string(), TOPIC_DENIED, i32::MIN),
        ]
    );
    common::stop(broker).await;
}
