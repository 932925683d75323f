//! Who may send ShareFetch and ShareAcknowledge.
//!
//! Kafka's handlers check only that the member id is present and at most 36 characters; a
//! member the group does not have is not refused there. Membership is enforced through the
//! group coordinator instead: when a member leaves or expires, the records it held are
//! released (`share::listener`). Skiff does the same.
//!
//! Thread safety: pure functions.

use kafka_protocol::messages::GroupId;
use kafka_protocol::protocol::StrBytes;

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::errors::BrokerError;

/// Kafka's `isMemberIdValid`: non-empty and at most 36 characters (a UUID's text).
pub fn member_id_valid(member: &str) -> bool {
    !member.is_empty() && member.chars().count() <= 36
}

/// The checks ShareFetch and ShareAcknowledge make first, in Kafka's order: a group id
/// (INVALID_REQUEST), GROUP READ on it (GROUP_AUTHORIZATION_FAILED), a valid member id
/// (INVALID_REQUEST). Returns the group and member ids.
pub fn share_requester(
    authz: &Authz,
    group_id: Option<&GroupId>,
    member_id: Option<&StrBytes>,
) -> Result<(String, String), BrokerError> {
    let Some(group) = group_id.map(|g| g.0.to_string()) else {
        return Err(BrokerError::InvalidRequest(
            "Invalid group id in the request.".into(),
        ));
    };
    if !authz.allows(AclOperation::Read, ResourceType::Group, &group) {
        return Err(BrokerError::Unauthorized(ResourceType::Group));
    }
    let member = member_id.map(|m| m.to_string()).unwrap_or_default();
    if !member_id_valid(&member) {
        return Err(BrokerError::InvalidRequest(
            "Invalid member id in the request.".into(),
        ));
    }
    Ok((group, member))
}
