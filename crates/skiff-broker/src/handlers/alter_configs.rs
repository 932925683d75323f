//! AlterConfigs (replace a topic's overrides) and IncrementalAlterConfigs (SET, DELETE,
//! APPEND, SUBTRACT per key). Broker configs come from the TOML file and are not dynamic.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use skiff_config::ConfigType;

use super::describe_configs::{BROKER, TOPIC};
use super::str_bytes;
use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::topic_error_code;

type Failure = (ResponseError, String);

/// IncrementalAlterConfigs operations.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub async fn handle(broker: &Arc<Broker>, _version: i16, request: AlterConfigsRequest) -> Reply {
    let b = broker.clone();
    let validate_only = request.validate_only;
    let answered = blocking(move || {
        let responses = request
            .resources
            .into_iter()
            .map(|r| {
                let values: Vec<(&str, Option<&str>)> = r
                    .configs
                    .iter()
                    .map(|c| (c.name.as_str(), c.value.as_deref()))
                    .collect();
                let outcome = alter(
                    &b,
                    r.resource_type,
                    &r.resource_name,
                    &values,
                    validate_only,
                    |_| {
                        let mut overrides = BTreeMap::new();
                        for c in &r.configs {
                            let value = c.value.as_ref().ok_or_else(|| {
                                (
                                    ResponseError::InvalidRequest,
                                    format!("Null value not supported for : {}", c.name.as_str()),
                                )
                            })?;
                            overrides.insert(c.name.to_string(), value.to_string());
                        }
                        Ok(overrides)
                    },
                );
                let (code, message) = split(outcome);
                alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(r.resource_type)
                    .with_resource_name(r.resource_name)
                    .with_error_code(code)
                    .with_error_message(message)
            })
            .collect();
        AlterConfigsResponse::default().with_responses(responses)
    })
    .await;
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::AlterConfigs(response)),
        Err(e) => Reply::Close(e),
    }
}

pub async fn handle_incremental(
    broker: &Arc<Broker>,
    _version: i16,
    request: IncrementalAlterConfigsRequest,
) -> Reply {
    let b = broker.clone();
    let validate_only = request.validate_only;
    let answered = blocking(move || {
        let responses = request
            .resources
            .into_iter()
            .map(|r| {
                let values: Vec<(&str, Option<&str>)> = r
                    .configs
                    .iter()
                    .filter(|c| c.config_operation != DELETE)
                    .map(|c| (c.name.as_str(), c.value.as_deref()))
                    .collect();
                let outcome = alter(
                    &b,
                    r.resource_type,
                    &r.resource_name,
                    &values,
                    validate_only,
                    |current| {
                        let mut seen = HashSet::new();
                        let mut overrides = current.clone();
                        for c in &r.configs {
                            let name = c.name.to_string();
                            if !seen.insert(name.clone()) {
                                return Err((
                                    ResponseError::InvalidRequest,
                                    format!("Error due to duplicate config keys : {name}"),
                                ));
                            }
                            apply_op(
                                &b,
                                &mut overrides,
                                &name,
                                c.config_operation,
                                c.value.as_ref(),
                            )?;
                        }
                        Ok(overrides)
                    },
                );
                let (code, message) = split(outcome);
                incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(r.resource_type)
                    .with_resource_name(r.resource_name)
                    .with_error_code(code)
                    .with_error_message(message)
            })
            .collect();
        IncrementalAlterConfigsResponse::default().with_responses(responses)
    })
    .await;
    match answered {
        Ok(response) => Reply::Respond(ResponseKind::IncrementalAlterConfigs(response)),
        Err(e) => Reply::Close(e),
    }
}

/// Compute a topic's new overrides from its current ones and store them (validated first).
fn alter(
    broker: &Broker,
    resource_type: i8,
    name: &StrBytes,
    broker_values: &[(&str, Option<&str>)],
    validate_only: bool,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Failure>,
) -> Result<(), Failure> {
    match resource_type {
        TOPIC => {
            let topic = broker.topics.get(name.as_str()).ok_or_else(|| {
                (
                    ResponseError::UnknownTopicOrPartition,
                    format!("The topic '{}' does not exist.", name.as_str()),
                )
            })?;
            let overrides = next(&topic.overrides())?;
            broker
                .set_topic_overrides(&topic.name, overrides, validate_only)
                .map_err(|e| (topic_error_code(&e), e.to_string()))
        }
        BROKER => {
            check_alter_broker_name(broker, name.as_str())?;
            for (key, value) in broker_values {
                if let (Some(kind), Some(value)) = (skiff_config::broker_config_type(key), value) {
                    check_value_type(key, kind, value)?;
                }
            }
            // Kafka would store such an update as a dynamic config; Skiff has no dynamic
            // broker configs, so it refuses rather than answer success for an unapplied change.
            Err((
                ResponseError::InvalidRequest,
                "Skiff reads broker configs from its TOML file at start; they cannot be changed dynamically".into(),
            ))
        }
        other => Err((
            ResponseError::InvalidRequest,
            format!("Skiff does not alter config resources of type {other}"),
        )),
    }
}

fn apply_op(
    broker: &Broker,
    overrides: &mut BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&StrBytes>,
) -> Result<(), Failure> {
    let def = skiff_config::topic_config_def(name);
    let value = value.map(|v| v.to_string());
    match op {
        SET => {
            if def.is_none() {
                return Err((
                    ResponseError::InvalidConfig,
                    format!("Unknown topic config name: {name}"),
                ));
            }
            let value = value.ok_or_else(|| {
                (
                    ResponseError::InvalidRequest,
                    format!("Null value not supported for : {name}"),
                )
            })?;
            overrides.insert(name.to_string(), value);
        }
        // As Kafka: deleting a key that is not set (known or not) is a no-op.
        DELETE => {
            overrides.remove(name);
        }
        APPEND | SUBTRACT => {
            if def.map(|d| d.kind) != Some(ConfigType::List) {
                let verb = if op == APPEND { "APPEND" } else { "SUBTRACT" };
                return Err((
                    ResponseError::InvalidConfig,
                    format!("Can't {verb} to key {name} because its type is not LIST."),
                ));
            }
            let current = match overrides.get(name) {
                Some(v) => v.clone(),
                None => current_value(broker, overrides, name),
            };
            let mut items: Vec<String> = split_list(&current);
            for item in split_list(value.as_deref().unwrap_or("")) {
                if op == APPEND {
                    if !items.contains(&item) {
                        items.push(item);
                    }
                } else {
                    items.retain(|i| *i != item);
                }
            }
            overrides.insert(name.to_string(), items.join(","));
        }
        other => {
            return Err((
                ResponseError::InvalidRequest,
                format!("Unknown config operation {other} for {name}"),
            ));
        }
    }
    Ok(())
}

/// AlterConfigs names a broker by its id (empty for the cluster-wide defaults), with
/// Kafka's messages for anything else.
fn check_alter_broker_name(broker: &Broker, name: &str) -> Result<(), Failure> {
    if name.is_empty() {
        return Ok(());
    }
    let id: i32 = name.parse().map_err(|_| {
        (
            ResponseError::InvalidRequest,
            format!("Node id must be an integer, but it is: {name}"),
        )
    })?;
    if id != broker.node_id() {
        return Err((
            ResponseError::InvalidRequest,
            format!(
                "Unexpected broker id, expected {}, but received {name}",
                broker.node_id()
            ),
        ));
    }
    Ok(())
}

/// Kafka rejects a broker value that does not parse as its key's type before anything else,
/// with this text.
fn check_value_type(key: &str, kind: ConfigType, value: &str) -> Result<(), Failure> {
    let t = value.trim();
    let ok = match kind {
        ConfigType::Int => t.parse::<i32>().is_ok(),
        ConfigType::Short => t.parse::<i16>().is_ok(),
        ConfigType::Long => t.parse::<i64>().is_ok(),
        ConfigType::Double => t.parse::<f64>().is_ok_and(|v| !v.is_nan()),
        ConfigType::Boolean => t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false"),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let reason = if kind == ConfigType::Boolean {
        "Expected value to be either true or false".to_string()
    } else {
        format!("Not a number of type {}", kind.kafka_name())
    };
    Err((
        ResponseError::InvalidRequest,
        format!("Invalid value {value} for configuration {key}: {reason}"),
    ))
}

/// The value in force for a topic config without an override (broker default or Kafka's).
fn current_value(broker: &Broker, overrides: &BTreeMap<String, String>, name: &str) -> String {
    skiff_config::describe_topic_configs(overrides, &broker.config)
        .into_iter()
        .find(|c| c.name == name)
        .and_then(|c| c.value)
        .unwrap_or_default()
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn split(outcome: Result<(), Failure>) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (0, None),
        Err((error, message)) => (error.code(), Some(str_bytes(&message))),
    }
}
