//! Request body schemas of the consumer-group APIs: FindCoordinator, JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
//! OffsetDelete, ConsumerGroupHeartbeat, ConsumerGroupDescribe. Field order and version ranges
//! follow the Kafka 4.1 message definitions (as generated in kafka-protocol 0.18); none of
//! these requests has a known tagged field. Static data only.

use super::{all, between, fields, since, Struct, Ty};

/// FindCoordinatorRequest: one key (v0-3) or a batch of keys (v4+).
pub(crate) static FIND_COORDINATOR: Struct = fields(&[
    between(0, 3, Ty::Str),        // key
    since(1, Ty::Int8),            // key_type
    since(4, Ty::Array(&Ty::Str)), // coordinator_keys
]);

static JOIN_GROUP_PROTOCOL: Struct = fields(&[
    all(Ty::Str),   // name
    all(Ty::Bytes), // metadata
]);

/// JoinGroupRequest.
pub(crate) static JOIN_GROUP: Struct = fields(&[
    all(Ty::Str),        // group_id
    all(Ty::Int32),      // session_timeout_ms
    since(1, Ty::Int32), // rebalance_timeout_ms
    all(Ty::Str),        // member_id
    since(5, Ty::Str),   // group_instance_id
    all(Ty::Str),        // protocol_type
    all(Ty::Array(&Ty::Struct(&JOIN_GROUP_PROTOCOL))),
    since(8, Ty::Str), // reason
]);

static SYNC_GROUP_ASSIGNMENT: Struct = fields(&[
    all(Ty::Str),   // member_id
    all(Ty::Bytes), // assignment
]);

/// SyncGroupRequest.
pub(crate) static SYNC_GROUP: Struct = fields(&[
    all(Ty::Str),      // group_id
    all(Ty::Int32),    // generation_id
    all(Ty::Str),      // member_id
    since(3, Ty::Str), // group_instance_id
    since(5, Ty::Str), // protocol_type
    since(5, Ty::Str), // protocol_name
    all(Ty::Array(&Ty::Struct(&SYNC_GROUP_ASSIGNMENT))),
]);

/// HeartbeatRequest.
pub(crate) static HEARTBEAT: Struct = fields(&[
    all(Ty::Str),      // group_id
    all(Ty::Int32),    // generation_id
    all(Ty::Str),      // member_id
    since(3, Ty::Str), // group_instance_id
]);

static LEAVE_GROUP_MEMBER: Struct = fields(&[
    since(3, Ty::Str), // member_id
    since(3, Ty::Str), // group_instance_id
    since(5, Ty::Str), // reason
]);

/// LeaveGroupRequest: one member (v0-2) or a batch of members (v3+).
pub(crate) static LEAVE_GROUP: Struct = fields(&[
    all(Ty::Str),           // group_id
    between(0, 2, Ty::Str), // member_id
    since(3, Ty::Array(&Ty::Struct(&LEAVE_GROUP_MEMBER))),
]);

static OFFSET_COMMIT_PARTITION: Struct = fields(&[
    all(Ty::Int32),      // partition_index
    all(Ty::Int64),      // committed_offset
    since(6, Ty::Int32), // committed_leader_epoch
    all(Ty::Str),        // committed_metadata
]);

static OFFSET_COMMIT_TOPIC: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Array(&Ty::Struct(&OFFSET_COMMIT_PARTITION))),
]);

/// OffsetCommitRequest.
pub(crate) static OFFSET_COMMIT: Struct = fields(&[
    all(Ty::Str),             // group_id
    all(Ty::Int32),           // generation_id_or_member_epoch
    all(Ty::Str),             // member_id
    since(7, Ty::Str),        // group_instance_id
    between(2, 4, Ty::Int64), // retention_time_ms
    all(Ty::Array(&Ty::Struct(&OFFSET_COMMIT_TOPIC))),
]);

static OFFSET_FETCH_TOPIC: Struct = fields(&[
    between(0, 7, Ty::Str),               // name
    between(0, 7, Ty::Array(&Ty::Int32)), // partition_indexes
]);

static OFFSET_FETCH_GROUP_TOPIC: Struct = fields(&[
    since(8, Ty::Str),               // name
    since(8, Ty::Array(&Ty::Int32)), // partition_indexes
]);

static OFFSET_FETCH_GROUP: Struct = fields(&[
    since(8, Ty::Str),                                           // group_id
    since(9, Ty::Str),                                           // member_id
    since(9, Ty::Int32),                                         // member_epoch
    since(8, Ty::Array(&Ty::Struct(&OFFSET_FETCH_GROUP_TOPIC))), // topics (nullable)
]);

/// OffsetFetchRequest: one group (v1-7) or a batch of groups (v8+).
pub(crate) static OFFSET_FETCH: Struct = fields(&[
    between(0, 7, Ty::Str),                                     // group_id
    between(0, 7, Ty::Array(&Ty::Struct(&OFFSET_FETCH_TOPIC))), // topics (nullable)
    since(8, Ty::Array(&Ty::Struct(&OFFSET_FETCH_GROUP))),      // groups
    since(7, Ty::Bool),                                         // require_stable
]);

/// ListGroupsRequest.
pub(crate) static LIST_GROUPS: Struct = fields(&[
    since(4, Ty::Array(&Ty::Str)), // states_filter
    since(5, Ty::Array(&Ty::Str)), // types_filter
]);

/// DescribeGroupsRequest.
pub(crate) static DESCRIBE_GROUPS: Struct = fields(&[
    all(Ty::Array(&Ty::Str)), // groups
    since(3, Ty::Bool),       // include_authorized_operations
]);

/// DeleteGroupsRequest.
pub(crate) static DELETE_GROUPS: Struct = fields(&[all(Ty::Array(&Ty::Str))]);

static OFFSET_DELETE_PARTITION: Struct = fields(&[all(Ty::Int32)]);

static OFFSET_DELETE_TOPIC: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Array(&Ty::Struct(&OFFSET_DELETE_PARTITION))),
]);

/// OffsetDeleteRequest (v0 only, never flexible).
pub(crate) static OFFSET_DELETE: Struct = fields(&[
    all(Ty::Str), // group_id
    all(Ty::Array(&Ty::Struct(&OFFSET_DELETE_TOPIC))),
]);

static CONSUMER_GROUP_TOPIC_PARTITIONS: Struct = fields(&[
    all(Ty::Uuid),              // topic_id
    all(Ty::Array(&Ty::Int32)), // partitions
]);

/// ConsumerGroupHeartbeatRequest (KIP-848; flexible in every version).
pub(crate) static CONSUMER_GROUP_HEARTBEAT: Struct = fields(&[
    all(Ty::Str),                                                  // group_id
    all(Ty::Str),                                                  // member_id
    all(Ty::Int32),                                                // member_epoch
    all(Ty::Str),                                                  // instance_id
    all(Ty::Str),                                                  // rack_id
    all(Ty::Int32),                                                // rebalance_timeout_ms
    all(Ty::Array(&Ty::Str)), // subscribed_topic_names (nullable)
    since(1, Ty::Str),        // subscribed_topic_regex
    all(Ty::Str),             // server_assignor
    all(Ty::Array(&Ty::Struct(&CONSUMER_GROUP_TOPIC_PARTITIONS))), // topic_partitions
]);

/// ConsumerGroupDescribeRequest (flexible in every version).
pub(crate) static CONSUMER_GROUP_DESCRIBE: Struct = fields(&[
    all(Ty::Array(&Ty::Str)), // group_ids
    all(Ty::Bool),            // include_authorized_operations
]);
