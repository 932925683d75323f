//! CreateTopics: Kafka's checks (names, partitions, replication factor — one node, so 1 —,
//! assignments, configs), `validate_only`, and the described configs of v5+.
//!
//! With an authorizer (as Kafka 4's controller): after the duplicate check, a topic needs
//! CLUSTER CREATE or TOPIC CREATE, else TOPIC_AUTHORIZATION_FAILED ("Authorization
//! failed."); the configs of a created topic are returned only with TOPIC DESCRIBE_CONFIGS,
//! else its `topic_config_error_code` is TOPIC_AUTHORIZATION_FAILED. A topic that names an
//! archive topic (`skiff.compaction.archive.topic`, docs/compaction.md §5.11) also needs WRITE
//! on that topic: the broker will write there for it.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse, ResponseKind};

use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};
use crate::topics::{validate_topic_name, TopicError};

pub async fn handle(ctx: &RequestContext, request: CreateTopicsRequest) -> Reply {
    let b = ctx.broker.clone();
    let version = ctx.version();
    let validate_only = request.validate_only;
    let names: Vec<_> = request.topics.iter().map(|t| t.name.clone()).collect();
    let authz = ctx.authz();
    let cluster_create = authz.allows_cluster(AclOperation::Create);
    let mut refused: HashSet<String> = names
        .iter()
        .map(|n| n.0.to_string())
        .filter(|n| !cluster_create && !authz.allows(AclOperation::Create, ResourceType::Topic, n))
        .collect();
    // An archive topic (docs/compaction.md §5.11) is written by the broker for this topic:
    // whoever names it needs WRITE on it.
    for t in &request.topics {
        let archive = t
            .configs
            .iter()
            .find(|c| c.name.as_str() == "skiff.compaction.archive.topic")
            .and_then(|c| c.value.as_ref())
            .filter(|v| !v.is_empty());
        if archive.is_some_and(|a| !authz.allows(AclOperation::Write, ResourceType::Topic, a)) {
            refused.insert(t.name.0.to_string());
        }
    }
    let hidden_configs: HashSet<String> = names
        .iter()
        .map(|n| n.0.to_string())
        .filter(|n| !authz.allows(AclOperation::DescribeConfigs, ResourceType::Topic, n))
        .collect();
    let mut quota = crate::quotas::MutationQuota::for_request(ctx);
    let answered = blocking(move || {
        // As Kafka: a name given more than once is not created; it gets one error entry,
        // after the results of the other topics.
        let mut seen = HashSet::new();
        let mut duplicates = Vec::new();
        for t in &request.topics {
            if !seen.insert(t.name.0.as_str()) && !duplicates.contains(&t.name) {
                duplicates.push(t.name.clone());
            }
        }
        let mut topics: Vec<CreatableTopicResult> = request
            .topics
            .iter()
            .filter(|t| !duplicates.contains(&t.name))
            .map(|t| {
                if refused.contains(&*t.name.0) {
                    return CreatableTopicResult::default()
                        .with_name(t.name.clone())
                        .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                        .with_error_message(Some(str_bytes("Authorization failed.")))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1);
                }
                let mut result = create_one(&b, version, t.clone(), validate_only, &mut quota);
                if version >= 5 && result.error_code == 0 && hidden_configs.contains(&*t.name.0) {
                    result.configs = None;
                    result.topic_config_error_code = ResponseError::TopicAuthorizationFailed.code();
                }
                result
            })
            .collect();
        topics.extend(duplicates.into_iter().map(|name| {
            let duplicate = BrokerError::InvalidRequest("Duplicate topic name.".to_string());
            failed(name, version, &duplicate)
        }));
        CreateTopicsResponse::default()
            .with_topics(topics)
            .with_throttle_time_ms(quota.throttle_ms())
    })
    .await;
    // A failed task fails every topic.
    let response = answered.unwrap_or_else(|e| {
        let topics = names
            .into_iter()
            .map(|name| failed(name, version, &e))
            .collect();
        CreateTopicsResponse::default().with_topics(topics)
    });
    Reply::Respond(ResponseKind::CreateTopics(response))
}

fn create_one(
    broker: &Broker,
    version: i16,
    t: CreatableTopic,
    validate_only: bool,
    quota: &mut crate::quotas::MutationQuota,
) -> CreatableTopicResult {
    let node = broker.node_id();
    // Kafka's order: the name, whether the topic exists, then the numbers.
    let early = validate_topic_name(t.name.0.as_str()).and_then(|()| {
        match broker.topics.get(t.name.0.as_str()) {
            Some(_) => Err(TopicError::AlreadyExists(t.name.0.to_string())),
            None => Ok(()),
        }
    });
    if let Err(e) = early {
        return failure(&t, version, BrokerError::Topic(e));
    }
    // Kafka checks the replication factor's value before the partition count, and whether
    // enough brokers exist after it.
    if t.assignments.is_empty() && (t.replication_factor == 0 || t.replication_factor < -1) {
        return failure(
            &t,
            version,
            BrokerError::InvalidReplicationFactor(
                "Replication factor must be larger than 0, or -1 to use the default value.".into(),
            ),
        );
    }
    let partitions = if !t.assignments.is_empty() {
        if t.num_partitions != -1 || t.replication_factor != -1 {
            return failure(
                &t,
                version,
                BrokerError::InvalidRequest("Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into()),
            );
        }
        let mut indexes: Vec<i32> = t.assignments.iter().map(|a| a.partition_index).collect();
        indexes.sort_unstable();
        let consecutive = indexes
            .iter()
            .enumerate()
            .all(|(i, &p)| i32::try_from(i).ok() == Some(p));
        let on_this_node = t
            .assignments
            .iter()
            .all(|a| a.broker_ids.len() == 1 && a.broker_ids[0].0 == node);
        if !consecutive || !on_this_node {
            return failure(
                &t,
                version,
                BrokerError::InvalidReplicaAssignment(format!("Replica assignments must name partitions 0..n, each on the single broker {node}.")),
            );
        }
        i32::try_from(indexes.len()).unwrap_or(i32::MAX)
    } else {
        match t.num_partitions {
            -1 => broker.config.num_partitions,
            n if n > 0 => n,
            _ => {
                return failure(
                    &t,
                    version,
                    BrokerError::InvalidPartitions(
                        "Number of partitions was set to an invalid non-positive value.".into(),
                    ),
                )
            }
        }
    };
    if t.replication_factor > 1 {
        let rf = t.replication_factor;
        return failure(
            &t,
            version,
            BrokerError::InvalidReplicationFactor(format!("Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered or some brokers have all their log directories cordoned.")),
        );
    }
    let mut overrides = BTreeMap::new();
    for c in &t.configs {
        match &c.value {
            Some(value) => {
                overrides.insert(c.name.to_string(), value.to_string());
            }
            None => {
                return failure(
                    &t,
                    version,
                    BrokerError::InvalidConfig(format!(
                        "Null value not supported for topic configs: {}",
                        c.name.as_str()
                    )),
                )
            }
        }
    }
    // Kafka checks the controller mutation quota last, with validate_only too (KIP-599).
    if quota
        .record(usize::try_from(partitions).unwrap_or(0))
        .is_err()
    {
        return failure(&t, version, BrokerError::ThrottlingQuotaExceeded);
    }
    let name = t.name.0.to_string();
    match broker
        .topics
        .create(&name, partitions, overrides.clone(), validate_only)
    {
        Ok(topic) => {
            let mut result = CreatableTopicResult::default()
                .with_name(t.name.clone())
                .with_error_message(None)
                .with_num_partitions(partitions)
                .with_replication_factor(1);
            if version >= 7 && !validate_only {
                result.topic_id = topic.id;
            }
            if version >= 5 {
                let configs = skiff_config::describe_topic_configs(&overrides, &broker.config)
                    .into_iter()
                    .map(|c| {
                        CreatableTopicConfigs::default()
                            .with_name(str_bytes(&c.name))
                            .with_value(c.value.as_deref().map(str_bytes))
                            .with_read_only(c.read_only)
                            .with_config_source(c.source.id())
                            .with_is_sensitive(c.is_sensitive)
                    })
                    .collect();
                result.configs = Some(configs);
            }
            result
        }
        Err(e) => failure(&t, version, BrokerError::Topic(e)),
    }
}

fn failure(t: &CreatableTopic, version: i16, error: BrokerError) -> CreatableTopicResult {
    failed(t.name.clone(), version, &error)
}

/// A topic's result for `error`, with its text as the message.
fn failed(
    name: kafka_protocol::messages::TopicName,
    version: i16,
    error: &BrokerError,
) -> CreatableTopicResult {
    CreatableTopicResult::default()
        .with_name(name)
        .with_error_code(kafka_error(ApiKey::CreateTopics, version, error).code())
        .with_error_message(Some(str_bytes(&error.to_string())))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
}
