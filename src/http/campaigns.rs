//! `/v1/campaigns`: outbound campaigns (create, list, read with every contact's state,
//! pause, resume, cancel). The calls are placed by `crate::live::campaigns`.

use std::collections::HashSet;

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::ApiJson;
use super::methods;
use super::pagination::{self, PageBody, PageQuery};
use super::validate;
use crate::app::AppState;
use crate::error::{ApiError, ErrorBody};
use crate::ids::CampaignId;
use crate::live::campaigns::CallWindow;
use crate::live::outbound;
use crate::live::voicemail::{MachineDetection, VoicemailPlan};
use crate::registry::agents::GetAgent;
use crate::registry::campaigns::{
    CampaignAction, CampaignView, ChangeCampaign, CreateCampaign, GetCampaign, ListCampaigns,
};
use crate::store::campaigns::{CampaignRow, CampaignStatus, ContactRow, ContactStatus};
use crate::store::stored_json;
use crate::time::{self, iso, iso_opt};

/// Most calls one campaign places at once.
const MAX_CONCURRENT: i64 = 50;
/// Largest variables object of one contact, serialized.
const MAX_VARIABLES_BYTES: usize = 4096;
/// Outcomes a campaign may try again.
const RETRYABLE: [&str; 3] = ["no-answer", "busy", "failed"];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(create_campaign)
        .service(list_campaigns)
        .service(get_campaign)
        .service(pause_campaign)
        .service(resume_campaign)
        .service(cancel_campaign);
    methods::other_methods(
        cfg,
        &[
            "/campaigns",
            "/campaigns/{id}",
            "/campaigns/{id}/pause",
            "/campaigns/{id}/resume",
            "/campaigns/{id}/cancel",
        ],
    );
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignRequest {
    /// The agent that talks on every call.
    pub agent_id: Option<String>,
    /// The caller id, E.164: one of your verified numbers in `/v1/phone-numbers`.
    pub from: Option<String>,
    /// Up to 100 characters.
    pub name: Option<String>,
    /// Who to call, in order: 1 to `campaigns.max_contacts` (1000), each number once.
    pub contacts: Option<Vec<ContactRequest>>,
    /// Calls in progress at once, 1-50 (default 1). The tier's concurrent sessions bound them
    /// too: a call with no free line waits and is tried again without counting an attempt.
    pub max_concurrent: Option<i64>,
    /// Calling hours: `{start: "HH:MM", end: "HH:MM", timezone: "America/New_York" (default
    /// UTC), days: ["mon", …] (default every day)}`. Calls start only inside them; an `end`
    /// before `start` runs past midnight. Default: any time.
    #[schema(value_type = Option<Object>)]
    pub window: Option<Value>,
    pub retry: Option<RetryRequest>,
    /// As on `POST /v1/sessions/twilio/outbound`.
    pub machine_detection: Option<MachineDetection>,
    /// As on `POST /v1/sessions/twilio/outbound`.
    #[schema(max_length = 1000)]
    pub voicemail_message: Option<String>,
    /// Also have Twilio record the calls on its side (default false).
    pub record: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactRequest {
    /// E.164; premium-rate and other costly destinations are refused (`telephony.outbound`).
    pub to: Option<String>,
    /// The agent's variables on this call (`{{name}}` in its prompt and greeting), over the
    /// instance's: strings, numbers or booleans, at most 4 KiB serialized.
    #[schema(value_type = Option<Object>)]
    pub variables: Option<Map<String, Value>>,
}

/// When a call nobody took is tried again.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RetryRequest {
    /// Calls placed to one contact at most, 1-10 (default 2).
    pub max_attempts: Option<i64>,
    /// The wait before the next call, 1-86400 seconds (default 300).
    pub delay_seconds: Option<i64>,
    /// The outcomes tried again, of `no-answer`, `busy`, `failed` (default `["no-answer",
    /// "busy"]`).
    pub on: Option<Vec<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryBody {
    pub max_attempts: i32,
    pub delay_seconds: i64,
    pub on: Vec<String>,
}

/// How many contacts are in each state.
#[derive(Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactCountsBody {
    pub pending: i64,
    pub calling: i64,
    pub completed: i64,
    pub no_answer: i64,
    pub busy: i64,
    pub failed: i64,
    pub canceled: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactBody {
    /// Its place in the request's `contacts`, from 0.
    pub index: i32,
    pub to: String,
    #[schema(value_type = Object)]
    pub variables: Value,
    /// `pending` (waiting for its next call), `calling`, or how it ended: `completed` (the
    /// call was answered), `no-answer`, `busy`, `failed`, `canceled`.
    pub status: String,
    /// Calls placed to it so far.
    pub attempts: i32,
    /// When its next call may start, while `pending`.
    pub next_attempt_at: Option<String>,
    /// The outbound call task of its latest call (`GET /v1/sessions/twilio/tasks/{taskId}`:
    /// call SID, session, answering-machine verdict).
    pub task_id: Option<String>,
    /// How its latest attempt ended: a task status, `no-free-line` or `no-credits` (not
    /// placed, tried again).
    pub last_outcome: Option<String>,
    pub error: Option<String>,
    pub updated_at: String,
}

impl From<ContactRow> for ContactBody {
    fn from(row: ContactRow) -> Self {
        ContactBody {
            index: row.contact_index,
            to: row.to_number,
            variables: stored_json(&row.variables),
            next_attempt_at: (row.status == ContactStatus::Pending)
                .then(|| iso(row.next_attempt_at)),
            status: row.status.to_string(),
            attempts: row.attempts,
            task_id: row.task_id.map(String::from),
            last_outcome: row.last_outcome,
            error: row.error,
            updated_at: iso(row.updated_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignBody {
    pub id: String,
    pub name: Option<String>,
    pub agent_id: String,
    pub from: String,
    /// `active` (placing calls), `paused`, `completed` (every contact reached an end) or
    /// `canceled`.
    pub status: String,
    /// Why the campaign paused by itself (`insufficient_credits: …`); null otherwise.
    pub status_reason: Option<String>,
    pub max_concurrent: i32,
    #[schema(value_type = Option<Object>)]
    pub window: Option<Value>,
    pub retry: RetryBody,
    pub machine_detection: String,
    pub record: bool,
    pub counts: ContactCountsBody,
    /// Every contact with its state (on the campaign's own routes; not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Vec<ContactBody>>,
    pub created_at: String,
    pub updated_at: String,
    pub completed_at: Option<String>,
}

impl From<CampaignView> for CampaignBody {
    fn from(view: CampaignView) -> Self {
        let mut counts = ContactCountsBody::default();
        for (status, n) in view.counts {
            let slot = match status {
                ContactStatus::Pending => &mut counts.pending,
                ContactStatus::Calling => &mut counts.calling,
                ContactStatus::Completed => &mut counts.completed,
                ContactStatus::NoAnswer => &mut counts.no_answer,
                ContactStatus::Busy => &mut counts.busy,
                ContactStatus::Failed => &mut counts.failed,
                ContactStatus::Canceled => &mut counts.canceled,
            };
            *slot += n;
        }
        let row = view.campaign;
        CampaignBody {
            retry: RetryBody {
                max_attempts: row.max_attempts,
                delay_seconds: row.retry_delay_ms / 1000,
                on: serde_json::from_str(&row.retry_on).unwrap_or_default(),
            },
            window: row.call_window.as_deref().map(stored_json),
            counts,
            contacts: view
                .contacts
                .map(|c| c.into_iter().map(ContactBody::from).collect()),
            id: row.id.into(),
            name: row.name,
            agent_id: row.agent_id.into(),
            from: row.from_number,
            status: row.status.to_string(),
            status_reason: row.status_reason,
            max_concurrent: row.max_concurrent,
            machine_detection: row.machine_detection,
            record: row.record,
            created_at: iso(row.created_at),
            updated_at: iso(row.updated_at),
            completed_at: iso_opt(row.completed_at),
        }
    }
}

/// The retry policy asked for, with its defaults: (attempts, delay ms, outcomes).
fn retry_policy(retry: Option<RetryRequest>) -> Result<(i32, i64, Vec<String>), ApiError> {
    let retry = retry.unwrap_or(RetryRequest {
        max_attempts: None,
        delay_seconds: None,
        on: None,
    });
    let attempts = retry.max_attempts.unwrap_or(2);
    if !(1..=10).contains(&attempts) {
        return Err(ApiError::invalid(
            "retry.maxAttempts",
            "retry.maxAttempts must be 1-10",
        ));
    }
    let delay = retry.delay_seconds.unwrap_or(300);
    if !(1..=86_400).contains(&delay) {
        return Err(ApiError::invalid(
            "retry.delaySeconds",
            "retry.delaySeconds must be 1-86400",
        ));
    }
    let on = retry
        .on
        .unwrap_or_else(|| vec!["no-answer".into(), "busy".into()]);
    let mut outcomes: Vec<String> = Vec::new();
    for outcome in on {
        if !RETRYABLE.contains(&outcome.as_str()) {
            return Err(ApiError::invalid(
                "retry.on",
                format!(
                    "retry.on holds '{outcome}'; the outcomes tried again are {}",
                    RETRYABLE.join(", ")
                ),
            ));
        }
        if !outcomes.contains(&outcome) {
            outcomes.push(outcome);
        }
    }
    Ok((attempts as i32, delay * 1000, outcomes))
}

/// The contacts as stored: each number E.164, allowed and given once, each variables object
/// of plain values within its size.
fn contact_rows(
    state: &AppState,
    campaign_id: &CampaignId,
    contacts: Option<Vec<ContactRequest>>,
    now: i64,
) -> Result<Vec<ContactRow>, ApiError> {
    let contacts = contacts.unwrap_or_default();
    let max = state.config().campaigns.max_contacts;
    if contacts.is_empty() || contacts.len() > max {
        return Err(ApiError::invalid(
            "contacts",
            format!(
                "contacts must list 1-{max} people to call (it lists {})",
                contacts.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut rows = Vec::with_capacity(contacts.len());
    for (i, contact) in contacts.into_iter().enumerate() {
        let param = format!("contacts[{i}].to");
        let to = validate::e164(&param, contact.to.as_deref())?;
        if let Some(prefix) = state.config().telephony.outbound.refusal(&to) {
            return Err(ApiError::invalid(
                &param,
                format!(
                    "calls to {to} are not allowed: premium-rate and other costly destinations \
                     are refused ({prefix}; see telephony.outbound)"
                ),
            ));
        }
        if !seen.insert(to.clone()) {
            return Err(ApiError::invalid(
                &param,
                format!("{param} is {to}, listed before: each number is called once"),
            ));
        }
        let variables = contact.variables.unwrap_or_default();
        let param = format!("contacts[{i}].variables");
        if let Some((name, _)) = variables
            .iter()
            .find(|(_, v)| !(v.is_string() || v.is_number() || v.is_boolean()))
        {
            return Err(ApiError::invalid(
                &param,
                format!("{param}.{name} must be a string, a number or a boolean"),
            ));
        }
        let variables = Value::Object(variables).to_string();
        if variables.len() > MAX_VARIABLES_BYTES {
            return Err(ApiError::invalid(
                &param,
                format!(
                    "{param} is {} bytes serialized; at most {MAX_VARIABLES_BYTES}",
                    variables.len()
                ),
            ));
        }
        rows.push(ContactRow {
            seq: 0,
            campaign_id: campaign_id.clone(),
            contact_index: i as i32,
            to_number: to,
            variables,
            status: ContactStatus::Pending,
            attempts: 0,
            next_attempt_at: now,
            task_id: None,
            last_outcome: None,
            error: None,
            updated_at: now,
        });
    }
    Ok(rows)
}

/// Creates a campaign; its first calls start within `campaigns.poll_ms` (inside its calling
/// hours).
#[utoipa::path(post, path = "/v1/campaigns", tag = "campaigns", request_body = CampaignRequest,
    responses((status = 201, body = CampaignBody), (status = 400, body = ErrorBody, description = "Invalid request, naming the field (`contacts[3].to`); `from` not one of your verified numbers"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "No such agent"),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 503, body = ErrorBody, description = "[telephony.twilio] is not configured")),
    security(("bearer" = [])))]
#[post("/campaigns")]
async fn create_campaign(
    state: web::Data<AppState>,
    developer: Developer,
    req: HttpRequest,
    body: ApiJson<CampaignRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let developer_id = developer.id().clone();
    let agent_id = request
        .agent_id
        .ok_or_else(|| ApiError::invalid("agentId", "agentId is required"))?;
    let from = validate::e164("from", request.from.as_deref())?;
    if let Some(name) = &request.name {
        validate::length("name", name, 1, 100)?;
    }
    let max_concurrent = request.max_concurrent.unwrap_or(1);
    if !(1..=MAX_CONCURRENT).contains(&max_concurrent) {
        return Err(ApiError::invalid(
            "maxConcurrent",
            format!("maxConcurrent must be 1-{MAX_CONCURRENT}"),
        ));
    }
    let window = match &request.window {
        None | Some(Value::Null) => None,
        Some(value) => {
            Some(CallWindow::parse(value).map_err(|reason| ApiError::invalid("window", reason))?)
        }
    };
    let (max_attempts, retry_delay_ms, retry_on) = retry_policy(request.retry)?;
    let plan = VoicemailPlan::from_request(
        request.machine_detection,
        request.voicemail_message.as_deref(),
    )?;
    let now = time::now_ms();
    let id = CampaignId::new();
    let contacts = contact_rows(&state, &id, request.contacts, now)?;
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.into(),
        })
        .await??;
    outbound::can_call_from(&state, &developer_id, &from).await?;
    let campaign = CampaignRow {
        seq: 0,
        id,
        developer_id,
        agent_id: agent.id,
        name: request.name,
        from_number: from,
        status: CampaignStatus::Active,
        status_reason: None,
        max_concurrent: max_concurrent as i32,
        call_window: window.map(|w| serde_json::to_string(&w).expect("a window serializes")),
        max_attempts,
        retry_delay_ms,
        retry_on: serde_json::to_string(&retry_on).expect("strings serialize"),
        machine_detection: plan.mode.as_str().to_string(),
        voicemail_message: plan.message,
        record: request.record.unwrap_or(false),
        key_id: developer.api_key_id().cloned(),
        public_base: state.public_base(&req),
        runner_node: None,
        lease_until: 0,
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    let created = state
        .campaigns()
        .send(CreateCampaign { campaign, contacts })
        .await??;
    Ok(HttpResponse::Created().json(CampaignBody::from(created)))
}

/// The caller's campaigns in creation order, with their contacts' counts.
#[utoipa::path(get, path = "/v1/campaigns", tag = "campaigns", params(PageQuery),
    responses((status = 200, body = PageBody<CampaignBody>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/campaigns")]
async fn list_campaigns(
    state: web::Data<AppState>,
    developer: Developer,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = query.into_inner().validate()?;
    let ask = ListCampaigns {
        developer_id: developer.id().clone(),
        page,
    };
    pagination::answer_page(state.campaigns(), ask, CampaignBody::from).await
}

/// A campaign with every contact's state.
#[utoipa::path(get, path = "/v1/campaigns/{id}", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/campaigns/{id}")]
async fn get_campaign(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = state
        .campaigns()
        .send(GetCampaign {
            developer_id: developer.id().clone(),
            id: id.into_inner().into(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(CampaignBody::from(view)))
}

async fn change(
    state: &AppState,
    developer: &Developer,
    id: CampaignId,
    action: CampaignAction,
) -> Result<HttpResponse, ApiError> {
    let view = state
        .campaigns()
        .send(ChangeCampaign {
            developer_id: developer.id().clone(),
            id,
            action,
        })
        .await??;
    Ok(HttpResponse::Ok().json(CampaignBody::from(view)))
}

/// Pauses an active campaign: no new calls until it is resumed; calls in progress go on.
#[utoipa::path(post, path = "/v1/campaigns/{id}/pause", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The campaign is not active")),
    security(("bearer" = [])))]
#[post("/campaigns/{id}/pause")]
async fn pause_campaign(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    change(
        &state,
        &developer,
        id.into_inner().into(),
        CampaignAction::Pause,
    )
    .await
}

/// Resumes a paused campaign (also one paused by itself when credits ran out).
#[utoipa::path(post, path = "/v1/campaigns/{id}/resume", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The campaign is not paused")),
    security(("bearer" = [])))]
#[post("/campaigns/{id}/resume")]
async fn resume_campaign(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    change(
        &state,
        &developer,
        id.into_inner().into(),
        CampaignAction::Resume,
    )
    .await
}

/// Cancels an active or paused campaign: contacts still waiting are `canceled` and no new
/// call is placed; calls in progress go on to their end.
#[utoipa::path(post, path = "/v1/campaigns/{id}/cancel", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The campaign has already completed or been canceled")),
    security(("bearer" = [])))]
#[post("/campaigns/{id}/cancel")]
async fn cancel_campaign(
    state: web::Data<AppState>,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    change(
        &state,
        &developer,
        id.into_inner().into(),
        CampaignAction::Cancel,
    )
    .await
}
