//! Streams groups (KIP-1071) at the broker's edge: StreamsGroupHeartbeat (88) and
//! StreamsGroupDescribe (89) are advertised at v0-1 and answered over TCP; versions past those
//! are refused like an unknown key; with an authorizer, the handlers check the group ACLs
//! Kafka checks before the group coordinator sees the request.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;
use std::time::Duration;

use acl_support::*;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseHeader};
use kafka_protocol::protocol::Decodable;
use skiff_broker::context::RequestContext;
use skiff_broker::dispatch::{dispatch_own, Reply};
use skiff_broker::Broker;
use skiff_protocol::streams::describe::StreamsGroupDescribeRequest;
use skiff_protocol::streams::heartbeat::StreamsGroupHeartbeatRequest;
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Kafka's STREAMS_INVALID_TOPOLOGY error code.
const STREAMS_INVALID_TOPOLOGY: i16 = 130;

/// A well-formed request frame of an own API (size prefix, header v2, body).
fn own_frame(api: OwnApi, version: i16, correlation_id: i32, body: &OwnRequest) -> Vec<u8> {
    assert_eq!(api, body.api());
    skiff_protocol::encode_own_request(correlation_id, Some("test"), version, body)
        .unwrap()
        .to_vec()
}

#[tokio::test]
async fn streams_apis_are_advertised_and_answered_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let served = common::broker(dir.path()).serve().await;
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    let versions = common::request_frame(
        ApiKey::ApiVersions,
        3,
        1,
        "test",
        &ApiVersionsRequest::default(),
    );
    s.write_all(&versions).await.unwrap();
    let mut body = common::read_frame(&mut s, Duration::from_secs(5))
        .await
        .unwrap();
    ResponseHeader::decode(&mut body, 0).unwrap();
    let response = ApiVersionsResponse::decode(&mut body, 3).unwrap();
    let served_range = |key: i16| {
        response
            .api_keys
            .iter()
            .find(|k| k.api_key == key)
            .map(|k| (k.min_version, k.max_version))
    };
    assert_eq!(served_range(88), Some((0, 1)));
    assert_eq!(served_range(89), Some((0, 1)));

    // StreamsGroupDescribe of a group that does not exist, at both versions. Right after start
    // the group's coordinator partition may still be loading (COORDINATOR_LOAD_IN_PROGRESS,
    // 14): asked again, as clients do, for at most 5 s.
    let describe = OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
        group_ids: vec!["g".into()],
        ..Default::default()
    });
    for v in 0..=1 {
        let mut error_code = 14;
        for _ in 0..50 {
            s.write_all(&own_frame(OwnApi::StreamsGroupDescribe, v, 8, &describe))
                .await
                .unwrap();
            let frame = common::read_frame(&mut s, Duration::from_secs(5))
                .await
                .unwrap();
            let (corr, answer) =
                OwnResponse::decode_frame(OwnApi::StreamsGroupDescribe, v, &frame).unwrap();
            assert_eq!(corr, 8);
            let OwnResponse::StreamsGroupDescribe(r) = answer else {
                panic!("wrong response type")
            };
            assert_eq!(r.groups.len(), 1);
            assert_eq!(r.groups[0].group_id.as_str(), "g");
            error_code = r.groups[0].error_code;
            if error_code != 14 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(error_code, 69, "GROUP_ID_NOT_FOUND at v{v}");
    }

    // A version past the served ones closes the connection, as an unknown key does.
    let mut newer = own_frame(OwnApi::StreamsGroupDescribe, 1, 9, &describe);
    newer[6..8].copy_from_slice(&2i16.to_be_bytes());
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    s.write_all(&newer).await.unwrap();
    assert!(common::closed(&mut s).await);
    // The broker still serves.
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    s.write_all(&versions).await.unwrap();
    assert!(common::read_frame(&mut s, Duration::from_secs(5))
        .await
        .is_some());
}

/// A join with a one-sub-topology topology reading "words".
fn join(group: &str) -> OwnRequest {
    use skiff_protocol::streams::heartbeat::{Subtopology, Topology};
    OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: format!("{group}-member"),
        rebalance_timeout_ms: 30_000,
        process_id: Some("p".into()),
        topology: Some(Topology {
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["words".into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        // A join states its (empty) task lists; null ones are refused as Kafka does.
        active_tasks: Some(Vec::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    })
}

async fn send_own(broker: &Arc<Broker>, who: &'static str, body: OwnRequest) -> OwnResponse {
    let mut ctx = RequestContext::new(broker.clone(), body.api(), 1);
    ctx.client_host = "/127.0.0.1".to_string();
    ctx.principal = user(who);
    match dispatch_own(ctx, body).await {
        Reply::Own(f) => f.await,
        _ => panic!("not an own-API answer"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_acls_are_checked_before_the_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let codes = create_acls(
        &broker,
        "admin",
        vec![
            creation(GROUP, "open", LITERAL, "User:alice", READ, ALLOW),
            creation(GROUP, "open", LITERAL, "User:alice", DESCRIBE, ALLOW),
            creation(GROUP, "seen", LITERAL, "User:alice", DESCRIBE, ALLOW),
        ],
    )
    .await;
    assert_eq!(codes, [0, 0, 0]);

    let heartbeat = |group: &str| {
        OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: "m".into(),
            ..Default::default()
        })
    };
    let code = |r: OwnResponse| match r {
        OwnResponse::StreamsGroupHeartbeat(r) => r.error_code,
        other => panic!("{other:?}"),
    };
    // READ on the group is what a heartbeat needs; DESCRIBE alone is not enough. Past the
    // ACL, this heartbeat (epoch 0 without a topology) is INVALID_REQUEST.
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("open")).await),
        42
    );
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("seen")).await),
        GROUP_DENIED
    );
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("closed")).await),
        GROUP_DENIED
    );
    assert_eq!(
        code(send_own(&broker, "admin", heartbeat("closed")).await),
        42
    );
    // The admin creates "open" and "seen" with a join (their source topic is missing).
    for group in ["open", "seen"] {
        assert_eq!(code(send_own(&broker, "admin", join(group)).await), 0);
    }

    // Describe: each group on its own; authorized operations only for groups answered.
    let describe = OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
        group_ids: vec!["open".into(), "closed".into(), "seen".into()],
        include_authorized_operations: true,
        ..Default::default()
    });
    let OwnResponse::StreamsGroupDescribe(r) = send_own(&broker, "alice", describe).await else {
        panic!("wrong response type")
    };
    let answered: Vec<_> = r
        .groups
        .iter()
        .map(|g| (g.group_id.as_str(), g.error_code, g.group_state.as_str()))
        .collect();
    assert_eq!(
        answered,
        [
            ("open", 0, "NotReady"),
            ("closed", GROUP_DENIED, ""),
            ("seen", 0, "NotReady")
        ]
    );
    // READ (bit 3) and DESCRIBE (bit 8) on "open"; DESCRIBE alone on "seen".
    assert_eq!(r.groups[0].authorized_operations, (1 << 3) | (1 << 8));
    assert_eq!(r.groups[2].authorized_operations, 1 << 8);
    assert_eq!(r.groups[1].authorized_operations, i32::MIN);
}

/// A topology naming Kafka-internal topics, or invalid topic names, is refused before any
/// group is made, with Kafka's messages naming every offending topic once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topologies_naming_internal_or_invalid_topics_are_refused() {
    use skiff_protocol::streams::heartbeat::{Subtopology, Topology};
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let join_reading = |group: &str, topics: &[&str]| {
        let OwnRequest::StreamsGroupHeartbeat(mut r) = join(group) else {
            unreachable!()
        };
        r.topology = Some(Topology {
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: topics.iter().map(|t| t.to_string()).collect(),
                repartition_sink_topics: topics.iter().map(|t| t.to_string()).collect(),
                ..Default::default()
            }],
            ..Default::default()
        });
        OwnRequest::StreamsGroupHeartbeat(r)
    };
    let answer = |r: OwnResponse| match r {
        OwnResponse::StreamsGroupHeartbeat(r) => (r.error_code, r.error_message),
        other => panic!("{other:?}"),
    };
    let internal = join_reading("a", &["words", "__consumer_offsets", "__transaction_state"]);
    assert_eq!(
        answer(send_own(&broker, "admin", internal).await),
        (
            STREAMS_INVALID_TOPOLOGY,
            Some(
                "Use of Kafka internal topics __consumer_offsets,__transaction_state in a Kafka \
                 Streams topology is prohibited."
                    .to_string()
            )
        )
    );
    let invalid = join_reading("b", &["words", "no spaces", "no/slash"]);
    assert_eq!(
        answer(send_own(&broker, "admin", invalid).await),
        (
            STREAMS_INVALID_TOPOLOGY,
            Some("Topic names no spaces,no/slash are not valid topic names.".to_string())
        )
    );
    let describe = OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
        group_ids: vec!["a".into(), "b".into()],
        ..Default::default()
    });
    let OwnResponse::StreamsGroupDescribe(r) = send_own(&broker, "admin", describe).await else {
        panic!("wrong response type")
    };
    let codes: Vec<i16> = r.groups.iter().map(|g| g.error_code).collect();
    assert_eq!(codes, [69, 69], "no group was made");
}
