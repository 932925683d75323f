//! `GET /v1/topics/{topic}/keys/{key}`: the latest value of one key of a compacted topic,
//! answered from the partition's key index (docs/key-index.md) with one batch read, so its
//! cost does not grow with the log. 200 with the record as JSON (the shape of a snapshot
//! line); 404 `key_not_found` when the key never existed or its latest record is a tombstone.
//!
//! Query: `partition=N` (otherwise computed from the key), `partitioner=` the client's
//! partitioner name (`murmur2`, the Java default, or `consistent_random`/`crc32` for
//! librdkafka's), `isolation=read_committed|read_uncommitted`, `key_encoding=text|base64`
//! for the key in the path, `encoding=text|base64` for the answer.
//!
//! Authorization: READ and DESCRIBE on the topic, checked before the topic is looked up so a
//! refusal says nothing about its existence.

use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use serde::Deserialize;

use super::errors::ApiError;
use super::key_segment::{decode_key, KeyEncoding};
use super::routes_tables::{EncodingParam, IsolationParam};
use super::{bad_path, bad_query, require_topic, HttpApi, Peer};
use crate::authz::AclOperation;
use crate::table_lookup::{LookupError, LookupRequest, Partitioner};
use crate::table_snapshot::Encoding;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LookupQuery {
    partition: Option<i32>,
    partitioner: Option<String>,
    #[serde(default)]
    isolation: IsolationParam,
    #[serde(default)]
    key_encoding: KeyEncoding,
    #[serde(default)]
    encoding: EncodingParam,
}

pub(super) async fn lookup(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<LookupQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    let Path((topic, key)) = path.map_err(bad_path)?;
    let Query(query) = query.map_err(bad_query)?;
    require_topic(
        &authz,
        &topic,
        &[AclOperation::Read, AclOperation::Describe],
    )?;
    let partitioner = match &query.partitioner {
        None => Partitioner::default(),
        Some(name) => name
            .parse::<Partitioner>()
            .map_err(|e| ApiError::bad_request("bad_query", e))?,
    };
    let request = LookupRequest {
        topic,
        partition: query.partition,
        key: Bytes::from(decode_key(&key, query.key_encoding)?),
        partitioner,
        read_committed: matches!(query.isolation, IsolationParam::ReadCommitted),
    };
    let encoding = Encoding::from(query.encoding);
    match api.broker.lookup_key_async(request).await {
        Ok(Some(hit)) => Ok(Json(hit.view(encoding)).into_response()),
        Ok(None) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "key_not_found",
            "the key has no live value (it was never written, or its latest record is a tombstone)",
        )),
        Err(e) => Err(e.into()),
    }
}

impl From<LookupError> for ApiError {
    fn from(e: LookupError) -> ApiError {
        let status =
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, e.kind(), e.to_string())
    }
}
