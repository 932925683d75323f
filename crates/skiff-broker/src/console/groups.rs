//! The consumer groups pages: the list of every group the caller may see ([`groups_list`]:
//! ListGroups v5, filtered by GROUP DESCRIBE as a Kafka client sees it) with state, members
//! and total lag; one group's page ([`group_page`], its members from [`group_members`]); and
//! resetting an empty group's offsets ([`group_reset`]), as `kafka-consumer-groups
//! --reset-offsets --execute` does. This module holds the requests they share.
//!
//! Every figure comes from Kafka requests run as the caller: committed offsets from
//! OffsetFetch, log end offsets from ListOffsets (latest, read_uncommitted: the high
//! watermark, as `kafka-consumer-groups --describe` shows), lag = log end − committed. The
//! one exception is [`total_lags`], which the history sampler calls every 5 s for the lag
//! charts: it reads the coordinator and the logs directly (no caller, no ACLs), and what it
//! samples is only shown on a group's page, behind DESCRIBE on the group.
//!
//! Costs are bounded: at most [`MAX_GROUPS`] groups are listed (with a note past it), and
//! the list page sends one batched request of each kind for all of them.

// Children of this module kept beside it, in console/ (the module tree is console/mod.rs's).
#[path = "group_members.rs"]
mod group_members;
#[path = "group_page.rs"]
mod group_page;
#[path = "group_reset.rs"]
mod group_reset;
#[path = "groups_list.rs"]
mod groups_list;

use std::collections::HashMap;
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, GroupId, ListGroupsRequest, OffsetFetchRequest, RequestKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde::Deserialize;

use super::call::{expect_response, Caller};
use super::page::PageError;
use super::topics::{list_offsets, EARLIEST, LATEST};
use crate::http::HttpApi;
use crate::Broker;

/// Groups shown (and sampled for the lag charts) at most.
pub const MAX_GROUPS: usize = 1000;
/// Kafka's GROUP_AUTHORIZATION_FAILED.
const GROUP_DENIED: i16 = 30;

pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/console/groups", get(groups_list::page))
        .route("/console/groups/{group}", get(group_page::page))
        .route("/console/groups/{group}/reset", post(group_reset::reset))
        .route(
            "/console/groups/{group}/lag-chart",
            get(group_page::lag_fragment),
        )
}

/// Each group's total lag now, for the lag charts: over its committed partitions,
/// sum(max(0, high watermark − committed offset)). Read directly from the coordinator and the
/// logs (the sampler has no caller), for at most [`MAX_GROUPS`] classic and consumer groups;
/// share groups commit no offsets and are left out. Runs on a blocking thread.
pub fn total_lags(broker: &Broker) -> Vec<(String, i64)> {
    let Ok(groups) = broker.coordinator.list() else {
        return Vec::new();
    };
    let mut watermarks: HashMap<(String, i32), Option<i64>> = HashMap::new();
    let mut out = Vec::new();
    for g in groups
        .into_iter()
        .filter(|g| g.group_type != "share")
        .take(MAX_GROUPS)
    {
        let Ok(rows) = broker.coordinator.fetch_offsets(&g.id, None) else {
            continue;
        };
        let mut total = 0i64;
        for (topic, partition, committed) in rows {
            let Some(c) = committed.filter(|c| c.offset >= 0) else {
                continue;
            };
            let hw = *watermarks
                .entry((topic, partition))
                .or_insert_with_key(|(t, p)| {
                    let p = broker.topics.get(t)?.partition(*p)?;
                    Some(p.log.high_watermark())
                });
            if let Some(hw) = hw {
                total = total.saturating_add((hw - c.offset).max(0));
            }
        }
        out.push((g.id, total));
    }
    out
}

#[derive(Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

/// One group as ListGroups reports it.
struct Listed {
    id: String,
    protocol_type: String,
    state: String,
    group_type: String,
}

/// Every group the caller may describe, sorted by id (ListGroups v5).
async fn list_groups(caller: &Caller) -> Result<Vec<Listed>, PageError> {
    let response = expect_response!(
        caller
            .kafka(
                ApiKey::ListGroups,
                5,
                RequestKind::ListGroups(ListGroupsRequest::default())
            )
            .await?,
        ListGroups
    )?;
    if response.error_code != 0 {
        return Err(PageError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "listing the groups failed: {}",
                error_text(response.error_code, None)
            ),
        ));
    }
    let mut groups: Vec<Listed> = response
        .groups
        .into_iter()
        .map(|g| Listed {
            id: g.group_id.0.to_string(),
            protocol_type: g.protocol_type.to_string(),
            state: g.group_state.to_string(),
            group_type: g.group_type.to_string(),
        })
        .collect();
    groups.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(groups)
}

/// One committed partition as OffsetFetch answers it.
struct CommittedRow {
    topic: String,
    partition: i32,
    offset: i64,
    metadata: String,
    error: i16,
}

/// The committed offsets of `groups` (OffsetFetch v9, all topics, one request): per group,
/// its error code and its partitions sorted by topic and partition.
async fn committed(
    caller: &Caller,
    groups: &[String],
) -> Result<HashMap<String, (i16, Vec<CommittedRow>)>, PageError> {
    if groups.is_empty() {
        return Ok(HashMap::new());
    }
    let request = OffsetFetchRequest::default().with_groups(
        groups
            .iter()
            .map(|g| {
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(sb(g)))
                    .with_topics(None)
            })
            .collect(),
    );
    let response = expect_response!(
        caller
            .kafka(ApiKey::OffsetFetch, 9, RequestKind::OffsetFetch(request))
            .await?,
        OffsetFetch
    )?;
    Ok(response
        .groups
        .into_iter()
        .map(|g| {
            let mut rows: Vec<CommittedRow> = g
                .topics
                .into_iter()
                .flat_map(|t| {
                    let topic = t.name.0.to_string();
                    t.partitions.into_iter().map(move |p| CommittedRow {
                        topic: topic.clone(),
                        partition: p.partition_index,
                        offset: p.committed_offset,
                        metadata: p.metadata.as_deref().unwrap_or("").to_string(),
                        error: p.error_code,
                    })
                })
                .collect();
            rows.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
            (g.group_id.0.to_string(), (g.error_code, rows))
        })
        .collect())
}

/// `log end − committed`, never negative; `None` without a committed offset or a log end.
fn lag(committed: i64, log_end: Option<&Result<i64, i16>>) -> Option<i64> {
    match log_end {
        Some(Ok(end)) if committed >= 0 && *end >= 0 => Some((end - committed).max(0)),
        _ => None,
    }
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Kafka's name of an error code (`GROUP_AUTHORIZATION_FAILED`).
fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_ERROR_CODE_{c}"),
        Some(e) => {
            let camel = e.to_string();
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, c) in camel.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_uppercase());
            }
            out
        }
    }
}

/// An error as people read it: Kafka's name, and the message the response carried.
fn error_text(code: i16, message: Option<&str>) -> String {
    match message.filter(|m| !m.is_empty()) {
        Some(m) => format!("{}: {m}", error_name(code)),
        None => error_name(code),
    }
}

/// The refusal for a group the caller may not describe: the same words whether it exists.
fn denied(group: &str) -> PageError {
    PageError::forbidden(format!(
        "{}: you are not authorized to describe the consumer group \"{group}\"",
        error_name(GROUP_DENIED)
    ))
}

/// Is `state` one a group's offsets may be reset in (no active member)?
fn resettable(state: &str) -> bool {
    state.eq_ignore_ascii_case("empty") || state.eq_ignore_ascii_case("dead")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(30), "GROUP_AUTHORIZATION_FAILED");
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_text(68, Some("busy")), "NON_EMPTY_GROUP: busy");
        assert_eq!(lag(3, Some(&Ok(10))), Some(7));
        assert_eq!(lag(12, Some(&Ok(10))), Some(0));
        assert_eq!(lag(-1, Some(&Ok(10))), None);
        assert!(resettable("Empty") && resettable("Dead") && !resettable("Stable"));
    }
}
