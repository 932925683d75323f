//! The DescribeConfigs(BROKER) views: every broker key with the value in force, where it
//! comes from and its synonyms (Kafka's order), for this node and for the cluster-default
//! (`<default>`) resource.
//!
//! Pure functions over a `BrokerConfig` and the static key tables; safe from any thread.

use crate::broker::{broker_layers, BrokerConfig};
use crate::dynamic::{broker_key_dynamic, DynamicKey};
use crate::names::{self, KeyStatus};
use crate::types::{ConfigSource, ConfigType, DescribedConfig};

/// DescribeConfigs(BROKER) for this node: every known key with the value in force, taken from
/// the per-broker dynamic layer, the cluster-default dynamic layer, the static configuration
/// or the default, in that order, each layer that sets it listed as a synonym (Kafka's
/// order). Passwords are sensitive and never returned. Only keys Skiff changes dynamically
/// are not read-only.
pub fn describe_broker_configs(cfg: &BrokerConfig) -> Vec<DescribedConfig> {
    names::broker_config_names()
        .iter()
        .filter(|d| {
            d.described()
                || cfg.dynamic_broker.contains_key(d.name)
                || (d.internal()
                    && broker_layers(cfg)
                        .iter()
                        .any(|(l, _)| l.contains_key(d.name)))
        })
        .map(|d| {
            let sensitive = d.is_sensitive();
            let hide = |v: Option<String>| if sensitive { None } else { v };
            let default = d.default.map(str::to_string);
            let mut synonyms = Vec::new();
            let mut chosen: Option<(Option<String>, ConfigSource)> = None;
            for (layer, source) in broker_layers(cfg) {
                if let Some(v) = layer.get(d.name) {
                    synonyms.push((d.name.to_string(), hide(Some(v.clone())), source));
                    if chosen.is_none() {
                        chosen = Some((hide(Some(v.clone())), source));
                    }
                }
            }
            let (value, source) = match chosen {
                Some(c) => c,
                // Unset, Skiff still runs as node 1 (Kafka would refuse to start).
                None if d.name == "node.id" || d.name == "broker.id" => {
                    (Some(cfg.node_id.to_string()), ConfigSource::Default)
                }
                None => (hide(default.clone()), ConfigSource::Default),
            };
            if default.is_some() {
                synonyms.push((d.name.to_string(), hide(default), ConfigSource::Default));
            }
            DescribedConfig {
                name: d.name.to_string(),
                value,
                source,
                read_only: broker_key_dynamic(d.name) != DynamicKey::Applied,
                is_sensitive: sensitive,
                kind: d.kind,
                doc: match d.status {
                    KeyStatus::Implemented => "",
                    KeyStatus::Recognised | KeyStatus::DynamicOnly => {
                        "Apache Kafka config accepted by Skiff but not acted on."
                    }
                    KeyStatus::Skiff => "Skiff-only config.",
                },
                synonyms,
            }
        })
        .collect()
}

/// DescribeConfigs(BROKER) for the cluster-default resource (empty name): as in Kafka, only
/// the dynamic cluster-default configs, each with its single synonym.
pub fn describe_default_broker_configs(cfg: &BrokerConfig) -> Vec<DescribedConfig> {
    cfg.dynamic_default
        .iter()
        .filter_map(|(name, v)| {
            let d = names::broker_config_def(name)?;
            let value = (!d.is_sensitive()).then(|| v.clone());
            Some(DescribedConfig {
                name: d.name.to_string(),
                value: value.clone(),
                source: ConfigSource::DynamicDefaultBroker,
                read_only: false,
                is_sensitive: d.is_sensitive(),
                kind: d.kind,
                doc: "",
                synonyms: vec![(
                    d.name.to_string(),
                    value,
                    ConfigSource::DynamicDefaultBroker,
                )],
            })
        })
        .collect()
}

/// Kafka type of a broker key, for callers that describe values themselves.
pub fn broker_config_type(name: &str) -> Option<ConfigType> {
    names::broker_config_def(name).map(|d| d.kind)
}
