//! What can go wrong with durable share state, and the one place it becomes a Kafka error code.

use kafka_protocol::ResponseError;

#[derive(Debug, thiserror::Error)]
pub enum ShareStateError {
    /// Batches were written for a share partition that has no state yet (Kafka answers a
    /// WriteShareGroupState for it with INVALID_REQUEST: state starts with a snapshot).
    #[error("share partition {0} has no state to update")]
    Uninitialized(String),
    /// The write carries an older state epoch than the stored state (the share partition was
    /// reset since the writer loaded it).
    #[error("share partition {key}: state epoch {written} is older than the stored {stored}")]
    FencedStateEpoch {
        key: String,
        written: i32,
        stored: i32,
    },
    /// `__share_group_state` could not be created or appended to.
    #[error("__share_group_state: {0}")]
    Storage(String),
    /// Replay met bytes that are not share state. Replay stops rather than guess: state built
    /// from a partly read topic could hand out records that were already acknowledged.
    #[error("__share_group_state partition {partition} at offset {offset}: {reason}")]
    Corrupt {
        partition: i32,
        offset: i64,
        reason: String,
    },
}

impl ShareStateError {
    pub(super) fn corrupt(partition: i32, offset: i64, e: impl std::fmt::Display) -> Self {
        ShareStateError::Corrupt {
            partition,
            offset,
            reason: e.to_string(),
        }
    }

    /// The Kafka error a share-state request (Initialize/Read/Write/DeleteShareGroupState) is
    /// answered with.
    pub fn response_error(&self) -> ResponseError {
        match self {
            ShareStateError::Uninitialized(_) => ResponseError::InvalidRequest,
            ShareStateError::FencedStateEpoch { .. } => ResponseError::FencedStateEpoch,
            ShareStateError::Storage(_) => ResponseError::KafkaStorageError,
            ShareStateError::Corrupt { .. } => ResponseError::CoordinatorNotAvailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_kafka_codes() {
        assert_eq!(
            ShareStateError::Uninitialized("k".into())
                .response_error()
                .code(),
            42
        );
        let fenced = ShareStateError::FencedStateEpoch {
            key: "k".into(),
            written: 1,
            stored: 2,
        };
        assert_eq!(fenced.response_error().code(), 124);
        assert_eq!(
            ShareStateError::Storage("x".into()).response_error().code(),
            56
        );
        assert_eq!(
            ShareStateError::corrupt(0, 1, "x").response_error().code(),
            15
        );
    }
}
