//! `/v1/agents/{id}/instances`: per-agent records (a customer, a store location, a caller)
//! whose `context` and `variables` personalise the agent. A chat or call names one by
//! `instanceId`, or is matched to one by the caller's phone number (E.164, unique per agent).

use actix_web::{delete, get, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate::{self, nullable};
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::InstanceId;
use crate::registry::instances::{
    CreateInstance, DeleteInstance, GetInstance, InstanceLookup, ListInstances, UpdateInstance,
};
use crate::store::instances::{InstanceChanges, InstanceRow};
use crate::telephony::is_e164;
use crate::time::{self, iso};

pub const MAX_CONTEXT_CHARS: usize = 10_000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_instance)
        .service(list_instances)
        .service(get_instance)
        .service(update_instance)
        .service(delete_instance);
    methods::other_methods(
        cfg,
        &[
            "/agents/{id}/instances",
            "/agents/{id}/instances/{instanceId}",
        ],
    );
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceBody {
    pub id: String,
    pub agent_id: String,
    pub name: Option<String>,
    /// E.164, e.g. `+14155550123`.
    pub phone_number: Option<String>,
    /// Text added to the agent's system prompt for this instance.
    pub context: String,
    /// Values substituted for `{{name}}` in the agent's systemPrompt and firstMessage.
    #[schema(value_type = Object)]
    pub variables: Value,
    pub created_at: String,
    pub updated_at: String,
}

impl From<InstanceRow> for InstanceBody {
    fn from(row: InstanceRow) -> InstanceBody {
        InstanceBody {
            id: row.id.into(),
            agent_id: row.agent_id.into(),
            name: row.name,
            phone_number: row.phone_number,
            context: row.context,
            variables: validate::stored_json(&row.metadata),
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
        }
    }
}

/// Instance fields; on update, absent fields stay and `null` clears.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InstanceFields {
    /// Custom id on create: 1-60 letters, digits, `_` or `-`. Generated when omitted.
    pub id: Option<String>,
    /// Up to 100 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    /// E.164: `+` and 2-15 digits.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub phone_number: Option<Option<String>>,
    /// Up to 10,000 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub context: Option<Option<String>>,
    /// An object of at most 64 KiB.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>)]
    pub variables: Option<Option<Map<String, Value>>>,
}

fn phone(value: Option<Option<String>>) -> Result<Option<Option<String>>, ApiError> {
    if let Some(Some(number)) = &value {
        if !is_e164(number) {
            return Err(ApiError::invalid(
                "phoneNumber",
                "phoneNumber must be in E.164 form, e.g. +14155550123",
            ));
        }
    }
    Ok(value)
}

fn changes(fields: InstanceFields) -> Result<InstanceChanges, ApiError> {
    if let Some(Some(name)) = &fields.name {
        validate::length("name", name, 1, 100)?;
    }
    let context = fields.context.map(Option::unwrap_or_default);
    if let Some(context) = &context {
        validate::length("context", context, 0, MAX_CONTEXT_CHARS)?;
    }
    let variables = match fields.variables {
        None => None,
        Some(map) => Some(validate::metadata("variables", map.as_ref())?),
    };
    Ok(InstanceChanges {
        name: fields.name,
        phone_number: phone(fields.phone_number)?,
        context,
        metadata: variables,
        updated_at: time::now_ms(),
    })
}

#[utoipa::path(post, path = "/v1/agents/{id}/instances", tag = "agents", request_body = InstanceFields,
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 201, body = InstanceBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "The phone number or id is taken", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/{id}/instances")]
async fn create_instance(
    state: web::Data<AppState>,
    developer: Developer,
    agent: web::Path<String>,
    body: ApiJson<InstanceFields>,
) -> Result<HttpResponse, ApiError> {
    let mut fields = body.into_inner();
    let id = fields.id.take();
    if let Some(id) = &id {
        validate::identifier("id", id, 60)?;
    }
    let changes = changes(fields)?;
    let now = time::now_ms();
    let instance = InstanceRow {
        seq: 0,
        id: id.map_or_else(InstanceId::new, InstanceId::from),
        developer_id: developer.id().clone(),
        agent_id: agent.into_inner().into(),
        name: changes.name.flatten(),
        phone_number: changes.phone_number.flatten(),
        context: changes.context.unwrap_or_default(),
        metadata: changes.metadata.unwrap_or_else(|| "{}".to_string()),
        created_at: now,
        updated_at: now,
    };
    let row = state.agents().send(CreateInstance { instance }).await??;
    Ok(HttpResponse::Created().json(InstanceBody::from(row)))
}

#[utoipa::path(get, path = "/v1/agents/{id}/instances", tag = "agents",
    params(("id" = String, Path, description = "Agent id"), PageQuery),
    responses((status = 200, body = PageBody<InstanceBody>), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/agents/{id}/instances")]
async fn list_instances(
    state: web::Data<AppState>,
    developer: Developer,
    agent: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListInstances {
        developer_id: developer.id().clone(),
        agent_id: agent.into_inner().into(),
        page,
    };
    pagination::answer_page(state.agents(), ask, InstanceBody::from).await
}

#[utoipa::path(get, path = "/v1/agents/{id}/instances/{instanceId}", tag = "agents",
    params(("id" = String, Path, description = "Agent id"), ("instanceId" = String, Path, description = "Instance id")),
    responses((status = 200, body = InstanceBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/agents/{id}/instances/{instanceId}")]
async fn get_instance(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (agent_id, instance_id) = path.into_inner();
    let row = state
        .agents()
        .send(GetInstance {
            developer_id: developer.id().clone(),
            agent_id: agent_id.into(),
            lookup: InstanceLookup::Id(instance_id.into()),
        })
        .await??;
    Ok(HttpResponse::Ok().json(InstanceBody::from(row)))
}

#[utoipa::path(put, path = "/v1/agents/{id}/instances/{instanceId}", tag = "agents", request_body = InstanceFields,
    params(("id" = String, Path, description = "Agent id"), ("instanceId" = String, Path, description = "Instance id")),
    responses((status = 200, body = InstanceBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
#[put("/agents/{id}/instances/{instanceId}")]
async fn update_instance(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<(String, String)>,
    body: ApiJson<InstanceFields>,
) -> Result<HttpResponse, ApiError> {
    let (agent_id, instance_id) = path.into_inner();
    let mut fields = body.into_inner();
    if fields.id.take().is_some() {
        return Err(ApiError::invalid(
            "id",
            "an instance's id cannot be changed",
        ));
    }
    let changes = changes(fields)?;
    let row = state
        .agents()
        .send(UpdateInstance {
            developer_id: developer.id().clone(),
            agent_id: agent_id.into(),
            instance_id: instance_id.into(),
            changes,
        })
        .await??;
    Ok(HttpResponse::Ok().json(InstanceBody::from(row)))
}

#[utoipa::path(delete, path = "/v1/agents/{id}/instances/{instanceId}", tag = "agents",
    params(("id" = String, Path, description = "Agent id"), ("instanceId" = String, Path, description = "Instance id")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/agents/{id}/instances/{instanceId}")]
async fn delete_instance(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (agent_id, instance_id) = path.into_inner();
    state
        .agents()
        .send(DeleteInstance {
            developer_id: developer.id().clone(),
            agent_id: agent_id.into(),
            instance_id: instance_id.into(),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}
