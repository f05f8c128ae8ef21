//! `/v1/webhooks`: the endpoints a developer's events are posted to (create, list, read,
//! delete) and the deliveries made to each with their attempts. The signing secret is
//! answered once, by the create.

use actix_web::{delete, get, post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::WebhookId;
use crate::registry::webhooks::{
    CreateEndpoint, DeleteEndpoint, DeliveryTrace, GetEndpoint, ListDeliveries, ListEndpoints,
};
use crate::store::webhooks::{DeliveryStatus, EndpointRow};
use crate::time::{self, iso, iso_opt};
use crate::webhooks::EventType;

/// Longest endpoint URL accepted.
const MAX_URL_CHARS: usize = 2048;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_webhook)
        .service(list_webhooks)
        .service(get_webhook)
        .service(delete_webhook)
        .service(list_deliveries);
    methods::other_methods(
        cfg,
        &["/webhooks", "/webhooks/{id}", "/webhooks/{id}/deliveries"],
    );
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookBody {
    pub id: String,
    pub url: String,
    /// The event types posted to it.
    pub events: Vec<String>,
    pub created_at: String,
}

impl From<EndpointRow> for WebhookBody {
    fn from(row: EndpointRow) -> Self {
        WebhookBody {
            events: row.event_names(),
            id: row.id.into(),
            url: row.url,
            created_at: iso(row.created_at),
        }
    }
}

/// A new endpoint, with its signing secret: shown here only.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhookBody {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    /// `whsec_…`: keys the HMAC-SHA256 of each delivery's `Switchboard-Signature`. Shown once.
    pub secret: String,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateWebhookRequest {
    /// Where events are posted: `http` or `https`, at most 2048 characters; refused for
    /// loopback, private, link-local and metadata addresses (as every URL the server fetches)
    /// unless the operator allows them (`[fetch] allow`).
    pub url: Option<String>,
    /// One or more of `call.started`, `call.ended`, `call.analyzed`, `transfer.completed`.
    pub events: Option<Vec<String>>,
}

/// Creates an endpoint (at most `webhooks.max_endpoints`, 10 by default, per developer).
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = CreateWebhookRequest,
    responses((status = 201, body = CreatedWebhookBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 409, body = ErrorBody, description = "The developer has the most endpoints allowed"),
        (status = 415, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/webhooks")]
async fn create_webhook(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<CreateWebhookRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let url = request
        .url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::invalid("url", "url is required"))?;
    if url.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid(
            "url",
            format!("url must be at most {MAX_URL_CHARS} characters"),
        ));
    }
    let url = state
        .fetcher()
        .check(url)
        .map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let events = event_types(request.events)?;
    let endpoint = EndpointRow {
        seq: 0,
        id: WebhookId::new(),
        developer_id: developer.id().clone(),
        url: url.to_string(),
        events: serde_json::to_string(&events).expect("strings serialize"),
        secret: new_secret(),
        created_at: time::now_ms(),
    };
    let created = state.webhooks().send(CreateEndpoint { endpoint }).await??;
    Ok(HttpResponse::Created().json(CreatedWebhookBody {
        events: created.event_names(),
        id: created.id.into(),
        url: created.url,
        secret: created.secret,
        created_at: iso(created.created_at),
    }))
}

/// The requested event types, each known, each once, in the order given.
fn event_types(events: Option<Vec<String>>) -> Result<Vec<&'static str>, ApiError> {
    let events = events.ok_or_else(|| {
        ApiError::invalid(
            "events",
            format!("events is required: one or more of {}", EventType::names()),
        )
    })?;
    if events.is_empty() {
        return Err(ApiError::invalid(
            "events",
            format!("events must name at least one of {}", EventType::names()),
        ));
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    for name in &events {
        let kind = EventType::parse(name.trim()).ok_or_else(|| {
            ApiError::invalid(
                "events",
                format!("'{name}' is not an event type; use {}", EventType::names()),
            )
        })?;
        if !kinds.contains(&kind.as_str()) {
            kinds.push(kind.as_str());
        }
    }
    Ok(kinds)
}

/// `whsec_` and 32 random bytes in hex.
fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("whsec_{hex}")
}

/// Lists the caller's endpoints in creation order (without their secrets).
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", params(PageQuery),
    responses((status = 200, body = PageBody<WebhookBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/webhooks")]
async fn list_webhooks(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListEndpoints {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.webhooks(), ask, WebhookBody::from).await
}

/// Reads one endpoint (without its secret).
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 200, body = WebhookBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/webhooks/{id}")]
async fn get_webhook(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let endpoint = state
        .webhooks()
        .send(GetEndpoint {
            developer_id: developer.id().clone(),
            endpoint_id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(WebhookBody::from(endpoint)))
}

/// Deletes an endpoint with its deliveries: nothing more is posted to it, pending retries
/// included.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[delete("/webhooks/{id}")]
async fn delete_webhook(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .webhooks()
        .send(DeleteEndpoint {
            developer_id: developer.id().clone(),
            endpoint_id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}

/// One attempt to deliver an event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptBody {
    /// 1 for the first attempt.
    pub attempt: i32,
    pub attempted_at: String,
    pub duration_ms: i64,
    /// The endpoint's HTTP status; `null` when it was not reached or did not answer in time.
    pub status_code: Option<i32>,
    /// Why it did not deliver; `null` when the endpoint answered 2xx.
    pub error: Option<String>,
}

/// An event's delivery to one endpoint.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryBody {
    pub id: String,
    /// The event's id (the same on every endpoint it went to).
    pub event_id: String,
    /// The event type.
    #[serde(rename = "type")]
    pub kind: String,
    /// `pending` (to be tried, or being tried), `delivered` (answered 2xx) or `failed`
    /// (given up after the retry window).
    pub status: String,
    pub created_at: String,
    /// When the next attempt is due, while `pending`.
    pub next_attempt_at: Option<String>,
    /// When it was delivered or given up.
    pub completed_at: Option<String>,
    /// The body posted, as JSON: `{id, type, createdAt, data}`.
    #[schema(value_type = Object)]
    pub payload: Value,
    /// Every attempt made, oldest first.
    pub attempts: Vec<AttemptBody>,
}

impl From<DeliveryTrace> for DeliveryBody {
    fn from(trace: DeliveryTrace) -> Self {
        let d = trace.delivery;
        DeliveryBody {
            next_attempt_at: (d.status == DeliveryStatus::Pending).then(|| iso(d.next_attempt_at)),
            payload: serde_json::from_str(&d.payload).unwrap_or(Value::Null),
            id: d.id.into(),
            event_id: d.event_id.into(),
            kind: d.event_type,
            status: d.status.to_string(),
            created_at: iso(d.created_at),
            completed_at: iso_opt(d.completed_at),
            attempts: trace
                .attempts
                .into_iter()
                .map(|a| AttemptBody {
                    attempt: a.attempt,
                    attempted_at: iso(a.attempted_at),
                    duration_ms: a.duration_ms,
                    status_code: a.status_code,
                    error: a.error,
                })
                .collect(),
        }
    }
}

/// The deliveries made to an endpoint, oldest first, each with its attempts.
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path), PageQuery),
    responses((status = 200, body = PageBody<DeliveryBody>), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/webhooks/{id}/deliveries")]
async fn list_deliveries(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListDeliveries {
        developer_id: developer.id().clone(),
        endpoint_id: id.into_inner().into(),
        page,
    };
    pagination::answer_page(state.webhooks(), ask, DeliveryBody::from).await
}
