//! (being written)
use std::sync::Arc;
use axum::Router;
use crate::http::HttpApi;
pub fn routes() -> Router<Arc<HttpApi>> { Router::new() }
pub fn total_lags(_b: &crate::Broker) -> Vec<(String, i64)> { Vec::new() }
