//! Loading: precedence, errors, warnings, and the shipped example config.

use super::*;

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
    let e = from_toml("[broker]\nlisteners = \"SASL_PLAINTEXT://127.0.0.1:9093\"\n").unwrap_err();
    assert!(
        e.to_string().contains("`sasl.enabled.mechanisms`") && e.to_string().contains("GSSAPI"),
        "{e}"
    );
    let e = from_toml("[broker]\nlisteners = \"SSL://127.0.0.1:9093\"\n").unwrap_err();
    assert!(
        e.to_string().contains("`listeners`") && e.to_string().contains("no certificate"),
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
        "[broker]\nnum.network.threads = 8\nssl.keystore.password = \"x\"\nlog.retention.hours = 1\n",
    )
    .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("num.network.threads")
            && warnings[0].contains("ssl.keystore.password")
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

#[test]
fn ssl_listeners_with_per_listener_overrides() {
    let (cfg, warnings) = from_toml(
        "[broker]\nlisteners = \"SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092\"\n\
         ssl.keystore.type = \"PEM\"\nssl.keystore.location = \"/etc/skiff/server.pem\"\n\
         listener.name.ssl.ssl.truststore.type = \"PEM\"\n\
         listener.name.ssl.ssl.truststore.location = \"/etc/skiff/ca.pem\"\n\
         listener.name.ssl.ssl.client.auth = \"required\"\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(cfg.listeners.len(), 2);
    let ssl = crate::listener_ssl(&cfg, "SSL").unwrap();
    assert_eq!(ssl.client_auth, crate::ClientAuth::Required);
    assert_eq!(
        crate::listener_protocol(&cfg, "PLAINTEXT"),
        Some(crate::SecurityProtocol::Plaintext)
    );
    // An unknown per-listener key is refused like any unknown key.
    assert!(from_toml("[broker]\nlistener.name.ssl.ssl.bogus = \"x\"\n").is_err());
    // A bad per-listener value is refused naming the prefixed key.
    let e = from_toml(
        "[broker]\nlisteners = \"SSL://127.0.0.1:9093\"\nssl.keystore.type = \"PEM\"\n\
         ssl.keystore.location = \"/k\"\nlistener.name.ssl.ssl.client.auth = \"maybe\"\n",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("listener.name.ssl.ssl.client.auth"),
        "{e}"
    );
    // A listener name missing from the map is a start-up error.
    let e = from_toml("[broker]\nlisteners = \"EXTERNAL://127.0.0.1:9093\"\n").unwrap_err();
    assert!(e.to_string().contains("does not define"), "{e}");
}

#[test]
fn ssl_secrets_are_sensitive_in_describe_configs() {
    let (cfg, _) = from_toml(
        "[broker]\nssl.keystore.key = \"-----BEGIN PRIVATE KEY-----SECRET\"\n\
         ssl.key.password = \"hunter2\"\nssl.keystore.certificate.chain = \"CHAIN\"\n\
         ssl.truststore.certificates = \"CAS\"\nssl.client.auth = \"requested\"\n",
    )
    .unwrap();
    let described = crate::describe_broker_configs(&cfg);
    for key in [
        "ssl.keystore.key",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
    ] {
        let d = described.iter().find(|d| d.name == key).unwrap();
        assert!(d.is_sensitive, "{key}");
        assert_eq!(d.value, None, "{key}");
        assert!(d.synonyms.iter().all(|s| s.1.is_none()), "{key}");
    }
    let auth = described
        .iter()
        .find(|d| d.name == "ssl.client.auth")
        .unwrap();
    assert_eq!(auth.value.as_deref(), Some("requested"));
    assert!(!auth.is_sensitive);
}

#[test]
fn sasl_listener_keys_and_entry_arrays_load() {
    let (cfg, _) = from_toml(
        r#"[broker]
listeners = "SASL_PLAINTEXT://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"
"listener.name.sasl_plaintext.sasl.enabled.mechanisms" = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
"listener.name.sasl_plaintext.plain.sasl.jaas.config" = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
"sasl.scram.users" = ["SCRAM-SHA-256=[name=alice,password=alice-secret]", "SCRAM-SHA-512=[name=alice,password=alice-secret]"]
"connections.max.reauth.ms" = 60000
"#,
    )
    .unwrap();
    let s = crate::listener_sasl(&cfg, "SASL_PLAINTEXT").unwrap();
    assert_eq!(
        s.mechanisms,
        vec!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    );
    assert_eq!(
        s.scram_users,
        vec![
            "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "SCRAM-SHA-512=[name=alice,password=alice-secret]"
        ]
    );
    assert_eq!(cfg.connections_max_reauth_ms, 60000);
    assert_eq!(cfg.sasl_server_max_receive_size, 524288);
    let e = from_toml("[broker]\n\"sasl.scram.users\" = [1]\n").unwrap_err();
    assert!(e.to_string().contains("sasl.scram.users"), "{e}");
    let e = from_toml("[broker]\n\"listener.name.x.plain.sasl.jaas.confg\" = \"x\"\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("listener.name.x.plain.sasl.jaas.confg"),
        "{e}"
    );
}

#[test]
fn migration_policy_takes_kafkas_four_values_in_any_case() {
    let (cfg, _) = from_toml("[broker]\n").unwrap();
    assert_eq!(cfg.group_consumer_migration_policy, "bidirectional");
    for v in ["bidirectional", "UPGRADE", "Downgrade", "disabled"] {
        let (cfg, _) = from_toml(&format!(
            "[broker]\ngroup.consumer.migration.policy = \"{v}\"\n"
        ))
        .unwrap();
        assert_eq!(cfg.group_consumer_migration_policy, v);
    }
    let err = from_toml("[broker]\ngroup.consumer.migration.policy = \"sideways\"\n").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("group.consumer.migration.policy"), "{msg}");
    assert!(msg.contains("sideways"), "{msg}");
}
