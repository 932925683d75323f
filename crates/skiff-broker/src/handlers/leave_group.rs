//! LeaveGroup: one member (v0-2) or a batch of members by member id or group instance id
//! (v3+, used by static members and admin tools). The others rebalance. With an authorizer
//! it needs GROUP READ, else GROUP_AUTHORIZATION_FAILED for the whole request.

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, ResponseKind};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: LeaveGroupRequest) -> Reply {
    Reply::Respond(ResponseKind::LeaveGroup(answer(ctx, request)))
}

fn answer(ctx: &RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse {
    let version = ctx.version();
    if !ctx
        .authz()
        .allows(AclOperation::Read, ResourceType::Group, &request.group_id.0)
    {
        let denied = BrokerError::Unauthorized(ResourceType::Group);
        return LeaveGroupResponse::default().with_error_code(ctx.code(&denied));
    }
    let result_code =
        |r: &Result<(), ResponseError>| ctx.result_code(&r.map_err(BrokerError::Coordinator));
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let result = ctx.broker.coordinator.leave(&request.group_id.0, &members);
    if version < 3 {
        let error = match result {
            Ok(errors) => errors.first().copied().unwrap_or(Ok(())),
            Err(e) => Err(e),
        };
        return LeaveGroupResponse::default().with_error_code(result_code(&error));
    }
    match result {
        Err(e) => LeaveGroupResponse::default().with_error_code(result_code(&Err(e))),
        Ok(errors) => LeaveGroupResponse::default().with_members(
            members
                .into_iter()
                .zip(errors)
                .map(|((id, instance), e)| {
                    MemberResponse::default()
                        .with_member_id(str_bytes(&id))
                        .with_group_instance_id(instance.as_deref().map(str_bytes))
                        .with_error_code(result_code(&e))
                })
                .collect(),
        ),
    }
}
