//! DescribeConfigs for topics, this broker (or the cluster-default dynamic configs, empty
//! name) and groups: values in force, their sources, synonyms (v1+), types and documentation
//! (v3+).
//!
//! With an authorizer: each resource needs DESCRIBE_CONFIGS on its topic, group, or (broker
//! resources) the cluster, else TOPIC/GROUP/CLUSTER_AUTHORIZATION_FAILED with Kafka's
//! default message (Kafka 4's KafkaApis).

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse, ResponseKind};
use skiff_config::DescribedConfig;

use super::str_bytes;
use crate::authz::{config_resource, unauthorized_message, AclOperation};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use crate::topics::validate_topic_name;

/// Kafka's config resource types.
pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
pub const GROUP: i8 = 32;

pub async fn handle(ctx: &RequestContext, request: DescribeConfigsRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let authz = ctx.authz();
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let (rt, name) = config_resource(resource.resource_type, &resource.resource_name);
            if !authz.allows(AclOperation::DescribeConfigs, rt, name) {
                return result
                    .with_error_code(ctx.code(&BrokerError::Unauthorized(rt)))
                    .with_error_message(Some(str_bytes(unauthorized_message(rt))));
            }
            let described = match describe(
                broker,
                resource.resource_type,
                resource.resource_name.as_str(),
            ) {
                Ok(described) => described,
                Err(error) => {
                    let message = match &error {
                        // Kafka 4.4 answers an unknown topic with the code and an empty message.
                        BrokerError::UnknownTopic(_) => String::new(),
                        other => other.to_string(),
                    };
                    return result
                        .with_error_code(ctx.code(&error))
                        .with_error_message(Some(str_bytes(&message)));
                }
            };
            let wanted = resource.configuration_keys.as_ref();
            let configs = described
                .into_iter()
                .filter(|c| wanted.is_none_or(|keys| keys.iter().any(|k| k.as_str() == c.name)))
                .map(|c| {
                    to_wire(
                        c,
                        version,
                        request.include_synonyms,
                        request.include_documentation,
                    )
                })
                .collect();
            result.with_configs(configs)
        })
        .collect();
    Reply::Respond(ResponseKind::DescribeConfigs(
        DescribeConfigsResponse::default().with_results(results),
    ))
}

/// The described configs of one resource, or the error Kafka gives for it.
pub fn describe(
    broker: &Broker,
    resource_type: i8,
    name: &str,
) -> Result<Vec<DescribedConfig>, BrokerError> {
    match resource_type {
        TOPIC => {
            // Kafka checks a described topic's name before looking it up, with the same
            // "Topic name is invalid: ..." texts as CreateTopics.
            validate_topic_name(name)?;
            match broker.topics.get(name) {
                Some(topic) => Ok(skiff_config::describe_topic_configs(
                    &topic.overrides(),
                    &broker.live_config(),
                )),
                None => Err(BrokerError::UnknownTopic(name.to_string())),
            }
        }
        BROKER => {
            check_broker_name(broker, name)?;
            let live = broker.live_config();
            if name.is_empty() {
                Ok(skiff_config::describe_default_broker_configs(&live))
            } else {
                Ok(skiff_config::describe_broker_configs(&live))
            }
        }
        // As in Kafka, any group id can be described, with or without configs or members.
        GROUP if name.is_empty() => Err(BrokerError::InvalidRequest(
            "Default group resources are not allowed.".to_string(),
        )),
        GROUP => Ok(skiff_config::describe_group_configs(
            &broker.dynamic.group(name),
            &broker.live_config(),
        )),
        other => Err(BrokerError::InvalidRequest(format!(
            "Skiff does not describe config resources of type {other}"
        ))),
    }
}

/// A broker resource names this node's id; an empty name means the cluster-wide default.
pub fn check_broker_name(broker: &Broker, name: &str) -> Result<(), BrokerError> {
    if name.is_empty() || name == broker.node_id().to_string() {
        Ok(())
    } else {
        Err(BrokerError::InvalidRequest(format!(
            "Unexpected broker id, expected {} or empty string, but received {name}",
            broker.node_id()
        )))
    }
}

fn to_wire(
    c: DescribedConfig,
    version: i16,
    synonyms: bool,
    documentation: bool,
) -> DescribeConfigsResourceResult {
    let mut result = DescribeConfigsResourceResult::default()
        .with_name(str_bytes(&c.name))
        .with_value(c.value.as_deref().map(str_bytes))
        .with_read_only(c.read_only)
        .with_config_source(c.source.id())
        .with_is_sensitive(c.is_sensitive);
    if synonyms {
        result.synonyms = c
            .synonyms
            .iter()
            .map(|(name, value, source)| {
                DescribeConfigsSynonym::default()
                    .with_name(str_bytes(name))
                    .with_value(value.as_deref().map(str_bytes))
                    .with_source(source.id())
            })
            .collect();
    }
    if version >= 3 {
        result.config_type = c.kind.id();
        if documentation {
            result.documentation = Some(str_bytes(c.doc));
        }
    }
    result
}
