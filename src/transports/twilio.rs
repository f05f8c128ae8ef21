//! The Twilio Media Streams wire (protocols.md §1): [`await_start`] reads `connected` and
//! `start` from a new stream; then [`TwilioWire`] reads the rest of the caller's side as the
//! session's input (`media`, `mark`, `dtmf`, `stop`, through [`TwilioCaller`]) and writes the
//! session's audio, marks and clears back as Twilio `media`, `mark` and `clear` messages; a
//! barge-in's `clear` is written by the session itself ([`ClearNow`]). Whether the stream's
//! relay token lets it in is decided by the live session (`crate::live::phone`).
//!
//! Tolerant by design: numbers may arrive as strings, unknown events are ignored, malformed
//! JSON or base64 is logged and skipped.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use futures_util::StreamExt;
use serde_json::{json, Value};
use switchboard_actors::session::{
    AgentProfile, CallerInput, ClearLane, SessionConfig, SessionOutput,
};

use super::socket::caller_side::{CallerProtocol, Read};
use super::socket::{self, ClientMessage, CloseCode, CloseReason, Messages, SocketWriter};
use super::{Frame, Wire};
use crate::ids::SessionId;
use crate::recording::TapFormat;

/// How long a new stream may take to send `start`.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Largest message a stream may send before `start`: Twilio's `connected` and `start` are
/// well under 2 KB (a relay token in `customParameters` included), and anyone can open the
/// socket, so until a token is checked it holds no more than this.
pub const MAX_MESSAGE_BEFORE_START: usize = 4 * 1024;

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
pub struct TwilioCaller {
    audio: BytesMut,
    session_id: SessionId,
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

/// Reads a new stream up to its `start` (only `connected` is expected before it); the caller
/// holds its messages to [`MAX_MESSAGE_BEFORE_START`] until the token in it is checked.
/// `None` when the stream ended or sent no `start` in time; the socket was answered or closed.
pub async fn await_start(socket: &SocketWriter, messages: &mut Messages) -> Option<StreamStart> {
    let deadline = tokio::time::sleep(START_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => {
                close(socket.clone(), CloseCode::Policy, "no start message").await;
                return None;
            }
            message = messages.next() => {
                let message = match message {
                    Some(Ok(ClientMessage::Close(_))) | Some(Err(_)) | None => {
                        socket::close_after(socket.clone(), &message, "media stream").await;
                        return None;
                    }
                    Some(Ok(message)) => message,
                };
                match message {
                    ClientMessage::Text(text) => match parse_event(&text) {
                        Ok(StreamEvent::Start(start)) => return Some(start),
                        Err(MessageError::Json) => {
                            tracing::warn!("media stream: skipped a malformed message");
                        }
                        _ => {}
                    },
                    // A client that does not take the answer is gone.
                    ClientMessage::Ping(bytes) if socket.clone().pong(&bytes).await.is_err() => {
                        return None
                    }
                    _ => {}
                }
            }
        }
    }
}

/// One media stream's wire, once its `start` was read.
pub struct TwilioWire {
    stream_sid: String,
    media: MediaWriter,
    clear: ByteString,
}

impl TwilioWire {
    pub fn new(stream_sid: &str) -> Self {
        Self {
            stream_sid: stream_sid.to_string(),
            media: MediaWriter::new(stream_sid),
            clear: clear_message(stream_sid),
        }
    }
}

impl Wire for TwilioWire {
    type Caller = TwilioCaller;
    const NAME: &'static str = "twilio";
    const ENDED: &'static str = "the call ended";

    fn config(&self, session_id: String, agent: AgentProfile) -> SessionConfig {
        SessionConfig::twilio(session_id, agent)
    }

    fn tap_format(&self) -> TapFormat {
        TapFormat::Mulaw8k
    }

    fn caller(&self, session_id: &SessionId) -> TwilioCaller {
        TwilioCaller {
            audio: BytesMut::new(),
            session_id: session_id.clone(),
        }
    }

    fn clear_lane(&self, socket: SocketWriter) -> Arc<dyn ClearLane> {
        Arc::new(ClearNow {
            socket,
            message: self.clear.clone(),
        })
    }

    fn frame(&mut self, output: SessionOutput) -> Frame {
        match output {
            SessionOutput::Audio(audio) => Frame::Text(self.media.message(&audio)),
            SessionOutput::Mark(name) => Frame::Text(
                json!({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})
                    .to_string()
                    .into(),
            ),
            // Written already when the session's lane could (then only what the connection
            // did not take at once is left to go).
            SessionOutput::Clear {
                written_at: Some(_),
            } => Frame::Flush,
            SessionOutput::Clear { written_at: None } => Frame::Text(self.clear.clone()),
            // Twilio has no channel for events; they are logged.
            SessionOutput::Event(event) => {
                tracing::debug!(stream = %self.stream_sid, "{}", event.name());
                Frame::Skip
            }
            SessionOutput::Ended => Frame::Skip,
        }
    }
}

/// Closes `socket` with `code` and `description`.
pub async fn close(socket: SocketWriter, code: CloseCode, description: &str) {
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
