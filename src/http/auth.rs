//! API-key authentication, rate limiting and the usage headers for every `/v1` route: the
//! bearer key is checked by the key registry, the request is admitted (per-key rate limit)
//! and counted by the metering registry (both answer from memory), and the response carries
//! `X-Usage-*` and `X-RateLimit-*`.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest, HttpResponseBuilder, ResponseError};

use crate::app::AppState;
use crate::billing::pricing::format_credits;
use crate::error::ApiError;
use crate::ids::{DeveloperId, KeyId};
use crate::providers::Chosen;
use crate::registry::keys::{hash_key, CheckKey, KeyCheck, Principal};
use crate::registry::metering::{Admit, CurrentUsage, UsageSnapshot};

pub const USAGE_CURRENT: HeaderName = HeaderName::from_static("x-usage-current");
pub const USAGE_LIMIT: HeaderName = HeaderName::from_static("x-usage-limit");
pub const USAGE_REMAINING: HeaderName = HeaderName::from_static("x-usage-remaining");
pub const USAGE_BYPASSED: HeaderName = HeaderName::from_static("x-usage-bypassed");
pub const PROVIDER_USED: HeaderName = HeaderName::from_static("x-provider-used");
/// `X-Provider-Used` of a response no engine served (a list, a key, an error before any
/// engine ran).
pub const NO_PROVIDER: &str = "none";
pub const RATE_LIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const RATE_LIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");

/// Middleware for the `/v1` scope.
pub async fn require_api_key(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .expect("AppState is registered on the app")
        .clone();
    let principal = match authenticate(&state, req.headers()).await {
        Ok(principal) => principal,
        Err(err) => return Ok(req.into_response(err.error_response())),
    };
    req.extensions_mut().insert(principal.clone());
    let admission = state
        .metering()
        .send(Admit {
            developer_id: principal.developer_id.clone(),
            key_id: principal.key_id.to_string(),
        })
        .await
        .map_err(ApiError::from)
        .and_then(|admitted| admitted);
    let admission = match admission {
        Ok(admission) => admission,
        Err(err) => return Ok(req.into_response(err.error_response())),
    };
    if !admission.rate.allowed {
        let refused = ApiError::RateLimited {
            message: format!(
                "this API key made more than {} requests in {} seconds; retry in {} s",
                admission.rate.limit,
                state.config().rate_limit.window_seconds,
                admission.rate.retry_after_seconds
            ),
            limit: admission.rate.limit,
            retry_after_seconds: admission.rate.retry_after_seconds,
        };
        let mut response = req.into_response(refused.error_response());
        set_usage_headers(response.headers_mut(), &admission.usage);
        name_no_provider(response.headers_mut());
        return Ok(response);
    }
    let mut response = next.call(req).await?.map_into_boxed_body();
    // After the handler: its charges are in (the registry handles messages in order).
    let usage = state
        .metering()
        .send(CurrentUsage {
            developer_id: principal.developer_id,
        })
        .await
        .ok()
        .flatten()
        .unwrap_or(admission.usage);
    let headers = response.headers_mut();
    set_usage_headers(headers, &usage);
    name_no_provider(headers);
    headers.insert(RATE_LIMIT_LIMIT, HeaderValue::from(admission.rate.limit));
    headers.insert(
        RATE_LIMIT_REMAINING,
        HeaderValue::from(admission.rate.remaining),
    );
    Ok(response)
}

/// The credentials of an `Authorization: Bearer <credentials>` header; the scheme's name is
/// case-insensitive (RFC 9110 §11.1).
pub fn bearer_credentials(header: &HeaderValue) -> Option<&str> {
    let (scheme, key) = header.to_str().ok()?.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}

pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let header = headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::Unauthorized(
            "missing API key: send the header `Authorization: Bearer <API key>`".into(),
        )
    })?;
    let raw = bearer_credentials(header).ok_or_else(|| {
        ApiError::Unauthorized("malformed Authorization header: expected `Bearer <API key>`".into())
    })?;
    if !raw.starts_with(&state.config().auth.key_prefix) {
        return Err(ApiError::Unauthorized("invalid API key".into()));
    }
    let check = state
        .keys()
        .send(CheckKey {
            hash: hash_key(raw),
        })
        .await??;
    match check {
        KeyCheck::Valid(principal) => Ok(principal),
        KeyCheck::Unknown => Err(ApiError::Unauthorized("invalid API key".into())),
        KeyCheck::Revoked => Err(ApiError::Unauthorized(
            "this API key has been revoked".into(),
        )),
        KeyCheck::Expired => Err(ApiError::Unauthorized("this API key has expired".into())),
    }
}

pub fn set_usage_headers(headers: &mut HeaderMap, usage: &UsageSnapshot) {
    let number = |value: f64| {
        HeaderValue::from_str(&format_credits(value)).expect("a number is a valid header value")
    };
    headers.insert(USAGE_CURRENT, number(usage.used));
    headers.insert(USAGE_LIMIT, number(usage.limit));
    headers.insert(USAGE_REMAINING, number(usage.remaining));
    if !headers.contains_key(USAGE_BYPASSED) {
        headers.insert(USAGE_BYPASSED, HeaderValue::from_static("false"));
    }
}

/// `X-Provider-Used: none` on an authenticated response whose handler named no provider:
/// the header is on every authenticated response, and says so when no engine ran.
fn name_no_provider(headers: &mut HeaderMap) {
    if !headers.contains_key(PROVIDER_USED) {
        headers.insert(PROVIDER_USED, HeaderValue::from_static(NO_PROVIDER));
    }
}

/// Extractor: the authenticated developer of a `/v1` request.
#[derive(Debug, Clone)]
pub struct Developer(pub Principal);

/// The `key_id` of the principal a portal session hands the `/v1` handlers: no API key.
pub const PORTAL_KEY_ID: &str = "portal";

impl Developer {
    pub fn id(&self) -> &DeveloperId {
        &self.0.developer_id
    }

    /// The API key the request came with; `None` for a signed-in portal session, which has
    /// none to revoke.
    pub fn api_key_id(&self) -> Option<&KeyId> {
        (self.0.key_id != PORTAL_KEY_ID).then_some(&self.0.key_id)
    }
}

impl FromRequest for Developer {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Developer, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(
            req.extensions()
                .get::<Principal>()
                .cloned()
                .map(Developer)
                .ok_or_else(|| ApiError::Unauthorized("missing API key".into())),
        )
    }
}

/// Sets `X-Provider-Used` (the provider that served `chosen`'s request), and
/// `X-Usage-Bypassed: true` when the caller's own key paid.
pub fn tag_provider<E: ?Sized>(chosen: &Chosen<E>, response: &mut HttpResponseBuilder) {
    response.insert_header((PROVIDER_USED, chosen.served().0));
    if chosen.bypasses_metering() {
        response.insert_header((USAGE_BYPASSED, "true"));
    }
}
