//! `POST /v1/agents/{id}/sync`: pushes an agent (prompt, first message, voice, language,
//! model settings) to the outside platform configured in `[sync]`: created there on the first
//! sync, updated on later ones, with the platform's id kept as `externalAgentId`.

use actix_web::{post, web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Developer;
use super::methods;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::agents::GetAgent;
use crate::registry::telephony::{GetAgentSync, SaveAgentSync};
use crate::store::telephony::AgentSyncRow;
use crate::time::{self, iso};
use crate::vendors::agent_sync::SyncError;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(sync_agent);
    methods::other_methods(cfg, &["/agents/{id}/sync"]);
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncBody {
    pub synced: bool,
    /// The agent's id on the platform.
    pub external_agent_id: String,
    /// The platform, e.g. `elevenlabs`.
    pub provider: String,
    /// True when this sync created the agent there (first sync, or it had been deleted there).
    pub created: bool,
    pub synced_at: String,
}

#[utoipa::path(post, path = "/v1/agents/{id}/sync", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = SyncBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 502, body = ErrorBody, description = "The platform refused or failed; the message names it"),
        (status = 503, body = ErrorBody, description = "No platform is configured ([sync])")),
    security(("bearer" = [])))]
#[post("/agents/{id}/sync")]
async fn sync_agent(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let developer_id = developer.id().clone();
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: id.into_inner().into(),
        })
        .await??;
    let sync = state.agent_sync().as_ref().ok_or_else(|| {
        ApiError::Unavailable(
            "agent sync is not configured: set [sync] provider and api_key".into(),
        )
    })?;
    let provider = sync.provider().to_string();
    let existing = state
        .telephony()
        .send(GetAgentSync {
            developer_id: developer_id.clone(),
            agent_id: agent.id.clone(),
            provider: provider.clone(),
        })
        .await??;
    let pushed = sync
        .push(
            &agent,
            existing.as_ref().map(|e| e.external_agent_id.as_str()),
        )
        .await
        .map_err(|SyncError::Vendor(message)| ApiError::Upstream(message))?;
    let now = time::now_ms();
    state
        .telephony()
        .send(SaveAgentSync(AgentSyncRow {
            developer_id,
            agent_id: agent.id,
            provider: provider.clone(),
            external_agent_id: pushed.external_agent_id.clone(),
            synced_at: now,
        }))
        .await??;
    Ok(HttpResponse::Ok().json(SyncBody {
        synced: true,
        external_agent_id: pushed.external_agent_id,
        provider,
        created: pushed.created,
        synced_at: iso(now),
    }))
}
