//! DeleteGroups: removes empty groups, writing tombstones for their offsets and metadata
//! (durable before the answer). Groups with members get NON_EMPTY_GROUP. With an authorizer
//! a group needs GROUP DELETE, else GROUP_AUTHORIZATION_FAILED (and is left alone).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, ResponseKind};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: DeleteGroupsRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let authz = ctx.authz();
    let allowed: Vec<bool> = request
        .groups_names
        .iter()
        .map(|g| authz.allows(AclOperation::Delete, ResourceType::Group, &g.0))
        .collect();
    Reply::Later(Box::pin(async move {
        let ids: Vec<String> = request
            .groups_names
            .iter()
            .zip(&allowed)
            .filter(|(_, ok)| **ok)
            .map(|(g, _)| g.0.to_string())
            .collect();
        let mut deleted = broker.coordinator.delete_groups(&ids).await.into_iter();
        let results: Vec<Result<(), kafka_protocol::ResponseError>> = allowed
            .iter()
            .map(|ok| {
                if *ok {
                    deleted.next().unwrap_or(Ok(()))
                } else {
                    Err(crate::authz::unauthorized(ResourceType::Group))
                }
            })
            .collect();
        ResponseKind::DeleteGroups(
            DeleteGroupsResponse::default().with_results(
                request
                    .groups_names
                    .into_iter()
                    .zip(results)
                    .map(|(id, r)| {
                        DeletableGroupResult::default()
                            .with_group_id(id)
                            .with_error_code(r.err().map_or(0, |e| {
                                kafka_error(
                                    ApiKey::DeleteGroups,
                                    version,
                                    &BrokerError::Coordinator(e),
                                )
                                .code()
                            }))
                    })
                    .collect(),
            ),
        )
    }))
}
