//! Control of a live phone call from outside it: the integrator hangs it up
//! (`POST /v1/sessions/twilio/{callSid}/hangup`) or hands it to a person
//! (`POST /v1/sessions/twilio/{callSid}/transfer`). Twilio ends or redirects the call, its
//! media stream stops, and the session ends as a hang-up or `transferred`; what was asked is
//! kept on the session's record as a call event.

use switchboard_actors::session::{EndAs, EndReason};

use super::call::{AskedBy, OnCall};
use crate::app::AppState;
use crate::conversation::transfer::TransferTarget;
use crate::error::ApiError;
use crate::ids::{DeveloperId, SessionId};
use crate::registry::sessions::{GetSession, RecordEvent, SessionLookup};
use crate::store::sessions::{EventRow, SessionRow, SessionStatus, EVENT_HANGUP_REQUESTED};
use crate::telephony::rest::{TwilioClient, TwilioError};

/// What a hang-up found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HungUp {
    pub session_id: SessionId,
    /// Twilio still had the call and ended it; `false` when it had ended there already.
    pub ended_now: bool,
}

/// Hangs up the developer's live call `call_sid`: 404 when the developer has no such call,
/// 409 when its session already ended, 503 without a Twilio account, 502 when Twilio fails.
pub async fn hang_up(
    state: &AppState,
    developer_id: &DeveloperId,
    call_sid: &str,
) -> Result<HungUp, ApiError> {
    let (twilio, session) = live_call(state, developer_id, call_sid).await?;
    let ended_now = twilio.hang_up(call_sid).await.map_err(|e| match e {
        TwilioError::Rejected { .. } => ApiError::bad_request(e.to_string()),
        TwilioError::Failed(_) => ApiError::Upstream(e.to_string()),
    })?;
    state.sessions().do_send(RecordEvent(EventRow::call(
        &session,
        EVENT_HANGUP_REQUESTED,
        None,
    )));
    Ok(HungUp {
        session_id: session.id,
        ended_now,
    })
}

/// The Twilio account and the developer's live call `call_sid`: 503 without an account, 404
/// when the developer has no such call, 409 when its session already ended.
async fn live_call<'a>(
    state: &'a AppState,
    developer_id: &DeveloperId,
    call_sid: &str,
) -> Result<(&'a TwilioClient, SessionRow), ApiError> {
    let twilio = state.twilio().as_ref().ok_or_else(|| {
        ApiError::Unavailable(
            "calls cannot be controlled: set [telephony.twilio] account_sid and auth_token".into(),
        )
    })?;
    let trace = state
        .sessions()
        .send(GetSession {
            developer_id: developer_id.clone(),
            lookup: SessionLookup::CallSid(call_sid.to_string()),
        })
        .await??;
    let session = trace.session;
    if session.status != SessionStatus::Active && session.status != SessionStatus::Pending {
        return Err(ApiError::Conflict(format!(
            "call {call_sid} already ended ({})",
            session.status
        )));
    }
    Ok((twilio, session))
}

/// Hands the developer's live call `call_sid` to `target` (see [`super::call`]), telling a
/// warm transfer's person `summary`; `base` is the public base URL Twilio reaches this
/// service at. Answers the session and the outcome so far (`dialing` or `calling`). Errors
/// as [`hang_up`]'s.
pub async fn transfer(
    state: &AppState,
    developer_id: &DeveloperId,
    call_sid: &str,
    base: &str,
    target: &TransferTarget,
    summary: &str,
) -> Result<(SessionId, &'static str), ApiError> {
    let (twilio, session) = live_call(state, developer_id, call_sid).await?;
    // The session on this node ends as transferred when Twilio stops its stream.
    let running = state.drain().session(&session.id);
    if let Some(running) = &running {
        running.do_send(EndAs(Some(EndReason::Transferred)));
    }
    let outcome = OnCall {
        state,
        twilio,
        base,
        session: &session,
        call_sid,
    }
    .transfer(target, summary, AskedBy::Api)
    .await
    .inspect_err(|_| {
        if let Some(running) = &running {
            // The call stays with the agent: a hang-up later is a hang-up.
            running.do_send(EndAs(None));
        }
    })?;
    Ok((session.id, outcome))
}
