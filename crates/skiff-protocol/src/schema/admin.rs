//! Request body schemas of the admin APIs: CreateTopics, DeleteTopics, CreatePartitions,
//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DeleteRecords, DescribeCluster,
//! DescribeLogDirs.
//! Field order and version ranges follow the Kafka 4.1 message definitions (as generated in
//! kafka-protocol 0.18). Static data only.

use super::{all, between, fields, since, Struct, Ty};

static CREATABLE_REPLICA_ASSIGNMENT: Struct = fields(&[
    all(Ty::Int32),             // partition_index
    all(Ty::Array(&Ty::Int32)), // broker_ids
]);

static CREATABLE_TOPIC_CONFIG: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Str), // value
]);

static CREATABLE_TOPIC: Struct = fields(&[
    all(Ty::Str),   // name
    all(Ty::Int32), // num_partitions
    all(Ty::Int16), // replication_factor
    all(Ty::Array(&Ty::Struct(&CREATABLE_REPLICA_ASSIGNMENT))),
    all(Ty::Array(&Ty::Struct(&CREATABLE_TOPIC_CONFIG))),
]);

/// CreateTopicsRequest.
pub(crate) static CREATE_TOPICS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&CREATABLE_TOPIC))),
    all(Ty::Int32), // timeout_ms
    all(Ty::Bool),  // validate_only
]);

static DELETE_TOPIC_STATE: Struct = fields(&[
    since(6, Ty::Str),  // name
    since(6, Ty::Uuid), // topic_id
]);

/// DeleteTopicsRequest.
pub(crate) static DELETE_TOPICS: Struct = fields(&[
    since(6, Ty::Array(&Ty::Struct(&DELETE_TOPIC_STATE))), // topics
    between(0, 5, Ty::Array(&Ty::Str)),                    // topic_names
    all(Ty::Int32),                                        // timeout_ms
]);

static CREATE_PARTITIONS_ASSIGNMENT: Struct = fields(&[all(Ty::Array(&Ty::Int32))]);

static CREATE_PARTITIONS_TOPIC: Struct = fields(&[
    all(Ty::Str),   // name
    all(Ty::Int32), // count
    all(Ty::Array(&Ty::Struct(&CREATE_PARTITIONS_ASSIGNMENT))),
]);

/// CreatePartitionsRequest.
pub(crate) static CREATE_PARTITIONS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&CREATE_PARTITIONS_TOPIC))),
    all(Ty::Int32), // timeout_ms
    all(Ty::Bool),  // validate_only
]);

static DESCRIBE_CONFIGS_RESOURCE: Struct = fields(&[
    all(Ty::Int8),            // resource_type
    all(Ty::Str),             // resource_name
    all(Ty::Array(&Ty::Str)), // configuration_keys
]);

/// DescribeConfigsRequest.
pub(crate) static DESCRIBE_CONFIGS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&DESCRIBE_CONFIGS_RESOURCE))),
    all(Ty::Bool),      // include_synonyms
    since(3, Ty::Bool), // include_documentation
]);

static ALTERABLE_CONFIG: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Str), // value
]);

static ALTER_CONFIGS_RESOURCE: Struct = fields(&[
    all(Ty::Int8), // resource_type
    all(Ty::Str),  // resource_name
    all(Ty::Array(&Ty::Struct(&ALTERABLE_CONFIG))),
]);

/// AlterConfigsRequest.
pub(crate) static ALTER_CONFIGS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&ALTER_CONFIGS_RESOURCE))),
    all(Ty::Bool), // validate_only
]);

static INCREMENTAL_ALTERABLE_CONFIG: Struct = fields(&[
    all(Ty::Str),  // name
    all(Ty::Int8), // config_operation
    all(Ty::Str),  // value
]);

static INCREMENTAL_ALTER_CONFIGS_RESOURCE: Struct = fields(&[
    all(Ty::Int8), // resource_type
    all(Ty::Str),  // resource_name
    all(Ty::Array(&Ty::Struct(&INCREMENTAL_ALTERABLE_CONFIG))),
]);

/// IncrementalAlterConfigsRequest.
pub(crate) static INCREMENTAL_ALTER_CONFIGS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&INCREMENTAL_ALTER_CONFIGS_RESOURCE))),
    all(Ty::Bool), // validate_only
]);

static DELETE_RECORDS_PARTITION: Struct = fields(&[
    all(Ty::Int32), // partition_index
    all(Ty::Int64), // offset
]);

static DELETE_RECORDS_TOPIC: Struct = fields(&[
    all(Ty::Str), // name
    all(Ty::Array(&Ty::Struct(&DELETE_RECORDS_PARTITION))),
]);

/// DeleteRecordsRequest.
pub(crate) static DELETE_RECORDS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&DELETE_RECORDS_TOPIC))),
    all(Ty::Int32), // timeout_ms
]);

/// DescribeClusterRequest (flexible in every version).
pub(crate) static DESCRIBE_CLUSTER: Struct = fields(&[
    all(Ty::Bool),      // include_cluster_authorized_operations
    since(1, Ty::Int8), // endpoint_type
    since(2, Ty::Bool), // include_fenced_brokers
]);

static DESCRIBABLE_LOG_DIR_TOPIC: Struct = fields(&[
    all(Ty::Str),               // topic
    all(Ty::Array(&Ty::Int32)), // partitions
]);

/// DescribeLogDirsRequest (topics null: every partition).
pub(crate) static DESCRIBE_LOG_DIRS: Struct =
    fields(&[all(Ty::Array(&Ty::Struct(&DESCRIBABLE_LOG_DIR_TOPIC)))]);
