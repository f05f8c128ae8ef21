//! `/v1/observability`: records of real-time sessions. Lists of session summaries (filtered by
//! agent), and the detail of one session, by session id or by the telephony provider's call
//! id: its turns with per-stage timings and the session's metrics.

use actix_web::{get, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Developer;
use super::pagination::{PageBody, PageQuery};
use super::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::sessions::{GetSession, ListSessions, SessionLookup};
use crate::store::sessions::{SessionRow, TurnRow};
use crate::time::iso_opt;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(list_sessions)
        .service(get_session)
        .service(get_call);
    super::other_methods(
        cfg,
        &[
            "/observability/sessions",
            "/observability/sessions/{id}",
            "/observability/calls/{call_id}",
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
            id: row.id,
            agent_id: row.agent_id,
            transport: row.transport,
            call_sid: row.call_sid,
            started_at: iso_opt(row.started_at),
            ended_at: iso_opt(row.ended_at),
            turns: row.turn_count,
            status: row.status,
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
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsBody {
    pub total_duration_ms: i64,
    pub avg_turn_latency_ms: i64,
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
    /// `hangup`, `transport_closed`, `idle_timeout`, or the error that ended the session.
    pub end_reason: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub turns: Vec<TurnBody>,
    pub metrics: MetricsBody,
}

fn detail(row: SessionRow, turns: Vec<TurnRow>) -> SessionDetailBody {
    SessionDetailBody {
        metrics: MetricsBody {
            total_duration_ms: row.total_duration_ms,
            avg_turn_latency_ms: row.avg_turn_latency_ms,
            tool_executions: row.tool_executions,
        },
        id: row.id,
        agent_id: row.agent_id,
        transport: row.transport,
        call_sid: row.call_sid,
        from: row.from_number,
        to: row.to_number,
        status: row.status,
        end_reason: row.end_reason,
        started_at: iso_opt(row.started_at),
        ended_at: iso_opt(row.ended_at),
        turns: turns
            .into_iter()
            .map(|t| TurnBody {
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
}

/// The caller's sessions (set up but never connected ones are left out), oldest first.
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
    let page = state
        .sessions
        .send(ListSessions {
            developer_id: developer.id().to_string(),
            agent_id: filter.into_inner().agent_id,
            page,
        })
        .await??;
    Ok(HttpResponse::Ok().json(PageBody::from_page(page, SessionSummaryBody::from)))
}

/// One session with its turns and metrics.
#[utoipa::path(get, path = "/v1/observability/sessions/{sessionId}", tag = "observability",
    params(("sessionId" = String, Path, description = "Session id")),
    responses((status = 200, body = SessionDetailBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/sessions/{id}")]
async fn get_session(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (row, turns) = state
        .sessions
        .send(GetSession {
            developer_id: developer.id().to_string(),
            lookup: SessionLookup::Id(id.into_inner()),
        })
        .await??;
    Ok(HttpResponse::Ok().json(detail(row, turns)))
}

/// A phone session by the telephony provider's call id (Twilio's CallSid).
#[utoipa::path(get, path = "/v1/observability/calls/{callId}", tag = "observability",
    params(("callId" = String, Path, description = "The provider's call id")),
    responses((status = 200, body = SessionDetailBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/observability/calls/{call_id}")]
async fn get_call(
    state: web::Data<AppState>,
    developer: Developer,
    call_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (row, turns) = state
        .sessions
        .send(GetSession {
            developer_id: developer.id().to_string(),
            lookup: SessionLookup::CallSid(call_id.into_inner()),
        })
        .await??;
    Ok(HttpResponse::Ok().json(detail(row, turns)))
}
