//! (being written)
use crate::http::HttpApi;
use axum::Router;
use std::sync::Arc;
pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
}
pub fn total_lags(_b: &crate::Broker) -> Vec<(String, i64)> {
    Vec::new()
}
