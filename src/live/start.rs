//! One start for every real-time session, whatever its transport, in one order:
//!
//! 1. its place among the node's live sessions (refused while the node drains, or when the
//!    session is live already);
//! 2. a phone call's pending record claimed for this stream (refused when a stream claimed
//!    it before: a reused relay token);
//! 3. the API key that vouched for it still in force;
//! 4. its agent's profile and engines ([`assemble`]);
//! 5. its place among the tier's concurrent sessions and its credits (the metering);
//! 6. a direct session's record made;
//! 7. its recording started;
//!
//! then ([`Admitted::run`]) the `CallSession` started on the transport's socket and the
//! transport's [`pump`] writing its outputs. A session refused after step 2 frees what it
//! took, and a record that is its own ends as failed, so nothing of it outlives the refusal.

use std::sync::Arc;

use actix_web::web;
use switchboard_actors::session::{CallSession, OutputQueue};

use super::admission::{abandon_unstarted, release_unstarted, token_issuer_in_force};
use super::assembly::{assemble, Assembled};
use super::call::OnCall;
use super::events::Notifying;
use super::post_call::PostCall;
use super::SessionRequest;
use crate::app::AppState;
use crate::cluster::drain::SessionSlot;
use crate::conversation::tools::CallAction;
use crate::error::ApiError;
use crate::recording::RecordingTap;
use crate::registry::metering::OpenSession;
use crate::registry::sessions::{ClaimSession, CreateSession};
use crate::registry::sessions::{GetSession, SessionLookup};
use crate::store::sessions::{SessionRow, SessionStatus};
use crate::time::now_ms;
use crate::transports::socket::caller_side::CallerSide;
use crate::transports::socket::{Messages, SocketWriter};
use crate::transports::{pump, Wire};

/// Where a session's record comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// Made `pending` when the call was placed; claimed by the stream that presents its token.
    Pending,
    /// Made as the session is let in (a direct session).
    New,
}

/// A session let in, with what it runs with, waiting for its socket.
pub struct Admitted {
    state: web::Data<AppState>,
    request: SessionRequest,
    slot: SessionSlot,
    assembled: Assembled,
    tap: Option<Arc<RecordingTap>>,
}

/// Lets `request` in on transport `W` (see the module doc for the order). The error says
/// why not; what the session took is given back.
pub async fn admit<W: Wire>(
    state: &web::Data<AppState>,
    request: SessionRequest,
    record: Record,
    wire: &W,
) -> Result<Admitted, ApiError> {
    let session_id = request.session_id.clone();
    let slot = state.drain().admit(&session_id)?;
    if record == Record::Pending {
        let claimed = state
            .sessions()
            .send(ClaimSession {
                session_id: session_id.clone(),
                call_sid: request.call_sid.clone(),
            })
            .await;
        if !matches!(claimed, Ok(Ok(Some(_)))) {
            return Err(ApiError::Conflict(format!(
                "session {session_id} was claimed before: its token was already used"
            )));
        }
    }
    // From here the session holds a place in the metering, and a claimed record is its own.
    let refuse = |error: ApiError| {
        match record {
            Record::Pending => abandon_unstarted(state, &session_id, &error.to_string()),
            Record::New => release_unstarted(state, &session_id),
        }
        error
    };
    token_issuer_in_force(state, &request.developer_id, request.issuer_key.as_ref())
        .await
        .map_err(|reason| refuse(ApiError::Unauthorized(reason)))?;
    let mut assembled = assemble(state, &request, W::NAME)
        .await
        .map_err(|reason| refuse(ApiError::Unavailable(reason)))?;
    let opened = state
        .metering()
        .send(OpenSession {
            session_id: session_id.clone(),
            developer_id: request.developer_id.clone(),
            metered: assembled.metered,
        })
        .await;
    match opened {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(refuse(error)),
        Err(error) => return Err(refuse(error.into())),
    }
    if record == Record::New {
        let row = SessionRow::new(
            &session_id,
            &request.developer_id,
            &request.agent_id,
            W::NAME,
            SessionStatus::Active,
            now_ms(),
        );
        // A conflict: another node made this session's record first; it is not ours to end.
        let created = state.sessions().send(CreateSession(row)).await;
        match created {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(refuse(error)),
            Err(error) => return Err(refuse(error.into())),
        }
    }
    // Started before the session, so the greeting is on it; ends when the session does.
    let tap = assembled
        .recording(state, &request, wire.tap_format())
        .map(Arc::new);
    // The developer's webhooks hear of its start and end,
    // and its agent's post-call analysis runs once it has ended.
    let post_call = assembled
        .analysed_by
        .take()
        .and_then(|agent| PostCall::of(state, &agent));
    assembled.observer = Notifying::wrap(
        state,
        &request,
        W::NAME,
        tap.is_some(),
        post_call,
        assembled.observer.clone(),
    );
    Ok(Admitted {
        state: state.clone(),
        request,
        slot,
        assembled,
        tap,
    })
}

impl Admitted {
    /// Starts the session on `socket`, reading the caller's side from `messages`, and the
    /// transport's pump writing its outputs until either ends.
    pub fn run<W: Wire>(
        self,
        wire: W,
        socket: SocketWriter,
        messages: Messages,
    ) -> Result<(), ApiError> {
        let Admitted {
            state,
            request,
            slot,
            assembled,
            tap,
        } = self;
        let call = assembled.call.clone();
        let (output, outputs) = OutputQueue::with_clear_lane(wire.clear_lane(socket.clone()));
        let (caller, duties) =
            CallerSide::new(messages, wire.caller(&request.session_id), tap.clone());
        let config = wire.config(request.session_id.to_string(), assembled.profile);
        let handle = CallSession::start_reading(
            config,
            assembled.engines,
            output,
            assembled.observer,
            caller,
        )
        .map_err(|e| {
            abandon_unstarted(&state, &request.session_id, &e.to_string());
            ApiError::Internal(format!("the session could not start: {e}"))
        })?;
        slot.attach(handle.addr());
        let ending = async move {
            if let Some(action) = call.and_then(|call| call.take()) {
                // Boxed: a session's task holds this future all call long, and most
                // calls never act on themselves.
                Box::pin(carry_out(&state, &request, action)).await;
            }
            slot.ended_by_server()
        };
        actix_web::rt::spawn(pump(wire, handle, socket, duties, outputs, tap, ending));
        Ok(())
    }

    /// The session cannot run after all (its socket could not be taken over): frees what it
    /// took and ends its record as failed.
    pub fn abandon(self, reason: &str) {
        abandon_unstarted(&self.state, &self.request.session_id, reason);
    }
}

/// Carries out what the agent asked of its phone call once the session has ended (see
/// [`super::call`]).
async fn carry_out(state: &AppState, request: &SessionRequest, action: CallAction) {
    let (Some(twilio), Some(call_sid), Some(base)) = (
        state.twilio().as_ref(),
        request.call_sid.as_deref(),
        request.public_base.as_deref(),
    ) else {
        tracing::warn!(session = %request.session_id, "a call action with no Twilio account or call to act on");
        return;
    };
    let session = state
        .sessions()
        .send(GetSession {
            developer_id: request.developer_id.clone(),
            lookup: SessionLookup::Id(request.session_id.clone()),
        })
        .await;
    let session = match session {
        Ok(Ok(trace)) => trace.session,
        _ => {
            tracing::warn!(session = %request.session_id, "a call action for a session with no record");
            return;
        }
    };
    OnCall {
        state,
        twilio,
        base,
        session: &session,
        call_sid,
    }
    .carry_out(action)
    .await;
}
