//! ShareGroupDescribe v1 content of one group, built from its state. Authorized operations
//! are the caller's to fill in (they depend on the requester's principal).

use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::assignor::TopicAssignment;
use super::error::ShareGroupError;
use super::group::ShareGroup;
use crate::host::TopicCatalog;

/// The only share group assignor Kafka has.
pub const ASSIGNOR_NAME: &str = "simple";

/// The group as ShareGroupDescribe shows it. Members come sorted by id; a topic of an
/// assignment that no longer exists is left out (Kafka shows only topics it can name).
pub fn described(group: &ShareGroup, topics: &dyn TopicCatalog) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(GroupId(StrBytes::from_string(group.id.clone())))
        .with_group_state(StrBytes::from_static_str(group.state().name()))
        .with_group_epoch(group.epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(StrBytes::from_static_str(ASSIGNOR_NAME))
        .with_members(
            group
                .members
                .values()
                .map(|m| {
                    Member::default()
                        .with_member_id(StrBytes::from_string(m.id.clone()))
                        .with_rack_id(m.rack_id.clone().map(StrBytes::from_string))
                        .with_member_epoch(m.epoch)
                        .with_client_id(StrBytes::from_string(m.client_id.clone()))
                        .with_client_host(StrBytes::from_string(m.client_host.clone()))
                        .with_subscribed_topic_names(
                            m.subscribed
                                .iter()
                                .map(|t| TopicName(StrBytes::from_string(t.clone())))
                                .collect(),
                        )
                        .with_assignment(assignment(&m.assigned, topics))
                })
                .collect(),
        )
}

/// The entry for a group that cannot be described (not found, or not a share group).
pub fn described_error(group_id: &str, message: &str, error: &ShareGroupError) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(GroupId(StrBytes::from_string(group_id.to_string())))
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(message.to_string())))
}

fn assignment(a: &TopicAssignment, topics: &dyn TopicCatalog) -> Assignment {
    Assignment::default().with_topic_partitions(
        a.iter()
            .filter_map(|(id, ps)| {
                let name = topics.topic_name(*id)?;
                Some(
                    TopicPartitions::default()
                        .with_topic_id(*id)
                        .with_topic_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(ps.iter().copied().collect()),
                )
            })
            .collect(),
    )
}
