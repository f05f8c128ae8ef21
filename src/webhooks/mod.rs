//! Webhooks to integrators: the events a developer can subscribe an endpoint to, the
//! envelope every delivery posts (`{id, type, createdAt, data}`), how it is signed
//! ([`crate::signature`], Stripe's scheme) and how one attempt is made and judged ([`attempt`]),
//! and when a failed delivery is tried again ([`RetryPolicy`]).
//!
//! The endpoints and deliveries are stored (`crate::store::webhooks`) and driven by the
//! `WebhookRegistry` (`crate::registry::webhooks`); the live session emits the call events.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::config::WebhooksConfig;
use crate::fetch::{FetchError, Fetcher};
use crate::ids::EventId;
use crate::signature;
use crate::time::iso;

pub use crate::signature::SWITCHBOARD_HEADER as SIGNATURE_HEADER;

/// What an endpoint can be told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// A real-time session started (a phone call connected, a direct socket opened).
    CallStarted,
    /// A session ended: its transcript, duration, cost, end reason, recording and findings.
    CallEnded,
    /// The post-call analysis of a session (its agent's `analysis`) is ready: summary,
    /// success verdict, extracted fields.
    CallAnalyzed,
    /// A transfer of a call to a person settled its outcome.
    TransferCompleted,
}

impl EventType {
    pub const ALL: [EventType; 4] = [
        EventType::CallStarted,
        EventType::CallEnded,
        EventType::CallAnalyzed,
        EventType::TransferCompleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::CallStarted => "call.started",
            EventType::CallEnded => "call.ended",
            EventType::CallAnalyzed => "call.analyzed",
            EventType::TransferCompleted => "transfer.completed",
        }
    }

    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The names, for error messages and docs: `call.started, call.ended, …`.
    pub fn names() -> String {
        EventType::ALL.map(EventType::as_str).join(", ")
    }
}

/// One event as every endpoint subscribed to it receives it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<'a> {
    pub id: &'a EventId,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub created_at: String,
    pub data: &'a Value,
}

impl Envelope<'_> {
    /// The body posted: compact JSON, the bytes the signature covers.
    pub fn body(id: &EventId, kind: EventType, created_at_ms: i64, data: &Value) -> String {
        let envelope = Envelope {
            id,
            kind: kind.as_str(),
            created_at: iso(created_at_ms),
            data,
        };
        serde_json::to_string(&envelope).expect("a JSON value serializes")
    }
}

/// When a failed delivery is tried again, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub base_ms: u64,
    pub max_ms: u64,
    pub for_ms: i64,
}

impl RetryPolicy {
    pub fn from_config(config: &WebhooksConfig) -> Self {
        RetryPolicy {
            base_ms: config.retry_base_ms,
            max_ms: config.retry_max_ms,
            for_ms: (config.retry_for_seconds as i64).saturating_mul(1000),
        }
    }

    /// The wait after the `attempts`-th failed attempt: the base, doubled per earlier
    /// failure, capped.
    pub fn delay_ms(&self, attempts: i32) -> u64 {
        let doublings = attempts.saturating_sub(1).clamp(0, 32) as u32;
        self.base_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_ms)
    }

    /// When to try a delivery made at `created_at` again after its `attempts`-th failure at
    /// `now`; `None` once that would be past the retry window (it is given up).
    pub fn next_attempt(&self, created_at: i64, attempts: i32, now: i64) -> Option<i64> {
        let next = now.saturating_add(self.delay_ms(attempts) as i64);
        (next <= created_at.saturating_add(self.for_ms)).then_some(next)
    }
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted {
    /// The endpoint's HTTP status; `None` when it was not reached or did not answer in time.
    pub status_code: Option<u16>,
    /// Why the attempt did not deliver; `None` when it did (2xx).
    pub error: Option<String>,
    pub duration_ms: i64,
}

impl Attempted {
    pub fn delivered(&self) -> bool {
        self.error.is_none()
    }
}

/// Posts `body` to `url`, signed with `secret` at the current time; a 2xx answer delivers it,
/// anything else (another status, no connection, no answer within `timeout`) does not.
pub async fn attempt(
    fetcher: &Fetcher,
    url: &str,
    body: &str,
    secret: &str,
    timeout: Duration,
) -> Attempted {
    let started = Instant::now();
    let timestamp = crate::time::now_ms() / 1000;
    let headers = [
        (
            SIGNATURE_HEADER,
            signature::header(body.as_bytes(), secret, timestamp),
        ),
        (
            "User-Agent",
            concat!("switchboard-webhooks/", env!("CARGO_PKG_VERSION")).to_string(),
        ),
    ];
    let posted = fetcher
        .post_json(url, body.as_bytes().to_vec(), &headers, timeout)
        .await;
    let duration_ms = started.elapsed().as_millis() as i64;
    match posted {
        Ok(status) if (200..300).contains(&status) => Attempted {
            status_code: Some(status),
            error: None,
            duration_ms,
        },
        Ok(status) => Attempted {
            status_code: Some(status),
            error: Some(format!("the endpoint answered HTTP {status}")),
            duration_ms,
        },
        Err(error) => Attempted {
            status_code: None,
            error: Some(match error {
                FetchError::Failed(_) if duration_ms as u128 >= timeout.as_millis() => {
                    format!("no answer within {} ms", timeout.as_millis())
                }
                other => other.to_string(),
            }),
            duration_ms,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            base_ms: 10_000,
            max_ms: 3_600_000,
            for_ms: 86_400_000,
        }
    }

    #[test]
    fn retries_double_up_to_the_cap_and_stop_after_the_window() {
        let p = policy();
        assert_eq!(p.delay_ms(1), 10_000);
        assert_eq!(p.delay_ms(2), 20_000);
        assert_eq!(p.delay_ms(5), 160_000);
        assert_eq!(p.delay_ms(12), 3_600_000);
        assert_eq!(p.delay_ms(1_000), 3_600_000);
        assert_eq!(p.next_attempt(0, 1, 1_000), Some(11_000));
        assert_eq!(p.next_attempt(0, 20, 86_000_000), None);
    }

    #[test]
    fn event_names_round_trip_and_unknown_ones_are_refused() {
        for kind in EventType::ALL {
            assert_eq!(EventType::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(EventType::parse("call.ringing"), None);
        assert_eq!(
            EventType::names(),
            "call.started, call.ended, call.analyzed, transfer.completed"
        );
    }

    #[test]
    fn the_envelope_carries_id_type_time_and_data() {
        let body = Envelope::body(
            &EventId::from("evt_1"),
            EventType::CallEnded,
            0,
            &serde_json::json!({"a": 1}),
        );
        assert_eq!(
            body,
            r#"{"id":"evt_1","type":"call.ended","createdAt":"1970-01-01T00:00:00.000Z","data":{"a":1}}"#
        );
    }
}
