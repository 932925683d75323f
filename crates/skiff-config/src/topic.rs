//! Topic configs: the table of every Apache Kafka 4.x topic config (type, default, broker
//! synonyms, validator, whether Skiff acts on it), validation of per-topic overrides with
//! Kafka's rules and messages, resolution of overrides over the broker defaults into the typed
//! `skiff_log::LogConfig`, and the DescribeConfigs(TOPIC) view with sources and synonyms.
//!
//! Pure functions over a static table; safe to call from any thread.

use std::collections::BTreeMap;

use skiff_log::{CleanupPolicy, LogConfig};
use skiff_records::TimestampType;

use crate::broker::BrokerConfig;
use crate::error::TopicConfigError;
use crate::names;
use crate::types::{parse_value, ConfigSource, ConfigType, DescribedConfig, Parsed, Validator};

/// A broker config that supplies a topic config's default, and the factor that converts its
/// unit to the topic config's unit (e.g. 3_600_000 for `log.retention.hours` -> `retention.ms`).
#[derive(Clone, Copy, Debug)]
pub struct BrokerSynonym {
    pub name: &'static str,
    pub factor: i64,
}

/// One topic config as Kafka defines it.
#[derive(Clone, Debug)]
pub struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The broker config with the highest precedence that sets this topic config's default.
    pub broker_key: Option<&'static str>,
    /// All broker synonyms, highest precedence first (Kafka's order).
    pub broker_synonyms: &'static [BrokerSynonym],
    /// Kafka's default, as DescribeConfigs prints it.
    pub default: &'static str,
    /// false = accepted, validated and described, but not acted on by Skiff yet.
    pub supported: bool,
    /// Our own one-line description.
    pub doc: &'static str,
    pub(crate) validator: Validator,
}

const fn syn(name: &'static str) -> BrokerSynonym {
    BrokerSynonym { name, factor: 1 }
}
const MINUTES: i64 = 60_000;
const HOURS: i64 = 3_600_000;

#[allow(clippy::too_many_arguments)]
const fn def(
    name: &'static str,
    kind: ConfigType,
    broker_synonyms: &'static [BrokerSynonym],
    default: &'static str,
    validator: Validator,
    supported: bool,
    doc: &'static str,
) -> TopicConfigDef {
    let broker_key = match broker_synonyms.first() {
        Some(s) => Some(s.name),
        None => None,
    };
    TopicConfigDef {
        name,
        kind,
        broker_key,
        broker_synonyms,
        default,
        supported,
        doc,
        validator,
    }
}

const I64_MAX: &str = "9223372036854775807";
/// Kafka 4.x (KIP-1030) raised the minimum segment size to 1 MiB.
const MIN_SEGMENT_BYTES: i64 = 1_048_576;
const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

use ConfigType as T;
use Validator as V;

static DEFS: [TopicConfigDef; 41] = [
    def("cleanup.policy", T::List, &[syn("log.cleanup.policy")], "delete", V::ListOf(&["compact", "delete"]), true,
        "Which retention applies to old segments: delete (time/size), compact (latest value per key), both, or none (empty)."),
    def("compression.gzip.level", T::Int, &[syn("compression.gzip.level")], "-1", V::GzipLevel, false,
        "gzip level used when the broker recompresses with gzip."),
    def("compression.lz4.level", T::Int, &[syn("compression.lz4.level")], "9", V::Between(1, 17), false,
        "lz4 level used when the broker recompresses with lz4."),
    def("compression.type", T::String, &[syn("compression.type")], "producer", V::OneOf(COMPRESSION_TYPES), true,
        "Codec batches are stored with; producer keeps whatever the producer sent."),
    def("compression.zstd.level", T::Int, &[syn("compression.zstd.level")], "3", V::Between(-131_072, 22), false,
        "zstd level used when the broker recompresses with zstd."),
    def("delete.retention.ms", T::Long, &[syn("log.cleaner.delete.retention.ms")], "86400000", V::AtLeast(0), true,
        "How long compaction keeps tombstones so slow readers still see deletes."),
    def("errors.deadletterqueue.group.enable", T::Boolean, &[], "false", V::None, false,
        "Whether share groups may use this topic as their dead-letter queue (share groups are not available)."),
    def("file.delete.delay.ms", T::Long, &[syn("log.segment.delete.delay.ms")], "60000", V::AtLeast(0), false,
        "Grace period before a removed segment's files are unlinked (not acted on: Skiff unlinks them at once; open readers keep reading on POSIX)."),
    def("flush.messages", T::Long, &[syn("log.flush.interval.messages")], I64_MAX, V::AtLeast(1), true,
        "Force an fsync after this many messages (default: leave it to the OS and acks)."),
    def("flush.ms", T::Long, &[syn("log.flush.interval.ms"), syn("log.flush.scheduler.interval.ms")], I64_MAX, V::AtLeast(0), true,
        "Force an fsync when unflushed data is older than this."),
    def("follower.replication.throttled.replicas", T::List, &[], "", V::ThrottledReplicas, false,
        "Replicas throttled on the follower side (replication; no effect on a single node)."),
    def("index.interval.bytes", T::Int, &[syn("log.index.interval.bytes")], "4096", V::AtLeast(0), true,
        "Bytes appended between two offset-index entries."),
    def("leader.replication.throttled.replicas", T::List, &[], "", V::ThrottledReplicas, false,
        "Replicas throttled on the leader side (replication; no effect on a single node)."),
    def("local.retention.bytes", T::Long, &[syn("log.local.retention.bytes")], "-2", V::AtLeast(-2), false,
        "Local size limit when tiered storage is on (tiered storage is not available)."),
    def("local.retention.ms", T::Long, &[syn("log.local.retention.ms")], "-2", V::AtLeast(-2), false,
        "Local time limit when tiered storage is on (tiered storage is not available)."),
    def("max.compaction.lag.ms", T::Long, &[syn("log.cleaner.max.compaction.lag.ms")], I64_MAX, V::AtLeast(1), true,
        "Longest a record may stay uncompacted before its segment becomes eligible."),
    def("max.decompressed.message.bytes", T::Int, &[syn("max.decompressed.message.bytes")], "2147483639",
        V::Between(1, 2_147_483_639), false,
        "Per-record cap on decompressed size (not enforced per record; Skiff caps each whole decompressed batch at 128 MiB instead)."),
    def("max.message.bytes", T::Int, &[syn("message.max.bytes")], "1048588", V::AtLeast(0), true,
        "Largest record batch accepted, after compression."),
    def("message.timestamp.after.max.ms", T::Long, &[syn("log.message.timestamp.after.max.ms")], "3600000", V::AtLeast(0), true,
        "How far in the future a CreateTime timestamp may be."),
    def("message.timestamp.before.max.ms", T::Long, &[syn("log.message.timestamp.before.max.ms")], I64_MAX, V::AtLeast(0), true,
        "How far in the past a CreateTime timestamp may be."),
    def("message.timestamp.type", T::String, &[syn("log.message.timestamp.type")], "CreateTime",
        V::OneOf(&["CreateTime", "LogAppendTime"]), true,
        "Keep the producer's timestamp (CreateTime) or stamp the append time (LogAppendTime)."),
    def("min.cleanable.dirty.ratio", T::Double, &[syn("log.cleaner.min.cleanable.ratio")], "0.5", V::Ratio, true,
        "Share of uncompacted bytes that makes a log worth cleaning."),
    def("min.compaction.lag.ms", T::Long, &[syn("log.cleaner.min.compaction.lag.ms")], "0", V::AtLeast(0), true,
        "Youngest a record may be and still be compacted away."),
    def("min.insync.replicas", T::Int, &[syn("min.insync.replicas")], "1", V::AtLeast(1), false,
        "Replicas that must acknowledge acks=all writes (a single node has one)."),
    def("preallocate", T::Boolean, &[syn("log.preallocate")], "false", V::None, false,
        "Preallocate segment files on creation (not acted on: Skiff never preallocates)."),
    def("remote.copy.lag.bytes", T::Long, &[syn("log.remote.copy.lag.bytes")], "-1", V::AtLeast(-1), false,
        "Bytes of newer local data after which a segment may be copied to tiered storage (tiered storage is not available)."),
    def("remote.copy.lag.ms", T::Long, &[syn("log.remote.copy.lag.ms")], "0", V::AtLeast(-1), false,
        "Age after which a segment may be copied to tiered storage (tiered storage is not available)."),
    def("remote.log.copy.disable", T::Boolean, &[], "false", V::None, false,
        "Stop copying segments to tiered storage (tiered storage is not available)."),
    def("remote.log.delete.on.disable", T::Boolean, &[], "false", V::None, false,
        "Delete tiered data when tiered storage is turned off (not available)."),
    def("remote.storage.enable", T::Boolean, &[], "false", V::None, false,
        "Tiered storage for this topic (not available; only false is accepted)."),
    def("retention.bytes", T::Long, &[syn("log.retention.bytes")], "-1", V::None, true,
        "Size per partition above which the oldest segments are deleted; -1 = no limit."),
    def("retention.ms", T::Long,
        &[syn("log.retention.ms"), BrokerSynonym { name: "log.retention.minutes", factor: MINUTES },
          BrokerSynonym { name: "log.retention.hours", factor: HOURS }],
        "604800000", V::AtLeast(-1), true,
        "Age after which segments are deleted; -1 = keep forever."),
    def("segment.bytes", T::Int, &[syn("log.segment.bytes")], "1073741824", V::AtLeast(MIN_SEGMENT_BYTES), true,
        "Segment file size at which the log rolls a new segment."),
    def("segment.index.bytes", T::Int, &[syn("log.index.size.max.bytes")], "10485760", V::AtLeast(4), true,
        "Maximum size of a segment's offset and time index files."),
    def("segment.jitter.ms", T::Long,
        &[syn("log.roll.jitter.ms"), BrokerSynonym { name: "log.roll.jitter.hours", factor: HOURS }],
        "0", V::AtLeast(0), true,
        "Random amount subtracted from segment.ms so partitions do not roll together."),
    def("segment.ms", T::Long,
        &[syn("log.roll.ms"), BrokerSynonym { name: "log.roll.hours", factor: HOURS }],
        "604800000", V::AtLeast(1), true,
        "Age at which a non-empty active segment is rolled, so retention and compaction can act on it."),
    // Skiff's own topic configs (`skiff.` prefix: Kafka has no such names; its clients set and
    // describe them like any other). Docs: docs/compaction.md §5.10, "Tombstones that wait",
    // and §5.11, "History beside state".
    def("skiff.compaction.archive.topic", T::String, &[], "", V::TopicNameOrEmpty, true,
        "Topic that receives every record compaction removes (superseded values and expired tombstones), with its source partition, offset and timestamp in headers; empty = off."),
    def("skiff.key.index.enable", T::Boolean, &[], "false", V::None, true,
        "Keep an in-memory index of each partition's keys so the latest value of a key can be looked up (docs/key-index.md); needs cleanup.policy with compact. Memory comes from skiff.key.index.memory.bytes."),
    def("skiff.tombstone.wait.for.consumers", T::Boolean, &[], "false", V::None, true,
        "Compaction keeps a tombstone past delete.retention.ms until every consumer group with a committed offset on the partition has committed past it."),
    def("skiff.tombstone.wait.max.ms", T::Long, &[], "604800000", V::AtLeast(0), true,
        "Longest consumers may hold a tombstone back beyond delete.retention.ms; a dead group cannot keep tombstones forever."),
    def("unclean.leader.election.enable", T::Boolean, &[syn("unclean.leader.election.enable")], "false", V::None, false,
        "Allow out-of-sync replicas to lead (replication; no effect on a single node)."),
];

/// Every Kafka 4.x topic config and Skiff's own (`skiff.`), sorted by name.
pub fn topic_config_defs() -> &'static [TopicConfigDef] {
    &DEFS
}

/// The definition of one topic config, if Kafka has it.
pub fn topic_config_def(name: &str) -> Option<&'static TopicConfigDef> {
    DEFS.iter().find(|d| d.name == name)
}

/// Validate overrides (name -> value, as CreateTopics/AlterConfigs carry them) against Kafka's
/// rules, with Kafka's defaults filling in for cross-checks.
pub fn validate_topic_overrides(
    overrides: &BTreeMap<String, String>,
) -> Result<(), TopicConfigError> {
    resolve_over(overrides, &LogConfig::default()).map(|_| ())
}

/// Validate overrides and resolve them over the broker's topic defaults into the typed config.
pub fn resolve_topic_config(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Result<LogConfig, TopicConfigError> {
    resolve_over(overrides, &broker.log)
}

fn resolve_over(
    overrides: &BTreeMap<String, String>,
    base: &LogConfig,
) -> Result<LogConfig, TopicConfigError> {
    let mut cfg = base.clone();
    for (name, raw) in overrides {
        let def = topic_config_def(name).ok_or_else(|| {
            TopicConfigError::other(name, format!("Unknown topic config name: {name}"))
        })?;
        let value = parse_value(def.name, def.kind, raw, def.validator)?;
        if def.name == "remote.storage.enable" && value == Parsed::Bool(true) {
            return Err(TopicConfigError::other(
                def.name,
                "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
                    .to_string(),
            ));
        }
        apply(&mut cfg, def.name, &value);
    }
    check_cross(&cfg)?;
    Ok(cfg)
}

/// Checks that involve more than one config (Kafka's `LogConfig.validateValues`).
pub(crate) fn check_cross(cfg: &LogConfig) -> Result<(), TopicConfigError> {
    if cfg.min_compaction_lag_ms > cfg.max_compaction_lag_ms {
        return Err(TopicConfigError::other(
            "min.compaction.lag.ms",
            format!(
                "conflict topic config setting min.compaction.lag.ms ({}) > max.compaction.lag.ms ({})",
                cfg.min_compaction_lag_ms, cfg.max_compaction_lag_ms
            ),
        ));
    }
    if cfg.key_index_enable && !cfg.cleanup_policy.compact {
        return Err(TopicConfigError::other(
            "skiff.key.index.enable",
            "skiff.key.index.enable=true needs cleanup.policy to contain compact: only a compacted \
             topic has one latest value per key (set cleanup.policy=compact or compact,delete)"
                .to_string(),
        ));
    }
    Ok(())
}

fn to_i32(v: i64) -> i32 {
    // Values reach here already range-checked as INT; the clamp only guards the type change.
    i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX })
}

/// Store a parsed, validated value into the typed config. Configs Skiff does not act on
/// (replication, tiered storage, codec levels) have no field and are ignored here.
pub(crate) fn apply(cfg: &mut LogConfig, name: &str, value: &Parsed) {
    match (name, value) {
        ("cleanup.policy", Parsed::List(items)) => {
            cfg.cleanup_policy = CleanupPolicy {
                delete: items.iter().any(|i| i == "delete"),
                compact: items.iter().any(|i| i == "compact"),
            }
        }
        ("compression.type", Parsed::Str(s)) => cfg.compression_type = s.clone(),
        ("delete.retention.ms", Parsed::Int(v)) => cfg.delete_retention_ms = *v,
        ("file.delete.delay.ms", Parsed::Int(v)) => cfg.file_delete_delay_ms = *v,
        ("flush.messages", Parsed::Int(v)) => cfg.flush_messages = *v,
        ("flush.ms", Parsed::Int(v)) => cfg.flush_ms = *v,
        ("index.interval.bytes", Parsed::Int(v)) => cfg.index_interval_bytes = to_i32(*v),
        ("max.compaction.lag.ms", Parsed::Int(v)) => cfg.max_compaction_lag_ms = *v,
        ("max.message.bytes", Parsed::Int(v)) => cfg.max_message_bytes = to_i32(*v),
        ("message.timestamp.after.max.ms", Parsed::Int(v)) => {
            cfg.message_timestamp_after_max_ms = *v
        }
        ("message.timestamp.before.max.ms", Parsed::Int(v)) => {
            cfg.message_timestamp_before_max_ms = *v
        }
        ("message.timestamp.type", Parsed::Str(s)) => {
            cfg.message_timestamp_type = if s == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            }
        }
        ("min.cleanable.dirty.ratio", Parsed::Double(v)) => cfg.min_cleanable_dirty_ratio = *v,
        ("min.compaction.lag.ms", Parsed::Int(v)) => cfg.min_compaction_lag_ms = *v,
        ("preallocate", Parsed::Bool(b)) => cfg.preallocate = *b,
        ("retention.bytes", Parsed::Int(v)) => cfg.retention_bytes = *v,
        ("retention.ms", Parsed::Int(v)) => cfg.retention_ms = *v,
        ("segment.bytes", Parsed::Int(v)) => cfg.segment_bytes = to_i32(*v),
        ("segment.index.bytes", Parsed::Int(v)) => cfg.segment_index_bytes = to_i32(*v),
        ("segment.jitter.ms", Parsed::Int(v)) => cfg.segment_jitter_ms = *v,
        ("segment.ms", Parsed::Int(v)) => cfg.segment_ms = *v,
        ("skiff.compaction.archive.topic", Parsed::Str(s)) => cfg.archive_topic = s.clone(),
        ("skiff.tombstone.wait.for.consumers", Parsed::Bool(b)) => {
            cfg.tombstone_wait_for_consumers = *b
        }
        ("skiff.tombstone.wait.max.ms", Parsed::Int(v)) => cfg.tombstone_wait_max_ms = *v,
        ("skiff.key.index.enable", Parsed::Bool(b)) => cfg.key_index_enable = *b,
        _ => {}
    }
}

/// Convert a broker synonym's value to the topic config's unit (hours/minutes -> ms). Kafka
/// treats a negative converted time as "unlimited" (-1).
pub(crate) fn convert_synonym(raw: &str, factor: i64) -> String {
    if factor == 1 {
        return raw.to_string();
    }
    match raw.trim().parse::<i64>() {
        Ok(v) => {
            let ms = v.saturating_mul(factor);
            if ms < 0 {
                "-1".to_string()
            } else {
                ms.to_string()
            }
        }
        Err(_) => raw.to_string(),
    }
}

/// DescribeConfigs(TOPIC): every topic config with the value in force and where it comes from:
/// the topic override, else the broker's setting of a synonym (dynamic per-broker, dynamic
/// cluster default, then static), else Kafka's default.
/// Synonyms follow Kafka's order: topic override, set broker synonyms, then the default of the
/// first broker synonym when it has one.
pub fn describe_topic_configs(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Vec<DescribedConfig> {
    DEFS.iter()
        .map(|d| {
            let mut synonyms = Vec::new();
            let mut chosen: Option<(String, ConfigSource)> = None;
            if let Some(v) = overrides.get(d.name) {
                synonyms.push((
                    d.name.to_string(),
                    Some(v.clone()),
                    ConfigSource::TopicConfig,
                ));
                chosen = Some((v.clone(), ConfigSource::TopicConfig));
            }
            for s in d.broker_synonyms {
                for (layer, source) in crate::broker::broker_layers(broker) {
                    if let Some(v) = layer.get(s.name) {
                        synonyms.push((s.name.to_string(), Some(v.clone()), source));
                        if chosen.is_none() {
                            chosen = Some((convert_synonym(v, s.factor), source));
                        }
                    }
                }
            }
            // Like Kafka, only the highest-precedence synonym reports its default: a topic whose
            // first synonym has no default (retention.ms, segment.ms, flush.ms) lists none.
            if let Some(s) = d.broker_synonyms.first() {
                if let Some(default) = names::broker_config_def(s.name).and_then(|b| b.default) {
                    synonyms.push((
                        s.name.to_string(),
                        Some(default.to_string()),
                        ConfigSource::Default,
                    ));
                }
            }
            let (value, source) =
                chosen.unwrap_or_else(|| (d.default.to_string(), ConfigSource::Default));
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
