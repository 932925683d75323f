//! Behaviour tests across modules: loading precedence and errors, topic override validation
//! and resolution, DescribeConfigs sources and synonyms, and the shipped example config.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skiff_log::{CleanupPolicy, LogConfig};
use skiff_records::TimestampType;

use crate::*;

fn from_toml(text: &str) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    load_str(text, Path::new("test.toml"), &[], Vec::new())
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn no_env() -> Vec<(String, String)> {
    Vec::new()
}

// ---- loading -------------------------------------------------------------------------------

#[test]
fn defaults_without_file() {
    let (cfg, warnings) = load(None, &[], no_env()).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(cfg, BrokerConfig::default());
    assert_eq!(cfg.listeners[0].to_string(), "PLAINTEXT://127.0.0.1:9092");
    assert_eq!(cfg.log, LogConfig::default());
}

#[test]
fn precedence_file_then_set_then_env() {
    let text = "[broker]\nnum.partitions = 2\nlog.retention.bytes = 10\nmessage.max.bytes = 100\n";
    let sets = vec![
        "num.partitions=3".to_string(),
        "log.retention.bytes=20".to_string(),
    ];
    let env = vec![
        ("SKIFF_NUM_PARTITIONS".to_string(), "4".to_string()),
        ("PATH".to_string(), "/bin".to_string()),
        ("SKIFF_CONFIG".to_string(), "skiff.toml".to_string()),
        ("SKIFF_LOG".to_string(), "debug".to_string()),
    ];
    let (cfg, _) = load_str(text, Path::new("t.toml"), &sets, env).unwrap();
    assert_eq!(cfg.num_partitions, 4, "env wins over --set and file");
    assert_eq!(cfg.log.retention_bytes, 20, "--set wins over file");
    assert_eq!(cfg.message_max_bytes, 100);
    assert_eq!(
        cfg.log.max_message_bytes, 100,
        "message.max.bytes is the topic default"
    );
    assert_eq!(
        cfg.explicit.get("num.partitions").map(String::as_str),
        Some("4")
    );
}

#[test]
fn env_names_map_dots_to_underscores() {
    let env = vec![
        (
            "SKIFF_ADVERTISED_LISTENERS".to_string(),
            "PLAINTEXT://broker:9092".to_string(),
        ),
        ("SKIFF_LOG_DIRS".to_string(), "/a,/b".to_string()),
    ];
    let (cfg, _) = load(None, &[], env).unwrap();
    assert_eq!(cfg.advertised_listeners[0].host, "broker");
    assert_eq!(cfg.log_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(env_var_name("log.retention.ms"), "SKIFF_LOG_RETENTION_MS");
    // No two keys share an environment variable name.
    let mut seen = std::collections::HashSet::new();
    for d in broker_config_names() {
        assert!(seen.insert(env_var_name(d.name)), "{}", d.name);
    }
}

#[test]
fn unknown_env_var_is_a_warning_not_an_error() {
    let env = vec![
        ("SKIFF_LOG_RETENTION_HOUR".to_string(), "1".to_string()),
        ("SKIFF_BIN".to_string(), "/opt/skiff/bin/skiff".to_string()),
        ("SKIFF_NUM_PARTITIONS".to_string(), "3".to_string()),
    ];
    let (cfg, warnings) = load(None, &[], env).unwrap();
    assert_eq!(cfg.num_partitions, 3, "known variables still apply");
    let named: Vec<&String> = warnings
        .iter()
        .filter(|w| w.starts_with("ignoring environment variable SKIFF_"))
        .collect();
    assert_eq!(named.len(), 2, "{warnings:?}");
    assert!(named[0].starts_with("ignoring environment variable SKIFF_BIN:"));
    assert!(!named[0].contains("did you mean"), "{}", named[0]);
    assert!(named[1].starts_with("ignoring environment variable SKIFF_LOG_RETENTION_HOUR:"));
    assert!(
        named[1].ends_with("; did you mean SKIFF_LOG_RETENTION_HOURS?"),
        "{}",
        named[1]
    );
}

#[test]
fn bad_value_of_a_known_env_var_is_still_an_error() {
    let env = vec![("SKIFF_NUM_PARTITIONS".to_string(), "many".to_string())];
    match load(None, &[], env).unwrap_err() {
        ConfigError::InvalidValue { key, origin, .. } => {
            assert_eq!(key, "num.partitions");
            assert_eq!(origin, "environment variable SKIFF_NUM_PARTITIONS");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn dotted_and_quoted_keys_are_the_same() {
    let (a, _) = from_toml("[broker]\nlog.dirs = \"x\"\nlog.retention.ms = 5\n").unwrap();
    let (b, _) = from_toml("[broker]\n\"log.dirs\" = \"x\"\n\"log.retention.ms\" = 5\n").unwrap();
    let (c, _) = from_toml("[broker.log]\ndirs = \"x\"\nretention.ms = 5\n").unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.log_dirs, vec![PathBuf::from("x")]);
    assert_eq!(a.log.retention_ms, 5);
    let e = from_toml("[broker]\nlog.dirs = \"x\"\n\"log.dirs\" = \"y\"\n").unwrap_err();
    assert!(
        matches!(e, ConfigError::Duplicate { ref key, .. } if key == "log.dirs"),
        "{e}"
    );
}

#[test]
fn arrays_join_with_commas() {
    let (cfg, _) = from_toml(
        "[broker]\nlog.dirs = [\"a\", \"b\"]\nlisteners = [\"PLAINTEXT://127.0.0.1:9092\"]\nlog.cleanup.policy = [\"compact\", \"delete\"]\n",
    )
    .unwrap();
    assert_eq!(cfg.log_dirs.len(), 2);
    assert_eq!(
        cfg.log.cleanup_policy,
        CleanupPolicy {
            delete: true,
            compact: true
        }
    );
    assert_eq!(cfg.explicit["log.cleanup.policy"], "compact,delete");
}

#[test]
fn typo_is_an_error_naming_the_key() {
    let e = from_toml("[broker]\nlog.retention.hour = 1\n").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("`log.retention.hour`"), "{text}");
    assert!(
        text.contains("did you mean `log.retention.hours`"),
        "{text}"
    );
    let e = load(None, &["num.partitons=3".to_string()], no_env()).unwrap_err();
    assert!(e.to_string().contains("num.partitons"), "{e}");
    assert!(matches!(
        load(None, &["oops".to_string()], no_env()),
        Err(ConfigError::BadSet { .. })
    ));
}

#[test]
fn unknown_table_and_topic_keys_are_errors() {
    assert!(matches!(
        from_toml("[brokers]\nx = 1\n"),
        Err(ConfigError::UnknownTable { .. })
    ));
    assert!(matches!(
        from_toml("top = 1\n"),
        Err(ConfigError::UnknownTable { .. })
    ));
    let e = from_toml("[[topic]]\nname = \"a\"\npartition = 3\n").unwrap_err();
    assert!(e.to_string().contains("unknown key `partition`"), "{e}");
}

#[test]
fn bad_value_is_an_error_naming_the_key() {
    let e = from_toml("[broker]\nnum.partitions = \"many\"\n").unwrap_err();
    match e {
        ConfigError::InvalidValue { key, message, .. } => {
            assert_eq!(key, "num.partitions");
            assert_eq!(
                message,
                "Invalid value many for configuration num.partitions: Not a number of type INT"
            );
        }
        e => panic!("{e}"),
    }
    let e = from_toml("[broker]\nlog.segment.bytes = 1000\n").unwrap_err();
    assert!(
        e.to_string().contains("Value must be at least 1048576"),
        "{e}"
    );
    let e = from_toml("[broker]\nlisteners = \"SSL://127.0.0.1:9093\"\n").unwrap_err();
    assert!(
        e.to_string().contains("`listeners`") && e.to_string().contains("PLAINTEXT only"),
        "{e}"
    );
    let e = from_toml("[broker]\nlisteners = \"PLAINTEXT://0.0.0.0:9092\"\n").unwrap_err();
    assert!(e.to_string().contains("advertised.listeners"), "{e}");
    let e = from_toml("[broker]\ndefault.replication.factor = 3\n").unwrap_err();
    assert!(e.to_string().contains("default.replication.factor"), "{e}");
    let e = from_toml(
        "[broker]\nlog.cleaner.min.compaction.lag.ms = 10\nlog.cleaner.max.compaction.lag.ms = 5\n",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("conflict topic config setting"),
        "{e}"
    );
}

#[test]
fn metrics_listener_is_off_by_default_and_validated() {
    let (cfg, _) = from_toml("").unwrap();
    assert_eq!(cfg.metrics_listener, None);
    let (cfg, warnings) = from_toml("[broker]\nmetrics.listener = \"0.0.0.0:9100\"\n").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let hp = cfg.metrics_listener.unwrap();
    assert_eq!((hp.host.as_str(), hp.port), ("0.0.0.0", 9100));
    let e = from_toml("[broker]\nmetrics.listener = \"9100\"\n").unwrap_err();
    match e {
        ConfigError::InvalidValue { key, message, .. } => {
            assert_eq!(key, "metrics.listener");
            assert!(message.contains("HOST:PORT"), "{message}");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn container_listeners_with_advertised_host() {
    let (cfg, _) = from_toml(
        "[broker]\nlisteners = \"PLAINTEXT://0.0.0.0:9092\"\nadvertised.listeners = \"PLAINTEXT://kafka:9092\"\n",
    )
    .unwrap();
    assert_eq!(cfg.listeners[0].host, "0.0.0.0");
    assert_eq!(cfg.advertised_listeners[0].host, "kafka");
}

#[test]
fn unimplemented_keys_give_one_warning() {
    let (_, warnings) = from_toml(
        "[broker]\nnum.network.threads = 8\nssl.keystore.type = \"PKCS12\"\nlog.retention.hours = 1\n",
    )
    .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("num.network.threads") && warnings[0].contains("ssl.keystore.type")
    );
    assert!(!warnings[0].contains("log.retention.hours"));
}

#[test]
fn retention_precedence_ms_over_minutes_over_hours() {
    let (c, _) = from_toml("[broker]\nlog.retention.hours = 2\n").unwrap();
    assert_eq!(c.log.retention_ms, 7_200_000);
    let (c, _) =
        from_toml("[broker]\nlog.retention.hours = 2\nlog.retention.minutes = 3\n").unwrap();
    assert_eq!(c.log.retention_ms, 180_000);
    let (c, _) = from_toml(
        "[broker]\nlog.retention.hours = 2\nlog.retention.minutes = 3\nlog.retention.ms = 7\n",
    )
    .unwrap();
    assert_eq!(c.log.retention_ms, 7);
    let (c, _) = from_toml("[broker]\nlog.retention.hours = -1\n").unwrap();
    assert_eq!(c.log.retention_ms, -1);
    let (c, _) = from_toml("[broker]\nlog.retention.ms = -5\n").unwrap();
    assert_eq!(c.log.retention_ms, -1);
    let (c, _) = from_toml("[broker]\nlog.roll.hours = 1\nlog.roll.jitter.hours = 1\n").unwrap();
    assert_eq!(
        (c.log.segment_ms, c.log.segment_jitter_ms),
        (3_600_000, 3_600_000)
    );
    let (c, _) = from_toml("[broker]\nlog.roll.hours = 1\nlog.roll.ms = 10\n").unwrap();
    assert_eq!(c.log.segment_ms, 10);
}

#[test]
fn broker_log_keys_fill_topic_defaults() {
    let (c, _) = from_toml(
        "[broker]\nlog.cleanup.policy = \"compact\"\nlog.message.timestamp.type = \"LogAppendTime\"\n\
         log.segment.delete.delay.ms = 5\nlog.cleaner.delete.retention.ms = 6\nlog.cleaner.min.cleanable.ratio = 0.25\n\
         log.preallocate = true\ncompression.type = \"zstd\"\nlog.index.size.max.bytes = 4096\n\
         log.flush.scheduler.interval.ms = 1000\nlog.flush.interval.messages = 9\n",
    )
    .unwrap();
    assert_eq!(
        c.log.cleanup_policy,
        CleanupPolicy {
            delete: false,
            compact: true
        }
    );
    assert_eq!(c.log.message_timestamp_type, TimestampType::LogAppendTime);
    assert_eq!(c.log.file_delete_delay_ms, 5);
    assert_eq!(c.log.delete_retention_ms, 6);
    assert_eq!(c.log.min_cleanable_dirty_ratio, 0.25);
    assert!(c.log.preallocate);
    assert_eq!(c.log.compression_type, "zstd");
    assert_eq!(c.log.segment_index_bytes, 4096);
    assert_eq!(
        c.log.flush_ms, 1000,
        "flush.ms falls back to log.flush.scheduler.interval.ms"
    );
    assert_eq!(c.log.flush_messages, 9);
}

#[test]
fn topics_from_file() {
    let (c, _) = from_toml(
        "[broker]\nnum.partitions = 4\n[[topic]]\nname = \"a\"\n[[topic]]\nname = \"b\"\npartitions = 2\n\
         [topic.config]\ncleanup.policy = \"compact\"\n",
    )
    .unwrap();
    assert_eq!(c.topics.len(), 2);
    assert_eq!(c.topics[0].partitions, 4);
    assert_eq!(c.topics[1].partitions, 2);
    assert_eq!(c.topics[1].config, map(&[("cleanup.policy", "compact")]));
    let e = from_toml("[[topic]]\nname = \"a\"\n[topic.config]\nretention.ms = -2\n").unwrap_err();
    assert!(
        e.to_string().contains("Value must be at least -1") && e.to_string().contains("`a`"),
        "{e}"
    );
    assert!(from_toml("[[topic]]\nname = \"a b\"\n").is_err());
    assert!(from_toml("[[topic]]\nname = \"a\"\n[[topic]]\nname = \"a\"\n").is_err());
    assert!(from_toml("[[topic]]\nname = \"a\"\npartitions = 0\n").is_err());
    assert!(from_toml("[[topic]]\npartitions = 1\n").is_err());
}

// ---- topic overrides ---------------------------------------------------------------------------

fn topic_err(pairs: &[(&str, &str)]) -> String {
    validate_topic_overrides(&map(pairs)).unwrap_err().message
}

#[test]
fn topic_overrides_use_kafka_messages() {
    assert_eq!(
        topic_err(&[("retention.ms", "-2")]),
        "Invalid value -2 for configuration retention.ms: Value must be at least -1"
    );
    assert_eq!(
        topic_err(&[("foo.bar", "1")]),
        "Unknown topic config name: foo.bar"
    );
    assert_eq!(
        topic_err(&[("segment.bytes", "1000")]),
        "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"
    );
    assert_eq!(
        topic_err(&[("min.cleanable.dirty.ratio", "1.5")]),
        "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"
    );
    assert_eq!(
        topic_err(&[("cleanup.policy", "compact,Delete")]),
        "Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete"
    );
    assert_eq!(
        topic_err(&[("message.timestamp.type", "Now")]),
        "Invalid value Now for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"
    );
    assert_eq!(
        topic_err(&[("compression.type", "brotli")]),
        "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"
    );
    assert_eq!(
        topic_err(&[("max.message.bytes", "big")]),
        "Invalid value big for configuration max.message.bytes: Not a number of type INT"
    );
    assert_eq!(
        topic_err(&[
            ("min.compaction.lag.ms", "10"),
            ("max.compaction.lag.ms", "5")
        ]),
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    );
    assert_eq!(
        topic_err(&[("compression.gzip.level", "0")]),
        "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"
    );
    assert!(topic_err(&[("remote.storage.enable", "true")]).contains("Tiered Storage"));
    assert!(topic_err(&[("leader.replication.throttled.replicas", "x")])
        .contains("leader.replication.throttled.replicas"));
}

#[test]
fn topic_overrides_accept_kafka_valid_values() {
    let ok = map(&[
        ("cleanup.policy", "compact, delete,compact"),
        ("retention.ms", "-1"),
        ("segment.bytes", "1048576"),
        ("min.cleanable.dirty.ratio", "0"),
        ("message.timestamp.type", "LogAppendTime"),
        ("preallocate", "TRUE"),
        ("compression.gzip.level", "-1"),
        ("leader.replication.throttled.replicas", "*"),
        ("follower.replication.throttled.replicas", "0:1,1:1"),
        ("remote.storage.enable", "false"),
        ("min.insync.replicas", "1"),
    ]);
    validate_topic_overrides(&ok).unwrap();
    let cfg = resolve_topic_config(&ok, &BrokerConfig::default()).unwrap();
    assert_eq!(
        cfg.cleanup_policy,
        CleanupPolicy {
            delete: true,
            compact: true
        }
    );
    assert_eq!(cfg.retention_ms, -1);
    assert_eq!(cfg.segment_bytes, 1_048_576);
    assert_eq!(cfg.message_timestamp_type, TimestampType::LogAppendTime);
    assert!(cfg.preallocate);
    // The empty policy is valid in Kafka 4.x: neither delete nor compact (keep everything).
    let cfg =
        resolve_topic_config(&map(&[("cleanup.policy", "")]), &BrokerConfig::default()).unwrap();
    assert_eq!(
        cfg.cleanup_policy,
        CleanupPolicy {
            delete: false,
            compact: false
        }
    );
}

#[test]
fn resolve_layers_overrides_over_broker_defaults() {
    let (broker, _) =
        from_toml("[broker]\nlog.retention.hours = 1\nlog.cleanup.policy = \"compact\"\n").unwrap();
    let cfg = resolve_topic_config(&map(&[("retention.bytes", "99")]), &broker).unwrap();
    assert_eq!(cfg.retention_ms, 3_600_000);
    assert_eq!(cfg.retention_bytes, 99);
    assert!(cfg.cleanup_policy.compact && !cfg.cleanup_policy.delete);
    // Cross-checks use the broker defaults too.
    let (broker, _) = from_toml("[broker]\nlog.cleaner.max.compaction.lag.ms = 100\n").unwrap();
    assert!(resolve_topic_config(&map(&[("min.compaction.lag.ms", "200")]), &broker).is_err());
}

#[test]
fn topic_defaults_match_log_config_defaults() {
    // Every def's documented default, applied on its own, reproduces LogConfig::default().
    let all: BTreeMap<String, String> = topic_config_defs()
        .iter()
        .map(|d| (d.name.to_string(), d.default.to_string()))
        .collect();
    let cfg = resolve_topic_config(&all, &BrokerConfig::default()).unwrap();
    assert_eq!(cfg, LogConfig::default());
    assert_eq!(
        resolve_topic_config(&BTreeMap::new(), &BrokerConfig::default()).unwrap(),
        LogConfig::default()
    );
    let names: Vec<&str> = topic_config_defs().iter().map(|d| d.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(!names.contains(&"message.downconversion.enable"));
    assert!(names.contains(&"remote.log.delete.on.disable"));
}

// ---- describe ---------------------------------------------------------------------------------

fn find<'a>(v: &'a [DescribedConfig], name: &str) -> &'a DescribedConfig {
    v.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn describe_topic_sources_and_synonyms() {
    let (broker, _) =
        from_toml("[broker]\nlog.retention.hours = 2\nmessage.max.bytes = 2000\n").unwrap();
    let d = describe_topic_configs(&map(&[("cleanup.policy", "compact")]), &broker);
    assert_eq!(d.len(), topic_config_defs().len());

    let cp = find(&d, "cleanup.policy");
    assert_eq!(
        (cp.value.as_deref(), cp.source),
        (Some("compact"), ConfigSource::TopicConfig)
    );
    assert_eq!(cp.source.id(), 1);
    assert_eq!(
        cp.synonyms,
        vec![
            (
                "cleanup.policy".to_string(),
                Some("compact".to_string()),
                ConfigSource::TopicConfig
            ),
            (
                "log.cleanup.policy".to_string(),
                Some("delete".to_string()),
                ConfigSource::Default
            ),
        ]
    );

    let r = find(&d, "retention.ms");
    assert_eq!(
        (r.value.as_deref(), r.source),
        (Some("7200000"), ConfigSource::StaticBroker)
    );
    assert_eq!(
        r.synonyms,
        vec![
            // Like Kafka: no default synonym, as log.retention.ms has no default.
            (
                "log.retention.hours".to_string(),
                Some("2".to_string()),
                ConfigSource::StaticBroker
            ),
        ]
    );
    let m = find(&d, "max.message.bytes");
    assert_eq!(
        (m.value.as_deref(), m.source),
        (Some("2000"), ConfigSource::StaticBroker)
    );

    let s = find(&d, "segment.ms");
    assert_eq!(
        (s.value.as_deref(), s.source),
        (Some("604800000"), ConfigSource::Default)
    );
    assert_eq!(s.kind, ConfigType::Long);
    assert!(s.synonyms.is_empty(), "{:?}", s.synonyms);
    assert!(find(&d, "flush.ms").synonyms.is_empty());
    let lag = find(&d, "remote.copy.lag.ms");
    assert_eq!(
        lag.synonyms,
        vec![(
            "log.remote.copy.lag.ms".to_string(),
            Some("0".to_string()),
            ConfigSource::Default
        )]
    );
    let dq = find(&d, "errors.deadletterqueue.group.enable");
    assert_eq!(
        (dq.value.as_deref(), dq.kind),
        (Some("false"), ConfigType::Boolean)
    );
    assert_eq!(
        find(&d, "max.decompressed.message.bytes").value.as_deref(),
        Some("2147483639")
    );
    let rs = find(&d, "remote.storage.enable");
    assert_eq!(
        (rs.value.as_deref(), rs.source),
        (Some("false"), ConfigSource::Default)
    );
    assert!(rs.synonyms.is_empty());
}

#[test]
fn broker_id_is_node_id() {
    for toml in ["[broker]\nnode.id = 4\n", "[broker]\nbroker.id = 4\n"] {
        let (cfg, warnings) = from_toml(toml).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(cfg.node_id, 4);
        let d = describe_broker_configs(&cfg);
        for name in ["node.id", "broker.id"] {
            let c = find(&d, name);
            assert_eq!(
                (c.value.as_deref(), c.source),
                (Some("4"), ConfigSource::StaticBroker),
                "{toml} {name}"
            );
        }
        assert_eq!(
            find(&d, "broker.id").synonyms,
            vec![
                (
                    "broker.id".to_string(),
                    Some("4".to_string()),
                    ConfigSource::StaticBroker
                ),
                (
                    "broker.id".to_string(),
                    Some("-1".to_string()),
                    ConfigSource::Default
                ),
            ]
        );
    }
    let err = from_toml("[broker]\nnode.id = 4\nbroker.id = 5\n").unwrap_err();
    assert!(err.to_string().contains("must equal node.id (4)"), "{err}");
    assert!(from_toml("[broker]\nbroker.id = -1\n").is_err());
}

#[test]
fn kafka_4_4_removed_broker_keys_are_unknown() {
    for key in [
        "password.encoder.secret",
        "inter.broker.protocol.version",
        "controlled.shutdown.max.retries",
        "eligible.leader.replicas.enable",
        "group.share.max.groups",
    ] {
        let err = from_toml(&format!("[broker]\n{key} = 1\n")).unwrap_err();
        assert!(
            matches!(err, ConfigError::UnknownKey { .. }),
            "{key}: {err}"
        );
    }
    // Still accepted (Kafka has them as dynamic broker configs), with the not-acted-on warning.
    let (_, warnings) = from_toml("[broker]\nleader.replication.throttled.rate = 100\n").unwrap();
    assert!(warnings[0].contains("leader.replication.throttled.rate"));
}

#[test]
fn new_kafka_4_4_topic_configs_validate() {
    assert!(topic_err(&[("max.decompressed.message.bytes", "0")]).contains("at least 1"));
    assert!(
        topic_err(&[("max.decompressed.message.bytes", "2147483647")])
            .contains("no more than 2147483639")
    );
    assert!(topic_err(&[("remote.copy.lag.ms", "-2")]).contains("at least -1"));
    assert!(topic_err(&[("remote.copy.lag.bytes", "-2")]).contains("at least -1"));
    assert!(topic_err(&[("errors.deadletterqueue.group.enable", "yes")]).contains("true or false"));
    validate_topic_overrides(&map(&[
        ("max.decompressed.message.bytes", "1"),
        ("remote.copy.lag.ms", "-1"),
        ("remote.copy.lag.bytes", "5"),
        ("errors.deadletterqueue.group.enable", "true"),
    ]))
    .unwrap();
}

#[test]
fn describe_broker_sources_and_secrets() {
    let (cfg, _) =
        from_toml("[broker]\nnum.partitions = 3\nssl.keystore.password = \"hunter2\"\n").unwrap();
    let d = describe_broker_configs(&cfg);
    assert_eq!(
        d.len(),
        broker_config_names()
            .iter()
            .filter(|d| d.described())
            .count()
    );
    // Kafka lists the replication throttles only once set dynamically.
    assert!(d
        .iter()
        .all(|c| c.name != "leader.replication.throttled.rate"));
    for name in ["listeners", "advertised.listeners", "log.dir", "log.dirs"] {
        assert_eq!(find(&d, name).kind, ConfigType::List, "{name}");
    }
    // No default synonym for log.dirs and node.id (Kafka has no default for them).
    let dirs = find(&d, "log.dirs");
    assert_eq!((dirs.value.as_deref(), dirs.synonyms.len()), (None, 0));
    let node = find(&d, "node.id");
    assert_eq!(
        (node.value.as_deref(), node.source, node.synonyms.len()),
        (Some("1"), ConfigSource::Default, 0)
    );
    let n = find(&d, "num.partitions");
    assert_eq!(
        (n.value.as_deref(), n.source),
        (Some("3"), ConfigSource::StaticBroker)
    );
    let p = find(&d, "ssl.keystore.password");
    assert!(p.is_sensitive && p.value.is_none() && p.synonyms.iter().all(|s| s.1.is_none()));
    let l = find(&d, "log.retention.hours");
    assert_eq!(
        (l.value.as_deref(), l.source),
        (Some("168"), ConfigSource::Default)
    );
    let m = find(&d, "log.retention.ms");
    assert_eq!(
        (m.value.as_deref(), m.source),
        (None, ConfigSource::Default)
    );
}

// ---- the shipped example ------------------------------------------------------------------------

#[test]
fn example_config_parses_as_documented() {
    let (cfg, warnings) = from_toml(EXAMPLE_CONFIG).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(cfg.listeners[0].to_string(), "PLAINTEXT://127.0.0.1:9092");
    assert_eq!(cfg.log_dirs, vec![PathBuf::from("data")]);
    assert!(cfg.topics.is_empty());
    assert_eq!(cfg.log, LogConfig::default());
}

#[test]
fn example_config_defaults_match_code() {
    // Uncomment every "#key = value" / "#[table]" line: the documented defaults must parse and
    // produce exactly the built-in defaults.
    let uncommented: String = EXAMPLE_CONFIG
        .lines()
        .map(|l| match l.strip_prefix('#') {
            // `#"key" = value`: keys that must be quoted (a dotted prefix of another key).
            Some(rest)
                if rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '[' || c == '"') =>
            {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let (cfg, warnings) = from_toml(&uncommented).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let base = BrokerConfig {
        explicit: cfg.explicit.clone(),
        topics: cfg.topics.clone(),
        log_dirs: vec![PathBuf::from("data")],
        ..BrokerConfig::default()
    };
    assert_eq!(cfg, base);
    assert_eq!(cfg.topics.len(), 1);
    assert!(cfg.topics[0].config.contains_key("cleanup.policy"));
    // Every implemented key is documented in the example.
    for d in broker_config_names().iter().filter(|d| d.implemented()) {
        assert!(
            EXAMPLE_CONFIG.contains(d.name),
            "{} is not documented in config/skiff.toml",
            d.name
        );
    }
}

#[test]
fn connection_limits_parse_with_kafkas_checks() {
    let sets = [
        "max.connections=0".to_string(),
        "max.connections.per.ip=3".to_string(),
        "max.connections.per.ip.overrides=127.0.0.1:5, localhost:0,[::1]:7".to_string(),
    ];
    let (cfg, _) = load(None, &sets, no_env()).unwrap();
    assert_eq!(cfg.max_connections, 0, "Kafka allows 0 (atLeast(0))");
    assert_eq!(cfg.max_connections_per_ip, 3);
    assert_eq!(
        cfg.max_connections_per_ip_overrides,
        vec![
            ("127.0.0.1".to_string(), 5),
            ("localhost".to_string(), 0),
            ("::1".to_string(), 7)
        ]
    );
    for (bad, needle) in [
        ("max.connections.per.ip=0", "overrides"),
        ("max.connections.per.ip.overrides=localhost", "host:count"),
        (
            "max.connections.per.ip.overrides=localhost:-1",
            "at least 0",
        ),
        ("max.connections.per.ip.overrides=bad/host:1", "valid host"),
        ("max.connections=-1", "max.connections"),
    ] {
        let err = load(None, &[bad.to_string()], no_env())
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{bad}: {err}");
    }
}
