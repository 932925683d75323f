//! skiff-config: Skiff's configuration.
//!
//! Owns Apache Kafka's broker and topic config names, types and defaults (Kafka 4.x), their
//! validation with Kafka's rules and messages, the typed [`BrokerConfig`] the broker runs
//! with, the typed per-topic [`skiff_log::LogConfig`] resolved from overrides, the
//! DescribeConfigs views, and loading from a TOML file, `--set key=value` and `SKIFF_*`
//! environment variables (in that increasing precedence).
//!
//! No shared state; everything is plain data or pure functions, safe from any thread. The only
//! I/O is reading the config file in [`load`].
#![cfg_attr(test, allow(clippy::unwrap_used))]

// First: `keys.rs` uses its macros (textual order matters for `macro_rules!`).
#[macro_use]
mod keys_macro;

mod broker;
mod describe;
mod docs;
mod dynamic;
mod error;
mod group;
mod group_share;
mod group_streams;
mod http;
mod keys;
mod listener;
mod load;
mod names;
mod sasl;
mod ssl;
mod topic;
mod types;

#[cfg(test)]
mod tests;

pub use broker::{validate_topic_name, BrokerConfig, TopicSpec};
pub use describe::{broker_config_type, describe_broker_configs, describe_default_broker_configs};
pub use docs::{configuration_reference, REGENERATE};
pub use dynamic::{
    broker_key_dynamic, check_reconfiguration, validate_dynamic_broker, with_dynamic, DynamicKey,
    DynamicRefusal,
};
pub use error::{ConfigError, TopicConfigError};
pub use group::{
    describe_group_configs, group_config_def, group_config_defs, group_consumer_timeouts,
    validate_group_configs, GroupConfigDef,
};
pub use group_share::{
    parse_share_offset_reset, share_group_values, ShareGroupValues, ShareOffsetReset,
};
pub use group_streams::{streams_group_values, StreamsGroupValues};
pub use http::{parse_http_authentication, HttpAuthentication};
pub use listener::{
    parse_host_port, parse_listeners, parse_protocol_map, HostPort, Listener, DEFAULT_PROTOCOL_MAP,
};
pub use load::{env_var_name, load, load_str, ENV_PREFIX, RESERVED_ENV};
pub use names::{broker_config_def, broker_config_names, closest_name, BrokerConfigDef, KeyStatus};
pub use sasl::{
    check_listener_sasl, entries as sasl_entries, listener_sasl, listener_sasl_override_base,
    Keyed, ListenerSasl, ENTRY_LIST_KEYS, OAUTHBEARER_KEYS, OAUTHBEARER_VALIDATOR_HANDLER,
    SUPPORTED_MECHANISMS,
};
pub use ssl::{
    listener_key, listener_override_base, listener_protocol, listener_ssl, ClientAuth, ListenerSsl,
    SecurityProtocol, LISTENER_SSL_KEYS,
};
pub use topic::{
    describe_topic_configs, resolve_topic_config, topic_config_def, topic_config_defs,
    validate_topic_overrides, BrokerSynonym, TopicConfigDef,
};
pub use types::{ConfigSource, ConfigType, DescribedConfig};

/// The example configuration shipped in `config/skiff.toml`.
pub const EXAMPLE_CONFIG: &str = include_str!("../../../config/skiff.toml");
