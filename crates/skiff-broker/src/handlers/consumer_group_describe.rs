//! ConsumerGroupDescribe (KIP-848): epochs, members, their current and target assignments.
//! Classic members of a migrated group are listed too, with member type 0 (v1).
//! Classic groups and unknown ids get GROUP_ID_NOT_FOUND, as Kafka answers. Authorized
//! operations (from [`crate::acl_operations`]) go to every group answered without an error.
//!
//! With an authorizer (Kafka 4's KafkaApis): a group needs GROUP DESCRIBE, else
//! GROUP_AUTHORIZATION_FAILED; a described group whose members' current or target
//! assignments name a topic the requester may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
//! instead of its description.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ResponseKind,
};

use super::consumer_group_heartbeat::sorted;
use super::{str_bytes, topic_name};
use crate::acl_operations::{operations, ResourceType};
use crate::authz::{AclOperation, ResourceType as Rt};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::consumer;

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub async fn handle(ctx: &RequestContext, request: ConsumerGroupDescribeRequest) -> Reply {
    let (broker, version) = (&ctx.broker, ctx.version());
    let assignment = |a: &consumer::Assignment| {
        Assignment::default().with_topic_partitions(
            a.iter()
                .filter_map(|(name, ps)| {
                    let topic = broker.topics.get(name)?;
                    Some(
                        TopicPartitions::default()
                            .with_topic_id(topic.id)
                            .with_topic_name(topic_name(name))
                            .with_partitions(sorted(ps)),
                    )
                })
                .collect(),
        )
    };
    let include_operations = request.include_authorized_operations;
    let authz = ctx.authz();
    let mut groups: Vec<DescribedGroup> = request
        .group_ids
        .into_iter()
        .map(|id| {
            if !authz.allows(AclOperation::Describe, Rt::Group, &id.0) {
                return DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::Unauthorized(Rt::Group)));
            }
            let described = broker.coordinator.with_group(&id.0, |g| {
                let g = g?;
                let c = g.consumer.as_ref()?;
                let members = c
                    .members
                    .values()
                    .map(|m| {
                        Member::default()
                            .with_member_id(str_bytes(&m.id))
                            .with_instance_id(m.instance_id.as_deref().map(str_bytes))
                            .with_rack_id(m.rack_id.as_deref().map(str_bytes))
                            .with_member_epoch(m.epoch)
                            .with_client_id(str_bytes(&m.client_id))
                            .with_client_host(str_bytes(&m.client_host))
                            .with_subscribed_topic_names(
                                m.subscribed.iter().map(|t| topic_name(t)).collect(),
                            )
                            .with_subscribed_topic_regex(
                                m.regex.as_ref().map(|r| str_bytes(r.as_str())),
                            )
                            .with_assignment(assignment(&m.assigned))
                            .with_target_assignment(assignment(
                                &c.target.get(&m.id).cloned().unwrap_or_default(),
                            ))
                            // v1: 1 = consumer protocol member, 0 = a classic member
                            // still using JoinGroup/SyncGroup (online migration).
                            .with_member_type(match (version >= 1, m.classic.is_some()) {
                                (false, _) => -1,
                                (true, true) => 0,
                                (true, false) => 1,
                            })
                    })
                    .collect();
                Some(
                    DescribedGroup::default()
                        .with_group_state(str_bytes(c.state_name()))
                        .with_group_epoch(c.epoch)
                        .with_assignment_epoch(c.assignment_epoch)
                        .with_assignor_name(str_bytes(c.assignor.name()))
                        .with_members(members)
                        .with_authorized_operations(OPERATIONS_NOT_REQUESTED),
                )
            });
            match described {
                Err(e) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::Coordinator(e))),
                Ok(Some(d)) if hides_topics(&d, &authz) => DescribedGroup::default()
                    .with_group_id(id)
                    .with_error_code(ctx.code(&BrokerError::Unauthorized(Rt::Topic)))
                    .with_error_message(Some(str_bytes(
                        "The group has described topic(s) that the client is not authorized to describe.",
                    ))),
                Ok(Some(d)) => d.with_group_id(id),
                Ok(None) => {
                    let missing = BrokerError::GroupNotFound(id.0.to_string());
                    DescribedGroup::default()
                        .with_group_id(id)
                        .with_error_code(ctx.code(&missing))
                        .with_error_message(Some(str_bytes(&missing.to_string())))
                }
            }
        })
        .collect();
    if include_operations {
        for g in groups.iter_mut().filter(|g| g.error_code == 0) {
            g.authorized_operations = operations(&authz, ResourceType::Group, &g.group_id.0);
        }
    }
    Reply::Respond(ResponseKind::ConsumerGroupDescribe(
        ConsumerGroupDescribeResponse::default().with_groups(groups),
    ))
}

/// Does a member's current or target assignment name a topic `authz` may not DESCRIBE?
fn hides_topics(d: &DescribedGroup, authz: &crate::authz::Authz) -> bool {
    d.members.iter().any(|m| {
        m.assignment
            .topic_partitions
            .iter()
            .chain(&m.target_assignment.topic_partitions)
            .any(|t| !authz.allows(AclOperation::Describe, Rt::Topic, &t.topic_name.0))
    })
}
