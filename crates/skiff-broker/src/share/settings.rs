//! The per-group settings a share partition runs with, and the one place they are resolved.
//!
//! As Kafka does, these are read at every acquisition and acknowledgement from the group's
//! dynamic configs (`share.*`), falling back to the broker's `group.share.*` settings
//! ([`from_group_configs`]); [`KafkaDefaults`] is Kafka's defaults, for tests.
//!
//! Thread safety: a resolver is shared by every request (`Send + Sync`), and asked without
//! any share-partition lock held.

use skiff_coordinator::share::{
    AutoOffsetReset, ShareLimits, DEFAULT_DELIVERY_COUNT_LIMIT, DEFAULT_MAX_IN_FLIGHT_RECORDS,
    DEFAULT_RECORD_LOCK_DURATION_MS,
};

/// `share.isolation.level` of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShareIsolation {
    #[default]
    ReadUncommitted,
    ReadCommitted,
}

/// Everything the share-partition manager needs to know about a group's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupSettings {
    /// `share.record.lock.duration.ms` (Kafka default 30 000).
    pub lock_duration_ms: i64,
    /// `share.delivery.count.limit` (Kafka default 5).
    pub delivery_count_limit: u16,
    /// `share.partition.max.record.locks` (Kafka default 2000).
    pub max_record_locks: u32,
    /// `share.auto.offset.reset` (Kafka default latest).
    pub auto_offset_reset: AutoOffsetReset,
    /// `share.isolation.level` (Kafka default read_uncommitted).
    pub isolation: ShareIsolation,
    /// `share.renew.acknowledge.enable` (Kafka default true; RENEW needs ShareFetch v2, which
    /// Skiff does not serve yet).
    pub renew_enabled: bool,
}

impl Default for ShareGroupSettings {
    fn default() -> Self {
        ShareGroupSettings {
            lock_duration_ms: DEFAULT_RECORD_LOCK_DURATION_MS,
            delivery_count_limit: DEFAULT_DELIVERY_COUNT_LIMIT,
            max_record_locks: DEFAULT_MAX_IN_FLIGHT_RECORDS,
            auto_offset_reset: AutoOffsetReset::Latest,
            isolation: ShareIsolation::ReadUncommitted,
            renew_enabled: true,
        }
    }
}

impl ShareGroupSettings {
    /// The two limits the state machine enforces itself.
    pub fn limits(&self) -> ShareLimits {
        ShareLimits {
            max_in_flight_records: self.max_record_locks,
            delivery_count_limit: self.delivery_count_limit,
        }
    }
}

/// Resolves a group's settings. Called on every share fetch and acknowledgement, so it must
/// be cheap (an in-memory lookup).
pub trait ShareSettings: Send + Sync {
    fn for_group(&self, group: &str) -> ShareGroupSettings;
}

/// Kafka 4.4's defaults for every group (no group configs yet).
#[derive(Debug, Clone, Copy, Default)]
pub struct KafkaDefaults;

impl ShareSettings for KafkaDefaults {
    fn for_group(&self, _group: &str) -> ShareGroupSettings {
        ShareGroupSettings::default()
    }
}

/// A group's settings from its `share.*` group configs and the broker's `group.share.*`.
pub fn from_group_configs(
    dynamic: std::sync::Arc<crate::dynamic_configs::DynamicConfigs>,
) -> std::sync::Arc<dyn ShareSettings> {
    std::sync::Arc::new(move |group: &str| {
        let v = dynamic.share_group_values(group);
        ShareGroupSettings {
            lock_duration_ms: i64::from(v.record_lock_duration_ms),
            delivery_count_limit: u16::try_from(v.delivery_count_limit)
                .unwrap_or(DEFAULT_DELIVERY_COUNT_LIMIT),
            max_record_locks: u32::try_from(v.partition_max_record_locks)
                .unwrap_or(DEFAULT_MAX_IN_FLIGHT_RECORDS),
            auto_offset_reset: match v.auto_offset_reset {
                skiff_config::ShareOffsetReset::Earliest => AutoOffsetReset::Earliest,
                skiff_config::ShareOffsetReset::Latest => AutoOffsetReset::Latest,
                skiff_config::ShareOffsetReset::ByDuration(duration_ms) => {
                    AutoOffsetReset::ByDuration { duration_ms }
                }
            },
            isolation: if v.read_committed {
                ShareIsolation::ReadCommitted
            } else {
                ShareIsolation::ReadUncommitted
            },
            renew_enabled: v.renew_acknowledge_enable,
        }
    })
}

/// Any closure from a group id to its settings (tests, and a quick way for the lead to wire
/// group configs).
impl<F> ShareSettings for F
where
    F: Fn(&str) -> ShareGroupSettings + Send + Sync,
{
    fn for_group(&self, group: &str) -> ShareGroupSettings {
        self(group)
    }
}
