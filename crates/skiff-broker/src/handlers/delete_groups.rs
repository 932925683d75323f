//! DeleteGroups: removes empty groups, writing tombstones for their offsets and metadata
//! (durable before the answer). Groups with members get NON_EMPTY_GROUP.

use std::sync::Arc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, ResponseKind};

use super::result_code;
use crate::broker::Broker;
use crate::dispatch::Reply;

pub fn handle(broker: &Arc<Broker>, _version: i16, request: DeleteGroupsRequest) -> Reply {
    let broker = broker.clone();
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
                            .with_error_code(result_code(&r))
                    })
                    .collect(),
            ),
        )
    }))
}
