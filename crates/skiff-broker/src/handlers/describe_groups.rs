//! DescribeGroups: state, protocol and members of each group. Member metadata and
//! assignments are shown only in the Stable state, as Kafka does; an unknown group is
//! reported as Dead (v0-5) or GROUP_ID_NOT_FOUND (v6+, KIP-1043), and so is a streams group. Authorized operations
//! (v3+, from [`crate::acl_operations`]) go to every group answered without an error.
//! With an authorizer a group needs GROUP DESCRIBE, else GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, ResponseKind};

use super::str_bytes;
use crate::acl_operations::{operations, ResourceType};
use crate::authz::{AclOperation, ResourceType as Rt};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::group::{Group, GroupState};

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub async fn handle(ctx: &RequestContext, request: DescribeGroupsRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let include_operations = version >= 3 && request.include_authorized_operations;
    let authz = ctx.authz();
    let mut groups: Vec<DescribedGroup> = request
        .groups
        .into_iter()
        .map(|id| {
            if !authz.allows(AclOperation::Describe, Rt::Group, &id.0) {
                return DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::Unauthorized(Rt::Group)))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED);
            }
            // A streams group is not a classic group: Kafka answers it as unknown.
            let described = broker.coordinator.with_group(&id.0, |g| {
                g.filter(|g| !g.is_streams_group())
                    .map(|g| describe(version, g))
            });
            match described {
                Err(e) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::Coordinator(e)))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
                Ok(Some(d)) => d.with_group_id(id),
                Ok(None) if version >= 6 => {
                    let missing = BrokerError::GroupNotFound(id.0.to_string());
                    DescribedGroup::default()
                        .with_group_id(id)
                        .with_error_code(ctx.code(&missing))
                        .with_error_message(Some(str_bytes(&missing.to_string())))
                        .with_group_state(str_bytes(GroupState::Dead.name()))
                        .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
                }
                Ok(None) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_group_state(str_bytes(GroupState::Dead.name()))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
            }
        })
        .collect();
    if include_operations {
        for g in groups.iter_mut().filter(|g| g.error_code == 0) {
            g.authorized_operations = operations(&authz, ResourceType::Group, &g.group_id.0);
        }
    }
    Reply::Respond(ResponseKind::DescribeGroups(
        DescribeGroupsResponse::default().with_groups(groups),
    ))
}

fn describe(version: i16, g: &Group) -> DescribedGroup {
    let stable = g.state == GroupState::Stable;
    let protocol = g.protocol.clone().unwrap_or_default();
    let members = g
        .members_in_order()
        .into_iter()
        .map(|m| {
            DescribedGroupMember::default()
                .with_member_id(str_bytes(&m.id))
                .with_group_instance_id(if version >= 4 {
                    m.instance_id.as_deref().map(str_bytes)
                } else {
                    None
                })
                .with_client_id(str_bytes(&m.client_id))
                .with_client_host(str_bytes(&m.client_host))
                .with_member_metadata(if stable {
                    m.metadata_for(&protocol)
                } else {
                    Default::default()
                })
                .with_member_assignment(if stable {
                    m.assignment.clone()
                } else {
                    Default::default()
                })
        })
        .collect();
    DescribedGroup::default()
        .with_group_state(str_bytes(g.state_name()))
        .with_protocol_type(str_bytes(g.protocol_type.as_deref().unwrap_or("")))
        .with_protocol_data(str_bytes(if stable { &protocol } else { "" }))
        .with_members(members)
        .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
}
