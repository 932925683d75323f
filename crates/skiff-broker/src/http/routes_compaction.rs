//! The compaction controls (docs/compaction.md §5.9) over HTTP:
//! - `GET /v1/topics/{topic}/compaction/dry-run[?partition=N]`: DESCRIBE on the topic;
//! - `POST /v1/topics/{topic}/compaction[?partition=N]`: ALTER on the topic (Kafka asks ALTER
//!   for CreatePartitions, the other request that changes a topic's log layout without
//!   changing its configs or data); answers 202 with the tickets;
//! - `GET /v1/compaction/tickets/{id}`: DESCRIBE on the ticket's topic.
//!
//! Topic permissions are checked before the topic is looked up, so a refusal is the same for
//! a topic that exists and one that does not. A dry run reads segments: blocking thread.

use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::errors::ApiError;
use super::{bad_path, bad_query, require_topic, HttpApi, Peer};
use crate::authz::AclOperation;
use crate::compaction::Ticket;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PartitionQuery {
    partition: Option<i32>,
}

/// The URL of a ticket, for `Location` and the body.
pub fn ticket_url(id: u64) -> String {
    format!("/v1/compaction/tickets/{id}")
}

#[derive(Serialize)]
struct TicketWithUrl {
    #[serde(flatten)]
    ticket: Ticket,
    url: String,
}

pub(super) async fn dry_run(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<PartitionQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    let Path(topic) = path.map_err(bad_path)?;
    let Query(query) = query.map_err(bad_query)?;
    require_topic(&authz, &topic, &[AclOperation::Describe])?;
    let broker = api.broker.clone();
    let name = topic.clone();
    let runs =
        tokio::task::spawn_blocking(move || broker.compaction_dry_run(&name, query.partition))
            .await
            .map_err(|e| ApiError::internal(format!("dry run task failed: {e}")))??;
    Ok(Json(json!({"topic": topic, "partitions": runs})).into_response())
}

pub(super) async fn compact_now(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<PartitionQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    let Path(topic) = path.map_err(bad_path)?;
    let Query(query) = query.map_err(bad_query)?;
    require_topic(&authz, &topic, &[AclOperation::Alter])?;
    let tickets = api.broker.compact_now(&topic, query.partition)?;
    let location = match tickets.as_slice() {
        [only] => HeaderValue::from_str(&ticket_url(only.id)).ok(),
        _ => None,
    };
    let tickets: Vec<TicketWithUrl> = tickets
        .into_iter()
        .map(|t| TicketWithUrl {
            url: ticket_url(t.id),
            ticket: t,
        })
        .collect();
    let mut response = (
        StatusCode::ACCEPTED,
        Json(json!({"topic": topic, "tickets": tickets})),
    )
        .into_response();
    if let Some(l) = location {
        response.headers_mut().insert(header::LOCATION, l);
    }
    Ok(response)
}

pub(super) async fn ticket(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    let Path(id) = path.map_err(bad_path)?;
    let id: u64 = id.parse().map_err(|_| {
        ApiError::bad_request("bad_ticket_id", format!("ticket id {id:?} is not a number"))
    })?;
    let ticket = api.broker.compaction_ticket(id)?;
    require_topic(&authz, &ticket.topic, &[AclOperation::Describe])?;
    Ok(Json(TicketWithUrl {
        url: ticket_url(ticket.id),
        ticket,
    })
    .into_response())
}
