//! Control of a live phone call from outside it: the integrator hangs it up
//! (`POST /v1/sessions/twilio/{callSid}/hangup`). Twilio ends the call, its media stream
//! stops, and the session ends as a hang-up; what was asked is kept on the session's record
//! as a call event.

use crate::app::AppState;
use crate::error::ApiError;
use crate::registry::sessions::{GetSession, RecordEvent, SessionLookup};
use crate::store::sessions::{EventRow, EVENT_HANGUP_REQUESTED, STATUS_ACTIVE, STATUS_PENDING};
use crate::telephony::rest::TwilioError;
use crate::time;

/// What a hang-up found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HungUp {
    pub session_id: String,
    /// Twilio still had the call and ended it; `false` when it had ended there already.
    pub ended_now: bool,
}

/// Hangs up the developer's live call `call_sid`: 404 when the developer has no such call,
/// 409 when its session already ended, 503 without a Twilio account, 502 when Twilio fails.
pub async fn hang_up(
    state: &AppState,
    developer_id: &str,
    call_sid: &str,
) -> Result<HungUp, ApiError> {
    let twilio = state.twilio().as_ref().ok_or_else(|| {
        ApiError::Unavailable(
            "calls cannot be controlled: set [telephony.twilio] account_sid and auth_token".into(),
        )
    })?;
    let trace = state
        .sessions()
        .send(GetSession {
            developer_id: developer_id.to_string(),
            lookup: SessionLookup::CallSid(call_sid.to_string()),
        })
        .await??;
    let session = trace.session;
    if session.status != STATUS_ACTIVE && session.status != STATUS_PENDING {
        return Err(ApiError::Conflict(format!(
            "call {call_sid} already ended ({})",
            session.status
        )));
    }
    let ended_now = twilio.hang_up(call_sid).await.map_err(|e| match e {
        TwilioError::Rejected { .. } => ApiError::bad_request(e.to_string()),
        TwilioError::Failed(_) => ApiError::Upstream(e.to_string()),
    })?;
    let at = time::now_ms() - session.started_at.unwrap_or(session.created_at);
    state.sessions().do_send(RecordEvent(EventRow::call(
        &session.id,
        EVENT_HANGUP_REQUESTED,
        at,
        None,
    )));
    Ok(HungUp {
        session_id: session.id,
        ended_now,
    })
}
