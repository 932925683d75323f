//! OffsetFetch: committed offsets of one group (v1-7) or of several (v8+). A partition with
//! nothing committed answers offset -1, as Kafka does; a null topic list means "every
//! committed partition" (v2+). With `require_stable` (v7+), a partition whose offset is
//! pending in an undecided transaction answers UNSTABLE_OFFSET_COMMIT (retriable), as Kafka does.
//! From v9 a member of a consumer group names itself and its epoch: an unknown member answers
//! UNKNOWN_MEMBER_ID and an old epoch STALE_MEMBER_EPOCH for the group (Kafka's check).
//!
//! With an authorizer (Kafka 4's KafkaApis): a group needs GROUP DESCRIBE, else
//! GROUP_AUTHORIZATION_FAILED (for the group, v8+; as the request's error, v0-7); a topic
//! needs TOPIC DESCRIBE: an all-topics request leaves the others out, a named one's
//! partitions answer TOPIC_AUTHORIZATION_FAILED (offset -1).

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, OffsetFetchResponse, ResponseKind};
use kafka_protocol::ResponseError;

use super::{str_bytes, topic_name};
use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::group::Committed;

type Rows = Vec<(String, i32, Option<Committed>)>;
/// Partitions of one topic with what they have committed.
type ByTopic = Vec<(String, Vec<(i32, Option<Committed>)>)>;

pub async fn handle(ctx: &RequestContext, request: OffsetFetchRequest) -> Reply {
    Reply::Respond(ResponseKind::OffsetFetch(answer(ctx, request)))
}

fn answer(ctx: &RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse {
    let (broker, version) = (&ctx.broker, ctx.version());
    let code = |e: ResponseError| ctx.code(&BrokerError::Coordinator(e));
    let unstable_code = ctx.code(&BrokerError::UnstableOffset);
    let require_stable = version >= 7 && request.require_stable;
    let authz = ctx.authz();
    let group_ok = |g: &str| authz.allows(AclOperation::Describe, ResourceType::Group, g);
    let topic_ok = |t: &str| authz.allows(AclOperation::Describe, ResourceType::Topic, t);
    let topic_denied = ctx.code(&BrokerError::Unauthorized(ResourceType::Topic));
    if version >= 8 {
        let groups = request
            .groups
            .into_iter()
            .map(|g| {
                if !group_ok(&g.group_id.0) {
                    let denied = ctx.code(&BrokerError::Unauthorized(ResourceType::Group));
                    return group_v8(g.group_id, Err(denied));
                }
                let all_topics = g.topics.is_none();
                let wanted = g.topics.map(|ts| {
                    ts.into_iter()
                        .flat_map(|t| {
                            let name = t.name.0.to_string();
                            t.partition_indexes
                                .into_iter()
                                .map(move |p| (name.clone(), p))
                        })
                        .collect()
                });
                let member = g.member_id.as_ref().map(|m| m.as_str());
                let result = broker
                    .coordinator
                    .check_offset_fetch(&g.group_id.0, member, g.member_epoch)
                    .and_then(|()| broker.coordinator.fetch_offsets(&g.group_id.0, wanted));
                let mut group = group_v8(g.group_id, result.map_err(code));
                if all_topics {
                    group.topics.retain(|t| topic_ok(&t.name.0));
                }
                for t in group.topics.iter_mut().filter(|t| !topic_ok(&t.name.0)) {
                    for p in &mut t.partitions {
                        p.committed_offset = -1;
                        p.committed_leader_epoch = -1;
                        p.metadata = Some(str_bytes(""));
                        p.error_code = topic_denied;
                    }
                }
                if require_stable {
                    for t in &mut group.topics {
                        for p in &mut t.partitions {
                            if unstable(broker, &group.group_id.0, &t.name.0, p.partition_index) {
                                p.error_code = unstable_code;
                            }
                        }
                    }
                }
                group
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted = request.topics.map(|ts| {
        ts.into_iter()
            .flat_map(|t| {
                let name = t.name.0.to_string();
                t.partition_indexes
                    .into_iter()
                    .map(move |p| (name.clone(), p))
            })
            .collect::<Vec<_>>()
    });
    let requested = wanted.clone();
    let all_topics = wanted.is_none();
    let fetched = if group_ok(&request.group_id.0) {
        broker
            .coordinator
            .fetch_offsets(&request.group_id.0, wanted)
    } else {
        Err(ResponseError::GroupAuthorizationFailed)
    };
    match fetched {
        Ok(mut rows) => {
            if version < 5 {
                // The field does not exist before v5.
                for c in rows.iter_mut().filter_map(|(_, _, c)| c.as_mut()) {
                    c.leader_epoch = -1;
                }
            }
            let mut topics = topics_v1(rows, None);
            if all_topics {
                topics.retain(|t| topic_ok(&t.name.0));
            }
            for t in topics.iter_mut().filter(|t| !topic_ok(&t.name.0)) {
                for p in &mut t.partitions {
                    p.committed_offset = -1;
                    p.committed_leader_epoch = -1;
                    p.metadata = Some(str_bytes(""));
                    p.error_code = topic_denied;
                }
            }
            if require_stable {
                for t in &mut topics {
                    for p in &mut t.partitions {
                        if unstable(broker, &request.group_id.0, &t.name.0, p.partition_index) {
                            p.error_code = unstable_code;
                        }
                    }
                }
            }
            OffsetFetchResponse::default().with_topics(topics)
        }
        Err(e) => {
            let e = code(e);
            // v1 has no top-level error: every requested partition carries it.
            let rows = requested
                .unwrap_or_default()
                .into_iter()
                .map(|(t, p)| (t, p, None))
                .collect();
            let mut response = OffsetFetchResponse::default().with_topics(topics_v1(rows, Some(e)));
            if version >= 2 {
                response.error_code = e;
            }
            response
        }
    }
}

/// A transactional offset commit for this partition awaits its transaction's outcome.
fn unstable(broker: &Broker, group: &str, topic: &str, partition: i32) -> bool {
    broker
        .coordinator
        .has_pending_txn_offset(group, topic, partition)
}

fn group_by_topic(rows: Rows) -> ByTopic {
    let mut out: ByTopic = Vec::new();
    for (t, p, c) in rows {
        match out.iter_mut().find(|(name, _)| *name == t) {
            Some((_, ps)) => ps.push((p, c)),
            None => out.push((t, vec![(p, c)])),
        }
    }
    out
}

fn topics_v1(rows: Rows, error: Option<i16>) -> Vec<OffsetFetchResponseTopic> {
    group_by_topic(rows)
        .into_iter()
        .map(|(t, ps)| {
            OffsetFetchResponseTopic::default()
                .with_name(topic_name(&t))
                .with_partitions(
                    ps.into_iter()
                        .map(|(p, c)| {
                            let (offset, epoch, metadata) = fields(c);
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(str_bytes(&metadata)))
                                .with_error_code(error.unwrap_or(0))
                        })
                        .collect(),
                )
        })
        .collect()
}

fn fields(c: Option<Committed>) -> (i64, i32, String) {
    match c {
        Some(c) => (c.offset, c.leader_epoch, c.metadata),
        None => (-1, -1, String::new()),
    }
}

fn group_v8(id: GroupId, result: Result<Rows, i16>) -> OffsetFetchResponseGroup {
    match result {
        Err(code) => OffsetFetchResponseGroup::default()
            .with_group_id(id)
            .with_error_code(code),
        Ok(rows) => OffsetFetchResponseGroup::default()
            .with_group_id(id)
            .with_topics(
                group_by_topic(rows)
                    .into_iter()
                    .map(|(t, ps)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(topic_name(&t))
                            .with_partitions(
                                ps.into_iter()
                                    .map(|(p, c)| {
                                        let (offset, epoch, metadata) = fields(c);
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_committed_offset(offset)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(Some(str_bytes(&metadata)))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
    use kafka_protocol::messages::{ApiKey, ConsumerGroupHeartbeatRequest};

    use super::*;

    async fn broker(dir: &std::path::Path) -> Arc<Broker> {
        crate::handlers::test_broker(dir).await
    }

    /// Joins `group` as a consumer-protocol member; its member id and epoch.
    async fn join(b: &Arc<Broker>, group: &str) -> (String, i32) {
        let ctx = RequestContext::new(b.clone(), ApiKey::ConsumerGroupHeartbeat, 1);
        let request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes(group)))
            .with_member_id(str_bytes("m1"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(10_000)
            .with_subscribed_topic_names(Some(Vec::new()))
            .with_topic_partitions(Some(Vec::new()));
        let Reply::Respond(ResponseKind::ConsumerGroupHeartbeat(r)) =
            crate::handlers::consumer_group_heartbeat::handle(&ctx, request).await
        else {
            panic!("no heartbeat answer")
        };
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        (r.member_id.unwrap().to_string(), r.member_epoch)
    }

    /// The group-level error of an OffsetFetch v9 of every partition of `group`.
    fn fetch(b: &Arc<Broker>, group: &str, member: Option<&str>, epoch: i32) -> i16 {
        let ctx = RequestContext::new(b.clone(), ApiKey::OffsetFetch, 9);
        let request =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(str_bytes(group)))
                .with_member_id(member.map(str_bytes))
                .with_member_epoch(epoch)
                .with_topics(None)]);
        answer(&ctx, request).groups[0].error_code
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consumer_group_member_fetches_with_its_current_epoch_only() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path()).await;
        let (member, epoch) = join(&b, "g").await;
        assert!(epoch > 0);
        assert_eq!(fetch(&b, "g", Some(&member), epoch), 0);
        assert_eq!(
            fetch(&b, "g", Some(&member), epoch - 1),
            ResponseError::StaleMemberEpoch.code()
        );
        assert_eq!(
            fetch(&b, "g", Some("nobody"), epoch),
            ResponseError::UnknownMemberId.code()
        );
        // Admin clients name no member.
        assert_eq!(fetch(&b, "g", None, -1), 0);
        // Groups that are not consumer groups are not checked.
        assert_eq!(fetch(&b, "no-such-group", Some("nobody"), 3), 0);
        b.shutdown().unwrap();
    }
}
