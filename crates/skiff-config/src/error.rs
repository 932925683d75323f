//! Errors of skiff-config: one enum for loading broker configuration, one struct for topic
//! config problems (which the broker turns into Kafka's INVALID_CONFIG with the message).
//!
//! Plain data, `Send + Sync`. No I/O.

use std::path::PathBuf;

/// A problem with the broker configuration (file, `--set` or environment). Every variant names
/// the key or argument at fault and where it came from, so the operator can fix it directly.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {} is not valid TOML: {message}", path.display())]
    Toml { path: PathBuf, message: String },
    /// A top-level table or key other than `[broker]` and `[[topic]]`.
    #[error(
        "unknown top-level entry `{name}` in {origin}: only [broker] and [[topic]] are allowed"
    )]
    UnknownTable { name: String, origin: String },
    /// A key Kafka does not define (usually a typo).
    #[error("unknown config key `{key}` ({origin}){}", hint_suffix(.hint))]
    UnknownKey {
        key: String,
        origin: String,
        /// The closest known key, when one is close enough to be a likely typo.
        hint: Option<String>,
    },
    /// A known key with a value that does not parse or is out of range.
    #[error("invalid value for `{key}` ({origin}): {message}")]
    InvalidValue {
        key: String,
        origin: String,
        message: String,
    },
    /// The same key given twice in one source (e.g. `log.dirs` dotted and `"log.dirs"` quoted).
    #[error("config key `{key}` is set twice in {origin}")]
    Duplicate { key: String, origin: String },
    /// A `--set` argument without `=`.
    #[error("bad --set argument `{arg}`: expected key=value (a Kafka broker config name)")]
    BadSet { arg: String },
    /// A `[[topic]]` entry is malformed or has an invalid topic config.
    #[error("[[topic]] entry #{index}{}: {message}", topic_suffix(.name))]
    Topic {
        /// 1-based position of the entry in the file.
        index: usize,
        name: Option<String>,
        message: String,
    },
}

fn hint_suffix(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!("; did you mean `{h}`?"),
        None => String::new(),
    }
}

fn topic_suffix(name: &Option<String>) -> String {
    match name {
        Some(n) => format!(" (`{n}`)"),
        None => String::new(),
    }
}

/// An invalid topic config name or value. The broker reports it as INVALID_CONFIG (40) with
/// `message`, which follows Kafka's wording so clients and tools see familiar text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TopicConfigError {
    /// The config name at fault.
    pub name: String,
    /// Kafka-style message, e.g. `Invalid value -2 for configuration retention.ms: Value must be at least -1`.
    pub message: String,
}

impl TopicConfigError {
    /// Kafka's ConfigException wording: `Invalid value V for configuration N: WHY`.
    pub(crate) fn invalid(name: &str, value: &str, why: &str) -> Self {
        TopicConfigError {
            name: name.to_string(),
            message: format!("Invalid value {value} for configuration {name}: {why}"),
        }
    }

    pub(crate) fn other(name: &str, message: String) -> Self {
        TopicConfigError {
            name: name.to_string(),
            message,
        }
    }
}
