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
    /// Fetch v7+: a fetch session id (Skiff keeps no sessions).
    #[error("fetch session {0} not found")]
    UnknownFetchSession(i32),
    /// Fetch v7+: a session epoch other than initial or final.
    #[error("invalid fetch session epoch {0}")]
    InvalidFetchSessionEpoch(i32),
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
    /// A failure inside the broker (a blocking task that panicked).
    #[error("{0}")]
    Internal(String),
}

/// The Kafka error for `err` in a response to `api` at `version`. Exhaustive on purpose.
pub fn kafka_error(api: ApiKey, version: i16, err: &BrokerError) -> ResponseError {
    use BrokerError as E;
    match err {
        // Produce and Fetch name topics by id from v13 (KIP-516).
        E::UnknownTopic(_) => match api {
            ApiKey::Produce | ApiKey::Fetch if version >= 13 => ResponseError::UnknownTopicId,
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
        E::NotInTransaction => match api {
            ApiKey::Produce if version >= 11 => ResponseError::TransactionAbortable,
            ApiKey::AddPartitionsToTxn => ResponseError::TransactionAbortable,
            _ => ResponseError::InvalidTxnState,
        },
        E::OffsetMetadataTooLarge { .. } => ResponseError::OffsetMetadataTooLarge,
        E::UnstableOffset => ResponseError::UnstableOffsetCommit,
        E::UnknownFetchSession(_) => ResponseError::FetchSessionIdNotFound,
        E::InvalidFetchSessionEpoch(_) => ResponseError::InvalidFetchSessionEpoch,
        E::UnknownSpecialTimestamp(_) => ResponseError::UnsupportedVersion,
        E::InvalidGroupId(_) => ResponseError::InvalidGroupId,
        E::GroupNotFound(_) => ResponseError::GroupIdNotFound,
        E::TransactionalIdNotFound(_) => ResponseError::TransactionalIdNotFound,
        E::InvalidRegex(_) => ResponseError::InvalidRegularExpression,
        E::UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
        E::UnsupportedEndpointType(_) => ResponseError::UnsupportedEndpointType,
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
        E::Coordinator(e) => *e,
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
mod tests {
    use super::*;
    use std::path::PathBuf;

    type Row = (BrokerError, ApiKey, i16, ResponseError);

    fn log(e: LogError) -> BrokerError {
        BrokerError::Storage(e)
    }

    fn txt(s: &str) -> String {
        s.to_string()
    }

    /// Every variant once (at an API and version where nothing is translated), then each
    /// version- or API-dependent row on both sides of its boundary.
    fn table() -> Vec<Row> {
        use ApiKey as A;
        use BrokerError as E;
        use ResponseError as R;
        let io = || LogError::Io {
            context: txt("append 00000000000000001234.log"),
            source: std::io::Error::other("disk full"),
        };
        let record_errors = Vec::new;
        vec![
            (
                E::UnknownTopic(txt("t")),
                A::Metadata,
                12,
                R::UnknownTopicOrPartition,
            ),
            (
                E::UnknownTopicId(Uuid::nil()),
                A::Metadata,
                12,
                R::UnknownTopicId,
            ),
            (
                E::UnknownPartition {
                    topic: txt("t"),
                    partition: 3,
                },
                A::Fetch,
                13,
                R::UnknownTopicOrPartition,
            ),
            (
                E::UnknownLeaderEpoch(1),
                A::ListOffsets,
                9,
                R::UnknownLeaderEpoch,
            ),
            (
                log(LogError::CorruptMessage(txt("crc"))),
                A::Produce,
                9,
                R::CorruptMessage,
            ),
            (
                log(LogError::InvalidRecord {
                    message: txt("m"),
                    record_errors: record_errors(),
                }),
                A::Produce,
                9,
                R::InvalidRecord,
            ),
            (
                log(LogError::MessageTooLarge { size: 2, max: 1 }),
                A::Produce,
                9,
                R::MessageTooLarge,
            ),
            (
                log(LogError::RecordListTooLarge { size: 2, max: 1 }),
                A::Produce,
                9,
                R::RecordListTooLarge,
            ),
            (
                log(LogError::InvalidTimestamp {
                    message: txt("m"),
                    record_errors: record_errors(),
                }),
                A::Produce,
                9,
                R::InvalidTimestamp,
            ),
            (
                log(LogError::OffsetOutOfRange {
                    requested: 9,
                    log_start: 0,
                    log_end: 1,
                }),
                A::Fetch,
                12,
                R::OffsetOutOfRange,
            ),
            (
                log(LogError::UnsupportedMagic(1)),
                A::Produce,
                9,
                R::InvalidRecord,
            ),
            (log(io()), A::Produce, 9, R::KafkaStorageError),
            (
                log(LogError::Offline(txt("x"))),
                A::Fetch,
                12,
                R::KafkaStorageError,
            ),
            (
                log(LogError::DirLocked(txt("x"))),
                A::Produce,
                9,
                R::KafkaStorageError,
            ),
            (
                log(LogError::SegmentGone(txt("x"))),
                A::DeleteRecords,
                2,
                R::KafkaStorageError,
            ),
            (
                log(LogError::Aborted(txt("x"))),
                A::DeleteRecords,
                2,
                R::KafkaStorageError,
            ),
            (
                log(LogError::OutOfOrderSequence {
                    producer_id: 1,
                    offset: 2,
                    message: txt("m"),
                }),
                A::Produce,
                9,
                R::OutOfOrderSequenceNumber,
            ),
            (
                log(LogError::InvalidProducerEpoch {
                    producer_id: 1,
                    epoch: 0,
                    current: 1,
                }),
                A::Produce,
                9,
                R::InvalidProducerEpoch,
            ),
            (
                log(LogError::InvalidTxnState { producer_id: 1 }),
                A::Produce,
                9,
                R::InvalidTxnState,
            ),
            (
                log(LogError::MalformedFile {
                    file: txt("f"),
                    message: txt("m"),
                }),
                A::InitProducerId,
                4,
                R::KafkaStorageError,
            ),
            (
                E::Topic(TopicError::InvalidName(txt("n"))),
                A::CreateTopics,
                7,
                R::InvalidTopicException,
            ),
            (
                E::Topic(TopicError::AlreadyExists(txt("t"))),
                A::CreateTopics,
                7,
                R::TopicAlreadyExists,
            ),
            (
                E::Topic(TopicError::Unknown(txt("t"))),
                A::CreatePartitions,
                3,
                R::UnknownTopicOrPartition,
            ),
            (
                E::Topic(TopicError::InvalidPartitions(txt("m"))),
                A::CreatePartitions,
                3,
                R::InvalidPartitions,
            ),
            (
                E::Topic(TopicError::InvalidConfig(skiff_config::TopicConfigError {
                    name: txt("k"),
                    message: txt("m"),
                })),
                A::CreateTopics,
                7,
                R::InvalidConfig,
            ),
            // A storage error inside the topic registry maps like the log's own.
            (
                E::Topic(TopicError::Storage(LogError::CorruptMessage(txt("crc")))),
                A::CreateTopics,
                7,
                R::CorruptMessage,
            ),
            (
                E::Topic(TopicError::Storage(io())),
                A::DeleteTopics,
                6,
                R::KafkaStorageError,
            ),
            (
                E::Topic(TopicError::Registry {
                    path: PathBuf::from("/x"),
                    message: txt("m"),
                }),
                A::DeleteTopics,
                6,
                R::KafkaStorageError,
            ),
            (
                E::StorageFailure(txt("fsync failed")),
                A::Produce,
                9,
                R::KafkaStorageError,
            ),
            (
                E::InvalidRequest(txt("m")),
                A::CreateTopics,
                7,
                R::InvalidRequest,
            ),
            (
                E::InvalidConfig(txt("m")),
                A::AlterConfigs,
                2,
                R::InvalidConfig,
            ),
            (
                E::InvalidPartitions(txt("m")),
                A::CreateTopics,
                7,
                R::InvalidPartitions,
            ),
            (
                E::InvalidReplicationFactor(txt("m")),
                A::CreateTopics,
                7,
                R::InvalidReplicationFactor,
            ),
            (
                E::InvalidReplicaAssignment(txt("m")),
                A::CreatePartitions,
                3,
                R::InvalidReplicaAssignment,
            ),
            (E::PolicyViolation, A::DeleteRecords, 2, R::PolicyViolation),
            (
                E::TopicDeletionDisabled,
                A::DeleteTopics,
                6,
                R::TopicDeletionDisabled,
            ),
            (
                E::InvalidRequiredAcks(2),
                A::Produce,
                9,
                R::InvalidRequiredAcks,
            ),
            (E::InvalidRecord(txt("m")), A::Produce, 9, R::InvalidRecord),
            (
                E::UnsupportedCompression,
                A::Produce,
                6,
                R::UnsupportedCompressionType,
            ),
            (
                E::NoTransactionalId,
                A::Produce,
                9,
                R::TransactionalIdAuthorizationFailed,
            ),
            (
                E::MixedProducers,
                A::Produce,
                9,
                R::InvalidProducerIdMapping,
            ),
            (
                E::OffsetMetadataTooLarge { len: 2, max: 1 },
                A::OffsetCommit,
                9,
                R::OffsetMetadataTooLarge,
            ),
            (
                E::UnstableOffset,
                A::OffsetFetch,
                8,
                R::UnstableOffsetCommit,
            ),
            (
                E::UnknownFetchSession(7),
                A::Fetch,
                12,
                R::FetchSessionIdNotFound,
            ),
            (
                E::InvalidFetchSessionEpoch(7),
                A::Fetch,
                12,
                R::InvalidFetchSessionEpoch,
            ),
            (
                E::UnknownSpecialTimestamp(-9),
                A::ListOffsets,
                9,
                R::UnsupportedVersion,
            ),
            (
                E::InvalidGroupId(String::new()),
                A::AddOffsetsToTxn,
                3,
                R::InvalidGroupId,
            ),
            (
                E::GroupNotFound(txt("g")),
                A::DescribeGroups,
                6,
                R::GroupIdNotFound,
            ),
            (
                E::TransactionalIdNotFound(txt("t")),
                A::DescribeTransactions,
                0,
                R::TransactionalIdNotFound,
            ),
            (
                E::InvalidRegex(txt("m")),
                A::ListTransactions,
                2,
                R::InvalidRegularExpression,
            ),
            (
                E::UnsupportedAssignor(txt("m")),
                A::ConsumerGroupHeartbeat,
                1,
                R::UnsupportedAssignor,
            ),
            (
                E::UnsupportedEndpointType(txt("m")),
                A::DescribeCluster,
                1,
                R::UnsupportedEndpointType,
            ),
            (
                E::NoAuthorizer("m"),
                A::DescribeAcls,
                3,
                R::SecurityDisabled,
            ),
            (
                E::NotAttempted,
                A::AddPartitionsToTxn,
                3,
                R::OperationNotAttempted,
            ),
            (
                E::CoordinatorUnavailable,
                A::JoinGroup,
                9,
                R::CoordinatorNotAvailable,
            ),
            (
                E::Coordinator(R::RebalanceInProgress),
                A::Heartbeat,
                4,
                R::RebalanceInProgress,
            ),
            (
                E::Internal(txt("panicked")),
                A::Fetch,
                12,
                R::UnknownServerError,
            ),
            // Produce and Fetch name topics by id from v13: an unknown topic is UNKNOWN_TOPIC_ID.
            (
                E::UnknownTopic(txt("t")),
                A::Produce,
                12,
                R::UnknownTopicOrPartition,
            ),
            (E::UnknownTopic(txt("t")), A::Produce, 13, R::UnknownTopicId),
            (
                E::UnknownTopic(txt("t")),
                A::Fetch,
                12,
                R::UnknownTopicOrPartition,
            ),
            (E::UnknownTopic(txt("t")), A::Fetch, 13, R::UnknownTopicId),
            (
                E::UnknownTopic(txt("t")),
                A::DeleteTopics,
                6,
                R::UnknownTopicOrPartition,
            ),
            // A partition outside the transaction: Produce v11+ and AddPartitionsToTxn's
            // verify_only say TRANSACTION_ABORTABLE, older produce INVALID_TXN_STATE.
            (E::NotInTransaction, A::Produce, 10, R::InvalidTxnState),
            (E::NotInTransaction, A::Produce, 11, R::TransactionAbortable),
            (
                E::NotInTransaction,
                A::AddPartitionsToTxn,
                4,
                R::TransactionAbortable,
            ),
            (
                E::NotInTransaction,
                A::TxnOffsetCommit,
                3,
                R::InvalidTxnState,
            ),
            // Produce translates the coordinator's verification answer; other APIs do not.
            (
                E::Coordinator(R::ProducerFenced),
                A::Produce,
                12,
                R::InvalidProducerEpoch,
            ),
            (
                E::Coordinator(R::ProducerFenced),
                A::EndTxn,
                4,
                R::ProducerFenced,
            ),
            (
                E::Coordinator(R::ConcurrentTransactions),
                A::Produce,
                11,
                R::NotEnoughReplicas,
            ),
            (
                E::Coordinator(R::ConcurrentTransactions),
                A::Produce,
                12,
                R::ConcurrentTransactions,
            ),
            (
                E::Coordinator(R::ConcurrentTransactions),
                A::AddPartitionsToTxn,
                3,
                R::ConcurrentTransactions,
            ),
            (
                E::Coordinator(R::CoordinatorLoadInProgress),
                A::Produce,
                12,
                R::NotEnoughReplicas,
            ),
            (
                E::Coordinator(R::CoordinatorNotAvailable),
                A::Produce,
                12,
                R::NotEnoughReplicas,
            ),
            (
                E::Coordinator(R::NotCoordinator),
                A::Produce,
                3,
                R::NotEnoughReplicas,
            ),
            (
                E::Coordinator(R::NotCoordinator),
                A::AddOffsetsToTxn,
                3,
                R::NotCoordinator,
            ),
            (
                E::Coordinator(R::InvalidProducerIdMapping),
                A::Produce,
                12,
                R::InvalidProducerIdMapping,
            ),
        ]
    }

    #[test]
    fn the_one_table_answers_each_variant_per_api_and_version() {
        for (err, api, version, expected) in table() {
            assert_eq!(
                kafka_error(api, version, &err),
                expected,
                "{err:?} in {api:?} v{version}"
            );
        }
    }

    #[test]
    fn messages_are_the_texts_handlers_send() {
        assert_eq!(
            BrokerError::GroupNotFound("g".into()).to_string(),
            "Group g not found."
        );
        assert_eq!(
            BrokerError::NotInTransaction.to_string(),
            "Partition was not added to the transaction"
        );
        assert_eq!(
            BrokerError::MixedProducers.to_string(),
            "Transactional records contained more than one producer ID"
        );
        // Storage and registry errors keep their own text.
        let e = BrokerError::Topic(TopicError::AlreadyExists("t".into()));
        assert_eq!(e.to_string(), "Topic 't' already exists.");
    }
}
