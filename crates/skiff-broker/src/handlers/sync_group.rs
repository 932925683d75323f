//! SyncGroup: the second phase of a classic rebalance. Followers wait (`Reply::Later`) until
//! the leader sends the assignments; assignments are relayed as opaque bytes, empty ones
//! included, exactly as Kafka does. With an authorizer it needs GROUP READ, else
//! GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{ResponseKind, SyncGroupRequest, SyncGroupResponse};

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::group::{SyncOutcome, SyncResult};

pub async fn handle(ctx: &RequestContext, request: SyncGroupRequest) -> Reply {
    let version = ctx.version();
    // The code the coordinator's channel closing answers (the coordinator stopped).
    let gone = ctx.error(&BrokerError::CoordinatorUnavailable);
    if !ctx
        .authz()
        .allows(AclOperation::Read, ResourceType::Group, &request.group_id.0)
    {
        let denied = ctx.error(&BrokerError::Unauthorized(ResourceType::Group));
        return respond(version, SyncResult::error(denied));
    }
    let instance = request.group_instance_id.as_ref().map(|s| s.to_string());
    let protocol_type = request.protocol_type.as_ref().map(|s| s.to_string());
    let protocol_name = request.protocol_name.as_ref().map(|s| s.to_string());
    let outcome = ctx.broker.coordinator.sync(
        &request.group_id.0,
        &request.member_id,
        instance.as_deref(),
        request.generation_id,
        protocol_type.as_deref(),
        protocol_name.as_deref(),
        request
            .assignments
            .into_iter()
            .map(|a| (a.member_id.to_string(), a.assignment))
            .collect(),
    );
    match outcome {
        Err(e) => respond(version, SyncResult::error(e)),
        Ok(SyncOutcome::Ready(r)) => respond(version, r),
        Ok(SyncOutcome::Wait(rx)) => Reply::Later(Box::pin(async move {
            let r = rx.await.unwrap_or_else(|_| SyncResult::error(gone));
            ResponseKind::SyncGroup(response(version, r))
        })),
    }
}

fn respond(version: i16, r: SyncResult) -> Reply {
    Reply::Respond(ResponseKind::SyncGroup(response(version, r)))
}

fn response(version: i16, r: SyncResult) -> SyncGroupResponse {
    let v5 = version >= 5;
    SyncGroupResponse::default()
        .with_error_code(r.error)
        .with_protocol_type(r.protocol_type.as_deref().filter(|_| v5).map(str_bytes))
        .with_protocol_name(r.protocol_name.as_deref().filter(|_| v5).map(str_bytes))
        .with_assignment(r.assignment)
}
