#![allow(dead_code)]
//! Placing a phone call on the test server and opening its media stream as Twilio does:
//! `POST /v1/sessions/twilio`, the relay token read from the TwiML, then the WebSocket with
//! Twilio's `connected` and `start` messages field for field (reference/protocols.md §1).
//! Also the caller's voice: one recorded sentence as the 8 kHz mu-law Twilio sends.

use futures_util::SinkExt;
use serde_json::json;
use switchboard::media::{decode, resample};
use switchboard_actors::audio::mulaw;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{call, fixture, Server};

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
    let start = json!({
        "event": "start", "sequenceNumber": "1", "streamSid": STREAM_SID,
        "start": {"accountSid": "AC00000000000000000000000000000001", "callSid": call_sid,
                  "streamSid": STREAM_SID, "tracks": ["inbound"],
                  "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                  "customParameters": {"token": token}}
    });
    socket.send(Message::text(start.to_string())).await.unwrap();
    socket
}
