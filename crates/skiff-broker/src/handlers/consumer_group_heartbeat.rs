//! ConsumerGroupHeartbeat (KIP-848, `group.protocol=consumer`): join, stay, leave and
//! receive the server-computed assignment. Topics travel by id on the wire and by name in
//! the coordinator. Server assignors: "uniform" (the default) and "range"; regex
//! subscriptions (v1) are not supported yet: INVALID_REGULAR_EXPRESSION with a message.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::broker::Broker;
use crate::coordinator::consumer::{self, Heartbeat};

pub fn handle(
    broker: &Arc<Broker>,
    version: i16,
    request: ConsumerGroupHeartbeatRequest,
    client_id: &str,
    client_host: &str,
) -> ConsumerGroupHeartbeatResponse {
    let fail = |e: ResponseError, message: &str| {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(message)))
    };
    if request
        .subscribed_topic_regex
        .as_ref()
        .is_some_and(|r| !r.is_empty())
    {
        return fail(
            ResponseError::InvalidRegularExpression,
            "Skiff does not support regular expression subscriptions with the consumer group protocol yet",
        );
    }
    let assignor = match request.server_assignor.as_deref() {
        None | Some("") => None,
        Some(name) => match consumer::Assignor::parse(name) {
            Some(a) => Some(a),
            None => {
                return fail(
                    ResponseError::UnsupportedAssignor,
                    &format!(
                    "Skiff implements the \"uniform\" and \"range\" server assignors, not {name:?}"
                ),
                )
            }
        },
    };
    if version >= 1 && request.member_id.is_empty() {
        return fail(
            ResponseError::InvalidRequest,
            "MemberId can't be empty (v1+ clients generate their member id)",
        );
    }
    let owned = request.topic_partitions.as_ref().map(|tps| {
        let mut a = consumer::Assignment::new();
        for tp in tps {
            if let Some(topic) = broker.topics.get_by_id(tp.topic_id) {
                a.entry(topic.name.clone())
                    .or_default()
                    .extend(tp.partitions.iter().copied());
            }
        }
        a
    });
    let hb = Heartbeat {
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: request.rack_id.as_ref().map(|s| s.to_string()),
        client_id: client_id.to_string(),
        client_host: client_host.to_string(),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed: request
            .subscribed_topic_names
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
        owned,
        assignor,
    };
    let topics = &broker.topics;
    let result = broker
        .coordinator
        .consumer_heartbeat(&request.group_id.0, hb, |name| {
            topics.get(name).map(|t| t.partition_count())
        });
    match result {
        Err(e) => fail(e, &e.to_string()),
        Ok(r) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&r.member_id)))
            .with_member_epoch(r.member_epoch)
            .with_heartbeat_interval_ms(
                broker.coordinator.settings().consumer_heartbeat_interval_ms,
            )
            .with_assignment(r.assignment.map(|a| {
                Assignment::default().with_topic_partitions(
                    a.into_iter()
                        .filter_map(|(name, ps)| {
                            let topic = topics.get(&name)?;
                            Some(
                                TopicPartitions::default()
                                    .with_topic_id(topic.id)
                                    .with_partitions(ps.into_iter().collect()),
                            )
                        })
                        .collect(),
                )
            })),
    }
}

/// Partitions as a sorted list (for describe output).
pub fn sorted(ps: &BTreeSet<i32>) -> Vec<i32> {
    ps.iter().copied().collect()
}
