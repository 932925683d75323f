//! Group configs (config resource type GROUP, KIP-848): every group-level key Kafka 4.4
//! describes, with its default taken from the broker's `group.*` setting, validation of a
//! group's overrides against the broker's bounds with Kafka's messages, and the
//! DescribeConfigs(GROUP) view (sources GROUP_CONFIG and DEFAULT_CONFIG).
//!
//! Skiff serves consumer, share and streams groups. A consumer group is assigned as soon as it
//! changes, so of its keys only `consumer.session.timeout.ms` and
//! `consumer.heartbeat.interval.ms` can be set; every `share.*` key can (`group_share.rs`), and
//! the `streams.*` keys a streams group runs with (`group_streams.rs`). The keys Skiff would
//! not act on — the dead-letter-queue keys, the consumer assignment interval, and the streams
//! assignor name and assignor offload — are described with Kafka's defaults (as Kafka
//! describes them for any group) but refused on alter. `streams.num.warmup.replicas` is
//! accepted: Kafka 4.4 places no warm-up tasks whatever it says, and neither does Skiff. Keys Kafka defines as internal are accepted like the others but described only when
//! the group sets them, as Kafka does.
//!
//! Pure functions over a static table; safe from any thread.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::group_share;
use crate::group_streams;
use crate::types::{parse_value, ConfigSource, ConfigType, DescribedConfig, Validator};

/// One group config key.
#[derive(Clone, Copy, Debug)]
pub struct GroupConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The broker config that supplies the default (Kafka reports it as the DEFAULT_CONFIG
    /// synonym).
    pub broker_synonym: &'static str,
    /// Kafka 4.4's default, used when Skiff does not know the broker synonym.
    pub default: &'static str,
    /// `None`: Skiff acts on it; `Some(why)`: refused on alter, with this reason.
    pub refused: Option<&'static str>,
    /// Kafka defines it as internal: DescribeConfigs lists it only when the group sets it.
    pub internal: bool,
    pub doc: &'static str,
}

const TASK_ASSIGNOR: Option<&str> =
    Some("Skiff has only its built-in streams task assignor and no per-group choice");
const OFFLOAD: Option<&str> =
    Some("Skiff computes streams assignments on the coordinator and has no assignor offload");
const DLQ: Option<&str> = Some("Skiff does not write to dead-letter queues");
const ASSIGN: Option<&str> = Some(
    "Skiff assigns partitions as soon as a consumer group changes and has no assignment interval",
);

const fn def(
    name: &'static str,
    kind: ConfigType,
    broker_synonym: &'static str,
    default: &'static str,
    refused: Option<&'static str>,
    doc: &'static str,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        kind,
        broker_synonym,
        default,
        refused,
        internal: false,
        doc,
    }
}

/// A key Kafka defines as internal (see [`GroupConfigDef::internal`]).
const fn internal(
    name: &'static str,
    kind: ConfigType,
    broker_synonym: &'static str,
    default: &'static str,
    refused: Option<&'static str>,
    doc: &'static str,
) -> GroupConfigDef {
    GroupConfigDef {
        internal: true,
        ..def(name, kind, broker_synonym, default, refused, doc)
    }
}

use ConfigType::{Boolean, Int, List, Long, String as Str};

/// Sorted by name: Kafka 4.4's group configs (the consumer and share assignor-offload keys,
/// internal in Kafka, are not listed).
#[rustfmt::skip]
static DEFS: &[GroupConfigDef] = &[
    def("consumer.assignment.interval.ms", Int, "group.consumer.assignment.interval.ms", "1000", ASSIGN, ""),
    def("consumer.heartbeat.interval.ms", Int, "group.consumer.heartbeat.interval.ms", "5000", None,
        "The heartbeat interval given to the members of this consumer group."),
    def("consumer.session.timeout.ms", Int, "group.consumer.session.timeout.ms", "45000", None,
        "The timeout after which a member of this consumer group that stopped heartbeating is removed."),
    def("errors.deadletterqueue.copy.record.enable", Boolean, "errors.deadletterqueue.copy.record.enable", "false", DLQ, ""),
    def("errors.deadletterqueue.topic.name", Str, "errors.deadletterqueue.topic.name", "", DLQ, ""),
    def("share.assignment.interval.ms", Int, "group.share.assignment.interval.ms", "1000", None,
        "The shortest time between two assignments of this share group."),
    def("share.auto.offset.reset", Str, "share.auto.offset.reset", "latest", None,
        "Where a share partition of this group starts when it has no state: earliest, latest or by_duration:<ISO-8601 duration>."),
    def("share.delivery.count.limit", Int, "group.share.delivery.count.limit", "5", None,
        "Deliveries of one record to this share group before it is archived."),
    def("share.heartbeat.interval.ms", Int, "group.share.heartbeat.interval.ms", "5000", None,
        "The heartbeat interval given to the members of this share group."),
    def("share.isolation.level", Str, "share.isolation.level", "read_uncommitted", None,
        "read_committed: this share group is handed only committed transactional records."),
    def("share.partition.max.record.locks", Int, "group.share.partition.max.record.locks", "2000", None,
        "Most records of one share partition of this group in flight at a time."),
    def("share.record.lock.duration.ms", Int, "group.share.record.lock.duration.ms", "30000", None,
        "How long a member of this share group holds the records it fetched."),
    def("share.renew.acknowledge.enable", Boolean, "share.renew.acknowledge.enable", "true", None,
        "Whether members of this share group may renew their record locks."),
    def("share.session.timeout.ms", Int, "group.share.session.timeout.ms", "45000", None,
        "The timeout after which a member of this share group that stopped heartbeating is removed."),
    internal("streams.acceptable.recovery.lag", Long, "group.streams.acceptable.recovery.lag", "10000", None,
        "Changelog offsets a member of this streams group may lag behind and still count as caught up."),
    def("streams.assignment.interval.ms", Int, "group.streams.assignment.interval.ms", "1000", None,
        "The shortest time between two target assignments of this streams group."),
    def("streams.assignor.name", Str, "group.streams.assignors", "sticky", TASK_ASSIGNOR, ""),
    internal("streams.assignor.offload.enable", Boolean, "group.streams.assignor.offload.enable", "true", OFFLOAD, ""),
    def("streams.heartbeat.interval.ms", Int, "group.streams.heartbeat.interval.ms", "5000", None,
        "The heartbeat interval given to the members of this streams group."),
    def("streams.initial.rebalance.delay.ms", Int, "group.streams.initial.rebalance.delay.ms", "3000", None,
        "How long this streams group, when empty, waits after its first join before assigning."),
    def("streams.num.standby.replicas", Int, "group.streams.num.standby.replicas", "0", None,
        "Standby replicas of each stateful task of this streams group."),
    internal("streams.num.warmup.replicas", Int, "group.streams.num.warmup.replicas", "2", None,
        "Most warm-up replicas per task of this streams group (Kafka 4.4's assignor, like Skiff's, places none yet)."),
    def("streams.rack.aware.assignment.tags", List, "group.streams.rack.aware.assignment.tags", "", None,
        "Client tag keys every member of this streams group must report; a member without one is told MISSING_CLIENT_TAGS."),
    def("streams.session.timeout.ms", Int, "group.streams.session.timeout.ms", "45000", None,
        "The timeout after which a member of this streams group that stopped heartbeating is removed."),
    internal("streams.task.offset.interval.ms", Int, "group.streams.task.offset.interval.ms", "60000", None,
        "How often members of this streams group are told to report their tasks' changelog offsets."),
];

/// Every group config key.
pub fn group_config_defs() -> &'static [GroupConfigDef] {
    DEFS
}

/// Look up one group config key.
pub fn group_config_def(name: &str) -> Option<&'static GroupConfigDef> {
    DEFS.iter().find(|d| d.name == name)
}

fn broker_int(broker: &BrokerConfig, key: &str) -> i64 {
    crate::broker::broker_value(broker, key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The default of a group config: the broker's value of its synonym, else Kafka's default.
fn default_of(d: &GroupConfigDef, broker: &BrokerConfig) -> String {
    crate::broker::broker_value(broker, d.broker_synonym).unwrap_or_else(|| d.default.to_string())
}

/// The group key of the rack-aware assignment tags.
const RACK_TAGS: &str = "streams.rack.aware.assignment.tags";

/// Validate a group's complete new set of overrides. Errors carry Kafka's text and are
/// INVALID_CONFIG.
pub fn validate_group_configs(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Result<(), String> {
    // Kafka's order: every name first, then the rack tags' duplicates, then each value.
    for name in overrides.keys() {
        let def =
            group_config_def(name).ok_or_else(|| format!("Unknown group config name: {name}"))?;
        if let Some(why) = def.refused {
            return Err(format!("{why}: {name} cannot be set"));
        }
    }
    if let Some(tags) = overrides.get(RACK_TAGS) {
        if group_streams::has_duplicate_tags(tags) {
            return Err(format!("{RACK_TAGS} must not contain duplicate tag keys."));
        }
        if group_streams::tag_list(tags).contains(&"") {
            return Err(format!(
                "Configuration '{RACK_TAGS}' values must not be empty."
            ));
        }
    }
    for (name, value) in overrides {
        let Some(def) = group_config_def(name) else {
            continue;
        };
        let validator = if name.starts_with("share.") {
            group_share::validator(name)
        } else if name.starts_with("streams.") {
            group_streams::validator(name)
        } else {
            Validator::AtLeast(1)
        };
        let parsed = parse_value(name, def.kind, value, validator).map_err(|e| e.message)?;
        if name == "share.auto.offset.reset" {
            group_share::parse_share_offset_reset(value.trim())
                .map_err(|m| crate::error::TopicConfigError::invalid(name, value, &m).message)?;
        }
        let crate::types::Parsed::Int(v) = parsed else {
            continue;
        };
        if let Some(bound) = group_streams::bounds(name) {
            group_streams::check_bound(name, v, bound, |k| broker_int(broker, k))?;
            continue;
        }
        let (lo, hi) = match name.as_str() {
            "consumer.session.timeout.ms" => (
                "group.consumer.min.session.timeout.ms",
                "group.consumer.max.session.timeout.ms",
            ),
            "consumer.heartbeat.interval.ms" => (
                "group.consumer.min.heartbeat.interval.ms",
                "group.consumer.max.heartbeat.interval.ms",
            ),
            share => match group_share::bounds(share) {
                Some(b) => b,
                None => continue,
            },
        };
        let (lo, hi) = (broker_int(broker, lo), broker_int(broker, hi));
        if v < lo || v > hi {
            return Err(format!(
                "{name} must be in the range {lo} to {hi} inclusive."
            ));
        }
    }
    group_streams::check_session_exceeds_heartbeat(overrides, broker)
}

/// DescribeConfigs(GROUP): every group config with the group's override (GROUP_CONFIG) or the
/// default from the broker (DEFAULT_CONFIG, with the broker key as its synonym).
pub fn describe_group_configs(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Vec<DescribedConfig> {
    DEFS.iter()
        .filter(|d| !d.internal || overrides.contains_key(d.name))
        .map(|d| {
            let default = default_of(d, broker);
            let mut synonyms = Vec::new();
            let (value, source) = match overrides.get(d.name) {
                Some(v) => {
                    synonyms.push((
                        d.name.to_string(),
                        Some(v.clone()),
                        ConfigSource::GroupConfig,
                    ));
                    (v.clone(), ConfigSource::GroupConfig)
                }
                None => (default.clone(), ConfigSource::Default),
            };
            synonyms.push((
                d.broker_synonym.to_string(),
                Some(default),
                ConfigSource::Default,
            ));
            DescribedConfig {
                name: d.name.to_string(),
                value: Some(value),
                source,
                read_only: false,
                is_sensitive: false,
                kind: d.kind,
                doc: d.doc,
                synonyms,
            }
        })
        .collect()
}

/// A group's consumer timeouts in force: its overrides, else the broker's settings.
pub fn group_consumer_timeouts(overrides: &BTreeMap<String, String>) -> (Option<i32>, Option<i32>) {
    let get = |k: &str| overrides.get(k).and_then(|v| v.trim().parse::<i32>().ok());
    (
        get("consumer.session.timeout.ms"),
        get("consumer.heartbeat.interval.ms"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn table_sorted_with_kafkas_21_keys_and_4_internal_streams_keys() {
        assert_eq!(DEFS.len(), 25);
        assert_eq!(DEFS.iter().filter(|d| !d.internal).count(), 21);
        for w in DEFS.windows(2) {
            assert!(w[0].name < w[1].name);
        }
    }

    #[test]
    fn bounds_and_messages_are_kafkas() {
        let b = BrokerConfig::default();
        let check = |k: &str, v: &str| validate_group_configs(&map(&[(k, v)]), &b);
        assert_eq!(check("consumer.session.timeout.ms", "50000"), Ok(()));
        assert_eq!(
            check("consumer.session.timeout.ms", "30000"),
            Err(
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.".into()
            )
        );
        assert_eq!(
            check("consumer.heartbeat.interval.ms", "16000"),
            Err(
                "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
                    .into()
            )
        );
        assert_eq!(
            check("consumer.heartbeat.interval.ms", "abc"),
            Err("Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT".into())
        );
        assert_eq!(
            check("foo.bar", "1"),
            Err("Unknown group config name: foo.bar".into())
        );
        assert_eq!(check("share.session.timeout.ms", "50000"), Ok(()));
        assert_eq!(
            check("share.record.lock.duration.ms", "10000"),
            Err(
                "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
                    .into()
            )
        );
        assert_eq!(
            check("share.record.lock.duration.ms", "999"),
            Err("Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000".into())
        );
        assert_eq!(
            check("share.delivery.count.limit", "11"),
            Err("share.delivery.count.limit must be in the range 2 to 10 inclusive.".into())
        );
        assert_eq!(check("share.partition.max.record.locks", "4000"), Ok(()));
        assert_eq!(check("share.auto.offset.reset", "by_duration:PT1H"), Ok(()));
        assert_eq!(
            check("share.auto.offset.reset", "none"),
            Err("Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.".into())
        );
        assert_eq!(
            check("share.isolation.level", "snapshot"),
            Err("Invalid value snapshot for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted".into())
        );
        assert_eq!(check("share.renew.acknowledge.enable", "false"), Ok(()));
    }

    #[test]
    fn streams_bounds_and_messages_are_kafkas() {
        let b = BrokerConfig::default();
        let check = |kv: &[(&str, &str)]| validate_group_configs(&map(kv), &b);
        let ok = [
            ("streams.session.timeout.ms", "60000"),
            ("streams.heartbeat.interval.ms", "15000"),
            ("streams.num.standby.replicas", "2"),
            ("streams.initial.rebalance.delay.ms", "0"),
            ("streams.assignment.interval.ms", "0"),
            ("streams.task.offset.interval.ms", "15000"),
            ("streams.acceptable.recovery.lag", "9223372036854775807"),
            ("streams.num.warmup.replicas", "20"),
            ("streams.rack.aware.assignment.tags", " zone , rack"),
            ("streams.rack.aware.assignment.tags", ""),
        ];
        for kv in ok {
            assert_eq!(check(&[kv]), Ok(()), "{kv:?}");
        }
        let cases = [
            ("streams.session.timeout.ms", "44999", "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
            ("streams.heartbeat.interval.ms", "15001", "streams.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
            ("streams.assignment.interval.ms", "15001", "streams.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
            ("streams.num.standby.replicas", "3", "streams.num.standby.replicas must be less than or equal to 2"),
            ("streams.task.offset.interval.ms", "14999", "streams.task.offset.interval.ms must be greater than or equal to 15000"),
            ("streams.num.standby.replicas", "-1", "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0"),
            ("streams.initial.rebalance.delay.ms", "-1", "Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be at least 0"),
            ("streams.task.offset.interval.ms", "0", "Invalid value 0 for configuration streams.task.offset.interval.ms: Value must be at least 1"),
            ("streams.acceptable.recovery.lag", "-1", "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0"),
            ("streams.num.warmup.replicas", "21", "streams.num.warmup.replicas must be less than or equal to 20"),
            ("streams.num.warmup.replicas", "-1", "Invalid value -1 for configuration streams.num.warmup.replicas: Value must be at least 0"),
            ("streams.rack.aware.assignment.tags", "zone, rack ,zone", "streams.rack.aware.assignment.tags must not contain duplicate tag keys."),
            ("streams.rack.aware.assignment.tags", "zone,,rack", "Configuration 'streams.rack.aware.assignment.tags' values must not be empty."),
            ("streams.assignor.name", "sticky", "Skiff has only its built-in streams task assignor and no per-group choice: streams.assignor.name cannot be set"),
            ("streams.assignor.offload.enable", "false", "Skiff computes streams assignments on the coordinator and has no assignor offload: streams.assignor.offload.enable cannot be set"),
        ];
        for (k, v, msg) in cases {
            assert_eq!(check(&[(k, v)]), Err(msg.to_string()), "{k}={v}");
        }
        // The session in force must exceed the heartbeat in force: the group's own values,
        // else the broker's.
        let (lo, hi) = (
            "\"group.streams.min.heartbeat.interval.ms\" = 5000\n",
            "\"group.streams.max.heartbeat.interval.ms\" = 50000\n",
        );
        let (wide, _) = crate::tests::from_toml(&format!("[broker]\n{lo}{hi}")).unwrap();
        let session_err = Err(
            "streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms"
                .to_string(),
        );
        assert_eq!(
            validate_group_configs(&map(&[("streams.heartbeat.interval.ms", "45000")]), &wide),
            session_err
        );
        assert_eq!(
            validate_group_configs(
                &map(&[
                    ("streams.heartbeat.interval.ms", "45000"),
                    ("streams.session.timeout.ms", "50000")
                ]),
                &wide
            ),
            Ok(())
        );
        assert_eq!(
            validate_group_configs(
                &map(&[
                    ("streams.heartbeat.interval.ms", "50000"),
                    ("streams.session.timeout.ms", "50000")
                ]),
                &wide
            ),
            session_err
        );
    }

    #[test]
    fn streams_bounds_follow_the_broker() {
        let (b, _) = crate::tests::from_toml("[broker]\n\"group.streams.max.standby.replicas\" = 5\n\"group.streams.num.standby.replicas\" = 1\n\"group.streams.min.task.offset.interval.ms\" = 1000\n")
        .unwrap();
        let check = |k: &str, v: &str| validate_group_configs(&map(&[(k, v)]), &b);
        assert_eq!(check("streams.num.standby.replicas", "5"), Ok(()));
        assert_eq!(
            check("streams.num.standby.replicas", "6"),
            Err("streams.num.standby.replicas must be less than or equal to 5".into())
        );
        assert_eq!(check("streams.task.offset.interval.ms", "1000"), Ok(()));
        let d = describe_group_configs(&BTreeMap::new(), &b);
        let s = d
            .iter()
            .find(|c| c.name == "streams.num.standby.replicas")
            .unwrap();
        assert_eq!(s.value.as_deref(), Some("1"));
        assert_eq!(s.source, ConfigSource::Default);
    }

    #[test]
    fn internal_streams_keys_are_described_only_when_set() {
        let b = BrokerConfig::default();
        let d = describe_group_configs(&BTreeMap::new(), &b);
        assert!(d
            .iter()
            .all(|c| c.name != "streams.task.offset.interval.ms"));
        let d = describe_group_configs(&map(&[("streams.task.offset.interval.ms", "20000")]), &b);
        assert_eq!(d.len(), 22);
        let t = d
            .iter()
            .find(|c| c.name == "streams.task.offset.interval.ms")
            .unwrap();
        assert_eq!(t.value.as_deref(), Some("20000"));
        assert_eq!(t.source, ConfigSource::GroupConfig);
        assert_eq!(
            t.synonyms[1],
            (
                "group.streams.task.offset.interval.ms".into(),
                Some("60000".into()),
                ConfigSource::Default
            )
        );
    }

    #[test]
    fn bounds_follow_the_broker() {
        let (b, _) = crate::tests::from_toml("[broker]\n\"group.consumer.min.session.timeout.ms\" = 10000\n\"group.consumer.session.timeout.ms\" = 20000\n")
        .unwrap();
        assert_eq!(
            validate_group_configs(&map(&[("consumer.session.timeout.ms", "10000")]), &b),
            Ok(())
        );
        let d = describe_group_configs(&BTreeMap::new(), &b);
        let s = d
            .iter()
            .find(|c| c.name == "consumer.session.timeout.ms")
            .unwrap();
        assert_eq!(s.value.as_deref(), Some("20000"));
        assert_eq!(s.source, ConfigSource::Default);
    }

    #[test]
    fn describe_reports_overrides_as_group_config() {
        let b = BrokerConfig::default();
        let d = describe_group_configs(&map(&[("consumer.session.timeout.ms", "50000")]), &b);
        assert_eq!(d.len(), 21);
        let s = d
            .iter()
            .find(|c| c.name == "consumer.session.timeout.ms")
            .unwrap();
        assert_eq!(s.value.as_deref(), Some("50000"));
        assert_eq!(s.source, ConfigSource::GroupConfig);
        assert_eq!(
            s.synonyms,
            vec![
                (
                    "consumer.session.timeout.ms".into(),
                    Some("50000".into()),
                    ConfigSource::GroupConfig
                ),
                (
                    "group.consumer.session.timeout.ms".into(),
                    Some("45000".into()),
                    ConfigSource::Default
                ),
            ]
        );
        let a = d
            .iter()
            .find(|c| c.name == "streams.assignor.name")
            .unwrap();
        assert_eq!(a.value.as_deref(), Some("sticky"));
        assert_eq!(a.synonyms[0].0, "group.streams.assignors");
    }
}
