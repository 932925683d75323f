//! OffsetDelete: removes a group's committed offsets for partitions it no longer consumes
//! (GROUP_SUBSCRIBED_TO_TOPIC otherwise), writing tombstones before the answer.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: OffsetDeleteRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let code = move |e: ResponseError| {
        kafka_error(ApiKey::OffsetDelete, version, &BrokerError::Coordinator(e)).code()
    };
    Reply::Later(Box::pin(async move {
        let wanted: Vec<(String, i32)> = request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.0.to_string(), p.partition_index))
            })
            .collect();
        let response = match broker
            .coordinator
            .delete_offsets(&request.group_id.0, &wanted)
            .await
        {
            Err(e) => OffsetDeleteResponse::default().with_error_code(code(e)),
            Ok(results) => {
                let mut results = results.into_iter();
                let topics = request
                    .topics
                    .into_iter()
                    .map(|t| {
                        let partitions = t
                            .partitions
                            .iter()
                            .map(|p| {
                                let r = results.next().unwrap_or(Ok(()));
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(r.err().map_or(0, code))
                            })
                            .collect();
                        OffsetDeleteResponseTopic::default()
                            .with_name(t.name)
                            .with_partitions(partitions)
                    })
                    .collect();
                OffsetDeleteResponse::default().with_topics(topics)
            }
        };
        ResponseKind::OffsetDelete(response)
    }))
}
