//! ShareGroupHeartbeat and ShareGroupDescribe through dispatch (they are routed but not
//! advertised, so the wire cannot reach them yet), and how the other group APIs answer a
//! share group's id. ACLs are covered in `tests/share_groups_acl.rs`.

use std::sync::Arc;

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::*;
use crate::broker::Broker;
use crate::dispatch::{dispatch_request, Reply};
use crate::handlers::{str_bytes, topic_name};

async fn broker(dir: &std::path::Path) -> Arc<Broker> {
    crate::handlers::test_broker(dir).await
}

async fn send(b: &Arc<Broker>, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
    let mut ctx = RequestContext::new(b.clone(), key, version);
    ctx.client_id = "client".to_string();
    ctx.client_host = "/127.0.0.1".to_string();
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

fn hb(
    group: &str,
    member: &str,
    epoch: i32,
    topics: Option<&[&str]>,
) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str_bytes(group)))
        .with_member_id(str_bytes(member))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names(topics.map(|ts| ts.iter().map(|t| topic_name(t)).collect()))
}

async fn heartbeat(
    b: &Arc<Broker>,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    match send(
        b,
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

async fn describe(b: &Arc<Broker>, ids: &[&str]) -> ShareGroupDescribeResponse {
    let request = ShareGroupDescribeRequest::default()
        .with_group_ids(ids.iter().map(|g| GroupId(str_bytes(g))).collect())
        .with_include_authorized_operations(true);
    match send(
        b,
        ApiKey::ShareGroupDescribe,
        1,
        RequestKind::ShareGroupDescribe(request),
    )
    .await
    {
        ResponseKind::ShareGroupDescribe(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn list(b: &Arc<Broker>, types: &[&str]) -> Vec<(String, String, String, String)> {
    let request = ListGroupsRequest::default()
        .with_types_filter(types.iter().map(|t| str_bytes(t)).collect());
    match send(b, ApiKey::ListGroups, 5, RequestKind::ListGroups(request)).await {
        ResponseKind::ListGroups(r) => r
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.to_string(),
                    g.protocol_type.to_string(),
                    g.group_state.to_string(),
                    g.group_type.to_string(),
                )
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn partitions(r: &ShareGroupHeartbeatResponse) -> Vec<i32> {
    r.assignment
        .iter()
        .flat_map(|a| &a.topic_partitions)
        .flat_map(|tp| tp.partitions.iter().copied())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_member_joins_is_described_listed_leaves_and_the_group_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path()).await;
    b.topics.create("t", 2, Default::default(), false).unwrap();

    let r = heartbeat(&b, hb("sg", "m1", 0, Some(&["t"]))).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert_eq!(r.member_id.as_deref(), Some("m1"));
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(partitions(&r), vec![0, 1]);
    let again = heartbeat(&b, hb("sg", "m1", r.member_epoch, None)).await;
    assert_eq!((again.error_code, again.member_epoch), (0, r.member_epoch));
    assert!(again.assignment.is_none());

    let d = describe(&b, &["sg", "missing"]).await;
    let g = &d.groups[0];
    assert_eq!((g.error_code, g.group_state.as_str()), (0, "Stable"));
    assert_eq!(g.assignor_name.as_str(), "simple");
    assert_eq!(g.members[0].client_id.as_str(), "client");
    assert_eq!(g.members[0].client_host.as_str(), "/127.0.0.1");
    assert_eq!(
        g.members[0].assignment.topic_partitions[0]
            .topic_name
            .0
            .as_str(),
        "t"
    );
    // No authorizer: every operation a group supports.
    assert_ne!(g.authorized_operations, i32::MIN);
    assert_eq!(
        d.groups[1].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    assert_eq!(d.groups[1].authorized_operations, i32::MIN);

    assert_eq!(
        list(&b, &[]).await,
        vec![("sg".into(), "share".into(), "Stable".into(), "share".into())]
    );
    assert!(list(&b, &["consumer", "classic"]).await.is_empty());

    let delete = |ids: &[&str]| {
        DeleteGroupsRequest::default()
            .with_groups_names(ids.iter().map(|g| GroupId(str_bytes(g))).collect())
    };
    let codes = |r: ResponseKind| match r {
        ResponseKind::DeleteGroups(r) => r.results.iter().map(|g| g.error_code).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let r = send(
        &b,
        ApiKey::DeleteGroups,
        2,
        RequestKind::DeleteGroups(delete(&["sg"])),
    )
    .await;
    assert_eq!(codes(r), vec![ResponseError::NonEmptyGroup.code()]);

    let left = heartbeat(&b, hb("sg", "m1", -1, None)).await;
    assert_eq!(
        (
            left.error_code,
            left.member_epoch,
            left.heartbeat_interval_ms
        ),
        (0, -1, 0)
    );
    assert_eq!(list(&b, &["SHARE"]).await[0].2, "Empty");
    let r = send(
        &b,
        ApiKey::DeleteGroups,
        2,
        RequestKind::DeleteGroups(delete(&["sg"])),
    )
    .await;
    assert_eq!(codes(r), vec![0]);
    assert!(list(&b, &[]).await.is_empty());
    let d = describe(&b, &["sg"]).await;
    assert_eq!(
        d.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_ids_must_have_1_to_36_characters() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path()).await;
    b.topics.create("t", 1, Default::default(), false).unwrap();
    for bad in ["", &"x".repeat(37)] {
        let r = heartbeat(&b, hb("sg", bad, 0, Some(&["t"]))).await;
        assert_eq!(
            r.error_code,
            ResponseError::InvalidRequest.code(),
            "{bad:?}"
        );
        assert!(r.error_message.is_none());
    }
    let r = heartbeat(&b, hb("sg", &"x".repeat(36), 0, Some(&["t"]))).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    // The coordinator's own checks follow: a join must name topics.
    let r = heartbeat(&b, hb("sg", "m2", 0, None)).await;
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    assert!(r.error_message.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_and_consumer_group_ids_refuse_each_other_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path()).await;
    b.topics.create("t", 1, Default::default(), false).unwrap();
    let r = heartbeat(&b, hb("sg", "m1", 0, Some(&["t"]))).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);

    // KIP-848 heartbeat to the share group's id.
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str_bytes("sg")))
        .with_member_id(str_bytes("c1"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(10_000)
        .with_subscribed_topic_names(Some(vec![topic_name("t")]))
        .with_topic_partitions(Some(vec![]));
    let ResponseKind::ConsumerGroupHeartbeat(r) = send(
        &b,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(join.clone()),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());

    // Classic join: INCONSISTENT_GROUP_PROTOCOL.
    let classic = JoinGroupRequest::default()
        .with_group_id(GroupId(str_bytes("sg")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(str_bytes("consumer"))
        .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
        )
        .with_name(str_bytes("range"))]);
    let ResponseKind::JoinGroup(r) =
        send(&b, ApiKey::JoinGroup, 9, RequestKind::JoinGroup(classic)).await
    else {
        panic!()
    };
    assert_eq!(
        r.error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    assert_eq!(r.member_id.as_str(), "");

    // OffsetCommit, DescribeGroups and ConsumerGroupDescribe: not a group of theirs.
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(str_bytes("sg")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1)])]);
    let ResponseKind::OffsetCommit(r) = send(
        &b,
        ApiKey::OffsetCommit,
        9,
        RequestKind::OffsetCommit(commit),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    let described = DescribeGroupsRequest::default().with_groups(vec![GroupId(str_bytes("sg"))]);
    let ResponseKind::DescribeGroups(r) = send(
        &b,
        ApiKey::DescribeGroups,
        6,
        RequestKind::DescribeGroups(described),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    let described =
        ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(str_bytes("sg"))]);
    let ResponseKind::ConsumerGroupDescribe(r) = send(
        &b,
        ApiKey::ConsumerGroupDescribe,
        1,
        RequestKind::ConsumerGroupDescribe(described),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );

    // A share heartbeat to a consumer group's id.
    let cg = join.with_group_id(GroupId(str_bytes("cg")));
    let ResponseKind::ConsumerGroupHeartbeat(r) = send(
        &b,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(cg),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let r = heartbeat(&b, hb("cg", "m1", 0, Some(&["t"]))).await;
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());
    let d = describe(&b, &["cg"]).await;
    assert_eq!(
        d.groups[0].error_code,
        ResponseError::GroupIdNotFound.code()
    );
    // Both are listed, each with its type.
    let listed: Vec<(String, String)> = list(&b, &[])
        .await
        .into_iter()
        .map(|l| (l.0, l.3))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("cg".into(), "consumer".into()),
            ("sg".into(), "share".into())
        ]
    );
}
