//! Traces and analysis of real phone calls over the Twilio Media Streams protocol, with the
//! vendors played by the local stand-in (tests/common/vendor_mock.rs): a slow language model
//! named as the root cause, a fallback that served, interruptions (recognised and false)
//! aggregated by interruption quality, the Prometheus metrics, session traces exported to an
//! OpenTelemetry collector (tests/common/otlp_collector.rs), and isolation between
//! developers.

mod common;
#[path = "common/media_stream.rs"]
mod media_stream;
#[path = "common/otlp_collector.rs"]
mod otlp_collector;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use common::*;
use futures_util::{SinkExt, StreamExt};
use media_stream::*;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// A server whose vendors are the stand-in, with extra environment on top.
async fn server_with(mock: &vendor_mock::VendorMock, extra: &[(&str, &str)]) -> Server {
    mock.server(extra).await
}

async fn new_agent(server: &Server, key: &str, body: Value) {
    let (status, created) = call(server.post("/v1/agents", key, body)).await;
    assert_eq!(status, 201, "{created}");
}

/// Longest wait for the agent's first audio frame (a loaded machine starts sessions slowly).
const FIRST_AUDIO_LIMIT: Duration = Duration::from_secs(30);

/// What the caller heard in [`converse`].
struct Heard {
    media: usize,
    clears: usize,
    /// When the stream opened.
    connected: Instant,
    /// What happened when, from the stream's opening, for a failure's message.
    timeline: Vec<String>,
}

impl Heard {
    fn note(&mut self, what: String) {
        let at = self.connected.elapsed().as_millis();
        self.timeline.push(format!("{at:>6} ms {what}"));
    }
}

/// Plays Twilio: streams silence until `cue` after the agent's first audio frame, then the
/// `caller`'s audio (then silence) for `listen` more, in 20 ms frames at real-time pace;
/// plays the agent's audio on Twilio's clock, echoing each mark when the audio before it has
/// played ([`Playback`]); answers what was heard. Cueing on what the caller hears, as a
/// person would, keeps a slow session start from moving the caller's words.
async fn converse(socket: &mut Socket, caller: &[u8], cue: Duration, listen: Duration) -> Heard {
    converse_held(socket, caller, cue, listen, None).await
}

/// The server process stopped (`SIGSTOP`) for `length` from the moment the caller starts to
/// speak, as a saturated machine would hold it back; continued (`SIGCONT`) after, or when
/// dropped.
struct Hold {
    pid: u32,
    length: Duration,
    since: Option<Instant>,
}

impl Hold {
    fn signal(&self, signal: &str) {
        let _ = std::process::Command::new("kill")
            .args([signal, &self.pid.to_string()])
            .status();
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.since.take().is_some() {
            self.signal("-CONT");
        }
    }
}

/// [`converse`], holding the server back as `hold` says.
async fn converse_held(
    socket: &mut Socket,
    caller: &[u8],
    cue: Duration,
    listen: Duration,
    mut hold: Option<Hold>,
) -> Heard {
    let mut heard = Heard {
        media: 0,
        clears: 0,
        connected: Instant::now(),
        timeline: Vec::new(),
    };
    let mut playback = Playback::default();
    let quiet = silence(20);
    let mut frames = caller.chunks(160);
    let mut first_audio: Option<Instant> = None;
    let mut speaking_since: Option<Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut chunk = 1u64;
    loop {
        if speaking_since.is_none() && first_audio.is_some_and(|at| at.elapsed() >= cue) {
            speaking_since = Some(Instant::now());
            heard.note(format!("caller speaks ({} frames heard)", heard.media));
            if let Some(hold) = hold.as_mut() {
                hold.signal("-STOP");
                hold.since = Some(Instant::now());
                heard.note("the server is held".into());
            }
        }
        if let Some(hold) = hold.as_mut() {
            if hold.since.is_some_and(|at| at.elapsed() >= hold.length) {
                hold.since = None;
                hold.signal("-CONT");
                heard.note("the server goes on".into());
            }
        }
        match speaking_since {
            Some(since) if since.elapsed() >= listen => break,
            None => assert!(
                heard.connected.elapsed() < FIRST_AUDIO_LIMIT,
                "no agent audio within {FIRST_AUDIO_LIMIT:?}"
            ),
            _ => {}
        }
        tokio::select! {
            _ = tick.tick() => {
                for name in playback.due(Instant::now()) {
                    heard.note(format!("mark {name} played ({} frames heard)", heard.media));
                    if socket.send(mark_echo(&name)).await.is_err() {
                        return heard;
                    }
                }
                let frame = match speaking_since {
                    Some(_) => frames.next().unwrap_or(&quiet),
                    None => &quiet,
                };
                let message = json!({"event": "media", "streamSid": STREAM_SID,
                    "media": {"track": "inbound", "chunk": chunk.to_string(),
                              "timestamp": (chunk * 20).to_string(), "payload": BASE64.encode(frame)}});
                chunk += 1;
                if socket.send(Message::text(message.to_string())).await.is_err() {
                    heard.note("the stream closed".into());
                    break;
                }
            }
            message = socket.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    other => {
                        heard.note(format!("the stream ended: {other:?}"));
                        break;
                    }
                };
                let event: Value = serde_json::from_str(&text).unwrap();
                match event["event"].as_str().unwrap_or("") {
                    "media" => {
                        heard.media += 1;
                        playback.media(Instant::now());
                        if first_audio.is_none() {
                            first_audio = Some(Instant::now());
                            heard.note("first agent audio".into());
                        }
                    }
                    "mark" => {
                        let name = event["mark"]["name"].as_str().unwrap_or("");
                        heard.note(format!("mark {name} sent ({} frames heard)", heard.media));
                        playback.mark(name, Instant::now());
                    }
                    "clear" => {
                        heard.clears += 1;
                        heard.note(format!("clear ({} frames heard)", heard.media));
                        for name in playback.clear() {
                            if socket.send(mark_echo(&name)).await.is_err() {
                                return heard;
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    heard
}

/// Hangs up and waits for the session's record to be complete.
async fn hang_up(server: &Server, key: &str, mut socket: Socket, session_id: &str) -> Value {
    let stop = json!({"event": "stop", "streamSid": STREAM_SID, "stop": {}});
    socket.send(Message::text(stop.to_string())).await.unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(message) = socket.next().await {
            if matches!(message, Ok(Message::Close(_)) | Err(_)) {
                break;
            }
        }
    })
    .await;
    for _ in 0..100 {
        let (status, body) =
            call(server.get(&format!("/v1/observability/sessions/{session_id}"), key)).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "active" {
            // Turns are written as they finish: give the last ones a moment.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let (_, body) =
                call(server.get(&format!("/v1/observability/sessions/{session_id}"), key)).await;
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the session did not end");
}

#[tokio::test]
async fn a_slow_model_behind_a_failed_one_is_named_as_the_root_cause() {
    let mock = vendor_mock::VendorMock::start();
    // The agent's own model (anthropic) rejects the key; its fallback (openai) answers, but
    // only after 3 s.
    let server = server_with(
        &mock,
        &[
            (
                "SWITCHBOARD__VENDORS__ANTHROPIC__API_KEY",
                "platform-anthropic-bad",
            ),
            (
                "SWITCHBOARD__VENDORS__OPENAI__API_KEY",
                "platform-openai-slow",
            ),
            ("SWITCHBOARD__VENDORS__OPENAI__TIMEOUT_MS", "10000"),
        ],
    )
    .await;
    let key = server.key().to_string();
    new_agent(
        &server,
        &key,
        json!({"id": "phone", "name": "Phone", "firstMessage": "Hello, thanks for calling.",
               "sttProvider": "groq", "llmProvider": "anthropic", "ttsProvider": "elevenlabs",
               "metadata": {"fallbacks": {"llm": ["openai"]}}}),
    )
    .await;
    let placed = place_call(&server, &key, "phone").await;
    let session_id = placed.session_id;
    let call_sid = "CA00000000000000000000000000000901";
    let mut socket = open_stream(&placed.stream_url, &placed.token, call_sid).await;
    // The caller answers once the short greeting has played.
    let heard = converse(
        &mut socket,
        &caller_speech(),
        Duration::from_millis(2_200),
        Duration::from_secs(11),
    )
    .await;
    assert!(
        heard.media > 50,
        "greeting and answer audio: {} frames",
        heard.media
    );
    let detail = hang_up(&server, &key, socket, &session_id).await;

    // The detail: the answer's latency breakdown and the providers that served.
    let turns = detail["turns"].as_array().unwrap();
    let user = turns
        .iter()
        .find(|t| t["speaker"] == "user")
        .unwrap_or_else(|| panic!("a caller turn: {detail}"));
    assert_eq!(user["text"], "What are your opening hours?");
    assert_eq!(user["endpoint"], "vad");
    assert_eq!(user["providers"]["stt"], "groq", "{user}");
    let greeting = &turns[0];
    assert_eq!(greeting["providers"]["tts"], "elevenlabs", "{greeting}");
    assert!(greeting["providers"]["llm"].is_null(), "{greeting}");
    let answer = turns
        .iter()
        .find(|t| t["speaker"] == "agent" && !t["latency"].is_null())
        .unwrap_or_else(|| panic!("a measured answer: {detail}"));
    assert_eq!(
        answer["providers"]["llm"], "openai",
        "the fallback served: {answer}"
    );
    assert_eq!(answer["providers"]["tts"], "elevenlabs");
    let latency = &answer["latency"];
    let llm_ms = latency["llmMs"].as_i64().unwrap();
    assert!(llm_ms >= 3_000, "the slow model: {latency}");
    let parts: i64 = [
        "endpointMs",
        "sttMs",
        "llmMs",
        "toolMs",
        "ttsMs",
        "platformMs",
    ]
    .iter()
    .map(|f| latency[f].as_i64().unwrap())
    .sum();
    assert_eq!(parts, latency["totalMs"].as_i64().unwrap(), "{latency}");
    assert_eq!(latency["totalMs"], answer["latencyMs"]);

    // The root cause, by session and by call: the model's time dominated.
    for path in [
        format!("/v1/observability/sessions/{session_id}/root-cause"),
        format!("/v1/observability/calls/{call_sid}/root-cause"),
    ] {
        let (status, analysis) = call(server.get(&path, &key)).await;
        assert_eq!(status, 200, "{analysis}");
        assert_eq!(analysis["sessionId"], session_id.as_str());
        assert_eq!(analysis["callSid"], call_sid);
        let issues = analysis["issues"].as_array().unwrap();
        let slow = issues
            .iter()
            .find(|i| i["type"] == "high_latency")
            .unwrap_or_else(|| panic!("a high_latency issue: {analysis}"));
        assert_eq!(slow["turn"], answer["index"]);
        let description = slow["description"].as_str().unwrap();
        assert!(
            description.contains("against a target of 1.5 s: LLM time to first sentence 3."),
            "{description}"
        );
        assert!(
            slow["recommendation"].as_str().unwrap().contains("openai"),
            "{slow}"
        );
    }

    // The metrics saw the call, the latency and the refused vendor.
    let response = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = response.text().await.unwrap();
    for expected in [
        "switchboard_sessions_active{transport=\"twilio\"} 0",
        "switchboard_sessions_ended_total{status=\"completed\",transport=\"twilio\"} 1",
        "switchboard_turns_total{outcome=\"completed\",speaker=\"user\"} 1",
        "switchboard_vendor_errors_total{kind=\"upstream\",provider=\"anthropic\"}",
        "switchboard_stage_latency_seconds_count{stage=\"llm\"} 1",
        "switchboard_stage_latency_seconds_bucket{stage=\"llm\",le=\"2\"} 0",
        "switchboard_engine_queue_depth 0",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    assert!(!text.contains(&session_id), "no session ids in metrics");

    // Another developer sees none of it.
    let other = server.storage.create_key("dev_other");
    for path in [
        format!("/v1/observability/sessions/{session_id}"),
        format!("/v1/observability/sessions/{session_id}/root-cause"),
        format!("/v1/observability/calls/{call_sid}"),
        format!("/v1/observability/calls/{call_sid}/root-cause"),
    ] {
        let (status, body) = call(server.get(&path, &other)).await;
        assert_not_found(status, &body, &path);
    }
    let (status, body) =
        call(server.get("/v1/observability/sessions/interruption-quality", &other)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessions"], 0, "{body}");
}

/// A greeting of six sentences: six seconds of the stand-in's audio, long enough to talk over.
const LONG_GREETING: &str = "Hello and welcome to the bakery. We are open every day. \
    We bake fresh bread each morning. We also make cakes to order. \
    Ask me about prices or opening hours. I am here to help you.";

/// The agent `phone`, on the stand-in vendors, with the long greeting.
async fn phone_agent(server: &Server, key: &str) {
    new_agent(
        server,
        key,
        json!({"id": "phone", "name": "Phone", "firstMessage": LONG_GREETING,
               "sttProvider": "groq", "llmProvider": "openai", "ttsProvider": "elevenlabs"}),
    )
    .await;
}

/// Calls agent `phone` and talks over its greeting 1.2 s into it; answers the session's
/// detail.
async fn call_and_interrupt(server: &Server, key: &str, call_sid: &str) -> (String, Value) {
    let placed = place_call(server, key, "phone").await;
    let session_id = placed.session_id;
    let mut socket = open_stream(&placed.stream_url, &placed.token, call_sid).await;
    let heard = converse(
        &mut socket,
        &caller_speech(),
        Duration::from_millis(1_200),
        Duration::from_millis(7_500),
    )
    .await;
    let detail = hang_up(server, key, socket, &session_id).await;
    assert!(
        heard.clears >= 1,
        "the caller's speech cleared the agent's audio; the call:\n{}\nits record: {detail}\n\
         server log:\n{}",
        heard.timeline.join("\n"),
        server.log()
    );
    (session_id, detail)
}

#[tokio::test]
async fn interruptions_are_measured_and_false_ones_found() {
    let mock = vendor_mock::VendorMock::start();
    // The media stream logs the session's events: a failure's message shows them.
    let server = server_with(
        &mock,
        &[("SWITCHBOARD_LOG", "warn,switchboard::transports=debug")],
    )
    .await;
    let key = server.key().to_string();
    phone_agent(&server, &key).await;
    let before = time_now();

    // A real barge-in: the interrupting speech is recognised and answered.
    let (first, detail) =
        call_and_interrupt(&server, &key, "CA00000000000000000000000000000911").await;
    let greeting = &detail["turns"][0];
    assert_eq!(greeting["interrupted"], true, "{detail}");
    let interruption = &greeting["interruption"];
    assert_eq!(interruption["requested"], false, "{interruption}");
    assert_eq!(interruption["falseBargeIn"], false, "{interruption}");
    let detection = interruption["detectionLatencyMs"].as_i64().unwrap();
    assert!((150..=600).contains(&detection), "{interruption}");
    assert!(
        interruption["stopLatencyMs"].as_i64().unwrap() < 200,
        "{interruption}"
    );
    assert_eq!(
        interruption["bleedThroughWords"].as_u64().unwrap() as usize,
        interruption["bleedThrough"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count()
    );
    // What the agent said is cut to what was heard, before the whole greeting.
    let heard = greeting["text"].as_str().unwrap();
    assert!(heard.len() < LONG_GREETING.len(), "{heard}");
    assert!(
        detail["turns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["speaker"] == "user" && t["text"] == "What are your opening hours?"),
        "{detail}"
    );

    // A false one: the developer's own recogniser key hears no words in anything.
    let (status, stored) = call(server.post(
        "/v1/provider-keys",
        &key,
        json!({"provider": "groq", "apiKey": "mine-empty"}),
    ))
    .await;
    assert_eq!(status, 201, "{stored}");
    let (second, detail) =
        call_and_interrupt(&server, &key, "CA00000000000000000000000000000912").await;
    let greeting = &detail["turns"][0];
    assert_eq!(greeting["interruption"]["falseBargeIn"], true, "{detail}");
    let unrecognised = detail["unrecognisedSpeech"].as_array().unwrap();
    assert_eq!(unrecognised[0]["interruptedTurn"], 0, "{detail}");
    assert!(
        detail["turns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["speaker"] != "user"),
        "no caller turn was recognised: {detail}"
    );
    let (status, analysis) = call(server.get(
        &format!("/v1/observability/sessions/{second}/root-cause"),
        &key,
    ))
    .await;
    assert_eq!(status, 200);
    let issues = analysis["issues"].as_array().unwrap();
    assert!(
        issues
            .iter()
            .any(|i| i["type"] == "false_barge_in" && i["turn"] == 0),
        "{analysis}"
    );
    let (_, analysis) = call(server.get(
        &format!("/v1/observability/sessions/{first}/root-cause"),
        &key,
    ))
    .await;
    assert!(
        analysis["issues"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["type"] != "false_barge_in"),
        "{analysis}"
    );

    // The aggregate over both calls, and filters that leave them out.
    let (status, quality) = call(server.get(
        &format!("/v1/observability/sessions/interruption-quality?agentId=phone&from={before}"),
        &key,
    ))
    .await;
    assert_eq!(status, 200, "{quality}");
    assert_eq!(quality["sessions"], 2, "{quality}");
    assert_eq!(quality["interruptions"], 2, "{quality}");
    assert_eq!(quality["falseBargeIns"], 1, "{quality}");
    assert_eq!(quality["falseBargeInRate"], 0.5, "{quality}");
    let p50 = quality["detectionLatencyP50Ms"].as_f64().unwrap();
    let p95 = quality["detectionLatencyP95Ms"].as_f64().unwrap();
    assert!((150.0..=600.0).contains(&p50) && p95 >= p50, "{quality}");
    assert!(quality["stopLatencyP95Ms"].as_f64().unwrap() < 200.0);
    assert!(quality["bleedThroughWordsMean"].is_number(), "{quality}");

    for query in [
        "agentId=nobody".to_string(),
        format!("to={before}"),
        "from=2999-01-01T00:00:00Z".to_string(),
    ] {
        let (status, quality) = call(server.get(
            &format!("/v1/observability/sessions/interruption-quality?{query}"),
            &key,
        ))
        .await;
        assert_eq!(status, 200, "{quality}");
        assert_eq!(quality["sessions"], 0, "{query}: {quality}");
        assert_eq!(quality["interruptions"], 0, "{query}: {quality}");
        assert!(quality["detectionLatencyP50Ms"].is_null(), "{quality}");
        assert!(quality["falseBargeInRate"].is_null(), "{quality}");
    }
    for (query, param) in [
        ("from=yesterday", "from"),
        ("to=2026-13-01T00:00:00Z", "to"),
        ("from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "to"),
    ] {
        let (status, error) = call(server.get(
            &format!("/v1/observability/sessions/interruption-quality?{query}"),
            &key,
        ))
        .await;
        assert_invalid(status, &error, param, query);
    }
    let (status, error) = call(server.get(
        "/v1/observability/sessions/interruption-quality?colour=blue",
        &key,
    ))
    .await;
    assert_eq!(status, 400, "{error}");
}

/// A session held back (the server stopped for a second as the caller starts to talk over
/// the agent, as a saturated machine holds it) reports the interruption as the caller lived
/// it: the detection time counts from when the speech was due, far above the 200 ms sustain
/// that stream time alone would give.
#[tokio::test]
async fn an_interruption_on_a_held_back_server_is_timed_as_the_caller_lived_it() {
    let mock = vendor_mock::VendorMock::start();
    let server = server_with(&mock, &[]).await;
    let key = server.key().to_string();
    phone_agent(&server, &key).await;
    let placed = place_call(&server, &key, "phone").await;
    let mut socket = open_stream(
        &placed.stream_url,
        &placed.token,
        "CA00000000000000000000000000000913",
    )
    .await;
    // The caller's speech begins 360 ms into their audio: within the hold.
    let hold = Hold {
        pid: server.pid(),
        length: Duration::from_millis(1_000),
        since: None,
    };
    let heard = converse_held(
        &mut socket,
        &caller_speech(),
        Duration::from_millis(1_200),
        Duration::from_millis(6_000),
        Some(hold),
    )
    .await;
    let detail = hang_up(&server, &key, socket, &placed.session_id).await;
    let interruption = &detail["turns"][0]["interruption"];
    let detection = interruption["detectionLatencyMs"].as_i64().unwrap_or(0);
    eprintln!("held back 1 s: {interruption}");
    assert!(
        heard.clears >= 1 && detection >= 500,
        "detection {detection} ms: {interruption}; the call:\n{}\nits record: {detail}",
        heard.timeline.join("\n")
    );
}

/// Now as an ISO 8601 time.
fn time_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test]
async fn metrics_can_require_a_token_or_be_turned_off() {
    let server = Server::start_with(
        Storage::fresh().await,
        &[("SWITCHBOARD__METRICS__BEARER_TOKEN", "scrape-secret")],
    )
    .await;
    let key = server.key().to_string();
    let url = server.url("/metrics");
    let (status, error) = call(server.http.get(&url)).await;
    assert_eq!(status, 401, "{error}");
    assert_eq!(error_code(&error), "unauthorized");
    // An API key is not the metrics token.
    let (status, _) = call(server.get("/metrics", &key)).await;
    assert_eq!(status, 401);
    let response = server
        .http
        .get(&url)
        .header("Authorization", "Bearer scrape-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("# TYPE switchboard_stage_latency_seconds histogram"),
        "{text}"
    );
    assert!(text.contains("switchboard_engine_queue_limit 64"), "{text}");

    let off = Server::start_with(
        Storage::fresh().await,
        &[("SWITCHBOARD__METRICS__ENABLED", "false")],
    )
    .await;
    let (status, error) = call(off.http.get(off.url("/metrics"))).await;
    assert_not_found(status, &error, "metrics turned off");

    // The OpenAPI document describes the new routes.
    let (status, doc) = call(server.http.get(server.url("/openapi.json"))).await;
    assert_eq!(status, 200);
    for path in [
        "/metrics",
        "/v1/observability/sessions/{sessionId}/root-cause",
        "/v1/observability/calls/{callId}/root-cause",
        "/v1/observability/sessions/interruption-quality",
    ] {
        assert!(doc["paths"][path]["get"].is_object(), "{path} in OpenAPI");
    }
    let schemas = &doc["components"]["schemas"];
    for field in [
        "interruptions",
        "detectionLatencyP50Ms",
        "stopLatencyP95Ms",
        "bleedThroughWordsMean",
        "falseBargeInRate",
    ] {
        assert!(
            schemas["InterruptionQuality"]["properties"][field].is_object(),
            "{field}"
        );
    }
    assert!(schemas["TurnBody"]["properties"]["interruption"].is_object());
    assert!(schemas["TurnBody"]["properties"]["toolExecutions"].is_object());
}

#[tokio::test]
async fn a_turn_lists_the_tool_calls_it_made() {
    let mock = vendor_mock::VendorMock::start();
    let server = server_with(&mock, &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")]).await;
    let key = server.key().to_string();
    let tool_url = format!("{}/tools/order_status", mock.url);
    new_agent(
        &server,
        &key,
        json!({"id": "desk", "name": "Order desk", "llmProvider": "openai", "ttsProvider": "elevenlabs",
               "systemPrompt": "You help customers with their orders.",
               "metadata": {"tools": [{"name": "order_status", "description": "Look up an order",
                   "url": tool_url, "timeoutMs": 2000,
                   "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                  "required": ["orderId"]}}]}}),
    )
    .await;
    let url = server
        .url("/v1/agents/desk/session")
        .replacen("http://", "ws://", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {key}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the direct socket opens");
    socket
        .send(Message::text(
            json!({"type": "text", "text": "Where is my order?"}).to_string(),
        ))
        .await
        .unwrap();
    let mut session_id = String::new();
    let mut tool_result = Value::Null;
    let mut answered = false;
    // The whole answer, however slow a busy machine makes it: the tool's round, the model's
    // second round and the voice.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !answered {
        let Ok(Some(Ok(message))) = tokio::time::timeout_at(deadline, socket.next()).await else {
            break;
        };
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        match event["type"].as_str().unwrap_or("") {
            "session.started" => session_id = event["sessionId"].as_str().unwrap().to_string(),
            "tool.result" => tool_result = event,
            "agent.audio.end" => answered = true,
            _ => {}
        }
    }
    assert_eq!(tool_result["name"], "order_status", "{tool_result}");
    assert!(answered, "the agent answered after its tool call");
    socket
        .send(Message::text(json!({"type": "end"}).to_string()))
        .await
        .unwrap();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(5), socket.next()).await
    {
        if matches!(message, Message::Close(_)) {
            break;
        }
    }

    let detail = ended_session(&server, &key, &session_id).await;
    let turns = detail["turns"].as_array().unwrap();
    assert_eq!(turns[0]["speaker"], "user", "{detail}");
    assert_eq!(turns[0]["endpoint"], "text");
    assert!(
        turns[0]["providers"]["stt"].is_null(),
        "typed: no recogniser"
    );
    // The agent's turn is written before the session's end: a record that has ended holds it.
    assert_eq!(
        turns.len(),
        2,
        "the caller's turn and the agent's: {detail}"
    );
    let answer = &turns[1];
    assert_eq!(answer["providers"]["llm"], "openai", "{answer}");
    let executions = answer["toolExecutions"].as_array().unwrap();
    assert_eq!(executions.len(), 1, "{answer}");
    let execution = &executions[0];
    assert_eq!(execution["name"], "order_status");
    assert_eq!(execution["id"], "call_1");
    assert_eq!(execution["isError"], false);
    assert!(execution["output"].as_str().unwrap().contains("shipped"));
    let arguments: Value = serde_json::from_str(execution["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["orderId"], "ORD-7");
    assert!(execution["durationMs"].as_i64().unwrap() >= 0);
    assert_eq!(detail["metrics"]["toolExecutions"], 1);
    assert!(answer["text"].as_str().unwrap().contains("The tool said"));
}

/// String attributes of an exported span, by key.
fn attribute(span: &Span, key: &str) -> Option<AnyValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone())
        .and_then(|v| v.value)
}

fn int_attribute(span: &Span, key: &str) -> i64 {
    match attribute(span, key) {
        Some(AnyValue::IntValue(v)) => v,
        other => panic!(
            "{key} is not an integer attribute of {}: {other:?}",
            span.name
        ),
    }
}

fn str_attribute(span: &Span, key: &str) -> String {
    match attribute(span, key) {
        Some(AnyValue::StringValue(v)) => v,
        other => panic!(
            "{key} is not a string attribute of {}: {other:?}",
            span.name
        ),
    }
}

/// One answered phone call on vendor engines (groq, openai, elevenlabs): the caller speaks a
/// sentence, is answered and hangs up. Answers the session id and its finished record.
async fn answered_call(server: &Server, call_sid: &str) -> (String, Value) {
    let key = server.key().to_string();
    new_agent(
        server,
        &key,
        json!({"id": "phone", "name": "Phone", "firstMessage": "Hello, thanks for calling.",
               "sttProvider": "groq", "llmProvider": "openai", "ttsProvider": "elevenlabs"}),
    )
    .await;
    let placed = place_call(server, &key, "phone").await;
    let session_id = placed.session_id;
    let mut socket = open_stream(&placed.stream_url, &placed.token, call_sid).await;
    let heard = converse(
        &mut socket,
        &caller_speech(),
        Duration::from_millis(2_200),
        Duration::from_secs(8),
    )
    .await;
    assert!(
        heard.media > 50,
        "greeting and answer audio: {} frames",
        heard.media
    );
    let detail = hang_up(server, &key, socket, &session_id).await;
    (session_id, detail)
}

#[tokio::test]
async fn session_traces_reach_an_opentelemetry_collector() {
    let mock = vendor_mock::VendorMock::start();
    let collector = otlp_collector::Collector::start();
    let server = server_with(
        &mock,
        &[
            ("SWITCHBOARD__OTLP__ENDPOINT", collector.endpoint.as_str()),
            ("SWITCHBOARD__OTLP__BATCH_DELAY_MS", "100"),
            (
                "SWITCHBOARD__OTLP__HEADERS__AUTHORIZATION",
                "Bearer collector-secret",
            ),
        ],
    )
    .await;
    let (session_id, detail) = answered_call(&server, "CA00000000000000000000000000000951").await;

    // Every span of the session, once the root has arrived.
    let hex = session_id.trim_start_matches("ses_");
    let trace_id: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(trace_id.len(), 16, "{session_id}");
    let mut spans: Vec<Span> = Vec::new();
    let mut exports = Vec::new();
    for _ in 0..100 {
        exports = collector.exports();
        spans = exports
            .iter()
            .flat_map(|e| e.request.resource_spans.iter())
            .flat_map(|r| r.scope_spans.iter())
            .flat_map(|s| s.spans.iter().cloned())
            .collect();
        if spans.iter().any(|s| s.name == "session") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!exports.is_empty(), "nothing reached the collector");
    for export in &exports {
        assert_eq!(export.content_type, "application/x-protobuf");
        assert_eq!(export.authorization, "Bearer collector-secret");
        let resource = export.request.resource_spans[0].resource.as_ref().unwrap();
        let service = resource
            .attributes
            .iter()
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| kv.value.clone())
            .and_then(|v| v.value);
        assert_eq!(
            service,
            Some(AnyValue::StringValue("switchboard".into())),
            "{resource:?}"
        );
    }
    assert!(
        spans.iter().all(|s| s.trace_id == trace_id),
        "one trace, named by the session id"
    );

    let root = spans
        .iter()
        .find(|s| s.name == "session")
        .expect("the session span");
    assert!(root.parent_span_id.is_empty(), "the root has no parent");
    assert_eq!(str_attribute(root, "session.id"), session_id);
    assert_eq!(str_attribute(root, "session.transport"), "twilio");
    assert_eq!(str_attribute(root, "session.status"), "completed");
    let recorded_turns = detail["turns"].as_array().unwrap();
    assert_eq!(
        int_attribute(root, "session.turns"),
        recorded_turns.len() as i64
    );

    let turns: Vec<&Span> = spans.iter().filter(|s| s.name == "turn").collect();
    assert_eq!(turns.len(), recorded_turns.len(), "a span per turn");
    for turn in &turns {
        assert_eq!(
            turn.parent_span_id, root.span_id,
            "turns hang off the session"
        );
        assert!(turn.start_time_unix_nano >= root.start_time_unix_nano);
        assert!(turn.end_time_unix_nano <= root.end_time_unix_nano + 50_000_000);
    }
    let user = turns
        .iter()
        .find(|t| str_attribute(t, "turn.speaker") == "user")
        .expect("a caller turn span");
    assert_eq!(str_attribute(user, "stt.provider"), "groq");
    assert_eq!(str_attribute(user, "turn.endpoint"), "vad");

    // The answer: its stages laid end to end inside it, adding up to its latency.
    let recorded = recorded_turns
        .iter()
        .find(|t| t["speaker"] == "agent" && !t["latency"].is_null())
        .unwrap_or_else(|| panic!("an answered turn: {detail}"));
    let answer = turns
        .iter()
        .find(|t| attribute(t, "turn.latency_ms").is_some())
        .expect("an answer span with its latency");
    let latency_ms = int_attribute(answer, "turn.latency_ms");
    assert_eq!(
        latency_ms,
        recorded["latency"]["totalMs"].as_i64().unwrap(),
        "{recorded}"
    );
    let mut stages: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == answer.span_id)
        .collect();
    stages.sort_by_key(|s| s.start_time_unix_nano);
    let names: Vec<&str> = stages.iter().map(|s| s.name.as_str()).collect();
    for stage in ["stt", "llm", "tts"] {
        assert!(names.contains(&stage), "{stage} in {names:?}");
    }
    let llm = stages.iter().find(|s| s.name == "llm").unwrap();
    assert_eq!(str_attribute(llm, "stage.provider"), "openai");
    let tts = stages.iter().find(|s| s.name == "tts").unwrap();
    assert_eq!(str_attribute(tts, "stage.provider"), "elevenlabs");
    let mut at = answer.start_time_unix_nano;
    let mut total_ms = 0;
    for stage in &stages {
        assert_eq!(stage.start_time_unix_nano, at, "{names:?} end to end");
        let ms = int_attribute(stage, "stage.duration_ms");
        assert_eq!(
            stage.end_time_unix_nano - stage.start_time_unix_nano,
            ms as u64 * 1_000_000
        );
        at = stage.end_time_unix_nano;
        total_ms += ms;
    }
    assert_eq!(total_ms, latency_ms, "the stages add up to the latency");
    assert!(at <= answer.end_time_unix_nano);

    // What was said never leaves in a span.
    let said = recorded_turns
        .iter()
        .filter_map(|t| t["text"].as_str())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>();
    assert!(!said.is_empty());
    for span in &spans {
        for kv in &span.attributes {
            if let Some(AnyValue::StringValue(value)) = kv.value.clone().and_then(|v| v.value) {
                assert!(
                    !said.iter().any(|text| value.contains(text)),
                    "{} carries a transcript in {}",
                    span.name,
                    kv.key
                );
            }
        }
    }
}

#[tokio::test]
async fn a_collector_that_is_down_changes_nothing_for_the_call() {
    let mock = vendor_mock::VendorMock::start();
    // A port nobody listens on.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1/traces", listener.local_addr().unwrap())
    };
    let server = server_with(
        &mock,
        &[
            ("SWITCHBOARD__OTLP__ENDPOINT", dead.as_str()),
            ("SWITCHBOARD__OTLP__BATCH_DELAY_MS", "50"),
            ("SWITCHBOARD__OTLP__TIMEOUT_MS", "200"),
        ],
    )
    .await;
    let (_, detail) = answered_call(&server, "CA00000000000000000000000000000952").await;
    let key = server.key().to_string();
    assert_eq!(detail["status"], "completed", "{detail}");
    let turns = detail["turns"].as_array().unwrap();
    assert!(
        turns
            .iter()
            .any(|t| t["speaker"] == "agent" && !t["latency"].is_null()),
        "the caller was answered: {detail}"
    );
    let (status, _) = call(server.get("/health", &key)).await;
    assert_eq!(status, 200);
}
