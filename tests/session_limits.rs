//! Real-time sessions and billing: live sessions are capped per tier, charged turn by turn as
//! they go, and refused when the credits are spent.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn session_url(server: &Server, key: &str) -> String {
    let (status, minted) =
        call(server.post("/v1/agents/greeter/session-token", key, json!({}))).await;
    assert_eq!(status, 200, "{minted}");
    minted["url"].as_str().unwrap().to_string()
}

async fn wait_for(socket: &mut Socket, kind: &str, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(limit - started.elapsed(), socket.next()).await
        else {
            return false;
        };
        if let Message::Text(text) = message {
            let event: Value = serde_json::from_str(&text).unwrap();
            if event["type"] == kind {
                return true;
            }
        }
    }
    false
}

/// The status and error code a refused WebSocket upgrade answered with.
fn refusal(result: Result<(Socket, impl Sized), WsError>) -> (u16, String) {
    match result {
        Err(WsError::Http(response)) => {
            let body: Value =
                serde_json::from_slice(response.body().as_deref().unwrap_or_default())
                    .unwrap_or(Value::Null);
            (
                response.status().as_u16(),
                body["error"]["code"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, the socket opened"),
    }
}

async fn new_agent(server: &Server, key: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "greeter", "name": "Greeter", "firstMessage": "Hi there!", "maxTokens": 20}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn live_sessions_are_capped_per_tier_and_charged_per_turn() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__TIERS__STARTER__MAX_CONCURRENT_SESSIONS", "1"),
            ("SWITCHBOARD__PRICING__TTS_PER_1K_CHARACTERS", "1000"),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;

    let url = session_url(&server, &key).await;
    let (mut first, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect("the first session opens");
    assert!(wait_for(&mut first, "agent.audio.end", Duration::from_secs(15)).await);

    // A second one at the same time is refused before the socket opens.
    let url = session_url(&server, &key).await;
    let (status, code) = refusal(tokio_tungstenite::connect_async(url.as_str()).await);
    assert_eq!((status, code.as_str()), (429, "session_limit_exceeded"));

    // The greeting was charged as it was spoken: nine characters at 1,000 per 1,000.
    let (_, usage) = call(server.get("/v1/usage", &key)).await;
    assert_eq!(usage["breakdown"]["tts"], 9.0, "{usage}");
    assert!(usage["breakdown"]["llm"].as_f64().unwrap() > 0.0, "{usage}");

    // Ending the first frees its slot.
    first
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    assert!(wait_for(&mut first, "session.ended", Duration::from_secs(10)).await);
    let started = Instant::now();
    loop {
        let url = session_url(&server, &key).await;
        match tokio_tungstenite::connect_async(url.as_str()).await {
            Ok(_) => break,
            Err(err) => {
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "still refused: {err}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[tokio::test]
async fn a_session_is_refused_when_the_credits_are_spent() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[("SWITCHBOARD__TIERS__STARTER__MONTHLY_CREDITS", "0")],
    )
    .await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let url = session_url(&server, &key).await;
    let (status, code) = refusal(tokio_tungstenite::connect_async(url.as_str()).await);
    assert_eq!((status, code.as_str()), (402, "insufficient_credits"));
}
