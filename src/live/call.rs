//! A phone call acted on from inside its conversation, and a transfer's outcome.
//!
//! The agent's call tools (`end_call`, `transfer_call`, `send_dtmf`) ask a [`PhoneCall`] for
//! a [`CallAction`]; the session ends once the agent's last words have played, and before
//! its media stream is closed the action is carried out through Twilio's call update
//! (protocols.md §3.5):
//!
//! - hang up: `Status=completed`;
//! - cold transfer: `<Dial action=…><Number>…</Number></Dial>`; Twilio reports the dial's
//!   end to the `action` URL ([`dial_ended`]): a person who took the call ends it there,
//!   any other outcome brings the caller back to the agent in a new session;
//! - warm transfer: the person is called with markup that tells them the summary and joins
//!   them to a conference named for the session, and the caller is moved into it with a hold
//!   message; the person's call reports to [`person_call_status`], which brings the caller
//!   back to the agent when the person does not answer;
//! - keys: `<Play digits=…/>`, then the call streams to a new session of the same agent that
//!   carries on the conversation ([`resumed_prompt`]).
//!
//! Each is kept on the session's record as a call event with its detail.

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::phone::{issue_stream_at, IssuedStream, StreamFor};
use crate::app::AppState;
use crate::conversation::tools::{CallAction, CallControl};
use crate::conversation::transfer::{TransferMode, TransferTarget};
use crate::error::ApiError;
use crate::ids::SessionId;
use crate::registry::sessions::{GetAnySession, RecordEvent, SettleEvent};
use crate::registry::telephony::{RouteCall, TaskOfCall};
use crate::store::sessions::{
    EventRow, SessionRow, EVENT_AGENT_HUNG_UP, EVENT_KEYPAD, EVENT_TRANSFER,
};
use crate::telephony::rest::{PersonCall, TwilioClient};
use crate::telephony::twiml;

/// Seconds a transfer rings the person before it counts as `no-answer`.
const RING_SECONDS: u32 = 20;

/// The phone call a session's agent is on: the people it may hand the call to, and what its
/// tools asked of the call (one thing: the session ends with it).
pub struct PhoneCall {
    targets: Vec<TransferTarget>,
    asked: Mutex<Option<CallAction>>,
}

impl PhoneCall {
    pub fn new(targets: Vec<TransferTarget>) -> Arc<PhoneCall> {
        Arc::new(PhoneCall {
            targets,
            asked: Mutex::new(None),
        })
    }

    /// What the agent asked of the call, once.
    pub fn take(&self) -> Option<CallAction> {
        self.asked.lock().ok()?.take()
    }
}

impl CallControl for PhoneCall {
    fn targets(&self) -> &[TransferTarget] {
        &self.targets
    }

    fn request(&self, action: CallAction) -> Result<(), String> {
        let mut asked = self
            .asked
            .lock()
            .map_err(|_| "the call cannot take requests".to_string())?;
        if let Some(earlier) = asked.as_ref() {
            return Err(format!(
                "the call is already ending ({}); say goodbye",
                describe(earlier)
            ));
        }
        *asked = Some(action);
        Ok(())
    }
}

fn describe(action: &CallAction) -> String {
    match action {
        CallAction::HangUp => "it will be hung up".into(),
        CallAction::Transfer { target, .. } => format!("it will be handed to {}", target.name),
        CallAction::Keypad { digits } => format!("the keys {digits} will be pressed"),
    }
}

/// Who asked for a transfer, on its call event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedBy {
    Agent,
    Api,
}

impl AskedBy {
    fn as_str(self) -> &'static str {
        match self {
            AskedBy::Agent => "agent",
            AskedBy::Api => "api",
        }
    }
}

/// The call a session runs on, as the call actions need it.
pub struct OnCall<'a> {
    pub state: &'a AppState,
    pub twilio: &'a TwilioClient,
    /// The public base URL Twilio reaches this service at.
    pub base: &'a str,
    pub session: &'a SessionRow,
    pub call_sid: &'a str,
}

impl OnCall<'_> {
    fn event(&self, kind: &str, detail: serde_json::Value) {
        self.state.sessions().do_send(RecordEvent(EventRow::call(
            self.session,
            kind,
            Some(detail.to_string()),
        )));
    }

    /// Carries out what the agent asked, once its last words have played. Failures are
    /// logged and kept on the record: the session has ended and no one waits for an answer.
    pub async fn carry_out(&self, action: CallAction) {
        let done = match &action {
            CallAction::HangUp => self.hang_up_for_agent().await,
            CallAction::Transfer { target, summary } => self
                .transfer(target, summary, AskedBy::Agent)
                .await
                .map(|_| ()),
            CallAction::Keypad { digits } => self.press(digits).await,
        };
        if let Err(error) = done {
            tracing::warn!(session = %self.session.id, call = %self.call_sid, "{}: {error}", describe(&action));
        }
    }

    async fn hang_up_for_agent(&self) -> Result<(), ApiError> {
        self.event(EVENT_AGENT_HUNG_UP, json!({}));
        self.twilio
            .hang_up(self.call_sid)
            .await
            .map(|_| ())
            .map_err(|e| ApiError::Upstream(e.to_string()))
    }

    /// Presses `digits` on the line, then streams the call to a new session of the agent that
    /// carries on the conversation.
    async fn press(&self, digits: &str) -> Result<(), ApiError> {
        let next = resume_stream(self.state, self.base, self.session, None).await?;
        self.event(
            EVENT_KEYPAD,
            json!({"digits": digits, "nextSessionId": next.session_id}),
        );
        let markup = twiml::play_digits_then(digits, &next.stream_url, &next.token);
        self.twilio
            .redirect(self.call_sid, &markup)
            .await
            .map(|_| ())
            .map_err(|e| ApiError::Upstream(e.to_string()))
    }

    /// Hands the call to `target` (see the module doc). Answers the outcome so far:
    /// `dialing` (cold) or `calling` (warm). A transfer that cannot start is recorded as
    /// `failed`, and a warm one brings the caller back to the agent.
    pub async fn transfer(
        &self,
        target: &TransferTarget,
        summary: &str,
        by: AskedBy,
    ) -> Result<&'static str, ApiError> {
        let detail = |outcome: &str| {
            json!({
                "name": target.name, "number": target.number, "mode": target.mode.as_str(),
                "by": by.as_str(), "outcome": outcome,
            })
        };
        let callbacks = format!(
            "{}/v1/sessions/twilio/transfers/{}",
            self.base, self.session.id
        );
        match target.mode {
            TransferMode::Cold => {
                self.event(EVENT_TRANSFER, detail("dialing"));
                let markup =
                    twiml::dial(&target.number, &format!("{callbacks}/dialed"), RING_SECONDS);
                if let Err(e) = self.twilio.redirect(self.call_sid, &markup).await {
                    self.settle(detail("failed")).await;
                    return Err(ApiError::Upstream(e.to_string()));
                }
                Ok("dialing")
            }
            TransferMode::Warm => {
                self.event(EVENT_TRANSFER, detail("calling"));
                let room = conference_room(&self.session.id);
                let line = self.line().await;
                let told = if summary.trim().is_empty() {
                    format!(
                        "You have a call transferred from the assistant of {}.",
                        self.session.to_number.as_deref().unwrap_or("your line")
                    )
                } else {
                    summary.trim().to_string()
                };
                let placed = self
                    .twilio
                    .call_person(&PersonCall {
                        to: target.number.clone(),
                        from: line,
                        twiml: twiml::tell_and_join(&told, &room),
                        status_callback: format!("{callbacks}/person"),
                        ring_seconds: RING_SECONDS,
                    })
                    .await;
                if let Err(e) = placed {
                    self.settle(detail("failed")).await;
                    self.back_to_agent(&target.name, "failed").await;
                    return Err(ApiError::Upstream(e.to_string()));
                }
                let hold = &self.state.config().telephony.transfer_hold_message;
                let markup = twiml::hold_in_conference(hold, &room);
                if let Err(e) = self.twilio.redirect(self.call_sid, &markup).await {
                    self.settle(detail("failed")).await;
                    return Err(ApiError::Upstream(e.to_string()));
                }
                Ok("calling")
            }
        }
    }

    async fn settle(&self, detail: serde_json::Value) {
        settle_transfer(self.state, self.session, detail).await;
    }

    /// The number of ours on the call (the called number of an inbound call, the caller id of
    /// an outbound one): the one routed to the developer, else the called number.
    async fn line(&self) -> String {
        let numbers = [&self.session.to_number, &self.session.from_number];
        for number in numbers.into_iter().flatten() {
            let route = self
                .state
                .telephony()
                .send(RouteCall {
                    number: number.clone(),
                })
                .await;
            if let Ok(Ok(Some(route))) = route {
                if route.developer_id == self.session.developer_id {
                    return number.clone();
                }
            }
        }
        self.session.to_number.clone().unwrap_or_default()
    }

    /// Brings the caller back to the agent after the transfer to `name` ended as `outcome`.
    async fn back_to_agent(&self, name: &str, outcome: &str) {
        let markup = back_to_agent_markup(self.state, self.base, self.session, name, outcome).await;
        if let Err(e) = self.twilio.redirect(self.call_sid, &markup).await {
            tracing::warn!(session = %self.session.id, "could not bring the caller back to the agent: {e}");
        }
    }
}

/// The conference a warm transfer joins the caller and the person in.
fn conference_room(session_id: &SessionId) -> String {
    format!("transfer-{session_id}")
}

/// A new pending session of the same agent on `session`'s call that carries on its
/// conversation, opening with `opening` (nothing when `None`: it listens). A call placed as an
/// outbound task (a campaign's) keeps its task, so the agent keeps the contact's variables.
async fn resume_stream(
    state: &AppState,
    base: &str,
    session: &SessionRow,
    opening: Option<String>,
) -> Result<IssuedStream, ApiError> {
    let task_id = match &session.call_sid {
        Some(call_sid) => {
            state
                .telephony()
                .send(TaskOfCall {
                    developer_id: session.developer_id.clone(),
                    call_sid: call_sid.clone(),
                })
                .await??
        }
        None => None,
    };
    issue_stream_at(
        state,
        base,
        StreamFor {
            developer_id: session.developer_id.clone(),
            agent_id: session.agent_id.clone(),
            from: session.from_number.clone(),
            to: session.to_number.clone(),
            instance_id: session.instance_id.clone(),
            call_sid: session.call_sid.clone(),
            key_id: None,
            resumes: Some(session.id.clone()),
            opening,
            task_id,
        },
        SessionId::new(),
    )
    .await
}

/// The markup that brings a caller back to the agent after a transfer to `name` ended as
/// `outcome`: a new session that carries on the conversation and says so first; when it
/// cannot start, the configured message and a hang-up.
async fn back_to_agent_markup(
    state: &AppState,
    base: &str,
    session: &SessionRow,
    name: &str,
    outcome: &str,
) -> String {
    let why = match outcome {
        "busy" => "the line was busy",
        "no-answer" => "nobody answered",
        _ => "the call did not go through",
    };
    let opening = format!(
        "I'm sorry, I could not reach {name}: {why}. Is there anything else I can help you with?"
    );
    match resume_stream(state, base, session, Some(opening)).await {
        Ok(issued) => issued.twiml,
        Err(e) => {
            tracing::warn!(session = %session.id, "the caller cannot come back to the agent: {e}");
            twiml::say_and_hang_up(&state.config().telephony.transfer_failed_message)
        }
    }
}

/// Sets the outcome on the session's transfer event, keeping what it said before, and tells
/// the developer's webhooks (`transfer.completed`).
async fn settle_transfer(state: &AppState, session: &SessionRow, detail: serde_json::Value) {
    let settled = state
        .sessions()
        .send(SettleEvent {
            session_id: session.id.clone(),
            kind: EVENT_TRANSFER,
            detail: detail.to_string(),
        })
        .await;
    if matches!(settled, Ok(Ok(true))) {
        super::events::transfer_completed(state, session, &detail);
    } else {
        tracing::warn!(session = %session.id, "a transfer's outcome found no transfer to settle");
    }
}

/// The session a transfer webhook names, with its transfer event's detail.
async fn transferred(
    state: &AppState,
    session_id: &SessionId,
) -> Result<(SessionRow, serde_json::Value), ApiError> {
    let trace = state
        .sessions()
        .send(GetAnySession {
            session_id: session_id.clone(),
        })
        .await??;
    let detail = trace
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EVENT_TRANSFER)
        .and_then(|e| e.detail.as_deref())
        .and_then(|d| serde_json::from_str(d).ok())
        .ok_or_else(|| ApiError::NotFound(format!("session {session_id} has no transfer")))?;
    Ok((trace.session, detail))
}

/// A cold transfer's dial ended (Twilio's `action` request, `DialCallStatus`): records the
/// outcome and answers what the caller hears next: the call ends after a person took it,
/// else the caller is back with the agent.
pub async fn dial_ended(
    state: &AppState,
    base: &str,
    session_id: &SessionId,
    dial_status: &str,
    dial_seconds: Option<i64>,
) -> Result<String, ApiError> {
    let (session, mut detail) = transferred(state, session_id).await?;
    detail["outcome"] = json!(dial_status);
    if let Some(seconds) = dial_seconds {
        detail["durationSeconds"] = json!(seconds);
    }
    settle_transfer(state, &session, detail.clone()).await;
    if dial_status == "completed" || dial_status == "answered" {
        return Ok(twiml::hang_up());
    }
    let name = detail["name"].as_str().unwrap_or("them").to_string();
    Ok(back_to_agent_markup(state, base, &session, &name, dial_status).await)
}

/// A warm transfer's call to the person moved on (`CallStatus`): `in-progress` means they
/// answered and are joined to the caller (`bridged`); a call that ends unanswered brings the
/// caller back to the agent.
pub async fn person_call_status(
    state: &AppState,
    base: &str,
    session_id: &SessionId,
    call_status: &str,
) -> Result<(), ApiError> {
    let (session, mut detail) = transferred(state, session_id).await?;
    let outcome = match call_status {
        "in-progress" | "answered" => "bridged",
        "busy" | "no-answer" | "failed" | "canceled" => call_status,
        // Ringing, or the end of a call that was bridged: nothing changes.
        _ => return Ok(()),
    };
    if detail["outcome"] == json!(outcome) {
        return Ok(());
    }
    detail["outcome"] = json!(outcome);
    settle_transfer(state, &session, detail.clone()).await;
    if outcome == "bridged" {
        return Ok(());
    }
    let (Some(twilio), Some(call_sid)) = (state.twilio().as_ref(), session.call_sid.as_deref())
    else {
        return Ok(());
    };
    let name = detail["name"].as_str().unwrap_or("them").to_string();
    let markup = back_to_agent_markup(state, base, &session, &name, outcome).await;
    twilio
        .redirect(call_sid, &markup)
        .await
        .map(|_| ())
        .map_err(|e| ApiError::Upstream(e.to_string()))
}

/// The system-prompt section of a session that carries on `previous` on the same call:
/// what was said, and what was done to the call.
pub fn resumed_prompt(previous: &crate::registry::sessions::SessionTrace) -> String {
    const BUDGET_CHARS: usize = 4000;
    let mut lines: Vec<String> = previous
        .turns
        .iter()
        .filter(|t| !t.text.trim().is_empty())
        .map(|t| {
            let who = if t.speaker == "user" { "Caller" } else { "You" };
            format!("{who}: {}", t.text.trim())
        })
        .collect();
    for event in &previous.events {
        let detail: serde_json::Value = event
            .detail
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        match event.kind.as_str() {
            EVENT_KEYPAD => lines.push(format!(
                "(You pressed the keys {} on the phone line; listen to what the line says now.)",
                detail["digits"].as_str().unwrap_or_default()
            )),
            EVENT_TRANSFER => lines.push(format!(
                "(You tried to hand the call to {}; that did not work: {}.)",
                detail["name"].as_str().unwrap_or_default(),
                detail["outcome"].as_str().unwrap_or("unknown")
            )),
            _ => {}
        }
    }
    let mut kept = Vec::new();
    let mut budget = BUDGET_CHARS;
    for line in lines.iter().rev() {
        if line.len() > budget {
            break;
        }
        budget -= line.len();
        kept.push(line.as_str());
    }
    kept.reverse();
    format!(
        "\n\nThis phone call goes on from an earlier part of the conversation:\n{}",
        kept.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::transfer::TransferMode;

    fn nurse() -> TransferTarget {
        TransferTarget {
            name: "nurse".into(),
            number: "+14155550143".into(),
            description: String::new(),
            mode: TransferMode::Warm,
        }
    }

    #[test]
    fn a_call_takes_one_action_and_hands_it_over_once() {
        let call = PhoneCall::new(vec![nurse()]);
        assert_eq!(call.targets(), &[nurse()]);
        call.request(CallAction::Keypad {
            digits: "1#".into(),
        })
        .unwrap();
        let second = call.request(CallAction::HangUp).unwrap_err();
        assert!(second.contains("the keys 1# will be pressed"), "{second}");
        assert_eq!(
            call.take(),
            Some(CallAction::Keypad {
                digits: "1#".into()
            })
        );
        assert_eq!(call.take(), None);
    }
}
