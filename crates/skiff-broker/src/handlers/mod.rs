//! One module per Kafka API. Each exposes `handle(broker, version, request) -> Reply`
//! (or the response itself when it cannot wait or fail as a whole). `acls` serves the three
//! ACL APIs together: without an authorizer they answer alike.

pub mod acls;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_configs;
pub mod api_versions;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_transactions;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod sync_group;
pub mod txn_offset_commit;

use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

/// The single leader epoch of every partition: one node, never re-elected.
pub const LEADER_EPOCH: i32 = 0;

/// Owned copy of a string for a response (never pins the request frame).
pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(str_bytes(s))
}

/// Error code of a per-item coordinator result (0 for success).
pub fn result_code(r: &Result<(), kafka_protocol::ResponseError>) -> i16 {
    match r {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}
