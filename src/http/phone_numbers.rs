//! `/v1/phone-numbers`: the routing table of the inbound voice webhook. Each entry maps a
//! phone number (E.164, unique across the service) to one of the developer's agents and,
//! optionally, one of its instances; a Twilio number whose voice URL points at
//! `POST /v1/sessions/twilio/inbound` then reaches that agent with no server of the
//! developer's own in between.

use actix_web::{delete, get, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::pagination::{PageBody, PageQuery};
use super::validate::{self, nullable};
use super::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::new_id;
use crate::registry::telephony::{
    CreatePhoneNumber, DeletePhoneNumber, GetPhoneNumber, ListPhoneNumbers, UpdatePhoneNumber,
};
use crate::store::telephony::{PhoneNumberChanges, PhoneNumberRow};
use crate::telephony::is_e164;
use crate::time::{self, iso};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_number)
        .service(list_numbers)
        .service(get_number)
        .service(update_number)
        .service(delete_number);
    super::other_methods(cfg, &["/phone-numbers", "/phone-numbers/{id}"]);
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhoneNumberBody {
    pub id: String,
    /// E.164, e.g. `+14155550123`.
    pub phone_number: String,
    pub agent_id: String,
    pub instance_id: Option<String>,
    pub name: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<PhoneNumberRow> for PhoneNumberBody {
    fn from(row: PhoneNumberRow) -> PhoneNumberBody {
        PhoneNumberBody {
            id: row.id,
            phone_number: row.phone_number,
            agent_id: row.agent_id,
            instance_id: row.instance_id,
            name: row.name,
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
        }
    }
}

/// A route's fields; on update, absent fields stay and `null` clears a nullable one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhoneNumberFields {
    /// E.164: `+` and 2-15 digits. Required on create; unique across the service (409).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub phone_number: Option<Option<String>>,
    /// One of your agents. Required on create.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub agent_id: Option<Option<String>>,
    /// An instance of that agent; otherwise the instance whose phoneNumber is the caller's.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub instance_id: Option<Option<String>>,
    /// Up to 100 characters.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
}

fn changes(fields: PhoneNumberFields) -> Result<PhoneNumberChanges, ApiError> {
    let phone_number = validate::not_null("phoneNumber", fields.phone_number)?;
    if let Some(number) = &phone_number {
        if !is_e164(number) {
            return Err(ApiError::invalid(
                "phoneNumber",
                "phoneNumber must be in E.164 form, e.g. +14155550123",
            ));
        }
    }
    let agent_id = validate::not_null("agentId", fields.agent_id)?;
    if let Some(agent) = &agent_id {
        validate::length("agentId", agent, 1, 60)?;
    }
    if let Some(Some(instance)) = &fields.instance_id {
        validate::length("instanceId", instance, 1, 60)?;
    }
    if let Some(Some(name)) = &fields.name {
        validate::length("name", name, 1, 100)?;
    }
    Ok(PhoneNumberChanges {
        phone_number,
        agent_id,
        instance_id: fields.instance_id,
        name: fields.name,
        updated_at: time::now_ms(),
    })
}

#[utoipa::path(post, path = "/v1/phone-numbers", tag = "telephony", request_body = PhoneNumberFields,
    responses((status = 201, body = PhoneNumberBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, description = "The number is already routed", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/phone-numbers")]
async fn create_number(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<PhoneNumberFields>,
) -> Result<HttpResponse, ApiError> {
    let changes = changes(body.into_inner())?;
    let phone_number = changes
        .phone_number
        .ok_or_else(|| ApiError::invalid("phoneNumber", "phoneNumber is required"))?;
    let agent_id = changes
        .agent_id
        .ok_or_else(|| ApiError::invalid("agentId", "agentId is required"))?;
    let now = time::now_ms();
    let row = state
        .telephony
        .send(CreatePhoneNumber(PhoneNumberRow {
            seq: 0,
            id: new_id("pn"),
            developer_id: developer.id().to_string(),
            phone_number,
            agent_id,
            instance_id: changes.instance_id.flatten(),
            name: changes.name.flatten(),
            created_at: now,
            updated_at: now,
        }))
        .await??;
    Ok(HttpResponse::Created().json(PhoneNumberBody::from(row)))
}

#[utoipa::path(get, path = "/v1/phone-numbers", tag = "telephony", params(PageQuery),
    responses((status = 200, body = PageBody<PhoneNumberBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/phone-numbers")]
async fn list_numbers(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let page = state
        .telephony
        .send(ListPhoneNumbers {
            developer_id: developer.id().to_string(),
            page,
        })
        .await??;
    Ok(HttpResponse::Ok().json(PageBody::from_page(page, PhoneNumberBody::from)))
}

#[utoipa::path(get, path = "/v1/phone-numbers/{id}", tag = "telephony",
    params(("id" = String, Path, description = "Phone number route id")),
    responses((status = 200, body = PhoneNumberBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/phone-numbers/{id}")]
async fn get_number(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let row = state
        .telephony
        .send(GetPhoneNumber {
            developer_id: developer.id().to_string(),
            id: id.into_inner(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(PhoneNumberBody::from(row)))
}

#[utoipa::path(put, path = "/v1/phone-numbers/{id}", tag = "telephony", request_body = PhoneNumberFields,
    params(("id" = String, Path, description = "Phone number route id")),
    responses((status = 200, body = PhoneNumberBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
#[put("/phone-numbers/{id}")]
async fn update_number(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    body: ApiJson<PhoneNumberFields>,
) -> Result<HttpResponse, ApiError> {
    let changes = changes(body.into_inner())?;
    let row = state
        .telephony
        .send(UpdatePhoneNumber {
            developer_id: developer.id().to_string(),
            id: id.into_inner(),
            changes,
        })
        .await??;
    Ok(HttpResponse::Ok().json(PhoneNumberBody::from(row)))
}

#[utoipa::path(delete, path = "/v1/phone-numbers/{id}", tag = "telephony",
    params(("id" = String, Path, description = "Phone number route id")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/phone-numbers/{id}")]
async fn delete_number(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .telephony
        .send(DeletePhoneNumber {
            developer_id: developer.id().to_string(),
            id: id.into_inner(),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}
