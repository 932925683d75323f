//! The streams group handlers called in-process, through dispatch to the broker's streams
//! group service: answers and error codes, encoded at every served version.

use std::sync::Arc;

use skiff_protocol::streams::describe::StreamsGroupDescribeRequest;
use skiff_protocol::streams::heartbeat::StreamsGroupHeartbeatRequest;
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};

use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{dispatch_own, Reply};

const INVALID_REQUEST: i16 = 42;
const GROUP_ID_NOT_FOUND: i16 = 69;

async fn send(b: &Arc<Broker>, version: i16, body: OwnRequest) -> OwnResponse {
    let mut ctx = RequestContext::new(b.clone(), body.api(), version);
    ctx.client_id = "streams-client".to_string();
    ctx.client_host = "/127.0.0.1".to_string();
    let response = match dispatch_own(ctx, body).await {
        Reply::Own(f) => f.await,
        Reply::Close(why) => panic!("closed: {why}"),
        _ => panic!("not an own-API answer"),
    };
    skiff_protocol::encode_own_response(1, version, &response)
        .unwrap_or_else(|e| panic!("v{version}: {e}"));
    response
}

fn heartbeat(group: &str) -> OwnRequest {
    OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: "m".into(),
        ..Default::default()
    })
}

fn describe(groups: &[&str]) -> OwnRequest {
    OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
        group_ids: groups.iter().map(|g| g.to_string()).collect(),
        include_authorized_operations: true,
        ..Default::default()
    })
}

fn join(group: &str, member: &str) -> OwnRequest {
    use skiff_protocol::streams::heartbeat::{Subtopology, TaskIds, Topology};
    OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        process_id: Some("p1".into()),
        topology: Some(Topology {
            epoch: 0,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["words".into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        active_tasks: Some(Vec::<TaskIds>::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    })
}

/// Through dispatch to the broker's streams group service: a join with a topology whose
/// source topic is missing is told so, a heartbeat to an unknown group and a describe of an
/// unknown group get GROUP_ID_NOT_FOUND, a malformed join INVALID_REQUEST, and every answer
/// encodes at every served version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_reach_the_streams_group_service() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    for v in 0..=1 {
        let group = format!("app-v{v}");
        let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, v, join(&group, "m1")).await else {
            panic!("wrong response type")
        };
        assert_eq!((r.error_code, r.member_id.as_str()), (0, "m1"), "{r:?}");
        assert!(r.member_epoch >= 1, "{r:?}");
        let codes: Vec<i8> = r.status.iter().flatten().map(|s| s.status_code).collect();
        assert!(codes.contains(&1), "MISSING_SOURCE_TOPICS expected: {r:?}");

        let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, v, heartbeat("nobody")).await else {
            panic!("wrong response type")
        };
        // Epoch 0 without a rebalance timeout or topology is refused before any group.
        assert_eq!(r.error_code, INVALID_REQUEST, "{r:?}");

        let OwnResponse::StreamsGroupDescribe(r) =
            send(&b, v, describe(&[group.as_str(), "other"])).await
        else {
            panic!("wrong response type")
        };
        assert_eq!(r.groups[0].group_id, group);
        assert_eq!(r.groups[0].error_code, 0);
        assert_eq!(r.groups[0].group_state, "NotReady");
        assert_eq!(r.groups[0].members.len(), 1);
        // No authorizer: every operation a group supports.
        assert!(r.groups[0].authorized_operations > 0);
        assert_eq!(
            (r.groups[1].group_id.as_str(), r.groups[1].error_code),
            ("other", GROUP_ID_NOT_FOUND)
        );
        assert_eq!(
            r.groups[1].authorized_operations,
            skiff_protocol::streams::describe::AUTHORIZED_OPERATIONS_OMITTED
        );
    }
    assert_eq!(OwnApi::StreamsGroupHeartbeat.key(), 88);
}

/// The answers' shape where Kafka 4.4 leaves fields at their defaults: an error answer has
/// an empty status list (not null); a join whose task lists are null is told the active
/// tasks must be empty; a v0 answer leaves the int32 lag at 0; a leave answer carries only
/// the member id and epoch -1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_answers_leave_fields_at_kafkas_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    let hb = |request: OwnRequest| match request {
        OwnRequest::StreamsGroupHeartbeat(r) => r,
        _ => unreachable!(),
    };
    let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, 1, heartbeat("nobody")).await else {
        panic!("wrong response type")
    };
    assert_eq!(r.error_code, INVALID_REQUEST, "{r:?}");
    assert_eq!(r.status, Some(Vec::new()));

    let null_tasks = StreamsGroupHeartbeatRequest {
        active_tasks: None,
        standby_tasks: None,
        warmup_tasks: None,
        ..hb(join("app", "m1"))
    };
    let OwnResponse::StreamsGroupHeartbeat(r) =
        send(&b, 1, OwnRequest::StreamsGroupHeartbeat(null_tasks)).await
    else {
        panic!("wrong response type")
    };
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (
            INVALID_REQUEST,
            Some("ActiveTasks must be empty when (re-)joining.")
        )
    );

    let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, 0, join("app", "m1")).await else {
        panic!("wrong response type")
    };
    assert_eq!(
        (r.error_code, r.acceptable_recovery_lag_legacy),
        (0, 0),
        "{r:?}"
    );
    assert_eq!(r.task_offset_interval_ms, 60_000);

    let leave = StreamsGroupHeartbeatRequest {
        group_id: "app".into(),
        member_id: "m1".into(),
        member_epoch: -1,
        ..Default::default()
    };
    let OwnResponse::StreamsGroupHeartbeat(r) =
        send(&b, 1, OwnRequest::StreamsGroupHeartbeat(leave)).await
    else {
        panic!("wrong response type")
    };
    let expected = skiff_protocol::streams::heartbeat::StreamsGroupHeartbeatResponse {
        member_id: "m1".into(),
        member_epoch: -1,
        ..Default::default()
    };
    assert_eq!(r, expected);
    assert_eq!(
        (
            r.task_offset_interval_ms,
            r.acceptable_recovery_lag,
            r.endpoint_information_epoch
        ),
        (0, -1, 0)
    );
}

/// StreamsGroupDescribe's per-group errors as Kafka names them: the empty id
/// INVALID_GROUP_ID without a message, an unknown id GROUP_ID_NOT_FOUND "Group X not
/// found."; a described group asked for its topology description has none stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_errors_and_topology_description_status_are_kafkas() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, 1, join("app", "m1")).await else {
        panic!("wrong response type")
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    let request = |with_description: bool| {
        OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
            group_ids: vec!["app".into(), "".into(), "other".into()],
            include_topology_description: with_description,
            ..Default::default()
        })
    };
    let OwnResponse::StreamsGroupDescribe(r) = send(&b, 1, request(true)).await else {
        panic!("wrong response type")
    };
    let got: Vec<(i16, Option<&str>, i8)> = r
        .groups
        .iter()
        .map(|g| {
            (
                g.error_code,
                g.error_message.as_deref(),
                g.topology_description_status,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, None, 1),
            (24, None, 0),
            (GROUP_ID_NOT_FOUND, Some("Group other not found."), 0)
        ]
    );
    let OwnResponse::StreamsGroupDescribe(r) = send(&b, 1, request(false)).await else {
        panic!("wrong response type")
    };
    assert_eq!(r.groups[0].topology_description_status, 0);
}

/// A join whose topology declares a sub-topology id twice is refused before any group is
/// touched (Kafka fails it with an unhandled exception), and no group is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topology_with_a_duplicate_subtopology_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    let OwnRequest::StreamsGroupHeartbeat(mut r) = join("app", "m1") else {
        unreachable!()
    };
    let topology = r.topology.as_mut().unwrap();
    topology
        .subtopologies
        .push(topology.subtopologies[0].clone());
    let OwnResponse::StreamsGroupHeartbeat(r) =
        send(&b, 1, OwnRequest::StreamsGroupHeartbeat(r)).await
    else {
        panic!("wrong response type")
    };
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (130, Some("Subtopology 0 is declared more than once."))
    );
    let OwnResponse::StreamsGroupDescribe(d) = send(&b, 1, describe(&["app"])).await else {
        panic!("wrong response type")
    };
    assert_eq!(d.groups[0].error_code, GROUP_ID_NOT_FOUND);
}
