//! The ACL authorizer wired into the broker (issue 14, "Authorization"): with
//! `authorizer.class.name` set to Kafka's StandardAuthorizer, the ACL APIs are served and
//! persisted in `acls.json`, and Metadata, Produce and Fetch check the requester's ACLs with
//! Kafka's error codes. Group, transaction and admin APIs are in `acls_admin.rs`. (Without an
//! authorizer every other test file covers the unchanged answers.)
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use acl_support::*;
use kafka_protocol::messages::*;

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

/// One ConsumerGroupHeartbeat v1 of `who` subscribing by regex; the answer.
async fn regex_heartbeat(
    broker: &std::sync::Arc<skiff_broker::Broker>,
    who: &'static str,
    epoch: i32,
    owned: Vec<consumer_group_heartbeat_request::TopicPartitions>,
) -> ConsumerGroupHeartbeatResponse {
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_member_id(s("member-alice-0001"))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(10_000)
        .with_subscribed_topic_regex(Some(s("rx-.*")))
        .with_topic_partitions(Some(owned));
    match send_as(
        broker,
        who,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(request),
    )
    .await
    {
        ResponseKind::ConsumerGroupHeartbeat(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regex_subscription_resolves_only_to_topics_the_member_may_describe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    for t in ["rx-open", "rx-secret", "other"] {
        common::create_topic(&broker, t, 1).await;
    }
    let id = |t: &str| broker.topics.get(t).unwrap().id;
    create_acls(
        &broker,
        "admin",
        vec![
            creation(GROUP, "g", LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, "rx-open", LITERAL, "User:alice", READ, ALLOW),
        ],
    )
    .await;
    // The regex matches rx-open and rx-secret; alice may describe only rx-open (READ implies
    // DESCRIBE), so only rx-open is assigned, and there is no error.
    let joined = regex_heartbeat(&broker, "alice", 0, Vec::new()).await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let assigned: Vec<_> = joined
        .assignment
        .as_ref()
        .unwrap()
        .topic_partitions
        .iter()
        .map(|tp| tp.topic_id)
        .collect();
    assert_eq!(assigned, vec![id("rx-open")]);

    // DESCRIBE on rx-secret granted: the next heartbeat resolves the regex to both.
    create_acls(
        &broker,
        "admin",
        vec![creation(
            TOPIC,
            "rx-secret",
            LITERAL,
            "User:alice",
            DESCRIBE,
            ALLOW,
        )],
    )
    .await;
    let owned = vec![consumer_group_heartbeat_request::TopicPartitions::default()
        .with_topic_id(id("rx-open"))
        .with_partitions(vec![0])];
    let next = regex_heartbeat(&broker, "alice", joined.member_epoch, owned).await;
    assert_eq!(next.error_code, 0, "{next:?}");
    let mut assigned: Vec<_> = next
        .assignment
        .as_ref()
        .unwrap()
        .topic_partitions
        .iter()
        .map(|tp| tp.topic_id)
        .collect();
    assigned.sort();
    let mut want = vec![id("rx-open"), id("rx-secret")];
    want.sort();
    assert_eq!(assigned, want);
    common::stop(broker).await;
}
