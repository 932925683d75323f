//! ListGroups: every group, optionally filtered by state (v4+) and type (v5+: "classic" or
//! "consumer"). Filters compare case-insensitively, as Kafka does. With an authorizer: all
//! groups with CLUSTER DESCRIBE, else only those the requester may GROUP DESCRIBE.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse, ResponseKind};

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: ListGroupsRequest) -> Reply {
    Reply::Respond(ResponseKind::ListGroups(answer(ctx, request)))
}

fn answer(ctx: &RequestContext, request: ListGroupsRequest) -> ListGroupsResponse {
    let version = ctx.version();
    let groups = match ctx.broker.coordinator.list() {
        Ok(g) => g,
        Err(e) => {
            return ListGroupsResponse::default()
                .with_error_code(ctx.code(&BrokerError::Coordinator(e)))
        }
    };
    let authz = ctx.authz();
    let see_all = authz.allows_cluster(AclOperation::Describe);
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_ascii_lowercase())
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(|s| s.to_ascii_lowercase())
        .collect();
    let listed = groups
        .into_iter()
        .filter(|g| see_all || authz.allows(AclOperation::Describe, ResourceType::Group, &g.id))
        .filter(|g| {
            version < 4 || states.is_empty() || states.contains(&g.state.to_ascii_lowercase())
        })
        .filter(|g| {
            version < 5 || types.is_empty() || types.contains(&g.group_type.to_ascii_lowercase())
        })
        .map(|g| {
            ListedGroup::default()
                .with_group_id(GroupId(str_bytes(&g.id)))
                .with_protocol_type(str_bytes(&g.protocol_type))
                .with_group_state(if version >= 4 {
                    str_bytes(g.state)
                } else {
                    Default::default()
                })
                .with_group_type(if version >= 5 {
                    str_bytes(g.group_type)
                } else {
                    Default::default()
                })
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}
