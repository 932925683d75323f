//! The streams group handlers called in-process (the APIs are not served on the wire yet):
//! without a coordinator they answer as Kafka does with streams groups disabled; with one,
//! they pass requests and answers through, map its errors to codes, and the answers encode
//! at every coded version.

use std::sync::{Arc, Mutex};

use skiff_protocol::streams::describe::{DescribedGroup, StreamsGroupDescribeRequest};
use skiff_protocol::streams::heartbeat::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};

use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{dispatch_own, Reply};
use crate::errors::BrokerError;
use crate::streams_groups::{Caller, HeartbeatFuture, StreamsGroups};

const UNSUPPORTED_VERSION: i16 = 35;
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

/// A coordinator that knows the group "known" and records what it was asked.
#[derive(Default)]
struct Fake {
    calls: Mutex<Vec<String>>,
}

impl StreamsGroups for Fake {
    fn heartbeat(&self, caller: Caller, request: StreamsGroupHeartbeatRequest) -> HeartbeatFuture {
        self.calls.lock().unwrap().push(format!(
            "heartbeat {} v{} {} {}",
            request.group_id, caller.version, caller.client_id, caller.client_host
        ));
        Box::pin(async move {
            if request.group_id != "known" {
                return Err(BrokerError::GroupNotFound(request.group_id));
            }
            Ok(StreamsGroupHeartbeatResponse {
                member_id: request.member_id,
                member_epoch: 1,
                heartbeat_interval_ms: 5000,
                ..Default::default()
            })
        })
    }

    fn describe(
        &self,
        _caller: &Caller,
        group_id: &str,
        include_topology_description: bool,
    ) -> Result<DescribedGroup, BrokerError> {
        self.calls.lock().unwrap().push(format!(
            "describe {group_id} {include_topology_description}"
        ));
        if group_id != "known" {
            return Err(BrokerError::GroupNotFound(group_id.to_string()));
        }
        Ok(DescribedGroup {
            group_id: group_id.to_string(),
            group_state: "EMPTY".into(),
            ..Default::default()
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_coordinator_both_apis_answer_unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    for v in 0..=1 {
        let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, v, heartbeat("g")).await else {
            panic!("wrong response type")
        };
        assert_eq!(r.error_code, UNSUPPORTED_VERSION);
        let OwnResponse::StreamsGroupDescribe(r) = send(&b, v, describe(&["g", "h"])).await else {
            panic!("wrong response type")
        };
        let answered: Vec<_> = r
            .groups
            .iter()
            .map(|g| (g.group_id.as_str(), g.error_code))
            .collect();
        assert_eq!(
            answered,
            [("g", UNSUPPORTED_VERSION), ("h", UNSUPPORTED_VERSION)]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_coordinator_requests_and_errors_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let b = crate::handlers::test_broker(dir.path()).await;
    let fake = Arc::new(Fake::default());
    assert!(b.streams_groups.set(fake.clone()).is_ok());
    for v in 0..=1 {
        let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, v, heartbeat("known")).await else {
            panic!("wrong response type")
        };
        assert_eq!(
            (r.error_code, r.member_id.as_str(), r.member_epoch),
            (0, "m", 1)
        );
        let OwnResponse::StreamsGroupHeartbeat(r) = send(&b, v, heartbeat("other")).await else {
            panic!("wrong response type")
        };
        assert_eq!(r.error_code, GROUP_ID_NOT_FOUND);
        let OwnResponse::StreamsGroupDescribe(r) = send(&b, v, describe(&["known", "other"])).await
        else {
            panic!("wrong response type")
        };
        assert_eq!(r.groups[0].group_id, "known");
        assert_eq!(r.groups[0].error_code, 0);
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
    let calls = fake.calls.lock().unwrap().clone();
    assert_eq!(calls[0], "heartbeat known v0 streams-client /127.0.0.1");
    assert_eq!(calls[2], "describe known false");
    assert_eq!(calls.len(), 8);
    assert_eq!(OwnApi::StreamsGroupHeartbeat.key(), 88);
}
