//! Timestamped HMAC-SHA256 signatures in Stripe's scheme, written once for both directions:
//! the payment processor's `Stripe-Signature` is verified with it and the webhooks we send
//! integrators carry a `Switchboard-Signature` made with it.
//!
//! The header is `t=<unix seconds>,v1=<hex>`, where the hex is the HMAC-SHA256 of
//! `"<t>.<body>"` keyed with the endpoint's secret. Several `v1` values may be present (a
//! secret being rolled); any one matching is enough.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header our webhooks and signed HTTP tool requests carry.
pub const SWITCHBOARD_HEADER: &str = "Switchboard-Signature";

/// Why a signature header was refused.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the signature header is missing or malformed")]
    Malformed,
    #[error("no v1 signature matches the payload")]
    Mismatch,
    #[error("the signature timestamp is outside the tolerance")]
    Stale,
}

fn mac(payload: &[u8], secret: &str, timestamp: i64) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}

/// The `v1` signature (lowercase hex) of `payload` at `timestamp` (unix seconds).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    mac(payload, secret, timestamp)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The whole header value for `payload` signed at `timestamp`: `t=…,v1=…`.
pub fn header(payload: &[u8], secret: &str, timestamp: i64) -> String {
    format!("t={timestamp},v1={}", sign(payload, secret, timestamp))
}

/// Verifies `header` over the raw `payload` with `secret` (constant-time), refusing
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
    let mac = mac(payload, secret, timestamp);
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

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
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

    /// The value Stripe's documentation derives by hand: HMAC-SHA256 of `t.payload`.
    #[test]
    fn a_header_carries_the_timestamp_and_the_hmac_of_t_dot_body() {
        let made = header(b"{}", "whsec_abc", 1_700_000_000);
        assert!(made.starts_with("t=1700000000,v1="), "{made}");
        assert_eq!(made.len(), "t=1700000000,v1=".len() + 64);
        assert_eq!(
            verify(&made, b"{}", "whsec_abc", 300, 1_700_000_010),
            Ok(())
        );
    }
}
