//! The direct agent WebSocket as a browser widget uses it: a session token minted over REST,
//! JSON events and binary PCM16 audio, typed text turns, and a clean end.

mod common;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

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
    // On the playback clock (the default), the client is sent no marks to answer.
    assert!(
        events.iter().all(|e| e["type"] != "audio.mark"),
        "{events:?}"
    );

    type_text(&mut socket, "Say hello back to me.").await;
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

    // A typed turn over 10,000 characters, JSON that is not an object and a mark without a
    // name are each refused with their reason, and none of them starts a turn.
    let too_long = json!({"type": "text", "text": "word ".repeat(2_001)}).to_string();
    for bad in [too_long.as_str(), "[\"text\"]", r#"{"type": "mark"}"#] {
        socket.send(Message::text(bad)).await.unwrap();
    }
    // Three seconds, for an answer that should not come.
    let (events, audio) = read_until(&mut socket, Duration::from_secs(3), |_| false).await;
    assert_eq!(audio, 0, "nothing was answered: {events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["type"] == "error" && e["code"] == "bad_message"),
        "{events:?}"
    );
    let refusals: Vec<&str> = events
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(refusals.len(), 3, "{events:?}");
    assert!(refusals[0].contains("at most 10000"), "{refusals:?}");
    assert_eq!(refusals[1], "messages must be JSON objects");
    assert!(refusals[2].contains("`name`"), "{refusals:?}");

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
    // The scheme's name is case-insensitive, as on every other endpoint.
    let mut request = base.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("bearer {key}").parse().unwrap());
    tokio_tungstenite::connect_async(request)
        .await
        .expect("a lowercase scheme is accepted");
}

type Socket = DirectSocket;

/// Opens the socket with an API key and extra query parameters.
async fn open(server: &Server, key: &str, agent: &str, query: &str) -> Socket {
    open_direct(server, key, agent, query).await
}

/// Sends the caller's typed turn `text` (the `text` event).
async fn type_text(socket: &mut Socket, text: &str) {
    socket
        .send(Message::text(
            json!({"type": "text", "text": text}).to_string(),
        ))
        .await
        .unwrap();
}

/// The first channel of speech fixture `name` as 16-bit samples at `rate`.
fn fixture_at(name: &str, rate: u32) -> Vec<i16> {
    let extension = name.rsplit('.').next();
    let audio = switchboard::media::decode(&fixture(name), extension).unwrap();
    let pcm = switchboard::media::resample(&audio.channels[0], audio.sample_rate, rate);
    pcm.iter()
        .map(|s| (s.clamp(-1.0, 1.0) * 32767.0) as i16)
        .collect()
}

/// The JFK fixture as 16-bit samples at `rate`.
fn jfk_at(rate: u32) -> Vec<i16> {
    fixture_at("jfk.flac", rate)
}

#[tokio::test]
async fn an_opus_session_hears_speech_and_answers_in_opus() {
    use switchboard_actors::audio::{OpusDecoder, OpusEncoder, SampleRate};

    let server = Server::start().await;
    let key = server.key().to_string();
    // JFK pauses for up to 1.2 s between phrases: an agent that waits 2 s before taking its
    // turn hears the sentence as one caller turn, recognised and answered once.
    let agent = json!({"id": "patient", "name": "Patient", "firstMessage": "Hi there!", "maxTokens": 30,
                       "metadata": {"turnTaking": {"endpointSilenceMs": 2000}}});
    let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
    assert_eq!(status, 201, "{body}");
    let mut socket = open(&server, &key, "patient", "encoding=opus&sampleRate=48000").await;

    // The caller: JFK's sentence, then silence, as 20 ms Opus packets at real-time pace.
    let mut encoder = OpusEncoder::new(SampleRate::Hz48000).unwrap();
    let frame = encoder.frame_len();
    let mut speech = jfk_at(48_000);
    speech.resize(speech.len().div_ceil(frame) * frame + 48_000 * 3, 0);
    let packets: Vec<Vec<u8>> = speech
        .chunks_exact(frame)
        .map(|f| encoder.encode(f).unwrap().to_vec())
        .collect();

    let mut decoder = OpusDecoder::new(SampleRate::Hz48000).unwrap();
    let mut agent_samples: Vec<i16> = Vec::new();
    let mut undecodable = 0;
    let mut events: Vec<Value> = Vec::new();
    let mut packets = packets.into_iter();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut answered = false;
    let mut finals = String::new();
    // The caller lets the greeting play to its end before speaking, so how much of it is
    // heard does not depend on when an interruption lands.
    let mut greeted = false;
    while Instant::now() < deadline && !answered {
        tokio::select! {
            _ = tick.tick(), if greeted => {
                if let Some(packet) = packets.next() {
                    socket.send(Message::binary(packet)).await.unwrap();
                }
            }
            message = socket.next() => {
                match message {
                    Some(Ok(Message::Binary(packet))) => match decoder.decode(&packet) {
                        Ok(pcm) => {
                            assert_eq!(pcm.len(), 960, "20 ms packets at 48 kHz");
                            agent_samples.extend_from_slice(pcm);
                        }
                        Err(_) => undecodable += 1,
                    },
                    Some(Ok(Message::Text(text))) => {
                        let event: Value = serde_json::from_str(&text).unwrap();
                        if !greeted && event["type"] == "agent.audio.end" {
                            greeted = true;
                            // Real-time pace from here, not a burst of the ticks missed.
                            tick.reset();
                        }
                        if event["type"] == "transcript.final" {
                            finals.push_str(event["text"].as_str().unwrap_or(""));
                            finals.push(' ');
                        }
                        // An answer after the whole sentence was heard has finished playing
                        // (not one the rest of the caller's speech talked over).
                        answered = event["type"] == "turn.metrics"
                            && event["speaker"] == "agent"
                            && !event["latencyMs"].is_null()
                            && event["interrupted"] == false
                            && finals.to_lowercase().contains("country");
                        events.push(event);
                    }
                    _ => break,
                }
            }
        }
    }
    assert_eq!(undecodable, 0, "every packet the server sent decodes");
    let turns = events
        .iter()
        .filter(|e| e["type"] == "turn.metrics" && e["speaker"] == "user")
        .count();
    assert_eq!(
        turns, 1,
        "the whole sentence is one caller turn: {events:?}"
    );
    let text = events
        .iter()
        .filter(|e| e["type"] == "transcript.final")
        .filter_map(|e| e["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let reference = "And so my fellow Americans, ask not what your country can do for you, \
                     ask what you can do for your country.";
    let wer = word_error_rate(reference, &text);
    assert!(wer <= 0.15, "WER {wer:.2}: {text}");
    assert!(answered, "the agent answered the caller: {events:?}");
    assert!(
        !events.iter().any(|e| e["type"] == "error"),
        "no error: {events:?}"
    );
    // The greeting and the answer, as audible speech.
    assert!(
        agent_samples.len() > 48_000,
        "{} samples of agent audio",
        agent_samples.len()
    );
    let rms = (agent_samples
        .iter()
        .map(|&s| (s as f64).powi(2))
        .sum::<f64>()
        / agent_samples.len() as f64)
        .sqrt();
    assert!(rms > 300.0, "agent audio RMS {rms}");

    // A packet that is not Opus is reported once and the session goes on.
    socket.send(Message::binary(vec![0xFFu8; 3])).await.unwrap();
    type_text(&mut socket, "Thanks.").await;
    let (events, audio) = read_until(&mut socket, Duration::from_secs(30), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["code"], "bad_audio");
    assert!(audio > 0, "still answering after a bad packet");
}

/// Creates agent `talker`, whose greeting is two long sentences; answers the greeting.
async fn new_talker(server: &Server, key: &str) -> &'static str {
    let long = "Thank you for calling the city library. Our opening hours are nine to five on \
                weekdays and ten to two on Saturdays, and the reading room stays open late.";
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": "talker", "name": "Talker", "firstMessage": long, "maxTokens": 30}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
    long
}

#[tokio::test]
async fn a_client_interrupt_clears_the_agent_and_marks_are_answered() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_talker(&server, &key).await;
    let mut socket = open(&server, &key, "talker", "acks=marks").await;

    // Marks arrive with the greeting's sentences; the client answers each as it "plays".
    let mut marks = 0;
    let mut audio_before = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) && marks == 0 {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(Duration::from_secs(20), socket.next()).await
        else {
            break;
        };
        match message {
            Message::Binary(bytes) => audio_before += bytes.len(),
            Message::Text(text) => {
                let event: Value = serde_json::from_str(&text).unwrap();
                if event["type"] == "audio.mark" {
                    marks += 1;
                    let name = event["name"].as_str().unwrap();
                    assert!(!name.is_empty());
                    socket
                        .send(Message::text(
                            json!({"type": "mark", "name": name}).to_string(),
                        ))
                        .await
                        .unwrap();
                }
            }
            _ => {}
        }
    }
    assert!(marks >= 1, "an audio.mark after the first sentence");
    assert!(
        audio_before > 16_000,
        "{audio_before} bytes before the mark"
    );

    // The client stops the agent mid-greeting.
    socket
        .send(Message::text(json!({"type": "interrupt"}).to_string()))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "turn.metrics"
    })
    .await;
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind);
    let clear = position("audio.clear").unwrap_or_else(|| panic!("audio.clear: {events:?}"));
    let end = position("agent.audio.end").unwrap_or_else(|| panic!("audio end: {events:?}"));
    assert!(clear < end, "{events:?}");
    assert_eq!(events[end]["interrupted"], true);
    let metrics = events.last().unwrap();
    assert_eq!(metrics["speaker"], "agent");
    assert_eq!(metrics["interrupted"], true, "{metrics}");
    // The turn keeps only what was played: the first sentence, not the whole greeting.
    let kept = metrics["text"].as_str().unwrap();
    assert!(kept.starts_with("Thank you for calling"), "{kept}");
    assert!(!kept.contains("reading room"), "{kept}");

    // Nothing more of the greeting arrives after the clear.
    let (_, audio_after) = read_until(&mut socket, Duration::from_secs(2), |_| false).await;
    assert_eq!(audio_after, 0, "audio after the interrupt");
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "session.ended"
    })
    .await;
    let ended = events.last().unwrap();
    assert_eq!(ended["type"], "session.ended");
    // The caller never spoke, so no reply latency was measured: null, not "0 ms".
    assert!(ended["avgTurnLatencyMs"].is_null(), "{ended}");
    let (_, sessions) = call(server.get("/v1/observability/sessions?agentId=talker", &key)).await;
    let id = sessions["data"][0]["id"].as_str().unwrap();
    let (status, detail) =
        call(server.get(&format!("/v1/observability/sessions/{id}"), &key)).await;
    assert_eq!(status, 200, "{detail}");
    assert!(detail["metrics"]["avgTurnLatencyMs"].is_null(), "{detail}");
}

/// Sessions list newest first (also as `order=desc`), or oldest first with `order=asc`; a
/// cursor continues either way; another order is a 400 naming the parameter.
#[tokio::test]
async fn sessions_list_newest_first_unless_asked_oldest_first() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut socket = open(&server, &key, "widget", "").await;
        let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
            e["type"] == "session.started"
        })
        .await;
        ids.push(
            events.last().unwrap()["sessionId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        socket
            .send(Message::text(json!({"type": "end"}).to_string()))
            .await
            .unwrap();
        read_until(&mut socket, Duration::from_secs(10), |e| {
            e["type"] == "session.ended"
        })
        .await;
    }
    let listed = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, newest) = call(server.get("/v1/observability/sessions", &key)).await;
    assert_eq!(status, 200, "{newest}");
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(listed(&newest), newest_first);
    let (status, oldest) = call(server.get("/v1/observability/sessions?order=asc", &key)).await;
    assert_eq!(status, 200, "{oldest}");
    assert_eq!(listed(&oldest), ids);
    let (status, first) =
        call(server.get("/v1/observability/sessions?order=asc&limit=2", &key)).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(listed(&first), ids[..2]);
    let cursor = first["nextCursor"].as_str().unwrap();
    let (status, rest) = call(server.get(
        &format!("/v1/observability/sessions?order=asc&limit=2&cursor={cursor}"),
        &key,
    ))
    .await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(listed(&rest), ids[2..]);

    let (status, first) =
        call(server.get("/v1/observability/sessions?order=desc&limit=2", &key)).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(listed(&first), [ids[2].clone(), ids[1].clone()]);
    assert_eq!(first["hasMore"], true, "{first}");
    let cursor = first["nextCursor"].as_str().unwrap();
    let (status, rest) = call(server.get(
        &format!("/v1/observability/sessions?order=desc&limit=2&cursor={cursor}"),
        &key,
    ))
    .await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(listed(&rest), [ids[0].clone()]);
    assert_eq!(rest["hasMore"], false, "{rest}");

    let (status, refused) = call(server.get("/v1/observability/sessions?order=newest", &key)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "order", "{refused}");
}

#[tokio::test]
async fn a_ping_is_answered_with_its_payload() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let mut socket = open(&server, &key, "widget", "").await;
    for payload in [&b"still there?"[..], b"", &[0xAB; 125]] {
        socket
            .send(Message::Ping(payload.to_vec().into()))
            .await
            .unwrap();
        assert_eq!(
            pong_within(&mut socket, Duration::from_secs(5)).await,
            Some(payload.to_vec())
        );
    }
}

#[tokio::test]
async fn a_client_that_closes_gets_the_closing_handshake_and_a_broken_frame_a_close_code() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;

    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    // The client closes: the server answers with the same code (RFC 6455 §5.5.1).
    let mut socket = open(&server, &key, "widget", "").await;
    let bye = CloseFrame {
        code: CloseCode::Away,
        reason: "bye".into(),
    };
    socket.send(Message::Close(Some(bye))).await.unwrap();
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Away));
    // A frame over the socket's size limit: 1009, not a dropped connection.
    let mut socket = open(&server, &key, "widget", "").await;
    socket
        .send(Message::binary(vec![0u8; 100_000]))
        .await
        .unwrap();
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Size));
    // A text frame that is not UTF-8: 1007 (RFC 6455 §7.4.1).
    let mut socket = open(&server, &key, "widget", "").await;
    let garbled = Frame::message(vec![0xff, 0xfe, 0x80], OpCode::Data(Data::Text), true);
    socket.send(Message::Frame(garbled)).await.unwrap();
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Invalid));
}

#[tokio::test]
async fn a_client_that_ends_and_drops_the_connection_at_once_is_recorded_as_hanging_up() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    // `end`, `Close` and the end of the connection arrive together, as from a page that is
    // closing: the `end` still counts.
    for _ in 0..5 {
        let mut socket = open(&server, &key, "widget", "").await;
        let (events, _) = read_until(&mut socket, Duration::from_secs(5), |e| {
            e["type"] == "session.started"
        })
        .await;
        let session = events.last().unwrap()["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        socket
            .feed(Message::text(json!({"type": "end"}).to_string()))
            .await
            .unwrap();
        socket.close(None).await.unwrap();
        drop(socket);
        let ended = ended_session(&server, &key, &session).await;
        assert_eq!(ended["endReason"], "hangup", "{session}: {ended}");
    }
}

#[tokio::test]
async fn unknown_audio_options_are_refused_before_the_upgrade() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    for (query, param) in [
        ("encoding=mp3", "encoding"),
        ("encoding=OPUS", "encoding"),
        ("sampleRate=44100", "sampleRate"),
        ("sampleRate=abc", "sampleRate"),
        ("sampleRate=16000.0", "sampleRate"),
        ("acks=sometimes", "acks"),
    ] {
        let (status, body) =
            call(server.get(&format!("/v1/agents/widget/session?{query}"), &key)).await;
        assert_invalid(status, &body, param, query);
    }
}

#[tokio::test]
async fn a_session_token_opens_one_session_only() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let (status, minted) =
        call(server.post("/v1/agents/widget/session-token", &key, json!({}))).await;
    assert_eq!(status, 200, "{minted}");
    let url = minted["url"].as_str().unwrap().to_string();
    // A plain GET of the URL (a link preview, a health check) is refused and spends nothing.
    let plain = url.replacen("ws://", "http://", 1);
    let response = server.http.get(&plain).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let (_, sessions) = call(server.get("/v1/observability/sessions?agentId=widget", &key)).await;
    assert_eq!(sessions["data"], json!([]), "{sessions}");
    let (mut first, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect("the token opens its session");
    let (events, _) = read_until(&mut first, Duration::from_secs(10), |e| {
        e["type"] == "session.started"
    })
    .await;
    let session = events.last().unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // The same token again — while the first socket is open, and after it has ended — is
    // refused with 401 before any upgrade, and the first session is untouched.
    for moment in ["while the first is open", "after the first ended"] {
        match tokio_tungstenite::connect_async(url.as_str()).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 401, "{moment}");
                let body: Value =
                    serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
                assert_eq!(body["error"]["code"], "unauthorized", "{moment}: {body}");
            }
            Err(other) => panic!("{moment}: expected a 401 refusal, got {other}"),
            Ok(_) => panic!("{moment}: a used session token opened a second session"),
        }
        if moment == "while the first is open" {
            first
                .send(Message::text(json!({"type": "end"}).to_string()))
                .await
                .unwrap();
            read_until(&mut first, Duration::from_secs(10), |e| {
                e["type"] == "session.ended"
            })
            .await;
        }
    }
    // Session records are group-committed behind the call: the end is stored shortly after
    // `session.ended` is sent, so the record is read until it leaves `active` (up to 5 s).
    let mut sessions = Value::Null;
    for _ in 0..50 {
        let (status, page) =
            call(server.get("/v1/observability/sessions?agentId=widget", &key)).await;
        assert_eq!(status, 200, "{page}");
        sessions = page;
        if sessions["data"][0]["status"] != "active" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let data = sessions["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "one session for one token: {sessions}");
    assert_eq!(data[0]["id"], session.as_str());
    assert_eq!(data[0]["status"], "completed", "{sessions}");

    // A fresh token opens a fresh session.
    let (_, again) = call(server.post("/v1/agents/widget/session-token", &key, json!({}))).await;
    let (mut second, _) = tokio_tungstenite::connect_async(again["url"].as_str().unwrap())
        .await
        .expect("a new token opens a new session");
    let (events, _) = read_until(&mut second, Duration::from_secs(10), |e| {
        e["type"] == "session.started"
    })
    .await;
    assert_ne!(events.last().unwrap()["sessionId"], session.as_str());
}

/// The model's `end_conversation` ends a live session: its goodbye plays to the end, then the
/// session ends as `agent_ended` and the socket closes normally.
#[tokio::test]
async fn the_agent_ends_the_session_after_its_goodbye_when_the_model_calls_end_conversation() {
    let mock = vendor_mock::VendorMock::start();
    let server = mock.server(&[]).await;
    let key = server.key().to_string();
    let agent = json!({"id": "closer", "name": "Closer", "firstMessage": null,
                       "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai"});
    let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
    assert_eq!(status, 201, "{body}");
    let mut socket = open(&server, &key, "closer", "sampleRate=16000").await;

    // A turn that does not end the conversation leaves the session open.
    type_text(&mut socket, "Hello there.").await;
    let (events, audio) = read_until(&mut socket, Duration::from_secs(20), |e| {
        e["type"] == "agent.audio.end"
    })
    .await;
    assert!(audio > 0, "{events:?}");
    assert!(
        !events.iter().any(|e| e["type"] == "session.ended"),
        "{events:?}"
    );
    let session = events
        .iter()
        .find(|e| e["type"] == "session.started")
        .and_then(|e| e["sessionId"].as_str())
        .expect("session.started")
        .to_string();

    type_text(&mut socket, "Thanks, goodbye!").await;
    let (events, audio) = read_until(&mut socket, Duration::from_secs(20), |e| {
        e["type"] == "session.ended"
    })
    .await;
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind);
    let tool = events
        .iter()
        .find(|e| e["type"] == "tool.result")
        .unwrap_or_else(|| panic!("no tool result: {events:?}"));
    assert_eq!(tool["name"], "end_conversation", "{tool}");
    assert!(audio > 0, "the goodbye was spoken: {events:?}");
    let (Some(end_of_goodbye), Some(ended)) =
        (position("agent.audio.end"), position("session.ended"))
    else {
        panic!("the goodbye and the end: {events:?}");
    };
    assert!(end_of_goodbye < ended, "{events:?}");
    assert_eq!(events[end_of_goodbye]["interrupted"], false, "{events:?}");
    assert_eq!(events[ended]["reason"], "agent_ended", "{events:?}");
    // The server closes the socket, normally.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(message) = socket.next().await {
            if let Ok(Message::Close(frame)) = message {
                return frame.map(|f| u16::from(f.code));
            }
        }
        None
    })
    .await
    .expect("the socket closes");
    assert_eq!(closed, Some(1000));

    let ended = ended_session(&server, &key, &session).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["endReason"], "agent_ended", "{ended}");
}

/// Revoking an API key also revokes the session tokens it minted and nobody has used yet.
#[tokio::test]
async fn a_session_token_is_refused_once_the_key_that_minted_it_is_revoked() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let (status, minter) =
        call(server.post("/v1/keys", &key, json!({"name": "widget backend"}))).await;
    assert_eq!(status, 201, "{minter}");
    let minter_key = minter["key"].as_str().unwrap();
    let (status, minted) =
        call(server.post("/v1/agents/widget/session-token", minter_key, json!({}))).await;
    assert_eq!(status, 200, "{minted}");
    let (status, body) = call(server.delete(
        &format!("/v1/keys/{}", minter["id"].as_str().unwrap()),
        &key,
    ))
    .await;
    assert_eq!(status, 204, "{body}");

    match tokio_tungstenite::connect_async(minted["url"].as_str().unwrap()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401);
            let body: Value =
                serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
            assert_eq!(body["error"]["code"], "unauthorized", "{body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("revoked"), "{body}");
        }
        Err(other) => panic!("expected a 401 refusal, got {other}"),
        Ok(_) => panic!("a token of a revoked key opened a session"),
    }
    let (_, sessions) = call(server.get("/v1/observability/sessions?agentId=widget", &key)).await;
    assert_eq!(
        sessions["data"],
        json!([]),
        "no session was made: {sessions}"
    );
    // A token the developer's other key mints works.
    let (_, fresh) = call(server.post("/v1/agents/widget/session-token", &key, json!({}))).await;
    tokio_tungstenite::connect_async(fresh["url"].as_str().unwrap())
        .await
        .expect("a token of a live key opens its session");
}

/// A browser whose frames reach the server several at a time (a busy tab, a congested link):
/// PCM16 frames read together reach the session and the recording whole and in order. The
/// engines are the local vendor stand-in, so the test does not wait on embedded inference.
#[tokio::test]
async fn pcm_frames_that_arrive_together_are_heard_and_recorded_whole_and_in_order() {
    let mock = vendor_mock::VendorMock::start();
    let server = mock.server(&[]).await;
    let key = server.key().to_string();
    let agent = json!({"id": "recorded", "name": "Recorded", "firstMessage": null,
                       "sttProvider": "openai", "llmProvider": "openai", "ttsProvider": "openai",
                       "metadata": {"recordDirectSessions": true}});
    let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
    assert_eq!(status, 201, "{body}");
    let mut socket = open(&server, &key, "recorded", "sampleRate=16000").await;

    // JFK's sentence and then silence, as 20 ms frames written seven at a time.
    const BURST: usize = 7;
    let spoken = jfk_at(16_000);
    let mut caller = spoken.clone();
    caller.resize(caller.len().div_ceil(320) * 320 + 16_000 * 2, 0);
    let frames: Vec<Vec<u8>> = caller
        .chunks_exact(320)
        .map(|frame| frame.iter().flat_map(|s| s.to_le_bytes()).collect())
        .collect();
    let mut bursts = frames.chunks(BURST);
    let mut tick = tokio::time::interval(Duration::from_millis(20 * BURST as u64));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut session_id = String::new();
    let mut finals = Vec::new();
    let mut all_sent = false;
    // Until the whole sentence was sent and recognised; the agent's replies are not awaited.
    while Instant::now() < deadline && (!all_sent || finals.is_empty()) {
        tokio::select! {
            _ = tick.tick(), if !all_sent => match bursts.next() {
                Some(burst) => {
                    for frame in burst {
                        socket.feed(Message::binary(frame.clone())).await.unwrap();
                    }
                    socket.flush().await.unwrap();
                }
                None => all_sent = true,
            },
            message = socket.next() => match message {
                Some(Ok(Message::Binary(_))) => {}
                Some(Ok(Message::Text(text))) => {
                    let event: Value = serde_json::from_str(&text).unwrap();
                    assert_ne!(event["type"], "error", "{event}");
                    match event["type"].as_str().unwrap_or("") {
                        "session.started" => session_id = event["sessionId"].as_str().unwrap().into(),
                        "transcript.final" => finals.push(event["text"].as_str().unwrap_or("").to_string()),
                        _ => {}
                    }
                }
                _ => break,
            }
        }
    }
    assert!(all_sent, "the caller's audio was not all sent in time");
    // The caller was heard: its utterances (the sentence has pauses) reached the recognizer.
    assert!(
        !finals.is_empty() && finals.iter().all(|f| f == "What are your opening hours?"),
        "{finals:?}"
    );
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    while let Some(Ok(message)) = socket.next().await {
        if matches!(message, Message::Close(_)) {
            break;
        }
    }

    // The caller's channel of the recording holds the sentence sample for sample, in one piece.
    let wav = loop {
        let response = server
            .get(&format!("/v1/recordings/{session_id}"), &key)
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            break response.bytes().await.unwrap().to_vec();
        }
        assert_eq!(response.status(), 409, "the recording is being finished");
        assert!(Instant::now() < deadline, "the recording never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let reader = hound::WavReader::new(std::io::Cursor::new(&wav)).unwrap();
    assert_eq!(reader.spec().sample_rate, 16_000);
    let samples: Vec<i16> = reader.into_samples::<i16>().map(Result::unwrap).collect();
    let caller_channel: Vec<i16> = samples.iter().step_by(2).copied().collect();
    assert!(
        caller_channel
            .windows(spoken.len())
            .any(|w| w == spoken.as_slice()),
        "the caller's {} samples are not on the recording's {} in one piece",
        spoken.len(),
        caller_channel.len()
    );
}

#[tokio::test]
async fn fragmented_messages_are_put_together_up_to_the_limit() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;

    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    // `end` in two fragments (RFC 6455 §5.4) ends the session like `end` in one.
    let mut socket = open(&server, &key, "widget", "").await;
    let end = json!({"type": "end"}).to_string().into_bytes();
    let (head, tail) = end.split_at(5);
    let first = Frame::message(head.to_vec(), OpCode::Data(Data::Text), false);
    let last = Frame::message(tail.to_vec(), OpCode::Data(Data::Continue), true);
    socket.send(Message::Frame(first)).await.unwrap();
    socket.send(Message::Frame(last)).await.unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "session.ended"
    })
    .await;
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("session.ended")),
        "{events:?}"
    );
    // Fragments adding up to more than one message may hold: 1009, as for one large frame.
    let mut socket = open(&server, &key, "widget", "").await;
    let piece = vec![0u8; 40_000];
    let first = Frame::message(piece.clone(), OpCode::Data(Data::Binary), false);
    let last = Frame::message(piece, OpCode::Data(Data::Continue), true);
    socket.send(Message::Frame(first)).await.unwrap();
    socket.send(Message::Frame(last)).await.unwrap();
    assert_eq!(close_code(&mut socket).await, Some(CloseCode::Size));
}

#[tokio::test]
async fn a_client_that_stops_reading_is_let_go_and_its_session_ended() {
    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    // A client with a small receive buffer that never reads what the server sends.
    let url = server
        .url("/v1/agents/widget/session")
        .replacen("http://", "ws://", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let address = server
        .base
        .trim_start_matches("http://")
        .parse::<std::net::SocketAddr>()
        .unwrap();
    let tcp = tokio::net::TcpSocket::new_v4().unwrap();
    tcp.set_recv_buffer_size(4096).unwrap();
    let tcp = tcp.connect(address).await.unwrap();
    let tcp = tokio_tungstenite::MaybeTlsStream::Plain(tcp);
    let (mut socket, _) = tokio_tungstenite::client_async(request, tcp)
        .await
        .expect("the direct socket opens");
    let (events, _) = read_until(&mut socket, Duration::from_secs(5), |e| {
        e["type"] == "session.started"
    })
    .await;
    let session = events.last().unwrap()["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    // Every unknown message is answered with an error the client never reads, until the
    // server's writes wait on it and it stops reading the client in turn. The client keeps
    // sending: a send that waits may only mean the server was busy for a moment, and a client
    // that went quiet would leave the server nothing more to write.
    let nonsense = json!({"type": "nonsense"}).to_string();
    let flooding = Instant::now();
    let session_path = format!("/v1/observability/sessions/{session}");
    let mut ended = loop {
        let sent = tokio::time::timeout(
            Duration::from_secs(2),
            socket.send(Message::text(nonsense.clone())),
        )
        .await;
        // A send that fails: the server let go of the connection. One that waits: the server
        // is not reading; whether it gave up on the client shows in the session's record.
        if !matches!(sent, Ok(Ok(()))) {
            let (_, detail) = call(server.get(&session_path, &key)).await;
            if detail["status"] != "active" || matches!(sent, Ok(Err(_))) {
                break detail;
            }
        }
        assert!(
            flooding.elapsed() < Duration::from_secs(90),
            "the server never let the client go"
        );
    };
    // The server gives up on the client: the session ends, and its record says how.
    for _ in 0..100 {
        if ended["status"] != "active" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        ended = call(server.get(&session_path, &key)).await.1;
    }
    assert_eq!(ended["endReason"], "transport_closed", "{ended}");
    let (_, health) = call(server.get("/health", &key)).await;
    assert_eq!(health["liveSessions"], 0, "{health}");
    drop(socket);
}

#[tokio::test]
async fn a_session_ended_over_the_agent_records_what_was_heard_of_its_turn() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let long = new_talker(&server, &key).await;
    let mut socket = open(&server, &key, "talker", "").await;
    // About two seconds of the greeting (16 kHz PCM16), then the client ends the session.
    let mut audio = 0;
    let mut session = String::new();
    while audio < 64_000 {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(Duration::from_secs(20), socket.next()).await
        else {
            panic!("the greeting stopped after {audio} bytes");
        };
        match message {
            Message::Binary(bytes) => audio += bytes.len(),
            Message::Text(text) => {
                let event: Value = serde_json::from_str(&text).unwrap();
                if event["type"] == "session.started" {
                    session = event["sessionId"].as_str().unwrap().to_string();
                }
            }
            _ => {}
        }
    }
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    let (events, _) = read_until(&mut socket, Duration::from_secs(10), |e| {
        e["type"] == "session.ended"
    })
    .await;
    let audio_end = events
        .iter()
        .find(|e| e["type"] == "agent.audio.end")
        .unwrap_or_else(|| panic!("no agent.audio.end: {events:?}"));
    assert_eq!(audio_end["interrupted"], true, "{events:?}");
    let ended = ended_session(&server, &key, &session).await;
    let turns = ended["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "{ended}");
    let heard = turns[0]["text"].as_str().unwrap();
    assert_eq!(turns[0]["speaker"], "agent", "{ended}");
    assert_eq!(turns[0]["interrupted"], true, "{ended}");
    assert!(
        !heard.is_empty() && long.starts_with(heard) && heard.len() < long.len(),
        "the words heard before the end: {heard:?}"
    );
}

/// Transcribes JFK's sentence over `POST /v1/transcribe` on the server at `base` (a batch job
/// for the embedded recognizer); answers the status.
async fn transcribe_jfk(base: String, key: String) -> u16 {
    transcribe_file(base, key, fixture("jfk.flac"), "jfk.flac")
        .await
        .0
}

/// Uploads `bytes` as file `name` to `POST /v1/transcribe`: the status and the JSON answer.
async fn transcribe_file(base: String, key: String, bytes: Vec<u8>, name: &str) -> (u16, Value) {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
    );
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/transcribe"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .expect("the request reaches the server");
    let status = response.status().as_u16();
    (status, response.json::<Value>().await.unwrap_or_default())
}

/// A server with one inference worker, its recognizer loaded, and a direct caller of the
/// `listener` agent (no greeting) on a 16 kHz socket.
async fn one_worker_and_a_listening_caller() -> (Server, String, Socket) {
    let env = [("SWITCHBOARD__ENGINES__WORKERS", "1")];
    let server = Server::start_with(Storage::fresh().await, &env).await;
    let key = server.key().to_string();
    let agent =
        json!({"id": "listener", "name": "Listener", "firstMessage": null, "maxTokens": 10});
    let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
    assert_eq!(status, 201, "{body}");
    // Loads the recognizer, so what follows is recognition alone.
    assert_eq!(transcribe_jfk(server.url(""), key.clone()).await, 200);
    let socket = open(&server, &key, "listener", "sampleRate=16000").await;
    (server, key, socket)
}

/// The caller says "And so my fellow Americans", and the turn's final transcript holds
/// "americans".
async fn americans_is_heard(socket: &mut Socket) {
    let text = turn_heard_as(socket, &jfk_at(16_000)[..16_000 * 3]).await;
    assert!(text.contains("americans"), "{text:?}");
}

/// The caller says `samples` (16 kHz) and a second of silence, sent at once; answers the
/// turn's final transcript (within 60 s), lowercased.
async fn turn_heard_as(socket: &mut Socket, samples: &[i16]) -> String {
    let mut turn = samples.to_vec();
    turn.resize(turn.len() + 16_000, 0);
    for frame in turn.chunks_exact(320) {
        let bytes: Vec<u8> = frame.iter().flat_map(|s| s.to_le_bytes()).collect();
        socket.feed(Message::binary(bytes)).await.unwrap();
    }
    socket.flush().await.unwrap();
    let (events, _) = read_until(socket, Duration::from_secs(60), |e| {
        e["type"] == "transcript.final" || e["type"] == "error"
    })
    .await;
    let heard = events
        .iter()
        .find(|e| e["type"] == "transcript.final")
        .unwrap_or_else(|| panic!("the turn was recognised: {events:?}"));
    heard["text"].as_str().unwrap_or("").to_lowercase()
}

/// An agent's `language` may carry a region (`en-US`), which the embedded recognizer hears as
/// its language, or be `auto`, which hears whatever language the caller speaks.
#[tokio::test]
async fn an_agent_hears_its_regional_language_and_an_auto_agent_any_language() {
    let server = Server::start().await;
    let key = server.key().to_string();
    for (id, language) in [("regional", "en-US"), ("polyglot", "auto")] {
        let agent = json!({"id": id, "name": id, "firstMessage": null, "maxTokens": 10,
                           "language": language});
        let (status, body) = call(server.post("/v1/agents", &key, agent)).await;
        assert_eq!(status, 201, "{body}");
    }
    let mut socket = open(&server, &key, "regional", "sampleRate=16000").await;
    americans_is_heard(&mut socket).await;

    // German: the last 8 s of the multilingual fixture.
    let multilingual = fixture_at("multilingual.mp3", 16_000);
    let german = &multilingual[multilingual.len() - 16_000 * 8..];
    let mut socket = open(&server, &key, "polyglot", "sampleRate=16000").await;
    let text = turn_heard_as(&mut socket, german).await;
    let german_words = [
        "und", "der", "die", "das", "ist", "zu", "den", "mit", "nicht", "von",
    ];
    let hits = text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| german_words.contains(w))
        .count();
    assert!(hits >= 2, "not heard as German: {text:?}");
}

#[tokio::test]
async fn a_callers_turn_is_recognised_ahead_of_file_transcriptions_already_waiting() {
    // One inference worker: a job runs only when the one before it is done.
    let (server, key, mut socket) = one_worker_and_a_listening_caller().await;

    // Five file transcriptions wait behind a sixth that runs.
    const WAITING: u64 = 5;
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut batch = tokio::task::JoinSet::new();
    for _ in 0..=WAITING {
        let (base, key, finished) = (server.url(""), key.clone(), finished.clone());
        batch.spawn(async move {
            let status = transcribe_jfk(base, key).await;
            finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            status
        });
    }
    let queued_by = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, health) = call(server.get("/health", &key)).await;
        let pool = &health["engines"]["inferenceQueue"];
        if pool["busy"] == 1 && pool["queued"] == WAITING {
            break;
        }
        assert!(Instant::now() < queued_by, "the jobs never queued: {pool}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    americans_is_heard(&mut socket).await;
    let done_before = finished.load(std::sync::atomic::Ordering::SeqCst);
    // Waiting in line, the turn would have been heard after all six.
    assert!(
        done_before <= 2,
        "the caller's turn waited for {done_before} file transcriptions"
    );
    while let Some(status) = batch.join_next().await {
        assert_eq!(status.unwrap(), 200, "every file transcription finished");
    }
}

/// Mono PCM16 `samples` at `rate` as a WAV file.
fn wav_of(samples: &[i16], rate: u32) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut bytes = std::io::Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut bytes, spec).expect("a WAV writer");
    for &sample in samples {
        writer.write_sample(sample).expect("a sample written");
    }
    writer.finalize().expect("the WAV finished");
    bytes.into_inner()
}

#[tokio::test]
async fn a_callers_turn_is_recognised_between_the_windows_of_a_long_file_transcription() {
    // One inference worker, busy with a file of several 30 s windows when the caller speaks.
    let (server, key, mut socket) = one_worker_and_a_listening_caller().await;

    // Two minutes: JFK ten times, a second of silence after each.
    let jfk = jfk_at(16_000);
    let long: Vec<i16> = (0..10)
        .flat_map(|_| jfk.iter().copied().chain(std::iter::repeat_n(0, 16_000)))
        .collect();
    let (base, upload_key) = (server.url(""), key.clone());
    let file = tokio::spawn(async move {
        transcribe_file(base, upload_key, wav_of(&long, 16_000), "long.wav").await
    });
    let running_by = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, health) = call(server.get("/health", &key)).await;
        if health["engines"]["inferenceQueue"]["busy"] == 1 {
            break;
        }
        assert!(Instant::now() < running_by, "the file never ran: {health}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    americans_is_heard(&mut socket).await;
    let file_done_first = file.is_finished();
    assert!(
        !file_done_first,
        "the caller's turn waited for the whole file"
    );
    let (status, transcript) = file.await.unwrap();
    assert_eq!(status, 200, "{transcript}");
    let text = transcript["text"].as_str().unwrap_or("").to_lowercase();
    assert!(
        text.matches("country").count() >= 16,
        "the file is transcribed whole: {text}"
    );
}

/// The socket's upgrade request as a client writes it by hand, with `extra` header lines.
fn upgrade_request(path: &str, extra: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// A ping frame as a client sends it (masked, RFC 6455 §5.3).
fn masked_ping(payload: &[u8]) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x89, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

#[tokio::test]
async fn a_refused_upgrade_gets_its_whole_answer_and_frames_sent_with_an_accepted_one_are_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::protocol::Role;

    let server = Server::start().await;
    let key = server.key().to_string();
    new_agent(&server, &key).await;
    let url = server.url("");
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let path = "/v1/agents/widget/session";

    // Refused: the error in full, and the connection closed after it.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(&upgrade_request(path, "")).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection")
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("\r\nconnection: close"),
        "{head}"
    );
    let body: Value = serde_json::from_str(body).expect("a JSON error");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Authorization")),
        "{body}"
    );

    // Accepted: a ping written with the handshake, before the client has its answer.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = upgrade_request(path, &format!("Authorization: Bearer {key}\r\n"));
    request.extend_from_slice(&masked_ping(b"sent with the handshake"));
    tcp.write_all(&request).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(tcp.read_u8().await.expect("the answer's head"));
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
        tokio_tungstenite::MaybeTlsStream::Plain(tcp),
        Role::Client,
        None,
    )
    .await;
    assert_eq!(
        pong_within(&mut socket, Duration::from_secs(5)).await,
        Some(b"sent with the handshake".to_vec())
    );
}
