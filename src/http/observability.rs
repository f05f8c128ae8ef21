//! `/v1/observability`: records of real-time sessions. Lists of session summaries (filtered by
//! agent); the detail of one session, by session id or by the telephony provider's call id
//! (turns with per-stage timings, latency breakdown, providers, tool calls and interruptions;
//! errors; the session's metrics); its root-cause analysis; and interruption-quality
//! aggregates over sessions.

use actix_web::{get, web, HttpResponse};
use chrono::DateTime;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Developer;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::AgentId;
use crate::live::post_call::AnalysisBody;
use crate::observability::analysis::{analyse, Issue};
use crate::observability::interruptions::{aggregate, InterruptionQuality};
use crate::registry::sessions::{
    GetInterruptions, GetSession, ListSessions, SessionLookup, SessionTrace,
};
use crate::store::sessions::{SessionRow, SessionScope, EVENT_UNRECOGNISED_SPEECH};
use crate::time::iso_opt;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // interruption-quality before {id}, which would take it as a session id.
    cfg.service(interruption_quality)
        .service(list_sessions)
        .service(get_session)
        .service(session_root_cause)
        .service(get_call)
        .service(call_root_cause);
    methods::other_methods(
        cfg,
        &[
            "/observability/sessions",
            "/observability/sessions/interruption-quality",
            "/observability/sessions/{sessionId}",
            "/observability/sessions/{sessionId}/root-cause",
            "/observability/calls/{callId}",
            "/observability/calls/{callId}/root-cause",
        ],
    );
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummaryBody {
    pub id: String,
    pub agent_id: String,
    /// `twilio` or `direct`.
    pub transport: String,
    pub call_sid: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// Number of turns (caller and agent).
    pub turns: i32,
    /// `active`, `completed` or `failed`.
    pub status: String,
}

impl From<SessionRow> for SessionSummaryBody {
    fn from(row: SessionRow) -> Self {
        SessionSummaryBody {
            id: row.id.into(),
            agent_id: row.agent_id.into(),
            transport: row.transport,
            call_sid: row.call_sid,
            started_at: iso_opt(row.started_at),
            ended_at: iso_opt(row.ended_at),
            turns: row.turn_count,
            status: row.status.to_string(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnBody {
    pub index: i32,
    /// `user` or `agent`.
    pub speaker: String,
    pub text: String,
    /// Milliseconds since the session started.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Stage times in ms; 0 where the stage did not run.
    pub stt_ms: i64,
    pub llm_ms: i64,
    pub tts_ms: i64,
    /// End of caller speech to first agent audio, for agent turns answering the caller.
    pub latency_ms: Option<i64>,
    pub interrupted: bool,
    pub error: Option<String>,
    /// Caller turns: how the end of the turn was decided: `vad` (silence), `model` (the
    /// end-of-turn model judged a pause the end, smart turn detection), `stt` (the
    /// recogniser's own endpoint), `text` (typed) or `max_length` (30 s without a pause).
    pub endpoint: Option<String>,
    /// Agent replies to the caller: where the latency went.
    pub latency: Option<LatencyBody>,
    /// The provider that served each stage of this turn (a fallback when the agent's own
    /// failed); `null` where the stage did not run or nothing served.
    pub providers: ProvidersBody,
    /// Tool calls this agent turn made, in order.
    pub tool_executions: Vec<ToolExecutionBody>,
    /// Interrupted agent turns: how the interruption went.
    pub interruption: Option<InterruptionBody>,
}

/// An agent reply's latency, end of caller speech → first agent audio, by stage (ms).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LatencyBody {
    pub total_ms: i64,
    /// Waiting for the end of the caller's turn (silence, or the recogniser's endpoint).
    pub endpoint_ms: i64,
    pub stt_ms: i64,
    /// Model time to the first speakable sentence, over all rounds.
    pub llm_ms: i64,
    pub tool_ms: i64,
    /// First sentence to its first audio.
    pub tts_ms: i64,
    /// The rest: the server's own overhead.
    pub platform_ms: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProvidersBody {
    pub stt: Option<String>,
    pub llm: Option<String>,
    pub tts: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionBody {
    /// The model's call id.
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
    /// What the tool answered (or the error handed to the model).
    pub output: String,
    pub is_error: bool,
    pub duration_ms: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptionBody {
    /// Caller speech onset to the interruption decision, ms (0 when requested).
    pub detection_latency_ms: i64,
    /// Decision to the agent's audio cleared, ms (0 when requested).
    pub stop_latency_ms: i64,
    /// Agent words that played while the caller was already speaking.
    pub bleed_through: String,
    pub bleed_through_words: usize,
    /// A client asked for it (`interrupt`, or a typed turn) rather than the caller's voice.
    pub requested: bool,
    /// No words were recognised in the interrupting speech.
    pub false_barge_in: bool,
}

/// Something that went wrong: a failed turn, or the error that ended the session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorEntry {
    /// The turn; `null` for the session's own end.
    pub turn: Option<i32>,
    /// `stt`, `llm`, `tool`, `tts`, `audio` or `session`.
    pub stage: String,
    pub code: String,
    pub message: String,
}

/// Caller speech in which nothing was recognised.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnrecognisedSpeechBody {
    pub start_ms: i64,
    pub end_ms: i64,
    /// The agent turn it interrupted (a false barge-in), if it did.
    pub interrupted_turn: Option<i32>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsBody {
    pub total_duration_ms: i64,
    /// Mean reply latency over the agent's replies that reached audio; `null` when no caller
    /// turn was answered.
    pub avg_turn_latency_ms: Option<i64>,
    pub tool_executions: i32,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetailBody {
    pub id: String,
    pub agent_id: String,
    pub transport: String,
    pub call_sid: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub status: String,
    /// `hangup`, `transport_closed`, `idle_timeout`, `agent_ended` (the agent's `end_conversation` or `end_call`), `transferred` (handed to a person), `redirected` (keys pressed; the call goes on in a new session), `shutdown`, or the error that ended the session.
    pub end_reason: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub turns: Vec<TurnBody>,
    /// Failed turns and a fatal end, in order.
    pub errors: Vec<ErrorEntry>,
    pub unrecognised_speech: Vec<UnrecognisedSpeechBody>,
    /// What was done to the call beyond the conversation, in order: `hangup_requested` (the
    /// integrator hung it up), `agent_hung_up` (the agent's `end_call`), `transfer`, `keypad`
    /// (the agent's `send_dtmf`), `machine_detection` (an outbound call's answering-machine
    /// verdict).
    pub call_events: Vec<CallEventBody>,
    pub metrics: MetricsBody,
    /// The post-call analysis its agent asked for (the agent's `analysis`): `pending` while it
    /// runs after the call; `null` when the agent asks for none.
    pub analysis: Option<AnalysisBody>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallEventBody {
    pub kind: String,
    /// When, from the start of the session.
    pub at_ms: i64,
    /// What it was about: `transfer` `{name, number, mode, by, outcome}`, `keypad`
    /// `{digits}`, `machine_detection` `{answeredBy, action, detectionMs}`; absent for the
    /// others.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub detail: Option<serde_json::Value>,
}

/// The stage an error code belongs to.
fn stage_of(code: &str) -> &'static str {
    match code {
        "stt_failed" | "stt_timeout" | "stt_unavailable" => "stt",
        "llm_failed" | "llm_timeout" => "llm",
        "tool_step_limit" => "tool",
        "tts_failed" | "tts_timeout" => "tts",
        "audio_out" | "audio" => "audio",
        _ => "session",
    }
}

/// `code: message` as the session records errors.
fn split_error(error: &str) -> (String, String) {
    match error.split_once(": ") {
        Some((code, message)) if !code.contains(' ') => (code.to_string(), message.to_string()),
        _ => ("error".to_string(), error.to_string()),
    }
}

fn errors_of(trace: &SessionTrace) -> Vec<ErrorEntry> {
    let mut errors: Vec<ErrorEntry> = trace
        .turns
        .iter()
        .filter_map(|t| {
            let (code, message) = split_error(t.error.as_deref()?);
            Some(ErrorEntry {
                turn: Some(t.turn_index),
                stage: stage_of(&code).to_string(),
                code,
                message,
            })
        })
        .collect();
    if trace.session.status == crate::store::sessions::SessionStatus::Failed {
        if let Some(reason) = &trace.session.end_reason {
            let (code, message) = split_error(reason);
            errors.push(ErrorEntry {
                turn: None,
                stage: "session".to_string(),
                code,
                message,
            });
        }
    }
    errors
}

fn detail(trace: SessionTrace) -> SessionDetailBody {
    let errors = errors_of(&trace);
    let SessionTrace {
        session: row,
        turns,
        tool_calls,
        events,
        analysis,
    } = trace;
    let false_barge_ins: Vec<i32> = events
        .iter()
        .filter(|e| e.kind == EVENT_UNRECOGNISED_SPEECH)
        .filter_map(|e| e.turn_index)
        .collect();
    let unrecognised_speech = events
        .iter()
        .filter(|e| e.kind == EVENT_UNRECOGNISED_SPEECH)
        .map(|e| UnrecognisedSpeechBody {
            start_ms: e.start_ms,
            end_ms: e.end_ms,
            interrupted_turn: e.turn_index,
        })
        .collect();
    let call_events = events
        .iter()
        .filter(|e| e.kind != EVENT_UNRECOGNISED_SPEECH)
        .map(|e| CallEventBody {
            kind: e.kind.clone(),
            at_ms: e.start_ms,
            detail: e
                .detail
                .as_deref()
                .and_then(|d| serde_json::from_str(d).ok()),
        })
        .collect();
    SessionDetailBody {
        analysis: analysis.as_ref().map(AnalysisBody::from),
        errors,
        unrecognised_speech,
        call_events,
        metrics: MetricsBody {
            total_duration_ms: row.total_duration_ms,
            // Stored as 0 when no reply reached audio: an average no answer went into.
            avg_turn_latency_ms: (row.avg_turn_latency_ms > 0).then_some(row.avg_turn_latency_ms),
            tool_executions: row.tool_executions,
        },
        id: row.id.into(),
        agent_id: row.agent_id.into(),
        transport: row.transport,
        call_sid: row.call_sid,
        from: row.from_number,
        to: row.to_number,
        status: row.status.to_string(),
        end_reason: row.end_reason,
        started_at: iso_opt(row.started_at),
        ended_at: iso_opt(row.ended_at),
        turns: turns
            .into_iter()
            .map(|t| TurnBody {
                latency: t.latency_ms.map(|total_ms| LatencyBody {
                    total_ms,
                    endpoint_ms: t.endpoint_ms.unwrap_or(0),
                    stt_ms: t.stt_ms,
                    llm_ms: t.llm_ms,
                    tool_ms: t.tool_ms.unwrap_or(0),
                    tts_ms: t.tts_ms,
                    platform_ms: t.platform_ms.unwrap_or(0),
                }),
                providers: ProvidersBody {
                    stt: t.stt_provider.clone(),
                    llm: t.llm_provider.clone(),
                    tts: t.tts_provider.clone(),
                },
                tool_executions: tool_calls
                    .iter()
                    .filter(|c| c.turn_index == t.turn_index)
                    .map(|c| ToolExecutionBody {
                        id: c.call_id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                        output: c.output.clone(),
                        is_error: c.is_error,
                        duration_ms: c.duration_ms,
                    })
                    .collect(),
                interruption: t.barge_in_requested.map(|requested| {
                    let bleed_through = t.bleed_through.clone().unwrap_or_default();
                    InterruptionBody {
                        detection_latency_ms: t.barge_in_detection_ms.unwrap_or(0),
                        stop_latency_ms: t.barge_in_stop_ms.unwrap_or(0),
                        bleed_through_words: bleed_through.split_whitespace().count(),
                        bleed_through,
                        requested,
                        false_barge_in: false_barge_ins.contains(&t.turn_index),
                    }
                }),
                endpoint: t.endpoint,
                index: t.turn_index,
                speaker: t.speaker,
                text: t.text,
                start_ms: t.start_ms,
                end_ms: t.end_ms,
                stt_ms: t.stt_ms,
                llm_ms: t.llm_ms,
                tts_ms: t.tts_ms,
                latency_ms: t.latency_ms,
                interrupted: t.interrupted,
                error: t.error,
            })
            .collect(),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct SessionFilter {
    /// Only this agent's sessions.
    pub agent_id: Option<String>,
    /// `desc` (the default): newest first; `asc`: oldest first. Cursors work either way.
    #[param(value_type = Option<String>, pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

impl SessionFilter {
    /// Whether the list is asked newest first.
    fn newest_first(&self) -> Result<bool, ApiError> {
        match self.order.as_deref() {
            Some("asc") => Ok(false),
            None | Some("desc") => Ok(true),
            Some(_) => Err(ApiError::invalid("order", "order must be asc or desc")),
        }
    }
}

/// The caller's sessions (set up but never connected ones are left out), newest first unless
/// `order=asc`.
#[utoipa::path(get, path = "/v1/observability/sessions", tag = "observability", params(SessionFilter, PageQuery),
    responses((status = 200, body = PageBody<SessionSummaryBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/sessions")]
async fn list_sessions(
    state: web::Data<AppState>,
    developer: Developer,
    filter: web::Query<SessionFilter>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let newest_first = filter.newest_first()?;
    let ask = ListSessions {
        developer_id: developer.id().clone(),
        agent_id: filter.into_inner().agent_id.map(AgentId::from),
        newest_first,
        page,
    };
    pagination::answer_page(state.sessions(), ask, SessionSummaryBody::from).await
}

/// One session with its turns and metrics.
#[utoipa::path(get, path = "/v1/observability/sessions/{sessionId}", tag = "observability",
    params(("sessionId" = String, Path, description = "Session id")),
    responses((status = 200, body = SessionDetailBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/sessions/{sessionId}")]
async fn get_session(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let trace = trace_of(
        &state,
        &developer,
        SessionLookup::Id(id.into_inner().into()),
    )
    .await?;
    Ok(HttpResponse::Ok().json(detail(trace)))
}

/// A phone session by the telephony provider's call id (Twilio's CallSid).
#[utoipa::path(get, path = "/v1/observability/calls/{callId}", tag = "observability",
    params(("callId" = String, Path, description = "The provider's call id")),
    responses((status = 200, body = SessionDetailBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/calls/{callId}")]
async fn get_call(
    state: web::Data<AppState>,
    developer: Developer,
    call_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let lookup = SessionLookup::CallSid(call_id.into_inner());
    let trace = trace_of(&state, &developer, lookup).await?;
    Ok(HttpResponse::Ok().json(detail(trace)))
}

async fn trace_of(
    state: &AppState,
    developer: &Developer,
    lookup: SessionLookup,
) -> Result<SessionTrace, ApiError> {
    state
        .sessions()
        .send(GetSession {
            developer_id: developer.id().clone(),
            lookup,
        })
        .await?
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootCauseBody {
    pub session_id: String,
    /// The telephony provider's call id, for phone sessions.
    pub call_sid: Option<String>,
    /// Findings, ordered by turn; empty when nothing went wrong.
    pub issues: Vec<Issue>,
}

fn root_cause(trace: &SessionTrace) -> RootCauseBody {
    RootCauseBody {
        session_id: trace.session.id.to_string(),
        call_sid: trace.session.call_sid.clone(),
        issues: analyse(trace),
    }
}

/// Root-cause analysis of one session: rules over its trace (see docs/api.md for each rule
/// and its threshold).
#[utoipa::path(get, path = "/v1/observability/sessions/{sessionId}/root-cause", tag = "observability",
    params(("sessionId" = String, Path, description = "Session id")),
    responses((status = 200, body = RootCauseBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/sessions/{sessionId}/root-cause")]
async fn session_root_cause(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let trace = trace_of(
        &state,
        &developer,
        SessionLookup::Id(id.into_inner().into()),
    )
    .await?;
    Ok(HttpResponse::Ok().json(root_cause(&trace)))
}

/// Root-cause analysis of a phone call, by the telephony provider's call id.
#[utoipa::path(get, path = "/v1/observability/calls/{callId}/root-cause", tag = "observability",
    params(("callId" = String, Path, description = "The provider's call id")),
    responses((status = 200, body = RootCauseBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/calls/{callId}/root-cause")]
async fn call_root_cause(
    state: web::Data<AppState>,
    developer: Developer,
    call_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let lookup = SessionLookup::CallSid(call_id.into_inner());
    let trace = trace_of(&state, &developer, lookup).await?;
    Ok(HttpResponse::Ok().json(root_cause(&trace)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InterruptionFilter {
    /// Only this agent's sessions.
    pub agent_id: Option<String>,
    /// Sessions started at or after this time (ISO 8601 with a time zone).
    pub from: Option<String>,
    /// Sessions started before this time (ISO 8601 with a time zone).
    pub to: Option<String>,
}

fn instant(param: &str, value: Option<&str>) -> Result<Option<i64>, ApiError> {
    value
        .map(|text| {
            DateTime::parse_from_rfc3339(text.trim())
                .map(|t| t.timestamp_millis())
                .map_err(|_| {
                    ApiError::invalid(
                        param,
                        format!("{param} must be an ISO 8601 time such as 2026-11-22T17:00:00Z"),
                    )
                })
        })
        .transpose()
}

/// Interruption quality over the caller's sessions (one agent's with `agentId`) started in
/// `[from, to)`: detection and stop latency percentiles, bleed-through words, false barge-ins.
#[utoipa::path(get, path = "/v1/observability/sessions/interruption-quality", tag = "observability",
    params(InterruptionFilter),
    responses((status = 200, body = InterruptionQuality), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/sessions/interruption-quality")]
async fn interruption_quality(
    state: web::Data<AppState>,
    developer: Developer,
    filter: web::Query<InterruptionFilter>,
) -> Result<HttpResponse, ApiError> {
    let filter = filter.into_inner();
    let from = instant("from", filter.from.as_deref())?;
    let to = instant("to", filter.to.as_deref())?;
    if let (Some(from), Some(to)) = (from, to) {
        if from >= to {
            return Err(ApiError::invalid("to", "to must be later than from"));
        }
    }
    let data = state
        .sessions()
        .send(GetInterruptions(SessionScope {
            developer_id: developer.id().clone(),
            agent_id: filter.agent_id.map(AgentId::from),
            from,
            to,
        }))
        .await??;
    Ok(HttpResponse::Ok().json(aggregate(&data)))
}
