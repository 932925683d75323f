//! The broker's one error type and the one place where it becomes a Kafka error code.
//!
//! Handlers say *what* went wrong as a [`BrokerError`]; [`kafka_error`] says which code
//! Kafka answers for it, per API and API version, as one exhaustive `match`: a new variant
//! (or a new `LogError` / `TopicError` variant) must decide its code here. The group and
//! transaction coordinators speak Kafka's error vocabulary directly, as Kafka's own
//! coordinators do; their answers travel as [`BrokerError::Coordinator`] and pass through
//! unchanged except where an API translates them (Produce's transaction verification).
//!
//! Internal failures have one rule: a blocking task that failed (panicked or was cancelled,
//! see [`crate::dispatch::blocking`]) is [`BrokerError::Internal`], answered as
//! UNKNOWN_SERVER_ERROR on each item of the response that has its own code (partition,
//! topic, group, resource), else on the whole response. The connection is closed only where
//! Kafka closes it: framing and decoding failures, and acks=0 produce errors.
//!
//! Which *message* accompanies a code stays with the handler (Kafka's texts differ per API);
//! a variant that carries a message displays exactly that text.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::ResponseError;
use skiff_log::LogError;
use skiff_protocol::Api;
use uuid::Uuid;

use crate::topics::TopicError;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// A topic named the way this API version names topics was not found: by id for
    /// Produce and Fetch v13+, else by name.
    #[error("unknown topic {0}")]
    UnknownTopic(String),
    /// A topic looked up by the id the request gave was not found.
    #[error("unknown topic id {0}")]
    UnknownTopicId(Uuid),
    /// The topic exists (or is unknown by name) but not this partition.
    #[error("unknown partition {topic}-{partition}")]
    UnknownPartition { topic: String, partition: i32 },
    /// The client knows a newer leader epoch than the partition's (never re-elected).
    #[error("leader epoch {0} is newer than the partition's")]
    UnknownLeaderEpoch(i32),
    /// A partition's log refused or failed.
    #[error(transparent)]
    Storage(#[from] LogError),
    /// The topic registry refused or failed.
    #[error(transparent)]
    Topic(#[from] TopicError),
    /// A write the answer depends on did not become durable, or the log dir could not be
    /// read (the text says what and why).
    #[error("{0}")]
    StorageFailure(String),
    /// The request breaks one of the API's rules; the text is Kafka's message for it.
    #[error("{0}")]
    InvalidRequest(String),
    /// A config name or value is refused; the text is Kafka's message for it.
    #[error("{0}")]
    InvalidConfig(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    /// The client's controller mutation quota is in debt (KIP-599; strict versions only).
    #[error("The throttling quota has been exceeded.")]
    ThrottlingQuotaExceeded,
    /// The topic's cleanup policy forbids the operation (DeleteRecords on compact-only).
    #[error("operation refused by the topic's cleanup policy")]
    PolicyViolation,
    #[error("topic deletion is disabled (delete.topic.enable=false)")]
    TopicDeletionDisabled,
    /// Produce: `acks` other than -1, 0 or 1.
    #[error("invalid acks value {0}")]
    InvalidRequiredAcks(i16),
    /// Produce: a batch that breaks the request's own rules (one batch per partition).
    #[error("{0}")]
    InvalidRecord(String),
    /// Produce: zstd before v7 (KIP-110).
    #[error("zstd compression needs produce v7 or later")]
    UnsupportedCompression,
    /// Produce: transactional records without a transactional id.
    #[error("transactional records without a transactional id")]
    NoTransactionalId,
    /// Produce: transactional batches of several producers in one request.
    #[error("Transactional records contained more than one producer ID")]
    MixedProducers,
    /// The partition is not in the producer's ongoing transaction.
    #[error("Partition was not added to the transaction")]
    NotInTransaction,
    /// OffsetCommit / TxnOffsetCommit: metadata longer than `offset.metadata.max.bytes`.
    #[error("offset metadata of {len} bytes exceeds {max}")]
    OffsetMetadataTooLarge { len: usize, max: usize },
    /// OffsetFetch with require_stable: an offset pending in an undecided transaction.
    #[error("offset pending in an undecided transaction")]
    UnstableOffset,
    /// Fetch v7+: an incremental fetch naming a session the broker does not hold (never
    /// created, closed, or evicted).
    #[error("fetch session {0} not found")]
    UnknownFetchSession(i32),
    /// Fetch v7+: an incremental fetch whose epoch is not the one its session expects.
    #[error("invalid fetch session epoch {0}")]
    InvalidFetchSessionEpoch(i32),
    /// Fetch v7+: an incremental fetch naming topics by id in a session made with names, or
    /// the other way round (the request's version decides which).
    #[error("fetch session {0} does not use topic ids the way this request version does")]
    FetchSessionTopicIdMismatch(i32),
    /// Fetch by topic id: a session partition's topic name now belongs to a topic with
    /// another id (deleted and created again).
    #[error("topic {topic} no longer has the id {id} the fetch session knows")]
    InconsistentTopicId { topic: String, id: Uuid },
    /// ListOffsets: a negative (special) timestamp this version does not define.
    #[error("special timestamp {0} is not defined at this version")]
    UnknownSpecialTimestamp(i64),
    /// An empty or blank group id; the text is Kafka's message where it sends one.
    #[error("{0}")]
    InvalidGroupId(String),
    #[error("Group {0} not found.")]
    GroupNotFound(String),
    #[error("transactional id {0} not found")]
    TransactionalIdNotFound(String),
    #[error("{0}")]
    InvalidRegex(String),
    #[error("{0}")]
    UnsupportedAssignor(String),
    #[error("{0}")]
    UnsupportedEndpointType(String),
    /// The requester may not perform the operation on a resource of this type (see
    /// [`crate::authz`]).
    #[error("{0:?} authorization failed")]
    Unauthorized(skiff_acl::ResourceType),
    /// An ACL API without an authorizer.
    #[error("{0}")]
    NoAuthorizer(&'static str),
    /// Kafka does not try the rest of a batch once one item failed (AddPartitionsToTxn).
    #[error("not attempted: another item of the request failed")]
    NotAttempted,
    /// The coordinator went away while the request waited on it.
    #[error("coordinator not available")]
    CoordinatorUnavailable,
    /// A coordinator's answer, in Kafka's vocabulary.
    #[error("coordinator answered {0:?}")]
    Coordinator(ResponseError),
    /// A share session refused the request (ShareFetch / ShareAcknowledge, whole request).
    #[error("share session: {0:?}")]
    ShareSession(crate::share::SessionError),
    /// A share partition refused an acknowledgement or could not start.
    #[error(transparent)]
    Share(#[from] skiff_coordinator::share::ShareError),
    /// `__share_group_state` could not be opened, written or made durable.
    #[error(transparent)]
    ShareState(#[from] skiff_coordinator::share_state::ShareStateError),
    /// The member is not a member of the share group (see `share::membership`).
    #[error("member {0} is not in the share group")]
    UnknownMember(String),
    /// A failure inside the broker (a blocking task that panicked).
    #[error("{0}")]
    Internal(String),
}

/// The Kafka error for `err` in a response to `api` (an `ApiKey` or a `skiff_protocol::Api`)
/// at `version`. Exhaustive on purpose.
pub fn kafka_error(api: impl Into<Api>, version: i16, err: &BrokerError) -> ResponseError {
    use BrokerError as E;
    let api: Api = api.into();
    match err {
        // Produce and Fetch name topics by id from v13 (KIP-516).
        E::UnknownTopic(_) => match api.kafka() {
            Some(ApiKey::Produce | ApiKey::Fetch) if version >= 13 => ResponseError::UnknownTopicId,
            _ => ResponseError::UnknownTopicOrPartition,
        },
        E::UnknownTopicId(_) => ResponseError::UnknownTopicId,
        E::UnknownPartition { .. } => ResponseError::UnknownTopicOrPartition,
        E::UnknownLeaderEpoch(_) => ResponseError::UnknownLeaderEpoch,
        E::Storage(e) | E::Topic(TopicError::Storage(e)) => match e {
            LogError::CorruptMessage(..) => ResponseError::CorruptMessage,
            LogError::InvalidRecord { .. } => ResponseError::InvalidRecord,
            LogError::MessageTooLarge { .. } => ResponseError::MessageTooLarge,
            LogError::RecordListTooLarge { .. } => ResponseError::RecordListTooLarge,
            LogError::InvalidTimestamp { .. } => ResponseError::InvalidTimestamp,
            LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
            // Kafka 4 (KIP-724): produce v3+ may only carry magic 2 batches -> INVALID_RECORD.
            LogError::UnsupportedMagic(..) => ResponseError::InvalidRecord,
            LogError::Io { .. }
            | LogError::Offline(..)
            | LogError::SegmentGone(..)
            | LogError::Aborted(..)
            | LogError::DirLocked(..)
            | LogError::MalformedFile { .. } => ResponseError::KafkaStorageError,
            LogError::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber,
            // Kafka 2.7+ answers a produce from a stale epoch with INVALID_PRODUCER_EPOCH (the
            // client aborts and retries) rather than the fatal PRODUCER_FENCED.
            LogError::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch,
            // Kafka's UnifiedLog: "Record was not part of an ongoing transaction".
            LogError::InvalidTxnState { .. } => ResponseError::InvalidTxnState,
        },
        E::Topic(e) => match e {
            TopicError::InvalidName(..) => ResponseError::InvalidTopicException,
            TopicError::AlreadyExists(..) => ResponseError::TopicAlreadyExists,
            TopicError::Unknown(..) => ResponseError::UnknownTopicOrPartition,
            TopicError::InvalidPartitions(..) => ResponseError::InvalidPartitions,
            TopicError::InvalidConfig(..) => ResponseError::InvalidConfig,
            // A storage error is mapped by the log's rows above; this arm is never reached.
            TopicError::Storage(_) | TopicError::Registry { .. } => {
                ResponseError::KafkaStorageError
            }
        },
        E::StorageFailure(_) => ResponseError::KafkaStorageError,
        E::InvalidRequest(_) => ResponseError::InvalidRequest,
        E::InvalidConfig(_) => ResponseError::InvalidConfig,
        E::InvalidPartitions(_) => ResponseError::InvalidPartitions,
        E::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
        E::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
        E::ThrottlingQuotaExceeded => ResponseError::ThrottlingQuotaExceeded,
        E::PolicyViolation => ResponseError::PolicyViolation,
        E::TopicDeletionDisabled => ResponseError::TopicDeletionDisabled,
        E::InvalidRequiredAcks(_) => ResponseError::InvalidRequiredAcks,
        E::InvalidRecord(_) => ResponseError::InvalidRecord,
        E::UnsupportedCompression => ResponseError::UnsupportedCompressionType,
        // KafkaApis: transactional records need a transactional id the client may use.
        E::NoTransactionalId => ResponseError::TransactionalIdAuthorizationFailed,
        E::MixedProducers => ResponseError::InvalidProducerIdMapping,
        // Produce v11+ clients know TRANSACTION_ABORTABLE; older ones get INVALID_TXN_STATE.
        // AddPartitionsToTxn's verify_only check (KIP-890) answers TRANSACTION_ABORTABLE.
        E::NotInTransaction => match api.kafka() {
            Some(ApiKey::Produce) if version >= 11 => ResponseError::TransactionAbortable,
            Some(ApiKey::AddPartitionsToTxn) => ResponseError::TransactionAbortable,
            _ => ResponseError::InvalidTxnState,
        },
        E::OffsetMetadataTooLarge { .. } => ResponseError::OffsetMetadataTooLarge,
        E::UnstableOffset => ResponseError::UnstableOffsetCommit,
        E::UnknownFetchSession(_) => ResponseError::FetchSessionIdNotFound,
        E::InvalidFetchSessionEpoch(_) => ResponseError::InvalidFetchSessionEpoch,
        E::FetchSessionTopicIdMismatch(_) => ResponseError::FetchSessionTopicIdError,
        E::InconsistentTopicId { .. } => ResponseError::InconsistentTopicId,
        E::UnknownSpecialTimestamp(_) => ResponseError::UnsupportedVersion,
        E::InvalidGroupId(_) => ResponseError::InvalidGroupId,
        E::GroupNotFound(_) => ResponseError::GroupIdNotFound,
        E::TransactionalIdNotFound(_) => ResponseError::TransactionalIdNotFound,
        E::InvalidRegex(_) => ResponseError::InvalidRegularExpression,
        E::UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
        E::UnsupportedEndpointType(_) => ResponseError::UnsupportedEndpointType,
        E::Unauthorized(rt) => crate::authz::unauthorized(*rt),
        E::NoAuthorizer(_) => ResponseError::SecurityDisabled,
        E::NotAttempted => ResponseError::OperationNotAttempted,
        E::CoordinatorUnavailable => ResponseError::CoordinatorNotAvailable,
        // Produce: the transaction coordinator's answer while verifying a transactional
        // batch, translated as Kafka 4.4's ReplicaManager / AddPartitionsToTxnManager do.
        E::Coordinator(e) if api == ApiKey::Produce => match e {
            // Producers expect INVALID_PRODUCER_EPOCH here.
            ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch,
            // Produce v12+ clients (KIP-890 part 2) retry CONCURRENT_TRANSACTIONS themselves.
            ResponseError::ConcurrentTransactions if version >= 12 => {
                ResponseError::ConcurrentTransactions
            }
            // Retriable coordinator errors become one every client retries without a
            // metadata refresh.
            ResponseError::ConcurrentTransactions
            | ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator => ResponseError::NotEnoughReplicas,
            other => *other,
        },
        // TxnOffsetCommit v5 adds the offsets partition through the same path as Produce
        // v12+ (Kafka's AddPartitionsToTxnManager), which reports a fenced producer so.
        E::Coordinator(ResponseError::ProducerFenced)
            if api == ApiKey::TxnOffsetCommit && version >= 5 =>
        {
            ResponseError::InvalidProducerEpoch
        }
        E::Coordinator(e) => *e,
        E::ShareSession(e) => match e {
            crate::share::SessionError::NotFound => ResponseError::ShareSessionNotFound,
            crate::share::SessionError::InvalidEpoch => ResponseError::InvalidShareSessionEpoch,
            crate::share::SessionError::LimitReached => ResponseError::ShareSessionLimitReached,
            // KafkaApis: acknowledgements on the request that opens a session.
            crate::share::SessionError::AcksOnInitial => ResponseError::InvalidRequest,
        },
        E::Share(e) => e.response_error(),
        E::ShareState(e) => match e {
            // A share partition whose state cannot be read answers as Kafka's failed
            // initialisation does.
            skiff_coordinator::share_state::ShareStateError::Corrupt { .. } => {
                ResponseError::UnknownServerError
            }
            other => other.response_error(),
        },
        E::UnknownMember(_) => ResponseError::UnknownMemberId,
        E::Internal(_) => ResponseError::UnknownServerError,
    }
}

/// A coordinator's answer (`?` on coordinator calls).
impl From<ResponseError> for BrokerError {
    fn from(e: ResponseError) -> BrokerError {
        BrokerError::Coordinator(e)
    }
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
