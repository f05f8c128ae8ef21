//! `/v1/phone-numbers`: the routing table of the inbound voice webhook. Each entry maps a
//! phone number (E.164) to one of the developer's agents and, optionally, one of its
//! instances; a Twilio number whose voice URL points at `POST /v1/sessions/twilio/inbound`
//! then reaches that agent with no server of the developer's own in between.
//!
//! A route needs proof that the number is the developer's: adding it texts a 6-digit code to
//! the number, and the route takes calls (and the number may be an outbound caller id) only
//! once `POST /v1/phone-numbers/{id}/verify` confirmed it. Pending claims do not block
//! anyone: the first developer to prove a number gets it.

use actix_web::{delete, get, post, put, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate::{self, nullable};
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::{AgentId, InstanceId, PhoneNumberId};
use crate::portal::Portal;
use crate::registry::telephony::{
    CreatePhoneNumber, DeletePhoneNumber, GetPhoneNumber, ListPhoneNumbers, UpdatePhoneNumber,
    VerifyPhoneNumber,
};
use crate::store::telephony::{PhoneNumberChanges, PhoneNumberRow};
use crate::telephony::is_e164;
use crate::time::{self, iso};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_number)
        .service(list_numbers)
        .service(get_number)
        .service(update_number)
        .service(delete_number)
        .service(verify_number);
    methods::other_methods(
        cfg,
        &[
            "/phone-numbers",
            "/phone-numbers/{id}",
            "/phone-numbers/{id}/verify",
        ],
    );
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
    /// True once the code texted to the number was confirmed; until then the route takes no
    /// calls and the number is no outbound caller id.
    pub verified: bool,
    pub verified_at: Option<String>,
    /// While pending: when the code texted to the number expires.
    pub code_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<PhoneNumberRow> for PhoneNumberBody {
    fn from(row: PhoneNumberRow) -> PhoneNumberBody {
        let pending_code = row.code_hash.is_some() && row.verified_at.is_none();
        PhoneNumberBody {
            id: row.id.into(),
            phone_number: row.phone_number,
            agent_id: row.agent_id.into(),
            instance_id: row.instance_id.map(String::from),
            name: row.name,
            verified: row.verified_at.is_some(),
            verified_at: row.verified_at.map(iso),
            code_expires_at: row.code_expires_at.filter(|_| pending_code).map(iso),
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
        }
    }
}

/// The code texted to a pending route's number.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyRequest {
    /// The 6 digits texted to the number.
    pub code: Option<String>,
}

/// A route's fields; on update, absent fields stay and `null` clears a nullable one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhoneNumberFields {
    /// E.164: `+` and 2-15 digits. Required on create; one route per number per developer
    /// (409); cannot be changed on update (400).
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
        agent_id: agent_id.map(AgentId::from),
        instance_id: fields.instance_id.map(|i| i.map(InstanceId::from)),
        name: fields.name,
        updated_at: time::now_ms(),
    })
}

#[utoipa::path(post, path = "/v1/phone-numbers", tag = "telephony", request_body = PhoneNumberFields,
    responses((status = 201, body = PhoneNumberBody, description = "A pending route; a 6-digit code was texted to the number (confirm it with /verify)"),
        (status = 400, body = ErrorBody, description = "Invalid field, or the number cannot receive texts"), (status = 401, body = ErrorBody),
        (status = 409, description = "You already have a route for this number", body = ErrorBody),
        (status = 429, description = "Too many of your routes are waiting for their code", body = ErrorBody),
        (status = 502, description = "The code could not be texted", body = ErrorBody)),
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
    let numbers = &state.config().telephony.numbers;
    let id = PhoneNumberId::new();
    let code = Portal::new_code();
    let expires_at = now + (numbers.code_ttl_seconds as i64).saturating_mul(1000);
    let row = state
        .telephony()
        .send(CreatePhoneNumber {
            row: PhoneNumberRow {
                seq: 0,
                id: id.clone(),
                developer_id: developer.id().clone(),
                phone_number: phone_number.clone(),
                agent_id,
                instance_id: changes.instance_id.flatten(),
                name: changes.name.flatten(),
                created_at: now,
                updated_at: now,
                verified_at: None,
                code_hash: Some(state.portal().claim_code_hash(id.as_str(), &code)),
                code_expires_at: Some(expires_at),
                code_attempts: 0,
            },
            max_pending: numbers.max_pending_claims,
            retry_after_seconds: numbers.code_ttl_seconds,
        })
        .await??;
    let minutes = numbers.code_ttl_seconds.div_ceil(60);
    let texted = state
        .portal()
        .text(
            &phone_number,
            &format!(
                "Your Switchboard code to route {phone_number} is {code}. It expires in \
                 {minutes} minutes. Do not share it."
            ),
            &format!("the code proving {phone_number} (route {id}) is {code}"),
            "phoneNumber",
        )
        .await;
    if let Err(e) = texted {
        // Nothing was sent: the claim is dropped rather than left waiting for a lost code.
        let _ = state
            .telephony()
            .send(DeletePhoneNumber {
                developer_id: developer.id().clone(),
                id,
            })
            .await;
        return Err(e);
    }
    Ok(HttpResponse::Created().json(PhoneNumberBody::from(row)))
}

/// Confirms the code texted to the number: the route is verified and takes calls from now on.
#[utoipa::path(post, path = "/v1/phone-numbers/{id}/verify", tag = "telephony", request_body = VerifyRequest,
    params(("id" = String, Path, description = "Phone number route id")),
    responses((status = 200, body = PhoneNumberBody, description = "Verified (or already was)"),
        (status = 400, body = ErrorBody, description = "Not 6 digits, wrong (tries left in the message), expired or burnt code (param `code`)"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Another developer proved the number first")),
    security(("bearer" = [])))]
#[post("/phone-numbers/{id}/verify")]
async fn verify_number(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    body: ApiJson<VerifyRequest>,
) -> Result<HttpResponse, ApiError> {
    let code = body
        .into_inner()
        .code
        .ok_or_else(|| ApiError::invalid("code", "code is required"))?;
    let code = code.trim().to_string();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::invalid(
            "code",
            "code must be the 6 digits texted to the number",
        ));
    }
    let id = PhoneNumberId::from(id.into_inner());
    let portal = state.portal().clone();
    let route = id.to_string();
    let row = state
        .telephony()
        .send(VerifyPhoneNumber {
            developer_id: developer.id().clone(),
            id,
            matches: Box::new(move |stored| portal.claim_code_matches(&route, &code, stored)),
            max_attempts: state.config().telephony.numbers.code_max_attempts,
        })
        .await??;
    Ok(HttpResponse::Ok().json(PhoneNumberBody::from(row)))
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
    let ask = ListPhoneNumbers {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.telephony(), ask, PhoneNumberBody::from).await
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
        .telephony()
        .send(GetPhoneNumber {
            developer_id: developer.id().clone(),
            id: id.into_inner().into(),
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
        .telephony()
        .send(UpdatePhoneNumber {
            developer_id: developer.id().clone(),
            id: id.into_inner().into(),
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
        .telephony()
        .send(DeletePhoneNumber {
            developer_id: developer.id().clone(),
            id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}
