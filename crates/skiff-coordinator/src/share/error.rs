//! What can go wrong on a share partition, and the one place it becomes a Kafka error code.

use kafka_protocol::ResponseError;

/// A share-partition operation that was refused. Nothing was changed when one is returned:
/// acknowledgements are applied all-or-nothing per partition, as Kafka rolls back the whole
/// partition's batch list when one of its batches fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// A batch reaches past the records in flight, or names an unknown acknowledge type.
    #[error("{0}")]
    InvalidRequest(String),
    /// The acknowledgement batches are malformed (Kafka's request-level checks): a batch whose
    /// first offset is after its last, batches out of order, an empty or wrongly sized list of
    /// acknowledge types, an unknown type, a RENEW the request did not announce. Answered
    /// INVALID_REQUEST without a message to the client, as Kafka's handler does.
    #[error("malformed acknowledgement batches: {0}")]
    MalformedBatches(String),
    /// The records exist but this member may not acknowledge them: not acquired, acquired by
    /// another member, or renewing when the group has renewals switched off. Both messages
    /// are Kafka's own words, sent to the client as the partition's error message.
    #[error("{0}")]
    InvalidRecordState(String),
    /// `share.auto.offset.reset` could not be resolved to an offset (by_duration found no
    /// record at or after the timestamp).
    #[error("no offset available to start the share partition from: {0}")]
    OffsetNotAvailable(String),
    /// Persisted state that cannot be a share partition's (Kafka fails the partition and
    /// answers UNKNOWN_SERVER_ERROR until it is reloaded).
    #[error("corrupt share partition state: {0}")]
    CorruptState(String),
}

impl ShareError {
    /// The Kafka error this is answered with (ShareFetch AcknowledgeErrorCode, ShareAcknowledge
    /// ErrorCode, ShareFetch partition ErrorCode).
    pub fn response_error(&self) -> ResponseError {
        match self {
            ShareError::InvalidRequest(_) | ShareError::MalformedBatches(_) => {
                ResponseError::InvalidRequest
            }
            ShareError::InvalidRecordState(_) => ResponseError::InvalidRecordState,
            ShareError::OffsetNotAvailable(_) => ResponseError::OffsetNotAvailable,
            ShareError::CorruptState(_) => ResponseError::UnknownServerError,
        }
    }
}

impl ShareError {
    /// The error message sent with the code, as Kafka sends one: the share partition's own
    /// refusals carry Kafka's words; the request-level checks and internal failures none.
    pub fn client_message(&self) -> Option<String> {
        match self {
            ShareError::InvalidRequest(m) | ShareError::InvalidRecordState(m) => Some(m.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_kafka_codes() {
        assert_eq!(
            ShareError::InvalidRequest("x".into())
                .response_error()
                .code(),
            42
        );
        assert_eq!(
            ShareError::InvalidRecordState("x".into())
                .response_error()
                .code(),
            121
        );
        assert_eq!(
            ShareError::OffsetNotAvailable("x".into())
                .response_error()
                .code(),
            78
        );
    }
}
