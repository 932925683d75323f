//! Request body schemas of the idempotence and transaction APIs: InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers,
//! DescribeProducers, ListTransactions, DescribeTransactions. Field order and version ranges
//! follow the Kafka 4.1 message definitions (as generated in kafka-protocol 0.18); none of
//! these requests has a known tagged field. Static data only.

use super::{all, between, fields, since, Struct, Ty};

/// InitProducerIdRequest. (v6's keep_prepared_txn is beyond kafka-protocol 0.18's decoder.)
pub(crate) static INIT_PRODUCER_ID: Struct = fields(&[
    all(Ty::Str),        // transactional_id
    all(Ty::Int32),      // transaction_timeout_ms
    since(3, Ty::Int64), // producer_id
    since(3, Ty::Int16), // producer_epoch
]);

static ADD_PARTITIONS_TOPIC: Struct = fields(&[
    all(Ty::Str),               // name
    all(Ty::Array(&Ty::Int32)), // partitions
]);

static ADD_PARTITIONS_TRANSACTION: Struct = fields(&[
    since(4, Ty::Str),   // transactional_id
    since(4, Ty::Int64), // producer_id
    since(4, Ty::Int16), // producer_epoch
    since(4, Ty::Bool),  // verify_only
    since(4, Ty::Array(&Ty::Struct(&ADD_PARTITIONS_TOPIC))),
]);

/// AddPartitionsToTxnRequest: one transaction (v0-3) or a broker batch (v4+).
pub(crate) static ADD_PARTITIONS_TO_TXN: Struct = fields(&[
    since(4, Ty::Array(&Ty::Struct(&ADD_PARTITIONS_TRANSACTION))), // transactions
    between(0, 3, Ty::Str),                                        // transactional_id
    between(0, 3, Ty::Int64),                                      // producer_id
    between(0, 3, Ty::Int16),                                      // producer_epoch
    between(0, 3, Ty::Array(&Ty::Struct(&ADD_PARTITIONS_TOPIC))),  // topics
]);

/// AddOffsetsToTxnRequest.
pub(crate) static ADD_OFFSETS_TO_TXN: Struct = fields(&[
    all(Ty::Str),   // transactional_id
    all(Ty::Int64), // producer_id
    all(Ty::Int16), // producer_epoch
    all(Ty::Str),   // group_id
]);

/// EndTxnRequest.
pub(crate) static END_TXN: Struct = fields(&[
    all(Ty::Str),   // transactional_id
    all(Ty::Int64), // producer_id
    all(Ty::Int16), // producer_epoch
    all(Ty::Bool),  // committed
]);

static TXN_OFFSET_COMMIT_PARTITION: Struct = fields(&[
    all(Ty::Int32),      // partition_index
    all(Ty::Int64),      // committed_offset
    since(2, Ty::Int32), // committed_leader_epoch
    all(Ty::Str),        // committed_metadata
]);

static TXN_OFFSET_COMMIT_TOPIC: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Array(&Ty::Struct(&TXN_OFFSET_COMMIT_PARTITION))),
]);

/// TxnOffsetCommitRequest.
pub(crate) static TXN_OFFSET_COMMIT: Struct = fields(&[
    all(Ty::Str),        // transactional_id
    all(Ty::Str),        // group_id
    all(Ty::Int64),      // producer_id
    all(Ty::Int16),      // producer_epoch
    since(3, Ty::Int32), // generation_id
    since(3, Ty::Str),   // member_id
    since(3, Ty::Str),   // group_instance_id
    all(Ty::Array(&Ty::Struct(&TXN_OFFSET_COMMIT_TOPIC))),
]);

static WRITABLE_TXN_MARKER_TOPIC: Struct = fields(&[
    all(Ty::Str),               // name
    all(Ty::Array(&Ty::Int32)), // partition_indexes
]);

static WRITABLE_TXN_MARKER: Struct = fields(&[
    all(Ty::Int64), // producer_id
    all(Ty::Int16), // producer_epoch
    all(Ty::Bool),  // transaction_result
    all(Ty::Array(&Ty::Struct(&WRITABLE_TXN_MARKER_TOPIC))),
    all(Ty::Int32), // coordinator_epoch
]);

/// WriteTxnMarkersRequest (v1 only, flexible).
pub(crate) static WRITE_TXN_MARKERS: Struct =
    fields(&[all(Ty::Array(&Ty::Struct(&WRITABLE_TXN_MARKER)))]);

static DESCRIBE_PRODUCERS_TOPIC: Struct = fields(&[
    all(Ty::Str),               // name
    all(Ty::Array(&Ty::Int32)), // partition_indexes
]);

/// DescribeProducersRequest (v0 only, flexible).
pub(crate) static DESCRIBE_PRODUCERS: Struct =
    fields(&[all(Ty::Array(&Ty::Struct(&DESCRIBE_PRODUCERS_TOPIC)))]);

/// ListTransactionsRequest (flexible in every version).
pub(crate) static LIST_TRANSACTIONS: Struct = fields(&[
    all(Ty::Array(&Ty::Str)),   // state_filters
    all(Ty::Array(&Ty::Int64)), // producer_id_filters
    since(1, Ty::Int64),        // duration_filter
    since(2, Ty::Str),          // transactional_id_pattern
]);

/// DescribeTransactionsRequest (v0 only, flexible).
pub(crate) static DESCRIBE_TRANSACTIONS: Struct = fields(&[all(Ty::Array(&Ty::Str))]);
