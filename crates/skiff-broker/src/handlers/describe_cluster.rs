//! DescribeCluster: this one broker, which is also its own controller, and the cluster's
//! authorized operations (from [`crate::acl_operations`]) when asked for. As on a Kafka 4
//! broker, an authorizer adds no check here (only the controller's DescribeCluster needs
//! CLUSTER ALTER); the operations come from it.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, ResponseKind,
};

use super::metadata::advertised;
use super::str_bytes;
use crate::acl_operations::{operations, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

/// KIP-919 endpoint types.
const BROKERS: i8 = 1;
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

/// Advertises the listener the request came in on (see [`advertised`]).
pub async fn handle(ctx: &RequestContext, request: DescribeClusterRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let mut response = DescribeClusterResponse::default()
        .with_endpoint_type(BROKERS)
        .with_cluster_id(str_bytes(&broker.cluster_id))
        .with_controller_id(BrokerId(broker.node_id()))
        .with_cluster_authorized_operations(OPERATIONS_NOT_REQUESTED);
    if version >= 1 && request.endpoint_type != BROKERS {
        // A broker does not answer for controller endpoints (Kafka does the same).
        let refused = BrokerError::UnsupportedEndpointType(
            "The target broker only supports broker endpoints".to_string(),
        );
        return Reply::Respond(ResponseKind::DescribeCluster(
            response
                .with_endpoint_type(request.endpoint_type)
                .with_error_code(ctx.code(&refused))
                .with_error_message(Some(str_bytes(&refused.to_string()))),
        ));
    }
    if request.include_cluster_authorized_operations {
        response.cluster_authorized_operations =
            operations(&ctx.authz(), ResourceType::Cluster, "kafka-cluster");
    }
    let (host, port) = advertised(broker, &ctx.listener);
    response.brokers = vec![DescribeClusterBroker::default()
        .with_broker_id(BrokerId(broker.node_id()))
        .with_host(str_bytes(&host))
        .with_port(port)];
    Reply::Respond(ResponseKind::DescribeCluster(response))
}
