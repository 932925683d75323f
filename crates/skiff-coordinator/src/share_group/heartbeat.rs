//! ShareGroupHeartbeat v1 on the wire: the request checks Kafka makes before touching any
//! group, and the response built from a result or an error.

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use super::assignor::TopicAssignment;
use super::error::ShareGroupError;
use super::group::{Heartbeat, HeartbeatResult, LEAVE_EPOCH};

/// What the request asks, once it has passed [`validate`].
pub enum Request {
    /// Member epoch -1.
    Leave { member_id: String },
    /// Member epoch 0 (join) or above.
    Beat(Heartbeat),
}

/// Kafka's request checks, in its order: member id, group id and rack id must not be blank
/// (Kafka trims, and does not require the member id to be a UUID even though its client
/// always sends one); a join must name at least one topic; no epoch below -1.
pub fn validate(
    req: &ShareGroupHeartbeatRequest,
    client_id: &str,
    client_host: &str,
) -> Result<Request, ShareGroupError> {
    if req.member_id.trim().is_empty() {
        return Err(ShareGroupError::InvalidRequest("MemberId can't be empty."));
    }
    if req.group_id.0.trim().is_empty() {
        return Err(ShareGroupError::InvalidRequest("GroupId can't be empty."));
    }
    if req.rack_id.as_ref().is_some_and(|r| r.trim().is_empty()) {
        return Err(ShareGroupError::InvalidRequest("RackId can't be empty."));
    }
    if req.member_epoch == 0 {
        if req
            .subscribed_topic_names
            .as_ref()
            .is_none_or(Vec::is_empty)
        {
            return Err(ShareGroupError::InvalidRequest(
                "SubscribedTopicNames must be set in first request.",
            ));
        }
    } else if req.member_epoch < LEAVE_EPOCH {
        return Err(ShareGroupError::InvalidRequest("MemberEpoch is invalid."));
    }
    let member_id = req.member_id.to_string();
    if req.member_epoch == LEAVE_EPOCH {
        return Ok(Request::Leave { member_id });
    }
    Ok(Request::Beat(Heartbeat {
        member_id,
        member_epoch: req.member_epoch,
        rack_id: req.rack_id.as_ref().map(ToString::to_string),
        subscribed: req
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| n.0.to_string()).collect()),
        client_id: client_id.to_string(),
        client_host: client_host.to_string(),
    }))
}

/// The answer to a successful join or heartbeat.
pub fn response(
    result: HeartbeatResult,
    heartbeat_interval_ms: i32,
) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(StrBytes::from_string(result.member_id)))
        .with_member_epoch(result.member_epoch)
        .with_heartbeat_interval_ms(heartbeat_interval_ms)
        .with_assignment(result.assignment.map(|a| wire_assignment(&a)))
}

/// The answer to a leave: Kafka echoes the member id and epoch -1, and sets no heartbeat
/// interval.
pub fn leave_response(member_id: &str) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(StrBytes::from_string(member_id.to_string())))
        .with_member_epoch(LEAVE_EPOCH)
}

/// The answer to a refused request: the error code and its message, nothing else.
pub fn error_response(error: &ShareGroupError) -> ShareGroupHeartbeatResponse {
    // Kafka's error answers carry member epoch 0.
    ShareGroupHeartbeatResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(error.to_string())))
        .with_member_epoch(0)
}

fn wire_assignment(a: &TopicAssignment) -> Assignment {
    Assignment::default().with_topic_partitions(
        a.iter()
            .map(|(topic, ps)| {
                TopicPartitions::default()
                    .with_topic_id(*topic)
                    .with_partitions(ps.iter().copied().collect())
            })
            .collect(),
    )
}
