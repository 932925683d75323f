//! AlterConfigs (replace a resource's whole config set) and IncrementalAlterConfigs (SET,
//! DELETE, APPEND, SUBTRACT per key) for topics, this broker's dynamic configs (resource
//! name = node id) and the cluster-default dynamic configs (empty name), and groups (KIP-848).
//!
//! With an authorizer: each resource needs ALTER_CONFIGS on its topic, group, or (broker
//! resources) the cluster, else TOPIC/GROUP/CLUSTER_AUTHORIZATION_FAILED with a null message
//! (Kafka 4's KafkaApis). Setting a topic's `skiff.compaction.archive.topic` makes the broker
//! write that topic's removed records to the named one, so it also needs WRITE on the named
//! topic (docs/compaction.md §5.11), else TOPIC_AUTHORIZATION_FAILED.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use skiff_config::ConfigType;

use super::describe_configs::{BROKER, GROUP, TOPIC};
use super::str_bytes;
use crate::authz::{config_resource, AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

/// Why a resource's change is refused; its text is the response's message.
type Failure = BrokerError;

/// IncrementalAlterConfigs operations.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// One resource's requested change: legacy AlterConfigs replaces the whole set;
/// IncrementalAlterConfigs applies operations to the current set.
enum Change {
    Replace(Vec<(String, Option<String>)>),
    Ops(Vec<(String, i8, Option<String>)>),
}

pub async fn handle(ctx: &RequestContext, request: AlterConfigsRequest) -> Reply {
    let changes = request
        .resources
        .into_iter()
        .map(|r| {
            let change = Change::Replace(
                r.configs
                    .iter()
                    .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                    .collect(),
            );
            (r.resource_type, r.resource_name, change)
        })
        .collect();
    let responses = alter_all(ctx, changes, request.validate_only)
        .await
        .into_iter()
        .map(|o| {
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(o.resource_type)
                .with_resource_name(o.resource_name)
                .with_error_code(o.code)
                .with_error_message(o.message)
        })
        .collect();
    Reply::Respond(ResponseKind::AlterConfigs(
        AlterConfigsResponse::default().with_responses(responses),
    ))
}

pub async fn handle_incremental(
    ctx: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> Reply {
    let changes = request
        .resources
        .into_iter()
        .map(|r| {
            let change = Change::Ops(
                r.configs
                    .iter()
                    .map(|c| {
                        (
                            c.name.to_string(),
                            c.config_operation,
                            c.value.as_ref().map(|v| v.to_string()),
                        )
                    })
                    .collect(),
            );
            (r.resource_type, r.resource_name, change)
        })
        .collect();
    let responses = alter_all(ctx, changes, request.validate_only)
        .await
        .into_iter()
        .map(|o| {
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(o.resource_type)
                .with_resource_name(o.resource_name)
                .with_error_code(o.code)
                .with_error_message(o.message)
        })
        .collect();
    Reply::Respond(ResponseKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse::default().with_responses(responses),
    ))
}

/// One resource's answer, common to both APIs' response types.
struct Outcome {
    resource_type: i8,
    resource_name: StrBytes,
    code: i16,
    message: Option<StrBytes>,
}

/// Applies each resource's change in request order on the blocking pool (the dynamic config
/// files are written and fsynced); a failed task answers every resource with its error.
async fn alter_all(
    ctx: &RequestContext,
    changes: Vec<(i8, StrBytes, Change)>,
    validate_only: bool,
) -> Vec<Outcome> {
    let (b, api, version) = (ctx.broker.clone(), ctx.api_key, ctx.version());
    let wanted: Vec<(i8, StrBytes)> = changes
        .iter()
        .map(|(resource_type, name, _)| (*resource_type, name.clone()))
        .collect();
    let authz = ctx.authz();
    let answered = blocking(move || {
        changes
            .into_iter()
            .map(|(resource_type, resource_name, change)| {
                let (rt, checked) = config_resource(resource_type, &resource_name);
                let archive_denied = resource_type == TOPIC
                    && archive_target(&change).is_some_and(|t| {
                        !t.is_empty() && !authz.allows(AclOperation::Write, ResourceType::Topic, t)
                    });
                if archive_denied || !authz.allows(AclOperation::AlterConfigs, rt, checked) {
                    let denied = BrokerError::Unauthorized(rt);
                    return Outcome {
                        resource_type,
                        resource_name,
                        code: kafka_error(api, version, &denied).code(),
                        message: None,
                    };
                }
                let outcome = alter(&b, resource_type, &resource_name, &change, validate_only);
                let (code, message) = split(api, version, outcome);
                Outcome {
                    resource_type,
                    resource_name,
                    code,
                    message,
                }
            })
            .collect()
    })
    .await;
    answered.unwrap_or_else(|e| {
        let (code, message) = split(api, version, Err(e));
        wanted
            .into_iter()
            .map(|(resource_type, resource_name)| Outcome {
                resource_type,
                resource_name,
                code,
                message: message.clone(),
            })
            .collect()
    })
}

/// The archive topic a change sets (`skiff.compaction.archive.topic`), if it sets one.
fn archive_target(change: &Change) -> Option<&str> {
    const KEY: &str = "skiff.compaction.archive.topic";
    const SET: i8 = 0;
    match change {
        Change::Replace(values) => values
            .iter()
            .find(|(k, _)| k == KEY)
            .and_then(|(_, v)| v.as_deref()),
        Change::Ops(ops) => ops
            .iter()
            .find(|(k, op, _)| k == KEY && *op == SET)
            .and_then(|(_, _, v)| v.as_deref()),
    }
}

/// Kafka's request-level checks of an incremental change: no key twice, and a value for every
/// operation but DELETE.
fn check_ops(ops: &[(String, i8, Option<String>)]) -> Result<(), Failure> {
    let mut seen = HashSet::new();
    for (name, _, _) in ops {
        if !seen.insert(name.as_str()) {
            return Err(BrokerError::InvalidRequest(format!(
                "Error due to duplicate config keys : {name}"
            )));
        }
    }
    Ok(())
}

/// Legacy AlterConfigs: the new set is exactly the request's keys, none of them null.
fn replacement(values: &[(String, Option<String>)]) -> Result<BTreeMap<String, String>, Failure> {
    let mut out = BTreeMap::new();
    for (name, value) in values {
        let value = value.as_ref().ok_or_else(|| {
            BrokerError::InvalidRequest(format!("Null value not supported for : {name}"))
        })?;
        out.insert(name.clone(), value.clone());
    }
    Ok(out)
}

/// Compute a resource's new config set from its current one and apply it (validated first;
/// nothing changes with `validate_only`).
fn alter(
    broker: &Broker,
    resource_type: i8,
    name: &StrBytes,
    change: &Change,
    validate_only: bool,
) -> Result<(), Failure> {
    match resource_type {
        TOPIC => {
            let topic = broker
                .topics
                .get(name.as_str())
                .ok_or_else(|| BrokerError::UnknownTopic(name.to_string()))?;
            let overrides = match change {
                Change::Replace(values) => replacement(values)?,
                Change::Ops(ops) => {
                    check_ops(ops)?;
                    let mut overrides = topic.overrides();
                    for (key, op, value) in ops {
                        apply_op(broker, &mut overrides, key, *op, value.as_deref())?;
                    }
                    overrides
                }
            };
            broker
                .set_topic_overrides(&topic.name, overrides, validate_only)
                .map_err(BrokerError::Topic)
        }
        BROKER => {
            check_alter_broker_name(broker, name.as_str())?;
            let values: Vec<(&str, Option<&str>)> = match change {
                Change::Replace(values) => values
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect(),
                Change::Ops(ops) => ops
                    .iter()
                    .filter(|(_, op, _)| *op != DELETE)
                    .map(|(k, _, v)| (k.as_str(), v.as_deref()))
                    .collect(),
            };
            for (key, value) in values {
                if let (Some(kind), Some(value)) = (skiff_config::broker_config_type(key), value) {
                    check_value_type(key, kind, value)?;
                }
            }
            broker.alter_broker_configs(
                !name.is_empty(),
                validate_only,
                |current| match change {
                    Change::Replace(values) => replacement(values),
                    Change::Ops(ops) => {
                        check_ops(ops)?;
                        let mut next = current.clone();
                        for (key, op, value) in ops {
                            apply_broker_op(broker, &mut next, key, *op, value.as_deref())?;
                        }
                        Ok(next)
                    }
                },
                |refusal| match refusal {
                    skiff_config::DynamicRefusal::Request(m) => BrokerError::InvalidRequest(m),
                    skiff_config::DynamicRefusal::Config(m) => BrokerError::InvalidConfig(m),
                },
                BrokerError::InvalidConfig,
            )
        }
        GROUP => {
            if name.is_empty() {
                return Err(BrokerError::InvalidRequest(
                    "Default group resources are not allowed.".to_string(),
                ));
            }
            let configs = match change {
                Change::Replace(values) => replacement(values)?,
                Change::Ops(ops) => {
                    check_ops(ops)?;
                    let mut configs = broker.dynamic.group(name.as_str());
                    for (key, op, value) in ops {
                        apply_group_op(&mut configs, key, *op, value.as_deref())?;
                    }
                    configs
                }
            };
            skiff_config::validate_group_configs(&configs, &broker.live_config())
                .map_err(BrokerError::InvalidConfig)?;
            if validate_only {
                return Ok(());
            }
            broker
                .set_group_configs(name.as_str(), configs)
                .map_err(|e| BrokerError::StorageFailure(e.to_string()))
        }
        other => Err(BrokerError::InvalidRequest(format!(
            "Skiff does not alter config resources of type {other}"
        ))),
    }
}

/// One IncrementalAlterConfigs operation on a broker's dynamic set, with Kafka's texts
/// (`ConfigAdminManager.prepareIncrementalConfigs`). Names and values are checked afterwards
/// on the whole set.
fn apply_broker_op(
    broker: &Broker,
    configs: &mut BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&str>,
) -> Result<(), Failure> {
    let null = || BrokerError::InvalidRequest(format!("Null value not supported for : {name}"));
    match op {
        SET => {
            configs.insert(name.to_string(), value.ok_or_else(null)?.to_string());
        }
        DELETE => {
            configs.remove(name);
        }
        APPEND | SUBTRACT => {
            let value = value.ok_or_else(null)?;
            let kind = skiff_config::broker_config_type(name).ok_or_else(|| {
                BrokerError::InvalidConfig(format!("Unknown config name: {name}"))
            })?;
            if kind != ConfigType::List {
                let verb = if op == APPEND { "append" } else { "subtract" };
                return Err(BrokerError::InvalidConfig(format!(
                    "Config value {verb} is not allowed for config key: {name}"
                )));
            }
            let current = configs.get(name).cloned().unwrap_or_else(|| {
                skiff_config::describe_broker_configs(&broker.live_config())
                    .into_iter()
                    .find(|c| c.name == name)
                    .and_then(|c| c.value)
                    .unwrap_or_default()
            });
            configs.insert(name.to_string(), combine(&current, value, op == APPEND));
        }
        other => {
            return Err(BrokerError::InvalidRequest(format!(
                "Unknown operations type {other}"
            )))
        }
    }
    Ok(())
}

/// One IncrementalAlterConfigs operation on a group's configs.
fn apply_group_op(
    configs: &mut BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&str>,
) -> Result<(), Failure> {
    let null = || BrokerError::InvalidRequest(format!("Null value not supported for : {name}"));
    match op {
        SET => {
            configs.insert(name.to_string(), value.ok_or_else(null)?.to_string());
        }
        DELETE => {
            configs.remove(name);
        }
        APPEND | SUBTRACT => {
            let value = value.ok_or_else(null)?;
            if skiff_config::group_config_def(name).map(|d| d.kind) != Some(ConfigType::List) {
                let verb = if op == APPEND { "APPEND" } else { "SUBTRACT" };
                return Err(BrokerError::InvalidConfig(format!(
                    "Can't {verb} to key {name} because its type is not LIST."
                )));
            }
            let current = configs.get(name).cloned().unwrap_or_default();
            configs.insert(name.to_string(), combine(&current, value, op == APPEND));
        }
        other => {
            return Err(BrokerError::InvalidRequest(format!(
                "Unknown config operation {other} for {name}"
            )))
        }
    }
    Ok(())
}

/// APPEND (items not yet present, in order) or SUBTRACT on a comma-separated list.
fn combine(current: &str, value: &str, append: bool) -> String {
    let mut items = split_list(current);
    for item in split_list(value) {
        if append {
            if !items.contains(&item) {
                items.push(item);
            }
        } else {
            items.retain(|i| *i != item);
        }
    }
    items.join(",")
}

fn apply_op(
    broker: &Broker,
    overrides: &mut BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&str>,
) -> Result<(), Failure> {
    let def = skiff_config::topic_config_def(name);
    let value = value.map(str::to_string);
    match op {
        SET => {
            if def.is_none() {
                return Err(BrokerError::InvalidConfig(format!(
                    "Unknown topic config name: {name}"
                )));
            }
            let value = value.ok_or_else(|| {
                BrokerError::InvalidRequest(format!("Null value not supported for : {name}"))
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
                return Err(BrokerError::InvalidConfig(format!(
                    "Can't {verb} to key {name} because its type is not LIST."
                )));
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
            return Err(BrokerError::InvalidRequest(format!(
                "Unknown config operation {other} for {name}"
            )));
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
        BrokerError::InvalidRequest(format!("Node id must be an integer, but it is: {name}"))
    })?;
    if id != broker.node_id() {
        return Err(BrokerError::InvalidRequest(format!(
            "Unexpected broker id, expected {}, but received {name}",
            broker.node_id()
        )));
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
    Err(BrokerError::InvalidRequest(format!(
        "Invalid value {value} for configuration {key}: {reason}"
    )))
}

/// The value in force for a topic config without an override (broker default or Kafka's).
fn current_value(broker: &Broker, overrides: &BTreeMap<String, String>, name: &str) -> String {
    skiff_config::describe_topic_configs(overrides, &broker.live_config())
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

/// The code and message of one resource's outcome.
fn split(
    api: skiff_protocol::Api,
    version: i16,
    outcome: Result<(), Failure>,
) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (0, None),
        Err(error) => {
            let message = match &error {
                BrokerError::UnknownTopic(name) => format!("The topic '{name}' does not exist."),
                other => other.to_string(),
            };
            (
                kafka_error(api, version, &error).code(),
                Some(str_bytes(&message)),
            )
        }
    }
}
