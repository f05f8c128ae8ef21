//! Real-time sessions over HTTP: `POST /v1/sessions/twilio` sets up a phone session and
//! answers the call-control markup that connects the call to our media stream;
//! `GET /v1/sessions/twilio/stream` is that stream (a WebSocket speaking Twilio's Media
//! Streams protocol, authenticated by the relay token, not an API key).

use actix_web::http::header::{Accept, Header, Quality};
use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::InstanceId;
use crate::live::{self, busy_markup, issue_stream, resolve_instance, warm_agent_voice, StreamFor};
use crate::registry::agents::GetAgent;
use crate::time::iso;
use crate::transports::socket::{self, SocketLimits};

const MAX_NUMBER_CHARS: usize = 64;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_twilio_session);
    methods::other_methods(cfg, &["/sessions/twilio"]);
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TwilioSessionRequest {
    pub agent_id: Option<String>,
    /// The caller's number (Twilio's `From`), up to 64 characters.
    pub from: Option<String>,
    /// The number called (Twilio's `To`), up to 64 characters.
    pub to: Option<String>,
    /// An instance of the agent; otherwise the instance whose phoneNumber is `from`, if any.
    pub instance_id: Option<String>,
}

/// Whether the call is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CallAnswer {
    /// The markup connects the call to the agent.
    Connecting,
    /// The developer's concurrent sessions are all in use: the markup tells the caller the
    /// lines are busy and hangs up. No session was made.
    Busy,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwilioSessionBody {
    pub status: CallAnswer,
    /// Return this to Twilio from your voice webhook, whatever the status.
    pub twiml: String,
    /// The pending session (`connecting` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `connecting` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_url: Option<String>,
    /// The stream must connect before this time (`connecting` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Why the call was refused (`busy` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
/// Accept header prefers XML, so a voice webhook can pass it straight to Twilio. When the
/// developer's concurrent sessions are all in use the call is refused before it connects:
/// still 200, `status: "busy"`, and markup that tells the caller the lines are busy
/// (`telephony.busy_message`) and hangs up.
#[utoipa::path(post, path = "/v1/sessions/twilio", tag = "sessions", request_body = TwilioSessionRequest,
    responses((status = 200, body = TwilioSessionBody, description = "JSON, or text/xml TwiML when Accept prefers XML"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/sessions/twilio")]
async fn create_twilio_session(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    body: ApiJson<TwilioSessionRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let agent_id = request
        .agent_id
        .ok_or_else(|| ApiError::invalid("agentId", "agentId is required"))?;
    validate::required_text("from", request.from.as_deref(), MAX_NUMBER_CHARS)?;
    validate::required_text("to", request.to.as_deref(), MAX_NUMBER_CHARS)?;
    let developer_id = developer.id().clone();
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.as_str().into(),
        })
        .await??;
    let from = request.from.unwrap_or_default();
    warm_agent_voice(&state, &agent);
    let instance = resolve_instance(
        &state,
        &developer_id,
        &agent.id,
        request.instance_id.clone().map(InstanceId::from).as_ref(),
        &from,
    )
    .await?;
    let issued = issue_stream(
        &state,
        &req,
        StreamFor {
            developer_id,
            agent_id: agent.id,
            from: Some(from),
            to: request.to,
            instance_id: instance,
            call_sid: None,
            key_id: developer.api_key_id().cloned(),
            resumes: None,
            opening: None,
            task_id: None,
        },
    )
    .await;
    let body = match issued {
        Ok(issued) => TwilioSessionBody {
            status: CallAnswer::Connecting,
            twiml: issued.twiml,
            session_id: Some(issued.session_id.into()),
            stream_url: Some(issued.stream_url),
            expires_at: Some(iso(issued.expires_at)),
            message: None,
        },
        Err(ApiError::SessionLimit(reason)) => TwilioSessionBody {
            status: CallAnswer::Busy,
            twiml: busy_markup(&state),
            session_id: None,
            stream_url: None,
            expires_at: None,
            message: Some(reason),
        },
        Err(e) => return Err(e),
    };
    if prefers_xml(&req) {
        return Ok(HttpResponse::Ok()
            .content_type("text/xml; charset=utf-8")
            .body(body.twiml));
    }
    Ok(HttpResponse::Ok().json(body))
}

/// True when Accept ranks an XML type above JSON (RFC 9110 §12.5.1, parsed by actix-web: `q`
/// in any case, weights from 0 to 1). An Accept header that does not parse asks for nothing,
/// so the answer is the default JSON.
fn prefers_xml(req: &HttpRequest) -> bool {
    let Ok(Accept(items)) = Accept::parse(req) else {
        return false;
    };
    let quality = |wanted: &[&str]| {
        items
            .iter()
            .filter(|item| wanted.contains(&item.item.essence_str()))
            .map(|item| item.quality)
            .max()
            .unwrap_or(Quality::ZERO)
    };
    let xml = quality(&["text/xml", "application/xml"]);
    xml > Quality::ZERO && xml > quality(&["application/json"])
}

/// `GET /v1/sessions/twilio/stream`: the media stream WebSocket (503 `draining`, before the
/// upgrade, while the node stops).
pub async fn twilio_stream(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, actix_web::Error> {
    // A stopping node takes no new call (a load balancer retries it on another node).
    state.drain().refuse_if_draining()?;
    // Twilio sends audio all call long: the direct socket's idle limit is not for it.
    let limits = SocketLimits {
        idle_timeout: None,
        ..SocketLimits::of(&req)
    };
    let (response, socket, messages) = socket::accept(&req, limits)?;
    let base = state.public_base(&req);
    actix_web::rt::spawn(live::phone_stream(state, base, socket, messages));
    Ok(response)
}
