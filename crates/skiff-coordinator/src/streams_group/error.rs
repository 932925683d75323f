//! What a streams group request can be refused with, and the one place it becomes a Kafka
//! error code.

use kafka_protocol::ResponseError;

/// A refused StreamsGroupHeartbeat. Nothing was changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamsGroupError {
    /// Malformed: blank ids, a join without topology or with tasks, tasks outside the
    /// topology, a changed topology at the same epoch.
    #[error("{0}")]
    InvalidRequest(String),
    /// The topology can never be configured (STREAMS_INVALID_TOPOLOGY).
    #[error("{0}")]
    InvalidTopology(String),
    /// No streams group has this id and the request does not join.
    #[error("Streams group {0} not found.")]
    GroupNotFound(String),
    /// The id belongs to a classic, consumer or share group (GROUP_ID_NOT_FOUND too).
    #[error("Group {0} is not a streams group.")]
    NotStreamsGroup(String),
    #[error("Member {member} is not a member of group {group}.")]
    UnknownMember { member: String, group: String },
    /// The member's epoch is neither its current one nor (with the tasks it was given then)
    /// the one before: it must drop its tasks and join again.
    #[error(
        "The streams group member has a {} member epoch ({received}) than the one known by \
         the group coordinator ({current}). The member must abandon all its partitions and \
         rejoin.",
        if received > current { "greater" } else { "smaller" }
    )]
    FencedEpoch { received: i32, current: i32 },
    /// `group.streams.max.size` members are already in the group.
    #[error("The streams group has reached its maximum capacity of {0} members.")]
    GroupFull(usize),
    /// The coordinator cannot serve the request (still loading `__consumer_offsets`).
    #[error("{0}")]
    Coordinator(ResponseError),
    /// A static member joins with an instance id another live member still holds.
    #[error("Static member {member} with instance id {instance} cannot join the group because the instance id is owned by member {owner}.")]
    UnreleasedInstanceId {
        member: String,
        instance: String,
        owner: String,
    },
}

impl StreamsGroupError {
    /// The Kafka error the request is answered with.
    pub fn response_error(&self) -> ResponseError {
        match self {
            StreamsGroupError::InvalidRequest(_) => ResponseError::InvalidRequest,
            StreamsGroupError::InvalidTopology(_) => ResponseError::StreamsInvalidTopology,
            StreamsGroupError::GroupNotFound(_) | StreamsGroupError::NotStreamsGroup(_) => {
                ResponseError::GroupIdNotFound
            }
            StreamsGroupError::UnknownMember { .. } => ResponseError::UnknownMemberId,
            StreamsGroupError::FencedEpoch { .. } => ResponseError::FencedMemberEpoch,
            StreamsGroupError::GroupFull(_) => ResponseError::GroupMaxSizeReached,
            StreamsGroupError::UnreleasedInstanceId { .. } => ResponseError::UnreleasedInstanceId,
            StreamsGroupError::Coordinator(e) => *e,
        }
    }

    pub fn code(&self) -> i16 {
        self.response_error().code()
    }
}
