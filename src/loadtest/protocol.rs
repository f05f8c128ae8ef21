//! The two real-time wire protocols as a caller speaks them: Twilio Media Streams (what Twilio
//! sends and how it answers marks) and the direct socket (binary PCM16, JSON events). Inbound
//! messages are classified without a full JSON parse where they are frequent (media).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use super::speech::Encoding;

/// What the caller got from the server, reduced to what the load tester measures.
#[derive(Debug, PartialEq)]
pub enum Inbound {
    /// Agent audio lasting this many ms.
    Audio(f64),
    /// A mark to answer once the audio before it has played.
    Mark(String),
    /// The server asked to drop the audio queued for playback (barge-in).
    Clear,
    /// The server reported an error.
    Error(String),
    /// The server's own measurement of an agent turn (direct socket only).
    TurnMetrics { latency_ms: u64, engine_ms: u64 },
    /// Anything else (transcripts, text deltas, unknown events).
    Other,
}

/// One transport's encoding of the caller side.
pub trait Protocol: Send {
    /// Messages sent right after the socket opens.
    fn opening(&mut self) -> Vec<Message>;
    /// One frame of caller audio.
    fn audio(&mut self, frame: &[u8]) -> Message;
    /// The answer to a played mark; `None` when the transport does not answer marks.
    fn mark_played(&mut self, name: &str) -> Option<Message>;
    /// The caller hangs up.
    fn hangup(&mut self) -> Message;
    /// Classifies a server message.
    fn inbound(&self, message: &Message) -> Inbound;
}

/// Twilio Media Streams, field for field as Twilio sends them.
pub struct Twilio {
    stream_sid: String,
    call_sid: String,
    token: String,
    sequence: u64,
    chunk: u64,
}

impl Twilio {
    /// A caller on call `call_sid` whose stream carries relay `token`.
    pub fn new(call_sid: String, token: String) -> Self {
        let stream_sid = format!("MZ{}", &call_sid[2..]);
        Self {
            stream_sid,
            call_sid,
            token,
            sequence: 0,
            chunk: 0,
        }
    }

    fn next_sequence(&mut self) -> u64 {
        self.sequence += 1;
        self.sequence
    }
}

impl Protocol for Twilio {
    fn opening(&mut self) -> Vec<Message> {
        let connected = json!({"event": "connected", "protocol": "Call", "version": "1.0.0"});
        let start = json!({
            "event": "start", "sequenceNumber": self.next_sequence().to_string(),
            "streamSid": self.stream_sid,
            "start": {"accountSid": "AC00000000000000000000000000000000", "callSid": self.call_sid,
                      "streamSid": self.stream_sid, "tracks": ["inbound"],
                      "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                      "customParameters": {"token": self.token}}
        });
        vec![
            Message::text(connected.to_string()),
            Message::text(start.to_string()),
        ]
    }

    fn audio(&mut self, frame: &[u8]) -> Message {
        let sequence = self.next_sequence();
        self.chunk += 1;
        // Formatted by hand: this runs fifty times a second per call.
        Message::text(format!(
            r#"{{"event":"media","sequenceNumber":"{sequence}","media":{{"track":"inbound","chunk":"{}","timestamp":"{}","payload":"{}"}},"streamSid":"{}"}}"#,
            self.chunk,
            self.chunk * 20,
            BASE64.encode(frame),
            self.stream_sid
        ))
    }

    fn mark_played(&mut self, name: &str) -> Option<Message> {
        let mark = json!({"event": "mark", "sequenceNumber": self.next_sequence().to_string(),
                          "streamSid": self.stream_sid, "mark": {"name": name}});
        Some(Message::text(mark.to_string()))
    }

    fn hangup(&mut self) -> Message {
        let stop = json!({"event": "stop", "sequenceNumber": self.next_sequence().to_string(),
                          "streamSid": self.stream_sid,
                          "stop": {"accountSid": "AC00000000000000000000000000000000", "callSid": self.call_sid}});
        Message::text(stop.to_string())
    }

    fn inbound(&self, message: &Message) -> Inbound {
        let Message::Text(text) = message else {
            return Inbound::Other;
        };
        let text = text.as_str();
        if text.contains(r#""event":"media""#) {
            if let Some(payload) = text
                .split(r#""payload":""#)
                .nth(1)
                .and_then(|rest| rest.split('"').next())
            {
                let padding = payload.bytes().rev().take_while(|&b| b == b'=').count();
                let bytes = (payload.len() / 4 * 3).saturating_sub(padding);
                return Inbound::Audio(Encoding::Mulaw8k.ms_of(bytes));
            }
        }
        let Ok(event) = serde_json::from_str::<Value>(text) else {
            return Inbound::Error(format!("not JSON: {text:.80}"));
        };
        match event["event"].as_str() {
            Some("mark") => Inbound::Mark(event["mark"]["name"].as_str().unwrap_or("").into()),
            Some("clear") => Inbound::Clear,
            Some("media") => Inbound::Error("a media message without payload".into()),
            _ => Inbound::Other,
        }
    }
}

/// The direct socket: binary PCM16 both ways, JSON events.
pub struct Direct {
    encoding: Encoding,
}

impl Direct {
    /// A client sending and receiving PCM16 at `sample_rate`.
    pub fn new(sample_rate: u32) -> Self {
        Self {
            encoding: Encoding::Pcm16(sample_rate),
        }
    }
}

impl Protocol for Direct {
    fn opening(&mut self) -> Vec<Message> {
        Vec::new()
    }

    fn audio(&mut self, frame: &[u8]) -> Message {
        Message::binary(frame.to_vec())
    }

    fn mark_played(&mut self, name: &str) -> Option<Message> {
        Some(Message::text(
            json!({"type": "mark", "name": name}).to_string(),
        ))
    }

    fn hangup(&mut self) -> Message {
        Message::text(json!({"type": "end"}).to_string())
    }

    fn inbound(&self, message: &Message) -> Inbound {
        let text = match message {
            Message::Binary(audio) => return Inbound::Audio(self.encoding.ms_of(audio.len())),
            Message::Text(text) => text.as_str(),
            _ => return Inbound::Other,
        };
        let Ok(event) = serde_json::from_str::<Value>(text) else {
            return Inbound::Error(format!("not JSON: {text:.80}"));
        };
        let ms = |field: &str| event[field].as_u64().unwrap_or(0);
        match event["type"].as_str() {
            Some("audio.mark") => Inbound::Mark(event["name"].as_str().unwrap_or("").into()),
            Some("audio.clear") => Inbound::Clear,
            Some("error") => Inbound::Error(format!(
                "{}: {}",
                event["code"].as_str().unwrap_or("error"),
                event["message"].as_str().unwrap_or("")
            )),
            Some("turn.metrics") if event["latencyMs"].is_u64() => Inbound::TurnMetrics {
                latency_ms: ms("latencyMs"),
                engine_ms: ms("endpointMs")
                    + ms("sttMs")
                    + ms("llmMs")
                    + ms("toolMs")
                    + ms("ttsMs"),
            },
            _ => Inbound::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_media_is_measured_without_parsing_and_marks_are_answered() {
        let mut twilio = Twilio::new("CA0123".into(), "tok".into());
        let opening = twilio.opening();
        let start: Value = serde_json::from_str(opening[1].to_text().unwrap()).unwrap();
        assert_eq!(start["start"]["customParameters"]["token"], "tok");
        assert_eq!(start["sequenceNumber"], "1");
        let media: Value =
            serde_json::from_str(twilio.audio(&[0xFF; 160]).to_text().unwrap()).unwrap();
        assert_eq!(media["sequenceNumber"], "2");
        assert_eq!(media["media"]["chunk"], "1");
        assert_eq!(
            BASE64
                .decode(media["media"]["payload"].as_str().unwrap())
                .unwrap(),
            vec![0xFF; 160]
        );

        let out = json!({"event": "media", "streamSid": "MZ0123", "media": {"payload": BASE64.encode([0u8; 400])}});
        assert_eq!(
            twilio.inbound(&Message::text(out.to_string())),
            Inbound::Audio(50.0)
        );
        let mark = json!({"event": "mark", "streamSid": "MZ0123", "mark": {"name": "r1-0"}});
        assert_eq!(
            twilio.inbound(&Message::text(mark.to_string())),
            Inbound::Mark("r1-0".into())
        );
        let clear = json!({"event": "clear", "streamSid": "MZ0123"});
        assert_eq!(
            twilio.inbound(&Message::text(clear.to_string())),
            Inbound::Clear
        );
        let echoed: Value =
            serde_json::from_str(twilio.mark_played("r1-0").unwrap().to_text().unwrap()).unwrap();
        assert_eq!(echoed["mark"]["name"], "r1-0");
    }

    #[test]
    fn direct_audio_and_events() {
        let direct = Direct::new(16_000);
        assert_eq!(
            direct.inbound(&Message::binary(vec![0u8; 640])),
            Inbound::Audio(20.0)
        );
        let metrics = json!({"type": "turn.metrics", "latencyMs": 900, "endpointMs": 600,
                             "sttMs": 100, "llmMs": 100, "toolMs": 0, "ttsMs": 50});
        assert_eq!(
            direct.inbound(&Message::text(metrics.to_string())),
            Inbound::TurnMetrics {
                latency_ms: 900,
                engine_ms: 850
            }
        );
        let error = json!({"type": "error", "code": "bad_message", "message": "no"});
        assert_eq!(
            direct.inbound(&Message::text(error.to_string())),
            Inbound::Error("bad_message: no".into())
        );
    }
}
