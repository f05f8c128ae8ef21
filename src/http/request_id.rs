//! `X-Request-Id` on every response, errors included. The rest of the stack runs inside
//! [`error::with_request_id`], so `requestId` in a JSON error always matches the header.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::ResponseError;

use crate::error::{self, ApiError};

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

fn new_request_id() -> String {
    format!("req_{}", uuid::Uuid::now_v7().simple())
}

/// Middleware: assigns the id, runs the rest of the stack inside its scope, stamps the header,
/// and gives bare framework errors (an unsupported method) the documented JSON body.
pub async fn assign(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let id = new_request_id();
    let result = error::with_request_id(id.clone(), async move {
        if let Some(refusal) = refuse_nul(&req) {
            let response = req.into_response(refusal.error_response());
            if super::openai_audio::is_openai_path(response.request().path()) {
                return Ok(super::openai_audio::reshape_error(response).await);
            }
            return Ok(response);
        }
        let openai = super::openai_audio::is_openai_path(req.path());
        let response = with_json_error_body(next.call(req).await?.map_into_boxed_body());
        if openai {
            return Ok(super::openai_audio::reshape_error(response).await);
        }
        Ok::<_, actix_web::Error>(response)
    })
    .await;
    let mut response = result?;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    Ok(response)
}

/// No identifier or parameter may hold a NUL character (PostgreSQL text cannot store one):
/// such a path names nothing, such a query is malformed.
fn refuse_nul(req: &ServiceRequest) -> Option<ApiError> {
    if req.path().contains("%00") {
        return Some(ApiError::NotFound(format!("no resource at {}", req.path())));
    }
    let tainted = req
        .query_string()
        .split('&')
        .find(|pair| pair.contains("%00"));
    if let Some(pair) = tainted {
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        return Some(ApiError::invalid(
            name,
            format!("{name} must not contain NUL characters"),
        ));
    }
    None
}

fn with_json_error_body(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if status != StatusCode::METHOD_NOT_ALLOWED || response.headers().contains_key(CONTENT_TYPE) {
        return response;
    }
    let error = ApiError::MethodNotAllowed(format!(
        "{} is not allowed on {}",
        response.request().method(),
        response.request().path()
    ));
    let (request, _) = response.into_parts();
    ServiceResponse::new(request, error.error_response())
}
