//! `/v1/keys`: create, list, revoke and rotate API keys.

use actix_web::{delete, get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::OptionalJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::KeyId;
use crate::registry::keys::{CreateKey, IssuedKey, KeyInfo, ListKeys, RevokeKey, RotateKey};
use crate::time::{iso, iso_opt};

const SHOWN_ONCE: &str = "Store this key now: it is shown only once and cannot be retrieved again.";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_key)
        .service(list_keys)
        .service(revoke_key)
        .service(rotate_key);
    methods::other_methods(cfg, &["/keys", "/keys/{id}", "/keys/{id}/rotate"]);
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateKeyRequest {
    /// 1-100 characters; default `Default`.
    pub name: Option<String>,
    /// 1-365; the key never expires when omitted.
    pub expires_in_days: Option<i64>,
}

/// A newly issued key: the only response that carries the raw key.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedKeyBody {
    pub id: String,
    /// The raw key, shown once.
    pub key: String,
    pub name: String,
    pub prefix: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub message: String,
}

/// A key as lists show it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyBody {
    pub id: String,
    pub name: String,
    /// The first 12 characters of the raw key.
    pub prefix: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
}

impl From<IssuedKey> for IssuedKeyBody {
    fn from(issued: IssuedKey) -> IssuedKeyBody {
        IssuedKeyBody {
            id: issued.info.id.into(),
            key: issued.raw,
            name: issued.info.name,
            prefix: issued.info.prefix,
            created_at: iso(issued.info.created_at),
            expires_at: iso_opt(issued.info.expires_at),
            message: SHOWN_ONCE.to_string(),
        }
    }
}

impl From<KeyInfo> for KeyBody {
    fn from(info: KeyInfo) -> KeyBody {
        KeyBody {
            id: info.id.into(),
            name: info.name,
            prefix: info.prefix,
            created_at: iso(info.created_at),
            expires_at: iso_opt(info.expires_at),
            last_used_at: iso_opt(info.last_used_at),
        }
    }
}

/// Creates an API key for the caller's developer account.
#[utoipa::path(post, path = "/v1/keys", tag = "keys", request_body(content = CreateKeyRequest, description = "Optional: an empty body creates a key named `Default` without expiry"),
    responses((status = 201, body = IssuedKeyBody), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/keys")]
async fn create_key(
    state: web::Data<AppState>,
    developer: Developer,
    body: OptionalJson<CreateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.0;
    let name = request.name.unwrap_or_else(|| "Default".to_string());
    validate::required_text("name", Some(&name), 100)?;
    if let Some(days) = request.expires_in_days {
        validate::integer_in("expiresInDays", days, 1, 365)?;
    }
    let issued = state
        .keys()
        .send(CreateKey {
            developer_id: developer.id().clone(),
            name,
            expires_in_days: request.expires_in_days,
        })
        .await??;
    Ok(HttpResponse::Created().json(IssuedKeyBody::from(issued)))
}

/// Lists the caller's live keys (never the raw key).
#[utoipa::path(get, path = "/v1/keys", tag = "keys", params(PageQuery),
    responses((status = 200, body = PageBody<KeyBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/keys")]
async fn list_keys(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListKeys {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.keys(), ask, KeyBody::from).await
}

/// Revokes a key; it is refused from the very next request on.
#[utoipa::path(delete, path = "/v1/keys/{id}", tag = "keys", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/keys/{id}")]
async fn revoke_key(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = KeyId::from(id.into_inner());
    let revoked = state
        .keys()
        .send(RevokeKey {
            developer_id: developer.id().clone(),
            key_id: id.clone(),
        })
        .await??;
    if !revoked {
        return Err(ApiError::not_found("API key", id.as_str()));
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Issues a new key with the same name and lifetime and revokes this one, atomically.
#[utoipa::path(post, path = "/v1/keys/{id}/rotate", tag = "keys", params(("id" = String, Path)),
    responses((status = 200, body = IssuedKeyBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/keys/{id}/rotate")]
async fn rotate_key(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = KeyId::from(id.into_inner());
    let rotated = state
        .keys()
        .send(RotateKey {
            developer_id: developer.id().clone(),
            key_id: id.clone(),
        })
        .await??
        .ok_or_else(|| ApiError::not_found("API key", id.as_str()))?;
    Ok(HttpResponse::Ok().json(IssuedKeyBody::from(rotated)))
}
