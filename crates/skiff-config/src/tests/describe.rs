//! Topic override validation and resolution; DescribeConfigs sources and synonyms.

use super::*;

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

#[test]
fn skiff_tombstone_configs_resolve_and_validate() {
    let cfg = resolve_topic_config(
        &map(&[
            ("skiff.tombstone.wait.for.consumers", "true"),
            ("skiff.tombstone.wait.max.ms", "5000"),
        ]),
        &BrokerConfig::default(),
    )
    .unwrap();
    assert!(cfg.tombstone_wait_for_consumers);
    assert_eq!(cfg.tombstone_wait_max_ms, 5000);
    assert!(validate_topic_overrides(&map(&[("skiff.tombstone.wait.max.ms", "-1")])).is_err());
    assert!(
        validate_topic_overrides(&map(&[("skiff.tombstone.wait.for.consumers", "maybe")])).is_err()
    );
    let d = describe_topic_configs(&BTreeMap::new(), &BrokerConfig::default());
    assert_eq!(
        find(&d, "skiff.tombstone.wait.max.ms").value.as_deref(),
        Some("604800000")
    );
}

#[test]
fn skiff_archive_topic_resolves_and_validates() {
    let cfg = resolve_topic_config(
        &map(&[("skiff.compaction.archive.topic", "orders-history")]),
        &BrokerConfig::default(),
    )
    .unwrap();
    assert_eq!(cfg.archive_topic, "orders-history");
    let off = resolve_topic_config(&BTreeMap::new(), &BrokerConfig::default()).unwrap();
    assert_eq!(off.archive_topic, "");
    assert!(validate_topic_overrides(&map(&[("skiff.compaction.archive.topic", "")])).is_ok());
    for bad in ["..", "has space", "a/b", &"x".repeat(250)] {
        assert!(
            validate_topic_overrides(&map(&[("skiff.compaction.archive.topic", bad)])).is_err(),
            "{bad} accepted"
        );
    }
    let d = describe_topic_configs(&BTreeMap::new(), &BrokerConfig::default());
    assert_eq!(
        find(&d, "skiff.compaction.archive.topic").value.as_deref(),
        Some("")
    );
}

#[test]
fn internal_broker_keys_are_described_only_once_set() {
    let (cfg, _) = from_toml("[broker]\nnum.partitions = 3\n").unwrap();
    let d = describe_broker_configs(&cfg);
    assert!(d
        .iter()
        .all(|c| c.name != "group.streams.task.offset.interval.ms"));
    // Non-internal streams keys are always listed, with Kafka's defaults.
    assert_eq!(
        find(&d, "group.streams.session.timeout.ms")
            .value
            .as_deref(),
        Some("45000")
    );
    assert_eq!(
        find(&d, "group.streams.assignors").value.as_deref(),
        Some("sticky")
    );
    let (cfg, _) =
        from_toml("[broker]\n\"group.streams.task.offset.interval.ms\" = 30000\n").unwrap();
    let d = describe_broker_configs(&cfg);
    let t = find(&d, "group.streams.task.offset.interval.ms");
    assert_eq!(t.value.as_deref(), Some("30000"));
    assert_eq!(t.source, ConfigSource::StaticBroker);
    assert!(d
        .iter()
        .all(|c| c.name != "group.streams.acceptable.recovery.lag"));
}

#[test]
fn share_state_upkeep_keys_are_kafkas_internal_ones() {
    let (cfg, _) = from_toml("[broker]\nnum.partitions = 3\n").unwrap();
    assert_eq!(cfg.share_coordinator_state_topic_prune_interval_ms, 300_000);
    assert_eq!(
        cfg.share_coordinator_cold_partition_snapshot_interval_ms,
        300_000
    );
    let d = describe_broker_configs(&cfg);
    assert!(d.iter().all(
        |c| c.name != "share.coordinator.state.topic.prune.interval.ms"
            && c.name != "share.coordinator.cold.partition.snapshot.interval.ms"
    ));
    let (cfg, _) = from_toml(
        "[broker]\n\"share.coordinator.state.topic.prune.interval.ms\" = 1000\n\
         \"share.coordinator.cold.partition.snapshot.interval.ms\" = 2000\n",
    )
    .unwrap();
    assert_eq!(cfg.share_coordinator_state_topic_prune_interval_ms, 1_000);
    assert_eq!(
        cfg.share_coordinator_cold_partition_snapshot_interval_ms,
        2_000
    );
    let d = describe_broker_configs(&cfg);
    let t = find(&d, "share.coordinator.state.topic.prune.interval.ms");
    assert_eq!(t.value.as_deref(), Some("1000"));
    assert!(t.read_only);
    // Kafka's validator: at least 1.
    for key in [
        "share.coordinator.state.topic.prune.interval.ms",
        "share.coordinator.cold.partition.snapshot.interval.ms",
    ] {
        let e = from_toml(&format!("[broker]\n\"{key}\" = 0\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("at least 1"), "{e}");
    }
}

#[test]
fn streams_broker_keys_follow_kafkas_start_rules() {
    let err = |toml: &str| from_toml(toml).unwrap_err().to_string();
    assert!(err("[broker]\n\"group.streams.heartbeat.interval.ms\" = 16000\n").ends_with(
        "group.streams.heartbeat.interval.ms must be less than or equal to group.streams.max.heartbeat.interval.ms"
    ));
    let e = err("[broker]\n\"group.streams.max.heartbeat.interval.ms\" = 60000\n\"group.streams.heartbeat.interval.ms\" = 45000\n");
    assert!(e.contains("`group.streams.heartbeat.interval.ms`"), "{e}");
    assert!(
        e.ends_with("group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms"),
        "{e}"
    );
    assert!(err("[broker]\n\"group.streams.max.standby.replicas\" = 0\n\"group.streams.num.standby.replicas\" = 1\n")
        .ends_with("group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"));
    assert!(
        err("[broker]\n\"group.streams.num.standby.replicas\" = -1\n")
            .contains("Value must be at least 0")
    );
    assert!(
        err("[broker]\n\"group.streams.rack.aware.assignment.tags\" = \"zone,zone\"\n").ends_with(
            "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys."
        )
    );
    // Accepted, not acted on: listed in the start-up warning.
    let (cfg, warnings) = from_toml(
        "[broker]\n\"group.streams.num.warmup.replicas\" = 3\n\"group.streams.num.standby.replicas\" = 2\n",
    )
    .unwrap();
    assert_eq!(cfg.group_streams_num_standby_replicas, 2);
    assert!(
        warnings[0].contains("group.streams.num.warmup.replicas"),
        "{warnings:?}"
    );
    assert_eq!(cfg.group_streams_acceptable_recovery_lag, 10_000);
    assert_eq!(cfg.group_streams_max_size, i32::MAX);
}
