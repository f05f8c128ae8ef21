//! Real-time sessions over HTTP: `POST /v1/sessions/twilio` sets up a phone session and
//! answers the call-control markup that connects the call to our media stream;
//! `GET /v1/sessions/twilio/stream` is that stream (a WebSocket speaking Twilio's Media
//! Streams protocol, authenticated by the relay token, not an API key).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::http::header::ACCEPT;
use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_actors::session::{AgentProfile, SessionEngines};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::providers::{self, Caller};
use super::{validate, AppState};
use crate::conversation::prompt::{substitute, system_prompt};
use crate::conversation::tools::{http_tools, AgentTools};
use crate::error::{ApiError, ErrorBody};
use crate::observability::recorder::SessionRecorder;
use crate::observability::served;
use crate::registry::agents::GetAgent;
use crate::registry::instances::{GetInstance, InstanceLookup};
use crate::registry::metering::{OpenSession, SessionMetering};
use crate::registry::new_id;
use crate::registry::sessions::CreateSession;
use crate::store::sessions::{SessionRow, STATUS_PENDING};
use crate::telephony::stream::{self, SessionFactory, SessionParts, StreamContext};
use crate::telephony::token::RelayClaims;
use crate::telephony::twiml;
use crate::time::{self, iso};

const MAX_NUMBER_CHARS: usize = 64;
/// Answer length of the agent in calls when it sets no maxTokens: short, spoken replies.
const CALL_MAX_TOKENS: u32 = 160;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_twilio_session);
    super::other_methods(cfg, &["/sessions/twilio"]);
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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwilioSessionBody {
    pub session_id: String,
    /// Return this to Twilio from your voice webhook.
    pub twiml: String,
    pub stream_url: String,
    /// The stream must connect before this time.
    pub expires_at: String,
}

/// Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
/// Accept header prefers XML, so a voice webhook can pass it straight to Twilio.
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
    let developer_id = developer.id().to_string();
    let agent = state
        .agents
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.clone(),
        })
        .await??;
    let from = request.from.unwrap_or_default();
    let instance = match &request.instance_id {
        Some(id) => Some(
            state
                .agents
                .send(GetInstance {
                    developer_id: developer_id.clone(),
                    agent_id: agent.id.clone(),
                    lookup: InstanceLookup::Id(id.clone()),
                })
                .await?
                .map_err(|e| match e {
                    ApiError::NotFound(message) => ApiError::invalid("instanceId", message),
                    other => other,
                })?
                .id,
        ),
        None => state
            .agents
            .send(GetInstance {
                developer_id: developer_id.clone(),
                agent_id: agent.id.clone(),
                lookup: InstanceLookup::Phone(from.clone()),
            })
            .await?
            .ok()
            .map(|i| i.id),
    };
    let now = time::now_ms();
    let session_id = new_id("ses");
    let expires = now + state.config.telephony.token_ttl_seconds as i64 * 1000;
    state
        .sessions
        .send(CreateSession(SessionRow {
            seq: 0,
            id: session_id.clone(),
            developer_id: developer_id.clone(),
            agent_id: agent.id.clone(),
            transport: "twilio".into(),
            call_sid: None,
            from_number: Some(from.clone()),
            to_number: request.to.clone(),
            instance_id: instance.clone(),
            status: STATUS_PENDING.into(),
            turn_count: 0,
            tool_executions: 0,
            total_duration_ms: 0,
            avg_turn_latency_ms: 0,
            end_reason: None,
            created_at: now,
            started_at: None,
            ended_at: None,
        }))
        .await??;
    let token = state.signer.sign(&RelayClaims {
        sid: session_id.clone(),
        dev: developer_id,
        agent: agent.id,
        from: Some(from),
        to: request.to,
        inst: instance,
        exp: expires,
    });
    let stream_url = twiml::stream_url(&super::public_base(&state, &req));
    let markup = twiml::connect_stream(&stream_url, &token);
    if prefers_xml(&req) {
        return Ok(HttpResponse::Ok()
            .content_type("text/xml; charset=utf-8")
            .body(markup));
    }
    Ok(HttpResponse::Ok().json(TwilioSessionBody {
        session_id,
        twiml: markup,
        stream_url,
        expires_at: iso(expires),
    }))
}

/// True when Accept ranks an XML type above JSON.
fn prefers_xml(req: &HttpRequest) -> bool {
    let Some(accept) = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let quality = |wanted: &[&str]| -> f32 {
        accept
            .split(',')
            .filter_map(|part| {
                let mut pieces = part.split(';');
                let mime = pieces.next()?.trim().to_ascii_lowercase();
                if !wanted.contains(&mime.as_str()) {
                    return None;
                }
                let q = pieces
                    .find_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.parse().ok()))
                    .unwrap_or(1.0);
                Some(q)
            })
            .fold(0.0, f32::max)
    };
    let xml = quality(&["text/xml", "application/xml"]);
    xml > 0.0 && xml > quality(&["application/json"])
}

/// `GET /v1/sessions/twilio/stream`: the media stream WebSocket.
pub async fn twilio_stream(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, actix_web::Error> {
    let (response, socket, messages) = actix_ws::handle(&req, body)?;
    let context = StreamContext {
        signer: state.signer.clone(),
        sessions: state.sessions.clone(),
        factory: app_session_factory(state.clone()),
        observer: Arc::new(SessionRecorder::new(
            state.sessions.clone(),
            state.metering.clone(),
            "twilio",
        )),
    };
    actix_web::rt::spawn(stream::run(context, socket, messages));
    Ok(response)
}

/// The factory live sessions of this server are built with.
pub fn app_session_factory(state: web::Data<AppState>) -> Arc<dyn SessionFactory> {
    Arc::new(AppSessionFactory { state })
}

/// Builds a session's agent profile and engines from the stored agent and instance.
struct AppSessionFactory {
    state: web::Data<AppState>,
}

impl SessionFactory for AppSessionFactory {
    fn build(&self, claims: RelayClaims) -> Pin<Box<dyn Future<Output = SessionParts> + Send>> {
        let state = self.state.clone();
        Box::pin(async move {
            let agent = state
                .agents
                .send(GetAgent {
                    developer_id: claims.dev.clone(),
                    agent_id: claims.agent.clone(),
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            let instance = match &claims.inst {
                Some(id) => state
                    .agents
                    .send(GetInstance {
                        developer_id: claims.dev.clone(),
                        agent_id: agent.id.clone(),
                        lookup: InstanceLookup::Id(id.clone()),
                    })
                    .await
                    .map_err(|e| e.to_string())?
                    .ok(),
                None => None,
            };
            let variables: Map<String, Value> = instance
                .as_ref()
                .and_then(|i| validate::stored_json(&i.metadata).as_object().cloned())
                .unwrap_or_default();
            let tools = AgentTools::new(
                state.engines.embedder.clone(),
                state.knowledge.clone(),
                state.fetcher.clone(),
                agent.collection_id.clone(),
                http_tools(&validate::stored_json(&agent.metadata)).unwrap_or_default(),
            );
            let profile = AgentProfile {
                system_prompt: system_prompt(
                    agent.system_prompt.as_deref(),
                    &variables,
                    instance.as_ref().map(|i| i.context.as_str()),
                    &[],
                ),
                first_message: agent
                    .first_message
                    .as_deref()
                    .map(|m| substitute(m, &variables))
                    .unwrap_or_default(),
                voice: agent.voice_id.clone(),
                language: Some(agent.language.clone()),
                model: agent.llm_model.clone(),
                tts_model: agent.tts_model.clone(),
                temperature: agent.temperature as f32,
                max_tokens: agent
                    .max_tokens
                    .map_or(CALL_MAX_TOKENS, |t| t.max(1) as u32),
                // The embedded model cannot call tools; offering them only confuses it.
                tools: if agent.llm_provider == crate::vendors::catalog::DEFAULT_PROVIDER {
                    Vec::new()
                } else {
                    tools.specs()
                },
                max_steps: 4,
            };
            // A call has no request headers: the developer's stored key, else the platform's.
            let caller = Caller {
                developer_id: &claims.dev,
                headers: None,
            };
            let stt = providers::agent_stt(&state, &agent, caller)
                .await
                .map_err(|e| e.to_string())?;
            let llm = providers::agent_llm(&state, &agent, caller)
                .await
                .map_err(|e| e.to_string())?;
            let tts = providers::agent_tts(&state, &agent, caller)
                .await
                .map_err(|e| e.to_string())?;
            let metered = SessionMetering {
                stt: stt.metered_up_front(),
                llm: llm.metered_up_front(),
                tts: tts.metered_up_front(),
            };
            // Each stage's engine marks the provider that served it, for the turn records.
            let streams_live = agent.stt_provider == "deepgram";
            let (stt, stt_slot) = served::track_stt(stt, streams_live);
            let (llm, llm_slot) = served::track_llm(llm);
            let (tts, tts_slot) = served::track_tts(tts);
            let engines = SessionEngines {
                stt,
                llm,
                tts,
                tools: Arc::new(tools),
            };
            // The session's slot among the tier's concurrent sessions (already taken when
            // the direct socket opened), and its per-turn metering.
            state
                .metering
                .send(OpenSession {
                    session_id: claims.sid.clone(),
                    developer_id: claims.dev.clone(),
                    metered,
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            served::register(
                &claims.sid,
                served::StageSlots {
                    stt: stt_slot,
                    llm: llm_slot,
                    tts: tts_slot,
                },
            );
            Ok((profile, engines))
        })
    }
}
