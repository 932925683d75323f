//! FindCoordinator: this node coordinates every consumer group (key type 0) and every
//! transactional id (key type 1). v0-3 ask for one key, v4+ for a batch.
//!
//! With an authorizer (checked first, as Kafka 4): a group key needs GROUP DESCRIBE, a
//! transactional id TRANSACTIONAL_ID DESCRIBE, else GROUP / TRANSACTIONAL_ID
//! _AUTHORIZATION_FAILED with Kafka's default message and no node.
//!
//! As Kafka's, the first FindCoordinator that finds a coordinator creates its internal topic
//! (`__consumer_offsets` for groups, `__transaction_state` for transactional ids); a broker
//! starts without them. If creating it fails, the keys get COORDINATOR_NOT_AVAILABLE, which
//! clients retry.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::metadata::advertised;
use super::str_bytes;
use crate::authz::{unauthorized_message, AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

/// Advertises the listener the request came in on (see [`advertised`]).
pub async fn handle(ctx: &RequestContext, request: FindCoordinatorRequest) -> Reply {
    let key_type = request.key_type;
    let mut response = find(ctx, request);
    if found_any(&response, ctx.version()) {
        if let Err(e) = ensure_internal_topic(ctx, key_type).await {
            tracing::warn!(key_type, error = %e, "creating the coordinator's internal topic failed");
            unavailable(ctx, &mut response);
        }
    }
    Reply::Respond(ResponseKind::FindCoordinator(response))
}

/// Whether some key was answered with this node (no error).
fn found_any(response: &FindCoordinatorResponse, version: i16) -> bool {
    if version >= 4 {
        response.coordinators.iter().any(|c| c.error_code == 0)
    } else {
        response.error_code == 0
    }
}

/// Creates the internal topic of `key_type` if it does not exist yet (off the runtime's
/// workers: creating writes 50 empty partitions).
async fn ensure_internal_topic(ctx: &RequestContext, key_type: i8) -> Result<(), String> {
    let broker = ctx.broker.clone();
    blocking(move || match key_type {
        GROUP => broker.coordinator.ensure_offsets_topic(),
        TRANSACTION => broker.txn.ensure_state_topic(),
        _ => Ok(()),
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Every key answered with this node becomes COORDINATOR_NOT_AVAILABLE (no node).
fn unavailable(ctx: &RequestContext, response: &mut FindCoordinatorResponse) {
    let code = ctx.code(&BrokerError::CoordinatorUnavailable);
    let message = Some(str_bytes(
        "the coordinator's internal topic could not be created",
    ));
    if ctx.version() >= 4 {
        for c in response
            .coordinators
            .iter_mut()
            .filter(|c| c.error_code == 0)
        {
            c.error_code = code;
            c.error_message = message.clone();
            c.node_id = BrokerId(-1);
            c.host = str_bytes("");
            c.port = -1;
        }
    } else {
        response.error_code = code;
        response.node_id = BrokerId(-1);
        response.host = str_bytes("");
        response.port = -1;
        if ctx.version() >= 1 {
            response.error_message = message;
        }
    }
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
