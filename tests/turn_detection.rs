//! Smart end of turn through the public interface: a browser caller on the direct socket
//! says JFK's sentence (recorded speech, at real time), whose pauses include one in the middle
//! of a thought ("…what your country can do for you, [1.1 s] ask what…"). The real end-of-turn
//! model judges the pauses; the recognizer, model and voice are the local vendor stand-in.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

fn jfk_16k() -> Vec<i16> {
    let audio = switchboard::media::decode(&fixture("jfk.flac"), Some("flac")).unwrap();
    switchboard::media::resample(&audio.channels[0], audio.sample_rate, 16_000)
        .iter()
        .map(|s| (s.clamp(-1.0, 1.0) * 32_767.0) as i16)
        .collect()
}

/// Says JFK's sentence and two seconds of silence at real time into a session of `agent`,
/// then ends it; answers the session's caller turns as its record shows them.
async fn say_jfk(server: &Server, key: &str, agent: &str) -> Vec<Value> {
    let mut socket = open_direct(server, key, agent, "sampleRate=16000").await;
    let mut caller = jfk_16k();
    caller.resize(caller.len().div_ceil(320) * 320 + 16_000 * 2, 0);
    let mut frames = caller.chunks_exact(320);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut session_id = String::new();
    let mut all_sent = false;
    while Instant::now() < deadline && !all_sent {
        tokio::select! {
            _ = tick.tick() => match frames.next() {
                Some(frame) => {
                    let bytes: Vec<u8> = frame.iter().flat_map(|s| s.to_le_bytes()).collect();
                    socket.send(Message::binary(bytes)).await.unwrap();
                }
                None => all_sent = true,
            },
            message = socket.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let event: Value = serde_json::from_str(&text).unwrap();
                    assert_ne!(event["type"], "error", "{event}");
                    if event["type"] == "session.started" {
                        session_id = event["sessionId"].as_str().unwrap().into();
                    }
                }
                Some(Ok(_)) => {}
                _ => break,
            }
        }
    }
    assert!(all_sent, "the caller's audio was not all sent in time");
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    while let Some(Ok(message)) = socket.next().await {
        if matches!(message, Message::Close(_)) {
            break;
        }
    }
    loop {
        let (status, body) =
            call(server.get(&format!("/v1/observability/sessions/{session_id}"), key)).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "active" {
            return body["turns"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["speaker"] == "user")
                .cloned()
                .collect();
        }
        assert!(Instant::now() < deadline, "the session was never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_pause_in_the_middle_of_a_thought_does_not_end_the_callers_turn() {
    let mock = vendor_mock::VendorMock::start();
    // Smart detection as the server's default for agents that do not choose.
    let server = mock
        .server(&[("SWITCHBOARD__ENGINES__TURN_DETECTION", "smart")])
        .await;
    let key = server.key().to_string();
    // The first agent says nothing of turn taking: it gets the server's default.
    for (id, metadata) in [
        ("smart", json!({})),
        ("timer", json!({"turnTaking": {"turnDetection": "silence"}})),
    ] {
        let agent = json!({"id": id, "name": id, "firstMessage": null,
                           "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai",
                           "metadata": metadata});
        let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
        assert_eq!(status, 201, "{body}");
    }
    let (smart, timer) = tokio::join!(
        say_jfk(&server, &key, "smart"),
        say_jfk(&server, &key, "timer")
    );
    let endpoints = |turns: &[Value]| -> Vec<String> {
        turns
            .iter()
            .map(|t| t["endpoint"].as_str().unwrap_or("").to_string())
            .collect()
    };
    // The 600 ms timer ends a turn in every pause of 600 ms or more: after "Americans,",
    // after "for you," and after "ask what you can do", then at the end.
    assert!(timer.len() >= 3, "timer: {:?}", endpoints(&timer));
    assert!(
        endpoints(&timer).iter().all(|e| e == "vad"),
        "{:?}",
        endpoints(&timer)
    );
    // The model hears "Americans," as a finished phrase (the reference implementation says so
    // too, p 0.79) and the rest as one thought: two turns, each ended by the model.
    assert_eq!(
        endpoints(&smart),
        vec!["model", "model"],
        "smart: {smart:?}"
    );
}
