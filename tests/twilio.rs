//! Phone calls over the Twilio Media Streams protocol against the real server and its embedded
//! engines: a real WebSocket client plays Twilio, sending recorded speech converted to 8 kHz
//! mu-law in 20 ms frames at real-time pace and echoing each mark when the audio before it has
//! played, as Twilio does ([`Playback`]).

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD};
use base64::Engine as _;
use common::*;
use futures_util::{SinkExt, StreamExt};
use media_stream::*;
use serde_json::{json, Value};
use switchboard::telephony::token::{RelayClaims, TokenSigner};
use switchboard_actors::audio::mulaw;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

const RIGHT: &str = "The horizon seems extremely distant.";

async fn new_agent(server: &Server, key: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "phone", "name": "Phone agent", "firstMessage": "Hello, thanks for calling.",
               "systemPrompt": "You are a phone agent. Answer in one short sentence.", "maxTokens": 40}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

/// What Twilio saw of the agent.
#[derive(Default)]
struct Heard {
    media_frames: usize,
    marks: usize,
    clears: usize,
    first_media: Option<Duration>,
}

/// Longest wait for the agent's first audio in [`listen_from_first_audio`]: synthesis on a
/// machine busy with other work can take seconds.
const FIRST_AUDIO_LIMIT: Duration = Duration::from_secs(30);

/// Reads the stream for `for_how_long`, playing the agent's audio on the call's `playback`
/// clock (which echoes the marks), and optionally sending caller audio paced at real time
/// (then silence).
async fn converse(
    stream: &mut TwilioStream,
    caller: Option<&[u8]>,
    for_how_long: Duration,
) -> Heard {
    converse_until(stream, caller, for_how_long, false).await
}

/// Listens (sending silence, echoing marks) for `window` from the agent's first audio, which
/// may take up to [`FIRST_AUDIO_LIMIT`] to come: how fast it comes is the session benchmark's
/// business, these tests check what is said.
async fn listen_from_first_audio(stream: &mut TwilioStream, window: Duration) -> Heard {
    converse_until(stream, None, window, true).await
}

async fn converse_until(
    stream: &mut TwilioStream,
    caller: Option<&[u8]>,
    for_how_long: Duration,
    from_first_audio: bool,
) -> Heard {
    let TwilioStream { socket, playback } = stream;
    let started = Instant::now();
    let window_start = |heard: &Heard| match (from_first_audio, heard.first_media) {
        (false, _) => Duration::ZERO,
        (true, Some(first)) => first,
        (true, None) => FIRST_AUDIO_LIMIT.saturating_sub(for_how_long),
    };
    let mut heard = Heard::default();
    let silence = vec![0xFFu8; 160];
    let mut frames = caller
        .map(|c| c.chunks(160).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut chunk = 1u64;
    while started.elapsed() < window_start(&heard) + for_how_long {
        tokio::select! {
            _ = tick.tick() => {
                for name in playback.due(Instant::now()) {
                    if socket.send(mark_echo(&name)).await.is_err() {
                        return heard;
                    }
                }
                let frame = frames.next().unwrap_or(&silence);
                let media = json!({"event": "media", "sequenceNumber": (chunk + 1).to_string(),
                    "streamSid": "MZ00000000000000000000000000000001",
                    "media": {"track": "inbound", "chunk": chunk.to_string(), "timestamp": (chunk * 20).to_string(),
                              "payload": BASE64.encode(frame)}});
                chunk += 1;
                if socket.send(Message::text(media.to_string())).await.is_err() {
                    break;
                }
            }
            message = socket.next() => {
                let Some(Ok(Message::Text(text))) = message else { break };
                let event: Value = serde_json::from_str(&text).unwrap();
                match event["event"].as_str().unwrap() {
                    "media" => {
                        heard.media_frames += 1;
                        playback.media(Instant::now());
                        heard.first_media.get_or_insert(started.elapsed());
                        assert!(!event["media"]["payload"].as_str().unwrap().is_empty());
                        assert_eq!(event["streamSid"], "MZ00000000000000000000000000000001");
                    }
                    "mark" => {
                        heard.marks += 1;
                        playback.mark(event["mark"]["name"].as_str().unwrap(), Instant::now());
                    }
                    "clear" => {
                        heard.clears += 1;
                        for name in playback.clear() {
                            socket.send(mark_echo(&name)).await.unwrap();
                        }
                    }
                    other => panic!("unexpected message {other}"),
                }
            }
        }
    }
    heard
}

#[tokio::test]
async fn a_phone_call_greets_listens_answers_and_is_recorded() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;
    let session_id = placed.session_id;
    let mut stream = TwilioStream::open(
        &placed.stream_url,
        &placed.token,
        "CA00000000000000000000000000000042",
    )
    .await;

    // The greeting arrives first, with marks after its sentences.
    let greeting = listen_from_first_audio(&mut stream, Duration::from_secs(4)).await;
    assert!(
        greeting.media_frames >= 50,
        "greeting frames: {}",
        greeting.media_frames
    );
    // How fast it comes is measured by the session benchmark, not asserted here.
    assert!(greeting.first_media.is_some());
    assert!(greeting.marks >= 1);

    // The caller speaks; the agent answers.
    let speech = caller_speech();
    let answer = converse(&mut stream, Some(&speech), Duration::from_secs(25)).await;
    assert!(
        answer.media_frames >= 25,
        "answer frames: {}",
        answer.media_frames
    );

    let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": "MZ00000000000000000000000000000001",
                      "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": "CA00000000000000000000000000000042"}});
    stream
        .socket
        .send(Message::text(stop.to_string()))
        .await
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(message) = stream.socket.next().await {
            if matches!(message, Ok(Message::Close(_)) | Err(_)) {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the stream closes after stop");

    // The record: by session id and by the call's SID.
    let mut detail = Value::Null;
    for _ in 0..50 {
        let (status, body) = call(server.get(
            "/v1/observability/calls/CA00000000000000000000000000000042",
            &key,
        ))
        .await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "active" {
            detail = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(detail["id"], session_id.as_str());
    assert_eq!(detail["status"], "completed", "{detail}");
    assert_eq!(detail["from"], "+14155550100");
    let turns = detail["turns"].as_array().unwrap();
    let user = turns
        .iter()
        .find(|t| t["speaker"] == "user")
        .expect("a caller turn");
    let wer = word_error_rate(RIGHT, user["text"].as_str().unwrap());
    // An empty text with an `error` is a recognition that missed its deadline (a saturated
    // machine): the detail says which.
    assert!(
        wer <= 0.25,
        "caller turn heard as {:?}: {detail}",
        user["text"]
    );
    assert!(
        turns.iter().filter(|t| t["speaker"] == "agent").count() >= 2,
        "{detail}"
    );
    for turn in turns {
        for field in ["startMs", "endMs", "sttMs", "llmMs", "ttsMs"] {
            assert!(turn[field].is_i64(), "{field} is a number: {turn}");
        }
    }
    assert!(
        detail["metrics"]["totalDurationMs"].as_i64().unwrap() > 5_000,
        "{detail}"
    );

    let (status, list) = call(server.get("/v1/observability/sessions?agentId=phone", &key)).await;
    assert_eq!(status, 200);
    assert_eq!(page_ids(&list), [session_id]);
}

async fn closed_without_audio(socket: &mut Socket) -> bool {
    let outcome = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Text(text)) if text.contains("\"media\"") => return false,
                Ok(Message::Close(_)) | Err(_) => return true,
                _ => {}
            }
        }
        true
    })
    .await;
    outcome.unwrap_or(false)
}

#[tokio::test]
async fn forged_expired_and_reused_tokens_get_no_audio() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;

    let (payload, signature) = placed.token.split_once('.').unwrap();
    let forged = format!("{payload}.{}", signature.chars().rev().collect::<String>());
    let mut socket = open_stream(&placed.stream_url, &forged, "CA1").await;
    assert!(closed_without_audio(&mut socket).await, "a forged token");
    let mut socket = open_stream(&placed.stream_url, "not-a-token", "CA2").await;
    assert!(closed_without_audio(&mut socket).await, "a malformed token");

    // The same claims, signed with the server's own secret, but expired.
    let secret = std::fs::read_to_string(server.storage.data_dir.path().join("relay-secret"))
        .expect("the server wrote its relay secret");
    let signer = TokenSigner::new(secret.trim());
    let mut claims: RelayClaims =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    claims.exp = chrono_now_ms() - 1_000;
    let expired = signer.sign(&claims);
    let mut socket = open_stream(&placed.stream_url, &expired, "CA0").await;
    assert!(closed_without_audio(&mut socket).await, "an expired token");

    // The real token works once.
    let mut first = TwilioStream::open(&placed.stream_url, &placed.token, "CA3").await;
    let heard = listen_from_first_audio(&mut first, Duration::from_secs(1)).await;
    assert!(heard.media_frames > 0, "{}", server.log());
    let mut second = open_stream(&placed.stream_url, &placed.token, "CA4").await;
    assert!(closed_without_audio(&mut second).await, "a reused token");
    // The replay takes nothing from the live call: the node still counts it (and would end
    // it cleanly on shutdown), and it goes on.
    let (_, health) = call(server.get("/health", &key)).await;
    assert_eq!(health["liveSessions"], 1, "{health}");
    let heard = listen_from_first_audio(&mut first, Duration::from_millis(500)).await;
    assert!(heard.media_frames > 0, "the first call goes on");
}

#[tokio::test]
async fn a_relay_token_is_refused_once_the_key_that_placed_the_call_is_revoked() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let (status, second) = call(server.post("/v1/keys", &key, json!({"name": "dialer"}))).await;
    assert_eq!(status, 201, "{second}");
    let dialer = second["key"].as_str().unwrap().to_string();
    let revoked = place_call(&server, &dialer, "phone").await;
    let (status, body) = call(server.delete(
        &format!("/v1/keys/{}", second["id"].as_str().unwrap()),
        &key,
    ))
    .await;
    assert_eq!(status, 204, "{body}");

    assert_refused_as_revoked(&server, &key, &revoked.stream_url, &revoked.token, "CA21").await;
    let (_, health) = call(server.get("/health", &key)).await;
    assert_eq!(health["liveSessions"], 0, "{health}");
    // The developer's other key is untouched: a call it places connects.
    let placed = place_call(&server, &key, "phone").await;
    let mut live = TwilioStream::open(&placed.stream_url, &placed.token, "CA22").await;
    let heard = listen_from_first_audio(&mut live, Duration::from_secs(1)).await;
    assert!(heard.media_frames > 0, "{}", server.log());
}

fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn a_call_that_cannot_start_ends_its_record_as_failed() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    // The agent is deleted between placing the call and the stream opening.
    let placed = place_call(&server, &key, "phone").await;
    let (status, body) = call(server.delete("/v1/agents/phone", &key)).await;
    assert_eq!(status, 204, "{body}");
    let mut socket = open_stream(&placed.stream_url, &placed.token, "CA9").await;
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Error));
    let ended = ended_call(&server, &key, "CA9").await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(ended["endedAt"].is_string(), "{ended}");
    assert!(
        ended["endReason"]
            .as_str()
            .is_some_and(|r| r.starts_with("start_failed")),
        "{ended}"
    );
    let (_, health) = call(server.get("/health", &key)).await;
    assert_eq!(health["liveSessions"], 0, "{health}");
}

#[tokio::test]
async fn a_fragmented_start_opens_the_call() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;

    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;
    let (socket, _) = tokio_tungstenite::connect_async(placed.stream_url.as_str())
        .await
        .expect("the stream connects");
    let mut stream = TwilioStream {
        socket,
        playback: Playback::default(),
    };
    // `start` split over three frames, as a proxy may split it (RFC 6455 §5.4).
    let start = start_message(&placed.token, "CA10").into_bytes();
    let third = start.len() / 3;
    let frames = [
        Frame::message(start[..third].to_vec(), OpCode::Data(Data::Text), false),
        Frame::message(
            start[third..2 * third].to_vec(),
            OpCode::Data(Data::Continue),
            false,
        ),
        Frame::message(
            start[2 * third..].to_vec(),
            OpCode::Data(Data::Continue),
            true,
        ),
    ];
    for frame in frames {
        stream.socket.send(Message::Frame(frame)).await.unwrap();
    }
    let heard = listen_from_first_audio(&mut stream, Duration::from_secs(2)).await;
    assert!(heard.media_frames > 0, "the greeting plays");
}

#[tokio::test]
async fn malformed_messages_are_skipped_and_the_call_goes_on() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, "CA5").await;
    for junk in [
        "{not json".to_string(),
        json!({"event": "media", "media": {"payload": "***not base64***"}}).to_string(),
        json!({"event": "mark", "mark": {"name": "never-sent"}}).to_string(),
        json!({"event": "dance"}).to_string(),
        json!({"event": "media", "sequenceNumber": 7, "media": {"payload": BASE64.encode([0xFFu8; 160]), "chunk": 3}}).to_string(),
    ] {
        stream.socket.send(Message::text(junk)).await.unwrap();
    }
    let heard = listen_from_first_audio(&mut stream, Duration::from_secs(4)).await;
    assert!(
        heard.media_frames >= 50,
        "the greeting still plays: {}",
        heard.media_frames
    );
    // The client vanishing mid-call ends the session cleanly: its record is closed and none
    // of its actors is left running.
    drop(stream);
    let mut ended = Value::Null;
    for _ in 0..100 {
        let (status, detail) = call(server.get("/v1/observability/calls/CA5", &key)).await;
        assert_eq!(status, 200, "{detail}");
        let actors = server.metric("switchboard_session_actors_live").await;
        if detail["status"] != "active" && actors == 0.0 {
            ended = detail;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        ended["endedAt"].is_string(),
        "the session ended and its actors stopped: {ended}"
    );
    assert_eq!(
        server
            .metric("switchboard_sessions_active{transport=\"twilio\"}")
            .await,
        0.0
    );
}

#[tokio::test]
async fn a_ping_is_answered_with_its_payload_while_the_agent_talks() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, "CA9").await;
    let heard = listen_from_first_audio(&mut stream, Duration::from_millis(300)).await;
    assert!(heard.media_frames > 0, "the greeting plays");
    for payload in [&b"still there?"[..], b"", &[0xAB; 125]] {
        stream
            .socket
            .send(Message::Ping(payload.to_vec().into()))
            .await
            .unwrap();
        assert_eq!(
            pong_within(&mut stream.socket, Duration::from_secs(5)).await,
            Some(payload.to_vec())
        );
    }
}

#[tokio::test]
async fn a_caller_that_closes_gets_the_closing_handshake_and_a_broken_frame_a_close_code() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;

    // Mid-call, the client closes: the server answers with the same code (RFC 6455 §5.5.1).
    let placed = place_call(&server, &key, "phone").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, "CA6").await;
    let heard = listen_from_first_audio(&mut stream, Duration::from_millis(500)).await;
    assert!(heard.media_frames > 0, "the call is under way");
    let bye = CloseFrame {
        code: CloseCode::Away,
        reason: "bye".into(),
    };
    stream.socket.send(Message::Close(Some(bye))).await.unwrap();
    assert_eq!(close_code(&mut stream.socket).await, Some(CloseCode::Away));

    // A frame over the socket's size limit ends the call with 1009, not a dropped connection.
    let placed = place_call(&server, &key, "phone").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, "CA7").await;
    listen_from_first_audio(&mut stream, Duration::from_millis(500)).await;
    let huge = Message::text("x".repeat(100_000));
    stream.socket.send(huge).await.unwrap();
    assert_eq!(close_code(&mut stream.socket).await, Some(CloseCode::Size));
    for sid in ["CA6", "CA7"] {
        let ended = ended_call(&server, &key, sid).await;
        assert_eq!(ended["endReason"], "transport_closed", "{sid}: {ended}");
    }
}

#[tokio::test]
async fn a_caller_that_sends_stop_and_drops_the_connection_at_once_is_recorded_as_hanging_up() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;

    // `stop`, `Close` and the end of the connection arrive together, as from a carrier that
    // hangs up without waiting for the closing handshake: the stop still counts.
    for n in 0..5 {
        let sid = format!("CA8{n}");
        let placed = place_call(&server, &key, "phone").await;
        let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, &sid).await;
        let heard = listen_from_first_audio(&mut stream, Duration::from_millis(300)).await;
        assert!(heard.media_frames > 0, "the call is under way");
        let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": STREAM_SID,
                          "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": sid}});
        stream
            .socket
            .feed(Message::text(stop.to_string()))
            .await
            .unwrap();
        stream.socket.close(None).await.unwrap();
        drop(stream);
        let ended = ended_call(&server, &key, &sid).await;
        assert_eq!(ended["endReason"], "hangup", "{sid}: {ended}");
        assert_eq!(ended["status"], "completed", "{sid}: {ended}");
    }
}

#[tokio::test]
async fn the_markup_is_served_as_xml_when_asked_and_requests_are_validated() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let response = server
        .post(
            "/v1/sessions/twilio",
            &key,
            json!({"agentId": "phone", "from": "+14155550100", "to": "+14155550199"}),
        )
        .header("Accept", "text/xml")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/xml"));
    let xml = response.text().await.unwrap();
    assert!(
        xml.contains("<Response><Connect><Stream url=\"ws://"),
        "{xml}"
    );
    assert!(
        xml.contains("/v1/sessions/twilio/stream\"><Parameter name=\"token\""),
        "{xml}"
    );
    // Weights decide, `q` in any case; a header that does not parse gets the default JSON.
    for (accept, xml) in [
        ("application/json;q=0.5, text/xml;Q=0.1", false),
        ("application/json;q=0.5, application/xml;q=0.9", true),
        ("text/xml;q=0", false),
        ("application/json, text/xml;q=2", false),
        ("*/*", false),
    ] {
        let response = server
            .post(
                "/v1/sessions/twilio",
                &key,
                json!({"agentId": "phone", "from": "+14155550100", "to": "+14155550199"}),
            )
            .header("Accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{accept}");
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert_eq!(
            content_type.starts_with("text/xml"),
            xml,
            "{accept}: {content_type}"
        );
    }

    for (body, param) in [
        (json!({"from": "+1", "to": "+2"}), "agentId"),
        (json!({"agentId": "phone", "to": "+2"}), "from"),
        (json!({"agentId": "phone", "from": "+1"}), "to"),
        (
            json!({"agentId": "phone", "from": "+1", "to": "+2", "instanceId": "inst_nope"}),
            "instanceId",
        ),
    ] {
        let (status, error) = call(server.post("/v1/sessions/twilio", &key, body.clone())).await;
        assert_invalid(status, &error, param, &short(&body));
    }
    let (status, error) = call(server.post(
        "/v1/sessions/twilio",
        &key,
        json!({"agentId": "nobody", "from": "+1", "to": "+2"}),
    ))
    .await;
    assert_not_found(status, &error, "an unknown agent");
}

#[tokio::test]
async fn a_phone_call_runs_on_vendor_engines_when_the_agent_names_them() {
    let mock = vendor_mock::VendorMock::start();
    let server = mock.server(&[]).await;
    let key = server.key().to_string();
    // The agent knows the shop's hours: what the caller asks is looked up before the model.
    let (status, collection) =
        call(server.post("/v1/collections", &key, json!({"name": "Shop facts"}))).await;
    assert_eq!(status, 201, "{collection}");
    let collection = collection["id"].as_str().unwrap().to_string();
    let (status, ingested) = call(server.post(
        &format!("/v1/collections/{collection}/ingest"),
        &key,
        json!({"content": "Our opening hours: the shop is open from nine in the morning until six \
                           in the evening, Monday to Saturday, and closed on Sundays."}),
    ))
    .await;
    assert_eq!(status, 201, "{ingested}");
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "phone", "name": "Vendor phone agent", "firstMessage": "Hello, thanks for calling.",
               "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai",
               "systemPrompt": "You are a phone agent.", "collectionId": collection,
               // A patient agent: 900 ms of silence end the caller's turn, not 600.
               "metadata": {"turnTaking": {"endpointSilenceMs": 900}}}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    let placed = place_call(&server, &key, "phone").await;
    let session_id = placed.session_id;
    let mut stream = TwilioStream::open(
        &placed.stream_url,
        &placed.token,
        "CA00000000000000000000000000000077",
    )
    .await;

    // The greeting is the vendor's audio (one second of it), resampled to 8 kHz mu-law.
    let greeting = converse(&mut stream, None, Duration::from_secs(3)).await;
    assert!(
        greeting.media_frames >= 40,
        "greeting frames: {}",
        greeting.media_frames
    );
    let speech = caller_speech();
    let answer = converse(&mut stream, Some(&speech), Duration::from_secs(10)).await;
    assert!(
        answer.media_frames >= 40,
        "answer frames: {}",
        answer.media_frames
    );
    // A key press is a caller turn of its own, answered like words (Twilio's `dtmf` event).
    let dtmf = json!({"event": "dtmf", "streamSid": "MZ00000000000000000000000000000001",
                      "sequenceNumber": "900", "dtmf": {"track": "inbound_track", "digit": "5"}});
    stream
        .socket
        .send(Message::text(dtmf.to_string()))
        .await
        .unwrap();
    let after_key = converse(&mut stream, None, Duration::from_secs(5)).await;
    assert!(
        after_key.media_frames >= 40,
        "frames answering the key press: {}",
        after_key.media_frames
    );
    let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": "MZ00000000000000000000000000000001",
                      "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": "CA00000000000000000000000000000077"}});
    stream
        .socket
        .send(Message::text(stop.to_string()))
        .await
        .unwrap();

    // Every stage went to the vendor with the platform key.
    let transcriptions = mock.seen_at("/audio/transcriptions");
    assert!(!transcriptions.is_empty());
    assert!(transcriptions.iter().all(|s| s.key == "platform-openai"));
    let chats = mock.seen_at("/chat/completions");
    let asked = chats.iter().any(|c| {
        c.body["messages"]
            .to_string()
            .contains("What are your opening hours?")
    });
    assert!(asked, "the model was not given the caller's words");
    // The knowledge comes as a system message right before the caller's words; the system
    // prompt itself stays as the agent wrote it.
    let facts = "open from nine in the morning until six";
    let informed = chats.iter().any(|c| {
        let messages = c.body["messages"].as_array().cloned().unwrap_or_default();
        messages.windows(2).skip(1).any(|pair| {
            pair[0]["role"] == "system"
                && pair[0]["content"]
                    .as_str()
                    .is_some_and(|text| text.contains(facts))
                && pair[1]["role"] == "user"
        })
    });
    assert!(
        informed,
        "the knowledge was not in the model's prompt: {:?}",
        chats
            .iter()
            .map(|c| &c.body["messages"])
            .collect::<Vec<_>>()
    );
    assert!(chats.iter().all(|c| !c.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains(facts)));
    assert!(mock.seen_at("/audio/speech").len() >= 2);

    let detail = ended_session(&server, &key, &session_id).await;
    let turns = detail["turns"].as_array().expect("turns");
    let asked = turns
        .iter()
        .position(|t| t["speaker"] == "user" && t["text"] == "What are your opening hours?")
        .unwrap_or_else(|| panic!("no spoken caller turn: {detail}"));
    let answer = turns[asked + 1..]
        .iter()
        .find(|t| t["speaker"] == "agent")
        .unwrap_or_else(|| panic!("the question was not answered: {detail}"));
    assert_eq!(turns[asked]["endpoint"], "vad", "{detail}");
    let waited = answer["latency"]["endpointMs"].as_i64().unwrap();
    assert!(
        (900..1_000).contains(&waited),
        "the agent's 900 ms endpoint silence ended the turn after {waited} ms: {answer}"
    );
    let key_turn = turns
        .iter()
        .position(|t| t["speaker"] == "user" && t["text"] == "DTMF 5")
        .unwrap_or_else(|| panic!("no key-press turn: {detail}"));
    assert!(
        turns[key_turn + 1..]
            .iter()
            .any(|t| t["speaker"] == "agent"),
        "the key press was not answered: {detail}"
    );
    let pressed = chats.iter().any(|c| {
        c.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "user" && m["content"] == "DTMF 5")
    });
    assert!(pressed, "the model was not told of the key press");
    assert!(
        turns.iter().any(|t| t["speaker"] == "agent"
            && t["text"]
                .as_str()
                .unwrap_or_default()
                .contains("Hello from the mock model")),
        "{detail}"
    );
}

/// One phone call per synthesis vendor beyond the first five, all at once: the greeting is
/// the vendor's audio, asked for as 8 kHz µ-law where the vendor offers it; the caller
/// speaking over a long greeting interrupts it, which hangs up on the vendor's stream.
#[tokio::test]
async fn a_phone_call_speaks_with_every_synthesis_vendor_and_barge_in_hangs_up_on_it() {
    // (vendor, stt provider, where its speech is asked for, whether it streams)
    const VENDORS: &[(&str, &str, &str, bool)] = &[
        ("playht", "openai", "/api/v2/tts/stream", true),
        ("rime", "elevenlabs", "/v1/rime-tts", true),
        ("lmnt", "azure", "/v1/ai/speech/bytes", true),
        ("azure", "azure", "/cognitiveservices/v1", true),
        ("google", "openai", "/v1/text:synthesize", false),
        (
            "huggingface",
            "elevenlabs",
            "/hf-inference/models/facebook/mms-tts-eng",
            false,
        ),
        ("neuphonic", "openai", "/sse/speak/en", true),
        ("inworld", "elevenlabs", "/tts/v1/voice:stream", true),
    ];
    let mock = vendor_mock::VendorMock::start();
    let server = mock.server(&[]).await;
    let key = server.key().to_string();
    let long_key = |vendor: &str| {
        if vendor == "playht" {
            format!("user-7:{vendor}-long")
        } else {
            format!("{vendor}-long")
        }
    };
    for &(vendor, stt, _, streams) in VENDORS {
        let (status, body) = call(server.post(
            "/v1/agents",
            &key,
            json!({"id": format!("phone-{vendor}"), "name": "Vendor voice", "firstMessage": "Hello, thanks for calling.",
                   "sttProvider": stt, "llmProvider": "openai", "ttsProvider": vendor,
                   "systemPrompt": "You are a phone agent."}),
        ))
        .await;
        assert_eq!(status, 201, "{body}");
        if streams {
            // The developer's stored key: the vendor then speaks for thirty seconds.
            let (status, body) = call(server.post(
                "/v1/provider-keys",
                &key,
                json!({"provider": vendor, "apiKey": long_key(vendor)}),
            ))
            .await;
            assert_eq!(status, 201, "{body}");
        }
    }
    let one_call = |i: usize, vendor: &'static str, streams: bool| {
        let server = &server;
        let key = key.clone();
        async move {
            let placed = place_call(server, &key, &format!("phone-{vendor}")).await;
            let sid = format!("CA{:032}", 100 + i);
            let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, &sid).await;
            let greeting = converse(&mut stream, None, Duration::from_secs(3)).await;
            let interrupted = if streams {
                converse(&mut stream, Some(&caller_speech()), Duration::from_secs(6)).await
            } else {
                Heard::default()
            };
            let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": "MZ00000000000000000000000000000001",
                              "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": sid}});
            let _ = stream.socket.send(Message::text(stop.to_string())).await;
            (vendor, greeting, interrupted)
        }
    };
    // Four at a time: the starter tier allows five live sessions.
    let mut heard = Vec::new();
    for (batch, vendors) in VENDORS.chunks(4).enumerate() {
        let calls = vendors
            .iter()
            .enumerate()
            .map(|(i, &(vendor, _, _, streams))| one_call(batch * 4 + i, vendor, streams));
        heard.extend(futures_util::future::join_all(calls).await);
        // The sessions end once their streams stop.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for (vendor, greeting, interrupted) in heard {
        let log = server.log();
        assert!(
            greeting.media_frames >= 40,
            "{vendor}: greeting frames {}; {}",
            greeting.media_frames,
            log.lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let (_, _, path, streams) = *VENDORS.iter().find(|v| v.0 == vendor).unwrap();
        let asked = mock.seen_at(path);
        let first = asked
            .first()
            .unwrap_or_else(|| panic!("{vendor}: nothing asked"));
        if streams {
            assert_eq!(
                first.key,
                long_key(vendor),
                "{vendor}: the stored key is used"
            );
            assert!(
                interrupted.clears >= 1,
                "{vendor}: the caller did not interrupt"
            );
            assert!(
                mock.speech_dropped(&long_key(vendor)),
                "{vendor}: the vendor's stream stayed open"
            );
            assert!(mock.speech_sent(&long_key(vendor)) < 300, "{vendor}");
        }
        // µ-law at 8 kHz, asked of each vendor in its own terms (Hugging Face answers a file).
        let phone_format = match vendor {
            "playht" => first.body["output_format"] == "mulaw" && first.body["sample_rate"] == 8000,
            "rime" => {
                first.header("accept") == Some("audio/x-mulaw")
                    && first.body["samplingRate"] == 8000
            }
            "lmnt" => first.body["format"] == "ulaw" && first.body["sample_rate"] == 8000,
            "azure" => first.header("x-microsoft-outputformat") == Some("raw-8khz-8bit-mono-mulaw"),
            "google" => {
                first.body["audioConfig"]
                    == json!({"audioEncoding": "MULAW", "sampleRateHertz": 8000})
            }
            "neuphonic" => {
                first.body["encoding"] == "pcm_mulaw" && first.body["sampling_rate"] == 8000
            }
            "inworld" => {
                first.body["audio_config"]["audio_encoding"] == "MULAW"
                    && first.body["audio_config"]["sample_rate_hertz"] == 8000
            }
            _ => true,
        };
        assert!(phone_format, "{vendor}: {:?} {}", first.headers, first.body);
    }
    // The batch recognisers heard the callers.
    assert!(!mock.seen_at("/v1/speech-to-text").is_empty());
    assert!(!mock
        .seen_at("/speech/recognition/conversation/cognitiveservices/v1")
        .is_empty());
}

/// The state `/health` gives the embedded `default` voice.
async fn default_voice_state(server: &Server) -> String {
    let (status, health) = call(server.http.get(server.url("/health"))).await;
    assert_eq!(status, 200, "{health}");
    let voices = health["engines"]["tts"]["voices"]
        .as_array()
        .unwrap_or_else(|| panic!("no voices in {health}"));
    let default = voices
        .iter()
        .find(|voice| voice["id"] == "default")
        .unwrap_or_else(|| panic!("no default voice in {health}"));
    default["state"].as_str().unwrap_or_default().to_string()
}

/// Waits up to 20 s for the default voice to be loaded.
async fn default_voice_loads(server: &Server) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if default_voice_state(server).await == "ready" {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn placing_a_call_loads_the_agents_embedded_voice_before_its_stream_opens() {
    for transport in ["twilio", "direct"] {
        let server = Server::start().await;
        let key = server.key().to_string();
        assert_eq!(
            default_voice_state(&server).await,
            "notLoaded",
            "{transport}"
        );
        // An agent that speaks through a vendor loads nothing of ours.
        let (status, body) = call(server.post(
            "/v1/agents",
            &key,
            json!({"id": "vendor", "name": "Vendor voice", "firstMessage": "Hello.",
                   "ttsProvider": "openai"}),
        ))
        .await;
        assert_eq!(status, 201, "{body}");
        new_agent(&server, &key).await;
        let place = |agent: &str| {
            let path = match transport {
                "twilio" => "/v1/sessions/twilio".to_string(),
                _ => format!("/v1/agents/{agent}/session-token"),
            };
            server.post(
                &path,
                &key,
                json!({"agentId": agent, "from": "+15550001111", "to": "+15550002222"}),
            )
        };
        let (status, body) = call(place("vendor")).await;
        assert_eq!(status, 200, "{transport}: {body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            default_voice_state(&server).await,
            "notLoaded",
            "{transport}"
        );
        // The embedded voice loads as soon as its call is placed, with no socket opened.
        let (status, body) = call(place("phone")).await;
        assert_eq!(status, 200, "{transport}: {body}");
        assert!(
            default_voice_loads(&server).await,
            "{transport}: still {}",
            default_voice_state(&server).await
        );
    }
}

/// The wire protocol a live recognizer stand-in speaks.
#[derive(Clone, Copy)]
enum LiveProtocol {
    /// Deepgram's `/v1/listen`: a `Finalize` is answered with a final `Results`.
    Deepgram,
    /// AssemblyAI's `/v3/ws`: `Begin` at once; a `ForceEndpoint` is answered with the
    /// unformatted and then the formatted end-of-turn `Turn`.
    AssemblyAi,
}

/// A live recognizer on 127.0.0.1 speaking `protocol`: the upgrade URIs it was asked on and
/// the audio bytes it got; each end of utterance is answered with the final transcript.
#[allow(clippy::result_large_err)] // the handshake callback's error type is tungstenite's
async fn live_recognizer(
    protocol: LiveProtocol,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    use std::sync::{Arc, Mutex};
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let uris: Arc<Mutex<Vec<String>>> = Arc::default();
    let audio: Arc<Mutex<Vec<u8>>> = Arc::default();
    let (seen, heard) = (uris.clone(), audio.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (seen, heard) = (seen.clone(), heard.clone());
            tokio::spawn(async move {
                let callback = |request: &Request, response: Response| {
                    seen.lock().unwrap().push(request.uri().to_string());
                    Ok(response)
                };
                let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(tcp, callback).await
                else {
                    return;
                };
                if matches!(protocol, LiveProtocol::AssemblyAi) {
                    let begin = json!({"type": "Begin", "id": "s-1", "expires_at": 1_900_000_000});
                    let _ = socket.send(Message::text(begin.to_string())).await;
                }
                let turn = |text: &str, formatted: bool| {
                    json!({"type": "Turn", "turn_order": 0, "turn_is_formatted": formatted,
                           "end_of_turn": true, "transcript": text, "end_of_turn_confidence": 0.9,
                           "words": []})
                    .to_string()
                };
                while let Some(Ok(message)) = socket.next().await {
                    match message {
                        Message::Binary(bytes) => heard.lock().unwrap().extend_from_slice(&bytes),
                        Message::Text(text) if text.contains("ForceEndpoint") => {
                            let plain = RIGHT.to_lowercase().replace('.', "");
                            let _ = socket.send(Message::text(turn(&plain, false))).await;
                            let _ = socket.send(Message::text(turn(RIGHT, true))).await;
                        }
                        Message::Text(text) if text.contains("Finalize") => {
                            let done = json!({"type": "Results", "channel_index": [0, 1], "start": 0.0,
                                "duration": 2.5, "is_final": true, "speech_final": false, "from_finalize": true,
                                "channel": {"alternatives": [{"transcript": RIGHT, "confidence": 0.98, "words": []}]}});
                            let _ = socket.send(Message::text(done.to_string())).await;
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    (address, uris, audio)
}

/// What a phone call whose agent recognises with a live vendor left behind: the upgrade URIs
/// the live recognizer was asked on, the audio bytes it got, the call's record once it ended,
/// and the vendor stand-in the rest of the agent ran on.
struct LiveCall {
    uris: Vec<String>,
    audio: Vec<u8>,
    detail: Value,
    mock: vendor_mock::VendorMock,
    speech: Vec<u8>,
}

impl LiveCall {
    /// The caller's turn as recorded.
    fn user_turn(&self) -> Value {
        self.detail["turns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["speaker"] == "user")
            .cloned()
            .unwrap_or_default()
    }
}

/// Places call `sid` with an agent that recognises with `stt` (whose live host `host_setting`
/// points at a stand-in speaking `protocol`), says one sentence, hangs up, and waits for the
/// call's record to end.
async fn call_with_live_recognizer(
    protocol: LiveProtocol,
    stt: &str,
    host_setting: &str,
    sid: &str,
) -> LiveCall {
    let (address, uris, audio) = live_recognizer(protocol).await;
    let mock = vendor_mock::VendorMock::start();
    let live = format!("http://{address}");
    let server = mock.server(&[(host_setting, &live)]).await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "live-ears", "name": "Live ears", "sttProvider": stt,
               "llmProvider": "openai", "systemPrompt": "You are a phone agent."}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");

    let placed = place_call(&server, &key, "live-ears").await;
    let mut stream = TwilioStream::open(&placed.stream_url, &placed.token, sid).await;
    let speech = caller_speech();
    converse(&mut stream, Some(&speech), Duration::from_secs(6)).await;
    let stop = json!({"event": "stop", "sequenceNumber": "9999", "streamSid": STREAM_SID,
                      "stop": {"accountSid": "AC00000000000000000000000000000001", "callSid": sid}});
    stream
        .socket
        .send(Message::text(stop.to_string()))
        .await
        .unwrap();
    let mut detail = Value::Null;
    for _ in 0..100 {
        let (status, body) =
            call(server.get(&format!("/v1/observability/calls/{sid}"), &key)).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "active" {
            detail = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let uris = uris.lock().unwrap().clone();
    assert!(!uris.is_empty(), "no live stream: {}", server.log());
    let audio = audio.lock().unwrap().clone();
    LiveCall {
        uris,
        audio,
        detail,
        mock,
        speech,
    }
}

#[tokio::test]
async fn a_live_vendor_recognizer_hears_a_phone_line_at_its_own_8_khz() {
    let call = call_with_live_recognizer(
        LiveProtocol::Deepgram,
        "deepgram",
        "SWITCHBOARD__VENDORS__DEEPGRAM__BASE_URL",
        "CA00000000000000000000000000000088",
    )
    .await;
    // The stream was opened for the line's rate, as Deepgram advises for Twilio audio.
    for uri in &call.uris {
        assert!(
            uri.contains("encoding=linear16") && uri.contains("sample_rate=8000"),
            "{uri}"
        );
    }
    // What it heard is the caller's audio as decoded from µ-law, sample for sample (the speech,
    // then the silence that ended the turn): nothing upsampled, nothing lost in between.
    let heard: Vec<i16> = call
        .audio
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert!(heard.len() >= 8_000, "{} samples heard", heard.len());
    let mut sent: Vec<i16> = call.speech.iter().map(|&b| mulaw::decode(b)).collect();
    sent.resize(sent.len() + 6 * 8_000, mulaw::decode(0xFF));
    assert!(
        sent.windows(heard.len()).any(|window| window == heard),
        "the {} samples heard are not a stretch of the {} sent",
        heard.len(),
        sent.len()
    );
    // And the call went on with its transcript.
    assert_eq!(call.user_turn()["text"], RIGHT, "{}", call.detail);
}

/// Every recogniser the catalog lists as live streams the whole call, not only Deepgram: an
/// AssemblyAI agent on its own (no fallbacks) used to be sent utterance by utterance, because
/// one place decided "live" by the name `deepgram`.
#[tokio::test]
async fn an_assemblyai_agent_streams_the_phone_line_live_too() {
    let call = call_with_live_recognizer(
        LiveProtocol::AssemblyAi,
        "assemblyai",
        "SWITCHBOARD__VENDORS__ASSEMBLYAI__ALT_BASE_URL",
        "CA00000000000000000000000000000089",
    )
    .await;
    // The line was streamed to AssemblyAI's live endpoint, and nothing went to its file API.
    assert!(
        call.uris.iter().all(|uri| uri.contains("/v3/ws?")),
        "{:?}",
        call.uris
    );
    assert!(
        call.mock.seen_at("/v2/upload").is_empty(),
        "the call's audio went to the file API"
    );
    assert!(call.audio.len() >= 8_000, "too little audio heard");
    let user = call.user_turn();
    assert_eq!(user["text"], RIGHT, "{}", call.detail);
    assert_eq!(user["providers"]["stt"], "assemblyai", "{}", call.detail);
}
