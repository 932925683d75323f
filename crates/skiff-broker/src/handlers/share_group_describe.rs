//! ShareGroupDescribe v1 (KIP-932): state, epochs, assignor and members of share groups, as
//! the group coordinator builds them (`skiff_coordinator::share_group::described`). A missing
//! group, or an id that belongs to a consumer or classic group, is GROUP_ID_NOT_FOUND.
//!
//! With an authorizer (Kafka's KafkaApis): a group needs GROUP DESCRIBE, else
//! GROUP_AUTHORIZATION_FAILED, and, as Kafka answers, the refused groups come first in the
//! response, then the others in request order. A described group whose members'
//! assignments name a topic the requester may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
//! instead of its description. Authorized operations (from [`crate::acl_operations`]) go to
//! every group answered without an error, when asked for.

use kafka_protocol::messages::share_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{
    ResponseKind, ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};

use super::str_bytes;
use crate::acl_operations::{operations, ResourceType};
use crate::authz::{AclOperation, Authz, ResourceType as Rt};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: ShareGroupDescribeRequest) -> Reply {
    Reply::Respond(ResponseKind::ShareGroupDescribe(answer(ctx, request)))
}

fn answer(ctx: &RequestContext, request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let authz = ctx.authz();
    let (allowed, refused): (Vec<_>, Vec<_>) = request
        .group_ids
        .into_iter()
        .partition(|id| authz.allows(AclOperation::Describe, Rt::Group, &id.0));
    let mut groups: Vec<DescribedGroup> = refused
        .into_iter()
        .map(|id| {
            DescribedGroup::default()
                .with_group_id(id)
                .with_error_code(ctx.code(&BrokerError::Unauthorized(Rt::Group)))
        })
        .collect();
    for id in allowed {
        // Kafka answers an empty id INVALID_GROUP_ID, without a message.
        if id.0.is_empty() {
            groups.push(
                DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::InvalidGroupId(String::new()))),
            );
            continue;
        }
        let described = match ctx.broker.coordinator.share_describe(&id.0) {
            Err(e) => DescribedGroup::default()
                .with_group_id(id)
                .with_error_code(ctx.code(&BrokerError::Coordinator(e))),
            Ok(mut d) => {
                if d.error_code == 0 && request.include_authorized_operations {
                    d.authorized_operations = operations(&authz, ResourceType::Group, &id.0);
                }
                d
            }
        };
        groups.push(described);
    }
    for g in groups.iter_mut() {
        if hides_topics(g, &authz) {
            *g = DescribedGroup::default()
                .with_group_id(g.group_id.clone())
                .with_error_code(ctx.code(&BrokerError::Unauthorized(Rt::Topic)))
                .with_error_message(Some(str_bytes(
                    "The group has described topic(s) that the client is not authorized to describe.",
                )));
        }
    }
    ShareGroupDescribeResponse::default().with_groups(groups)
}

/// Does a member's assignment name a topic `authz` may not DESCRIBE?
fn hides_topics(d: &DescribedGroup, authz: &Authz) -> bool {
    d.members.iter().any(|m| {
        m.assignment
            .topic_partitions
            .iter()
            .any(|t| !authz.allows(AclOperation::Describe, Rt::Topic, &t.topic_name.0))
    })
}
