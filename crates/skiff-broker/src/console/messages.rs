//! (being written)
use std::sync::Arc;
use axum::Router;
use crate::http::HttpApi;
pub fn routes() -> Router<Arc<HttpApi>> { Router::new() }
