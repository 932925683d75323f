//! `GET /v1/topics/{topic}/snapshot`: a compacted topic as a table, streamed as NDJSON from
//! [`TableSnapshots`] (docs/snapshots.md). Errors found before the first byte (unknown topic,
//! not compacted, too many snapshots) are JSON errors; a failure in the middle aborts the
//! response, so the client sees a cut body without the final `end_offsets` line.
//!
//! Authorization: READ and DESCRIBE on the topic (what a consumer of the topic needs),
//! checked before the topic is looked up so a refusal says nothing about its existence.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use http_body::Frame;
use serde::Deserialize;
use skiff_cleaner::SnapshotError;

use super::errors::ApiError;
use super::{bad_path, bad_query, require_topic, HttpApi, Peer};
use crate::authz::AclOperation;
use crate::table_snapshot::{Encoding, Isolation, SnapshotRequest, SnapshotStream};

/// NDJSON's media type.
const NDJSON: &str = "application/x-ndjson";
/// Response header with the snapshot's end offsets, `partition=offset` comma-separated.
const END_OFFSETS: &str = "skiff-end-offsets";

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum IsolationParam {
    #[default]
    ReadCommitted,
    ReadUncommitted,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum EncodingParam {
    #[default]
    Text,
    Base64,
}

impl From<EncodingParam> for Encoding {
    fn from(e: EncodingParam) -> Encoding {
        match e {
            EncodingParam::Text => Encoding::Text,
            EncodingParam::Base64 => Encoding::Base64,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotQuery {
    #[serde(default)]
    isolation: IsolationParam,
    #[serde(default)]
    encoding: EncodingParam,
}

pub(super) async fn snapshot(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<SnapshotQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    let Path(topic) = path.map_err(bad_path)?;
    let Query(query) = query.map_err(bad_query)?;
    require_topic(
        &authz,
        &topic,
        &[AclOperation::Read, AclOperation::Describe],
    )?;
    let request = SnapshotRequest {
        topic,
        isolation: match query.isolation {
            IsolationParam::ReadCommitted => Isolation::ReadCommitted,
            IsolationParam::ReadUncommitted => Isolation::ReadUncommitted,
        },
        encoding: query.encoding.into(),
    };
    let stream = api.snapshots.start(&api.broker, request)?;
    // The end offsets are fixed once the partitions are pinned: a client may read them
    // before the body (the body's last line repeats them and marks it complete).
    let end_offsets = stream
        .end_offsets
        .iter()
        .map(|(p, e)| format!("{p}={e}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut response = (StatusCode::OK, Body::new(SnapshotBody(stream))).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(NDJSON));
    if let Ok(v) = HeaderValue::from_str(&end_offsets) {
        headers.insert(END_OFFSETS, v);
    }
    Ok(response)
}

/// The snapshot's chunks as a response body. Dropping it (client gone) cancels the scan.
struct SnapshotBody(SnapshotStream);

impl http_body::Body for SnapshotBody {
    type Data = Bytes;
    type Error = SnapshotError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, SnapshotError>>> {
        self.0
            .poll_chunk(cx)
            .map(|c| c.map(|chunk| chunk.map(Frame::data)))
    }
}
