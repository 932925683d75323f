//! Metadata: this one broker (the advertised listener named like the one the client connected
//! to), and the requested topics — all when the
//! list is null — auto-creating missing ones when the request and `auto.create.topics.enable`
//! allow it. Authorized operations (v8+) come from [`crate::acl_operations`] when asked for.
//!
//! With an authorizer (as Kafka 4's KafkaApis): an all-topics request lists only the topics
//! the requester may DESCRIBE; a named (or by-id) topic it may not describe answers
//! TOPIC_AUTHORIZATION_FAILED; auto-creation needs CLUSTER CREATE or TOPIC CREATE on the
//! name, else TOPIC_AUTHORIZATION_FAILED. Refused topics carry no authorized operations.

use std::collections::BTreeMap;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, ResponseKind};
use uuid::Uuid;

use super::{str_bytes, topic_name, LEADER_EPOCH};
use crate::acl_operations::{operations, ResourceType};
use crate::authz::{unauthorized_code, AclOperation, ResourceType as Rt};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;
use crate::topics::{Topic, TopicError};

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

/// Advertises the listener the request came in on (empty name: the first).
pub async fn handle(ctx: &RequestContext, request: MetadataRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let auto_create = broker.config.auto_create_topics_enable
        && (version < 4 || request.allow_auto_topic_creation);
    let authz = ctx.authz();
    let denied = unauthorized_code(Rt::Topic);
    let describable = |name: &str| authz.allows(AclOperation::Describe, Rt::Topic, name);
    let creatable = |name: &str| {
        authz.allows_cluster(AclOperation::Create)
            || authz.allows(AclOperation::Create, Rt::Topic, name)
    };
    let mut topics = Vec::new();
    match request.topics {
        None => {
            for topic in broker.topics.list() {
                if describable(&topic.name) {
                    topics.push(describe_topic(broker, &topic));
                }
            }
        }
        Some(requested) => {
            for wanted in requested {
                let name = wanted.name.as_ref().map(|n| n.0.to_string());
                let found = match &name {
                    Some(name) => broker.topics.get(name),
                    None => broker.topics.get_by_id(wanted.topic_id),
                };
                let entry = match (found, name) {
                    (Some(topic), None) if !describable(&topic.name) => {
                        error_topic(None, topic.id, denied)
                    }
                    (_, Some(name)) if !describable(&name) => {
                        error_topic(Some(&name), Uuid::nil(), denied)
                    }
                    (Some(topic), _) => describe_topic(broker, &topic),
                    (None, None) => error_topic(
                        None,
                        wanted.topic_id,
                        ctx.code(&BrokerError::UnknownTopicId(wanted.topic_id)),
                    ),
                    (None, Some(name)) if auto_create && !creatable(&name) => {
                        error_topic(Some(&name), Uuid::nil(), denied)
                    }
                    (None, Some(name)) if auto_create => auto_create_topic(ctx, name).await,
                    (None, Some(name)) => {
                        let code = ctx.code(&BrokerError::UnknownTopic(name.clone()));
                        error_topic(Some(&name), Uuid::nil(), code)
                    }
                };
                topics.push(entry);
            }
        }
    }
    // As Kafka: topics named in the answer (found, created or unknown by name) get their
    // operations; unknown topic ids do not.
    if version >= 8 && request.include_topic_authorized_operations {
        for t in topics.iter_mut().filter(|t| t.error_code != denied) {
            if let Some(name) = &t.name {
                t.topic_authorized_operations = operations(&authz, ResourceType::Topic, &name.0);
            }
        }
    }
    // The cluster's operations exist in v8-10 only (v11+ clients ask DescribeCluster).
    let cluster_operations =
        if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
            operations(&authz, ResourceType::Cluster, "kafka-cluster")
        } else {
            OPERATIONS_NOT_REQUESTED
        };
    let node_id = broker.node_id();
    let (host, port) = advertised(broker, &ctx.listener);
    let response = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(node_id))
            .with_host(str_bytes(&host))
            .with_port(port)])
        .with_cluster_id(Some(str_bytes(&broker.cluster_id)))
        .with_controller_id(BrokerId(node_id))
        .with_cluster_authorized_operations(cluster_operations)
        .with_topics(topics);
    Reply::Respond(ResponseKind::Metadata(response))
}

/// Host and port clients should connect to. Kafka's rule: the advertised listener with the
/// name of the listener the client connected to (`listener`), so clients on the docker
/// network and on the host each get an address they can reach. Without a match (or with an
/// empty name): the first advertised listener.
pub fn advertised(broker: &Broker, listener: &str) -> (String, i32) {
    let advertised = &broker.config.advertised_listeners;
    advertised
        .iter()
        .find(|l| !listener.is_empty() && l.name == listener)
        .or_else(|| advertised.first())
        .or_else(|| broker.config.listeners.first())
        .map(|l| (l.host.clone(), i32::from(l.port)))
        .unwrap_or_else(|| ("127.0.0.1".to_string(), 9092))
}

async fn auto_create_topic(ctx: &RequestContext, name: String) -> MetadataResponseTopic {
    let broker = &ctx.broker;
    let partitions = broker.config.num_partitions;
    let b = broker.clone();
    let create_name = name.clone();
    let created = blocking(move || {
        b.topics
            .create(&create_name, partitions, BTreeMap::new(), false)
    })
    .await;
    let error = match created {
        Ok(Ok(topic)) => return describe_topic(broker, &topic),
        // Another request created it first.
        Ok(Err(TopicError::AlreadyExists(_))) => match broker.topics.get(&name) {
            Some(topic) => return describe_topic(broker, &topic),
            None => BrokerError::UnknownTopic(name.clone()),
        },
        Ok(Err(e)) => {
            tracing::debug!(topic = %name, error = %e, "auto-create refused");
            BrokerError::Topic(e)
        }
        Err(e) => e,
    };
    error_topic(Some(&name), Uuid::nil(), ctx.code(&error))
}

fn describe_topic(broker: &Broker, topic: &Topic) -> MetadataResponseTopic {
    let node = BrokerId(broker.node_id());
    let partitions = (0..topic.partition_count())
        .map(|index| {
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(node)
                .with_leader_epoch(LEADER_EPOCH)
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(&topic.name)))
        .with_topic_id(topic.id)
        .with_is_internal(topic.is_internal())
        .with_partitions(partitions)
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
}

fn error_topic(name: Option<&str>, id: Uuid, code: i16) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_error_code(code)
        .with_name(name.map(topic_name))
        .with_topic_id(id)
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
}
