//! Usage and billing: `GET /v1/usage`, `GET /v1/billing/subscription`, Checkout and portal
//! sessions at the payment processor (`POST /v1/billing/checkout`, `/v1/billing/portal`),
//! and the processor's webhook (`POST /v1/billing/webhook`, proven by `Stripe-Signature`
//! instead of an API key).

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Developer;
use super::body::{ApiJson, OptionalJson, RawWebhook};
use super::methods;
use super::validate;
use crate::app::AppState;
use crate::billing::pricing::format_credits;
use crate::billing::stripe::StripeClient;
use crate::billing::{webhook, TIERS};
use crate::error::{ApiError, ErrorBody};
use crate::registry::metering::{
    ApplyBillingEvent, ChangeSubscription, EventOutcome, GetUsage, UsageReport,
};
use crate::store::developers::SubscriptionChange;
use crate::time::iso_opt;

const MAX_URL_CHARS: usize = 2048;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(usage)
        .service(subscription)
        .service(checkout)
        .service(portal);
    methods::other_methods(
        cfg,
        &[
            "/usage",
            "/billing/subscription",
            "/billing/checkout",
            "/billing/portal",
        ],
    );
}

/// Credits of the current billing period.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreditsBody {
    pub used: f64,
    /// The tier's monthly allowance plus credits carried over.
    pub limit: f64,
    pub remaining: f64,
}

/// Credits used per kind of work.
#[derive(Debug, Serialize, ToSchema)]
pub struct BreakdownBody {
    pub tts: f64,
    pub stt: f64,
    pub llm: f64,
    pub rag: f64,
}

/// Use beyond the limit on tiers that allow overage.
#[derive(Debug, Serialize, ToSchema)]
pub struct OverageBody {
    pub credits: f64,
    /// In dollars, at the tier's overage rate.
    pub cost: f64,
}

/// `GET /v1/usage`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageBody {
    pub credits: CreditsBody,
    pub breakdown: BreakdownBody,
    /// Authenticated requests this period.
    pub request_count: i64,
    /// Unused credits of earlier periods included in the limit.
    pub carryover: f64,
    pub overage: OverageBody,
    /// The billing period, a UTC calendar month (`2026-11`).
    pub period: String,
    pub period_ends_at: Option<String>,
}

/// Rounds away floating-point dust (credits are shown to 4 decimals, as in the headers).
fn round(value: f64) -> f64 {
    format_credits(value).parse().unwrap_or(value)
}

fn credits_body(report: &UsageReport) -> CreditsBody {
    CreditsBody {
        used: round(report.credits.used),
        limit: round(report.credits.limit),
        remaining: round(report.credits.remaining),
    }
}

async fn report_of(state: &AppState, developer: &Developer) -> Result<UsageReport, ApiError> {
    state
        .metering()
        .send(GetUsage {
            developer_id: developer.id().clone(),
        })
        .await?
}

/// Credits used, left and by kind in the current billing period.
#[utoipa::path(get, path = "/v1/usage", tag = "billing",
    responses((status = 200, body = UsageBody), (status = 401, body = ErrorBody), (status = 429, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/usage")]
async fn usage(state: web::Data<AppState>, developer: Developer) -> Result<HttpResponse, ApiError> {
    let report = report_of(&state, &developer).await?;
    let totals = &report.totals;
    Ok(HttpResponse::Ok().json(UsageBody {
        credits: credits_body(&report),
        breakdown: BreakdownBody {
            tts: round(totals.credits_tts),
            stt: round(totals.credits_stt),
            llm: round(totals.credits_llm),
            rag: round(totals.credits_rag),
        },
        request_count: totals.request_count,
        carryover: round(totals.carryover),
        overage: OverageBody {
            credits: round(report.overage_credits),
            cost: round(report.overage_cost),
        },
        period: report.period.clone(),
        period_ends_at: iso_opt(Some(report.period_ends_at)),
    }))
}

/// The tier's allowance.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanBody {
    pub monthly_credits: f64,
    pub overage_rate: f64,
    pub carryover_months: u32,
}

/// `GET /v1/billing/subscription`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionBody {
    /// `starter`, `pro` or `scale`.
    pub tier: String,
    pub tier_display: String,
    pub credits: CreditsBody,
    pub plan: PlanBody,
    /// The payment processor's customer id, once checkout or the portal created one.
    pub stripe_customer_id: Option<String>,
    /// When the paid tier lapses unless renewed; null on the free tier.
    pub tier_expires_at: Option<String>,
}

/// The developer's tier, plan and credits.
#[utoipa::path(get, path = "/v1/billing/subscription", tag = "billing",
    responses((status = 200, body = SubscriptionBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
#[get("/billing/subscription")]
async fn subscription(
    state: web::Data<AppState>,
    developer: Developer,
) -> Result<HttpResponse, ApiError> {
    let report = report_of(&state, &developer).await?;
    let tier = state.config().tier(&report.tier);
    Ok(HttpResponse::Ok().json(SubscriptionBody {
        tier: report.tier.clone(),
        tier_display: tier.display.clone(),
        credits: credits_body(&report),
        plan: PlanBody {
            monthly_credits: tier.monthly_credits,
            overage_rate: tier.overage_rate,
            carryover_months: tier.carryover_months,
        },
        stripe_customer_id: report.stripe_customer_id.clone(),
        tier_expires_at: iso_opt(report.tier_expires_at),
    }))
}

fn stripe(state: &AppState) -> Result<&StripeClient, ApiError> {
    state.stripe().as_ref().ok_or_else(|| {
        ApiError::BillingNotConfigured(
            "billing is not configured on this server (billing.stripe.secret_key)".into(),
        )
    })
}

/// The developer's processor customer, created (and remembered) on first use.
async fn customer_of(
    state: &AppState,
    client: &StripeClient,
    developer: &Developer,
) -> Result<String, ApiError> {
    let report = report_of(state, developer).await?;
    if let Some(customer) = report.stripe_customer_id {
        return Ok(customer);
    }
    let customer = client.create_customer(developer.id()).await?;
    state
        .metering()
        .send(ChangeSubscription {
            developer_id: developer.id().clone(),
            change: SubscriptionChange {
                stripe_customer_id: Some(customer.clone()),
                ..SubscriptionChange::default()
            },
        })
        .await??;
    Ok(customer)
}

fn http_url(param: &str, value: Option<&str>) -> Result<String, ApiError> {
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::invalid(param, format!("{param} is required")))?;
    validate::length(param, value, 1, MAX_URL_CHARS)?;
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(value.to_string())
        }
        _ => Err(ApiError::invalid(
            param,
            format!("{param} must be an http or https URL"),
        )),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckoutRequest {
    /// `starter`, `pro` or `scale`.
    pub tier: Option<String>,
    /// Where the processor sends the customer after paying (http or https).
    pub success_url: Option<String>,
    /// Where the processor sends the customer after cancelling (http or https).
    pub cancel_url: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutBody {
    /// The processor's hosted checkout page.
    pub url: String,
    pub session_id: String,
}

/// Starts a subscription checkout for a tier at the payment processor.
#[utoipa::path(post, path = "/v1/billing/checkout", tag = "billing", request_body = CheckoutRequest,
    responses((status = 200, body = CheckoutBody), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 502, description = "The payment processor refused or failed", body = ErrorBody),
        (status = 503, description = "billing_not_configured", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/billing/checkout")]
async fn checkout(
    state: web::Data<AppState>,
    developer: Developer,
    body: ApiJson<CheckoutRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = body.into_inner();
    let tier = request
        .tier
        .as_deref()
        .ok_or_else(|| ApiError::invalid("tier", "tier is required"))?;
    validate::one_of("tier", tier, &TIERS)?;
    let success_url = http_url("successUrl", request.success_url.as_deref())?;
    let cancel_url = http_url("cancelUrl", request.cancel_url.as_deref())?;
    let client = stripe(&state)?;
    let price_id = state.config().tier(tier).price_id.trim().to_string();
    if price_id.is_empty() {
        return Err(ApiError::BillingNotConfigured(format!(
            "the {tier} tier has no price configured (tiers.{tier}.price_id)"
        )));
    }
    let customer = customer_of(&state, client, &developer).await?;
    let session = client
        .create_checkout(
            &customer,
            developer.id(),
            tier,
            &price_id,
            &success_url,
            &cancel_url,
        )
        .await?;
    Ok(HttpResponse::Ok().json(CheckoutBody {
        url: session.url,
        session_id: session.id,
    }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PortalRequest {}

#[derive(Debug, Serialize, ToSchema)]
pub struct PortalBody {
    /// The processor's billing portal: subscription, invoices, payment methods.
    pub url: String,
}

/// Opens the payment processor's billing portal for the developer.
#[utoipa::path(post, path = "/v1/billing/portal", tag = "billing",
    responses((status = 200, body = PortalBody), (status = 401, body = ErrorBody),
        (status = 502, body = ErrorBody),
        (status = 503, description = "billing_not_configured", body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/billing/portal")]
async fn portal(
    state: web::Data<AppState>,
    developer: Developer,
    _body: OptionalJson<PortalRequest>,
) -> Result<HttpResponse, ApiError> {
    let client = stripe(&state)?;
    let customer = customer_of(&state, client, &developer).await?;
    let url = client.create_portal(&customer).await?;
    Ok(HttpResponse::Ok().json(PortalBody { url }))
}

/// The answer to a processed webhook delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookReceiptBody {
    pub received: bool,
    /// `false` when this event id was processed before (nothing changed).
    pub applied: bool,
}

/// The payment processor's webhook. Authenticated by `Stripe-Signature` (HMAC-SHA256 of
/// `t.payload`, 300 s tolerance), not an API key. Moves the developer's tier on
/// `checkout.session.completed`, `customer.subscription.created/updated/deleted`,
/// `invoice.paid` and `invoice.payment_failed`; each event id is applied once.
#[utoipa::path(post, path = "/v1/billing/webhook", tag = "billing", operation_id = "billing_webhook",
    request_body(content = Object, description = "A Stripe event"),
    params(("Stripe-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256>")),
    responses((status = 200, body = WebhookReceiptBody),
        (status = 400, description = "Forged, stale or missing signature, or not an event", body = ErrorBody),
        (status = 503, description = "billing_not_configured", body = ErrorBody)))]
pub async fn webhook(
    state: web::Data<AppState>,
    req: HttpRequest,
    RawWebhook(payload): RawWebhook,
) -> Result<HttpResponse, ApiError> {
    let stripe = &state.config().billing.stripe;
    let secret = stripe.webhook_secret.trim();
    if secret.is_empty() {
        return Err(ApiError::BillingNotConfigured(
            "billing webhooks are not configured on this server (billing.stripe.webhook_secret)"
                .into(),
        ));
    }
    let header = req
        .headers()
        .get("Stripe-Signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let now_s = crate::time::now_ms() / 1000;
    webhook::verify(header, &payload, secret, stripe.tolerance_seconds, now_s)
        .map_err(|e| ApiError::invalid("Stripe-Signature", e.to_string()))?;
    let event: Value = serde_json::from_slice(&payload)
        .map_err(|e| ApiError::bad_request(format!("the event is not JSON: {e}")))?;
    let (Some(id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return Err(ApiError::bad_request("the event has no id or type"));
    };
    let meaning = webhook::interpret(kind, &event["data"]["object"], &state.config().tiers);
    let outcome = state
        .metering()
        .send(ApplyBillingEvent {
            event_id: id.to_string(),
            event_type: kind.to_string(),
            subject: meaning.subject,
            change: meaning.change,
        })
        .await??;
    Ok(HttpResponse::Ok().json(WebhookReceiptBody {
        received: true,
        applied: outcome != EventOutcome::Replayed,
    }))
}
