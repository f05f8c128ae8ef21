//! The one error type of the HTTP API and its mapping to a status and the JSON error body
//! `{"error": {"code", "message", "param", "requestId"}}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use switchboard_actors::engine::{EngineError, EngineErrorKind};

use crate::fetch::FetchError;
use crate::media::MediaError;
use crate::speech::SpeechError;
use crate::store::StoreError;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// Runs `fut` as the handling of request `id`: errors built inside carry it as `requestId`.
pub async fn with_request_id<F: std::future::Future>(id: String, fut: F) -> F::Output {
    REQUEST_ID.scope(id, fut).await
}

/// The id of the request being handled on this task, if any.
pub fn current_request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// Everything a request can fail with, as the client sees it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    Validation {
        message: String,
        param: Option<String>,
    },
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    InsufficientCredits(String),
    /// The API key's request rate is over its limit (sent with X-RateLimit-* and Retry-After).
    #[error("{message}")]
    RateLimited {
        message: String,
        limit: u32,
        retry_after_seconds: u64,
    },
    /// The developer already runs as many real-time sessions as the tier allows.
    #[error("{0}")]
    SessionLimit(String),
    /// The payment processor is not configured on this server.
    #[error("{0}")]
    BillingNotConfigured(String),
    /// A callback whose signature does not prove it came from the party it claims.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The request body did not arrive in time (`[server]` `body_read_timeout_seconds`).
    #[error("{0}")]
    RequestTimeout(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Upstream(String),
    #[error("{0}")]
    Unavailable(String),
    /// The server is shutting down and admits no new real-time session (sent with
    /// Retry-After; another node behind the load balancer takes it).
    #[error("{0}")]
    Draining(String),
    /// An embedded engine's model or library is not installed or failed to load.
    #[error("{0}")]
    EngineUnavailable(String),
    /// The inference queue is full; the client should retry shortly (sent with Retry-After).
    #[error("{0}")]
    Overloaded(String),
    /// The request names a vendor no key is configured for.
    #[error("{0}")]
    ProviderNotConfigured(String),
    /// Details are logged, never sent: the client sees a generic message and the request id.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// A validation failure on one request field.
    pub fn invalid(param: &str, message: impl Into<String>) -> ApiError {
        ApiError::Validation {
            message: message.into(),
            param: Some(param.to_string()),
        }
    }

    /// A validation failure that concerns the request as a whole.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::Validation {
            message: message.into(),
            param: None,
        }
    }

    pub fn not_found(what: &str, id: &str) -> ApiError {
        ApiError::NotFound(format!("{what} '{id}' was not found"))
    }

    /// The machine-readable code of the error body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation { .. } => "validation_error",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::InsufficientCredits(_) => "insufficient_credits",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::SessionLimit(_) => "session_limit_exceeded",
            ApiError::BillingNotConfigured(_) => "billing_not_configured",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::RequestTimeout(_) => "request_timeout",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::Upstream(_) => "upstream_error",
            ApiError::Unavailable(_) | ApiError::Overloaded(_) => "unavailable",
            ApiError::Draining(_) => "draining",
            ApiError::EngineUnavailable(_) => "engine_unavailable",
            ApiError::ProviderNotConfigured(_) => "provider_not_configured",
            ApiError::Internal(_) => "internal_error",
        }
    }

    fn public_message(&self) -> String {
        match self {
            ApiError::Internal(_) => "the server failed to handle this request".to_string(),
            other => other.to_string(),
        }
    }
}

/// The error body, as documented in the README and `/openapi.json`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `validation_error`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// The request's `X-Request-Id`.
    pub request_id: String,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Validation { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::InsufficientCredits(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::RateLimited { .. } | ApiError::SessionLimit(_) => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::BillingNotConfigured(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Unavailable(_)
            | ApiError::EngineUnavailable(_)
            | ApiError::Overloaded(_)
            | ApiError::Draining(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::ProviderNotConfigured(_) => StatusCode::BAD_REQUEST,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let request_id = current_request_id().unwrap_or_default();
        if let ApiError::Internal(detail) = self {
            tracing::error!(request_id = %request_id, "{detail}");
        }
        let param = match self {
            ApiError::Validation { param, .. } => param.clone(),
            _ => None,
        };
        let mut response = HttpResponse::build(self.status_code());
        if let ApiError::Unauthorized(_) = self {
            response.insert_header(("WWW-Authenticate", "Bearer"));
        }
        if let ApiError::Overloaded(_) | ApiError::Draining(_) = self {
            response.insert_header(("Retry-After", "1"));
        }
        if let ApiError::RateLimited {
            limit,
            retry_after_seconds,
            ..
        } = self
        {
            response.insert_header(("X-RateLimit-Limit", limit.to_string()));
            response.insert_header(("X-RateLimit-Remaining", "0"));
            response.insert_header(("Retry-After", retry_after_seconds.to_string()));
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code().to_string(),
                message: self.public_message(),
                param,
                request_id,
            },
        })
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> ApiError {
        match err {
            StoreError::Conflict(message) => ApiError::Conflict(message),
            StoreError::Unavailable(message) => {
                ApiError::Unavailable(format!("storage is unavailable: {message}"))
            }
            StoreError::Query(message) => ApiError::Internal(message),
            StoreError::Refused(message) => ApiError::bad_request(message),
        }
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(err: actix::MailboxError) -> ApiError {
        ApiError::Unavailable(format!("a registry did not answer: {err}"))
    }
}

impl From<EngineError> for ApiError {
    fn from(err: EngineError) -> ApiError {
        match err.kind {
            EngineErrorKind::InvalidInput => match err.param {
                Some(param) => ApiError::invalid(param, err.message),
                None => ApiError::bad_request(err.message),
            },
            EngineErrorKind::Unavailable => ApiError::EngineUnavailable(err.message),
            EngineErrorKind::Overloaded => ApiError::Overloaded(err.message),
            EngineErrorKind::Timeout => ApiError::Unavailable(err.message),
            EngineErrorKind::Upstream => ApiError::Upstream(err.message),
            EngineErrorKind::Internal => ApiError::Internal(err.message),
        }
    }
}

impl From<MediaError> for ApiError {
    fn from(err: MediaError) -> ApiError {
        match err {
            MediaError::Unsupported(_) => ApiError::UnsupportedMediaType(err.to_string()),
            MediaError::Corrupt(_) | MediaError::Implausible(_) => {
                ApiError::invalid("file", err.to_string())
            }
            MediaError::TooLong => ApiError::PayloadTooLarge(err.to_string()),
            MediaError::Encode(_) => ApiError::Internal(err.to_string()),
        }
    }
}

impl From<SpeechError> for ApiError {
    fn from(err: SpeechError) -> ApiError {
        match err {
            SpeechError::Media(e) => e.into(),
            SpeechError::Engine(e) => e.into(),
        }
    }
}

impl From<FetchError> for ApiError {
    fn from(err: FetchError) -> ApiError {
        match err {
            FetchError::InvalidUrl(_) | FetchError::Forbidden(_) => {
                ApiError::invalid("audioUrl", err.to_string())
            }
            FetchError::TooLarge(_) => ApiError::PayloadTooLarge(err.to_string()),
            FetchError::Failed(_) => ApiError::invalid("audioUrl", err.to_string()),
        }
    }
}
