//! ConsumerGroupHeartbeat (KIP-848, `group.protocol=consumer`): join, stay, leave and
//! receive the server-computed assignment. Topics travel by id on the wire and by name in
//! the coordinator. Server assignors: "uniform" (the default) and "range". Regex
//! subscriptions (v1, RE2 syntax, whole-name matches against every topic, internal ones
//! included, as in Kafka): an empty string clears the regex, an invalid one is
//! INVALID_REGULAR_EXPRESSION. Null fields and a RebalanceTimeoutMs of -1 mean "unchanged
//! since the last heartbeat"; [`validate`] applies Kafka's rules for what a join must carry.
//!
//! With an authorizer (Kafka 4's KafkaApis, before the request checks): GROUP READ, else
//! GROUP_AUTHORIZATION_FAILED; every subscribed topic name needs TOPIC DESCRIBE, else
//! TOPIC_AUTHORIZATION_FAILED. A regex resolves only to topics the member's principal may
//! DESCRIBE (as Kafka's group coordinator filters resolved regexes): others are left out of
//! its subscription, without an error.

use std::collections::BTreeSet;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseKind,
};

use super::str_bytes;
use crate::authz::{unauthorized_message, AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use skiff_coordinator::groups::consumer::{
    self, Heartbeat, LEAVE, STATIC_LEAVE, UNCHANGED_TIMEOUT,
};

/// The server assignors Skiff implements, in the order Kafka lists its defaults.
const ASSIGNORS: &str = "uniform, range";

/// Null, or not blank (Kafka trims before checking for empty).
fn blank(s: Option<&str>) -> bool {
    s.is_some_and(|s| s.trim().is_empty())
}

/// Kafka's request checks (GroupMetadataManager), in its order, with its error codes and
/// messages. Regex syntax is checked separately (INVALID_REGULAR_EXPRESSION).
pub fn validate(version: i16, request: &ConsumerGroupHeartbeatRequest) -> Result<(), BrokerError> {
    let invalid = |m: &str| Err(BrokerError::InvalidRequest(m.to_string()));
    let epoch = request.member_epoch;
    if request.group_id.0.is_empty() {
        return Err(BrokerError::InvalidGroupId(
            "GroupId can't be empty.".to_string(),
        ));
    }
    if (version >= 1 || epoch > 0 || epoch == LEAVE) && request.member_id.trim().is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if blank(Some(&request.group_id.0)) {
        return invalid("GroupId can't be empty.");
    }
    if blank(request.instance_id.as_deref()) {
        return invalid("InstanceId can't be empty.");
    }
    if blank(request.rack_id.as_deref()) {
        return invalid("RackId can't be empty.");
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == UNCHANGED_TIMEOUT {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request
            .topic_partitions
            .as_ref()
            .is_none_or(|t| !t.is_empty())
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == STATIC_LEAVE {
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if epoch < STATIC_LEAVE {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(name) = request.server_assignor.as_deref() {
        if consumer::Assignor::parse(name).is_none() {
            return Err(BrokerError::UnsupportedAssignor(format!(
                "ServerAssignor {name} is not supported. Supported assignors: {ASSIGNORS}."
            )));
        }
    }
    Ok(())
}

pub async fn handle(ctx: &RequestContext, request: ConsumerGroupHeartbeatRequest) -> Reply {
    Reply::Respond(ResponseKind::ConsumerGroupHeartbeat(answer(ctx, request)))
}

fn answer(
    ctx: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let (broker, version) = (&ctx.broker, ctx.version());
    let fail = |e: BrokerError, message: &str| {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(ctx.code(&e))
            .with_error_message(Some(str_bytes(message)))
    };
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Read, ResourceType::Group, &request.group_id.0) {
        let rt = ResourceType::Group;
        return fail(BrokerError::Unauthorized(rt), unauthorized_message(rt));
    }
    if let Some(names) = &request.subscribed_topic_names {
        if names
            .iter()
            .any(|n| !authz.allows(AclOperation::Describe, ResourceType::Topic, n))
        {
            return ConsumerGroupHeartbeatResponse::default()
                .with_error_code(ctx.code(&BrokerError::Unauthorized(ResourceType::Topic)));
        }
    }
    if let Err(e) = validate(version, &request) {
        let message = e.to_string();
        return fail(e, &message);
    }
    let leaving = request.member_epoch < 0;
    // A leaving member's subscription fields are ignored, as Kafka does.
    let regex = match request.subscribed_topic_regex.as_deref() {
        _ if leaving => None,
        None => None,
        Some("") => Some(None),
        Some(source) => match consumer::TopicRegex::new(source) {
            Ok(r) => Some(Some(r)),
            Err(e) => {
                let message = format!(
                    "SubscribedTopicRegex `{source}` is not a valid regular expression: {e}"
                );
                return fail(BrokerError::InvalidRegex(message.clone()), &message);
            }
        },
    };
    let assignor = request
        .server_assignor
        .as_deref()
        .and_then(consumer::Assignor::parse);
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
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed: request
            .subscribed_topic_names
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
        regex,
        owned,
        assignor,
        regex_scope: regex_scope(ctx),
    };
    let topics = &broker.topics;
    let result = broker.coordinator.consumer_heartbeat(
        &request.group_id.0,
        hb,
        |name| topics.get(name).map(|t| t.partition_count()),
        // Every topic, internal ones included: Kafka matches regexes against its whole
        // metadata image.
        || topics.list().into_iter().map(|t| t.name.clone()).collect(),
    );
    match result {
        // Kafka's text for the coordinator's code.
        Err(e) => fail(BrokerError::Coordinator(e), &e.to_string()),
        Ok(r) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&r.member_id)))
            .with_member_epoch(r.member_epoch)
            // Kafka's leave answer carries only the member id and epoch.
            .with_heartbeat_interval_ms(if leaving {
                0
            } else {
                broker
                    .coordinator
                    .consumer_heartbeat_interval_ms(&request.group_id.0)
            })
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

/// The topics this member's regex may resolve to: with an authorizer, those its principal
/// (from this host) may DESCRIBE, as Kafka's regex resolution filters them; the member keeps
/// this scope until its next heartbeat.
fn regex_scope(ctx: &RequestContext) -> consumer::RegexScope {
    let authz = ctx.authz();
    if !authz.enabled() {
        return consumer::RegexScope::All;
    }
    consumer::RegexScope::Only(std::sync::Arc::new(move |topic: &str| {
        authz.allows(AclOperation::Describe, ResourceType::Topic, topic)
    }))
}

/// Partitions as a sorted list (for describe output).
pub fn sorted(ps: &BTreeSet<i32>) -> Vec<i32> {
    ps.iter().copied().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, ResponseKind, TopicName};

    use super::*;
    use crate::broker::Broker;
    use crate::dispatch::Reply;
    use crate::handlers::offset_commit;
    use kafka_protocol::messages::ApiKey;
    use kafka_protocol::ResponseError;
    use std::sync::Arc;

    /// The handler's answer for a request from client `client_id` at `client_host`.
    fn handle(
        b: &Arc<Broker>,
        version: i16,
        request: ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
    ) -> ConsumerGroupHeartbeatResponse {
        let mut ctx = RequestContext::new(b.clone(), ApiKey::ConsumerGroupHeartbeat, version);
        ctx.client_id = client_id.to_string();
        ctx.client_host = client_host.to_string();
        answer(&ctx, request)
    }

    async fn broker(dir: &std::path::Path) -> Arc<Broker> {
        crate::handlers::test_broker(dir).await
    }

    fn create(b: &Arc<Broker>, name: &str) {
        b.topics.create(name, 1, Default::default(), false).unwrap();
    }

    fn request(epoch: i32, regex: Option<&str>) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes("m1"))
            .with_member_epoch(epoch)
            .with_rebalance_timeout_ms(10_000)
            .with_subscribed_topic_names((epoch == 0).then(Vec::new))
            .with_subscribed_topic_regex(regex.map(str_bytes))
            .with_topic_partitions(Some(Vec::new()))
    }

    fn topic_names(b: &Arc<Broker>, r: &ConsumerGroupHeartbeatResponse) -> Vec<String> {
        let mut v: Vec<String> = r
            .assignment
            .as_ref()
            .unwrap()
            .topic_partitions
            .iter()
            .map(|tp| b.topics.get_by_id(tp.topic_id).unwrap().name.clone())
            .collect();
        v.sort();
        v
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn regex_subscriptions_match_internal_topics_pick_up_new_ones_and_refuse_bad_regexes() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path()).await;
        create(&b, "rx-a");
        create(&b, "other");

        let bad = handle(&b, 1, request(0, Some("rx-(")), "c", "/h");
        assert_eq!(
            bad.error_code,
            ResponseError::InvalidRegularExpression.code()
        );
        assert!(bad.error_message.unwrap().contains("rx-("));

        // ".*" matches every topic, __consumer_offsets included (issue 12, item 2: Kafka
        // matches regexes against every topic of its metadata image). The internal topics
        // exist once a client's FindCoordinator has created them.
        b.coordinator.ensure_offsets_topic().unwrap();
        b.txn.ensure_state_topic().unwrap();
        let r = handle(&b, 1, request(0, Some(".*")), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert_eq!(
            topic_names(&b, &r),
            vec!["__consumer_offsets", "__transaction_state", "other", "rx-a"]
        );
        // A regex naming an internal topic alone gets it.
        let r = handle(
            &b,
            1,
            request(r.member_epoch, Some("__consumer_.*")),
            "c",
            "/h",
        );
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert_eq!(topic_names(&b, &r), vec!["__consumer_offsets"]);

        // Narrowed to rx-.*: the rest is revoked; a topic created later is picked up.
        let r = handle(&b, 1, request(r.member_epoch, Some("rx-.*")), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        create(&b, "rx-b");
        let r = handle(&b, 1, request(r.member_epoch, None), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert_eq!(topic_names(&b, &r), vec!["rx-a", "rx-b"]);

        // An empty string clears the regex: everything is revoked.
        let r = handle(&b, 1, request(r.member_epoch, Some("")), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert!(topic_names(&b, &r).is_empty());
    }

    /// Kafka's validation: each invalid request gets its error code and message, and the
    /// "unchanged" sentinels (-1 timeout, null fields) are accepted after the join.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_are_validated_like_kafka() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path()).await;
        create(&b, "t");
        let join =
            || request(0, None).with_subscribed_topic_names(Some(vec![TopicName(str_bytes("t"))]));
        type Edit = fn(ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatRequest;
        let cases: Vec<(Edit, i16, ResponseError, &str)> = vec![
            (|r| r.with_group_id(GroupId(str_bytes(""))), 1, ResponseError::InvalidGroupId, "GroupId can't be empty."),
            (|r| r.with_group_id(GroupId(str_bytes("  "))), 1, ResponseError::InvalidRequest, "GroupId can't be empty."),
            (|r| r.with_member_id(str_bytes(" ")), 1, ResponseError::InvalidRequest, "MemberId can't be empty."),
            (|r| r.with_instance_id(Some(str_bytes(""))), 1, ResponseError::InvalidRequest, "InstanceId can't be empty."),
            (|r| r.with_rack_id(Some(str_bytes(" "))), 1, ResponseError::InvalidRequest, "RackId can't be empty."),
            (|r| r.with_rebalance_timeout_ms(-1), 1, ResponseError::InvalidRequest, "RebalanceTimeoutMs must be provided in first request."),
            (|r| r.with_topic_partitions(None), 1, ResponseError::InvalidRequest, "TopicPartitions must be empty when (re-)joining."),
            (|r| r.with_subscribed_topic_names(None), 1, ResponseError::InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
            (|r| r.with_member_epoch(-2), 1, ResponseError::InvalidRequest, "InstanceId can't be null."),
            (|r| r.with_member_epoch(-3), 1, ResponseError::InvalidRequest, "MemberEpoch is invalid."),
            (|r| r.with_member_epoch(1).with_member_id(str_bytes("")), 0, ResponseError::InvalidRequest, "MemberId can't be empty."),
            (|r| r.with_server_assignor(Some(str_bytes(""))), 1, ResponseError::UnsupportedAssignor, "ServerAssignor  is not supported. Supported assignors: uniform, range."),
            (|r| r.with_server_assignor(Some(str_bytes("sticky"))), 1, ResponseError::UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
        ];
        for (edit, version, code, message) in cases {
            let r = handle(&b, version, edit(join()), "c", "/h");
            assert_eq!(r.error_code, code.code(), "{message}");
            assert_eq!(r.error_message.as_deref(), Some(message));
            assert_eq!(r.heartbeat_interval_ms, 0);
        }
        // v0 lets the broker pick the member id; an empty names list or regex may join.
        let r = handle(&b, 0, join().with_member_id(str_bytes("")), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        let v0_id = r.member_id.unwrap();
        assert!(!v0_id.is_empty());
        let r = handle(
            &b,
            1,
            join()
                .with_member_id(str_bytes("m2"))
                .with_subscribed_topic_names(None)
                .with_subscribed_topic_regex(Some(str_bytes(""))),
            "c",
            "/h",
        );
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        // Leaving: member id and epoch, no heartbeat interval.
        let leave = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(v0_id.clone())
            .with_member_epoch(-1)
            .with_rebalance_timeout_ms(-1);
        let r = handle(&b, 0, leave, "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert_eq!((r.member_id, r.member_epoch), (Some(v0_id), -1));
        assert_eq!(r.heartbeat_interval_ms, 0);
    }

    /// Only a join creates a group: any other heartbeat, a leave included, to a group that
    /// does not exist (or is a classic group) is GROUP_ID_NOT_FOUND, as in Kafka.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heartbeats_other_than_joins_to_missing_groups_are_group_id_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path()).await;
        for epoch in [3, -1] {
            let r = handle(&b, 1, request(epoch, None), "c", "/h");
            assert_eq!(
                r.error_code,
                ResponseError::GroupIdNotFound.code(),
                "{epoch}"
            );
        }
        let r = handle(&b, 1, request(0, None), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        let r = handle(&b, 1, request(r.member_epoch + 1, None), "c", "/h");
        assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
    }

    /// Issue 12, item 1, end to end: A joins with a 45 s rebalance timeout and then sends -1
    /// ("unchanged"), B joins, A is told to revoke half its partitions and commits offsets
    /// while revoking. The commit succeeds and A is not expired by the next coordinator tick.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn member_revoking_after_unchanged_rebalance_timeout_commits_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path()).await;
        b.topics.create("t", 4, Default::default(), false).unwrap();
        let join = |member: &str| {
            request(0, None)
                .with_member_id(str_bytes(member))
                .with_rebalance_timeout_ms(45_000)
                .with_subscribed_topic_names(Some(vec![TopicName(str_bytes("t"))]))
        };
        let owned = |r: &ConsumerGroupHeartbeatResponse| {
            r.assignment
                .as_ref()
                .unwrap()
                .topic_partitions
                .iter()
                .map(|tp| {
                    kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(tp.topic_id)
                        .with_partitions(tp.partitions.clone())
                })
                .collect::<Vec<_>>()
        };
        let light = |member: &str, epoch: i32, owned: Vec<_>| {
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_member_id(str_bytes(member))
                .with_member_epoch(epoch)
                .with_rebalance_timeout_ms(-1)
                .with_topic_partitions(Some(owned))
        };
        let a = handle(&b, 1, join("a"), "c", "/h");
        assert_eq!(a.error_code, 0, "{:?}", a.error_message);
        let a_owned = owned(&a);
        assert_eq!(a_owned[0].partitions.len(), 4);
        let a = handle(
            &b,
            1,
            light("a", a.member_epoch, a_owned.clone()),
            "c",
            "/h",
        );
        assert_eq!(a.error_code, 0, "{:?}", a.error_message);
        let bm = handle(&b, 1, join("b"), "c", "/h");
        assert_eq!(bm.error_code, 0, "{:?}", bm.error_message);
        // A learns it keeps 2 of its 4 partitions: the other 2 are being revoked.
        let a = handle(&b, 1, light("a", a.member_epoch, a_owned), "c", "/h");
        assert_eq!(a.error_code, 0, "{:?}", a.error_message);
        assert_eq!(owned(&a)[0].partitions.len(), 2);
        b.coordinator.tick_now();
        // A commits what it consumed from a partition it is giving up.
        let revoked = (0..4)
            .find(|p| !owned(&a)[0].partitions.contains(p))
            .unwrap();
        let commit = OffsetCommitRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_member_id(str_bytes("a"))
            .with_generation_id_or_member_epoch(a.member_epoch)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(str_bytes("t")))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(revoked)
                    .with_committed_offset(7)])]);
        let ctx = RequestContext::new(b.clone(), ApiKey::OffsetCommit, 9);
        let response = match offset_commit::handle(&ctx, commit).await {
            Reply::Respond(r) => r,
            Reply::Later(f) => f.await,
            Reply::LaterInFiles(f) => f.await.into_response().unwrap(),
            _ => panic!("no OffsetCommit response"),
        };
        let ResponseKind::OffsetCommit(response) = response else {
            panic!("not an OffsetCommit response")
        };
        assert_eq!(response.topics[0].partitions[0].error_code, 0);
        // A is still a member: its next heartbeat is answered normally.
        let again = handle(&b, 1, light("a", a.member_epoch, vec![]), "c", "/h");
        assert_eq!(again.error_code, 0, "{:?}", again.error_message);
    }
}
