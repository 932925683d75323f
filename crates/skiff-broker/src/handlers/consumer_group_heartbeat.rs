//! ConsumerGroupHeartbeat (KIP-848, `group.protocol=consumer`): join, stay, leave and
//! receive the server-computed assignment. Topics travel by id on the wire and by name in
//! the coordinator. Server assignors: "uniform" (the default) and "range". Regex
//! subscriptions (v1, RE2 syntax, whole-name matches, internal topics never match): an
//! empty string clears the regex, an invalid one is INVALID_REGULAR_EXPRESSION.

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
    let regex = match request.subscribed_topic_regex.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(source) => match consumer::TopicRegex::new(source) {
            Ok(r) => Some(Some(r)),
            Err(e) => {
                return fail(
                    ResponseError::InvalidRegularExpression,
                    &format!(
                    "SubscribedTopicRegex {source:?} is not a valid RE2 regular expression: {e}"
                ),
                )
            }
        },
    };
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
        regex,
        owned,
        assignor,
    };
    let topics = &broker.topics;
    let result = broker.coordinator.consumer_heartbeat(
        &request.group_id.0,
        hb,
        |name| topics.get(name).map(|t| t.partition_count()),
        || {
            topics
                .list()
                .into_iter()
                .filter(|t| !t.is_internal())
                .map(|t| t.name.clone())
                .collect()
        },
    );
    match result {
        Err(e) => fail(e, &e.to_string()),
        Ok(r) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&r.member_id)))
            .with_member_epoch(r.member_epoch)
            .with_heartbeat_interval_ms(
                broker
                    .coordinator
                    .consumer_heartbeat_interval_ms(&request.group_id.0),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use kafka_protocol::messages::GroupId;

    use super::*;

    async fn broker(dir: &std::path::Path) -> Arc<Broker> {
        let sets = vec![
            format!("log.dirs={}", dir.display()),
            "offsets.topic.num.partitions=1".to_string(),
        ];
        let (config, _) = skiff_config::load(None, &sets, Vec::<(String, String)>::new()).unwrap();
        let broker = tokio::task::spawn_blocking(move || Broker::start(config))
            .await
            .unwrap()
            .unwrap();
        while !broker.coordinator.is_loaded() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        broker
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
    async fn regex_subscriptions_skip_internal_topics_pick_up_new_ones_and_refuse_bad_regexes() {
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

        // ".*" matches every user topic but never __consumer_offsets.
        let r = handle(&b, 1, request(0, Some(".*")), "c", "/h");
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert!(b.topics.get("__consumer_offsets").is_some());
        assert_eq!(topic_names(&b, &r), vec!["other", "rx-a"]);

        // Narrowed to rx-.*: other is revoked; a topic created later is picked up.
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
}
