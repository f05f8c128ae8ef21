//! The direct agent WebSocket, `GET /v1/agents/{id}/session`, for browsers and server-side
//! clients, and `POST /v1/agents/{id}/session-token`, which mints the short-lived token a
//! browser presents instead of an API key (`?token=`).
//!
//! Wire format: JSON text frames for control and events, binary frames for audio, both ways,
//! at `?sampleRate=` 8000, 16000 (default), 24000 or 48000 Hz: PCM16 little-endian mono
//! (`?encoding=pcm16`, the default) or one 20 ms Opus packet per message (`?encoding=opus`).
//! Client messages: binary audio; `{"type": "text", "text": ...}`; `{"type": "interrupt"}`;
//! `{"type": "mark", "name": ...}` (with `?acks=marks`: the audio before that mark has
//! played); `{"type": "end"}`. Server events: `{"type": "<event name>", ...}` for
//! session.started, transcript.partial/final, agent.text.delta, agent.audio.start/end,
//! audio.clear, audio.mark, tool.call, tool.result, turn.metrics, error, session.ended.
//! Those JSON messages are decoded and written in `wire`; this module admits the socket and
//! moves its messages to and from the session.

use std::sync::Arc;

use actix_web::{post, web, HttpRequest, HttpResponse};
use bytes::Bytes;
use bytestring::ByteString;
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_actors::audio::SampleRate;
use switchboard_actors::session::{
    AudioFormat, CallSession, CallerInput, ClearLane, OutputQueue, PlaybackAcks, SessionConfig,
    SessionEvent, SessionOutput, SessionOutputs, TransportClosed,
};
use utoipa::ToSchema;

mod wire;

use wire::event_json;
pub use wire::{parse_client_message, ClientMessage, ClientMessageError};

use super::auth::{bearer_credentials, Developer};
use crate::app::AppState;
use crate::caller_side::{CallerProtocol, CallerSide, Duties, Read, SocketDuty};
use crate::cluster::drain::SessionSlot;
use crate::error::{ApiError, ErrorBody};
use crate::live::{self, abandon_unstarted, release_unstarted};
use crate::realtime_socket::{self, CloseCode, CloseReason, SocketWriter};
use crate::recording::{RecordingTap, TapFormat};
use crate::registry::agents::GetAgent;
use crate::registry::keys::{hash_key, CheckKey, KeyCheck};
use crate::registry::metering::{Admit, OpenSession, SessionMetering};
use crate::registry::new_id;
use crate::registry::sessions::{ClaimTokenSession, CreateSession};
use crate::store::sessions::{SessionRow, STATUS_ACTIVE};
use crate::telephony::stream::SessionRequest;
use crate::telephony::token::RelayClaims;
use crate::time::{self, iso};

/// Longest a browser session token lives.
pub const SESSION_TOKEN_TTL_MS: i64 = 10 * 60 * 1000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(session_token);
    super::other_methods(cfg, &["/agents/{id}/session-token"]);
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTokenBody {
    /// Present as `?token=` on `GET /v1/agents/{id}/session`; valid for one session of this
    /// agent.
    pub token: String,
    pub expires_at: String,
    /// The WebSocket URL to open, token included.
    pub url: String,
}

/// Mints a 10-minute token for one direct session with the agent (for browsers, which must
/// never see an API key).
#[utoipa::path(post, path = "/v1/agents/{id}/session-token", tag = "sessions",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = SessionTokenBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
#[post("/agents/{id}/session-token")]
async fn session_token(
    state: web::Data<AppState>,
    req: HttpRequest,
    developer: Developer,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer.id().to_string(),
            agent_id: id.into_inner(),
        })
        .await??;
    // A browser opens the socket right after it has the token.
    live::warm_agent_voice(&state, &agent);
    let expires = time::now_ms() + SESSION_TOKEN_TTL_MS;
    let token = state.signer().sign(&RelayClaims {
        sid: new_id("ses"),
        dev: developer.id().to_string(),
        agent: agent.id.clone(),
        from: None,
        to: None,
        inst: None,
        key: Some(developer.0.key_id.clone()),
        exp: expires,
    });
    let base = state.public_base(&req);
    let ws_base = base
        .replacen("https://", "wss://", 1)
        .replacen("http://", "ws://", 1);
    Ok(HttpResponse::Ok().json(SessionTokenBody {
        url: format!("{ws_base}/v1/agents/{}/session?token={token}", agent.id),
        token,
        expires_at: iso(expires),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectQuery {
    token: Option<String>,
    /// Read as text, so that a rate that is not a number is refused naming the parameter.
    sample_rate: Option<String>,
    acks: Option<String>,
    encoding: Option<String>,
}

/// How the client wants the socket's audio: its rate, its encoding, its playback acks.
#[derive(Debug, Clone, Copy)]
struct SocketAudio {
    rate: SampleRate,
    /// One Opus packet of 20 ms per binary message, both ways; else PCM16 little-endian.
    opus: bool,
    acks: PlaybackAcks,
}

impl SocketAudio {
    /// Reads `sampleRate`, `encoding` and `acks`, each with its documented default.
    fn from_query(query: &DirectQuery) -> Result<Self, ApiError> {
        let rate = match query.sample_rate.as_deref().unwrap_or("16000") {
            "8000" => SampleRate::Hz8000,
            "16000" => SampleRate::Hz16000,
            "24000" => SampleRate::Hz24000,
            "48000" => SampleRate::Hz48000,
            other => {
                return Err(ApiError::invalid(
                    "sampleRate",
                    format!("sampleRate '{other}' is not one of 8000, 16000, 24000, 48000"),
                ))
            }
        };
        let opus = match query.encoding.as_deref().unwrap_or("pcm16") {
            "pcm16" => false,
            "opus" => true,
            other => {
                return Err(ApiError::invalid(
                    "encoding",
                    format!("encoding '{other}' is not one of: pcm16, opus"),
                ))
            }
        };
        let acks = match query.acks.as_deref().unwrap_or("clock") {
            "clock" => PlaybackAcks::Clock,
            "marks" => PlaybackAcks::Marks,
            other => {
                return Err(ApiError::invalid(
                    "acks",
                    format!("acks '{other}' is not one of: clock, marks"),
                ))
            }
        };
        Ok(SocketAudio { rate, opus, acks })
    }

    fn format(self) -> AudioFormat {
        if self.opus {
            AudioFormat::Opus { rate: self.rate }
        } else {
            AudioFormat::Pcm16 { rate: self.rate }
        }
    }

    fn tap(self) -> TapFormat {
        if self.opus {
            TapFormat::Opus(self.rate)
        } else {
            TapFormat::Pcm16(self.rate.hz())
        }
    }
}

/// `GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
/// session token in `?token=`.
#[utoipa::path(get, path = "/v1/agents/{id}/session", tag = "sessions",
    description = "Opens a real-time session with the agent as a WebSocket (101 Switching \
Protocols). Text frames carry JSON control messages and events; binary frames carry audio both \
ways: PCM16 little-endian mono (`encoding=pcm16`) or one 20 ms Opus packet per frame \
(`encoding=opus`), at `sampleRate`. The message and event types are listed in docs/realtime.md.",
    params(
        ("id" = String, Path, description = "Agent id"),
        ("token" = Option<String>, Query, description = "A session token from POST /v1/agents/{id}/session-token, instead of an API key"),
        ("sampleRate" = Option<u32>, Query, description = "8000, 16000 (default), 24000 or 48000"),
        ("encoding" = Option<String>, Query, description = "pcm16 (default) or opus (one 20 ms packet per binary frame, both ways)"),
        ("acks" = Option<String>, Query, description = "clock (default) or marks (the client answers each audio.mark when the audio before it has played)")),
    responses((status = 101, description = "Switched to the WebSocket protocol"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 402, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = []), ()))]
pub async fn direct_session(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    query: web::Query<DirectQuery>,
) -> Result<HttpResponse, ApiError> {
    // A stopping node takes no new session (a load balancer retries it on another node).
    state.drain().refuse_if_draining()?;
    let agent_id = path.into_inner();
    let query = query.into_inner();
    let audio = SocketAudio::from_query(&query)?;
    // Not a WebSocket handshake: refused before a session token is spent or a session made.
    actix_http::ws::verify_handshake(req.head())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let (developer_id, rate_key, token_session) =
        authenticate(&state, &req, query.token.as_deref(), &agent_id).await?;
    // A socket counts once against the rate limit, at connect.
    let admission = state
        .metering()
        .send(Admit {
            developer_id: developer_id.clone(),
            key_id: rate_key,
        })
        .await??;
    if !admission.rate.allowed {
        return Err(ApiError::RateLimited {
            message: format!(
                "too many requests; retry in {} s",
                admission.rate.retry_after_seconds
            ),
            limit: admission.rate.limit,
            retry_after_seconds: admission.rate.retry_after_seconds,
        });
    }
    let agent = state
        .agents()
        .send(GetAgent {
            developer_id: developer_id.clone(),
            agent_id: agent_id.clone(),
        })
        .await??;
    // A session token is good for one session: the one it names, claimed here once.
    let session_id = match token_session {
        Some((session_id, expires_at)) => {
            let claimed = state
                .sessions()
                .send(ClaimTokenSession {
                    session_id: session_id.clone(),
                    expires_at,
                })
                .await??;
            if !claimed {
                return Err(ApiError::Unauthorized(
                    "session token refused: it was already used; mint a new one".into(),
                ));
            }
            session_id
        }
        None => new_id("ses"),
    };
    // The session's place among this node's live ones (refused once the node drains).
    let slot = state.drain().admit(&session_id)?;
    // Refused here, before the socket opens, when the tier's concurrent sessions are all in
    // use or the credits are spent; the slot is freed when the session ends.
    state
        .metering()
        .send(OpenSession {
            session_id: session_id.clone(),
            developer_id: developer_id.clone(),
            metered: SessionMetering::ALL,
        })
        .await??;
    let admitted = Admitted {
        session_id: session_id.clone(),
        developer_id: developer_id.clone(),
        slot,
    };
    let started = start_direct(&state, &req, &agent, admitted, audio).await;
    if let Err(error) = &started {
        // Nothing of the session may outlive it. A conflict on the record: another node
        // opened this token's session first; that record is not this socket's to end.
        if matches!(error, ApiError::Conflict(_)) {
            release_unstarted(&state, &session_id);
            return Err(ApiError::Unauthorized(
                "session token refused: it was already used; mint a new one".into(),
            ));
        }
        abandon_unstarted(&state, &session_id, &error.to_string());
    }
    started
}

/// A session let in: its id, its developer, and its place among the node's live sessions.
struct Admitted {
    session_id: String,
    developer_id: String,
    slot: SessionSlot,
}

/// Records the session, builds its engines and starts it on the upgraded socket.
async fn start_direct(
    state: &web::Data<AppState>,
    req: &HttpRequest,
    agent: &crate::store::agents::AgentRow,
    admitted: Admitted,
    audio: SocketAudio,
) -> Result<HttpResponse, ApiError> {
    let Admitted {
        session_id,
        developer_id,
        slot,
    } = admitted;
    let now = time::now_ms();
    state
        .sessions()
        .send(CreateSession(SessionRow::new(
            &session_id,
            &developer_id,
            &agent.id,
            "direct",
            STATUS_ACTIVE,
            now,
        )))
        .await??;
    let factory = live::app_session_factory(state.clone());
    // Its key or token was checked as the socket was let in.
    let request = SessionRequest {
        session_id: session_id.clone(),
        developer_id,
        agent_id: agent.id.clone(),
        ..SessionRequest::default()
    };
    let (profile, engines, observer) = factory
        .build(request.clone(), "direct")
        .await
        .map_err(ApiError::Unavailable)?;
    let tap = factory.recording(&request, audio.tap()).await;
    let mut config = SessionConfig::direct(session_id.clone(), profile, audio.rate);
    config.input = audio.format();
    config.output = audio.format();
    config.pacing.acks = audio.acks;
    let (response, socket, messages) =
        realtime_socket::accept(req, realtime_socket::SocketLimits::of(req))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let (output, rx) = OutputQueue::with_clear_lane(Arc::new(ClearNow(socket.clone())));
    let tap = tap.map(Arc::new);
    let (caller, duties) = CallerSide::new(messages, DirectCaller, tap.clone());
    let handle = CallSession::start_reading(config, engines, output, observer, caller)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    slot.attach(handle.addr());
    actix_web::rt::spawn(pump(handle, socket, duties, rx, tap, slot, audio));
    Ok(response)
}

/// The API key in the Authorization header, or a session token for this agent.
/// Who opens the socket: (developer, rate-limit key, and for a session token the session it
/// names with the token's expiry).
async fn authenticate(
    state: &AppState,
    req: &HttpRequest,
    token: Option<&str>,
    agent_id: &str,
) -> Result<(String, String, Option<(String, i64)>), ApiError> {
    if let Some(token) = token {
        let claims = state
            .signer()
            .verify(token, time::now_ms())
            .map_err(|e| ApiError::Unauthorized(format!("session token refused: {e}")))?;
        if claims.agent != agent_id {
            return Err(ApiError::Unauthorized(
                "this session token is for another agent".into(),
            ));
        }
        live::token_issuer_in_force(state, &claims.dev, claims.key.as_deref())
            .await
            .map_err(|reason| ApiError::Unauthorized(format!("session token refused: {reason}")))?;
        let rate_key = format!("session-token:{}", claims.dev);
        return Ok((claims.dev, rate_key, Some((claims.sid, claims.exp))));
    }
    let raw = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(bearer_credentials)
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "send `Authorization: Bearer <API key>` or `?token=<session token>`".into(),
            )
        })?;
    match state
        .keys()
        .send(CheckKey {
            hash: hash_key(raw),
        })
        .await??
    {
        KeyCheck::Valid(principal) => Ok((principal.developer_id, principal.key_id, None)),
        _ => Err(ApiError::Unauthorized("invalid API key".into())),
    }
}

/// Writes a barge-in's `audio.clear` event from the session's own turn (see [`ClearLane`]), so
/// the client stops the agent's audio the moment the session decides.
struct ClearNow(SocketWriter);

impl ClearLane for ClearNow {
    fn clear_now(&self, response_id: u64) -> bool {
        let event = SessionEvent::AudioClear { response_id };
        self.0.try_text(event_json(&event).to_string())
    }
}

/// The direct socket's messages as the session reads them: binary audio, and the client's
/// JSON messages; one it got wrong is answered with an `error` event.
struct DirectCaller;

impl CallerProtocol for DirectCaller {
    fn text(&mut self, text: &ByteString) -> Read {
        match parse_client_message(text) {
            Ok(ClientMessage::Text(text)) => Read::Input(CallerInput::Text(text)),
            Ok(ClientMessage::Interrupt) => Read::Input(CallerInput::Interrupt),
            Ok(ClientMessage::Mark(name)) => Read::Input(CallerInput::Mark(name)),
            Ok(ClientMessage::End) => Read::Input(CallerInput::Hangup),
            Err(e) => Read::Reply(
                json!({"type": "error", "code": e.code(), "message": e.to_string()}).to_string(),
            ),
        }
    }

    fn binary(&mut self, audio: Bytes) -> Read {
        Read::Input(CallerInput::Audio(audio))
    }
}

/// Writes the session's outputs, and what its reading of the socket leaves to write, until
/// either ends.
async fn pump(
    handle: switchboard_actors::session::SessionHandle,
    socket: SocketWriter,
    mut duties: Duties,
    mut outputs: SessionOutputs,
    tap: Option<Arc<RecordingTap>>,
    slot: SessionSlot,
    audio: SocketAudio,
) {
    let session = handle.addr().clone();
    let mut writer = socket.clone();
    loop {
        tokio::select! {
            // What the caller's side owes goes first: a client's close is answered with its
            // own code before the session's last outputs, which end the loop.
            biased;
            duty = duties.next() => {
                let sent = match duty {
                    SocketDuty::Pong(bytes) => writer.pong(&bytes).await,
                    SocketDuty::Reply(text) => writer.text(text).await,
                    SocketDuty::Ended(ending) => {
                        // The session heard the end from its reader.
                        realtime_socket::close_after(writer.clone(), &ending, "direct socket").await;
                        outputs.until_ended().await;
                        return;
                    }
                };
                if sent.is_err() {
                    session.do_send(TransportClosed);
                    break;
                }
            }
            output = outputs.recv() => {
                let sent = match output {
                    None | Some(SessionOutput::Ended) => break,
                    Some(SessionOutput::Audio(audio)) => {
                        if let Some(tap) = &tap {
                            tap.agent(&audio);
                        }
                        writer.binary(audio).await
                    }
                    // A client on the clock answers no marks, and is sent none.
                    Some(SessionOutput::Mark(_)) if audio.acks == PlaybackAcks::Clock => Ok(()),
                    Some(SessionOutput::Mark(name)) => writer.text(json!({"type": "audio.mark", "name": name}).to_string()).await,
                    // The client is told by the `audio.clear` event (written by the lane, or
                    // queued after this).
                    Some(SessionOutput::Clear { written_at }) => {
                        if let Some(tap) = &tap {
                            tap.clear(written_at.map(|at| at.into_std()));
                        }
                        // What of the lane's clear the connection did not take at once.
                        writer.flush().await
                    }
                    Some(SessionOutput::Event(event)) => writer.text(event_json(&event).to_string()).await,
                };
                if sent.is_err() {
                    session.do_send(TransportClosed);
                    break;
                }
            }
        }
    }
    drop(handle);
    drop(tap);
    let reason = if slot.ended_by_server() {
        CloseReason {
            code: CloseCode::Away,
            description: Some("the server is shutting down".into()),
        }
    } else {
        CloseReason {
            code: CloseCode::Normal,
            description: Some("the session ended".into()),
        }
    };
    socket.close(Some(reason)).await;
    drop(slot);
}
