//! The `share.*` group configs (KIP-932): how each is checked when a group overrides it, and
//! the values a share group runs with — the group's override, else the broker's `group.share.*`
//! setting, else Kafka's default.
//!
//! Pure functions; safe from any thread.

use std::collections::BTreeMap;

use crate::broker::BrokerConfig;
use crate::types::Validator;

/// `share.auto.offset.reset` values other than `by_duration:`.
const EARLIEST: &str = "earliest";
const LATEST: &str = "latest";
const BY_DURATION: &str = "by_duration:";

/// Per-key check of a share group config's value (before the broker bounds), as Kafka 4.4's
/// GroupConfig defines it: the value's own range.
pub(crate) fn validator(name: &str) -> Validator {
    match name {
        "share.record.lock.duration.ms" => Validator::AtLeast(1000),
        "share.delivery.count.limit" => Validator::AtLeast(2),
        "share.partition.max.record.locks" => Validator::AtLeast(100),
        "share.assignment.interval.ms" => Validator::AtLeast(0),
        "share.isolation.level" => Validator::OneOf(&["read_committed", "read_uncommitted"]),
        _ => Validator::AtLeast(1),
    }
}

/// The broker keys bounding a share group config (Kafka checks the group value against
/// them), if it has any.
pub(crate) fn bounds(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "share.session.timeout.ms" => (
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
        ),
        "share.heartbeat.interval.ms" => (
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
        ),
        "share.record.lock.duration.ms" => (
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        ),
        "share.delivery.count.limit" => (
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        ),
        "share.partition.max.record.locks" => (
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        ),
        "share.assignment.interval.ms" => (
            "group.share.min.assignment.interval.ms",
            "group.share.max.assignment.interval.ms",
        ),
        _ => return None,
    })
}

/// Where a share partition without state starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareOffsetReset {
    Earliest,
    Latest,
    /// The first record no older than this many milliseconds.
    ByDuration(i64),
}

/// Parse `share.auto.offset.reset` as Kafka does (case-insensitive; `by_duration:` takes an
/// ISO-8601 duration, `PnDTnHnMn.nS`, that is not negative). The error is Kafka's message.
pub fn parse_share_offset_reset(value: &str) -> Result<ShareOffsetReset, String> {
    let lower = value.to_ascii_lowercase();
    let parsed = match lower.as_str() {
        EARLIEST => Some(ShareOffsetReset::Earliest),
        LATEST => Some(ShareOffsetReset::Latest),
        v => v
            .strip_prefix(BY_DURATION)
            .and_then(iso_duration_ms)
            .filter(|ms| *ms >= 0)
            .map(ShareOffsetReset::ByDuration),
    };
    parsed.ok_or_else(|| {
        format!(
            "Invalid value `{value}` for configuration share.auto.offset.reset. The value must be \
             either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
        )
    })
}

/// An ISO-8601 duration in Java's `Duration.parse` form (`[-]PnDTnHnMn.nS`, each part
/// optional, at least one present, case-insensitive, fractions of seconds to nanoseconds) in
/// milliseconds. `None` when it does not parse or overflows.
fn iso_duration_ms(s: &str) -> Option<i64> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let rest = rest.strip_prefix(['p', 'P'])?;
    let (date, time) = match rest.find(['t', 'T']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut total: i64 = 0;
    let mut parts = 0;
    let mut add = |number: &str, unit_ms: i64| -> Option<()> {
        let n: i64 = number.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit_ms)?)?;
        parts += 1;
        Some(())
    };
    if !date.is_empty() {
        add(date.strip_suffix(['d', 'D'])?, 86_400_000)?;
    }
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, unit_ms) in [('h', 3_600_000), ('m', 60_000)] {
            if let Some(i) = time.find([unit, unit.to_ascii_uppercase()]) {
                add(&time[..i], unit_ms)?;
                time = &time[i + 1..];
            }
        }
        if !time.is_empty() {
            let seconds = time.strip_suffix(['s', 'S'])?;
            let (whole, fraction) = match seconds.split_once(['.', ',']) {
                Some((w, f)) => (w, f),
                None => (seconds, ""),
            };
            if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            add(whole, 1000)?;
            let millis: i64 = format!("{fraction:0<3}")[..3].parse().ok()?;
            let millis = if whole.starts_with('-') {
                -millis
            } else {
                millis
            };
            total = total.checked_add(millis)?;
        }
    }
    (parts > 0).then_some(total * sign)
}

/// The settings one share group runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareGroupValues {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment_interval_ms: i32,
    pub record_lock_duration_ms: i32,
    pub delivery_count_limit: i32,
    pub partition_max_record_locks: i32,
    pub auto_offset_reset: ShareOffsetReset,
    /// `share.isolation.level` is read_committed.
    pub read_committed: bool,
    pub renew_acknowledge_enable: bool,
}

/// A share group's settings: its overrides (already validated when they were set), else the
/// broker's.
pub fn share_group_values(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> ShareGroupValues {
    let get = |k: &str| overrides.get(k).map(|v| v.trim().to_string());
    let int = |k: &str, broker_value: i32| {
        get(k)
            .and_then(|v| v.parse::<i32>().ok())
            .unwrap_or(broker_value)
    };
    ShareGroupValues {
        session_timeout_ms: int(
            "share.session.timeout.ms",
            broker.group_share_session_timeout_ms,
        ),
        heartbeat_interval_ms: int(
            "share.heartbeat.interval.ms",
            broker.group_share_heartbeat_interval_ms,
        ),
        assignment_interval_ms: int(
            "share.assignment.interval.ms",
            broker.group_share_assignment_interval_ms,
        ),
        record_lock_duration_ms: int(
            "share.record.lock.duration.ms",
            broker.group_share_record_lock_duration_ms,
        ),
        delivery_count_limit: int(
            "share.delivery.count.limit",
            broker.group_share_delivery_count_limit,
        ),
        partition_max_record_locks: int(
            "share.partition.max.record.locks",
            broker.group_share_partition_max_record_locks,
        ),
        auto_offset_reset: get("share.auto.offset.reset")
            .and_then(|v| parse_share_offset_reset(&v).ok())
            .unwrap_or(ShareOffsetReset::Latest),
        read_committed: get("share.isolation.level").as_deref() == Some("read_committed"),
        renew_acknowledge_enable: get("share.renew.acknowledge.enable")
            .is_none_or(|v| !v.eq_ignore_ascii_case("false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_reset_parses_kafkas_forms_and_refuses_the_rest() {
        use ShareOffsetReset::*;
        assert_eq!(parse_share_offset_reset("earliest"), Ok(Earliest));
        assert_eq!(parse_share_offset_reset("LATEST"), Ok(Latest));
        let cases = [
            ("by_duration:PT1H", 3_600_000),
            ("by_duration:P1D", 86_400_000),
            ("by_duration:P1DT2H3M4.5S", 93_784_500),
            ("by_duration:pt0.25s", 250),
        ];
        for (v, ms) in cases {
            assert_eq!(parse_share_offset_reset(v), Ok(ByDuration(ms)), "{v}");
        }
        for bad in [
            "none",
            "",
            "by_duration:",
            "by_duration:PT",
            "by_duration:P",
            "by_duration:1H",
            "by_duration:-PT1H",
            "by_duration:PT-1M30S",
            "by_duration:PT1.0000000001S",
            "by_duration:PT1H2",
        ] {
            let e = parse_share_offset_reset(bad).unwrap_err();
            assert!(e.ends_with("'by_duration:<PnDTnHnMn.nS>'."), "{bad}: {e}");
        }
    }

    #[test]
    fn values_come_from_the_group_then_the_broker() {
        let b = BrokerConfig::default();
        let v = share_group_values(&BTreeMap::new(), &b);
        assert_eq!(
            v,
            ShareGroupValues {
                session_timeout_ms: 45_000,
                heartbeat_interval_ms: 5_000,
                assignment_interval_ms: 1_000,
                record_lock_duration_ms: 30_000,
                delivery_count_limit: 5,
                partition_max_record_locks: 2_000,
                auto_offset_reset: ShareOffsetReset::Latest,
                read_committed: false,
                renew_acknowledge_enable: true,
            }
        );
        let overrides: BTreeMap<String, String> = [
            ("share.record.lock.duration.ms", "15000"),
            ("share.delivery.count.limit", "3"),
            ("share.auto.offset.reset", "earliest"),
            ("share.isolation.level", "read_committed"),
            ("share.renew.acknowledge.enable", "false"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let v = share_group_values(&overrides, &b);
        assert_eq!(v.record_lock_duration_ms, 15_000);
        assert_eq!(v.delivery_count_limit, 3);
        assert_eq!(v.auto_offset_reset, ShareOffsetReset::Earliest);
        assert!(v.read_committed);
        assert!(!v.renew_acknowledge_enable);
    }
}
