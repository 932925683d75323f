//! FindCoordinator: this node coordinates every consumer group (key type 0) and every
//! transactional id (key type 1). v0-3 ask for one key, v4+ for a batch.
//!
//! With an authorizer (checked first, as Kafka 4): a group key needs GROUP DESCRIBE, a
//! transactional id TRANSACTIONAL_ID DESCRIBE, else GROUP / TRANSACTIONAL_ID
//! _AUTHORIZATION_FAILED with Kafka's default message and no node.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::metadata::advertised;
use super::str_bytes;
use crate::authz::{unauthorized_message, AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

/// Advertises the listener the request came in on (see [`advertised`]).
pub async fn handle(ctx: &RequestContext, request: FindCoordinatorRequest) -> Reply {
    Reply::Respond(ResponseKind::FindCoordinator(find(ctx, request)))
}

fn find(ctx: &RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let (broker, version) = (&ctx.broker, ctx.version());
    let (host, port) = advertised(broker, &ctx.listener);
    let authz = ctx.authz();
    let answer = |key: &StrBytes| -> Coordinator {
        let resource = match request.key_type {
            GROUP => Some(ResourceType::Group),
            TRANSACTION => Some(ResourceType::TransactionalId),
            _ => None,
        };
        let denied = resource.filter(|rt| !authz.allows(AclOperation::Describe, *rt, key));
        let error = if let Some(rt) = denied {
            Some(BrokerError::Unauthorized(rt))
        } else if (request.key_type != GROUP && request.key_type != TRANSACTION) || key.is_empty() {
            Some(BrokerError::InvalidRequest(
                "invalid coordinator key or key type".to_string(),
            ))
        } else {
            None
        };
        let c = Coordinator::default().with_key(key.clone());
        match error {
            None => c
                .with_node_id(BrokerId(broker.node_id()))
                .with_host(str_bytes(&host))
                .with_port(port),
            Some(e) => c
                .with_node_id(BrokerId(-1))
                .with_port(-1)
                .with_error_code(ctx.code(&e))
                .with_error_message(Some(str_bytes(&match e {
                    BrokerError::Unauthorized(rt) => unauthorized_message(rt).to_string(),
                    e => e.to_string(),
                }))),
        }
    };
    if version >= 4 {
        let coordinators = request.coordinator_keys.iter().map(answer).collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let c = answer(&request.key);
    let mut response = FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port);
    if version >= 1 {
        response.error_message = c.error_message;
    }
    response
}
