//! Behaviour tests across modules, by topic: loading precedence and errors and the shipped
//! example config (`load.rs`), topic override validation and resolution and DescribeConfigs
//! sources and synonyms (`describe.rs`), and the key table itself: the guard that keys marked
//! implemented are read by the broker, the generated docs, defaults (`table.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skiff_log::{CleanupPolicy, LogConfig};
use skiff_records::TimestampType;

use crate::*;

/// Loads `text` as a config file (no `--set`, no environment).
pub(crate) fn from_toml(text: &str) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    load_str(text, Path::new("test.toml"), &[], Vec::new())
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A default configuration with `pairs` set as explicit keys (as a TOML file would set them),
/// for unit tests of the readers of one key family.
pub(crate) fn explicit_config(pairs: &[(&str, &str)]) -> BrokerConfig {
    let mut c = BrokerConfig::default();
    for (k, v) in pairs {
        c.explicit.insert(k.to_string(), v.to_string());
    }
    c
}

fn no_env() -> Vec<(String, String)> {
    Vec::new()
}

mod describe;
mod load;
mod table;
