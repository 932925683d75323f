//! ShareGroupHeartbeat v1 (KIP-932): a share group member joins (epoch 0, with the topic
//! names it subscribes to), heartbeats, and leaves (epoch -1); each answer carries its member
//! epoch, the heartbeat interval and, when it changed, its assignment (topic id →
//! partitions). The rules are the group coordinator's (`skiff_coordinator::share_group`);
//! this handler adds Kafka's checks in front of them, in KafkaApis' order:
//!
//! 1. GROUP READ on the group, else GROUP_AUTHORIZATION_FAILED;
//! 2. a member id of 1 to 36 characters, else INVALID_REQUEST ("Invalid member id in the
//!    request.");
//! 3. TOPIC DESCRIBE on every subscribed topic name sent, else TOPIC_AUTHORIZATION_FAILED.
//!
//! These first answers carry the error code alone, as Kafka's.

use kafka_protocol::messages::{
    ResponseKind, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

/// Kafka's longest member id (a UUID in its text form is 36 characters).
const MAX_MEMBER_ID_CHARS: usize = 36;

pub async fn handle(ctx: &RequestContext, request: ShareGroupHeartbeatRequest) -> Reply {
    Reply::Respond(ResponseKind::ShareGroupHeartbeat(answer(ctx, request)))
}

fn answer(
    ctx: &RequestContext,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let fail =
        |e: BrokerError| ShareGroupHeartbeatResponse::default().with_error_code(ctx.code(&e));
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Read, ResourceType::Group, &request.group_id.0) {
        return fail(BrokerError::Unauthorized(ResourceType::Group));
    }
    let chars = request.member_id.chars().count();
    if chars == 0 || chars > MAX_MEMBER_ID_CHARS {
        return fail(BrokerError::InvalidRequest(
            "Invalid member id in the request.".to_string(),
        ));
    }
    if let Some(names) = &request.subscribed_topic_names {
        if names
            .iter()
            .any(|n| !authz.allows(AclOperation::Describe, ResourceType::Topic, n))
        {
            return fail(BrokerError::Unauthorized(ResourceType::Topic));
        }
    }
    match ctx
        .broker
        .coordinator
        .share_heartbeat(&request, &ctx.client_id, &ctx.client_host)
    {
        Ok(response) => response,
        Err(e) => fail(BrokerError::Coordinator(e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "share_group_heartbeat_tests.rs"]
mod tests;
