//! One module per Kafka API, each with one entry point of one shape:
//! `async fn handle(ctx: &RequestContext, request: XRequest) -> Reply` (`acls` serves the
//! three ACL APIs together as `describe`/`create`/`delete`, and `alter_configs` both
//! AlterConfigs APIs: without an authorizer, and for one config store, they answer alike).
//! A handler decides what went wrong as a [`BrokerError`] and asks the context for the
//! code ([`RequestContext::code`]), which comes from the one table in [`crate::errors`].
//!
//! # What runs on the blocking pool
//!
//! A handler runs on a runtime worker thread, which must never wait on the disk or on
//! another thread's I/O. So every call that can touch disk or take a partition's append
//! lock runs inside [`crate::dispatch::blocking`]:
//! - appends, and anything that fsyncs (`Log::append*`, `flush`, `delete_records_before`);
//! - reads of segment files (`read_isolated`, `offset_for_timestamp`, `max_timestamp`);
//! - producer-state reads, which take the log's append lock (`producer_entries`,
//!   `start_txn_verification`);
//! - topic registry changes (create, delete, add partitions, set overrides) and dynamic
//!   config writes, which write and fsync the registry;
//! - filesystem queries (`disk_space`) and producer id allocation (persists its block);
//! - transaction coordinator calls that write `__transaction_state` or markers
//!   (`init_producer_id`, `add_partitions`, `end_txn`, `verify_partitions`).
//!
//! The one exception: a small non-transactional produce whose logs say the append only
//! copies into the page cache (`Log::append_is_light`: no roll, no `flush.messages` fsync)
//! appends on the worker through [`crate::dispatch::quick_or_blocking`], which keeps at least
//! one worker free of such appends.
//!
//! What may stay on the worker: lookups in the in-memory topic map, the log's published
//! snapshot (`log_start_offset`, `log_end_offset`, `high_watermark`, `last_stable_offset`,
//! `size_bytes`, `config`), group coordinator calls (they only queue records for the
//! coordinator thread; those that wait for an fsync are `async`), and in-memory reads of
//! the transaction coordinator (`describe`, `list`).
//!
//! A blocking task that fails is [`BrokerError::Internal`]: UNKNOWN_SERVER_ERROR for each
//! item of the response that has its own code, else for the whole response.
//!
//! [`RequestContext::code`]: crate::context::RequestContext::code
//! [`BrokerError`]: crate::errors::BrokerError
//! [`BrokerError::Internal`]: crate::errors::BrokerError::Internal

pub mod acls;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_configs;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod client_quotas;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_share_group_offsets;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
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
pub mod sasl;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod streams_group_describe;
pub mod streams_group_heartbeat;
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

/// A broker on `dir` for handler unit tests, with one `__consumer_offsets` partition, once
/// its group coordinator has loaded.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) async fn test_broker(dir: &std::path::Path) -> std::sync::Arc<crate::broker::Broker> {
    let sets = vec![
        format!("log.dirs={}", dir.display()),
        "offsets.topic.num.partitions=1".to_string(),
    ];
    let (config, _) = skiff_config::load(None, &sets, Vec::<(String, String)>::new()).unwrap();
    let broker = tokio::task::spawn_blocking(move || crate::broker::Broker::start(config))
        .await
        .unwrap()
        .unwrap();
    while !broker.coordinator.is_loaded() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    broker
}
