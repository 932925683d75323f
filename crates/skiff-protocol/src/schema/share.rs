//! Request body schemas of the share-group APIs (KIP-932): ShareGroupHeartbeat,
//! ShareGroupDescribe, ShareFetch, ShareAcknowledge, DescribeShareGroupOffsets,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets. All are flexible in every version and
//! have no known tagged field. Field order follows the Kafka message definitions as generated
//! in kafka-protocol 0.18. Static data only.

use super::{all, fields, Struct, Ty};

/// ShareGroupHeartbeatRequest.
pub(crate) static SHARE_GROUP_HEARTBEAT: Struct = fields(&[
    all(Ty::Str),             // group_id
    all(Ty::Str),             // member_id
    all(Ty::Int32),           // member_epoch
    all(Ty::Str),             // rack_id
    all(Ty::Array(&Ty::Str)), // subscribed_topic_names (nullable)
]);

/// ShareGroupDescribeRequest.
pub(crate) static SHARE_GROUP_DESCRIBE: Struct = fields(&[
    all(Ty::Array(&Ty::Str)), // group_ids
    all(Ty::Bool),            // include_authorized_operations
]);

static ACKNOWLEDGEMENT_BATCH: Struct = fields(&[
    all(Ty::Int64),            // first_offset
    all(Ty::Int64),            // last_offset
    all(Ty::Array(&Ty::Int8)), // acknowledge_types
]);

static ACKNOWLEDGED_PARTITION: Struct = fields(&[
    all(Ty::Int32),                                      // partition_index
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGEMENT_BATCH))), // acknowledgement_batches
]);

static ACKNOWLEDGED_TOPIC: Struct = fields(&[
    all(Ty::Uuid),                                        // topic_id
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGED_PARTITION))), // partitions
]);

static FORGOTTEN_TOPIC: Struct = fields(&[
    all(Ty::Uuid),              // topic_id
    all(Ty::Array(&Ty::Int32)), // partitions
]);

/// ShareFetchRequest (v1: no per-partition byte limit).
pub(crate) static SHARE_FETCH: Struct = fields(&[
    all(Ty::Str),                                     // group_id
    all(Ty::Str),                                     // member_id
    all(Ty::Int32),                                   // share_session_epoch
    all(Ty::Int32),                                   // max_wait_ms
    all(Ty::Int32),                                   // min_bytes
    all(Ty::Int32),                                   // max_bytes
    all(Ty::Int32),                                   // max_records
    all(Ty::Int32),                                   // batch_size
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGED_TOPIC))), // topics
    all(Ty::Array(&Ty::Struct(&FORGOTTEN_TOPIC))),    // forgotten_topics_data
]);

/// ShareAcknowledgeRequest.
pub(crate) static SHARE_ACKNOWLEDGE: Struct = fields(&[
    all(Ty::Str),                                     // group_id
    all(Ty::Str),                                     // member_id
    all(Ty::Int32),                                   // share_session_epoch
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGED_TOPIC))), // topics
]);

static NAMED_TOPIC_PARTITIONS: Struct = fields(&[
    all(Ty::Str),               // topic_name
    all(Ty::Array(&Ty::Int32)), // partitions
]);

static DESCRIBED_GROUP: Struct = fields(&[
    all(Ty::Str),                                         // group_id
    all(Ty::Array(&Ty::Struct(&NAMED_TOPIC_PARTITIONS))), // topics (nullable: all)
]);

/// DescribeShareGroupOffsetsRequest.
pub(crate) static DESCRIBE_SHARE_GROUP_OFFSETS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&DESCRIBED_GROUP))), // groups
]);

static START_OFFSET: Struct = fields(&[
    all(Ty::Int32), // partition_index
    all(Ty::Int64), // start_offset
]);

static ALTERED_TOPIC: Struct = fields(&[
    all(Ty::Str),                               // topic_name
    all(Ty::Array(&Ty::Struct(&START_OFFSET))), // partitions
]);

/// AlterShareGroupOffsetsRequest.
pub(crate) static ALTER_SHARE_GROUP_OFFSETS: Struct = fields(&[
    all(Ty::Str),                                // group_id
    all(Ty::Array(&Ty::Struct(&ALTERED_TOPIC))), // topics
]);

static DELETED_TOPIC: Struct = fields(&[
    all(Ty::Str), // topic_name
]);

/// DeleteShareGroupOffsetsRequest.
pub(crate) static DELETE_SHARE_GROUP_OFFSETS: Struct = fields(&[
    all(Ty::Str),                                // group_id
    all(Ty::Array(&Ty::Struct(&DELETED_TOPIC))), // topics
]);
