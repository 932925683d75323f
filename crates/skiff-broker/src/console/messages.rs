//! (being written)
use crate::http::HttpApi;
use axum::Router;
use std::sync::Arc;
pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
}
