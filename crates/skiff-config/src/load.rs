//! Loading: the TOML file (`[broker]` with Kafka broker config names, `[[topic]]` entries),
//! then `--set key=value` overrides, then `SKIFF_<NAME>` environment variables, merged in that
//! precedence and handed to `broker::build` for typing and validation.
//!
//! Unknown keys in the file and in `--set` are errors (a typo must not pass silently). An
//! unknown `SKIFF_*` environment variable is only a warning naming it (with the closest
//! variable when one is near): the environment is shared with every other program, and
//! wrappers and platforms set `SKIFF_BIN`, `SKIFF_HOME` and the like for their own use. A bad
//! value of a known variable is still an error.
//!
//! TOML shape: dotted keys and quoted keys mean the same (`log.dirs = "x"` is parsed by TOML
//! as nested tables and flattened back to `log.dirs`); arrays are joined with `,` (for list
//! keys such as `log.dirs` and `listeners`), except for the keys in
//! [`crate::sasl::ENTRY_LIST_KEYS`], whose entries contain commas and are joined with newlines. Reads one file; otherwise pure.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use toml::{Table, Value};

use crate::broker::{build, BrokerConfig, RawTopic, Setting};
use crate::error::ConfigError;
use crate::names::{broker_config_def, broker_config_names, closest_name};
use crate::types::java_double;

/// Prefix of the environment variables that set broker keys.
pub const ENV_PREFIX: &str = "SKIFF_";
/// Environment variables with the prefix that the binary uses itself (config file path, log
/// filter, the password of `skiff compact --user`); they never name a broker key.
pub const RESERVED_ENV: &[&str] = &["SKIFF_CONFIG", "SKIFF_LOG", "SKIFF_HTTP_PASSWORD"];

/// The environment variable that sets `key`: `SKIFF_` + key upper-cased with `.` -> `_`.
pub fn env_var_name(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.to_ascii_uppercase().replace(['.', '-'], "_")
    )
}

/// Load the broker configuration: defaults < file < `--set` < environment. Returns the config
/// and warnings to log (e.g. one listing accepted-but-unimplemented keys).
pub fn load(
    file: Option<&Path>,
    sets: &[String],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    let text = match file {
        Some(p) => Some((
            std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.to_path_buf(),
                source,
            })?,
            p,
        )),
        None => None,
    };
    let file_part = match &text {
        Some((t, p)) => Some(parse_file(t, p)?),
        None => None,
    };
    let (cfg, warnings) = merge(file_part, sets, env)?;
    tracing::debug!(
        file = ?file,
        explicit_keys = cfg.explicit.len(),
        topics = cfg.topics.len(),
        "configuration loaded"
    );
    Ok((cfg, warnings))
}

/// Like [`load`], with the file's text given directly (`path` only names it in messages).
pub fn load_str(
    text: &str,
    path: &Path,
    sets: &[String],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    merge(Some(parse_file(text, path)?), sets, env)
}

type FilePart = (BTreeMap<String, Setting>, Vec<RawTopic>);

fn merge(
    file: Option<FilePart>,
    sets: &[String],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(BrokerConfig, Vec<String>), ConfigError> {
    let (mut settings, topics) = file.unwrap_or_default();
    for arg in sets {
        let (k, v) = arg
            .split_once('=')
            .ok_or_else(|| ConfigError::BadSet { arg: arg.clone() })?;
        let key = k.trim();
        if key.is_empty() {
            return Err(ConfigError::BadSet { arg: arg.clone() });
        }
        let origin = format!("--set {key}");
        check_known(key, &origin)?;
        settings.insert(
            key.to_string(),
            Setting {
                value: v.trim().to_string(),
                origin,
            },
        );
    }
    let by_env: HashMap<String, &'static str> = broker_config_names()
        .iter()
        .map(|d| (env_var_name(d.name), d.name))
        .collect();
    let mut env: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect();
    env.sort();
    let mut env_warnings = Vec::new();
    for (var, value) in env {
        if RESERVED_ENV.contains(&var.as_str()) {
            continue;
        }
        let origin = format!("environment variable {var}");
        let Some(key) = by_env.get(&var) else {
            env_warnings.push(unknown_env_warning(&var));
            continue;
        };
        settings.insert(
            key.to_string(),
            Setting {
                value: value.trim().to_string(),
                origin,
            },
        );
    }
    let (cfg, mut warnings) = build(&settings, topics)?;
    env_warnings.append(&mut warnings);
    Ok((cfg, env_warnings))
}

/// The warning for a `SKIFF_*` variable that names no broker key.
fn unknown_env_warning(var: &str) -> String {
    let guess = var[ENV_PREFIX.len()..]
        .to_ascii_lowercase()
        .replace('_', ".");
    let hint = match closest_name(&guess) {
        Some(name) => format!("; did you mean {}?", env_var_name(name)),
        None => String::new(),
    };
    format!(
        "ignoring environment variable {var}: it names no broker config key \
         ({ENV_PREFIX}<KEY> sets a key, e.g. SKIFF_LOG_DIRS for log.dirs){hint}"
    )
}

fn check_known(key: &str, origin: &str) -> Result<(), ConfigError> {
    if broker_config_def(key).is_some()
        || crate::ssl::listener_override_base(key).is_some()
        || crate::sasl::listener_sasl_override_base(key).is_some()
    {
        return Ok(());
    }
    Err(ConfigError::UnknownKey {
        key: key.to_string(),
        origin: origin.to_string(),
        hint: closest_name(key).map(str::to_string),
    })
}

fn parse_file(text: &str, path: &Path) -> Result<FilePart, ConfigError> {
    let origin = format!("config file {}", path.display());
    let table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Toml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut settings = BTreeMap::new();
    let mut topics = Vec::new();
    for (name, value) in table {
        match (name.as_str(), value) {
            ("broker", Value::Table(t)) => {
                let mut flat = BTreeMap::new();
                flatten("", &t, &mut flat, &origin)?;
                for (key, value) in flat {
                    check_known(&key, &origin)?;
                    settings.insert(
                        key,
                        Setting {
                            value,
                            origin: origin.clone(),
                        },
                    );
                }
            }
            ("topic", Value::Array(entries)) => {
                for (i, entry) in entries.into_iter().enumerate() {
                    topics.push(parse_topic(i + 1, entry, &origin)?);
                }
            }
            ("broker", _) | ("topic", _) => {
                return Err(ConfigError::UnknownTable {
                    name: format!("{name} (must be [broker] / [[topic]])"),
                    origin,
                })
            }
            (_, _) => return Err(ConfigError::UnknownTable { name, origin }),
        }
    }
    Ok((settings, topics))
}

/// Flatten nested tables into dotted keys; scalar and array values become Kafka strings.
fn flatten(
    prefix: &str,
    t: &Table,
    out: &mut BTreeMap<String, String>,
    origin: &str,
) -> Result<(), ConfigError> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if let Value::Table(inner) = v {
            flatten(&key, inner, out, origin)?;
            continue;
        }
        let s = match v {
            // Entries that contain commas themselves (`--add-scram` arguments): one per line.
            Value::Array(items) if crate::sasl::ENTRY_LIST_KEYS.contains(&key.as_str()) => {
                let mut parts = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) if !s.contains('\n') => parts.push(s.clone()),
                        _ => {
                            return Err(ConfigError::InvalidValue {
                                key: key.clone(),
                                origin: origin.to_string(),
                                message: "must be an array of one-line strings".into(),
                            })
                        }
                    }
                }
                parts.join("\n")
            }
            _ => scalar(&key, v, origin)?,
        };
        if out.insert(key.clone(), s).is_some() {
            return Err(ConfigError::Duplicate {
                key,
                origin: origin.to_string(),
            });
        }
    }
    Ok(())
}

fn scalar(key: &str, v: &Value, origin: &str) -> Result<String, ConfigError> {
    let bad = |what: &str| ConfigError::InvalidValue {
        key: key.to_string(),
        origin: origin.to_string(),
        message: format!(
            "{what} is not allowed here; use a string, number, boolean or array of them"
        ),
    };
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => java_double(*f),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(_) => return Err(bad("a date-time")),
        Value::Table(_) => return Err(bad("a table")),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Array(_) | Value::Table(_) => {
                        return Err(bad("a nested array or table"))
                    }
                    other => parts.push(scalar(key, other, origin)?),
                }
            }
            parts.join(",")
        }
    })
}

fn parse_topic(index: usize, entry: Value, origin: &str) -> Result<RawTopic, ConfigError> {
    let err = |name: Option<String>, message: String| ConfigError::Topic {
        index,
        name,
        message,
    };
    let Value::Table(t) = entry else {
        return Err(err(None, format!("must be a table in {origin}")));
    };
    let name = match t.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(err(None, "`name` must be a string".to_string())),
        None => return Err(err(None, "`name` is required".to_string())),
    };
    let mut topic = RawTopic {
        index,
        name: name.clone(),
        partitions: None,
        config: BTreeMap::new(),
    };
    for (k, v) in &t {
        match (k.as_str(), v) {
            ("name", _) => {}
            ("partitions", Value::Integer(p)) => topic.partitions = Some(*p),
            ("partitions", _) => {
                return Err(err(
                    Some(name),
                    "`partitions` must be an integer".to_string(),
                ))
            }
            ("config", Value::Table(c)) => flatten("", c, &mut topic.config, origin)?,
            ("config", _) => return Err(err(Some(name), "`config` must be a table".to_string())),
            (other, _) => {
                return Err(err(
                    Some(name),
                    format!("unknown key `{other}` (allowed: name, partitions, config)"),
                ))
            }
        }
    }
    Ok(topic)
}
