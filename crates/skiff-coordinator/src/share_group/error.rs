//! What a share group request can be refused with, and the one place it becomes a Kafka
//! error code.

use kafka_protocol::ResponseError;

/// A refused ShareGroupHeartbeat or ShareGroupDescribe. Nothing was changed when one is
/// returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareGroupError {
    /// The request is malformed: a blank member id, group id or rack id, a join without
    /// subscribed topic names, or a member epoch below -1.
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// No share group has this id: it does not exist (and the request does not join), or the
    /// id belongs to a consumer or classic group. Kafka does not convert between protocols,
    /// and answers GROUP_ID_NOT_FOUND, not INCONSISTENT_GROUP_PROTOCOL, for the latter.
    #[error("Share group {0} not found.")]
    GroupNotFound(String),
    /// The id belongs to a consumer or classic group (GROUP_ID_NOT_FOUND too, with Kafka's
    /// own message).
    #[error("Group {0} is not a share group.")]
    NotShareGroup(String),
    /// The member id is not in the group (and the request does not join).
    #[error("Member {member} is not a member of group {group}.")]
    UnknownMember { member: String, group: String },
    /// The member's epoch is neither its current one nor the one before it: it must drop
    /// its assignment and join again with epoch 0.
    #[error(
        "The share group member has a {} member epoch ({received}) than the one known by the \
         group coordinator ({current}). The member must abandon all its partitions and rejoin.",
        if received > current { "greater" } else { "smaller" }
    )]
    FencedEpoch { received: i32, current: i32 },
    /// `group.share.max.size` members are already in the group.
    #[error("the share group has reached its maximum capacity of {0} members")]
    GroupFull(usize),
    /// DeleteGroups on a share group that still has members.
    #[error("the share group is not empty")]
    NotEmpty,
}

impl ShareGroupError {
    /// The Kafka error the request is answered with.
    pub fn response_error(&self) -> ResponseError {
        match self {
            ShareGroupError::InvalidRequest(_) => ResponseError::InvalidRequest,
            ShareGroupError::GroupNotFound(_) | ShareGroupError::NotShareGroup(_) => {
                ResponseError::GroupIdNotFound
            }
            ShareGroupError::UnknownMember { .. } => ResponseError::UnknownMemberId,
            ShareGroupError::FencedEpoch { .. } => ResponseError::FencedMemberEpoch,
            ShareGroupError::GroupFull(_) => ResponseError::GroupMaxSizeReached,
            ShareGroupError::NotEmpty => ResponseError::NonEmptyGroup,
        }
    }

    pub fn code(&self) -> i16 {
        self.response_error().code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_kafka_codes() {
        let cases = [
            (ShareGroupError::InvalidRequest("x"), 42),
            (ShareGroupError::GroupNotFound("g".into()), 69),
            (ShareGroupError::NotShareGroup("g".into()), 69),
            (
                ShareGroupError::UnknownMember {
                    member: "m".into(),
                    group: "g".into(),
                },
                25,
            ),
            (
                ShareGroupError::FencedEpoch {
                    received: 3,
                    current: 2,
                },
                110,
            ),
            (ShareGroupError::GroupFull(200), 81),
            (ShareGroupError::NotEmpty, 68),
        ];
        for (e, code) in cases {
            assert_eq!(e.code(), code, "{e}");
        }
    }
}
