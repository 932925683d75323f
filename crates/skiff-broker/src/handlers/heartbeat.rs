//! Heartbeat: keeps a member's session alive and tells it when a rebalance has started.
//! With an authorizer it needs GROUP READ, else GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, ResponseKind};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: HeartbeatRequest) -> Reply {
    if !ctx
        .authz()
        .allows(AclOperation::Read, ResourceType::Group, &request.group_id.0)
    {
        let denied = Err(BrokerError::Unauthorized(ResourceType::Group));
        return Reply::Respond(ResponseKind::Heartbeat(
            HeartbeatResponse::default().with_error_code(ctx.result_code(&denied)),
        ));
    }
    let instance = request.group_instance_id.as_ref().map(|s| s.to_string());
    let error = ctx.broker.coordinator.heartbeat(
        &request.group_id.0,
        &request.member_id,
        instance.as_deref(),
        request.generation_id,
    );
    let error = error.map_err(BrokerError::Coordinator);
    Reply::Respond(ResponseKind::Heartbeat(
        HeartbeatResponse::default().with_error_code(ctx.result_code(&error)),
    ))
}
