//! `GET /metrics` on the HTTP API: the same Prometheus text as `metrics.listener`. Behind the
//! API's authentication when it is on, and, with an authorizer, DESCRIBE on the cluster
//! (the metrics name every topic and group).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::errors::ApiError;
use super::{HttpApi, Peer};
use crate::authz::AclOperation;
use crate::metrics::text::CONTENT_TYPE;

pub(super) async fn metrics(
    State(api): State<Arc<HttpApi>>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let authz = api.caller(&headers, &peer).await?;
    if !authz.allows_cluster(AclOperation::Describe) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cluster_authorization_failed",
            "not authorized to describe the cluster",
        ));
    }
    let broker = api.broker.clone();
    let text = tokio::task::spawn_blocking(move || crate::metrics::render::render(&broker))
        .await
        .map_err(|e| ApiError::internal(format!("metrics task failed: {e}")))?;
    let mut response = (StatusCode::OK, text).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}
