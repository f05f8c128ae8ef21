//! Running outbound campaigns: the [`CampaignRunner`] on every node looks for due contacts
//! every `campaigns.poll_ms`, in the campaigns whose lease it holds (so one node runs each),
//! within their calling hours ([`CallWindow`]) and their `maxConcurrent`, and places each
//! contact's call like `POST /v1/sessions/twilio/outbound` does, with the contact's
//! variables for the agent. A call the tier has no free line for waits and is tried again
//! without counting; spent credits pause the campaign. Each call's outcome comes back through
//! [`task_ended`] and the campaign's retry policy decides what follows.

use std::time::Duration;

use actix::prelude::*;
use actix_web::web;
use serde::{Deserialize, Serialize};

use super::outbound::{self, OutboundCall};
use super::voicemail::{MachineDetection, VoicemailPlan};
use crate::app::AppState;
use crate::error::ApiError;
use crate::ids::{NodeId, TaskId};
use crate::registry::campaigns::{
    ClaimContacts, ContactOutcome, ContactPlaced, LeaseCampaigns, Outcome, OutcomeOf, PauseCampaign,
};
use crate::store::campaigns::{CampaignRow, ContactRow};
use crate::store::telephony::TaskStatus;
use crate::time::now_ms;

/// Calling hours: calls start only from `start` to `end` (local time in `timezone`), on
/// `days`; calls in progress at `end` go on. An `end` before `start` runs past midnight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallWindow {
    /// `HH:MM`, 24-hour.
    pub start: String,
    pub end: String,
    /// An IANA time zone (`America/New_York`); `UTC` by default.
    pub timezone: String,
    /// Lower-case English day abbreviations (`mon` … `sun`); every day by default.
    pub days: Vec<String>,
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// `HH:MM` as minutes after midnight.
fn minutes(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

impl CallWindow {
    /// Reads a request's `window` (`{start, end, timezone?, days?}`); `Err` names the field
    /// that is wrong.
    pub fn parse(value: &serde_json::Value) -> Result<CallWindow, String> {
        let object = value
            .as_object()
            .ok_or("window must be an object {start, end, timezone, days}")?;
        if let Some(unknown) = object
            .keys()
            .find(|k| !["start", "end", "timezone", "days"].contains(&k.as_str()))
        {
            return Err(format!(
                "window.{unknown} is not a field; the fields are start, end, timezone, days"
            ));
        }
        let time = |name: &str| -> Result<String, String> {
            let text = object.get(name).and_then(|v| v.as_str()).unwrap_or("");
            minutes(text)
                .map(|_| text.to_string())
                .ok_or_else(|| format!("window.{name} must be a time HH:MM (00:00-23:59)"))
        };
        let (start, end) = (time("start")?, time("end")?);
        if start == end {
            return Err("window.start and window.end must differ".into());
        }
        let timezone = match object.get("timezone") {
            None | Some(serde_json::Value::Null) => "UTC".to_string(),
            Some(serde_json::Value::String(name)) => {
                jiff::tz::TimeZone::get(name).map_err(|_| {
                    format!("window.timezone '{name}' is not an IANA time zone such as America/New_York")
                })?;
                name.clone()
            }
            Some(_) => return Err("window.timezone must be a string".into()),
        };
        let days = match object.get("days") {
            None | Some(serde_json::Value::Null) => DAYS.iter().map(|d| d.to_string()).collect(),
            Some(serde_json::Value::Array(items)) if !items.is_empty() => {
                let mut days = Vec::new();
                for item in items {
                    let day = item
                        .as_str()
                        .map(str::to_ascii_lowercase)
                        .unwrap_or_default();
                    if !DAYS.contains(&day.as_str()) {
                        return Err(format!(
                            "window.days holds {item}; days are {}",
                            DAYS.join(", ")
                        ));
                    }
                    if !days.contains(&day) {
                        days.push(day);
                    }
                }
                days
            }
            Some(_) => {
                return Err(
                    "window.days must be a non-empty list such as [\"mon\", \"tue\"]".into(),
                )
            }
        };
        Ok(CallWindow {
            start,
            end,
            timezone,
            days,
        })
    }

    /// Whether a call may start at `at_ms` (Unix epoch milliseconds). A night window belongs
    /// to the day it starts on.
    pub fn allows(&self, at_ms: i64) -> bool {
        let (Some(start), Some(end)) = (minutes(&self.start), minutes(&self.end)) else {
            return false;
        };
        let Ok(tz) = jiff::tz::TimeZone::get(&self.timezone) else {
            return false;
        };
        let Ok(at) = jiff::Timestamp::from_millisecond(at_ms) else {
            return false;
        };
        let local = at.to_zoned(tz);
        let now = local.hour() as u32 * 60 + local.minute() as u32;
        let weekday = local.weekday().to_monday_zero_offset() as usize;
        let day = |offset: usize| DAYS[(weekday + 7 - offset) % 7].to_string();
        if start < end {
            (start..end).contains(&now) && self.days.contains(&day(0))
        } else if now >= start {
            self.days.contains(&day(0))
        } else {
            now < end && self.days.contains(&day(1))
        }
    }
}

/// A campaign call's task ended with `status` (`completed`, `no-answer`, `busy`, `failed`,
/// `canceled`): its contact's campaign hears of it. A task no campaign placed is left alone.
pub fn task_ended(state: &AppState, task_id: &TaskId, status: TaskStatus, error: Option<String>) {
    let Some(status) = status.outcome() else {
        return;
    };
    state.campaigns().do_send(ContactOutcome {
        of: OutcomeOf::Task(task_id.clone()),
        outcome: Outcome {
            status: status.to_string(),
            error,
            counts: true,
        },
    });
}

/// Places the calls of the campaigns this node runs (see the module doc).
pub struct CampaignRunner {
    state: web::Data<AppState>,
    node_id: NodeId,
    /// A look is under way: the next tick is skipped rather than run beside it.
    busy: bool,
}

impl CampaignRunner {
    pub fn new(state: web::Data<AppState>, node_id: NodeId) -> Self {
        Self {
            state,
            node_id,
            busy: false,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy || self.state.drain().is_draining() {
            return;
        }
        self.busy = true;
        let (state, node_id) = (self.state.clone(), self.node_id.clone());
        let look = async move { run_due(&state, node_id).await };
        ctx.spawn(look.into_actor(self).map(|_, act, _| act.busy = false));
    }
}

impl Actor for CampaignRunner {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = Duration::from_millis(self.state.config().campaigns.poll_ms);
        ctx.run_interval(every, Self::tick);
    }
}

/// One look: the campaigns leased, the contacts due, their calls placed.
async fn run_due(state: &web::Data<AppState>, node_id: NodeId) {
    let config = &state.config().campaigns;
    let leased = state
        .campaigns()
        .send(LeaseCampaigns {
            node_id,
            lease_ms: (config.lease_seconds as i64).saturating_mul(1000),
        })
        .await;
    let leased = match leased {
        Ok(Ok(leased)) => leased,
        Ok(Err(e)) => return tracing::warn!("campaigns: cannot lease: {e}"),
        Err(e) => return tracing::warn!("campaigns: the registry did not answer: {e}"),
    };
    let now = now_ms();
    for campaign in leased {
        let open = campaign
            .call_window
            .as_deref()
            .and_then(|w| serde_json::from_str::<CallWindow>(w).ok())
            .is_none_or(|window| window.allows(now));
        if !open {
            continue;
        }
        let claimed = state
            .campaigns()
            .send(ClaimContacts {
                campaign: campaign.clone(),
                stale_ms: (config.stale_call_minutes as i64).saturating_mul(60_000),
            })
            .await;
        let contacts = match claimed {
            Ok(Ok(contacts)) => contacts,
            Ok(Err(e)) => {
                tracing::warn!(campaign = %campaign.id, "campaigns: cannot claim contacts: {e}");
                continue;
            }
            Err(e) => return tracing::warn!("campaigns: the registry did not answer: {e}"),
        };
        for contact in contacts {
            if !place_contact(state, &campaign, contact).await {
                break;
            }
        }
    }
}

/// Places `contact`'s call; `false` when the campaign can place no more now (no credits).
async fn place_contact(state: &AppState, campaign: &CampaignRow, contact: ContactRow) -> bool {
    let call = OutboundCall {
        developer_id: campaign.developer_id.clone(),
        key_id: campaign.key_id.clone(),
        agent_id: campaign.agent_id.clone(),
        instance_id: None,
        to: contact.to_number.clone(),
        from: campaign.from_number.clone(),
        record: campaign.record,
        machine_plan: VoicemailPlan {
            mode: MachineDetection::parse(&campaign.machine_detection).unwrap_or_default(),
            message: campaign.voicemail_message.clone(),
        },
        variables: Some(contact.variables.clone()),
        public_base: campaign.public_base.clone(),
    };
    let placed = outbound::place(state, call).await;
    let (outcome, go_on) = match placed {
        Ok(placed) => {
            state.campaigns().do_send(ContactPlaced {
                contact,
                task_id: placed.task_id,
            });
            return true;
        }
        // No free line: tried again shortly, not counted.
        Err(ApiError::SessionLimit(reason)) => (not_made("no-free-line", reason), false),
        Err(ApiError::InsufficientCredits(reason)) => {
            state.campaigns().do_send(PauseCampaign {
                campaign: campaign.clone(),
                reason: format!("insufficient_credits: {reason}"),
            });
            (not_made("no-credits", reason), false)
        }
        Err(e) => (
            Outcome {
                status: "failed".to_string(),
                error: Some(e.to_string()),
                counts: true,
            },
            true,
        ),
    };
    state.campaigns().do_send(ContactOutcome {
        of: OutcomeOf::Contact(contact),
        outcome,
    });
    go_on
}

fn not_made(status: &str, reason: String) -> Outcome {
    Outcome {
        status: status.to_string(),
        error: Some(reason),
        counts: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Unix milliseconds of a UTC date and time.
    fn utc(text: &str) -> i64 {
        text.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn a_window_is_read_with_its_defaults_or_refused_naming_the_field() {
        let window = CallWindow::parse(&json!({"start": "09:00", "end": "17:30"})).unwrap();
        assert_eq!(window.timezone, "UTC");
        assert_eq!(window.days.len(), 7);
        for (bad, says) in [
            (json!({"start": "9:00", "end": "17:00"}), "window.start"),
            (json!({"start": "09:00", "end": "24:00"}), "window.end"),
            (json!({"start": "09:00", "end": "09:00"}), "must differ"),
            (
                json!({"start": "09:00", "end": "17:00", "timezone": "Mars/Olympus"}),
                "IANA",
            ),
            (
                json!({"start": "09:00", "end": "17:00", "days": ["monday"]}),
                "window.days",
            ),
            (
                json!({"start": "09:00", "end": "17:00", "days": []}),
                "non-empty",
            ),
            (
                json!({"start": "09:00", "end": "17:00", "tz": "UTC"}),
                "window.tz",
            ),
        ] {
            let error = CallWindow::parse(&bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn a_window_opens_in_its_own_time_zone_and_days() {
        // 2026-12-07 is a Monday. New York is UTC-5 in December.
        let window = CallWindow::parse(&json!({"start": "09:00", "end": "17:00",
            "timezone": "America/New_York", "days": ["mon", "tue", "wed", "thu", "fri"]}))
        .unwrap();
        assert!(
            !window.allows(utc("2026-12-07T13:59:00Z")),
            "08:59 in New York"
        );
        assert!(
            window.allows(utc("2026-12-07T14:00:00Z")),
            "09:00 in New York"
        );
        assert!(
            window.allows(utc("2026-12-07T21:59:00Z")),
            "16:59 in New York"
        );
        assert!(!window.allows(utc("2026-12-07T22:00:00Z")), "17:00: closed");
        assert!(!window.allows(utc("2026-12-12T15:00:00Z")), "a Saturday");
        // Summer time moves the window an hour in UTC.
        assert!(window.allows(utc("2026-07-06T13:00:00Z")), "09:00 EDT");

        let night =
            CallWindow::parse(&json!({"start": "22:00", "end": "02:00", "days": ["fri"]})).unwrap();
        assert!(night.allows(utc("2026-12-11T23:00:00Z")), "Friday night");
        assert!(
            night.allows(utc("2026-12-12T01:00:00Z")),
            "after midnight, still Friday's"
        );
        assert!(!night.allows(utc("2026-12-12T23:00:00Z")), "Saturday night");
        assert!(!night.allows(utc("2026-12-11T12:00:00Z")), "Friday noon");
    }
}
