//! Heartbeat: keeps a member's session alive and tells it when a rebalance has started.

use std::sync::Arc;

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::broker::Broker;

pub fn handle(broker: &Arc<Broker>, _version: i16, request: HeartbeatRequest) -> HeartbeatResponse {
    let instance = request.group_instance_id.as_ref().map(|s| s.to_string());
    let error = broker.coordinator.heartbeat(
        &request.group_id.0,
        &request.member_id,
        instance.as_deref(),
        request.generation_id,
    );
    HeartbeatResponse::default().with_error_code(super::result_code(&error))
}
