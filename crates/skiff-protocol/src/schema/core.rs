//! Request body schemas of the client data-path APIs: ApiVersions, Metadata, Produce, Fetch,
//! ListOffsets, OffsetForLeaderEpoch. Field order and version ranges follow the Kafka 4.1
//! message definitions (as generated in kafka-protocol 0.18). Static data only.

use super::{all, between, fields, since, Struct, Tagged, Ty, MAX};

/// ApiVersionsRequest: client software name/version (v3+).
pub(crate) static API_VERSIONS: Struct = fields(&[since(3, Ty::Str), since(3, Ty::Str)]);

static METADATA_TOPIC: Struct = fields(&[
    since(10, Ty::Uuid), // topic_id
    all(Ty::Str),        // name
]);

/// MetadataRequest.
pub(crate) static METADATA: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&METADATA_TOPIC))), // topics (nullable: all topics)
    since(4, Ty::Bool),                           // allow_auto_topic_creation
    between(8, 10, Ty::Bool),                     // include_cluster_authorized_operations
    since(8, Ty::Bool),                           // include_topic_authorized_operations
]);

static PRODUCE_PARTITION: Struct = fields(&[
    all(Ty::Int32), // index
    all(Ty::Bytes), // records
]);

static PRODUCE_TOPIC: Struct = fields(&[
    between(0, 12, Ty::Str), // name
    since(13, Ty::Uuid),     // topic_id
    all(Ty::Array(&Ty::Struct(&PRODUCE_PARTITION))),
]);

/// ProduceRequest.
pub(crate) static PRODUCE: Struct = fields(&[
    all(Ty::Str),   // transactional_id
    all(Ty::Int16), // acks
    all(Ty::Int32), // timeout_ms
    all(Ty::Array(&Ty::Struct(&PRODUCE_TOPIC))),
]);

static FETCH_PARTITION: Struct = Struct {
    fields: &[
        all(Ty::Int32),       // partition
        since(9, Ty::Int32),  // current_leader_epoch
        all(Ty::Int64),       // fetch_offset
        since(12, Ty::Int32), // last_fetched_epoch
        since(5, Ty::Int64),  // log_start_offset
        all(Ty::Int32),       // partition_max_bytes
    ],
    tagged: &[
        Tagged {
            tag: 0,
            min: 17,
            max: MAX,
            ty: Ty::Uuid,
        }, // replica_directory_id
        Tagged {
            tag: 1,
            min: 18,
            max: MAX,
            ty: Ty::Int64,
        }, // high_watermark
    ],
};

static FETCH_TOPIC: Struct = fields(&[
    between(0, 12, Ty::Str), // topic
    since(13, Ty::Uuid),     // topic_id
    all(Ty::Array(&Ty::Struct(&FETCH_PARTITION))),
]);

static FETCH_FORGOTTEN_TOPIC: Struct = fields(&[
    between(7, 12, Ty::Str),         // topic
    since(13, Ty::Uuid),             // topic_id
    since(7, Ty::Array(&Ty::Int32)), // partitions
]);

static FETCH_REPLICA_STATE: Struct = fields(&[
    since(15, Ty::Int32), // replica_id
    since(15, Ty::Int64), // replica_epoch
]);

/// FetchRequest.
pub(crate) static FETCH: Struct = Struct {
    fields: &[
        between(0, 14, Ty::Int32), // replica_id
        all(Ty::Int32),            // max_wait_ms
        all(Ty::Int32),            // min_bytes
        all(Ty::Int32),            // max_bytes
        all(Ty::Int8),             // isolation_level
        since(7, Ty::Int32),       // session_id
        since(7, Ty::Int32),       // session_epoch
        all(Ty::Array(&Ty::Struct(&FETCH_TOPIC))),
        since(7, Ty::Array(&Ty::Struct(&FETCH_FORGOTTEN_TOPIC))),
        since(11, Ty::Str), // rack_id
    ],
    tagged: &[
        Tagged {
            tag: 0,
            min: 12,
            max: MAX,
            ty: Ty::Str,
        }, // cluster_id
        Tagged {
            tag: 1,
            min: 15,
            max: MAX,
            ty: Ty::Struct(&FETCH_REPLICA_STATE),
        },
    ],
};

static LIST_OFFSETS_PARTITION: Struct = fields(&[
    all(Ty::Int32),      // partition_index
    since(4, Ty::Int32), // current_leader_epoch
    all(Ty::Int64),      // timestamp
]);

static LIST_OFFSETS_TOPIC: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Array(&Ty::Struct(&LIST_OFFSETS_PARTITION))),
]);

/// ListOffsetsRequest.
pub(crate) static LIST_OFFSETS: Struct = fields(&[
    all(Ty::Int32),     // replica_id
    since(2, Ty::Int8), // isolation_level
    all(Ty::Array(&Ty::Struct(&LIST_OFFSETS_TOPIC))),
    since(10, Ty::Int32), // timeout_ms
]);

static OFFSET_FOR_LEADER_PARTITION: Struct = fields(&[
    all(Ty::Int32), // partition
    all(Ty::Int32), // current_leader_epoch
    all(Ty::Int32), // leader_epoch
]);

static OFFSET_FOR_LEADER_TOPIC: Struct = fields(&[
    all(Ty::Str), // topic
    all(Ty::Array(&Ty::Struct(&OFFSET_FOR_LEADER_PARTITION))),
]);

/// OffsetForLeaderEpochRequest.
pub(crate) static OFFSET_FOR_LEADER_EPOCH: Struct = fields(&[
    since(3, Ty::Int32), // replica_id
    all(Ty::Array(&Ty::Struct(&OFFSET_FOR_LEADER_TOPIC))),
]);
