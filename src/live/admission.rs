//! What a live session that cannot start gives back (its place among the tier's sessions;
//! its record ends as failed), and whether the API key that minted its token still vouches
//! for it.

use crate::app::AppState;
use crate::ids::{DeveloperId, KeyId, SessionId};
use crate::registry::keys::{CheckIssuer, KeyCheck};
use crate::registry::metering::CloseSession;
use crate::registry::sessions::EndSession;
use crate::store::sessions::{SessionEnd, SessionStatus};

/// Frees what a real-time session took before it started (its place among the tier's
/// concurrent sessions, its providers' slots) when it cannot start after all.
pub fn release_unstarted(state: &AppState, session_id: &SessionId) {
    state.metering().do_send(CloseSession {
        session_id: session_id.clone(),
    });
}

/// A real-time session whose token was spent could not start: frees what it took and ends
/// its record as `failed` with `endReason` `start_failed: <reason>`, so nothing of it outlives
/// the refused socket and no record reads as active for ever.
pub fn abandon_unstarted(state: &AppState, session_id: &SessionId, reason: &str) {
    release_unstarted(state, session_id);
    state.sessions().do_send(EndSession {
        session_id: session_id.clone(),
        end: SessionEnd {
            status: SessionStatus::Failed,
            tool_executions: 0,
            total_duration_ms: 0,
            avg_turn_latency_ms: 0,
            end_reason: Some(format!("start_failed: {reason}")),
            ended_at: Some(crate::time::now_ms()),
        },
    });
}

/// Whether the API key that minted a relay or session token still vouches for it (tokens
/// minted without a key, for Twilio's own webhooks, always do). `Err` says why not.
pub async fn token_issuer_in_force(
    state: &AppState,
    developer_id: &DeveloperId,
    issuer_key: Option<&KeyId>,
) -> Result<(), String> {
    let Some(key_id) = issuer_key.cloned() else {
        return Ok(());
    };
    let check = state
        .keys()
        .send(CheckIssuer {
            developer_id: developer_id.clone(),
            key_id,
        })
        .await
        .map_err(|e| format!("the key registry did not answer: {e}"))?
        .map_err(|e| format!("the issuing key could not be checked: {e}"))?;
    match check {
        KeyCheck::Valid(_) => Ok(()),
        KeyCheck::Revoked => Err("the API key that issued the token was revoked".into()),
        KeyCheck::Expired => Err("the API key that issued the token has expired".into()),
        KeyCheck::Unknown => Err("the API key that issued the token is unknown".into()),
    }
}
