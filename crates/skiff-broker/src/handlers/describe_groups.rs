//! DescribeGroups: state, protocol and members of each group. Member metadata and
//! assignments are shown only in the Stable state, as Kafka does; an unknown group is
//! reported as Dead (v0-5) or GROUP_ID_NOT_FOUND (v6+, KIP-1043). Authorized operations
//! (v3+, from [`crate::acl_operations`]) go to every group answered without an error.

use std::sync::Arc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::acl_operations::{authorized_operations, Principal, ResourceType};
use crate::broker::Broker;
use crate::coordinator::group::{Group, GroupState};

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub fn handle(
    broker: &Arc<Broker>,
    version: i16,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let include_operations = version >= 3 && request.include_authorized_operations;
    let mut groups: Vec<DescribedGroup> = request
        .groups
        .into_iter()
        .map(|id| {
            let described = broker
                .coordinator
                .with_group(&id.0, |g| g.map(|g| describe(version, g)));
            match described {
                Err(e) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(e.code())
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
                Ok(Some(d)) => d.with_group_id(id),
                Ok(None) if version >= 6 => DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_error_code(ResponseError::GroupIdNotFound.code())
                    .with_error_message(Some(str_bytes(&format!("Group {} not found.", id.0))))
                    .with_group_state(str_bytes(GroupState::Dead.name()))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
                Ok(None) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_group_state(str_bytes(GroupState::Dead.name()))
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
            }
        })
        .collect();
    if include_operations {
        for g in groups.iter_mut().filter(|g| g.error_code == 0) {
            g.authorized_operations =
                authorized_operations(&Principal::ANONYMOUS, ResourceType::Group, &g.group_id.0);
        }
    }
    DescribeGroupsResponse::default().with_groups(groups)
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
