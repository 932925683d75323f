//! The `streams.*` group configs and `group.streams.*` broker configs (KIP-1071): how a
//! group's override is checked against the broker's bounds, the cross-key rules Kafka 4.4
//! enforces on the broker keys at start, and the values a streams group runs with — the
//! group's override, else the broker's `group.streams.*` setting, else Kafka's default.
//!
//! Pure functions; safe from any thread.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::types::Validator;

/// Per-key check of a streams group config's value (before the broker bounds): the value's
/// own range, as Kafka 4.4's GroupConfig defines it.
pub(crate) fn validator(name: &str) -> Validator {
    match name {
        "streams.session.timeout.ms"
        | "streams.heartbeat.interval.ms"
        | "streams.task.offset.interval.ms" => Validator::AtLeast(1),
        _ => Validator::AtLeast(0),
    }
}

/// How the broker bounds a streams group config. Kafka gives some keys only a lower or only
/// an upper bound, each with its own message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamsBound {
    /// Between the values of these two broker keys.
    Range(&'static str, &'static str),
    /// At least the value of this broker key.
    Min(&'static str),
    /// At most the value of this broker key.
    Max(&'static str),
}

/// The broker keys bounding a streams group config, if it has any.
pub(crate) fn bounds(name: &str) -> Option<StreamsBound> {
    use StreamsBound::*;
    Some(match name {
        "streams.session.timeout.ms" => Range(
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
        ),
        "streams.heartbeat.interval.ms" => Range(
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
        ),
        "streams.assignment.interval.ms" => Range(
            "group.streams.min.assignment.interval.ms",
            "group.streams.max.assignment.interval.ms",
        ),
        "streams.num.standby.replicas" => Max("group.streams.max.standby.replicas"),
        "streams.num.warmup.replicas" => Max("group.streams.max.warmup.replicas"),
        "streams.task.offset.interval.ms" => Min("group.streams.min.task.offset.interval.ms"),
        _ => return None,
    })
}

/// Check `value` of group config `name` against its broker bound, with Kafka's message.
/// `broker` reads a broker key's value in force.
pub(crate) fn check_bound(
    name: &str,
    value: i64,
    bound: StreamsBound,
    broker: impl Fn(&str) -> i64,
) -> Result<(), String> {
    match bound {
        StreamsBound::Range(lo, hi) => {
            let (lo, hi) = (broker(lo), broker(hi));
            if value < lo || value > hi {
                return Err(format!(
                    "{name} must be in the range {lo} to {hi} inclusive."
                ));
            }
        }
        StreamsBound::Min(lo) => {
            let lo = broker(lo);
            if value < lo {
                return Err(format!("{name} must be greater than or equal to {lo}"));
            }
        }
        StreamsBound::Max(hi) => {
            let hi = broker(hi);
            if value > hi {
                return Err(format!("{name} must be less than or equal to {hi}"));
            }
        }
    }
    Ok(())
}

/// Kafka checks, after every key's own bound, that a group's session timeout in force (its
/// override, else the broker's) exceeds its heartbeat interval in force, when the group sets
/// either of them: a member told to heartbeat less often than its session lasts would expire.
pub(crate) fn check_session_exceeds_heartbeat(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Result<(), String> {
    const SESSION: &str = "streams.session.timeout.ms";
    const HEARTBEAT: &str = "streams.heartbeat.interval.ms";
    if !overrides.contains_key(SESSION) && !overrides.contains_key(HEARTBEAT) {
        return Ok(());
    }
    let get = |k: &str, broker_value: i32| {
        overrides
            .get(k)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(i64::from(broker_value))
    };
    let session = get(SESSION, broker.group_streams_session_timeout_ms);
    let heartbeat = get(HEARTBEAT, broker.group_streams_heartbeat_interval_ms);
    if session <= heartbeat {
        return Err(format!("{SESSION} must be greater than {HEARTBEAT}"));
    }
    Ok(())
}

/// One of Kafka's start-up rules over the `group.streams.*` broker keys: `left` compared with
/// `right` must hold.
struct BrokerRule {
    left: &'static str,
    right: &'static str,
    holds: fn(i64, i64) -> bool,
    /// Kafka's wording of the relation, between the two key names.
    relation: &'static str,
}

/// Kafka 4.4's checks of the broker keys, in Kafka's order (the first that fails is
/// reported).
const BROKER_RULES: &[BrokerRule] = &[
    ge(
        "group.streams.max.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
    ),
    ge(
        "group.streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
    ),
    le(
        "group.streams.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    ge(
        "group.streams.max.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
    ),
    ge(
        "group.streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
    ),
    le(
        "group.streams.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
    ),
    BrokerRule {
        left: "group.streams.heartbeat.interval.ms",
        right: "group.streams.session.timeout.ms",
        holds: less,
        relation: "must be less than",
    },
    ge(
        "group.streams.max.assignment.interval.ms",
        "group.streams.min.assignment.interval.ms",
    ),
    ge(
        "group.streams.assignment.interval.ms",
        "group.streams.min.assignment.interval.ms",
    ),
    le(
        "group.streams.assignment.interval.ms",
        "group.streams.max.assignment.interval.ms",
    ),
    le(
        "group.streams.num.standby.replicas",
        "group.streams.max.standby.replicas",
    ),
    ge(
        "group.streams.task.offset.interval.ms",
        "group.streams.min.task.offset.interval.ms",
    ),
    le(
        "group.streams.num.warmup.replicas",
        "group.streams.max.warmup.replicas",
    ),
];

fn less(l: i64, r: i64) -> bool {
    l < r
}

fn at_least(l: i64, r: i64) -> bool {
    l >= r
}

fn at_most(l: i64, r: i64) -> bool {
    l <= r
}

const fn ge(left: &'static str, right: &'static str) -> BrokerRule {
    BrokerRule {
        left,
        right,
        holds: at_least,
        relation: "must be greater than or equal to",
    }
}

const fn le(left: &'static str, right: &'static str) -> BrokerRule {
    BrokerRule {
        left,
        right,
        holds: at_most,
        relation: "must be less than or equal to",
    }
}

/// The key named by `group.streams.rack.aware.assignment.tags`' duplicate check.
pub(crate) const RACK_TAGS: &str = "group.streams.rack.aware.assignment.tags";

/// Check the `group.streams.*` broker keys as Kafka does at start: bounds ordered, each value
/// inside its bounds, the heartbeat shorter than the session, and no duplicate rack tag.
/// `value` reads a key's value in force (set or default); `rack_tags` is the raw tag list if
/// set. The error names the two keys of the broken rule (the first is the one to blame) and
/// carries Kafka's message.
pub(crate) fn check_broker_keys(
    value: impl Fn(&str) -> i64,
    rack_tags: Option<&str>,
) -> Result<(), (&'static str, &'static str, String)> {
    for r in BROKER_RULES {
        if !(r.holds)(value(r.left), value(r.right)) {
            return Err((
                r.left,
                r.right,
                format!("{} {} {}", r.left, r.relation, r.right),
            ));
        }
    }
    if rack_tags.is_some_and(has_duplicate_tags) {
        return Err((
            RACK_TAGS,
            RACK_TAGS,
            format!("{RACK_TAGS} must not contain duplicate tag keys."),
        ));
    }
    Ok(())
}

/// Whether a rack-aware tag list names a tag twice (Kafka's check of the broker key and of
/// the group key, made before the value is parsed).
pub(crate) fn has_duplicate_tags(raw: &str) -> bool {
    let tags = tag_list(raw);
    let unique: std::collections::BTreeSet<&str> = tags.iter().copied().collect();
    unique.len() != tags.len()
}

/// The settings one streams group runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamsGroupValues {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub num_standby_replicas: i32,
    pub initial_rebalance_delay_ms: i32,
    pub assignment_interval_ms: i32,
    pub task_offset_interval_ms: i32,
    pub acceptable_recovery_lag: i64,
    /// Client tag keys every member must report, trimmed, in the order given.
    pub rack_aware_assignment_tags: Vec<String>,
}

/// A tag list as Kafka parses a LIST config: comma-separated, entries trimmed, an empty
/// value is no tag.
pub(crate) fn tag_list(raw: &str) -> Vec<&str> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split(',').map(str::trim).collect()
}

/// A streams group's settings: its overrides (already validated when they were set), else the
/// broker's.
pub fn streams_group_values(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> StreamsGroupValues {
    let int = |k: &str, broker_value: i32| {
        overrides
            .get(k)
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(broker_value)
    };
    StreamsGroupValues {
        session_timeout_ms: int(
            "streams.session.timeout.ms",
            broker.group_streams_session_timeout_ms,
        ),
        heartbeat_interval_ms: int(
            "streams.heartbeat.interval.ms",
            broker.group_streams_heartbeat_interval_ms,
        ),
        num_standby_replicas: int(
            "streams.num.standby.replicas",
            broker.group_streams_num_standby_replicas,
        ),
        initial_rebalance_delay_ms: int(
            "streams.initial.rebalance.delay.ms",
            broker.group_streams_initial_rebalance_delay_ms,
        ),
        assignment_interval_ms: int(
            "streams.assignment.interval.ms",
            broker.group_streams_assignment_interval_ms,
        ),
        task_offset_interval_ms: int(
            "streams.task.offset.interval.ms",
            broker.group_streams_task_offset_interval_ms,
        ),
        acceptable_recovery_lag: overrides
            .get("streams.acceptable.recovery.lag")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(broker.group_streams_acceptable_recovery_lag),
        rack_aware_assignment_tags: tag_list(
            &overrides
                .get("streams.rack.aware.assignment.tags")
                .cloned()
                .or_else(|| crate::broker::broker_value(broker, RACK_TAGS))
                .unwrap_or_default(),
        )
        .into_iter()
        .map(str::to_string)
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults(k: &str) -> i64 {
        crate::names::broker_config_def(k)
            .and_then(|d| d.default)
            .and_then(|v| v.parse().ok())
            .unwrap()
    }

    #[test]
    fn kafkas_defaults_pass_the_broker_rules() {
        assert_eq!(check_broker_keys(defaults, None), Ok(()));
        assert_eq!(check_broker_keys(defaults, Some("zone, rack")), Ok(()));
    }

    #[test]
    fn broken_broker_rules_carry_kafkas_messages() {
        let with =
            |key: &'static str, v: i64| move |k: &str| if k == key { v } else { defaults(k) };
        let msg = |r: Result<(), (&str, &str, String)>| r.unwrap_err().2;
        assert_eq!(
            msg(check_broker_keys(with("group.streams.min.heartbeat.interval.ms", 20_000), None)),
            "group.streams.max.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms"
        );
        assert_eq!(
            msg(check_broker_keys(with("group.streams.session.timeout.ms", 70_000), None)),
            "group.streams.session.timeout.ms must be less than or equal to group.streams.max.session.timeout.ms"
        );
        assert_eq!(
            msg(check_broker_keys(with("group.streams.num.standby.replicas", 3), None)),
            "group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"
        );
        assert_eq!(
            msg(check_broker_keys(with("group.streams.task.offset.interval.ms", 10_000), None)),
            "group.streams.task.offset.interval.ms must be greater than or equal to group.streams.min.task.offset.interval.ms"
        );
        assert_eq!(
            msg(check_broker_keys(with("group.streams.num.warmup.replicas", 21), None)),
            "group.streams.num.warmup.replicas must be less than or equal to group.streams.max.warmup.replicas"
        );
        assert_eq!(
            msg(check_broker_keys(with("group.streams.assignment.interval.ms", 16_000), None)),
            "group.streams.assignment.interval.ms must be less than or equal to group.streams.max.assignment.interval.ms"
        );
        // Heartbeat inside its bounds but not below the session.
        let hb = |k: &str| match k {
            "group.streams.max.heartbeat.interval.ms" | "group.streams.heartbeat.interval.ms" => {
                50_000
            }
            _ => defaults(k),
        };
        assert_eq!(
            check_broker_keys(hb, None).unwrap_err(),
            (
                "group.streams.heartbeat.interval.ms",
                "group.streams.session.timeout.ms",
                "group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms".to_string()
            )
        );
        assert_eq!(
            msg(check_broker_keys(defaults, Some("zone,rack, zone"))),
            "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys."
        );
    }

    #[test]
    fn values_come_from_the_group_then_the_broker() {
        let b = BrokerConfig::default();
        let v = streams_group_values(&BTreeMap::new(), &b);
        assert_eq!(
            v,
            StreamsGroupValues {
                session_timeout_ms: 45_000,
                heartbeat_interval_ms: 5_000,
                num_standby_replicas: 0,
                initial_rebalance_delay_ms: 3_000,
                assignment_interval_ms: 1_000,
                task_offset_interval_ms: 60_000,
                acceptable_recovery_lag: 10_000,
                rack_aware_assignment_tags: Vec::new(),
            }
        );
        let overrides: BTreeMap<String, String> = [
            ("streams.session.timeout.ms", "50000"),
            ("streams.num.standby.replicas", "2"),
            ("streams.acceptable.recovery.lag", "5000000000"),
            ("streams.rack.aware.assignment.tags", " zone ,rack "),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let v = streams_group_values(&overrides, &b);
        assert_eq!(v.session_timeout_ms, 50_000);
        assert_eq!(v.num_standby_replicas, 2);
        assert_eq!(v.acceptable_recovery_lag, 5_000_000_000);
        assert_eq!(v.heartbeat_interval_ms, 5_000);
        assert_eq!(v.rack_aware_assignment_tags, ["zone", "rack"]);
        // The broker's tags when the group names none.
        let (tagged, _) = crate::tests::from_toml(
            "[broker]\n\"group.streams.rack.aware.assignment.tags\" = \"az\"\n",
        )
        .unwrap();
        let v = streams_group_values(&BTreeMap::new(), &tagged);
        assert_eq!(v.rack_aware_assignment_tags, ["az"]);
    }
}
