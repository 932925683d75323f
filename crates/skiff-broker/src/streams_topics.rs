//! The internal topics of streams groups (KIP-1071): when a StreamsGroupHeartbeat finds
//! changelog or repartition topics missing, the broker creates them on the application's
//! behalf, with the partition count the coordinator decided and the configs the application
//! declared (a changelog asks for `cleanup.policy=compact`).
//!
//! As in Kafka's broker, creating them needs CREATE on the cluster or on each topic; topics
//! the member may not create are named in the MISSING_INTERNAL_TOPICS status ("Unauthorized to
//! CREATE on topics …"), and so are topics whose creation failed. Kafka creates them
//! asynchronously through its controller; Skiff creates them at once, so the member's next
//! heartbeat finds them.

use skiff_coordinator::streams_group::{InternalTopic, Status, StatusCode};

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::topics::TopicError;

/// Creates the topics in `to_create` that the requester may create, and adds to `status`
/// what could not be: appended to the MISSING_INTERNAL_TOPICS entry, or a new one.
pub fn create_internal_topics(
    broker: &Broker,
    authz: &Authz,
    to_create: &[InternalTopic],
    status: &mut Vec<Status>,
) {
    if to_create.is_empty() {
        return;
    }
    let cluster = authz.allows_cluster(AclOperation::Create);
    let (allowed, denied): (Vec<&InternalTopic>, Vec<&InternalTopic>) = to_create
        .iter()
        .partition(|t| cluster || authz.allows(AclOperation::Create, ResourceType::Topic, &t.name));
    let mut problems = Vec::new();
    if !denied.is_empty() {
        let names: Vec<&str> = denied.iter().map(|t| t.name.as_str()).collect();
        problems.push(format!(
            "Unauthorized to CREATE on topics {}.",
            names.join(",")
        ));
    }
    let failed: Vec<String> = allowed
        .into_iter()
        .filter_map(|t| {
            create_one(broker, t)
                .err()
                .map(|e| format!("{}: {e}", t.name))
        })
        .collect();
    if !failed.is_empty() {
        problems.push(format!(
            "Failed to create internal topics: {}.",
            failed.join(", ")
        ));
    }
    if problems.is_empty() {
        return;
    }
    let text = problems.join("; ");
    match status
        .iter_mut()
        .find(|s| s.code == StatusCode::MissingInternalTopics)
    {
        Some(s) => s.detail = format!("{}; {text}", s.detail),
        None => status.push(Status {
            code: StatusCode::MissingInternalTopics,
            detail: text,
        }),
    }
}

fn create_one(broker: &Broker, t: &InternalTopic) -> Result<(), String> {
    if t.replication_factor > 1 {
        return Err(format!(
            "Unable to replicate the partition {rf} time(s): only 1 broker is registered.",
            rf = t.replication_factor
        ));
    }
    match broker
        .topics
        .create(&t.name, t.partitions, t.configs.clone(), false)
    {
        Ok(_) => {
            tracing::info!(topic = %t.name, partitions = t.partitions, "created a streams group internal topic");
            Ok(())
        }
        // Another member's heartbeat created it first.
        Err(TopicError::AlreadyExists(_)) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn topic(name: &str, partitions: i32, rf: i16) -> InternalTopic {
        InternalTopic {
            name: name.to_string(),
            partitions,
            replication_factor: rf,
            configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
        }
    }

    #[tokio::test]
    async fn missing_internal_topics_are_created_with_their_configs() {
        let dir = tempfile::tempdir().unwrap();
        let broker = crate::handlers::test_broker(dir.path()).await;
        let authz = Authz::for_principal(&broker, "User", "ANONYMOUS", "127.0.0.1");
        let mut status = vec![Status {
            code: StatusCode::MissingInternalTopics,
            detail: "Internal topics are missing: app-changelog, app-rep".to_string(),
        }];
        let wanted = [topic("app-changelog", 3, 0), topic("app-rep", 2, -1)];
        create_internal_topics(&broker, &authz, &wanted, &mut status);
        // Created: the status stays as the coordinator worded it.
        assert_eq!(
            status[0].detail,
            "Internal topics are missing: app-changelog, app-rep"
        );
        let changelog = broker.topics.get("app-changelog").unwrap();
        assert_eq!(changelog.partition_count(), 3);
        assert_eq!(
            changelog
                .overrides()
                .get("cleanup.policy")
                .map(String::as_str),
            Some("compact")
        );
        assert_eq!(broker.topics.get("app-rep").unwrap().partition_count(), 2);
        // A second member asking for the same topics is fine.
        create_internal_topics(&broker, &authz, &wanted, &mut status);
        assert_eq!(status.len(), 1);

        // A topic that cannot be created is named in the status.
        let mut status = Vec::new();
        create_internal_topics(&broker, &authz, &[topic("app-x", 1, 3)], &mut status);
        assert_eq!(status.len(), 1);
        assert_eq!(status[0].code, StatusCode::MissingInternalTopics);
        assert!(
            status[0]
                .detail
                .starts_with("Failed to create internal topics: app-x: Unable to replicate"),
            "{}",
            status[0].detail
        );
        assert!(broker.topics.get("app-x").is_none());
        broker.shutdown().unwrap();
    }
}
