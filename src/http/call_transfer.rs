//! Handing a live phone call to a person.
//!
//! - `POST /v1/sessions/twilio/{callSid}/transfer`: the integrator transfers one of their live
//!   calls (cold by default, or warm with a summary for the person).
//! - `POST /v1/sessions/twilio/transfers/{sessionId}/dialed`: Twilio's `<Dial action>` request
//!   when a cold transfer's dial ends; answers what the caller hears next.
//! - `POST /v1/sessions/twilio/transfers/{sessionId}/person`: the status callback of a warm
//!   transfer's call to the person.
//!
//! The two webhooks carry no API key: each must carry a valid `X-Twilio-Signature` (see
//! [`crate::telephony::signature`]), else it is refused with 403 and changes nothing. The
//! transfer itself is carried out in [`crate::live::call`].

use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::{ApiJson, RawWebhook};
use super::methods;
use super::twilio_calls::{twiml_response, verify_webhook};
use crate::app::AppState;
use crate::conversation::tools::MAX_SUMMARY_CHARS;
use crate::conversation::transfer::{TransferMode, TransferTarget};
use crate::error::{ApiError, ErrorBody};
use crate::live::{call, control};
use crate::telephony::is_e164;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(transfer_call);
    methods::other_methods(cfg, &["/sessions/twilio/{callSid}/transfer"]);
}

/// Twilio's webhooks about a transfer, proven by their signature instead of an API key.
pub fn webhooks(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v1/sessions/twilio/transfers/{session_id}/dialed")
            .route(web::post().to(dialed))
            .to(methods::method_not_allowed),
    )
    .service(
        web::resource("/v1/sessions/twilio/transfers/{session_id}/person")
            .route(web::post().to(person_status))
            .to(methods::method_not_allowed),
    );
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TransferRequest {
    /// The person's number, E.164.
    pub number: Option<String>,
    /// How the session record names them; default the number.
    pub name: Option<String>,
    /// `cold` (default): the call is redirected to the number. `warm`: the caller hears
    /// `telephony.transfer_hold_message` while the person is called and told `summary`, then
    /// the two are joined in a conference.
    pub mode: Option<String>,
    /// What a warm transfer tells the person first (at most 1000 characters).
    pub summary: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferBody {
    pub call_sid: String,
    pub session_id: String,
    /// `dialing` (cold: Twilio is ringing the person) or `calling` (warm: the caller is on
    /// hold while the person's phone rings). The outcome lands on the session's `transfer`
    /// call event.
    pub status: &'static str,
}

/// Hands one of the developer's live phone calls to a person. The session ends as
/// `transferred`, and its record gets a `transfer` call event
/// `{name, number, mode, by: "api", outcome}` whose outcome becomes Twilio's dial status
/// (`completed`, `busy`, `no-answer`, `failed`) or, warm, `bridged`. A person who does not
/// answer hands the caller back to the agent in a new session of the same call.
#[utoipa::path(post, path = "/v1/sessions/twilio/{callSid}/transfer", tag = "sessions",
    params(("callSid" = String, Path, description = "Twilio's call SID")),
    request_body = TransferRequest,
    responses((status = 200, body = TransferBody),
        (status = 400, body = ErrorBody, description = "A missing or malformed number, an unknown mode, a summary that is too long"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "The developer has no call with this SID"),
        (status = 409, body = ErrorBody, description = "The call's session already ended"),
        (status = 502, body = ErrorBody, description = "Twilio failed"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")),
    security(("bearer" = [])))]
#[post("/sessions/twilio/{callSid}/transfer")]
async fn transfer_call(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    call_sid: web::Path<String>,
    body: ApiJson<TransferRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let number = body
        .number
        .ok_or_else(|| ApiError::invalid("number", "number is required"))?;
    let mode = body.mode.unwrap_or_else(|| "cold".into());
    let summary = body.summary.unwrap_or_default();
    if summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(ApiError::invalid(
            "summary",
            format!("summary is longer than {MAX_SUMMARY_CHARS} characters"),
        ));
    }
    if !is_e164(&number) {
        return Err(ApiError::invalid(
            "number",
            format!("number '{number}' is not an E.164 number such as +14155550100"),
        ));
    }
    let mode = match mode.as_str() {
        "cold" => TransferMode::Cold,
        "warm" => TransferMode::Warm,
        other => {
            return Err(ApiError::invalid(
                "mode",
                format!("mode must be cold or warm, not '{other}'"),
            ))
        }
    };
    let name = body.name.unwrap_or_else(|| number.clone());
    if name.trim().is_empty() || name.chars().count() > 64 {
        return Err(ApiError::invalid("name", "name must be 1-64 characters"));
    }
    let target = TransferTarget {
        name: name.trim().to_string(),
        number,
        description: String::new(),
        mode,
    };
    if target.mode == TransferMode::Cold && !summary.is_empty() {
        return Err(ApiError::invalid(
            "summary",
            "a summary is told to the person on a warm transfer only",
        ));
    }
    let call_sid = call_sid.into_inner();
    let base = state.public_base(&req);
    let (session_id, status) =
        control::transfer(&state, developer.id(), &call_sid, &base, &target, &summary).await?;
    Ok(HttpResponse::Ok().json(TransferBody {
        call_sid,
        session_id: session_id.into(),
        status,
    }))
}

/// Twilio requests this when a cold transfer's `<Dial>` ends. Called by Twilio, not API
/// consumers: no API key, a valid `X-Twilio-Signature`.
#[utoipa::path(post, path = "/v1/sessions/twilio/transfers/{sessionId}/dialed", tag = "telephony webhooks",
    params(("sessionId" = String, Path, description = "The session the call was transferred from"),
        ("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's <Dial> action parameters (CallSid, DialCallStatus, DialCallSid, DialCallDuration, ...)"),
    responses((status = 200, description = "TwiML: a hang-up after a person took the call; otherwise the caller's stream back to the agent in a new session that carries on the conversation", content_type = "text/xml"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"),
        (status = 404, body = ErrorBody, description = "No such session, or it made no transfer"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn dialed(
    state: web::Data<AppState>,
    req: HttpRequest,
    session_id: web::Path<String>,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let status = form.get("DialCallStatus").unwrap_or("failed").to_string();
    let seconds = form
        .get("DialCallDuration")
        .and_then(|d| d.parse::<i64>().ok());
    let base = state.public_base(&req);
    let markup = call::dial_ended(
        &state,
        &base,
        &session_id.into_inner().into(),
        &status,
        seconds,
    )
    .await?;
    Ok(twiml_response(markup))
}

/// The status callback of a warm transfer's call to the person. Called by Twilio, not API
/// consumers: no API key, a valid `X-Twilio-Signature`.
#[utoipa::path(post, path = "/v1/sessions/twilio/transfers/{sessionId}/person", tag = "telephony webhooks",
    params(("sessionId" = String, Path, description = "The session the call was transferred from"),
        ("X-Twilio-Signature" = String, Header, description = "base64 HMAC-SHA1 of the URL and sorted form parameters with the auth token")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Twilio's status callback parameters (CallSid, CallStatus, ...)"),
    responses((status = 204, description = "Applied: answered marks the transfer `bridged`; busy, no-answer, failed or canceled bring the caller back to the agent"),
        (status = 403, body = ErrorBody, description = "Missing or invalid signature"),
        (status = 404, body = ErrorBody, description = "No such session, or it made no transfer"),
        (status = 502, body = ErrorBody, description = "Twilio failed to take the caller back"),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")))]
async fn person_status(
    state: web::Data<AppState>,
    req: HttpRequest,
    session_id: web::Path<String>,
    RawWebhook(body): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let form = verify_webhook(&state, &req, &body)?;
    let status = form.get("CallStatus").unwrap_or("").to_string();
    let base = state.public_base(&req);
    call::person_call_status(&state, &base, &session_id.into_inner().into(), &status).await?;
    Ok(HttpResponse::NoContent().finish())
}
