//! The limits a streams group runs with: Kafka's `group.streams.*` broker configs and their
//! per-group overrides, with Kafka's defaults.

use std::collections::BTreeMap;

/// Kafka's `group.streams.session.timeout.ms` default.
pub const DEFAULT_SESSION_TIMEOUT_MS: i32 = 45_000;
/// Kafka's `group.streams.heartbeat.interval.ms` default.
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
/// Kafka's `group.streams.max.size` default.
pub const DEFAULT_MAX_SIZE: usize = i32::MAX as usize;
/// Kafka's `group.streams.num.standby.replicas` default.
pub const DEFAULT_STANDBY_REPLICAS: u32 = 0;
/// Kafka's `group.streams.initial.rebalance.delay.ms` default.
pub const DEFAULT_INITIAL_REBALANCE_DELAY_MS: i32 = 3_000;
/// Kafka's `group.streams.assignment.interval.ms` default.
pub const DEFAULT_ASSIGNMENT_INTERVAL_MS: i32 = 1_000;
/// Kafka's `group.streams.task.offset.interval.ms` default.
pub const DEFAULT_TASK_OFFSET_INTERVAL_MS: i32 = 60_000;
/// Kafka's `group.streams.acceptable.recovery.lag` default.
pub const DEFAULT_ACCEPTABLE_RECOVERY_LAG: i64 = 10_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamsGroupSettings {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub max_size: usize,
    pub standby_replicas: u32,
    /// A group that was empty waits this long after its first join before assigning, so
    /// the instances starting together are assigned at once.
    pub initial_rebalance_delay_ms: i32,
    /// At most one new target per interval.
    pub assignment_interval_ms: i32,
    /// Told to members: how often to report changelog offsets.
    pub task_offset_interval_ms: i32,
    /// Told to members (v1+).
    pub acceptable_recovery_lag: i64,
    /// Client tag keys every member must report (MISSING_CLIENT_TAGS otherwise). Kafka 4.4's
    /// sticky assignor does not place standbys by them yet, and neither does Skiff's.
    pub rack_aware_assignment_tags: Vec<String>,
}

impl StreamsGroupSettings {
    /// The assignment configs Kafka records with each group epoch; a change of any of them
    /// starts a rebalance.
    pub fn assignment_configs(&self) -> BTreeMap<String, String> {
        let mut configs = BTreeMap::from([(
            STANDBY_REPLICAS_CONFIG.to_string(),
            self.standby_replicas.to_string(),
        )]);
        if !self.rack_aware_assignment_tags.is_empty() {
            configs.insert(
                RACK_TAGS_CONFIG.to_string(),
                self.rack_aware_assignment_tags.join(","),
            );
        }
        configs
    }
}

/// Names of the assignment configs in the group metadata record.
const STANDBY_REPLICAS_CONFIG: &str = "num.standby.replicas";
const RACK_TAGS_CONFIG: &str = "rack.aware.assignment.tags";

impl Default for StreamsGroupSettings {
    fn default() -> StreamsGroupSettings {
        StreamsGroupSettings {
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
            heartbeat_interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS,
            max_size: DEFAULT_MAX_SIZE,
            standby_replicas: DEFAULT_STANDBY_REPLICAS,
            initial_rebalance_delay_ms: DEFAULT_INITIAL_REBALANCE_DELAY_MS,
            assignment_interval_ms: DEFAULT_ASSIGNMENT_INTERVAL_MS,
            task_offset_interval_ms: DEFAULT_TASK_OFFSET_INTERVAL_MS,
            acceptable_recovery_lag: DEFAULT_ACCEPTABLE_RECOVERY_LAG,
            rack_aware_assignment_tags: Vec::new(),
        }
    }
}
