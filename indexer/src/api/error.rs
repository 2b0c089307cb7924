//! API errors: `{"error", "detail"}` with 400/401/403/404/409/429/503
//! (PROTOCOL.md §9), never a key or a stack trace.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Short machine-readable code.
    pub error: &'static str,
    /// What went wrong and how to fix it.
    pub detail: String,
}

impl ApiError {
    /// 400.
    pub fn bad(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", detail)
    }
    /// 401.
    pub fn unauthorized(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }
    /// 403.
    pub fn forbidden(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }
    /// 404.
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", detail)
    }
    /// 409.
    pub fn conflict(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", detail)
    }
    /// 503.
    pub fn unavailable(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", detail)
    }
    /// 500: the server's own failure, not the request's.
    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", detail)
    }
    /// Any status.
    pub fn new(status: StatusCode, error: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error,
            detail: detail.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": self.error, "detail": self.detail})),
        )
            .into_response()
    }
}

fn auth_err(code: &'static str, e: crate::auth::AuthError) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, code, e.to_string())
}

impl From<crate::auth::AuthError> for ApiError {
    fn from(e: crate::auth::AuthError) -> ApiError {
        use crate::auth::AuthError::*;
        match e {
            BadRequest(d) => ApiError::bad(d),
            Store(s) => ApiError::unavailable(s.to_string()),
            UnknownNonce => auth_err("unknown_nonce", e),
            ExpiredNonce => auth_err("expired_nonce", e),
            WrongPubkey => auth_err("wrong_pubkey", e),
            BadSignature => auth_err("bad_signature", e),
            NoSession => auth_err("no_session", e),
            TooManyChallenges { .. } | ChallengesFull { .. } => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_challenges",
                e.to_string(),
            ),
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        ApiError::unavailable(e.to_string())
    }
}

impl From<crate::ingest::IngestError> for ApiError {
    fn from(e: crate::ingest::IngestError) -> ApiError {
        match e {
            crate::ingest::IngestError::Unwatched(_) => ApiError::bad(e.to_string()),
            crate::ingest::IngestError::NamedBuyPending(_) => ApiError::unavailable(e.to_string()),
            e => ApiError::unavailable(format!("chain or gateway unavailable: {e}")),
        }
    }
}
