//! DescribeLogDirs: the one log dir, the size of each partition in it, and (v4+) the size
//! and free space of its filesystem. Runs on the blocking pool (statvfs, segment sizes).
//! With an authorizer it needs CLUSTER DESCRIBE, else no results and
//! CLUSTER_AUTHORIZATION_FAILED (v3+ carry the code).

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse, ResponseKind,
};

use super::{str_bytes, topic_name};
use crate::authz::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: DescribeLogDirsRequest) -> Reply {
    let b = ctx.broker.clone();
    let version = ctx.version();
    if !ctx.authz().allows_cluster(AclOperation::Describe) {
        let denied = BrokerError::Unauthorized(ResourceType::Cluster);
        return Reply::Respond(ResponseKind::DescribeLogDirs(
            DescribeLogDirsResponse::default().with_error_code(ctx.code(&denied)),
        ));
    }
    let answered = blocking(move || {
        let topics = match request.topics {
            // Null: every partition of every topic.
            None => b
                .topics
                .list()
                .iter()
                .map(|t| describe_topic(&b, &t.name, None))
                .collect(),
            Some(wanted) => wanted
                .iter()
                .filter(|t| b.topics.get(&t.topic.0).is_some())
                .map(|t| describe_topic(&b, &t.topic.0, Some(&t.partitions)))
                .collect(),
        };
        let mut result = DescribeLogDirsResult::default()
            .with_log_dir(str_bytes(&b.log_dir.root().display().to_string()))
            .with_topics(topics);
        if version >= 4 {
            match skiff_log::disk_space(b.log_dir.root()) {
                Ok(space) => {
                    result.total_bytes = i64::try_from(space.total).unwrap_or(i64::MAX);
                    result.usable_bytes = i64::try_from(space.available).unwrap_or(i64::MAX);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the log dir's disk space");
                    let e = BrokerError::StorageFailure(e.to_string());
                    result.error_code = kafka_error(ApiKey::DescribeLogDirs, version, &e).code();
                }
            }
        }
        DescribeLogDirsResponse::default().with_results(vec![result])
    })
    .await;
    // A failed task: the log dir's result carries the error.
    let response = answered.unwrap_or_else(|e| {
        let result = DescribeLogDirsResult::default()
            .with_log_dir(str_bytes(&ctx.broker.log_dir.root().display().to_string()))
            .with_error_code(ctx.code(&e));
        DescribeLogDirsResponse::default().with_results(vec![result])
    });
    Reply::Respond(ResponseKind::DescribeLogDirs(response))
}

/// Partitions of `name` this broker hosts (all, or those asked for that exist).
fn describe_topic(broker: &Broker, name: &str, wanted: Option<&[i32]>) -> DescribeLogDirsTopic {
    let partitions = broker
        .topics
        .get(name)
        .map(|t| t.partitions())
        .unwrap_or_default()
        .iter()
        .filter(|p| wanted.is_none_or(|w| w.contains(&p.index)))
        .map(|p| {
            DescribeLogDirsPartition::default()
                .with_partition_index(p.index)
                .with_partition_size(i64::try_from(p.log.size_bytes()).unwrap_or(i64::MAX))
                .with_offset_lag(0)
        })
        .collect();
    DescribeLogDirsTopic::default()
        .with_name(topic_name(name))
        .with_partitions(partitions)
}
