//! The developer portal under `/portal/`: its pages (a small plain-JS app embedded from
//! `portal/`), sign-in with a phone code, the session cookie, and its JSON under
//! `/portal/api/`.
//!
//! The portal never looks at `Authorization`: an API key grants nothing here, and the portal's
//! cookie grants nothing on `/v1` (whose middleware reads only the bearer key; the cookie's
//! path is `/portal` besides). The JSON routes for keys, usage and billing, agents,
//! collections, sessions, recordings, browser session tokens and the audio model catalog are
//! the `/v1` handlers themselves, mounted under
//! `/portal/api` behind [`require_session`], which hands them the signed-in developer: the
//! same validation, the same answers, and key changes take effect on every node exactly as
//! through `/v1`. Every state-changing request carries the session's CSRF token in
//! `X-CSRF-Token` and, from a browser, a same-origin `Origin`.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::Method;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse, ResponseError};
use rust_embed::RustEmbed;
use serde::Deserialize;
use serde_json::json;

use super::auth::PORTAL_KEY_ID;
use super::body::ApiJson;
use super::methods;
use crate::app::AppState;
use crate::error::ApiError;
use crate::portal::{normalise_phone, rate_limit_address, ActiveSession, Linked};
use crate::registry::keys::{hash_key, CheckKey, KeyCheck, Principal};
use crate::time::iso;

/// The session cookie's name.
pub const COOKIE: &str = "sb_portal";
/// The device cookie: set at sign-in, bound to the number; a code request carrying it is not
/// held back by the number-wide limit. It grants nothing else.
pub const DEVICE_COOKIE: &str = "sb_portal_device";
/// How long a browser stays known to its number after signing in (Chromium's cap on cookies).
const DEVICE_COOKIE_DAYS: i64 = 400;
/// The header state-changing portal requests carry the session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The portal's pages, scripts and styles, embedded at compile time.
#[derive(RustEmbed)]
#[folder = "portal/"]
struct Assets;

/// The pages run only their own script and style and talk only to this server.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self' data:; media-src 'self'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// Pages of the signed-in app (one HTML shell; the script renders the view by path).
const APP_PAGES: [&str; 9] = [
    "/portal",
    "/portal/",
    "/portal/keys",
    "/portal/usage",
    "/portal/agents",
    "/portal/agents/new",
    "/portal/agents/{id}",
    "/portal/sessions",
    "/portal/sessions/{id}",
];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/portal/api/sign-in/code")
            .route(web::post().to(request_code))
            .default_service(web::to(methods::method_not_allowed)),
    )
    .service(
        web::resource("/portal/api/sign-in/verify")
            .route(web::post().to(verify))
            .default_service(web::to(methods::method_not_allowed)),
    )
    .service(
        web::resource("/portal/sign-in")
            .route(web::get().to(sign_in_page))
            .route(web::head().to(sign_in_page))
            .default_service(web::to(methods::method_not_allowed)),
    )
    .service(
        web::resource("/portal/assets/{file:.+}")
            .route(web::get().to(asset))
            .route(web::head().to(asset))
            .default_service(web::to(methods::method_not_allowed)),
    )
    .service(
        web::resource(APP_PAGES.to_vec())
            .route(web::get().to(app_page))
            .route(web::head().to(app_page))
            .default_service(web::to(methods::method_not_allowed)),
    )
    .service(
        web::scope("/portal/api")
            .wrap(from_fn(require_session))
            .service(
                web::resource("/session")
                    .route(web::get().to(session_info))
                    .default_service(web::to(methods::method_not_allowed)),
            )
            .service(
                web::resource("/sign-out")
                    .route(web::post().to(sign_out))
                    .default_service(web::to(methods::method_not_allowed)),
            )
            .service(
                web::resource("/account/link")
                    .route(web::post().to(link_account))
                    .default_service(web::to(methods::method_not_allowed)),
            )
            .configure(super::keys::routes)
            .configure(super::billing::routes)
            .configure(super::agents::routes)
            .configure(super::direct::routes)
            .configure(super::openai_audio::catalog_routes)
            .configure(super::collections::routes)
            .configure(super::observability::routes)
            .configure(super::recordings::routes)
            .default_service(web::to(methods::not_found)),
    );
}

/// The session a request's cookie names, if it is live.
async fn session_of(
    state: &AppState,
    req: &HttpRequest,
) -> Result<Option<ActiveSession>, ApiError> {
    match req.cookie(COOKIE) {
        Some(cookie) => state.portal().session(cookie.value()).await,
        None => Ok(None),
    }
}

/// Refuses a request a browser sent from another site: `Sec-Fetch-Site` other than
/// same-origin, or an `Origin` other than this server's.
fn same_origin(state: &AppState, req: &HttpRequest) -> Result<(), ApiError> {
    let value = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{0}").to_string())
    };
    if let Some(site) = value("sec-fetch-site") {
        if site != "same-origin" && site != "none" {
            return Err(ApiError::Forbidden(format!(
                "portal requests must come from the portal's own pages (Sec-Fetch-Site: {site})"
            )));
        }
    }
    if let Some(origin) = value("origin") {
        let expected = state.public_base(req);
        if !origin.eq_ignore_ascii_case(&expected) {
            return Err(ApiError::Forbidden(format!(
                "portal requests must come from {expected}, not from origin {origin}"
            )));
        }
    }
    Ok(())
}

/// Unauthenticated portal JSON: 401 without the `WWW-Authenticate: Bearer` challenge, since
/// no bearer key is accepted here.
fn signed_out_response() -> HttpResponse {
    let mut response = ApiError::Unauthorized(
        "sign in to the portal first (API keys are not accepted here)".into(),
    )
    .error_response();
    response.headers_mut().remove(header::WWW_AUTHENTICATE);
    response
}

/// Middleware of `/portal/api`: a live session is required, and state-changing requests need
/// the session's CSRF token and a same-origin request. The signed-in developer is handed to
/// the handlers as the `Principal` the `/v1` handlers read.
pub async fn require_session(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .expect("AppState is registered on the app")
        .clone();
    let session = match session_of(&state, req.request()).await {
        Ok(Some(session)) => session,
        Ok(None) => return Ok(req.into_response(signed_out_response())),
        Err(err) => return Ok(req.into_response(err.error_response())),
    };
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        let token = req
            .headers()
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let refused = if token.is_empty() {
            Some(ApiError::Forbidden(format!(
                "missing CSRF token: send the session's csrfToken in {CSRF_HEADER}"
            )))
        } else if !state.portal().csrf_matches(&session.id_hash, token) {
            Some(ApiError::Forbidden("wrong CSRF token".into()))
        } else {
            same_origin(&state, req.request()).err()
        };
        if let Some(refused) = refused {
            return Ok(req.into_response(refused.error_response()));
        }
    }
    req.extensions_mut().insert(Principal {
        developer_id: session.developer_id.clone(),
        key_id: PORTAL_KEY_ID.into(),
    });
    req.extensions_mut().insert(session);
    let mut response = next.call(req).await?.map_into_boxed_body();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The client address the rate limits count: the peer, or the first `X-Forwarded-For` entry
/// when the deployment says a proxy sets it; an IPv6 address by its /64.
fn client_ip(state: &AppState, req: &HttpRequest) -> String {
    rate_limit_address(&peer_or_forwarded(state, req))
}

fn peer_or_forwarded(state: &AppState, req: &HttpRequest) -> String {
    if state.config().portal.trust_forwarded_for {
        let forwarded = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .and_then(|v| v.parse::<std::net::IpAddr>().ok());
        if let Some(ip) = forwarded {
            return ip.to_string();
        }
    }
    req.peer_addr()
        .map_or_else(|| "unknown".to_string(), |addr| addr.ip().to_string())
}

fn phone_of(value: &str) -> Result<String, ApiError> {
    normalise_phone(value).ok_or_else(|| {
        ApiError::invalid(
            "phone",
            "phone must be an E.164 number: + and country code, 8-15 digits (e.g. +14155550100)",
        )
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeRequest {
    pub phone: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyRequest {
    pub phone: String,
    pub code: String,
    /// The `challengeId` the code request answered.
    pub challenge_id: Option<String>,
}

/// `POST /portal/api/sign-in/code`: sends a 6-digit code to the number.
async fn request_code(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: ApiJson<CodeRequest>,
) -> Result<HttpResponse, ApiError> {
    same_origin(&state, &req)?;
    let phone = phone_of(&body.0.phone)?;
    let trusted = req
        .cookie(DEVICE_COOKIE)
        .is_some_and(|device| state.portal().device_trusted(device.value(), &phone));
    let sent = state
        .portal()
        .request_code(&phone, &client_ip(&state, &req), trusted)
        .await?;
    Ok(HttpResponse::Accepted()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({
            "phone": sent.phone,
            "expiresAt": iso(sent.expires_at),
            "channel": sent.channel,
            "challengeId": sent.challenge_id,
        })))
}

/// The device cookie of a browser that signed in with `phone`: sent back only to the code
/// requests, never readable by the page.
fn device_cookie(state: &AppState, phone: &str) -> Cookie<'static> {
    Cookie::build(DEVICE_COOKIE, state.portal().device_token(phone))
        .path("/portal/api/sign-in")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(served_over_https(state))
        .max_age(CookieDuration::days(DEVICE_COOKIE_DAYS))
        .finish()
}

fn served_over_https(state: &AppState) -> bool {
    state
        .config()
        .server
        .public_url
        .trim()
        .to_ascii_lowercase()
        .starts_with("https://")
}

fn session_cookie(state: &AppState, value: String, max_age_seconds: i64) -> Cookie<'static> {
    Cookie::build(COOKIE, value)
        .path("/portal")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(served_over_https(state))
        .max_age(CookieDuration::seconds(max_age_seconds.max(0)))
        .finish()
}

/// `POST /portal/api/sign-in/verify`: checks the code; sets the session cookie.
async fn verify(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: ApiJson<VerifyRequest>,
) -> Result<HttpResponse, ApiError> {
    same_origin(&state, &req)?;
    let request = body.0;
    let phone = phone_of(&request.phone)?;
    let code = request.code.trim();
    if code.len() != 6 || !code.chars().all(|c| c.is_ascii_digit()) {
        return Err(ApiError::invalid("code", "code must be the 6 digits sent"));
    }
    let challenge_id = request.challenge_id.as_deref().map(str::trim).unwrap_or("");
    if challenge_id.is_empty() || challenge_id.len() > 100 {
        return Err(ApiError::invalid(
            "challengeId",
            "challengeId must be the one the code request answered",
        ));
    }
    let signed_in = state.portal().verify(&phone, challenge_id, code).await?;
    // A browser that was signed in before gets a new session; the old one ends.
    if let Some(old) = req.cookie(COOKIE) {
        state.portal().sign_out(&hash_key(old.value())).await?;
    }
    let id_hash = hash_key(&signed_in.session_id);
    let max_age = (signed_in.expires_at - crate::time::now_ms()) / 1000;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .cookie(session_cookie(&state, signed_in.session_id, max_age))
        .cookie(device_cookie(&state, &phone))
        .json(json!({
            "developerId": signed_in.developer_id,
            "created": signed_in.created,
            "csrfToken": state.portal().csrf_token(&id_hash),
            "expiresAt": iso(signed_in.expires_at),
        })))
}

/// The portal session [`require_session`] found for this request.
fn signed_in(req: &HttpRequest) -> Result<ActiveSession, ApiError> {
    req.extensions()
        .get::<ActiveSession>()
        .cloned()
        .ok_or_else(|| ApiError::Unauthorized("sign in to the portal first".into()))
}

/// `GET /portal/api/session`: who is signed in, the CSRF token, and what the server offers.
async fn session_info(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let session = signed_in(&req)?;
    Ok(HttpResponse::Ok().json(json!({
        "developerId": session.developer_id,
        "phone": session.phone,
        "signedInAt": iso(session.created_at),
        "idleExpiresAt": iso(session.idle_expires_at),
        "expiresAt": iso(session.expires_at),
        "csrfToken": state.portal().csrf_token(&session.id_hash),
        "billingConfigured": state.stripe().is_some(),
    })))
}

/// `POST /portal/api/sign-out`: revokes the session on the server and clears the cookie.
async fn sign_out(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let session = signed_in(&req)?;
    state.portal().sign_out(&session.id_hash).await?;
    let mut gone = session_cookie(&state, String::new(), 0);
    gone.make_removal();
    Ok(HttpResponse::NoContent().cookie(gone).finish())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkRequest {
    /// A live API key of the developer the signed-in number should sign in to.
    pub api_key: String,
}

/// `POST /portal/api/account/link {"apiKey"}`: the signed-in number signs in, from now on, to
/// the developer of the API key presented (the rules are `crate::portal::link`'s). On a move
/// the session is re-issued for that developer: a new cookie and `csrfToken`.
async fn link_account(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: ApiJson<LinkRequest>,
) -> Result<HttpResponse, ApiError> {
    let session = signed_in(&req)?;
    let raw = body.0.api_key.trim().to_string();
    if raw.is_empty() {
        return Err(ApiError::invalid(
            "apiKey",
            "apiKey is required: one of the account's API keys",
        ));
    }
    let ip = client_ip(&state, &req);
    state.portal().link_allowed(&session.phone, &ip)?;
    let check = if raw.len() > 200 || !raw.starts_with(&state.config().auth.key_prefix) {
        KeyCheck::Unknown
    } else {
        state
            .keys()
            .send(CheckKey {
                hash: hash_key(&raw),
            })
            .await??
    };
    let refusal = match check {
        KeyCheck::Valid(principal) => Ok(principal.developer_id),
        KeyCheck::Unknown => Err("invalid API key"),
        KeyCheck::Revoked => Err("this API key has been revoked"),
        KeyCheck::Expired => Err("this API key has expired"),
    };
    let developer_id = match refusal {
        Ok(developer_id) => developer_id,
        Err(message) => {
            state.portal().link_refused(&session.phone, &ip);
            return Err(ApiError::invalid("apiKey", message));
        }
    };
    match state.portal().link(&session, &developer_id).await? {
        Linked::Already => Ok(HttpResponse::Ok().json(json!({
            "developerId": developer_id,
            "linked": false,
            "csrfToken": state.portal().csrf_token(&session.id_hash),
            "expiresAt": iso(session.expires_at),
        }))),
        Linked::Moved(signed_in) => {
            let id_hash = hash_key(&signed_in.session_id);
            let max_age = (signed_in.expires_at - crate::time::now_ms()) / 1000;
            Ok(HttpResponse::Ok()
                .cookie(session_cookie(&state, signed_in.session_id, max_age))
                .json(json!({
                    "developerId": signed_in.developer_id,
                    "linked": true,
                    "csrfToken": state.portal().csrf_token(&id_hash),
                    "expiresAt": iso(signed_in.expires_at),
                })))
        }
    }
}

/// The signed-in app's pages; without a live session, 303 to the sign-in page.
async fn app_page(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if session_of(&state, &req).await?.is_none() {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/portal/sign-in"))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish());
    }
    page(&req, "index.html")
}

/// The sign-in page (public).
async fn sign_in_page(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    page(&req, "sign-in.html")
}

fn page(req: &HttpRequest, name: &str) -> Result<HttpResponse, ApiError> {
    let embedded = Assets::get(name)
        .ok_or_else(|| ApiError::Internal(format!("the portal page {name} is not embedded")))?;
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if req.method() == Method::HEAD {
        return Ok(response.finish());
    }
    Ok(response.body(embedded.data.into_owned()))
}

/// A script, style sheet or image of the portal (public: they hold no data).
async fn asset(req: HttpRequest, file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let name = file.into_inner();
    let embedded = Assets::get(&name)
        .filter(|_| !name.ends_with(".html"))
        .ok_or_else(|| ApiError::NotFound(format!("no portal file at {}", req.path())))?;
    let extension = name.rsplit_once('.').map_or("", |(_, ext)| ext);
    let content_type = match extension {
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    };
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if req.method() == Method::HEAD {
        return Ok(response.finish());
    }
    Ok(response.body(embedded.data.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_and_their_script_are_embedded() {
        for name in [
            "index.html",
            "sign-in.html",
            "app.js",
            "sign-in.js",
            "portal.css",
            "ui.js",
            "agents.js",
            "account.js",
            "favicon.svg",
        ] {
            assert!(Assets::get(name).is_some(), "{name} is embedded");
        }
    }
}
