//! Dynamic broker configs (Kafka's `DynamicBrokerConfig`): which broker keys may change at
//! runtime, validation of a new per-broker or cluster-default (`<default>`) set with Kafka's
//! messages, and the effective [`BrokerConfig`] built from the static configuration plus the
//! two dynamic layers (Kafka's precedence: per-broker dynamic > cluster-default dynamic >
//! static file/`--set`/environment > default).
//!
//! A key is dynamic in Skiff only when Kafka marks it dynamic **and** Skiff applies a change
//! live, which the `live:` flag of its row in `keys.rs` says: the log cleaner's keys (the pool
//! is restarted, as Kafka's `LogCleaner.reconfigure` does), `message.max.bytes` and the `log.*`
//! topic defaults Skiff acts on, which topics without an override inherit,
//! `producer.id.expiration.ms` and `transaction.partition.verification.enable`.
//! Other keys Kafka could change dynamically (thread pools, listeners, SSL/SASL, quotas,
//! `max.connections*`, remote storage) are refused, because Skiff would not act on them.
//!
//! Pure functions over static tables; safe from any thread.

use std::collections::BTreeMap;

use crate::broker::{broker_validator, build, BrokerConfig, Setting};
use crate::names::{self, KeyStatus};
use crate::topic::topic_config_defs;
use crate::types::parse_value;

/// What a dynamic change of one broker key would do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicKey {
    /// Kafka and Skiff both change it at runtime.
    Applied,
    /// Kafka changes it at runtime, but Skiff would not act on a change: refused.
    NotApplied,
    /// A known key Kafka reads only at start.
    Static,
    /// No such broker config.
    Unknown,
}

/// Keys Kafka 4.4 can change dynamically that Skiff does not act on dynamically (thread pools,
/// metric reporters, listeners and their security settings, connection quotas, replication
/// throttles, remote storage). `max.connections*` is left to the connection-limit work.
const KAFKA_DYNAMIC_NOT_APPLIED: &[&str] = &[
    "advertised.listeners",
    "background.threads",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
    "listener.security.protocol.map",
    "listeners",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "metric.reporters",
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
    "remote.fetch.max.wait.ms",
    "remote.list.offsets.request.timeout.ms",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copier.thread.pool.size",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.expiration.thread.pool.size",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.reader.threads",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// Whether (and how) `name` can be changed dynamically.
pub fn broker_key_dynamic(name: &str) -> DynamicKey {
    if crate::ssl::listener_override_base(name).is_some() {
        // `listener.name.<l>.ssl.*`: applied by the SSL listener at its next connection.
        return DynamicKey::Applied;
    }
    if crate::sasl::listener_sasl_override_base(name).is_some() {
        // Read when the listener starts, like the plain SASL keys.
        return DynamicKey::NotApplied;
    }
    let Some(def) = names::broker_config_def(name) else {
        return DynamicKey::Unknown;
    };
    let kafka_dynamic_log_default = topic_config_defs()
        .iter()
        .any(|d| d.broker_key == Some(name));
    if def.live && def.status == KeyStatus::Implemented {
        DynamicKey::Applied
    } else if def.live
        || kafka_dynamic_log_default
        || KAFKA_DYNAMIC_NOT_APPLIED.contains(&name)
        || name.starts_with("ssl.")
        || name.starts_with("sasl.")
    {
        DynamicKey::NotApplied
    } else {
        DynamicKey::Static
    }
}

/// Why a dynamic update is refused; the broker maps `Request` to INVALID_REQUEST and
/// `Config` to INVALID_CONFIG.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DynamicRefusal {
    Request(String),
    Config(String),
}

/// Check a new dynamic set (all of one resource's keys after the update): every key must be
/// known and dynamic in Skiff, and every value must parse and pass the key's validator.
/// Kafka's texts: "Cannot update these configs dynamically: [k]" and "Invalid value v for
/// configuration k: reason" (both INVALID_REQUEST).
pub fn validate_dynamic_broker(props: &BTreeMap<String, String>) -> Result<(), DynamicRefusal> {
    let unknown: Vec<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| broker_key_dynamic(k) == DynamicKey::Unknown)
        .collect();
    if let Some(first) = unknown.first() {
        // Kafka stores unknown names without complaint; Skiff would then report a config it
        // never acts on, so it refuses them with INVALID_CONFIG (as Kafka does for an
        // unknown name in APPEND/SUBTRACT).
        return Err(DynamicRefusal::Config(format!(
            "Unknown broker config name: {first}"
        )));
    }
    let of = |kind: DynamicKey| -> Vec<&str> {
        props
            .keys()
            .map(String::as_str)
            .filter(|k| broker_key_dynamic(k) == kind)
            .collect()
    };
    let fixed = of(DynamicKey::Static);
    if !fixed.is_empty() {
        return Err(DynamicRefusal::Request(format!(
            "Cannot update these configs dynamically: [{}]",
            fixed.join(", ")
        )));
    }
    let not_applied = of(DynamicKey::NotApplied);
    if !not_applied.is_empty() {
        return Err(DynamicRefusal::Request(format!(
            "Skiff does not act on a dynamic change of these configs, so it cannot update them dynamically: [{}]",
            not_applied.join(", ")
        )));
    }
    for (key, value) in props {
        if let Some(def) = names::broker_config_def(key) {
            parse_value(key, def.kind, value, broker_validator(key))
                .map_err(|e| DynamicRefusal::Request(e.message))?;
        }
    }
    Ok(())
}

/// The effective configuration: `static_config` (as loaded at start) with the cluster-default
/// and then the per-broker dynamic layers on top, validated as a whole (cross-key checks such
/// as min/max compaction lag).
pub fn with_dynamic(
    static_config: &BrokerConfig,
    default_layer: &BTreeMap<String, String>,
    broker_layer: &BTreeMap<String, String>,
) -> Result<BrokerConfig, DynamicRefusal> {
    let mut settings: BTreeMap<String, Setting> = BTreeMap::new();
    let layers = [
        (&static_config.explicit, "static broker config"),
        (default_layer, "dynamic default broker config"),
        (broker_layer, "dynamic broker config"),
    ];
    for (layer, origin) in layers {
        for (k, v) in layer {
            settings.insert(
                k.clone(),
                Setting {
                    value: v.clone(),
                    origin: origin.to_string(),
                },
            );
        }
    }
    let (mut cfg, _warnings) = build(&settings, Vec::new()).map_err(|e| match e {
        crate::ConfigError::InvalidValue { message, .. } => DynamicRefusal::Request(message),
        other => DynamicRefusal::Request(other.to_string()),
    })?;
    cfg.explicit = static_config.explicit.clone();
    cfg.topics = static_config.topics.clone();
    cfg.dynamic_default = default_layer.clone();
    cfg.dynamic_broker = broker_layer.clone();
    Ok(cfg)
}

/// Kafka's checks that compare the new value with the one in force
/// (`LogCleaner.validateReconfiguration`), with Kafka's wording.
pub fn check_reconfiguration(old: &BrokerConfig, new: &BrokerConfig) -> Result<(), DynamicRefusal> {
    let (now, next) = (old.log_cleaner_threads, new.log_cleaner_threads);
    if now == next {
        return Ok(());
    }
    let why = if next < 1 {
        "Log cleaner threads should be at least 1".to_string()
    } else if next < now / 2 {
        format!("Log cleaner threads cannot be reduced to less than half the current value {now}")
    } else if next > now.saturating_mul(2) {
        format!(
            "Log cleaner threads cannot be increased to more than double the current value {now}"
        )
    } else {
        return Ok(());
    };
    Err(DynamicRefusal::Request(format!(
        "Invalid value org.apache.kafka.common.config.ConfigException: {why} for configuration Invalid dynamic configuration"
    )))
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
    fn classifies_keys() {
        for k in [
            "log.cleaner.threads",
            "log.cleaner.io.max.bytes.per.second",
            "log.retention.ms",
            "log.retention.bytes",
            "log.segment.bytes",
            "message.max.bytes",
            "log.cleanup.policy",
            "producer.id.expiration.ms",
            // TLS settings: the SSL listener rebuilds its configuration at the next connection.
            "ssl.keystore.location",
            "listener.name.external.ssl.keystore.location",
            "listener.name.ssl.ssl.client.auth",
        ] {
            assert_eq!(broker_key_dynamic(k), DynamicKey::Applied, "{k}");
        }
        for k in [
            "log.retention.hours",
            "node.id",
            "log.dirs",
            "log.roll.hours",
        ] {
            assert_eq!(broker_key_dynamic(k), DynamicKey::Static, "{k}");
        }
        for k in [
            "num.io.threads",
            "max.connections",
            "min.insync.replicas",
            "ssl.keystore.password",
            "listeners",
        ] {
            assert_eq!(broker_key_dynamic(k), DynamicKey::NotApplied, "{k}");
        }
        assert_eq!(broker_key_dynamic("foo.bar"), DynamicKey::Unknown);
        assert_eq!(
            broker_key_dynamic("listener.name.x.ssl.bogus"),
            DynamicKey::Unknown
        );
    }

    #[test]
    fn validation_messages_are_kafkas() {
        assert_eq!(
            validate_dynamic_broker(&map(&[("log.retention.hours", "10")])),
            Err(DynamicRefusal::Request(
                "Cannot update these configs dynamically: [log.retention.hours]".into()
            ))
        );
        assert_eq!(
            validate_dynamic_broker(&map(&[("log.segment.bytes", "100")])),
            Err(DynamicRefusal::Request(
                "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"
                    .into()
            ))
        );
        assert_eq!(
            validate_dynamic_broker(&map(&[("log.cleaner.threads", "x")])),
            Err(DynamicRefusal::Request(
                "Invalid value x for configuration log.cleaner.threads: Not a number of type INT"
                    .into()
            ))
        );
        assert!(matches!(
            validate_dynamic_broker(&map(&[("foo.bar", "1")])),
            Err(DynamicRefusal::Config(_))
        ));
        assert!(matches!(
            validate_dynamic_broker(&map(&[("num.io.threads", "9")])),
            Err(DynamicRefusal::Request(m)) if m.contains("num.io.threads")
        ));
        assert_eq!(
            validate_dynamic_broker(&map(&[
                ("log.retention.ms", "1000"),
                ("log.cleaner.threads", "2")
            ])),
            Ok(())
        );
    }

    #[test]
    fn layers_take_precedence_over_static() {
        let base = crate::load_str(
            "[broker]\n\"log.retention.bytes\" = \"100\"\n\"log.cleaner.threads\" = 1\n",
            std::path::Path::new("test.toml"),
            &[],
            Vec::<(String, String)>::new(),
        )
        .unwrap()
        .0;
        let default = map(&[
            ("log.retention.bytes", "200"),
            ("message.max.bytes", "5000"),
        ]);
        let broker = map(&[("log.retention.bytes", "300")]);
        let cfg = with_dynamic(&base, &default, &BTreeMap::new()).unwrap();
        assert_eq!(cfg.log.retention_bytes, 200);
        assert_eq!(cfg.log.max_message_bytes, 5000);
        assert_eq!(cfg.message_max_bytes, 5000);
        let cfg = with_dynamic(&base, &default, &broker).unwrap();
        assert_eq!(cfg.log.retention_bytes, 300);
        assert_eq!(
            cfg.explicit.get("log.retention.bytes").map(String::as_str),
            Some("100")
        );
        let bad = map(&[
            ("log.cleaner.min.compaction.lag.ms", "10"),
            ("log.cleaner.max.compaction.lag.ms", "5"),
        ]);
        assert!(with_dynamic(&base, &bad, &BTreeMap::new()).is_err());
    }

    #[test]
    fn cleaner_threads_may_at_most_double_or_halve() {
        let one = BrokerConfig::default();
        let with = |n| BrokerConfig {
            log_cleaner_threads: n,
            ..BrokerConfig::default()
        };
        assert!(check_reconfiguration(&one, &with(2)).is_ok());
        let err = check_reconfiguration(&one, &with(3)).unwrap_err();
        assert!(
            matches!(err, DynamicRefusal::Request(m) if m.contains("cannot be increased to more than double the current value 1"))
        );
        assert!(check_reconfiguration(&with(4), &with(1)).is_err());
        assert!(check_reconfiguration(&with(4), &with(2)).is_ok());
        assert!(
            matches!(check_reconfiguration(&one, &with(0)), Err(DynamicRefusal::Request(m)) if m.contains("at least 1"))
        );
    }
}
