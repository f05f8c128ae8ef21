//! Payment-processor webhooks: the `Stripe-Signature` check (HMAC-SHA256 of `t.payload`,
//! constant-time, any of several `v1` signatures, a timestamp tolerance) and what each
//! subscription lifecycle event means for a developer's tier. Payloads of API versions both
//! before and after 2025-03-31 are understood (period ends moved onto subscription items;
//! an invoice's subscription moved under `parent.subscription_details`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::FREE_TIER;
use crate::config::TierConfig;
use crate::ids::DeveloperId;
pub use crate::signature::{sign, SignatureError};
use crate::store::developers::SubscriptionChange;

/// Verifies `header` (`t=...,v1=...,v1=...`) over the raw `payload` with `secret`, refusing
/// timestamps older than `tolerance_s` before `now_s`. Stripe's scheme is the one our own
/// webhooks are signed with: the check is [`crate::signature::verify`].
pub fn verify(
    header: &str,
    payload: &[u8],
    secret: &str,
    tolerance_s: i64,
    now_s: i64,
) -> Result<(), SignatureError> {
    crate::signature::verify(header, payload, secret, tolerance_s, now_s)
}

/// Who an event concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// Named by our own metadata or `client_reference_id`.
    Developer(DeveloperId),
    /// Only the processor's customer id is known.
    Customer(String),
}

/// What an event changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Interpretation {
    pub subject: Option<Subject>,
    pub change: SubscriptionChange,
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// An id field that may be expanded into an object.
fn id_of(value: &Value) -> Option<String> {
    match value {
        Value::String(id) if !id.is_empty() => Some(id.clone()),
        Value::Object(object) => object.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

fn seconds_to_ms(value: &Value) -> Option<i64> {
    value.as_i64().map(|s| s * 1000)
}

fn known_tier(tiers: &BTreeMap<String, TierConfig>, tier: Option<&str>) -> Option<String> {
    tier.filter(|t| tiers.contains_key(*t)).map(str::to_string)
}

fn tier_of_price(tiers: &BTreeMap<String, TierConfig>, price: &str) -> Option<String> {
    tiers
        .iter()
        .find(|(_, tier)| !tier.price_id.is_empty() && tier.price_id == price)
        .map(|(name, _)| name.clone())
}

fn subject(
    metadata: &Value,
    fallback_developer: Option<&str>,
    customer: Option<String>,
) -> Option<Subject> {
    text(metadata, "/developerId")
        .or(fallback_developer)
        .map(|d| Subject::Developer(d.into()))
        .or(customer.map(Subject::Customer))
}

/// What event `kind` with `data.object` = `object` means, under the configured `tiers`.
pub fn interpret(
    kind: &str,
    object: &Value,
    tiers: &BTreeMap<String, TierConfig>,
) -> Interpretation {
    let customer = id_of(&object["customer"]);
    let mut change = SubscriptionChange::default();
    let subject = match kind {
        "checkout.session.completed" => {
            let paid = matches!(
                object["payment_status"].as_str(),
                Some("paid" | "no_payment_required")
            ) || object["status"].as_str() == Some("complete");
            if paid {
                change.tier = known_tier(tiers, text(object, "/metadata/tier"));
            }
            change.stripe_customer_id = customer.clone();
            if let Some(subscription) = id_of(&object["subscription"]) {
                change.stripe_subscription_id = Some(Some(subscription));
            }
            subject(
                &object["metadata"],
                text(object, "/client_reference_id"),
                customer,
            )
        }
        "customer.subscription.created" | "customer.subscription.updated" => {
            let item = &object["items"]["data"][0];
            let tier = item["price"]["id"]
                .as_str()
                .and_then(|price| tier_of_price(tiers, price))
                .or_else(|| known_tier(tiers, text(object, "/metadata/tier")));
            // Since 2025-03-31 the period end is on each item; before, on the subscription.
            let period_end = seconds_to_ms(&item["current_period_end"])
                .or_else(|| seconds_to_ms(&object["current_period_end"]));
            match object["status"].as_str() {
                Some("active" | "trialing" | "past_due") => {
                    change.tier = tier;
                    if period_end.is_some() {
                        change.tier_expires_at = Some(period_end);
                    }
                    change.stripe_subscription_id = id_of(&object["id"]).map(Some);
                }
                Some("canceled" | "unpaid" | "incomplete_expired") => {
                    change.tier = Some(FREE_TIER.to_string());
                    change.tier_expires_at = Some(None);
                    change.stripe_subscription_id = Some(None);
                }
                // incomplete, paused: the tier stays as it is until the subscription settles.
                _ => {}
            }
            subject(&object["metadata"], None, customer)
        }
        "customer.subscription.deleted" => {
            change.tier = Some(FREE_TIER.to_string());
            change.tier_expires_at = Some(None);
            change.stripe_subscription_id = Some(None);
            subject(&object["metadata"], None, customer)
        }
        "invoice.paid" | "invoice.payment_succeeded" => {
            // Since 2025-03-31 the subscription details are under `parent`.
            let details = if object["parent"]["subscription_details"].is_object() {
                &object["parent"]["subscription_details"]
            } else {
                &object["subscription_details"]
            };
            let subscription =
                id_of(&details["subscription"]).or_else(|| id_of(&object["subscription"]));
            let metadata = &details["metadata"];
            change.tier = known_tier(tiers, text(metadata, "/tier"));
            // The lines carry the period paid for; the invoice's own period_end is the end
            // of the period before it for subscription renewals.
            let line_end = object["lines"]["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|line| seconds_to_ms(&line["period"]["end"]))
                .max();
            let end = line_end.or_else(|| seconds_to_ms(&object["period_end"]));
            if end.is_some() && subscription.is_some() {
                change.tier_expires_at = Some(end);
            }
            if let Some(subscription) = subscription {
                change.stripe_subscription_id = Some(Some(subscription));
            }
            subject(metadata, None, customer)
        }
        "invoice.payment_failed" => {
            let details = if object["parent"]["subscription_details"].is_object() {
                &object["parent"]["subscription_details"]
            } else {
                &object["subscription_details"]
            };
            match &object["next_payment_attempt"] {
                // The processor retries: the tier holds until that attempt.
                Value::Number(next) => {
                    change.tier_expires_at = Some(next.as_i64().map(|s| s * 1000))
                }
                // No more retries: back to the free tier.
                _ => {
                    change.tier = Some(FREE_TIER.to_string());
                    change.tier_expires_at = Some(None);
                }
            }
            subject(&details["metadata"], None, customer)
        }
        _ => None,
    };
    Interpretation { subject, change }
}
