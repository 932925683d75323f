//! Streams groups (KIP-1071) before the coordinator exists: on the wire, StreamsGroupHeartbeat
//! (88) and StreamsGroupDescribe (89) are neither advertised nor served (refused like any key
//! the broker does not know); in-process, with an authorizer, the handlers check the group
//! ACLs Kafka checks before they reach the coordinator (here a test double).
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
use skiff_broker::errors::BrokerError;
use skiff_broker::streams_groups::{Caller, HeartbeatFuture, StreamsGroups};
use skiff_broker::Broker;
use skiff_protocol::streams::describe::{DescribedGroup, StreamsGroupDescribeRequest};
use skiff_protocol::streams::heartbeat::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A well-formed request frame of an own API (size prefix, header v2, body).
fn own_frame(api: OwnApi, version: i16, correlation_id: i32, body: &OwnRequest) -> Vec<u8> {
    assert_eq!(api, body.api());
    skiff_protocol::encode_own_request(correlation_id, Some("test"), version, body)
        .unwrap()
        .to_vec()
}

async fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn gated_off_streams_apis_are_not_advertised_and_refused_like_unknown_keys() {
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
    let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
    assert!(keys.contains(&(ApiKey::ConsumerGroupHeartbeat as i16)));
    assert!(!keys.contains(&88) && !keys.contains(&89), "{keys:?}");

    // A valid StreamsGroupHeartbeat or StreamsGroupDescribe closes the connection without an
    // answer, as a request for a key the broker does not know at all (1000) does.
    let heartbeat = OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        ..Default::default()
    });
    let describe = OwnRequest::StreamsGroupDescribe(StreamsGroupDescribeRequest {
        group_ids: vec!["g".into()],
        ..Default::default()
    });
    let mut unknown = own_frame(OwnApi::StreamsGroupDescribe, 0, 9, &describe);
    unknown[4..6].copy_from_slice(&1000i16.to_be_bytes());
    let frames = [
        own_frame(OwnApi::StreamsGroupHeartbeat, 0, 7, &heartbeat),
        own_frame(OwnApi::StreamsGroupHeartbeat, 1, 7, &heartbeat),
        own_frame(OwnApi::StreamsGroupDescribe, 1, 8, &describe),
        unknown,
    ];
    for frame in frames {
        let mut s = TcpStream::connect(served.addr).await.unwrap();
        s.write_all(&frame).await.unwrap();
        assert!(closed(&mut s).await, "key {:?}", &frame[4..6]);
    }
    // The broker still serves.
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    s.write_all(&versions).await.unwrap();
    assert!(common::read_frame(&mut s, Duration::from_secs(5))
        .await
        .is_some());
}

/// Knows every group; answers a heartbeat with epoch 1.
struct Everything;

impl StreamsGroups for Everything {
    fn heartbeat(&self, _: Caller, request: StreamsGroupHeartbeatRequest) -> HeartbeatFuture {
        Box::pin(async move {
            Ok(StreamsGroupHeartbeatResponse {
                member_id: request.member_id,
                member_epoch: 1,
                ..Default::default()
            })
        })
    }

    fn describe(&self, _: &Caller, group_id: &str, _: bool) -> Result<DescribedGroup, BrokerError> {
        Ok(DescribedGroup {
            group_id: group_id.to_string(),
            group_state: "EMPTY".into(),
            ..Default::default()
        })
    }
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
    assert!(broker.streams_groups.set(Arc::new(Everything)).is_ok());
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
        OwnResponse::StreamsGroupHeartbeat(r) => (r.error_code, r.member_epoch),
        other => panic!("{other:?}"),
    };
    // READ on the group is what a heartbeat needs; DESCRIBE alone is not enough.
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("open")).await),
        (0, 1)
    );
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("seen")).await),
        (GROUP_DENIED, 0)
    );
    assert_eq!(
        code(send_own(&broker, "alice", heartbeat("closed")).await),
        (GROUP_DENIED, 0)
    );
    assert_eq!(
        code(send_own(&broker, "admin", heartbeat("closed")).await),
        (0, 1)
    );

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
            ("open", 0, "EMPTY"),
            ("closed", GROUP_DENIED, ""),
            ("seen", 0, "EMPTY")
        ]
    );
    // READ (bit 3) and DESCRIBE (bit 8) on "open"; DESCRIBE alone on "seen".
    assert_eq!(r.groups[0].authorized_operations, (1 << 3) | (1 << 8));
    assert_eq!(r.groups[2].authorized_operations, 1 << 8);
    assert_eq!(r.groups[1].authorized_operations, i32::MIN);
}
