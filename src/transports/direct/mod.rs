//! The direct agent socket's wire, for browsers and server-side clients: JSON text frames
//! for control and events, binary frames for audio, both ways, at `?sampleRate=` 8000, 16000
//! (default), 24000 or 48000 Hz: PCM16 little-endian mono (`?encoding=pcm16`, the default)
//! or one 20 ms Opus packet per message (`?encoding=opus`). Client messages: binary audio;
//! `{"type": "text", "text": ...}`; `{"type": "interrupt"}`; `{"type": "mark", "name": ...}`
//! (with `?acks=marks`: the audio before that mark has played); `{"type": "end"}`. Server
//! events: `{"type": "<event name>", ...}` for session.started, transcript.partial/final,
//! agent.text.delta, agent.audio.start/end, audio.clear, audio.mark, tool.call, tool.result,
//! turn.metrics, error, session.ended. Those JSON messages are decoded and written in
//! [`messages`]; [`DirectWire`] moves them to and from the session.

mod messages;

use std::sync::Arc;

use bytes::Bytes;
use bytestring::ByteString;
use serde_json::json;
use switchboard_actors::audio::SampleRate;
use switchboard_actors::session::{
    AgentProfile, AudioFormat, CallerInput, ClearLane, PlaybackAcks, SessionConfig, SessionEvent,
    SessionOutput,
};

pub use messages::{event_json, parse_client_message, ClientMessage, ClientMessageError};

use super::socket::caller_side::{CallerProtocol, Read};
use super::socket::SocketWriter;
use super::{Frame, Wire};
use crate::error::ApiError;
use crate::ids::SessionId;
use crate::recording::TapFormat;

/// How the client wants the socket's audio: its rate, its encoding, its playback acks.
#[derive(Debug, Clone, Copy)]
pub struct DirectWire {
    rate: SampleRate,
    /// One Opus packet of 20 ms per binary message, both ways; else PCM16 little-endian.
    opus: bool,
    acks: PlaybackAcks,
}

impl DirectWire {
    /// Reads the `sampleRate`, `encoding` and `acks` query parameters, each with its
    /// documented default; a value that is none of the documented ones is refused naming its
    /// parameter.
    pub fn from_query(
        sample_rate: Option<&str>,
        encoding: Option<&str>,
        acks: Option<&str>,
    ) -> Result<Self, ApiError> {
        let rate = match sample_rate.unwrap_or("16000") {
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
        let opus = match encoding.unwrap_or("pcm16") {
            "pcm16" => false,
            "opus" => true,
            other => {
                return Err(ApiError::invalid(
                    "encoding",
                    format!("encoding '{other}' is not one of: pcm16, opus"),
                ))
            }
        };
        let acks = match acks.unwrap_or("clock") {
            "clock" => PlaybackAcks::Clock,
            "marks" => PlaybackAcks::Marks,
            other => {
                return Err(ApiError::invalid(
                    "acks",
                    format!("acks '{other}' is not one of: clock, marks"),
                ))
            }
        };
        Ok(DirectWire { rate, opus, acks })
    }

    fn format(self) -> AudioFormat {
        if self.opus {
            AudioFormat::Opus { rate: self.rate }
        } else {
            AudioFormat::Pcm16 { rate: self.rate }
        }
    }
}

impl Wire for DirectWire {
    type Caller = DirectCaller;
    const NAME: &'static str = "direct";
    const ENDED: &'static str = "the session ended";

    fn config(&self, session_id: String, agent: AgentProfile) -> SessionConfig {
        let mut config = SessionConfig::direct(session_id, agent, self.rate);
        config.input = self.format();
        config.output = self.format();
        config.pacing.acks = self.acks;
        config
    }

    fn tap_format(&self) -> TapFormat {
        if self.opus {
            TapFormat::Opus(self.rate)
        } else {
            TapFormat::Pcm16(self.rate.hz())
        }
    }

    fn caller(&self, _session_id: &SessionId) -> DirectCaller {
        DirectCaller
    }

    fn clear_lane(&self, socket: SocketWriter) -> Arc<dyn ClearLane> {
        Arc::new(ClearNow(socket))
    }

    fn frame(&mut self, output: SessionOutput) -> Frame {
        match output {
            SessionOutput::Audio(audio) => Frame::Binary(audio),
            // A client on the clock answers no marks, and is sent none.
            SessionOutput::Mark(_) if self.acks == PlaybackAcks::Clock => Frame::Skip,
            SessionOutput::Mark(name) => Frame::Text(
                json!({"type": "audio.mark", "name": name})
                    .to_string()
                    .into(),
            ),
            // The client is told by the `audio.clear` event (written by the lane, or queued
            // after this): only what of the lane's clear the connection did not take is left.
            SessionOutput::Clear { .. } => Frame::Flush,
            SessionOutput::Event(event) => Frame::Text(event_json(&event).to_string().into()),
            SessionOutput::Ended => Frame::Skip,
        }
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
pub struct DirectCaller;

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
