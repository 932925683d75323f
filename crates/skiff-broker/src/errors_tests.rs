//! The error table, row by row: every `BrokerError` variant, and each API- or
//! version-dependent code on both sides of its boundary.

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
            E::FetchSessionTopicIdMismatch(7),
            A::Fetch,
            13,
            R::FetchSessionTopicIdError,
        ),
        (
            E::InconsistentTopicId {
                topic: "t".to_string(),
                id: uuid::Uuid::nil(),
            },
            A::Fetch,
            13,
            R::InconsistentTopicId,
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
