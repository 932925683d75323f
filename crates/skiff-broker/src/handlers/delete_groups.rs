//! DeleteGroups: removes empty groups, writing tombstones for their offsets and metadata
//! (durable before the answer). Groups with members get NON_EMPTY_GROUP.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, ResponseKind};

use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: DeleteGroupsRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    Reply::Later(Box::pin(async move {
        let ids: Vec<String> = request
            .groups_names
            .iter()
            .map(|g| g.0.to_string())
            .collect();
        let results = broker.coordinator.delete_groups(&ids).await;
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
