//! The broker keys Skiff reads: each declared once, with its Kafka name, Rust field, Kafka
//! type, default (as DescribeConfigs prints it), status, whether Skiff applies a dynamic
//! change, validator, and a one-line doc. `broker_keys!` (in `keys_macro.rs`) turns this table
//! into `BrokerConfig`, its `Default`, the copy of parsed values into it, and the rows behind
//! lookups, DescribeConfigs(BROKER) and `docs/configuration.md`. Kafka keys Skiff only
//! accepts are listed in `names.rs`.
//!
//! `reads:` names the fields (of `BrokerConfig` or of `skiff_log::LogConfig`) or functions
//! whose use outside skiff-config shows the key is acted on; the guard test
//! `implemented_keys_are_read_outside_skiff_config` fails when none of them is used in any
//! other crate. A key marked `Implemented` must pass it; a key Skiff does not act on is
//! `Recognised` (accepted, listed in the load warning).
//!
//! Static data and generated plain code; safe from any thread.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skiff_log::LogConfig;

use crate::broker::TopicSpec;
use crate::listener::{HostPort, Listener};
use crate::names::{BrokerConfigDef, KeyStatus};
use crate::types::{ConfigType, Parsed, Validator as V};

/// Skiff's default listener: loopback, Kafka's port.
fn default_listeners() -> Vec<Listener> {
    vec![Listener {
        name: "PLAINTEXT".to_string(),
        host: "127.0.0.1".to_string(),
        port: 9092,
    }]
}

broker_keys! {
    fields {
        node_id: i32 = "node.id", Int, None, Implemented, live: false, valid: V::AtLeast(0),
            custom: 1,
            doc: "The id of this node; Skiff runs as node 1 when neither node.id nor broker.id is set.";
        cluster_id: Option<String> = "cluster.id", String, None, Skiff, live: false,
            custom: None,
            doc: "(Skiff-only) Fixed cluster id, 1-64 characters of [A-Za-z0-9_-]; unset = generate one at first start and persist it.";
        authorizer_class_name: String = "authorizer.class.name", String, Some(""), Implemented,
            live: false,
            doc: "Empty: no authorizer (every request allowed, ACL APIs answer SECURITY_DISABLED); org.apache.kafka.metadata.authorizer.StandardAuthorizer: enforce the ACLs stored in acls.json in the data dir. Anything else stops the start.";
        super_users: String = "super.users", String, None, Implemented, live: false,
            doc: "Principals (type:name, separated by ;) the authorizer allows everything.";
        allow_everyone_if_no_acl_found: bool = "allow.everyone.if.no.acl.found", Boolean,
            Some("false"), Implemented, live: false,
            doc: "With an authorizer: allow a request on a resource no ACL applies to (default: deny).";
        listeners: Vec<Listener> = "listeners", List, Some("PLAINTEXT://127.0.0.1:9092"), Implemented,
            live: false, custom: default_listeners(),
            doc: "Where to accept connections (NAME://host:port, comma-separated).";
        advertised_listeners: Vec<Listener> = "advertised.listeners", List, None, Implemented,
            live: false, custom: default_listeners(),
            doc: "What Metadata tells clients to connect to; defaults to listeners, which then must name a routable host.";
        log_dirs: Vec<PathBuf> = "log.dirs", List, None, Implemented, live: false,
            custom: vec![PathBuf::from("./data")],
            doc: "Data directories (comma-separated); when unset, log.dir.";
        auto_create_topics_enable: bool = "auto.create.topics.enable", Boolean, Some("true"),
            Implemented, live: false,
            doc: "Create a topic when a client asks for metadata of one that does not exist.";
        delete_topic_enable: bool = "delete.topic.enable", Boolean, Some("true"), Implemented,
            live: false,
            doc: "Whether DeleteTopics may delete topics.";
        num_partitions: i32 = "num.partitions", Int, Some("1"), Implemented, live: false,
            valid: V::AtLeast(1),
            doc: "Partitions of auto-created topics and of [[topic]] entries without partitions.";
        default_replication_factor: i16 = "default.replication.factor", Int, Some("1"), Recognised,
            live: false, valid: V::AtLeast(1),
            doc: "Accepted for compatibility and not read: Skiff is a single node, so only 1 is allowed and every topic has one replica.";
        message_max_bytes: i32 = "message.max.bytes", Int, Some("1048588"), Implemented, live: true,
            reads: [max_message_bytes],
            doc: "Largest record batch accepted, after compression; the broker reads it as the default of the topic config max.message.bytes (log.max_message_bytes).";
        socket_request_max_bytes: i32 = "socket.request.max.bytes", Int, Some("104857600"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "Request frames above this size are refused before any allocation.";
        fetch_max_bytes: i32 = "fetch.max.bytes", Int, Some("57671680"), Implemented, live: false,
            valid: V::AtLeast(1),
            doc: "Cap on the size of one Fetch response.";
        max_incremental_fetch_session_cache_slots: i32 = "max.incremental.fetch.session.cache.slots",
            Int, Some("1000"), Implemented, live: false, valid: V::AtLeast(0),
            doc: "Fetch sessions (KIP-227) the broker keeps at once; when full, a new session may replace one unused for 2 minutes or one with fewer partitions, else the fetch is served without a session. 0 disables sessions.";
        connections_max_idle_ms: i64 = "connections.max.idle.ms", Long, Some("600000"),
            Implemented, live: false,
            doc: "A connection with no socket activity for this long is closed; negative disables the check.";
        max_connections: i32 = "max.connections", Int, Some("2147483647"), Implemented,
            live: false, valid: V::AtLeast(0),
            doc: "Connections open at once over all listeners; at the limit the listeners stop accepting until one closes.";
        max_connections_per_ip: i32 = "max.connections.per.ip", Int, Some("2147483647"),
            Implemented, live: false, valid: V::AtLeast(0),
            doc: "Connections from one address beyond this are accepted and closed at once; 0 needs max.connections.per.ip.overrides.";
        max_connections_per_ip_overrides: Vec<(String, i32)> = "max.connections.per.ip.overrides",
            String, Some(""), Implemented, live: false, custom: Vec::new(),
            doc: "Comma-separated host:count pairs replacing max.connections.per.ip for those hosts (names resolved at start).";
        quota_window_num: i32 = "quota.window.num", Int, Some("11"), Implemented, live: false,
            valid: V::AtLeast(1),
            doc: "Samples kept per client for the produce, fetch and request quotas (the rate is taken over them).";
        quota_window_size_seconds: i32 = "quota.window.size.seconds", Int, Some("1"), Implemented,
            live: false, valid: V::AtLeast(1),
            doc: "Length of one quota sample for the produce, fetch and request quotas.";
        controller_quota_window_num: i32 = "controller.quota.window.num", Int, Some("11"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "Samples of the controller mutation quota: its token bucket holds this many windows' worth of partition mutations.";
        controller_quota_window_size_seconds: i32 = "controller.quota.window.size.seconds", Int,
            Some("1"), Implemented, live: false, valid: V::AtLeast(1),
            doc: "Length of one controller mutation quota window.";
        log_retention_check_interval_ms: i64 = "log.retention.check.interval.ms", Long,
            Some("300000"), Implemented, live: false, valid: V::AtLeast(1),
            doc: "How often time and size retention run.";
        log_flush_scheduler_interval_ms: i64 = "log.flush.scheduler.interval.ms", Long,
            Some("9223372036854775807"), Implemented, live: false, valid: V::AtLeast(0),
            reads: [flush_ms],
            doc: "Default of flush.ms when log.flush.interval.ms is unset (read as log.flush_ms). Unlike Kafka it does not pace the flusher, which checks flush.ms every second.";
        num_recovery_threads_per_data_dir: i32 = "num.recovery.threads.per.data.dir", Int,
            Some("2"), Implemented, live: false, valid: V::AtLeast(1),
            doc: "Threads that open (and after a crash recover) the partitions at start-up.";
        log_cleaner_enable: bool = "log.cleaner.enable", Boolean, Some("true"), Implemented,
            live: false,
            doc: "Run the log cleaner (compaction of cleanup.policy=compact topics).";
        log_cleaner_threads: i32 = "log.cleaner.threads", Int, Some("1"), Implemented, live: true,
            valid: V::AtLeast(0),
            doc: "Cleaner threads; a dynamic change may at most double or halve it.";
        log_cleaner_dedupe_buffer_size: i64 = "log.cleaner.dedupe.buffer.size", Long,
            Some("134217728"), Implemented, live: true, valid: V::AtLeast(1024),
            doc: "Memory for the cleaner's offset map, shared by all cleaner threads.";
        log_cleaner_io_buffer_size: i32 = "log.cleaner.io.buffer.size", Int, Some("524288"),
            Implemented, live: true, valid: V::AtLeast(0),
            doc: "Read and write buffer size of each cleaner thread.";
        log_cleaner_backoff_ms: i64 = "log.cleaner.backoff.ms", Long, Some("15000"), Implemented,
            live: true, valid: V::AtLeast(0),
            doc: "How long a cleaner thread sleeps when no log is cleanable.";
        log_cleaner_io_buffer_load_factor: f64 = "log.cleaner.io.buffer.load.factor", Double,
            Some("0.9"), Implemented, live: true,
            doc: "Load factor of the cleaner's offset map.";
        log_cleaner_io_max_bytes_per_second: f64 = "log.cleaner.io.max.bytes.per.second", Double,
            Some("1.7976931348623157E308"), Implemented, live: true,
            doc: "Throttle on the I/O of all cleaner threads together.";
        group_initial_rebalance_delay_ms: i32 = "group.initial.rebalance.delay.ms", Int,
            Some("3000"), Implemented, live: false, valid: V::AtLeast(0),
            doc: "How long a new classic group waits for more members before its first rebalance.";
        group_min_session_timeout_ms: i32 = "group.min.session.timeout.ms", Int, Some("6000"),
            Implemented, live: false,
            doc: "Smallest session timeout a classic group member may ask for.";
        group_max_session_timeout_ms: i32 = "group.max.session.timeout.ms", Int, Some("1800000"),
            Implemented, live: false,
            doc: "Largest session timeout a classic group member may ask for.";
        offsets_retention_minutes: i32 = "offsets.retention.minutes", Int, Some("10080"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "Committed offsets of an empty group are removed after this long.";
        offsets_retention_check_interval_ms: i64 = "offsets.retention.check.interval.ms", Long,
            Some("600000"), Implemented, live: false, valid: V::AtLeast(1),
            doc: "How often committed offsets are checked for expiry.";
        offset_metadata_max_bytes: i32 = "offset.metadata.max.bytes", Int, Some("4096"),
            Implemented, live: false, valid: V::AtLeast(0),
            doc: "Largest metadata string an offset commit may carry.";
        offsets_topic_num_partitions: i32 = "offsets.topic.num.partitions", Int, Some("50"),
            Implemented, live: false,
            doc: "Partitions of __consumer_offsets when it is created.";
        group_consumer_heartbeat_interval_ms: i32 = "group.consumer.heartbeat.interval.ms", Int,
            Some("5000"), Implemented, live: false,
            doc: "Heartbeat interval given to KIP-848 consumer group members.";
        group_consumer_session_timeout_ms: i32 = "group.consumer.session.timeout.ms", Int,
            Some("45000"), Implemented, live: false,
            doc: "Session timeout of KIP-848 consumer group members.";
        group_consumer_migration_policy: String = "group.consumer.migration.policy", String,
            Some("bidirectional"), Implemented, live: false,
            valid: V::OneOfIgnoreCase(&["bidirectional", "upgrade", "downgrade", "disabled"]),
            doc: "Whether a non-empty group switches protocol online: a classic group joined by a consumer-protocol member (upgrade), a consumer group whose last consumer-protocol member leaves (downgrade); bidirectional, upgrade, downgrade or disabled (docs/groups.md).";
        // Share groups (KIP-932); see docs/share-groups.md.
        group_share_heartbeat_interval_ms: i32 = "group.share.heartbeat.interval.ms", Int,
            Some("5000"), Implemented, live: false, valid: V::AtLeast(1), reads: [share_group_values],
            doc: "Heartbeat interval given to share group members.";
        group_share_session_timeout_ms: i32 = "group.share.session.timeout.ms", Int,
            Some("45000"), Implemented, live: false, valid: V::AtLeast(1), reads: [share_group_values],
            doc: "A share group member not heard from for this long is removed and its records released.";
        group_share_assignment_interval_ms: i32 = "group.share.assignment.interval.ms", Int,
            Some("1000"), Implemented, live: false, valid: V::AtLeast(0), reads: [share_group_values],
            doc: "A share group's assignment is recomputed at most this often, so a burst of joins is assigned once.";
        group_share_max_size: i32 = "group.share.max.size", Int, Some("200"), Implemented,
            live: false, valid: V::Between(1, 1000),
            doc: "Most members a share group may have; more are refused with GROUP_MAX_SIZE_REACHED.";
        group_share_record_lock_duration_ms: i32 = "group.share.record.lock.duration.ms", Int,
            Some("30000"), Implemented, live: false, valid: V::Between(1000, 3_600_000), reads: [share_group_values],
            doc: "How long a share consumer holds the records it fetched before they are handed to another.";
        group_share_delivery_count_limit: i32 = "group.share.delivery.count.limit", Int,
            Some("5"), Implemented, live: false, valid: V::Between(2, 10), reads: [share_group_values],
            doc: "Deliveries of one record before it is archived (a poison record stops here).";
        group_share_partition_max_record_locks: i32 = "group.share.partition.max.record.locks",
            Int, Some("2000"), Implemented, live: false, valid: V::Between(100, 10_000), reads: [share_group_values],
            doc: "Most records of one share partition in flight (acquired or waiting for redelivery) at a time.";
        group_share_max_share_sessions: i32 = "group.share.max.share.sessions", Int,
            Some("2000"), Implemented, live: false, valid: V::AtLeast(1),
            doc: "Most share sessions (one per share consumer and broker) open at a time.";
        // Streams groups (KIP-1071); see docs/groups.md section 6.
        group_streams_session_timeout_ms: i32 = "group.streams.session.timeout.ms", Int,
            Some("45000"), Implemented, live: false, valid: V::AtLeast(1), reads: [streams_group_values],
            doc: "A streams group member not heard from for this long is removed and its tasks reassigned.";
        group_streams_heartbeat_interval_ms: i32 = "group.streams.heartbeat.interval.ms", Int,
            Some("5000"), Implemented, live: false, valid: V::AtLeast(1), reads: [streams_group_values],
            doc: "Heartbeat interval given to streams group members; must be less than group.streams.session.timeout.ms.";
        group_streams_max_size: i32 = "group.streams.max.size", Int, Some("2147483647"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "Most members a streams group may have; more are refused with GROUP_MAX_SIZE_REACHED.";
        group_streams_num_standby_replicas: i32 = "group.streams.num.standby.replicas", Int,
            Some("0"), Implemented, live: false, valid: V::AtLeast(0), reads: [streams_group_values],
            doc: "Standby replicas of each stateful task, placed on other members than its active task.";
        group_streams_initial_rebalance_delay_ms: i32 = "group.streams.initial.rebalance.delay.ms",
            Int, Some("3000"), Implemented, live: false, valid: V::AtLeast(0), reads: [streams_group_values],
            doc: "How long an empty streams group waits after its first join before assigning, so instances starting together are assigned at once.";
        group_streams_assignment_interval_ms: i32 = "group.streams.assignment.interval.ms", Int,
            Some("1000"), Implemented, live: false, valid: V::AtLeast(0), reads: [streams_group_values],
            doc: "A streams group's target assignment is recomputed at most this often, so a burst of joins is assigned once.";
        group_streams_task_offset_interval_ms: i32 = "group.streams.task.offset.interval.ms", Int,
            Some("60000"), Implemented, live: false, valid: V::AtLeast(1), reads: [streams_group_values],
            doc: "(Kafka-internal key) How often streams group members are told to report their tasks' changelog offsets.";
        group_streams_acceptable_recovery_lag: i64 = "group.streams.acceptable.recovery.lag", Long,
            Some("10000"), Implemented, live: false, valid: V::AtLeast(0), reads: [streams_group_values],
            doc: "(Kafka-internal key) Changelog offsets a member may lag behind and still count as caught up; told to members.";
        share_coordinator_state_topic_num_partitions: i32 =
            "share.coordinator.state.topic.num.partitions", Int, Some("50"), Implemented,
            live: false, valid: V::AtLeast(1),
            doc: "Partitions of __share_group_state when it is created.";
        share_coordinator_snapshot_update_records_per_snapshot: i32 =
            "share.coordinator.snapshot.update.records.per.snapshot", Int, Some("500"),
            Implemented, live: false, valid: V::Between(0, 500),
            doc: "Share state updates written for a share partition before a full snapshot is written instead.";
        share_coordinator_state_topic_prune_interval_ms: i64 =
            "share.coordinator.state.topic.prune.interval.ms", Int, Some("300000"), Implemented,
            live: false, valid: V::AtLeast(1),
            doc: "(Kafka-internal key) How often records of __share_group_state that later snapshots made redundant are deleted (the log start of each partition moves up).";
        share_coordinator_cold_partition_snapshot_interval_ms: i64 =
            "share.coordinator.cold.partition.snapshot.interval.ms", Int, Some("300000"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "(Kafka-internal key) How often share partitions whose last snapshot is at least this old are snapshotted again, so an idle one does not hold pruning back.";
        producer_id_expiration_ms: i64 = "producer.id.expiration.ms", Int, Some("86400000"),
            Implemented, live: true, valid: V::AtLeast(1),
            doc: "An idempotent producer idle this long is forgotten by the partitions it wrote to.";
        transaction_max_timeout_ms: i32 = "transaction.max.timeout.ms", Int, Some("900000"),
            Implemented, live: false,
            doc: "The largest transaction.timeout.ms a producer may ask for.";
        transaction_state_log_num_partitions: i32 = "transaction.state.log.num.partitions", Int,
            Some("50"), Implemented, live: false,
            doc: "Partitions of __transaction_state when it is created.";
        transaction_abort_timed_out_transaction_cleanup_interval_ms: i64 =
            "transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, Some("10000"),
            Implemented, live: false,
            doc: "How often open transactions are checked against their timeout.";
        transaction_partition_verification_enable: bool =
            "transaction.partition.verification.enable", Boolean, Some("true"), Implemented,
            live: true,
            doc: "(KIP-890) A transactional batch is written only to a partition that is in its producer's ongoing transaction; Produce v12+ adds the partition itself whatever this says.";
        transactional_id_expiration_ms: i64 = "transactional.id.expiration.ms", Int,
            Some("604800000"), Implemented, live: false,
            doc: "A transactional id with no transaction in progress and no update for this long is removed.";
        transaction_remove_expired_transaction_cleanup_interval_ms: i64 =
            "transaction.remove.expired.transaction.cleanup.interval.ms", Int, Some("3600000"),
            Implemented, live: false,
            doc: "How often transactional ids are checked for expiry.";
        shutdown_timeout_ms: i64 = "shutdown.timeout.ms", Long, Some("30000"), Skiff, live: false,
            valid: V::AtLeast(0),
            doc: "(Skiff-only) How long a graceful shutdown may take.";
        metrics_listener: Option<HostPort> = "metrics.listener", String, None, Skiff, live: false,
            custom: None,
            doc: "(Skiff-only) host:port to serve Prometheus /metrics on; unset = off.";
        skiff_http_listener: Option<HostPort> = "skiff.http.listener", String, None, Skiff,
            live: false, custom: None,
            doc: "(Skiff-only) host:port of the HTTP API (/v1 tables and compaction routes, /metrics; docs/http-api.md); unset = off.";
        skiff_http_ssl_enabled: bool = "skiff.http.ssl.enabled", Boolean, Some("false"), Skiff,
            live: false,
            doc: "(Skiff-only) Serve the HTTP API over TLS with the broker's ssl.* keystore (and truststore for ssl.client.auth).";
        skiff_http_authentication: String = "skiff.http.authentication", String, Some("none"),
            Skiff, live: false,
            doc: "(Skiff-only) How HTTP API callers authenticate: none, or basic and/or bearer (comma-separated): Basic against the PLAIN users and SCRAM credentials, Bearer against the OAUTHBEARER JWT validator.";
        skiff_console_enable: bool = "skiff.console.enable", Boolean, Some("true"), Skiff,
            live: false,
            doc: "(Skiff-only) Serve the web console at /console on the HTTP API listener (docs/console.md), behind the listener's authentication and the broker's ACLs.";
        skiff_console_read_only: bool = "skiff.console.read.only", Boolean, Some("false"), Skiff,
            live: false,
            doc: "(Skiff-only) The console shows everything but changes nothing: no create, alter, delete, produce, offset reset or compact-now (they answer 403 and their forms are not shown).";
        skiff_snapshot_memory_bytes: i64 = "skiff.snapshot.memory.bytes", Long, Some("33554432"),
            Skiff, live: false, valid: V::AtLeast(1024),
            doc: "(Skiff-only) Memory bound of one table snapshot's key map (compacted topics as tables, docs/snapshots.md); a partition with more keys than fit is read in several hash slices, two scans each.";
        skiff_snapshot_max_concurrent: i32 = "skiff.snapshot.max.concurrent", Int, Some("2"),
            Skiff, live: false, valid: V::AtLeast(1),
            doc: "(Skiff-only) Table snapshots that may run at once; one more is refused (busy) rather than queued.";
        skiff_log_open_files_max: i32 = "skiff.log.open.files.max", Int, Some("0"), Skiff,
            live: false, valid: V::AtLeast(0),
            doc: "(Skiff-only) Segment files (logs and indexes) kept open at once; the least recently used are closed and opened again on their next use, so the partition count is not bound by the open-file limit (docs/storage.md). 0 = half of the process's soft open-file limit; at least 16.";
        skiff_key_index_memory_bytes: i64 = "skiff.key.index.memory.bytes", Long,
            Some("67108864"), Skiff, live: false, valid: V::AtLeast(0),
            doc: "(Skiff-only) Memory shared by the key indexes of every partition with skiff.key.index.enable=true (docs/key-index.md); 29 to 57 bytes per key, so 64 MiB holds 1.2 to 2.3 million keys. A partition whose index would exceed it drops its index and its lookups answer over_budget.";
        skiff_key_index_build_bytes_per_second: i64 = "skiff.key.index.build.bytes.per.second",
            Long, Some("0"), Skiff, live: false, valid: V::AtLeast(0),
            doc: "(Skiff-only) Read rate of the background thread that builds key indexes after a restart or when one is enabled, so a rebuild does not compete with produce and fetch for the disk; 0 = unlimited. Lookups answer loading until their partition is built.";
        // SASL (SASL_PLAINTEXT and SASL_SSL listeners); see docs/security.md.
        connections_max_reauth_ms: i64 = "connections.max.reauth.ms", Long, Some("0"),
            Implemented, live: false,
            doc: "(KIP-368) When > 0, a SASL session lasts at most this long (less if the OAUTHBEARER token expires first): the client must re-authenticate, else its next request closes the connection. 0 = sessions never expire.";
        sasl_server_max_receive_size: i32 = "sasl.server.max.receive.size", Int, Some("524288"),
            Implemented, live: false, valid: V::AtLeast(1),
            doc: "Largest frame (request or raw SASL token) accepted before authentication; a larger one closes the connection.";
        connection_failed_authentication_delay_ms: i32 =
            "connection.failed.authentication.delay.ms", Int, Some("100"), Implemented,
            live: false, valid: V::AtLeast(0),
            doc: "How long the broker waits before it answers a failed SASL authentication and closes the connection (slows down password guessing).";
    }
    others {
        "broker.id", Int, Some("-1"), Implemented, live: false, reads: [node_id],
            doc: "Kafka's older name of node.id: setting one sets the other; both set must agree.";
        "log.dir", List, Some("./data"), Implemented, live: false, reads: [log_dirs],
            doc: "The data directory when log.dirs is unset.";
        "listener.security.protocol.map", String,
            Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
            Implemented, live: false, reads: [listeners, listener_protocol],
            doc: "Listener name to security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.";
        "group.consumer.min.session.timeout.ms", Int, Some("45000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Lower bound of a consumer group's consumer.session.timeout.ms.";
        "group.consumer.max.session.timeout.ms", Int, Some("60000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Upper bound of a consumer group's consumer.session.timeout.ms.";
        "group.consumer.min.heartbeat.interval.ms", Int, Some("5000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Lower bound of a consumer group's consumer.heartbeat.interval.ms.";
        "group.consumer.max.heartbeat.interval.ms", Int, Some("15000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Upper bound of a consumer group's consumer.heartbeat.interval.ms.";
        "group.share.min.session.timeout.ms", Int, Some("45000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.session.timeout.ms.";
        "group.share.max.session.timeout.ms", Int, Some("60000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.session.timeout.ms.";
        "group.share.min.heartbeat.interval.ms", Int, Some("5000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.heartbeat.interval.ms.";
        "group.share.max.heartbeat.interval.ms", Int, Some("15000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.heartbeat.interval.ms.";
        "group.share.min.record.lock.duration.ms", Int, Some("15000"), Implemented, live: false, valid: V::Between(1000, 30_000),
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.record.lock.duration.ms.";
        "group.share.max.record.lock.duration.ms", Int, Some("60000"), Implemented, live: false, valid: V::Between(30_000, 3_600_000),
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.record.lock.duration.ms.";
        "group.share.min.delivery.count.limit", Int, Some("2"), Implemented, live: false, valid: V::Between(2, 5),
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.delivery.count.limit.";
        "group.share.max.delivery.count.limit", Int, Some("10"), Implemented, live: false, valid: V::Between(5, 25),
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.delivery.count.limit.";
        "group.share.min.partition.max.record.locks", Int, Some("100"), Implemented, live: false, valid: V::Between(100, 2000),
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.partition.max.record.locks.";
        "group.share.max.partition.max.record.locks", Int, Some("4000"), Implemented, live: false, valid: V::Between(2000, 10_000),
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.partition.max.record.locks.";
        "group.share.min.assignment.interval.ms", Int, Some("0"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Lower bound of a share group's share.assignment.interval.ms.";
        "group.share.max.assignment.interval.ms", Int, Some("15000"), Implemented, live: false,
            reads: [validate_group_configs],
            doc: "Upper bound of a share group's share.assignment.interval.ms.";
        "group.streams.min.session.timeout.ms", Int, Some("45000"), Implemented, live: false,
            valid: V::AtLeast(1), reads: [validate_group_configs],
            doc: "Lower bound of a streams group's streams.session.timeout.ms.";
        "group.streams.max.session.timeout.ms", Int, Some("60000"), Implemented, live: false,
            valid: V::AtLeast(1), reads: [validate_group_configs],
            doc: "Upper bound of a streams group's streams.session.timeout.ms.";
        "group.streams.min.heartbeat.interval.ms", Int, Some("5000"), Implemented, live: false,
            valid: V::AtLeast(1), reads: [validate_group_configs],
            doc: "Lower bound of a streams group's streams.heartbeat.interval.ms.";
        "group.streams.max.heartbeat.interval.ms", Int, Some("15000"), Implemented, live: false,
            valid: V::AtLeast(1), reads: [validate_group_configs],
            doc: "Upper bound of a streams group's streams.heartbeat.interval.ms.";
        "group.streams.max.standby.replicas", Int, Some("2"), Implemented, live: false,
            valid: V::AtLeast(0), reads: [validate_group_configs],
            doc: "Upper bound of a streams group's streams.num.standby.replicas.";
        "group.streams.min.assignment.interval.ms", Int, Some("0"), Implemented, live: false,
            valid: V::AtLeast(0), reads: [validate_group_configs],
            doc: "Lower bound of a streams group's streams.assignment.interval.ms.";
        "group.streams.max.assignment.interval.ms", Int, Some("15000"), Implemented, live: false,
            valid: V::AtLeast(0), reads: [validate_group_configs],
            doc: "Upper bound of a streams group's streams.assignment.interval.ms.";
        "group.streams.min.task.offset.interval.ms", Int, Some("15000"), Implemented, live: false,
            valid: V::AtLeast(1), reads: [validate_group_configs],
            doc: "(Kafka-internal key) Lower bound of a streams group's streams.task.offset.interval.ms.";
        // Streams group keys Skiff accepts (with Kafka's checks) and does not act on.
        "group.streams.num.warmup.replicas", Int, Some("2"), Recognised, live: false,
            valid: V::AtLeast(0), reads: [],
            doc: "(Kafka-internal key) Accepted and not acted on: Kafka 4.4's streams assignor places no warm-up tasks yet, nor does Skiff's.";
        "group.streams.max.warmup.replicas", Int, Some("20"), Recognised, live: false,
            valid: V::AtLeast(0), reads: [],
            doc: "(Kafka-internal key) Accepted and not acted on (no warm-up tasks); must not be below group.streams.num.warmup.replicas.";
        "group.streams.assignors", List, Some("sticky"), Recognised, live: false, reads: [],
            doc: "Accepted and not acted on: Skiff has one streams task assignor, Kafka's sticky one.";
        "group.streams.assignor.offload.enable", Boolean, Some("true"), Recognised, live: false,
            reads: [],
            doc: "(Kafka-internal key) Accepted and not acted on: Skiff computes streams assignments on the coordinator.";
        "group.streams.rack.aware.assignment.tags", List, Some(""), Implemented, live: false,
            reads: [streams_group_values],
            doc: "Client tag keys every streams group member must report (MISSING_CLIENT_TAGS otherwise); no duplicates. As in Kafka 4.4, standbys are not yet placed by them.";
        "group.streams.topology.description.plugin.class", Class, None, Recognised, live: false,
            reads: [],
            doc: "Accepted and not acted on: Skiff loads no plugins.";
        "compression.type", String, Some("producer"), Implemented, live: true,
            reads: [compression_type],
            doc: "Default of the topic config compression.type.";
        "log.cleanup.policy", List, Some("delete"), Implemented, live: true,
            reads: [cleanup_policy],
            doc: "Default of cleanup.policy: delete, compact, both or none.";
        "log.cleaner.delete.retention.ms", Long, Some("86400000"), Implemented, live: true,
            reads: [delete_retention_ms],
            doc: "Default of delete.retention.ms: how long compaction keeps tombstones.";
        "log.cleaner.max.compaction.lag.ms", Long, Some("9223372036854775807"), Implemented,
            live: true, reads: [max_compaction_lag_ms],
            doc: "Default of max.compaction.lag.ms.";
        "log.cleaner.min.cleanable.ratio", Double, Some("0.5"), Implemented, live: true,
            reads: [min_cleanable_dirty_ratio],
            doc: "Default of min.cleanable.dirty.ratio.";
        "log.cleaner.min.compaction.lag.ms", Long, Some("0"), Implemented, live: true,
            reads: [min_compaction_lag_ms],
            doc: "Default of min.compaction.lag.ms; must not exceed log.cleaner.max.compaction.lag.ms.";
        "log.flush.interval.messages", Long, Some("9223372036854775807"), Implemented, live: true,
            reads: [flush_messages],
            doc: "Default of flush.messages: fsync after this many messages.";
        "log.flush.interval.ms", Long, None, Implemented, live: true, reads: [flush_ms],
            doc: "Default of flush.ms: fsync when unflushed data is older than this.";
        "log.index.interval.bytes", Int, Some("4096"), Implemented, live: true,
            reads: [index_interval_bytes],
            doc: "Default of index.interval.bytes.";
        "log.index.size.max.bytes", Int, Some("10485760"), Implemented, live: true,
            reads: [segment_index_bytes],
            doc: "Default of segment.index.bytes.";
        "log.message.timestamp.after.max.ms", Long, Some("3600000"), Implemented, live: true,
            reads: [message_timestamp_after_max_ms],
            doc: "Default of message.timestamp.after.max.ms.";
        "log.message.timestamp.before.max.ms", Long, Some("9223372036854775807"), Implemented,
            live: true, reads: [message_timestamp_before_max_ms],
            doc: "Default of message.timestamp.before.max.ms.";
        "log.message.timestamp.type", String, Some("CreateTime"), Implemented, live: true,
            reads: [message_timestamp_type],
            doc: "Default of message.timestamp.type: CreateTime or LogAppendTime.";
        "log.preallocate", Boolean, Some("false"), Recognised, live: false, reads: [],
            doc: "Default of preallocate; accepted and not acted on: Skiff never preallocates segment files.";
        "log.retention.bytes", Long, Some("-1"), Implemented, live: true,
            reads: [retention_bytes],
            doc: "Default of retention.bytes; -1 = no size limit.";
        "log.retention.ms", Long, None, Implemented, live: true, valid: V::None,
            reads: [retention_ms],
            doc: "Default of retention.ms (over .minutes and .hours); any negative value = keep forever.";
        "log.retention.minutes", Int, None, Implemented, live: false, reads: [retention_ms],
            doc: "Default of retention.ms in minutes, when log.retention.ms is unset.";
        "log.retention.hours", Int, Some("168"), Implemented, live: false,
            reads: [retention_ms],
            doc: "Default of retention.ms in hours, when log.retention.ms and .minutes are unset.";
        "log.roll.ms", Long, None, Implemented, live: true, reads: [segment_ms],
            doc: "Default of segment.ms: age at which the active segment rolls.";
        "log.roll.hours", Int, Some("168"), Implemented, live: false, valid: V::AtLeast(1),
            reads: [segment_ms],
            doc: "Default of segment.ms in hours, when log.roll.ms is unset.";
        "log.roll.jitter.ms", Long, None, Implemented, live: true, reads: [segment_jitter_ms],
            doc: "Default of segment.jitter.ms.";
        "log.roll.jitter.hours", Int, Some("0"), Implemented, live: false, valid: V::AtLeast(0),
            reads: [segment_jitter_ms],
            doc: "Default of segment.jitter.ms in hours, when log.roll.jitter.ms is unset.";
        "log.segment.bytes", Int, Some("1073741824"), Implemented, live: true,
            reads: [segment_bytes],
            doc: "Default of segment.bytes: size at which the active segment rolls.";
        "log.segment.delete.delay.ms", Long, Some("60000"), Recognised, live: false, reads: [],
            doc: "Default of file.delete.delay.ms; accepted and not acted on: Skiff unlinks a removed segment's files at once (readers that have them open keep reading on POSIX).";
        // TLS (SSL listeners). Each may be given per listener as
        // listener.name.<lower-case listener name>.<key>.
        "ssl.keystore.type", String, Some("JKS"), Implemented, live: true, reads: [listener_ssl],
            doc: "Format of the server keystore; Skiff reads PEM only (set \"PEM\").";
        "ssl.keystore.location", String, None, Implemented, live: true, reads: [listener_ssl],
            doc: "PEM file with the server's private key (PKCS#8, PKCS#1 or SEC1) and certificate chain.";
        "ssl.keystore.certificate.chain", Password, None, Implemented, live: true,
            reads: [listener_ssl],
            doc: "Inline PEM certificate chain of the server (with ssl.keystore.key, instead of ssl.keystore.location).";
        "ssl.keystore.key", Password, None, Implemented, live: true, reads: [listener_ssl],
            doc: "Inline PEM private key of the server.";
        "ssl.key.password", Password, None, Implemented, live: true, reads: [listener_ssl],
            doc: "Password of an encrypted PKCS#8 private key (PKCS#12 PBE-SHA1-3DES, as Java 17 writes, or PBES2 with AES or 3DES); as in Kafka, set only with an encrypted key.";
        "ssl.truststore.type", String, Some("JKS"), Implemented, live: true, reads: [listener_ssl],
            doc: "Format of the truststore; Skiff reads PEM only (set \"PEM\").";
        "ssl.truststore.location", String, None, Implemented, live: true, reads: [listener_ssl],
            doc: "PEM file with the CA certificates client certificates are checked against.";
        "ssl.truststore.certificates", Password, None, Implemented, live: true,
            reads: [listener_ssl],
            doc: "Inline PEM CA certificates (instead of ssl.truststore.location).";
        "ssl.client.auth", String, Some("none"), Implemented, live: true, reads: [listener_ssl],
            doc: "Client certificates: none, requested (checked when sent) or required (mutual TLS).";
        "ssl.enabled.protocols", List, Some("TLSv1.2,TLSv1.3"), Implemented, live: true,
            reads: [listener_ssl],
            doc: "TLS versions offered: TLSv1.2 and/or TLSv1.3.";
        "ssl.cipher.suites", List, Some(""), Implemented, live: true, reads: [listener_ssl],
            doc: "Cipher suites by IANA name (e.g. TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384); empty = rustls's defaults; an unknown name fails the start.";
        "ssl.principal.mapping.rules", String, Some("DEFAULT"), Implemented, live: true,
            reads: [listener_ssl],
            doc: "Rules from a client certificate's subject (RFC 2253) to the User: principal name, as Kafka's.";
        "ssl.allow.dn.changes", Boolean, Some("false"), Implemented, live: false,
            reads: [listener_ssl],
            doc: "Whether a reloaded server certificate (changed on disk or through AlterConfigs) may have another subject; if not, the change is refused and the old certificate stays.";
        "ssl.allow.san.changes", Boolean, Some("false"), Implemented, live: false,
            reads: [listener_ssl],
            doc: "Whether a reloaded server certificate may drop subject alternative names of the old one (adding names is always allowed); if not, the change is refused.";
        // SASL. sasl.enabled.mechanisms may be given per listener as
        // listener.name.<lower-case listener>.sasl.enabled.mechanisms, the JAAS line and the
        // server callback handler per listener and mechanism as
        // listener.name.<listener>.<lower-case mechanism>.sasl.jaas.config (…callback.handler.class).
        "sasl.enabled.mechanisms", List, Some("GSSAPI"), Implemented, live: false,
            reads: [listener_sasl],
            doc: "Mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. Kafka's default GSSAPI (Kerberos) is not supported, so a SASL listener must set this (an unsupported name stops the start).";
        "sasl.jaas.config", Password, None, Implemented, live: false, reads: [listener_sasl],
            doc: "JAAS line used when no listener.name.<l>.<mechanism>.sasl.jaas.config is set: PlainLoginModule with user_<name>=\"<password>\" entries, ScramLoginModule, OAuthBearerLoginModule.";
        "sasl.server.callback.handler.class", Class, None, Implemented, live: false,
            reads: [listener_sasl],
            doc: "Only org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler (for OAUTHBEARER, which Skiff requires: it never accepts unsigned tokens); anything else stops the start.";
        "sasl.oauthbearer.jwks.endpoint.url", String, None, Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: the JWKS with the keys that sign tokens, as a file: URL (file:///etc/skiff/jwks.json); Skiff fetches nothing over the network, so http(s) URLs are refused.";
        "sasl.oauthbearer.expected.audience", List, Some(""), Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: a token must name one of these in aud; empty = not checked.";
        "sasl.oauthbearer.expected.issuer", String, None, Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: a token's iss must equal this; unset = not checked.";
        "sasl.oauthbearer.sub.claim.name", String, Some("sub"), Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: the claim that names the principal.";
        "sasl.oauthbearer.scope.claim.name", String, Some("scope"), Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: the claim with the token's scopes.";
        "sasl.oauthbearer.clock.skew.seconds", Int, Some("30"), Implemented, live: false,
            reads: [listener_sasl],
            doc: "OAUTHBEARER: clock difference tolerated when checking exp, nbf and iat.";
        "sasl.scram.users", Password, None, Skiff, live: false, reads: [listener_sasl],
            doc: "(Skiff-only) SCRAM users created at start when they have no credential yet for that mechanism, as an array of Kafka --add-scram arguments: [\"SCRAM-SHA-256=[name=alice,password=alice-secret]\"]. Existing credentials (e.g. changed with kafka-configs) are left alone.";
        "sasl.plain.hashed.users", Password, None, Skiff, live: false, reads: [listener_sasl],
            doc: "(Skiff-only) PLAIN users with salted password hashes instead of clear JAAS passwords, as an array of \"<name>=<hash>\"; make a hash with `skiff hash-password`.";
    }
}
