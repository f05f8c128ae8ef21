//! Payment-processor webhooks: the `Stripe-Signature` check (HMAC-SHA256 of `t.payload`,
//! constant-time, any of several `v1` signatures, a timestamp tolerance) and what each
//! subscription lifecycle event means for a developer's tier. Payloads of API versions both
//! before and after 2025-03-31 are understood (period ends moved onto subscription items;
//! an invoice's subscription moved under `parent.subscription_details`).

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::FREE_TIER;
use crate::config::TierConfig;
use crate::store::developers::SubscriptionChange;

/// Why a webhook delivery was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing or malformed")]
    Malformed,
    #[error("no v1 signature matches the payload")]
    Mismatch,
    #[error("the signature timestamp is outside the tolerance")]
    Stale,
}

/// Verifies `header` (`t=...,v1=...,v1=...`) over the raw `payload` with `secret`, refusing
/// timestamps older than `tolerance_s` before `now_s`.
pub fn verify(
    header: &str,
    payload: &[u8],
    secret: &str,
    tolerance_s: i64,
    now_s: i64,
) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        let Some((name, value)) = item.trim().split_once('=') else {
            continue;
        };
        match name {
            "t" => timestamp = value.parse::<i64>().ok(),
            "v1" => signatures.push(value),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    let matched = signatures.iter().any(|signature| {
        decode_hex(signature).is_some_and(|bytes| mac.clone().verify_slice(&bytes).is_ok())
    });
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if timestamp < now_s - tolerance_s {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

/// The `v1` signature of `payload` at `timestamp` (for tests and tools).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(payload);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Who an event concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// Named by our own metadata or `client_reference_id`.
    Developer(String),
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
        .map(|d| Subject::Developer(d.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_against_every_v1_and_the_tolerance() {
        let payload = br#"{"id":"evt_1"}"#;
        let good = sign(payload, "whsec_test", 1_000);
        let header = format!("t=1000,v1={},v1={good},v0=abc", "00".repeat(32));
        assert_eq!(verify(&header, payload, "whsec_test", 300, 1_100), Ok(()));
        assert_eq!(
            verify(&header, payload, "whsec_other", 300, 1_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&header, b"{}", "whsec_test", 300, 1_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&header, payload, "whsec_test", 300, 1_301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("v1=abc", payload, "whsec_test", 300, 1_100),
            Err(SignatureError::Malformed)
        );
    }
}
