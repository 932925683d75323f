//! `GET /metrics`: the Prometheus text, on two listeners with one handler.
//! - `metrics.listener` ([`metrics_router`]): `/metrics` only, no authentication, as a
//!   Prometheus scrape target expects.
//! - the HTTP API: behind its authentication when it is on, and, with an authorizer,
//!   DESCRIBE on the cluster (the metrics name every topic and group).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};

use super::errors::ApiError;
use super::{HttpApi, Peer};
use crate::authz::AclOperation;
use crate::metrics::text::CONTENT_TYPE;
use crate::Broker;

/// The router of `metrics.listener`: `GET /metrics`, 404 elsewhere, 405 for other methods.
pub fn metrics_router(broker: Arc<Broker>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(b): State<Arc<Broker>>| async move { render(b).await }),
        )
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "not found; metrics are at /metrics",
            )
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "only GET is allowed",
            )
        })
        .with_state(broker)
}

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
    render(api.broker.clone()).await
}

/// Renders on a blocking thread (it walks every partition).
async fn render(broker: Arc<Broker>) -> Result<Response, ApiError> {
    let text = tokio::task::spawn_blocking(move || crate::metrics::render::render(&broker))
        .await
        .map_err(|e| ApiError::internal(format!("metrics task failed: {e}")))?;
    let mut response = (StatusCode::OK, text).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}
