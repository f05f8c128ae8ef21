//! `/v1/provider-keys`: vendor keys a developer stores so their requests and calls use them
//! without a header. Keys are sealed (AES-256-GCM) before they reach storage and are never
//! returned; lists show the last four characters.

use actix_web::{delete, get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::provider_keys::{ProviderKeyRow, StoredKey};
use crate::time::{iso, iso_opt};
use crate::vendors::catalog;

const MAX_KEY_CHARS: usize = 1000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(store_key)
        .service(list_keys)
        .service(verify_key)
        .service(delete_key);
    methods::other_methods(
        cfg,
        &[
            "/provider-keys",
            "/provider-keys/{provider}",
            "/provider-keys/{provider}/verify",
        ],
    );
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StoreProviderKey {
    /// A vendor id with an adapter: openai, anthropic, deepgram, elevenlabs, cartesia.
    pub provider: Option<String>,
    /// The vendor's API key, 1-1000 visible characters.
    pub api_key: Option<String>,
}

/// A stored key as the API shows it: never the key itself.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKeyBody {
    pub provider: String,
    /// The key's last four characters (never more than a third of a short key).
    pub key_hint: String,
    pub created_at: String,
    /// When a verify call last succeeded; null until then (and after the key is replaced).
    pub last_verified_at: Option<String>,
}

impl From<ProviderKeyRow> for ProviderKeyBody {
    fn from(row: ProviderKeyRow) -> Self {
        ProviderKeyBody {
            provider: row.provider,
            key_hint: row.key_hint,
            created_at: iso(row.created_at),
            last_verified_at: iso_opt(row.last_verified_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderKeyList {
    /// Every stored key, by provider id.
    pub data: Vec<ProviderKeyBody>,
}

/// The outcome of checking a stored key against its vendor.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyBody {
    pub provider: String,
    pub valid: bool,
    /// Why the key did not work (the vendor's message); absent when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn vendor_ids() -> String {
    catalog::VENDORS
        .iter()
        .map(|vendor| vendor.id)
        .collect::<Vec<_>>()
        .join(", ")
}

fn vendor(param: &str, id: &str) -> Result<&'static catalog::Vendor, ApiError> {
    catalog::vendor(id).ok_or_else(|| {
        ApiError::invalid(
            param,
            format!(
                "provider '{id}' is not a vendor this server has adapters for: {}",
                vendor_ids()
            ),
        )
    })
}

/// Stores (or replaces) the developer's key for a vendor.
#[utoipa::path(post, path = "/v1/provider-keys", tag = "provider-keys", request_body = StoreProviderKey,
    responses((status = 201, body = ProviderKeyBody, description = "stored; a previous key for the provider is replaced"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/provider-keys")]
async fn store_key(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<StoreProviderKey>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let provider = body
        .provider
        .ok_or_else(|| ApiError::invalid("provider", "provider is required"))?;
    let vendor = vendor("provider", &provider)?;
    let api_key = body
        .api_key
        .ok_or_else(|| ApiError::invalid("apiKey", "apiKey is required"))?;
    let api_key = api_key.trim();
    validate::length("apiKey", api_key, 1, MAX_KEY_CHARS)?;
    if api_key.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ApiError::invalid(
            "apiKey",
            "apiKey must not contain spaces or control characters",
        ));
    }
    let row = state
        .provider_keys()
        .store(developer.id(), vendor.id, api_key)
        .await?;
    Ok(HttpResponse::Created().json(ProviderKeyBody::from(row)))
}

/// The developer's stored keys (never the keys themselves).
#[utoipa::path(get, path = "/v1/provider-keys", tag = "provider-keys", operation_id = "list_provider_keys",
    responses((status = 200, body = ProviderKeyList), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/provider-keys")]
async fn list_keys(
    state: web::Data<AppState>,
    developer: Developer,
) -> Result<HttpResponse, ApiError> {
    let rows = state.provider_keys().list(developer.id()).await?;
    Ok(HttpResponse::Ok().json(ProviderKeyList {
        data: rows.into_iter().map(ProviderKeyBody::from).collect(),
    }))
}

/// Makes the vendor's cheapest authenticated call with the stored key (for OpenAI, the model
/// list) and reports whether the vendor accepted it.
#[utoipa::path(post, path = "/v1/provider-keys/{provider}/verify", tag = "provider-keys",
    params(("provider" = String, Path, description = "vendor id")),
    responses((status = 200, body = VerifyBody, description = "valid false carries the vendor's reason"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "no key stored for this provider")),
    security(("bearer" = [])))]
#[post("/provider-keys/{provider}/verify")]
async fn verify_key(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let provider = path.into_inner();
    let vendor = vendor("provider", &provider)?;
    let key = match state
        .provider_keys()
        .open(developer.id(), vendor.id)
        .await?
    {
        StoredKey::Key(key) => key,
        StoredKey::Absent => return Err(ApiError::not_found("provider key", &provider)),
        StoredKey::Unreadable => {
            return Err(ApiError::Internal(format!(
                "the stored {provider} key does not open with this server's master key"
            )))
        }
    };
    let endpoint = state.vendors().endpoint(vendor, key);
    let outcome = crate::vendors::verify(&endpoint).await;
    if outcome.is_ok() {
        state
            .provider_keys()
            .mark_verified(developer.id(), vendor.id)
            .await?;
    }
    Ok(HttpResponse::Ok().json(VerifyBody {
        provider: vendor.id.to_string(),
        valid: outcome.is_ok(),
        error: outcome.err().map(|err| err.message),
    }))
}

/// Deletes the developer's key for a vendor; calls fall back to the platform key.
#[utoipa::path(delete, path = "/v1/provider-keys/{provider}", tag = "provider-keys",
    params(("provider" = String, Path, description = "vendor id")),
    responses((status = 204, description = "deleted"), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/provider-keys/{provider}")]
async fn delete_key(
    state: web::Data<AppState>,
    developer: Developer,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let provider = path.into_inner();
    let vendor = vendor("provider", &provider)?;
    if state
        .provider_keys()
        .delete(developer.id(), vendor.id)
        .await?
    {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(ApiError::not_found("provider key", &provider))
    }
}
