//! Building the typed broker configuration from validated `key -> value` strings (Kafka
//! broker config names): the scalar keys are copied by code generated from `keys.rs`; this
//! file holds the keys with their own parsing or cross-key checks (node/broker id, cluster id,
//! listeners, data directories, per-IP connection limits, group and transaction bounds), the
//! broker-level topic defaults (`log.*` keys with Kafka's precedence, e.g. `log.retention.ms`
//! > `.minutes` > `.hours`) and the `[[topic]]` entries.
//!
//! `BrokerConfig` is plain data (`Clone`), built once at startup and then shared read-only.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::ConfigError;
use crate::listener::{parse_host_port, parse_listeners, parse_protocol_map};
use crate::names;
use crate::topic::{self, apply, check_cross, topic_config_defs};
use crate::types::{parse_value, ConfigSource, Parsed, Validator};

/// A topic declared in the config file, created at startup if missing.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    /// Topic config overrides, already validated.
    pub config: BTreeMap<String, String>,
}

pub use crate::keys::BrokerConfig;

/// A key's value and where it was set, for error messages.
#[derive(Clone, Debug)]
pub(crate) struct Setting {
    pub value: String,
    pub origin: String,
}

/// A `[[topic]]` entry as read from the file, before defaults and validation.
#[derive(Clone, Debug)]
pub(crate) struct RawTopic {
    pub index: usize,
    pub name: String,
    pub partitions: Option<i64>,
    pub config: BTreeMap<String, String>,
}

/// The validator of a broker key: its own (from the table in `keys.rs`), else that of the
/// topic config it is a same-unit synonym of, else none.
pub(crate) fn broker_validator(key: &str) -> Validator {
    if let Some(v) = names::broker_config_def(key).and_then(|d| d.validator) {
        return v;
    }
    topic_config_defs()
        .iter()
        .find(|d| {
            d.broker_synonyms
                .iter()
                .any(|s| s.name == key && s.factor == 1)
        })
        .map_or(Validator::None, |d| d.validator)
}

fn invalid(key: &str, s: &Setting, message: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        origin: s.origin.clone(),
        message: message.into(),
    }
}

/// Build the typed config from merged settings. Every key must already be known (the loader
/// rejects unknown ones). Returns the config and the warnings to log.
pub(crate) fn build(
    settings: &BTreeMap<String, Setting>,
    topics: Vec<RawTopic>,
) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    let mut cfg = BrokerConfig::default();
    let mut parsed: BTreeMap<&str, Parsed> = BTreeMap::new();
    let mut not_implemented = Vec::new();
    for (key, s) in settings {
        let listener_base = crate::ssl::listener_override_base(key)
            .or_else(|| crate::sasl::listener_sasl_override_base(key));
        if let Some(base) = listener_base {
            // `listener.name.<name>.ssl.*` and the per-listener SASL keys: typed and
            // validated as the plain key.
            let def = names::broker_config_def(base).ok_or_else(|| ConfigError::UnknownKey {
                key: key.clone(),
                origin: s.origin.clone(),
                hint: None,
            })?;
            parse_value(key, def.kind, &s.value, broker_validator(base))
                .map_err(|e| invalid(key, s, e.message))?;
            cfg.explicit.insert(key.clone(), s.value.trim().to_string());
            continue;
        }
        let def = names::broker_config_def(key).ok_or_else(|| ConfigError::UnknownKey {
            key: key.clone(),
            origin: s.origin.clone(),
            hint: names::closest_name(key).map(str::to_string),
        })?;
        if !def.implemented() {
            not_implemented.push(key.clone());
        }
        let v = parse_value(key, def.kind, &s.value, broker_validator(key))
            .map_err(|e| invalid(key, s, e.message))?;
        parsed.insert(def.name, v);
        cfg.explicit.insert(key.clone(), s.value.trim().to_string());
    }
    let mut warnings = Vec::new();
    if !not_implemented.is_empty() {
        warnings.push(format!(
            "these Kafka configs are accepted but not acted on by Skiff: {}",
            not_implemented.join(", ")
        ));
    }

    let int = |k: &str| match parsed.get(k) {
        Some(Parsed::Int(v)) => Some(*v),
        _ => None,
    };
    // Scalar keys are copied by code generated from `keys.rs`; the rest of this function is
    // the keys with their own parsing (`custom:` rows) and the cross-key checks.
    crate::keys::assign_scalars(&mut cfg, &parsed);
    if let Some(id) = int("node.id").and_then(|v| i32::try_from(v).ok()) {
        cfg.node_id = id;
    }
    build_node_id(&mut cfg, settings, int("broker.id"))?;
    cfg.cluster_id = settings
        .get("cluster.id")
        .map(|s| s.value.trim().to_string());
    if let (Some(id), Some(s)) = (&cfg.cluster_id, settings.get("cluster.id")) {
        if id.is_empty()
            || id.len() > 64
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "cluster.id",
                s,
                "must be 1-64 characters of [A-Za-z0-9_-]",
            ));
        }
    }
    if let Some(s) = settings.get("default.replication.factor") {
        if int("default.replication.factor") != Some(1) {
            return Err(invalid(
                "default.replication.factor",
                s,
                "Skiff is a single node: the replication factor can only be 1",
            ));
        }
    }
    build_per_ip_limits(&mut cfg, settings)?;
    if cfg.group_min_session_timeout_ms > cfg.group_max_session_timeout_ms {
        let s = settings
            .get("group.min.session.timeout.ms")
            .or_else(|| settings.get("group.max.session.timeout.ms"));
        if let Some(s) = s {
            return Err(invalid(
                "group.min.session.timeout.ms",
                s,
                "must not exceed group.max.session.timeout.ms",
            ));
        }
    }
    // Kafka bounds these at 1 too; Skiff checks them after parsing, with its own message.
    for (key, value) in [
        (
            "group.consumer.heartbeat.interval.ms",
            i64::from(cfg.group_consumer_heartbeat_interval_ms),
        ),
        (
            "group.consumer.session.timeout.ms",
            i64::from(cfg.group_consumer_session_timeout_ms),
        ),
        (
            "offsets.topic.num.partitions",
            i64::from(cfg.offsets_topic_num_partitions),
        ),
        (
            "transaction.max.timeout.ms",
            i64::from(cfg.transaction_max_timeout_ms),
        ),
        (
            "transaction.state.log.num.partitions",
            i64::from(cfg.transaction_state_log_num_partitions),
        ),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        ),
        (
            "transactional.id.expiration.ms",
            cfg.transactional_id_expiration_ms,
        ),
        (
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            cfg.transaction_remove_expired_transaction_cleanup_interval_ms,
        ),
    ] {
        if value < 1 {
            if let Some(s) = settings.get(key) {
                return Err(invalid(key, s, "must be at least 1"));
            }
        }
    }

    check_streams_group_keys(settings, &int)?;

    if let Some(s) = settings.get("metrics.listener") {
        cfg.metrics_listener =
            Some(parse_host_port(&s.value).map_err(|m| invalid("metrics.listener", s, m))?);
    }
    if let Some(s) = settings.get("skiff.http.listener") {
        cfg.skiff_http_listener =
            Some(parse_host_port(&s.value).map_err(|m| invalid("skiff.http.listener", s, m))?);
    }
    if let Some(s) = settings.get("skiff.http.authentication") {
        crate::http::parse_http_authentication(&s.value)
            .map_err(|m| invalid("skiff.http.authentication", s, &m))?;
    }
    build_dirs(&mut cfg, settings)?;
    build_listeners(&mut cfg, settings)?;
    // Every SSL listener must have usable TLS settings and every SASL listener usable SASL
    // settings; files (certificates, JWKS) are read by the broker.
    for l in &cfg.listeners {
        use crate::ssl::SecurityProtocol as P;
        let protocol = crate::ssl::listener_protocol(&cfg, &l.name);
        if matches!(protocol, Some(P::SaslPlaintext | P::SaslSsl)) {
            crate::sasl::check_listener_sasl(&cfg, &l.name).map_err(|(key, message)| {
                ConfigError::InvalidValue {
                    origin: settings
                        .get(&key)
                        .map_or_else(|| "default".to_string(), |s| s.origin.clone()),
                    key,
                    message,
                }
            })?;
        }
        if matches!(protocol, Some(P::Ssl | P::SaslSsl)) {
            crate::ssl::listener_ssl(&cfg, &l.name).map_err(|message| {
                ConfigError::InvalidValue {
                    key: "listeners".to_string(),
                    origin: settings
                        .get("listeners")
                        .map_or_else(|| "default".to_string(), |s| s.origin.clone()),
                    message,
                }
            })?;
        }
    }
    build_log_defaults(&mut cfg, settings, &parsed)?;
    cfg.topics = build_topics(&cfg, topics)?;
    Ok((cfg, warnings))
}

/// Kafka's start-up checks of the `group.streams.*` keys (`group_streams.rs`), blamed on the
/// first of the rule's two keys that is set.
fn check_streams_group_keys(
    settings: &BTreeMap<String, Setting>,
    int: &dyn Fn(&str) -> Option<i64>,
) -> Result<(), ConfigError> {
    let value = |k: &str| {
        int(k)
            .or_else(|| {
                names::broker_config_def(k)
                    .and_then(|d| d.default)
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    };
    let tags = settings
        .get(crate::group_streams::RACK_TAGS)
        .map(|s| s.value.as_str());
    crate::group_streams::check_broker_keys(value, tags).map_err(|(left, right, message)| {
        let (key, origin) = [left, right]
            .into_iter()
            .find_map(|k| settings.get(k).map(|s| (k, s.origin.clone())))
            .unwrap_or((left, "default".to_string()));
        ConfigError::InvalidValue {
            key: key.to_string(),
            origin,
            message,
        }
    })
}

/// `broker.id` is Kafka's older name of `node.id`: as in Kafka, setting one sets the other
/// (both then describe as static broker configs), and setting both to different ids is an
/// error.
fn build_node_id(
    cfg: &mut BrokerConfig,
    settings: &BTreeMap<String, Setting>,
    broker_id: Option<i64>,
) -> Result<(), ConfigError> {
    let node_id = cfg.node_id;
    let Some(broker_id) = broker_id else {
        if let Some(v) = cfg.explicit.get("node.id").cloned() {
            cfg.explicit.insert("broker.id".to_string(), v);
        }
        return Ok(());
    };
    let s = settings.get("broker.id");
    let broker_id = i32::try_from(broker_id).ok().filter(|id| *id >= 0);
    match (broker_id, settings.get("node.id"), s) {
        (None, _, Some(s)) => Err(invalid("broker.id", s, "must be a node id >= 0")),
        (Some(id), None, _) => {
            cfg.node_id = id;
            cfg.explicit.insert("node.id".to_string(), id.to_string());
            Ok(())
        }
        (Some(id), Some(_), Some(s)) if id != node_id => Err(invalid(
            "broker.id",
            s,
            format!("must equal node.id ({node_id}); broker.id is the older name of node.id"),
        )),
        _ => Ok(()),
    }
}

/// `max.connections.per.ip` and `max.connections.per.ip.overrides`, with Kafka's checks: the
/// overrides are comma-separated `host:count` pairs with a valid host and a count of at least
/// 0, and a per-IP limit of 0 needs overrides (otherwise no one could connect).
fn build_per_ip_limits(
    cfg: &mut BrokerConfig,
    settings: &BTreeMap<String, Setting>,
) -> Result<(), ConfigError> {
    let per_ip = cfg.max_connections_per_ip;
    let key = "max.connections.per.ip.overrides";
    if let Some(s) = settings.get(key) {
        for entry in s.value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            // rsplit: an IPv6 address has colons of its own.
            let Some((host, count)) = entry.rsplit_once(':') else {
                return Err(invalid(key, s, format!("{entry:?} is not host:count")));
            };
            let host = host.trim().trim_start_matches('[').trim_end_matches(']');
            let count = match count.trim().parse::<i32>() {
                Ok(c) if c >= 0 => c,
                _ => {
                    return Err(invalid(
                        key,
                        s,
                        format!("{entry:?}: the count must be an integer of at least 0"),
                    ))
                }
            };
            if !valid_host(host) {
                return Err(invalid(key, s, format!("{host:?} is not a valid host")));
            }
            cfg.max_connections_per_ip_overrides
                .push((host.to_string(), count));
        }
    }
    if per_ip == 0 && cfg.max_connections_per_ip_overrides.is_empty() {
        if let Some(s) = settings.get("max.connections.per.ip") {
            return Err(invalid(
                "max.connections.per.ip",
                s,
                "can be set to zero only if max.connections.per.ip.overrides is set",
            ));
        }
    }
    Ok(())
}

/// Kafka's `Utils.validHostPattern`: letters, digits and `-%._:` (an IP address or a host
/// name); unlike Kafka the empty string is refused, as it names no host.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c))
}

fn build_dirs(
    cfg: &mut BrokerConfig,
    settings: &BTreeMap<String, Setting>,
) -> Result<(), ConfigError> {
    let Some((key, s)) = ["log.dirs", "log.dir"]
        .iter()
        .find_map(|k| settings.get(*k).map(|s| (*k, s)))
    else {
        return Ok(());
    };
    let dirs: Vec<PathBuf> = s
        .value
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        return Err(invalid(key, s, "at least one directory is required"));
    }
    cfg.log_dirs = dirs;
    Ok(())
}

fn build_listeners(
    cfg: &mut BrokerConfig,
    settings: &BTreeMap<String, Setting>,
) -> Result<(), ConfigError> {
    let map_key = "listener.security.protocol.map";
    let protocols = match settings.get(map_key) {
        Some(s) => parse_protocol_map(&s.value).map_err(|m| invalid(map_key, s, m))?,
        None => parse_protocol_map(crate::listener::DEFAULT_PROTOCOL_MAP).map_err(|m| {
            ConfigError::InvalidValue {
                key: map_key.to_string(),
                origin: "built-in default".to_string(),
                message: m,
            }
        })?,
    };
    if let Some(s) = settings.get("listeners") {
        cfg.listeners =
            parse_listeners(&s.value, &protocols).map_err(|m| invalid("listeners", s, m))?;
    }
    let (key, origin_setting) = match settings.get("advertised.listeners") {
        Some(s) => {
            cfg.advertised_listeners = parse_listeners(&s.value, &protocols)
                .map_err(|m| invalid("advertised.listeners", s, m))?;
            ("advertised.listeners", Some(s))
        }
        None => {
            cfg.advertised_listeners = cfg.listeners.clone();
            ("listeners", settings.get("listeners"))
        }
    };
    let fallback = Setting {
        value: String::new(),
        origin: "default".to_string(),
    };
    let origin_setting = origin_setting.unwrap_or(&fallback);
    for a in &cfg.advertised_listeners {
        if a.host.is_empty() || a.host == "0.0.0.0" || a.host == "::" {
            return Err(invalid(
                key,
                origin_setting,
                format!(
                    "listener `{a}` cannot be advertised to clients (no routable host); set advertised.listeners, e.g. PLAINTEXT://my-host:{}",
                    a.port
                ),
            ));
        }
        if !cfg.listeners.iter().any(|l| l.name == a.name) {
            return Err(invalid(
                key,
                origin_setting,
                format!(
                    "advertised listener name `{}` is not one of the names in listeners",
                    a.name
                ),
            ));
        }
    }
    Ok(())
}

/// Broker-level topic defaults: for each topic config, the first broker synonym that is set
/// (Kafka's precedence), converted to the topic config's unit.
fn build_log_defaults(
    cfg: &mut BrokerConfig,
    settings: &BTreeMap<String, Setting>,
    parsed: &BTreeMap<&str, Parsed>,
) -> Result<(), ConfigError> {
    for d in topic_config_defs() {
        let Some((syn, value)) = d
            .broker_synonyms
            .iter()
            .find_map(|s| parsed.get(s.name).map(|v| (s, v)))
        else {
            continue;
        };
        let value = match (value, syn.factor) {
            // Kafka: any negative retention time at broker level means "unlimited" (-1).
            (Parsed::Int(v), f) if f != 1 || d.name == "retention.ms" => {
                let ms = v.saturating_mul(f);
                Parsed::Int(if ms < 0 { -1 } else { ms })
            }
            (v, _) => v.clone(),
        };
        apply(&mut cfg.log, d.name, &value);
    }
    if let Err(e) = check_cross(&cfg.log) {
        let key = "log.cleaner.min.compaction.lag.ms";
        let s = settings
            .get(key)
            .or_else(|| settings.get("log.cleaner.max.compaction.lag.ms"))
            .cloned()
            .unwrap_or(Setting {
                value: String::new(),
                origin: "configuration".to_string(),
            });
        return Err(invalid(key, &s, e.message));
    }
    Ok(())
}

/// Kafka's topic name rules: 1..=249 chars of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".to_string());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".to_string());
    }
    if name.len() > 249 {
        return Err(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

fn build_topics(cfg: &BrokerConfig, raw: Vec<RawTopic>) -> Result<Vec<TopicSpec>, ConfigError> {
    let mut out: Vec<TopicSpec> = Vec::new();
    for t in raw {
        let err = |message: String| ConfigError::Topic {
            index: t.index,
            name: Some(t.name.clone()),
            message,
        };
        validate_topic_name(&t.name).map_err(&err)?;
        if out.iter().any(|o| o.name == t.name) {
            return Err(err("declared twice".to_string()));
        }
        let partitions = match t.partitions {
            None => cfg.num_partitions,
            Some(p) => match i32::try_from(p) {
                Ok(p) if p >= 1 => p,
                _ => return Err(err(format!("partitions must be at least 1 (got {p})"))),
            },
        };
        topic::resolve_topic_config(&t.config, cfg).map_err(|e| err(e.message))?;
        out.push(TopicSpec {
            name: t.name.clone(),
            partitions,
            config: t.config.clone(),
        });
    }
    Ok(out)
}

/// The broker's value of `key`: what the operator set, else the default of Skiff's table.
pub(crate) fn broker_value(broker: &BrokerConfig, key: &str) -> Option<String> {
    broker_layers(broker)
        .iter()
        .find_map(|(layer, _)| layer.get(key).cloned())
        .or_else(|| {
            crate::names::broker_config_def(key)
                .and_then(|d| d.default)
                .map(str::to_string)
        })
}

/// The layers a broker key can be set in, highest precedence first, with their sources.
pub(crate) fn broker_layers(cfg: &BrokerConfig) -> [(&BTreeMap<String, String>, ConfigSource); 3] {
    [
        (&cfg.dynamic_broker, ConfigSource::DynamicBroker),
        (&cfg.dynamic_default, ConfigSource::DynamicDefaultBroker),
        (&cfg.explicit, ConfigSource::StaticBroker),
    ]
}
