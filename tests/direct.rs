//! The direct agent WebSocket as a browser widget uses it: a session token minted over REST,
//! JSON events and binary PCM16 audio, typed text turns, and a clean end.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

async fn new_agent(server: &Server, key: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "widget", "name": "Widget", "firstMessage": "Hi there!", "maxTokens": 30}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

/// Reads until `until` sees a matching event or the time runs out; answers the events (JSON)
/// and the bytes of audio received.
async fn read_until(
    socket: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    limit: Duration,
    until: impl Fn(&Value) -> bool,
) -> (Vec<Value>, usize) {
    let started = Instant::now();
    let mut events = Vec::new();
    let mut audio = 0;
    while started.elapsed() < limit {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(limit - started.elapsed(), socket.next()).await
        else {
            break;
        };
        match message {
            Message::Binary(bytes) => audio += bytes.len(),
            Message::Text(text) => {
                let event: Value = serde_json::from_str(&text).unwrap();
                let done = until(&event);
                events.push(event);
                if done {
                    break;
                }
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    (events, audio)
}

#[tokio::test]
async fn a_browser_session_with_a_token_greets_and_answers_typed_text() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let (status, minted) =
        call(server.post("/v1/agents/widget/session-token", &key, json!({}))).await;
    assert_eq!(status, 200, "{minted}");
    assert!(is_iso_millis(&minted["expiresAt"]));
    let url = minted["url"].as_str().unwrap().to_string();
    assert!(url.contains("/v1/agents/widget/session?token="), "{url}");

    let (mut socket, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect("connects with the token");
    let (events, audio) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    assert_eq!(events[0]["type"], "session.started", "{events:?}");
    assert!(
        events.iter().any(|e| e["type"] == "agent.audio.start"),
        "{events:?}"
    );
    // At 16 kHz PCM16, "Hi there!" is well over a quarter second.
    assert!(audio > 8_000, "greeting audio bytes: {audio}");

    socket
        .send(Message::text(
            json!({"type": "text", "text": "Say hello back to me."}).to_string(),
        ))
        .await
        .unwrap();
    let (events, audio) = read_until(&mut socket, Duration::from_secs(30), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    assert!(
        events.iter().any(|e| e["type"] == "agent.text.delta"),
        "{events:?}"
    );
    assert!(audio > 0, "answer audio");

    socket
        .send(Message::text(json!({"type": "nonsense"}).to_string()))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(5), |e| {
        e["type"] == "error"
    })
    .await;
    assert_eq!(events.last().unwrap()["code"], "unknown_message");

    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "session.ended"
    })
    .await;
    assert_eq!(
        events.last().unwrap()["type"],
        "session.ended",
        "{events:?}"
    );

    let (status, sessions) =
        call(server.get("/v1/observability/sessions?agentId=widget", &key)).await;
    assert_eq!(status, 200);
    assert_eq!(sessions["data"][0]["transport"], "direct", "{sessions}");
}

#[tokio::test]
async fn the_socket_needs_a_key_or_a_token_for_that_agent() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let (status, _) =
        call(server.post("/v1/agents", &key, json!({"id": "other", "name": "Other"}))).await;
    assert_eq!(status, 201);
    let base = server
        .url("/v1/agents/widget/session")
        .replacen("http://", "ws://", 1);

    let refused = tokio_tungstenite::connect_async(base.as_str()).await;
    assert!(refused.is_err(), "no credentials");
    let (_, other) = call(server.post("/v1/agents/other/session-token", &key, json!({}))).await;
    let wrong = format!("{base}?token={}", other["token"].as_str().unwrap());
    assert!(
        tokio_tungstenite::connect_async(wrong.as_str())
            .await
            .is_err(),
        "another agent's token"
    );
    let bad_rate = format!("{base}?sampleRate=11025");
    let mut request = bad_rate.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    assert!(
        tokio_tungstenite::connect_async(request).await.is_err(),
        "an unsupported rate"
    );

    // A server-side client uses its API key.
    let mut request = base.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the key is accepted");
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "session.started"
    })
    .await;
    assert_eq!(events.last().unwrap()["type"], "session.started");
}
