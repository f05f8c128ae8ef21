//! A phone session before its call connects: the agent's voice warmed, the instance the call
//! runs with, the pending session record and the relay token its media stream must present,
//! and the markup that connects the call to the stream. Every way into a phone call (the API,
//! outbound connect, the inbound webhook) answers with [`issue_stream`], or, when the
//! developer's concurrent sessions are all taken, with [`busy_markup`]; the call's media
//! stream is let in by [`phone_stream`].

use std::time::Duration;

use actix_web::{web, HttpRequest};

use super::admission::release_unstarted;
use super::{admit, Record, SessionRequest};
use crate::app::AppState;
use crate::error::ApiError;
use crate::ids::{AgentId, DeveloperId, InstanceId, KeyId, SessionId, TaskId};
use crate::metrics::metrics;
use crate::registry::instances::{GetInstance, InstanceLookup};
use crate::registry::metering::HoldSession;
use crate::registry::sessions::CreateSession;
use crate::store::agents::AgentRow;
use crate::store::sessions::{SessionRow, SessionStatus};
use crate::telephony::token::RelayClaims;
use crate::telephony::twiml;
use crate::time;
use crate::transports::socket::{CloseCode, Messages, SocketWriter};
use crate::transports::twilio::{await_start, close, TwilioWire, MAX_MESSAGE_BEFORE_START};

/// A call with `agent` has been placed and its media stream will open shortly: start loading
/// the agent's embedded voice, if it speaks with one, so the greeting does not wait for it.
pub fn warm_agent_voice(state: &AppState, agent: &AgentRow) {
    if agent.tts_provider == crate::vendors::catalog::DEFAULT_PROVIDER {
        state
            .engines()
            .warm_voice(&agent.voice_id, agent.forced_language());
    }
}

/// The instance a call runs with: `instance_id` when given (400 if it is not the agent's),
/// else the agent's instance whose phone number is `phone`, if any.
pub async fn resolve_instance(
    state: &AppState,
    developer_id: &DeveloperId,
    agent_id: &AgentId,
    instance_id: Option<&InstanceId>,
    phone: &str,
) -> Result<Option<InstanceId>, ApiError> {
    let lookup = match instance_id {
        Some(id) => InstanceLookup::Id(id.clone()),
        None => InstanceLookup::Phone(phone.to_string()),
    };
    let found = state
        .agents()
        .send(GetInstance {
            developer_id: developer_id.clone(),
            agent_id: agent_id.clone(),
            lookup,
        })
        .await?;
    match (instance_id, found) {
        (_, Ok(instance)) => Ok(Some(instance.id)),
        (Some(_), Err(ApiError::NotFound(message))) => {
            Err(ApiError::invalid("instanceId", message))
        }
        (Some(_), Err(other)) => Err(other),
        (None, Err(_)) => Ok(None),
    }
}

/// Who a phone session is for.
#[derive(Debug, Clone)]
pub struct StreamFor {
    pub developer_id: DeveloperId,
    pub agent_id: AgentId,
    pub from: Option<String>,
    pub to: Option<String>,
    pub instance_id: Option<InstanceId>,
    /// Known when Twilio asks for the markup itself (outbound connect, inbound webhook).
    pub call_sid: Option<String>,
    /// The API key asking for the session, when one does (`POST /v1/sessions/twilio`): its
    /// revocation also revokes the relay token.
    pub key_id: Option<KeyId>,
    /// The session of the same call this one carries on, and what the agent says first
    /// in place of its greeting (see [`RelayClaims::prev`]).
    pub resumes: Option<SessionId>,
    pub opening: Option<String>,
    /// The outbound call task the call was placed as (see [`RelayClaims::task`]).
    pub task_id: Option<TaskId>,
}

/// A pending phone session and the markup that connects a call to it.
pub struct IssuedStream {
    pub session_id: SessionId,
    pub twiml: String,
    pub stream_url: String,
    /// The relay token the stream presents.
    pub token: String,
    pub expires_at: i64,
}

/// How long a call's concurrent-session slot is held for its media stream, which Twilio opens
/// within a second or two of reading the markup. A stream later than this is checked against
/// the limit again when it connects.
const STREAM_HOLD: Duration = Duration::from_secs(60);

/// Records a pending phone session and signs the relay token its stream must present: the
/// markup every way into a phone call answers (the API, outbound connect, inbound webhook).
pub async fn issue_stream(
    state: &AppState,
    req: &HttpRequest,
    target: StreamFor,
) -> Result<IssuedStream, ApiError> {
    issue_stream_as(state, req, target, SessionId::new()).await
}

/// [`issue_stream`] for a session id chosen beforehand (an outbound task claims its one
/// session before the session exists).
pub async fn issue_stream_as(
    state: &AppState,
    req: &HttpRequest,
    target: StreamFor,
    session_id: SessionId,
) -> Result<IssuedStream, ApiError> {
    issue_stream_at(state, &state.public_base(req), target, session_id).await
}

/// [`issue_stream_as`] with the public base URL the stream is reached at.
pub async fn issue_stream_at(
    state: &AppState,
    base: &str,
    target: StreamFor,
    session_id: SessionId,
) -> Result<IssuedStream, ApiError> {
    let now = time::now_ms();
    let ttl = state.config().telephony.token_ttl_seconds;
    let expires = now + ttl as i64 * 1000;
    // The call's place among the tier's concurrent sessions is taken before it is connected:
    // over the limit, the caller is told the lines are busy (`busy_markup`).
    let held = state
        .metering()
        .send(HoldSession {
            session_id: session_id.clone(),
            developer_id: target.developer_id.clone(),
            for_: STREAM_HOLD.min(Duration::from_secs(ttl)),
            check_credits: false,
        })
        .await
        .map_err(ApiError::from)
        .flatten();
    if let Err(error) = held {
        if matches!(error, ApiError::SessionLimit(_)) {
            metrics()
                .sessions_rejected
                .with_label_values(&["twilio", "busy"])
                .inc();
        }
        return Err(error);
    }
    let created = state
        .sessions()
        .send(CreateSession(SessionRow {
            call_sid: target.call_sid,
            from_number: target.from.clone(),
            to_number: target.to.clone(),
            instance_id: target.instance_id.clone(),
            ..SessionRow::new(
                &session_id,
                &target.developer_id,
                &target.agent_id,
                "twilio",
                SessionStatus::Pending,
                now,
            )
        }))
        .await
        .map_err(ApiError::from)
        .flatten();
    if let Err(error) = created {
        release_unstarted(state, &session_id);
        return Err(error);
    }
    let token = state.signer().sign(&RelayClaims {
        sid: session_id.clone(),
        dev: target.developer_id,
        agent: target.agent_id,
        from: target.from,
        to: target.to,
        inst: target.instance_id,
        key: target.key_id,
        prev: target.resumes,
        say: target.opening,
        task: target.task_id,
        exp: expires,
    });
    let stream_url = twiml::stream_url(base);
    Ok(IssuedStream {
        twiml: twiml::connect_stream(&stream_url, &token),
        session_id,
        stream_url,
        token,
        expires_at: expires,
    })
}

/// The markup for a call that cannot be taken because the developer's concurrent sessions
/// are all in use: the configured busy message, then a hang-up. The call is never connected.
pub fn busy_markup(state: &AppState) -> String {
    twiml::say_and_hang_up(&state.config().telephony.busy_message)
}

/// Runs one Twilio media stream to its end: its `start` read, the relay token in it checked,
/// the call let in ([`admit`]) and its session run on the stream. A stream that is refused
/// is closed with a code that says why: 1008 for a missing, forged, expired, reused or
/// revoked token, 1001 while the node drains, 1011 when the agent cannot run.
pub async fn phone_stream(
    state: web::Data<AppState>,
    public_base: String,
    socket: SocketWriter,
    mut messages: Messages,
) {
    let max_message = messages.max_message();
    messages.set_max_message(MAX_MESSAGE_BEFORE_START.min(max_message));
    let Some(start) = await_start(&socket, &mut messages).await else {
        return;
    };
    let claims = match state.signer().verify(&start.token, time::now_ms()) {
        Ok(claims) => claims,
        Err(e) => {
            tracing::warn!("media stream refused: {e}");
            close(socket, CloseCode::Policy, "invalid relay token").await;
            return;
        }
    };
    // A caller the token vouches for: its messages may be as large as the socket's.
    messages.set_max_message(max_message);
    let request = SessionRequest {
        public_base: Some(public_base),
        ..SessionRequest::phone_call(claims, start.call_sid.clone())
    };
    let session_id = request.session_id.clone();
    let wire = TwilioWire::new(&start.stream_sid);
    let started = match admit(&state, request, Record::Pending, &wire).await {
        Ok(admitted) => admitted.run(wire, socket.clone(), messages),
        Err(error) => Err(error),
    };
    let Err(error) = started else { return };
    let (code, description) = match &error {
        ApiError::Draining(_) => (CloseCode::Away, "the server is shutting down"),
        ApiError::Conflict(_) => (CloseCode::Policy, "relay token already used"),
        ApiError::Unauthorized(_) => (CloseCode::Policy, "relay token revoked"),
        ApiError::Internal(_) => (CloseCode::Error, "the session could not start"),
        _ => (CloseCode::Error, "the agent is not available"),
    };
    if code == CloseCode::Error {
        tracing::error!(session = %session_id, "cannot start the call: {error}");
    } else {
        tracing::warn!(session = %session_id, "media stream refused: {error}");
    }
    close(socket, code, description).await;
}
