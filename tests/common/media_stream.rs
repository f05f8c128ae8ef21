#![allow(dead_code)]
//! Placing a phone call on the test server and opening its media stream as Twilio does:
//! `POST /v1/sessions/twilio`, the relay token read from the TwiML, then the WebSocket with
//! Twilio's `connected` and `start` messages field for field (reference/protocols.md §1).
//! Also the caller's voice: one recorded sentence as the 8 kHz mu-law Twilio sends, and
//! Twilio's playback of the agent's audio ([`Playback`]), which decides when marks come back.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::json;
use switchboard::media::{decode, resample};
use switchboard_actors::audio::mulaw;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{call, close_code, ended_call, fixture, Server};

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The stream id every test call's `start` names.
pub const STREAM_SID: &str = "MZ00000000000000000000000000000001";

/// One sentence of recorded speech (the right channel of the stereo fixture) as 8 kHz mu-law.
pub fn caller_speech() -> Vec<u8> {
    let audio = decode(&fixture("stereo_diarization.wav"), Some("wav")).unwrap();
    let pcm = resample(&audio.channels[1], audio.sample_rate, 8_000);
    pcm.iter()
        .map(|s| mulaw::encode((s.clamp(-1.0, 1.0) * 32767.0) as i16))
        .collect()
}

/// `ms` of mu-law silence.
pub fn silence(ms: usize) -> Vec<u8> {
    vec![mulaw::SILENCE; ms * 8]
}

/// A call the server has set up and not yet connected.
pub struct PlacedCall {
    pub session_id: String,
    pub stream_url: String,
    pub token: String,
}

/// Sets up a call to `agent` and reads the relay token out of its TwiML.
pub async fn place_call(server: &Server, key: &str, agent: &str) -> PlacedCall {
    let (status, body) = call(server.post(
        "/v1/sessions/twilio",
        key,
        json!({"agentId": agent, "from": "+14155550100", "to": "+14155550199"}),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let twiml = body["twiml"].as_str().unwrap();
    let token = twiml
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a token parameter")
        .to_string();
    PlacedCall {
        session_id: body["sessionId"].as_str().unwrap().to_string(),
        stream_url: body["streamUrl"].as_str().unwrap().to_string(),
        token,
    }
}

/// Opens the media stream at `url` as call `call_sid` carrying `token`: `connected`, then
/// `start`.
pub async fn open_stream(url: &str, token: &str, call_sid: &str) -> Socket {
    let (mut socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("the stream connects");
    let connected = json!({"event": "connected", "protocol": "Call", "version": "1.0.0"});
    socket
        .send(Message::text(connected.to_string()))
        .await
        .unwrap();
    socket
        .send(Message::text(start_message(token, call_sid)))
        .await
        .unwrap();
    socket
}

/// Opens the stream at `url` as call `call_sid` with `token`, minted for a key since revoked,
/// and checks that the server refused it: closed with the policy code, and the call's record
/// (read with `key`) failed for the revoked key.
pub async fn assert_refused_as_revoked(
    server: &Server,
    key: &str,
    url: &str,
    token: &str,
    call_sid: &str,
) {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    let mut socket = open_stream(url, token, call_sid).await;
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Policy));
    let ended = ended_call(server, key, call_sid).await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["endReason"]
            .as_str()
            .is_some_and(|r| r.contains("revoked")),
        "{ended}"
    );
}

/// Twilio's `start` for call `call_sid`, carrying `token` as a custom parameter.
pub fn start_message(token: &str, call_sid: &str) -> String {
    json!({
        "event": "start", "sequenceNumber": "1", "streamSid": STREAM_SID,
        "start": {"accountSid": "AC00000000000000000000000000000001", "callSid": call_sid,
                  "streamSid": STREAM_SID, "tracks": ["inbound"],
                  "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                  "customParameters": {"token": token}}
    })
    .to_string()
}

/// Twilio's playback of the agent's audio, as protocols.md §1.4 describes it: each 20 ms
/// frame received plays after those before it, a mark comes back when the audio before it
/// has played, and `clear` drops what has not played and sends every pending mark back at
/// once. Echoing marks as they arrive instead would tell the session its audio played up to
/// the pacing lead early.
#[derive(Debug, Default)]
pub struct Playback {
    /// When the audio received so far will have played out.
    played_until: Option<Instant>,
    /// Marks waiting for their audio, with the time it will have played.
    pending: VecDeque<(Instant, String)>,
}

impl Playback {
    /// A frame of agent audio arrived at `now`.
    pub fn media(&mut self, now: Instant) {
        let starts = self.played_until.filter(|t| *t > now).unwrap_or(now);
        self.played_until = Some(starts + Duration::from_millis(20));
    }

    /// Mark `name` arrived at `now`: it is due when the audio before it has played.
    pub fn mark(&mut self, name: &str, now: Instant) {
        let due = self.played_until.filter(|t| *t > now).unwrap_or(now);
        self.pending.push_back((due, name.to_string()));
    }

    /// `clear` arrived: nothing more plays, and every pending mark is due now.
    pub fn clear(&mut self) -> Vec<String> {
        self.played_until = None;
        self.pending.drain(..).map(|(_, name)| name).collect()
    }

    /// The marks whose audio has played by `now`, in order.
    pub fn due(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        while self.pending.front().is_some_and(|(at, _)| *at <= now) {
            due.extend(self.pending.pop_front().map(|(_, name)| name));
        }
        due
    }
}

/// Twilio's echo of mark `name`.
pub fn mark_echo(name: &str) -> Message {
    Message::text(
        json!({"event": "mark", "streamSid": STREAM_SID, "mark": {"name": name}}).to_string(),
    )
}

/// A call's media stream as Twilio holds it: the socket, and the playback of the agent's
/// audio on it, which lasts as long as the call.
pub struct TwilioStream {
    pub socket: Socket,
    pub playback: Playback,
}

impl TwilioStream {
    /// Opens the stream as [`open_stream`] does; nothing has played yet.
    pub async fn open(url: &str, token: &str, call_sid: &str) -> TwilioStream {
        TwilioStream {
            socket: open_stream(url, token, call_sid).await,
            playback: Playback::default(),
        }
    }
}
