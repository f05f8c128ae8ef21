//! `POST /v1/agents/provision`: an agent, a new knowledge collection and its first content in
//! one step. Every item is validated, fetched, chunked and embedded before anything is
//! written; then all rows go to storage in one transaction. Any bad item is a 400 naming it
//! (`initialContent[2].contentType`) and nothing is created.

use actix_web::{post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::agents::{new_agent_row, AgentBody, AgentFields};
use super::auth::Developer;
use super::body::ApiJson;
use super::collections::CollectionBody;
use super::knowledge::{prepare_document, IngestBody, IngestRequest};
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::billing::Usage;
use crate::error::{ApiError, ErrorBody};
use crate::ids::CollectionId;
use crate::registry::agents::ProvisionAgent;
use crate::registry::meter;
use crate::store::collections::CollectionRow;
use crate::time;

/// Most items of `initialContent`.
const MAX_ITEMS: usize = 50;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(provision);
    methods::other_methods(cfg, &["/agents/provision"]);
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProvisionCollection {
    /// 1-100 characters; default "<agent name> knowledge".
    pub name: Option<String>,
    /// Up to 500 characters.
    pub description: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProvisionRequest {
    /// 1-100 characters.
    pub name: Option<String>,
    /// Up to 10,000 characters.
    pub system_prompt: Option<String>,
    pub collection: Option<ProvisionCollection>,
    /// At most 50 items, each as the body of POST /v1/collections/{id}/ingest.
    pub initial_content: Option<Vec<IngestRequest>>,
    pub tts_provider: Option<String>,
    pub llm_provider: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionBody {
    pub agent: AgentBody,
    pub collection: CollectionBody,
    pub ingest_results: Vec<IngestBody>,
}

/// Creates an agent with a new collection holding its initial content, all or nothing.
#[utoipa::path(post, path = "/v1/agents/provision", tag = "agents", request_body = ProvisionRequest,
    responses((status = 201, body = ProvisionBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/provision")]
async fn provision(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<ProvisionRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let items = request.initial_content.unwrap_or_default();
    if items.len() > MAX_ITEMS {
        return Err(ApiError::invalid(
            "initialContent",
            format!("initialContent may hold at most {MAX_ITEMS} items"),
        ));
    }
    let collection_fields = request.collection.unwrap_or_default();
    let now = time::now_ms();
    let collection_id = CollectionId::new();
    let mut agent = new_agent_row(
        developer.id(),
        AgentFields {
            // Absent fields stay absent (their defaults apply); none of them is null.
            name: request.name.clone().map(Some),
            system_prompt: request.system_prompt.map(Some),
            tts_provider: request.tts_provider.map(Some),
            llm_provider: request.llm_provider.map(Some),
            ..AgentFields::default()
        },
    )?;
    agent.collection_id = Some(collection_id.clone());
    let collection_name = collection_fields
        .name
        .unwrap_or_else(|| format!("{} knowledge", agent.name));
    validate::required_text("collection.name", Some(&collection_name), 100)?;
    validate::optional_text(
        "collection.description",
        collection_fields.description.as_deref(),
        500,
    )?;
    let collection = CollectionRow {
        seq: 0,
        id: collection_id.clone(),
        developer_id: developer.id().clone(),
        name: collection_name,
        description: collection_fields.description,
        metadata: "{}".to_string(),
        created_at: now,
    };

    let mut content = Vec::with_capacity(items.len());
    let mut ingest_results = Vec::with_capacity(items.len());
    if !items.is_empty() {
        meter::ensure_credits(state.metering(), developer.id(), true).await?;
    }
    for (index, item) in items.into_iter().enumerate() {
        let prepared = prepare_document(&state, developer.id(), &collection_id, item)
            .await
            .map_err(|e| name_item(e, index))?;
        meter::charge(
            state.metering(),
            developer.id(),
            Usage::RagEmbed {
                tokens: prepared.document.tokens.max(0) as u64,
            },
            true,
        );
        ingest_results.push(prepared.body());
        content.push((prepared.document, prepared.chunks));
    }
    state
        .agents()
        .send(ProvisionAgent {
            collection: collection.clone(),
            agent: agent.clone(),
            content,
        })
        .await??;
    Ok(HttpResponse::Created().json(ProvisionBody {
        agent: AgentBody::from(agent),
        collection: CollectionBody::from(collection),
        ingest_results,
    }))
}

/// Puts the item's position in front of the field an ingest error names.
fn name_item(error: ApiError, index: usize) -> ApiError {
    match error {
        ApiError::Validation { message, param } => {
            let param = match param {
                Some(field) => format!("initialContent[{index}].{field}"),
                None => format!("initialContent[{index}]"),
            };
            ApiError::Validation {
                message: format!("initialContent[{index}]: {message}"),
                param: Some(param),
            }
        }
        other => other,
    }
}
