//! The Twilio Media Streams transport (protocols.md §1): reads `connected` and `start` from
//! the socket, checks the relay token in `start`, and starts a `CallSession` that reads the
//! rest of the caller's side itself (`media`, `mark`, `dtmf`, `stop`, through
//! [`TwilioCaller`] and [`CallerSide`]). The socket loop writes the session's audio, marks
//! and clears back as Twilio `media`, `mark` and `clear` messages, in order, and the pongs
//! and closing handshake the caller's side owes; a barge-in's `clear` is written by the
//! session itself ([`ClearNow`]).
//!
//! Tolerant by design: numbers may arrive as strings, unknown events are ignored, malformed
//! JSON or base64 is logged and skipped. A forged, expired or reused token closes the stream
//! before any audio is sent.

use crate::registry::Supervised;
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use futures_util::StreamExt;
use serde_json::{json, Value};
use switchboard_actors::session::{
    AgentProfile, CallSession, CallerInput, ClearLane, OutputQueue, SessionConfig, SessionEngines,
    SessionHandle, SessionObserver, SessionOutput, TransportClosed,
};

use super::token::{RelayClaims, TokenSigner};
use crate::caller_side::{CallerProtocol, CallerSide, Read, SocketDuty};
use crate::cluster::drain::Drain;
use crate::error::ApiError;
use crate::realtime_socket::{self, ClientMessage, CloseCode, CloseReason, Messages, SocketWriter};
use crate::recording::{RecordingTap, TapFormat};
use crate::registry::sessions::{ClaimSession, SessionRegistry};
use crate::time::now_ms;

/// How long a new stream may take to send `start`.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Largest message a stream may send before `start`: Twilio's `connected` and `start` are
/// well under 2 KB (a relay token in `customParameters` included), and anyone can open the
/// socket, so until a token is checked it holds no more than this.
pub const MAX_MESSAGE_BEFORE_START: usize = 4 * 1024;

/// What a session is started with: the agent's profile, its engines and the observer that
/// records it, or why not.
pub type SessionParts = Result<(AgentProfile, SessionEngines, Arc<dyn SessionObserver>), String>;

/// Who a live session is for, whatever carried it: the session, its developer and agent, the
/// instance, numbers and call of a phone call, and the API key that vouched for it (whose
/// revocation ends what it handed out).
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    pub session_id: String,
    pub developer_id: String,
    pub agent_id: String,
    pub instance_id: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub call_sid: Option<String>,
    pub issuer_key: Option<String>,
}

impl SessionRequest {
    /// The phone call a relay token vouches for, on call `call_sid`.
    pub fn phone_call(claims: RelayClaims, call_sid: Option<String>) -> Self {
        Self {
            session_id: claims.sid,
            developer_id: claims.dev,
            agent_id: claims.agent,
            instance_id: claims.inst,
            from: claims.from,
            to: claims.to,
            call_sid,
            issuer_key: claims.key,
        }
    }
}

/// Builds what a session needs for its request (the agent's profile and engines, and its
/// recorder); `transport` names the transport for the records and the metrics.
pub trait SessionFactory: Send + Sync + 'static {
    fn build(
        &self,
        request: SessionRequest,
        transport: &'static str,
    ) -> Pin<Box<dyn Future<Output = SessionParts> + Send>>;

    /// Whether the API key that vouched for the session (`request.issuer_key`) still does: a
    /// revoked or expired key takes the tokens it handed out with it. `Err` says why not.
    fn issuer_in_force(
        &self,
        _request: &SessionRequest,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        Box::pin(async { Ok(()) })
    }

    /// Session `session_id`, whose token was spent, could not start (`reason`): frees what
    /// [`build`](Self::build) took and ends its record as failed.
    fn abandon(&self, session_id: &str, reason: &str);

    /// Starts recording the session when it should be recorded (by configuration and the
    /// agent's choice); `format` is the transport's audio encoding.
    fn recording(
        &self,
        _request: &SessionRequest,
        _format: TapFormat,
    ) -> Pin<Box<dyn Future<Output = Option<RecordingTap>> + Send>> {
        Box::pin(async { None })
    }
}

/// What the transport needs from the server.
#[derive(Clone)]
pub struct StreamContext {
    pub signer: TokenSigner,
    pub sessions: Supervised<SessionRegistry>,
    pub factory: Arc<dyn SessionFactory>,
    /// The node's live sessions (a stream is refused once the node drains).
    pub drain: Arc<Drain>,
}

/// Writes our outbound `media` messages (protocols.md §1.3), the one message sent 50 times a
/// second while the agent talks: the same JSON as a `json!` tree, without building the tree,
/// each message split off one buffer so that a run of them shares an allocation.
struct MediaWriter {
    /// `{"event":"media","streamSid":<sid>,"media":{"payload":"`, the sid JSON-escaped.
    prefix: String,
    buffer: BytesMut,
}

impl MediaWriter {
    const SUFFIX: &'static str = "\"}}";

    fn new(stream_sid: &str) -> Self {
        let sid = Value::String(stream_sid.to_string());
        Self {
            prefix: format!(r#"{{"event":"media","streamSid":{sid},"media":{{"payload":""#),
            buffer: BytesMut::new(),
        }
    }

    /// Messages' worth of room the buffer takes at a time.
    const BATCH: usize = 16;

    fn message(&mut self, audio: &[u8]) -> ByteString {
        let payload_at = self.prefix.len();
        let suffix_at = payload_at + audio.len().div_ceil(3) * 4;
        let len = suffix_at + Self::SUFFIX.len();
        if self.buffer.capacity() < len {
            self.buffer.reserve(len * Self::BATCH);
        }
        self.buffer.resize(len, 0);
        self.buffer[..payload_at].copy_from_slice(self.prefix.as_bytes());
        let written = BASE64
            .encode_slice(audio, &mut self.buffer[payload_at..suffix_at])
            .unwrap_or(0);
        debug_assert_eq!(written, suffix_at - payload_at);
        self.buffer[suffix_at..].copy_from_slice(Self::SUFFIX.as_bytes());
        let message = self.buffer.split().freeze();
        // The prefix is a string and the rest is ASCII, so this holds; a message that did not
        // would be sent as what it is, never as invalid UTF-8.
        ByteString::try_from(message.clone())
            .unwrap_or_else(|_| String::from_utf8_lossy(&message).into_owned().into())
    }
}

/// Our `clear` message for stream `stream_sid` (protocols.md §1.3).
fn clear_message(stream_sid: &str) -> ByteString {
    json!({"event": "clear", "streamSid": stream_sid})
        .to_string()
        .into()
}

/// Writes a barge-in's `clear` from the session's own turn (see [`ClearLane`]): Twilio drops
/// the agent audio it holds the moment the session decides, not once the socket loop has
/// read the outputs queued before it.
struct ClearNow {
    socket: SocketWriter,
    message: ByteString,
}

impl ClearLane for ClearNow {
    fn clear_now(&self, _response_id: u64) -> bool {
        self.socket.try_text(self.message.clone())
    }
}

/// Twilio's messages as the session reads them: caller audio (decoded into one buffer per
/// stream, each frame split off it), marks, digits and `stop`; anything malformed is logged
/// and skipped.
struct TwilioCaller {
    audio: BytesMut,
    session_id: String,
}

impl CallerProtocol for TwilioCaller {
    fn text(&mut self, text: &ByteString) -> Read {
        match parse_event_into(text, &mut self.audio) {
            Ok(StreamEvent::Media(audio)) => Read::Input(CallerInput::Audio(audio)),
            Ok(StreamEvent::Mark(name)) => Read::Input(CallerInput::Mark(name)),
            Ok(StreamEvent::Dtmf(digit)) => Read::Input(CallerInput::Dtmf(digit)),
            Ok(StreamEvent::Stop) => Read::Input(CallerInput::Hangup),
            Ok(StreamEvent::Start(_) | StreamEvent::Ignored) => Read::Nothing,
            Err(MessageError::Json) => {
                tracing::warn!(session = %self.session_id, "media stream: skipped a malformed message");
                Read::Nothing
            }
            Err(MessageError::Base64) => {
                tracing::warn!(session = %self.session_id, "media stream: skipped bad base64");
                Read::Nothing
            }
        }
    }

    fn binary(&mut self, _: Bytes) -> Read {
        Read::Nothing
    }
}

/// A field that Twilio may send as a number or a string.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What a stream's `start` message carries for the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStart {
    /// Empty when Twilio sent none (at the top level or inside `start`).
    pub stream_sid: String,
    pub call_sid: Option<String>,
    /// `customParameters.token`; empty when absent, and then refused as malformed.
    pub token: String,
}

/// One text message from Twilio, as the transport acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    Start(StreamStart),
    /// The caller's audio (μ-law bytes, decoded from base64).
    Media(Bytes),
    Mark(String),
    Dtmf(char),
    Stop,
    /// `connected`, unknown events, another track's audio, or an event missing what it needs.
    Ignored,
}

/// Why a text message was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("the message is not JSON")]
    Json,
    #[error("the media payload is not base64")]
    Base64,
}

/// The fields of a `media` message, borrowed from the text: fifty of these arrive a second
/// per call, so they are read without building a JSON tree.
#[derive(serde::Deserialize)]
struct MediaMessage<'a> {
    #[serde(borrow)]
    event: Cow<'a, str>,
    #[serde(borrow)]
    media: MediaBody<'a>,
}

#[derive(serde::Deserialize)]
struct MediaBody<'a> {
    // `&str`, not `Option<Cow<str>>`: serde borrows a `Cow` only when it is the field's whole
    // type, so an optional one was copied into a new `String` for every frame. A string with
    // escapes cannot be borrowed; it fails here and the message is read through the tree.
    #[serde(default, borrow)]
    track: Option<&'a str>,
    #[serde(default, borrow)]
    payload: Option<&'a str>,
}

/// Decodes one text message of the stream (protocols.md §1.2). Never panics on any input:
/// this is what the socket loop runs on every message Twilio (or anyone) sends.
pub fn parse_event(text: &str) -> Result<StreamEvent, MessageError> {
    parse_event_into(text, &mut BytesMut::new())
}

/// Room for caller audio taken at a time: a dozen 20 ms μ-law frames.
const MEDIA_BUFFER_BYTES: usize = 2 * 1024;

/// As [`parse_event`], decoding a `media` payload into `audio`'s spare room. The socket loop
/// keeps one such buffer per stream and the frames are split off it, so a call allocates once
/// per dozen frames instead of once per frame, and the recording tap's copy of a frame is a
/// reference, not an allocation.
///
/// The common case, a well-formed `media` message, is read straight into its fields.
/// Anything else (other events, odd types, repeated keys) is read as a JSON tree, which gives
/// the same answer for every message the direct read takes.
pub fn parse_event_into(text: &str, audio: &mut BytesMut) -> Result<StreamEvent, MessageError> {
    if let Ok(message) = serde_json::from_str::<MediaMessage>(text) {
        if message.event == "media" {
            if message.media.track.unwrap_or("inbound") != "inbound" {
                return Ok(StreamEvent::Ignored);
            }
            let payload = message.media.payload.unwrap_or("");
            return decode_media(payload, audio).map(StreamEvent::Media);
        }
    }
    parse_event_tree(text, audio)
}

/// Decodes base64 `payload` into `audio`'s spare room and splits it off.
fn decode_media(payload: &str, audio: &mut BytesMut) -> Result<Bytes, MessageError> {
    let room = base64::decoded_len_estimate(payload.len());
    audio.clear();
    if audio.capacity() < room {
        audio.reserve(room.max(MEDIA_BUFFER_BYTES));
    }
    audio.resize(room, 0);
    match BASE64.decode_slice(payload, &mut audio[..]) {
        Ok(written) => {
            audio.truncate(written);
            Ok(audio.split().freeze())
        }
        Err(_) => {
            audio.clear();
            Err(MessageError::Base64)
        }
    }
}

/// Decodes any message of the stream through a JSON tree.
fn parse_event_tree(text: &str, audio: &mut BytesMut) -> Result<StreamEvent, MessageError> {
    let event: Value = serde_json::from_str(text).map_err(|_| MessageError::Json)?;
    let parsed = match event["event"].as_str().unwrap_or("") {
        "start" => {
            let start = &event["start"];
            StreamEvent::Start(StreamStart {
                stream_sid: text_of(&event["streamSid"])
                    .or_else(|| text_of(&start["streamSid"]))
                    .unwrap_or_default(),
                call_sid: text_of(&start["callSid"]),
                token: start["customParameters"]["token"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            })
        }
        "media" => {
            // Only the caller's track is ours to hear.
            let track = event["media"]["track"].as_str().unwrap_or("inbound");
            if track != "inbound" {
                return Ok(StreamEvent::Ignored);
            }
            let payload = event["media"]["payload"].as_str().unwrap_or("");
            StreamEvent::Media(decode_media(payload, audio)?)
        }
        "mark" => match event["mark"]["name"].as_str() {
            Some(name) => StreamEvent::Mark(name.to_string()),
            None => StreamEvent::Ignored,
        },
        "dtmf" => match text_of(&event["dtmf"]["digit"]).and_then(|d| d.chars().next()) {
            Some(digit) => StreamEvent::Dtmf(digit),
            None => StreamEvent::Ignored,
        },
        "stop" => StreamEvent::Stop,
        _ => StreamEvent::Ignored,
    };
    Ok(parsed)
}

/// Runs one media stream to its end.
pub async fn run(context: StreamContext, socket: SocketWriter, mut messages: Messages) {
    let mut writer_socket = socket.clone();
    let deadline = tokio::time::sleep(START_TIMEOUT);
    tokio::pin!(deadline);
    let max_message = messages.max_message();
    messages.set_max_message(MAX_MESSAGE_BEFORE_START.min(max_message));

    // Until `start`: only `connected` is expected.
    let start = loop {
        tokio::select! {
            _ = &mut deadline => {
                close(socket, CloseCode::Policy, "no start message").await;
                return;
            }
            message = messages.next() => {
                let message = match message {
                    Some(Ok(ClientMessage::Close(_))) | Some(Err(_)) | None => {
                        realtime_socket::close_after(socket, &message, "media stream").await;
                        return;
                    }
                    Some(Ok(message)) => message,
                };
                match message {
                    ClientMessage::Text(text) => match parse_event(&text) {
                        Ok(StreamEvent::Start(start)) => break start,
                        Err(MessageError::Json) => {
                            tracing::warn!("media stream: skipped a malformed message");
                        }
                        _ => {}
                    },
                    // A client that does not take the answer is gone.
                    ClientMessage::Ping(bytes) if socket.clone().pong(&bytes).await.is_err() => return,
                    _ => {}
                }
            }
        }
    };

    let StreamStart {
        stream_sid,
        call_sid,
        token,
    } = start;
    let claims = match context.signer.verify(&token, now_ms()) {
        Ok(claims) => claims,
        Err(e) => {
            tracing::warn!("media stream refused: {e}");
            close(socket, CloseCode::Policy, "invalid relay token").await;
            return;
        }
    };
    // A caller the token vouches for: its messages may be as large as the socket's.
    messages.set_max_message(max_message);
    // Admitted before the token is spent: a stream refused by a draining node leaves its
    // session pending.
    let slot = match context.drain.admit(&claims.sid) {
        Ok(slot) => slot,
        Err(ApiError::Conflict(_)) => {
            tracing::warn!(session = %claims.sid, "media stream refused: the token's call is live");
            close(socket, CloseCode::Policy, "relay token already used").await;
            return;
        }
        Err(_) => {
            tracing::warn!(session = %claims.sid, "media stream refused: the server is shutting down");
            close(socket, CloseCode::Away, "the server is shutting down").await;
            return;
        }
    };
    let claimed = context
        .sessions
        .send(ClaimSession {
            session_id: claims.sid.clone(),
            call_sid: call_sid.clone(),
        })
        .await;
    if !matches!(claimed, Ok(Ok(Some(_)))) {
        tracing::warn!(session = %claims.sid, "media stream refused: the token was already used");
        close(socket, CloseCode::Policy, "relay token already used").await;
        return;
    }
    let session_id = claims.sid.clone();
    let request = SessionRequest::phone_call(claims, call_sid.clone());
    if let Err(reason) = context.factory.issuer_in_force(&request).await {
        tracing::warn!(session = %session_id, "media stream refused: {reason}");
        context.factory.abandon(&session_id, &reason);
        close(socket, CloseCode::Policy, "relay token revoked").await;
        return;
    }
    let (profile, engines, observer) = match context.factory.build(request.clone(), "twilio").await
    {
        Ok(built) => built,
        Err(reason) => {
            tracing::error!(session = %session_id, "cannot start the call: {reason}");
            context.factory.abandon(&session_id, &reason);
            close(socket, CloseCode::Error, "the agent is not available").await;
            return;
        }
    };
    // Started before the session, so the greeting is on it; dropped when the stream ends.
    let tap = context
        .factory
        .recording(&request, TapFormat::Mulaw8k)
        .await
        .map(Arc::new);
    let clear = clear_message(&stream_sid);
    let (output, mut out_rx) = OutputQueue::with_clear_lane(Arc::new(ClearNow {
        socket: socket.clone(),
        message: clear.clone(),
    }));
    let caller = TwilioCaller {
        audio: BytesMut::new(),
        session_id: session_id.clone(),
    };
    let (caller, mut duties) = CallerSide::new(messages, caller, tap.clone());
    // Held until the stream ends: the session lives as long as the call.
    let handle: SessionHandle = match CallSession::start_reading(
        SessionConfig::twilio(session_id.clone(), profile),
        engines,
        output,
        observer,
        caller,
    ) {
        Ok(started) => started,
        Err(e) => {
            tracing::error!(session = %session_id, "cannot start the call: {e}");
            context.factory.abandon(&session_id, &e.to_string());
            close(socket, CloseCode::Error, "the session could not start").await;
            return;
        }
    };
    let session = handle.addr().clone();
    slot.attach(&session);
    let mut media = MediaWriter::new(&stream_sid);

    loop {
        tokio::select! {
            // What the caller's side owes goes first: a client's close is answered with its
            // own code before the session's last outputs, which end the loop.
            biased;
            duty = duties.next() => match duty {
                SocketDuty::Pong(bytes) => {
                    if writer_socket.pong(&bytes).await.is_err() {
                        session.do_send(TransportClosed);
                        break;
                    }
                }
                // Twilio is never answered; nothing is owed for its messages.
                SocketDuty::Reply(_) => {}
                SocketDuty::Ended(ending) => {
                    // The session heard the end from its reader.
                    realtime_socket::close_after(writer_socket, &ending, "media stream").await;
                    out_rx.until_ended().await;
                    return;
                }
            },
            output = out_rx.recv() => {
                let Some(output) = output else { break };
                let message = match output {
                    SessionOutput::Audio(audio) => {
                        if let Some(tap) = &tap {
                            tap.agent(&audio);
                        }
                        if writer_socket.text(media.message(&audio)).await.is_err() {
                            session.do_send(TransportClosed);
                            break;
                        }
                        continue;
                    }
                    SessionOutput::Mark(name) => json!({
                        "event": "mark",
                        "streamSid": stream_sid,
                        "mark": {"name": name},
                    }),
                    SessionOutput::Clear { written_at } => {
                        if let Some(tap) = &tap {
                            tap.clear(written_at.map(|at| at.into_std()));
                        }
                        // Written already when the session's lane could (then only what the
                        // connection did not take at once is left to go).
                        let sent = match written_at {
                            Some(_) => writer_socket.flush().await,
                            None => writer_socket.text(clear.clone()).await,
                        };
                        if sent.is_err() {
                            session.do_send(TransportClosed);
                            break;
                        }
                        continue;
                    }
                    // Twilio has no channel for events; they are logged.
                    SessionOutput::Event(event) => {
                        tracing::debug!(session = %session_id, "{}", event.name());
                        continue;
                    }
                    SessionOutput::Ended => break,
                };
                if writer_socket.text(message.to_string()).await.is_err() {
                    session.do_send(TransportClosed);
                    break;
                }
            }
        }
    }
    if slot.ended_by_server() {
        close(
            writer_socket,
            CloseCode::Away,
            "the server is shutting down",
        )
        .await;
    } else {
        close(writer_socket, CloseCode::Normal, "the call ended").await;
    }
}

async fn close(socket: SocketWriter, code: CloseCode, description: &str) {
    socket
        .close(Some(CloseReason {
            code,
            description: Some(description.to_string()),
        }))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_messages_written_directly_are_the_json_of_the_tree() {
        let audio: Vec<u8> = (0..=255u8).chain([0xff; 7]).collect();
        for sid in [
            "MZ18ad3ab5a668481ce02b83e7395059f0",
            "",
            "odd \"sid\"\\ \u{1}é",
        ] {
            // One writer for every message, all kept until the end: a message split off the
            // shared buffer is not changed by those written after it.
            let mut writer = MediaWriter::new(sid);
            let lens = [0, 1, 2, 3, 160, audio.len()].repeat(MediaWriter::BATCH);
            let written: Vec<_> = lens
                .iter()
                .map(|&len| writer.message(&audio[..len]))
                .collect();
            for (len, written) in lens.into_iter().zip(written) {
                let expected = json!({
                    "event": "media",
                    "streamSid": sid,
                    "media": {"payload": BASE64.encode(&audio[..len])},
                });
                let parsed: Value = serde_json::from_str(&written).expect("valid JSON");
                assert_eq!(parsed, expected, "{written}");
            }
        }
    }

    #[test]
    fn media_messages_read_directly_decode_as_the_tree_does() {
        let messages = [
            r#"{"event":"media","sequenceNumber":"4","media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"/38A"},"streamSid":"MZ1"}"#,
            r#"{"event":"media","media":{"payload":"/38A"}}"#,
            r#"{"event":"media","media":{"track":"outbound","payload":"/38A"}}"#,
            r#"{"event":"media","media":{"track":7,"payload":"/38A"}}"#,
            r#"{"event":"media","media":{"track":"inbound","payload":12}}"#,
            r#"{"event":"media","media":{"track":"inbound","payload":"not base64!"}}"#,
            r#"{"event":"media","media":{"track":"inbound","payload":"\/38A"}}"#,
            r#"{"event":"media","media":{"track":"in\u0062ound","payload":"/38A"}}"#,
            r#"{"event":"media","media":{"payload":"AAAA"},"media":{"payload":"/38A"}}"#,
            r#"{"event":"media","event":"stop","media":{"payload":"/38A"}}"#,
            r#"{"event":"media","media":"/38A"}"#,
            r#"{"event":"media"}"#,
            r#"{"event":"media","media":{"payload":"/38A"}} trailing"#,
            r#"{"event":"mark","mark":{"name":"m1"},"media":{"payload":"/38A"}}"#,
            r#"{"event":"stop","media":{"payload":"/38A"}}"#,
            r#"["media"]"#,
        ];
        for text in messages {
            assert_eq!(
                parse_event(text),
                parse_event_tree(text, &mut BytesMut::new()),
                "{text}"
            );
        }
    }

    #[test]
    fn frames_split_off_one_buffer_stay_whole_as_it_is_reused() {
        let mut buffer = BytesMut::new();
        let message = |frame: &[u8]| {
            format!(
                r#"{{"event":"media","media":{{"track":"inbound","payload":"{}"}}}}"#,
                BASE64.encode(frame)
            )
        };
        // More frames than one buffer holds, with a bad one among them, all kept alive.
        let mut kept = Vec::new();
        for n in 0..40u8 {
            let frame = [n; 160];
            if n == 7 {
                let bad = r#"{"event":"media","media":{"payload":"not base64!"}}"#;
                assert_eq!(
                    parse_event_into(bad, &mut buffer),
                    Err(MessageError::Base64)
                );
            }
            match parse_event_into(&message(&frame), &mut buffer) {
                Ok(StreamEvent::Media(audio)) => kept.push((frame, audio)),
                other => panic!("{other:?}"),
            }
        }
        for (frame, audio) in &kept {
            assert_eq!(&audio[..], &frame[..]);
        }
        // Once every frame is dropped, the buffer's room is used again.
        drop(kept);
        let Ok(StreamEvent::Media(audio)) = parse_event_into(&message(&[9; 160]), &mut buffer)
        else {
            panic!("a frame");
        };
        assert_eq!(&audio[..], &[9; 160][..]);
    }

    #[test]
    fn twilios_documented_messages_decode() {
        let start = r#"{"event": "start", "sequenceNumber": "1", "start": {"accountSid": "AC1",
            "streamSid": "MZ1", "callSid": "CA1", "tracks": ["inbound"],
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            "customParameters": {"token": "abc.def"}}, "streamSid": "MZ1"}"#;
        assert_eq!(
            parse_event(start),
            Ok(StreamEvent::Start(StreamStart {
                stream_sid: "MZ1".into(),
                call_sid: Some("CA1".into()),
                token: "abc.def".into(),
            }))
        );
        let media = r#"{"event": "media", "sequenceNumber": "4", "media": {"track": "inbound",
            "chunk": "2", "timestamp": "5", "payload": "/38A"}, "streamSid": "MZ1"}"#;
        assert_eq!(
            parse_event(media),
            Ok(StreamEvent::Media(Bytes::from_static(&[0xff, 0x7f, 0x00])))
        );
        let dtmf = r#"{"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": 1}}"#;
        assert_eq!(parse_event(dtmf), Ok(StreamEvent::Dtmf('1')));
        let mark = r#"{"event": "mark", "mark": {"name": "m1"}}"#;
        assert_eq!(parse_event(mark), Ok(StreamEvent::Mark("m1".into())));
        assert_eq!(parse_event(r#"{"event": "stop"}"#), Ok(StreamEvent::Stop));
        assert_eq!(
            parse_event(r#"{"event": "connected", "protocol": "Call"}"#),
            Ok(StreamEvent::Ignored)
        );
    }

    #[test]
    fn malformed_messages_are_errors_and_other_tracks_are_ignored() {
        assert_eq!(parse_event("{"), Err(MessageError::Json));
        let bad = r#"{"event": "media", "media": {"payload": "not base64!"}}"#;
        assert_eq!(parse_event(bad), Err(MessageError::Base64));
        let outbound = r#"{"event": "media", "media": {"track": "outbound", "payload": "!!"}}"#;
        assert_eq!(parse_event(outbound), Ok(StreamEvent::Ignored));
        assert_eq!(
            parse_event(r#"{"event": "dtmf", "dtmf": {"digit": ""}}"#),
            Ok(StreamEvent::Ignored)
        );
        assert_eq!(parse_event("[1, 2]"), Ok(StreamEvent::Ignored));
    }
}
