//! OffsetDelete: removes a group's committed offsets for partitions it no longer consumes
//! (GROUP_SUBSCRIBED_TO_TOPIC otherwise), writing tombstones before the answer.
//!
//! With an authorizer (Kafka 4's KafkaApis): GROUP DELETE, else GROUP_AUTHORIZATION_FAILED
//! for the request; each topic needs TOPIC READ, else its partitions answer
//! TOPIC_AUTHORIZATION_FAILED and keep their offsets.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: OffsetDeleteRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let code = move |e: ResponseError| {
        kafka_error(ApiKey::OffsetDelete, version, &BrokerError::Coordinator(e)).code()
    };
    let authz = ctx.authz();
    if !authz.allows(
        AclOperation::Delete,
        ResourceType::Group,
        &request.group_id.0,
    ) {
        let denied = kafka_error(
            ApiKey::OffsetDelete,
            version,
            &BrokerError::Unauthorized(ResourceType::Group),
        );
        return Reply::Respond(ResponseKind::OffsetDelete(
            OffsetDeleteResponse::default().with_error_code(denied.code()),
        ));
    }
    let readable: Vec<bool> = request
        .topics
        .iter()
        .map(|t| authz.allows(AclOperation::Read, ResourceType::Topic, &t.name.0))
        .collect();
    let topic_denied = kafka_error(
        ApiKey::OffsetDelete,
        version,
        &BrokerError::Unauthorized(ResourceType::Topic),
    )
    .code();
    Reply::Later(Box::pin(async move {
        let wanted: Vec<(String, i32)> = request
            .topics
            .iter()
            .zip(&readable)
            .filter(|(_, ok)| **ok)
            .flat_map(|(t, _)| {
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
                    .zip(readable)
                    .map(|(t, ok)| {
                        let partitions = t
                            .partitions
                            .iter()
                            .map(|p| {
                                let error = if ok {
                                    results.next().unwrap_or(Ok(())).err().map_or(0, code)
                                } else {
                                    topic_denied
                                };
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(error)
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
