//! The HTTP API's routes. A new route is one `.route` line here and a `routes_*` module;
//! unknown paths and methods answer the API's JSON error.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

use super::errors::ApiError;
use super::{routes_compaction, routes_lookup, routes_metrics, routes_tables, HttpApi};

/// Largest request body accepted. No route reads a body today; the bound keeps one from
/// being buffered by a future extractor without thought.
pub const MAX_BODY: usize = 64 * 1024;

/// The router over `api`.
pub fn router(api: Arc<HttpApi>) -> Router {
    let console = if api.console.is_some() {
        crate::console::routes()
    } else {
        Router::new()
    };
    Router::new()
        .merge(console)
        .route("/metrics", get(routes_metrics::metrics))
        .route("/v1/topics/{topic}/snapshot", get(routes_tables::snapshot))
        .route("/v1/topics/{topic}/keys/{key}", get(routes_lookup::lookup))
        .route(
            "/v1/topics/{topic}/compaction/dry-run",
            get(routes_compaction::dry_run),
        )
        .route(
            "/v1/topics/{topic}/compaction",
            post(routes_compaction::compact_now),
        )
        .route(
            "/v1/compaction/tickets/{id}",
            get(routes_compaction::ticket),
        )
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed on this route",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(api)
}
