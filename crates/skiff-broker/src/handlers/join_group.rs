//! JoinGroup: the first phase of a classic rebalance. The request may wait (`Reply::Later`)
//! until every member has rejoined or the rebalance timeout passes; the connection keeps
//! serving its later requests meanwhile. With an authorizer it needs GROUP READ, else
//! GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, ResponseKind};

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::group::{JoinOutcome, JoinRequest, JoinResult};

pub async fn handle(ctx: &RequestContext, request: JoinGroupRequest) -> Reply {
    let version = ctx.version();
    let group_id = request.group_id.0.to_string();
    let member_id = request.member_id.to_string();
    if !ctx
        .authz()
        .allows(AclOperation::Read, ResourceType::Group, &group_id)
    {
        let denied = ctx.error(&BrokerError::Unauthorized(ResourceType::Group));
        return respond(version, JoinResult::error(denied, &member_id));
    }
    let req = JoinRequest {
        member_id: member_id.clone(),
        group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .into_iter()
            .map(|p| (p.name.to_string(), p.metadata))
            .collect(),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
    };
    // The code the coordinator's channel closing answers (the coordinator stopped).
    let gone = ctx.error(&BrokerError::CoordinatorUnavailable);
    match ctx.broker.coordinator.join(&group_id, req) {
        Err(e) => respond(version, JoinResult::error(e, &member_id)),
        Ok(JoinOutcome::Ready(result)) => respond(version, result),
        Ok(JoinOutcome::Wait(rx)) => Reply::Later(Box::pin(async move {
            let result = rx
                .await
                .unwrap_or_else(|_| JoinResult::error(gone, &member_id));
            ResponseKind::JoinGroup(response(version, result))
        })),
    }
}

fn respond(version: i16, result: JoinResult) -> Reply {
    Reply::Respond(ResponseKind::JoinGroup(response(version, result)))
}

fn response(version: i16, r: JoinResult) -> JoinGroupResponse {
    // Before v7 the protocol name is not nullable: Kafka sends "" when there is none.
    let protocol_name = match (&r.protocol_name, version >= 7) {
        (Some(p), _) => Some(str_bytes(p)),
        (None, true) => None,
        (None, false) => Some(str_bytes("")),
    };
    JoinGroupResponse::default()
        .with_error_code(r.error)
        .with_generation_id(r.generation_id)
        .with_protocol_type(if version >= 7 {
            r.protocol_type.as_deref().map(str_bytes)
        } else {
            None
        })
        .with_protocol_name(protocol_name)
        .with_leader(str_bytes(&r.leader))
        .with_skip_assignment(version >= 9 && r.skip_assignment)
        .with_member_id(str_bytes(&r.member_id))
        .with_members(
            r.members
                .into_iter()
                .map(|(id, instance, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(str_bytes(&id))
                        .with_group_instance_id(if version >= 5 {
                            instance.as_deref().map(str_bytes)
                        } else {
                            None
                        })
                        .with_metadata(metadata)
                })
                .collect(),
        )
}
