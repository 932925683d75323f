//! The limits a share group is run with, resolved by the caller for each group (broker
//! config, overridden by the group's own `share.*` configs where Kafka allows it).

/// `group.share.heartbeat.interval.ms`.
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
/// `group.share.session.timeout.ms`.
pub const DEFAULT_SESSION_TIMEOUT_MS: i32 = 45_000;
/// `group.share.max.size`.
pub const DEFAULT_MAX_SIZE: usize = 200;
/// `group.share.assignment.interval.ms`.
pub const DEFAULT_ASSIGNMENT_INTERVAL_MS: i32 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareGroupSettings {
    /// Handed to members in every heartbeat response (the leave answer excepted).
    pub heartbeat_interval_ms: i32,
    /// A member not heard from for this long is removed from the group.
    pub session_timeout_ms: i32,
    /// Members beyond this many are refused with GROUP_MAX_SIZE_REACHED (broker-wide only,
    /// as in Kafka).
    pub max_size: usize,
    /// A new target assignment is computed at most this often: a burst of joins is assigned
    /// once instead of once per join. 0 computes it on every change.
    pub assignment_interval_ms: i32,
}

impl Default for ShareGroupSettings {
    fn default() -> Self {
        ShareGroupSettings {
            heartbeat_interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS,
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
            max_size: DEFAULT_MAX_SIZE,
            assignment_interval_ms: DEFAULT_ASSIGNMENT_INTERVAL_MS,
        }
    }
}
