//! Real-time sessions over HTTP: `POST /v1/sessions/twilio` sets up a phone session and
//! answers the call-control markup that connects the call to our media stream;
//! `GET /v1/sessions/twilio/stream` is that stream (a WebSocket speaking Twilio's Media
//! Streams protocol, authenticated by the relay token, not an API key).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::http::header::{Accept, Header, Quality};
use actix_web::{post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchboard_actors::engine::KnowledgeRetriever;
use switchboard_actors::session::{AgentProfile, SessionEngines, TurnPreferences};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::providers::{self, Caller};
use super::{validate, AppState};
use crate::conversation::prompt::{substitute, system_prompt};
use crate::conversation::retrieval::CollectionKnowledge;
use crate::conversation::tools::{http_tools, AgentTools};
use crate::conversation::turn_taking;
use crate::engines::pool::Lane;
use crate::error::{ApiError, ErrorBody};
use crate::observability::recorder::SessionRecorder;
use crate::observability::served;
use crate::recording::{RecordingOf, RecordingTap, TapFormat, DIRECT_RATE, PHONE_RATE};
use crate::registry::agents::GetAgent;
use crate::registry::instances::{GetInstance, InstanceLookup};
use crate::registry::keys::{CheckIssuer, KeyCheck};
use crate::registry::metering::{CloseSession, OpenSession, SessionMetering};
use crate::registry::new_id;
use crate::registry::sessions::{CreateSession, EndSession};
use crate::store::agents::AgentRow;
use crate::store::sessions::{SessionEnd, SessionRow, STATUS_FAILED, STATUS_PENDING};
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
    warm_agent_voice(&state, &agent);
    let instance = resolve_instance(
        &state,
        &developer_id,
        &agent.id,
        request.instance_id.as_deref(),
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
            key_id: Some(developer.0.key_id.clone()),
        },
    )
    .await?;
    let markup = issued.twiml;
    if prefers_xml(&req) {
        return Ok(HttpResponse::Ok()
            .content_type("text/xml; charset=utf-8")
            .body(markup));
    }
    Ok(HttpResponse::Ok().json(TwilioSessionBody {
        session_id: issued.session_id,
        twiml: markup,
        stream_url: issued.stream_url,
        expires_at: iso(issued.expires_at),
    }))
}

/// A call with `agent` has been placed and its media stream will open shortly: start loading
/// the agent's embedded voice, if it speaks with one, so the greeting does not wait for it.
pub fn warm_agent_voice(state: &AppState, agent: &AgentRow) {
    if agent.tts_provider == crate::vendors::catalog::DEFAULT_PROVIDER {
        state
            .engines
            .warm_voice(&agent.voice_id, agent.forced_language());
    }
}

/// The instance a call runs with: `instance_id` when given (400 if it is not the agent's),
/// else the agent's instance whose phone number is `phone`, if any.
pub async fn resolve_instance(
    state: &AppState,
    developer_id: &str,
    agent_id: &str,
    instance_id: Option<&str>,
    phone: &str,
) -> Result<Option<String>, ApiError> {
    let lookup = match instance_id {
        Some(id) => InstanceLookup::Id(id.to_string()),
        None => InstanceLookup::Phone(phone.to_string()),
    };
    let found = state
        .agents
        .send(GetInstance {
            developer_id: developer_id.to_string(),
            agent_id: agent_id.to_string(),
            lookup,
        })
        .await?;
    match (instance_id, found) {
        (_, Ok(instance)) => Ok(Some(instance.id)),
        (Some(_), Err(ApiError::NotFound(message))) => {
            Err(ApiError::invalid("instanceId", message))
        }
        (Some(_), Err(other)) => Err(other),
        (None, Err(_)) => Ok(None),
    }
}

/// Who a phone session is for.
pub struct StreamFor {
    pub developer_id: String,
    pub agent_id: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub instance_id: Option<String>,
    /// Known when Twilio asks for the markup itself (outbound connect, inbound webhook).
    pub call_sid: Option<String>,
    /// The API key asking for the session, when one does (`POST /v1/sessions/twilio`): its
    /// revocation also revokes the relay token.
    pub key_id: Option<String>,
}

/// A pending phone session and the markup that connects a call to it.
pub struct IssuedStream {
    pub session_id: String,
    pub twiml: String,
    pub stream_url: String,
    pub expires_at: i64,
}

/// Records a pending phone session and signs the relay token its stream must present: the
/// markup every way into a phone call answers (the API, outbound connect, inbound webhook).
pub async fn issue_stream(
    state: &AppState,
    req: &HttpRequest,
    target: StreamFor,
) -> Result<IssuedStream, ApiError> {
    issue_stream_as(state, req, target, new_id("ses")).await
}

/// [`issue_stream`] for a session id chosen beforehand (an outbound task claims its one
/// session before the session exists).
pub async fn issue_stream_as(
    state: &AppState,
    req: &HttpRequest,
    target: StreamFor,
    session_id: String,
) -> Result<IssuedStream, ApiError> {
    let now = time::now_ms();
    let expires = now + state.config.telephony.token_ttl_seconds as i64 * 1000;
    state
        .sessions
        .send(CreateSession(SessionRow {
            seq: 0,
            id: session_id.clone(),
            developer_id: target.developer_id.clone(),
            agent_id: target.agent_id.clone(),
            transport: "twilio".into(),
            call_sid: target.call_sid,
            from_number: target.from.clone(),
            to_number: target.to.clone(),
            instance_id: target.instance_id.clone(),
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
        dev: target.developer_id,
        agent: target.agent_id,
        from: target.from,
        to: target.to,
        inst: target.instance_id,
        key: target.key_id,
        exp: expires,
    });
    let stream_url = twiml::stream_url(&super::public_base(state, req));
    Ok(IssuedStream {
        twiml: twiml::connect_stream(&stream_url, &token),
        session_id,
        stream_url,
        expires_at: expires,
    })
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
    state.drain.refuse_if_draining()?;
    // Twilio sends audio all call long: the direct socket's idle limit is not for it.
    let limits = crate::realtime_socket::SocketLimits {
        idle_timeout: None,
        ..crate::realtime_socket::SocketLimits::of(&req)
    };
    let (response, socket, messages) = crate::realtime_socket::accept(&req, limits)?;
    let context = StreamContext {
        drain: state.drain.clone(),
        signer: state.signer.clone(),
        sessions: state.sessions.clone(),
        factory: app_session_factory(state.clone()),
        observer: Arc::new(SessionRecorder::new(
            state.sessions.clone(),
            state.metering.clone(),
            state.traces.clone(),
            "twilio",
        )),
    };
    actix_web::rt::spawn(stream::run(context, socket, messages));
    Ok(response)
}

/// Frees what a real-time session took before it started (its place among the tier's
/// concurrent sessions, its providers' slots) when it cannot start after all.
pub fn release_unstarted(state: &AppState, session_id: &str) {
    state.metering.do_send(CloseSession {
        session_id: session_id.to_string(),
    });
    served::forget(session_id);
}

/// A real-time session whose token was spent could not start: frees what it took and ends
/// its record as `failed` with `endReason` `start_failed: <reason>`, so nothing of it outlives
/// the refused socket and no record reads as active for ever.
pub fn abandon_unstarted(state: &AppState, session_id: &str, reason: &str) {
    release_unstarted(state, session_id);
    state.sessions.do_send(EndSession {
        session_id: session_id.to_string(),
        end: SessionEnd {
            status: STATUS_FAILED.into(),
            tool_executions: 0,
            total_duration_ms: 0,
            avg_turn_latency_ms: 0,
            end_reason: Some(format!("start_failed: {reason}")),
            ended_at: Some(crate::time::now_ms()),
        },
    });
}

/// Whether the API key that minted a relay or session token still vouches for it (tokens
/// minted without a key, for Twilio's own webhooks, always do). `Err` says why not.
pub async fn token_issuer_in_force(state: &AppState, claims: &RelayClaims) -> Result<(), String> {
    let Some(key_id) = claims.key.clone() else {
        return Ok(());
    };
    let check = state
        .keys
        .send(CheckIssuer {
            developer_id: claims.dev.clone(),
            key_id,
        })
        .await
        .map_err(|e| format!("the key registry did not answer: {e}"))?
        .map_err(|e| format!("the issuing key could not be checked: {e}"))?;
    match check {
        KeyCheck::Valid(_) => Ok(()),
        KeyCheck::Revoked => Err("the API key that issued the token was revoked".into()),
        KeyCheck::Expired => Err("the API key that issued the token has expired".into()),
        KeyCheck::Unknown => Err("the API key that issued the token is unknown".into()),
    }
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
    fn abandon(&self, session_id: &str, reason: &str) {
        abandon_unstarted(&self.state, session_id, reason);
    }

    fn issuer_in_force(
        &self,
        claims: &RelayClaims,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        let state = self.state.clone();
        let claims = claims.clone();
        Box::pin(async move { token_issuer_in_force(&state, &claims).await })
    }

    fn recording(
        &self,
        claims: &RelayClaims,
        call_sid: Option<String>,
        format: TapFormat,
    ) -> Pin<Box<dyn Future<Output = Option<RecordingTap>> + Send>> {
        let state = self.state.clone();
        let claims = claims.clone();
        Box::pin(async move {
            if !state.recordings.enabled() {
                return None;
            }
            let agent = state
                .agents
                .send(GetAgent {
                    developer_id: claims.dev.clone(),
                    agent_id: claims.agent.clone(),
                })
                .await
                .ok()?
                .ok()?;
            let metadata = validate::stored_json(&agent.metadata);
            let (wanted, rate) = match format {
                // Calls are recorded unless the agent opts out; direct sessions when it opts in.
                TapFormat::Mulaw8k => (
                    metadata["recordCalls"].as_bool().unwrap_or(true),
                    PHONE_RATE,
                ),
                TapFormat::Pcm16(_) | TapFormat::Opus(_) => (
                    metadata["recordDirectSessions"].as_bool().unwrap_or(false),
                    DIRECT_RATE,
                ),
            };
            if !wanted {
                return None;
            }
            state.recordings.start(RecordingOf {
                session_id: claims.sid,
                developer_id: claims.dev,
                call_sid,
                format,
                rate,
            })
        })
    }

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
            let metadata = validate::stored_json(&agent.metadata);
            // Checked when the agent was written; an older row with a bad section keeps the
            // defaults rather than failing the call.
            let turn = turn_taking::from_metadata(&metadata).unwrap_or_else(|reason| {
                tracing::warn!(agent = %agent.id, "turn taking ignored: {reason}");
                TurnPreferences::default()
            });
            let tools = AgentTools::new(
                state.engines.live.embedder.clone(),
                state.knowledge.clone(),
                state.fetcher.clone(),
                agent.collection_id.clone(),
                http_tools(&metadata).unwrap_or_default(),
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
                language: agent.forced_language().map(str::to_string),
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
                turn,
            };
            // A call has no request headers: the developer's stored key, else the platform's.
            // Its embedded engines' jobs wait in the pool's live lane, ahead of batch work.
            let caller = Caller {
                developer_id: &claims.dev,
                headers: None,
                lane: Lane::Live,
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
                knowledge: agent.collection_id.clone().map(|collection_id| {
                    Arc::new(CollectionKnowledge {
                        embedder: state.engines.live.embedder.clone(),
                        knowledge: state.knowledge.clone(),
                        collection_id,
                    }) as Arc<dyn KnowledgeRetriever>
                }),
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
