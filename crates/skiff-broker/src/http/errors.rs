//! The HTTP API's one error shape: `{"error":{"code":"…","message":"…"}}` with its status.
//! Every route failure becomes an [`ApiError`]; the `code` values are stable names a client
//! may match on (docs/http-api.md lists them), the message is for people.
//!
//! Plain values; safe from any thread.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::compaction::CompactionError;
use crate::table_snapshot::SnapshotStartError;

/// A failed request: status, stable code, message, and for 401 the challenge to send.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// `WWW-Authenticate` value of a 401.
    pub challenge: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            challenge: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A 401 with the challenge listing the schemes the listener accepts.
    pub fn unauthenticated(challenge: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            challenge: Some(challenge),
            ..ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
        }
    }

    /// The refusal for a topic the caller may not use. The same text whether or not the
    /// topic exists, so a refusal reveals nothing about it.
    pub fn topic_denied() -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "topic_authorization_failed",
            "not authorized to access this topic",
        )
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(c) = self.challenge {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        response
    }
}

impl From<SnapshotStartError> for ApiError {
    fn from(e: SnapshotStartError) -> ApiError {
        let (status, code) = match &e {
            SnapshotStartError::UnknownTopic(_) => (StatusCode::NOT_FOUND, "unknown_topic"),
            SnapshotStartError::NotCompacted(_) => (StatusCode::CONFLICT, "not_compacted"),
            // 429: the limit is on concurrent snapshots, so the client should retry later.
            SnapshotStartError::Busy(_) => (StatusCode::TOO_MANY_REQUESTS, "busy"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<CompactionError> for ApiError {
    fn from(e: CompactionError) -> ApiError {
        let status = match &e {
            CompactionError::UnknownTopicOrPartition(_) | CompactionError::UnknownTicket(_) => {
                StatusCode::NOT_FOUND
            }
            CompactionError::NotCompacted(_) => StatusCode::CONFLICT,
            CompactionError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            CompactionError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.kind(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn body_is_the_documented_shape() {
        let r =
            ApiError::unauthenticated("Basic realm=\"skiff\"", "no credentials").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers().get(header::WWW_AUTHENTICATE).unwrap(),
            "Basic realm=\"skiff\""
        );
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], "unauthenticated");
        assert_eq!(v["error"]["message"], "no credentials");
    }
}
