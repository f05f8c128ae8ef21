#![allow(dead_code)]
//! A local stand-in for the speech and language vendors, speaking each one's documented wire
//! format (reference/protocols.md): OpenAI chat completions (SSE with tool-call deltas),
//! transcriptions, speech and models; Anthropic messages (named SSE events with tool use);
//! ElevenLabs, Deepgram and Cartesia speech; Deepgram pre-recorded transcription. It records
//! every request (path, query, key headers, JSON body) so tests can check what reached it.
//!
//! The key a request carries picks the behaviour: `*-bad` answers 401 with the vendor's error
//! body, `*-limited` 429, `*-slow` waits 3 s before answering, `*-cut` breaks the stream off
//! after a few events, `*-long` streams 200 deltas 20 ms apart (and records when the client
//! hung up), `*-empty` transcribes every clip as no words. Anything else succeeds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub query: String,
    /// The key, from whichever header the vendor uses.
    pub key: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

#[derive(Default)]
pub struct Record {
    pub seen: Mutex<Vec<Seen>>,
    /// Deltas a `*-long` stream has produced, and whether the client hung up on it.
    pub long_sent: AtomicUsize,
    pub long_dropped: AtomicBool,
}

pub struct VendorMock {
    pub url: String,
    pub record: Arc<Record>,
}

impl VendorMock {
    pub fn start() -> VendorMock {
        let record = Arc::new(Record::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = record.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(shared.clone()))
                        .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                        .default_service(web::to(handle))
                })
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
                .unwrap();
            });
        });
        VendorMock { url, record }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.record.seen.lock().unwrap().clone()
    }

    /// Requests to paths ending with `suffix`.
    pub fn seen_at(&self, suffix: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.ends_with(suffix))
            .collect()
    }

    /// Environment that points every vendor at this mock with platform keys.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        for (vendor, base) in [
            ("OPENAI", format!("{}/v1", self.url)),
            ("ANTHROPIC", self.url.clone()),
            ("DEEPGRAM", self.url.clone()),
            ("ELEVENLABS", self.url.clone()),
            ("CARTESIA", self.url.clone()),
            ("GROQ", format!("{}/v1", self.url)),
            ("GOOGLE", self.url.clone()),
        ] {
            env.push((format!("SWITCHBOARD__VENDORS__{vendor}__BASE_URL"), base));
            env.push((
                format!("SWITCHBOARD__VENDORS__{vendor}__API_KEY"),
                format!("platform-{}", vendor.to_lowercase()),
            ));
            env.push((
                format!("SWITCHBOARD__VENDORS__{vendor}__TIMEOUT_MS"),
                "1000".to_string(),
            ));
        }
        // A self-hosted engine: no key at all.
        env.push((
            "SWITCHBOARD__VENDORS__KOKORO__BASE_URL".to_string(),
            format!("{}/v1", self.url),
        ));
        env
    }
}

fn key_of(req: &HttpRequest) -> String {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    header("x-api-key")
        .or_else(|| header("xi-api-key"))
        .or_else(|| header("x-goog-api-key"))
        .or_else(|| {
            header("authorization").map(|v| {
                v.trim_start_matches("Bearer ")
                    .trim_start_matches("Token ")
                    .to_string()
            })
        })
        .unwrap_or_default()
}

async fn handle(req: HttpRequest, body: Bytes, record: web::Data<Arc<Record>>) -> HttpResponse {
    let key = key_of(&req);
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    record.seen.lock().unwrap().push(Seen {
        path: req.path().to_string(),
        query: req.query_string().to_string(),
        key: key.clone(),
        headers: req
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: json.clone(),
    });
    let path = req.path().to_string();
    if key.ends_with("-slow") {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    if key.ends_with("-bad") {
        return error(&path, 401, "Incorrect API key provided.");
    }
    if json["voice"] == "nobody" || json["model_id"] == "nobody" {
        return error(
            &path,
            404,
            "voice_not_found: the voice 'nobody' does not exist",
        );
    }
    if key.ends_with("-limited") {
        return error(&path, 429, "Rate limit reached for requests.");
    }
    if let Some(tool) = path.strip_prefix("/tools/") {
        return match tool {
            "slow" => {
                tokio::time::sleep(Duration::from_secs(3)).await;
                HttpResponse::Ok().json(json!({"status": "late"}))
            }
            "broken" => HttpResponse::InternalServerError().json(json!({"error": "database down"})),
            _ => HttpResponse::Ok().json(json!({"orderId": json["orderId"], "status": "shipped"})),
        };
    }
    if path == "/v1/chat/completions" {
        return openai_chat(&json, &key, record.get_ref().clone());
    }
    if path == "/v1/messages" {
        return anthropic_messages(&json, &key);
    }
    if path.starts_with("/v1beta/models/") && path.ends_with(":streamGenerateContent") {
        return gemini(&json, &key);
    }
    if path == "/v1/audio/speech" {
        return audio(24_000, false, &key);
    }
    if path == "/v1/audio/transcriptions" && key.ends_with("-empty") {
        return HttpResponse::Ok().json(json!({
            "task": "transcribe", "language": "english", "duration": 1.0, "text": "",
            "segments": [], "usage": {"type": "duration", "seconds": 1}
        }));
    }
    if path == "/v1/audio/transcriptions" {
        return HttpResponse::Ok().json(json!({
            "task": "transcribe", "language": "english", "duration": 2.5,
            "text": "What are your opening hours?",
            "segments": [{"id": 0, "seek": 0, "start": 0.0, "end": 2.5,
                          "text": " What are your opening hours?", "tokens": [1, 2],
                          "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.1,
                          "no_speech_prob": 0.01}],
            "usage": {"type": "duration", "seconds": 3}
        }));
    }
    if path == "/v1/models" || path == "/v1/voices" || path == "/v1/projects" || path == "/voices" {
        return HttpResponse::Ok().json(json!({"object": "list", "data": []}));
    }
    if path.starts_with("/v1/text-to-speech/") {
        let ulaw = req.query_string().contains("output_format=ulaw_8000");
        let rate = if ulaw { 8_000 } else { 24_000 };
        return audio(rate, ulaw, &key);
    }
    if path == "/v1/speak" {
        let ulaw = req.query_string().contains("encoding=mulaw");
        return audio(if ulaw { 8_000 } else { 24_000 }, ulaw, &key);
    }
    if path == "/tts/bytes" {
        let ulaw = json["output_format"]["encoding"] == "pcm_mulaw";
        let rate = json["output_format"]["sample_rate"]
            .as_u64()
            .unwrap_or(24_000) as u32;
        return audio(rate, ulaw, &key);
    }
    if path == "/v1/listen" {
        return HttpResponse::Ok().json(json!({
            "metadata": {"request_id": "r1", "duration": 2.5, "channels": 1},
            "results": {"channels": [{"alternatives": [{
                "transcript": "hello there", "confidence": 0.98,
                "words": [{"word": "hello", "start": 0.1, "end": 0.4, "confidence": 0.99, "punctuated_word": "Hello"},
                          {"word": "there", "start": 0.5, "end": 0.9, "confidence": 0.99, "punctuated_word": "there."}]
            }]}]}
        }));
    }
    HttpResponse::NotFound().json(json!({"error": {"message": format!("no route {path}")}}))
}

/// Each vendor's own error body.
fn error(path: &str, status: u16, message: &str) -> HttpResponse {
    let body = if path == "/v1/messages" {
        let kind = if status == 401 {
            "authentication_error"
        } else {
            "rate_limit_error"
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else if path.starts_with("/v1/text-to-speech/") {
        json!({"detail": {"status": "invalid_api_key", "message": message}})
    } else if path.starts_with("/v1beta/") {
        let kind = if status == 401 {
            "UNAUTHENTICATED"
        } else {
            "RESOURCE_EXHAUSTED"
        };
        json!({"error": {"code": status, "message": message, "status": kind}})
    } else if path == "/v1/speak" || path == "/v1/listen" {
        json!({"err_code": "INVALID_AUTH", "err_msg": message})
    } else {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null,
                         "code": if status == 401 { "invalid_api_key" } else { "rate_limit_exceeded" }}})
    };
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).json(body)
}

/// One second of a 440 Hz tone as PCM16 (or µ-law), sent in 10 pieces.
fn audio(rate: u32, ulaw: bool, key: &str) -> HttpResponse {
    let samples: Vec<i16> = (0..rate)
        .map(|i| ((i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 8000.0) as i16)
        .collect();
    let bytes: Vec<u8> = if ulaw {
        samples
            .iter()
            .map(|&s| switchboard_actors::audio::mulaw::encode(s))
            .collect()
    } else {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    };
    let pieces: Vec<Bytes> = bytes
        .chunks(bytes.len() / 10 + 1)
        .map(Bytes::copy_from_slice)
        .collect();
    let cut = key.ends_with("-cut");
    let body = stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if cut && i == 3 {
            Err(std::io::Error::other("cut"))
        } else {
            Ok::<_, std::io::Error>(piece)
        }
    });
    HttpResponse::Ok()
        .content_type("application/octet-stream")
        .streaming(body)
}

fn sse(events: Vec<String>, cut: bool) -> HttpResponse {
    let body = stream::iter(events.into_iter().enumerate()).then(move |(i, event)| async move {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if cut && i == 2 {
            Err(std::io::Error::other("cut"))
        } else {
            Ok::<_, std::io::Error>(Bytes::from(event))
        }
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}

/// The answer a model gives: a tool call when tools are offered and the caller asks about an
/// order, the tool's result read back after it ran, a greeting otherwise.
enum Answer {
    Text(String),
    Tool(&'static str, Value),
}

fn answer(messages: &[Value], offered_tools: bool) -> Answer {
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tool_result = match (&last["role"], &last["content"]) {
        (r, Value::String(content)) if r == "tool" => Some(content.clone()),
        (r, Value::Array(blocks)) if r == "user" => blocks
            .iter()
            .find(|b| b["type"] == "tool_result")
            .map(|b| b["content"].as_str().unwrap_or_default().to_string()),
        _ => None,
    };
    if let Some(result) = tool_result {
        return Answer::Text(format!("The tool said: {result}"));
    }
    let said = last.to_string().to_lowercase();
    if offered_tools && said.contains("order") {
        return Answer::Tool("order_status", json!({"orderId": "ORD-7"}));
    }
    Answer::Text("Hello from the mock model. How can I help?".into())
}

fn openai_chat(body: &Value, key: &str, record: Arc<Record>) -> HttpResponse {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1727346182,
                   "model": "mock", "system_fingerprint": "fp_1",
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        )
    };
    if key.ends_with("-long") {
        let state = (0, record.clone(), DropFlag(record));
        let body = stream::unfold(state, |(i, record, guard)| async move {
            if i >= 200 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            record.long_sent.fetch_add(1, Ordering::SeqCst);
            let event = json!({"choices": [{"index": 0, "delta": {"content": format!("w{i} ")}, "finish_reason": null}]});
            let chunk = Bytes::from(format!("data: {event}\n\n"));
            Some((Ok::<_, std::io::Error>(chunk), (i + 1, record, guard)))
        });
        return HttpResponse::Ok()
            .content_type("text/event-stream")
            .streaming(body);
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match answer(&messages, offered) {
        Answer::Text(text) => {
            for word in text.split_inclusive(' ') {
                events.push(chunk(json!({"content": word}), Value::Null));
            }
            events.push(chunk(json!({}), json!("stop")));
        }
        Answer::Tool(name, arguments) => {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            let text = arguments.to_string();
            let (a, b) = text.split_at(text.len() / 2);
            for part in [a, b] {
                events.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                    Value::Null,
                ));
            }
            events.push(chunk(json!({}), json!("tool_calls")));
        }
    }
    events.push(format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 44, "completion_tokens": 16, "total_tokens": 60}})
    ));
    events.push("data: [DONE]\n\n".into());
    sse(events, key.ends_with("-cut"))
}

fn anthropic_messages(body: &Value, key: &str) -> HttpResponse {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "mock", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 377, "output_tokens": 1}}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    let stop = match answer(&messages, offered) {
        Answer::Text(text) => {
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            for word in text.split_inclusive(' ') {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": word}}),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Answer::Tool(name, arguments) => {
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Let me check."}}),
            ));
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}),
            ));
            let text = arguments.to_string();
            let (a, b) = text.split_at(text.len() / 2);
            for part in ["", a, b] {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ));
            "tool_use"
        }
    };
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 65}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    sse(events, key.ends_with("-cut"))
}

fn gemini(body: &Value, key: &str) -> HttpResponse {
    let contents = body["contents"].as_array().cloned().unwrap_or_default();
    let last = contents.last().cloned().unwrap_or(Value::Null);
    let offered = body["tools"][0]["functionDeclarations"]
        .as_array()
        .is_some_and(|t| !t.is_empty());
    let parts = last["parts"].as_array().cloned().unwrap_or_default();
    let result = parts
        .iter()
        .find_map(|p| p.get("functionResponse").map(|r| r["response"].to_string()));
    let event = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        format!(
            "data: {}\n\n",
            json!({"candidates": [candidate], "modelVersion": "mock",
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 8, "totalTokenCount": 20}})
        )
    };
    let mut events = Vec::new();
    let said = last.to_string().to_lowercase();
    if result.is_none() && offered && said.contains("order") {
        events.push(event(
            json!([{"functionCall": {"name": "order_status", "args": {"orderId": "ORD-7"}}}]),
            Some("STOP"),
        ));
    } else {
        let text = match result {
            Some(result) => format!("The tool said: {result}"),
            None => "Hello from the mock model. How can I help?".to_string(),
        };
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        for (i, word) in words.iter().enumerate() {
            let finish = (i + 1 == words.len()).then_some("STOP");
            events.push(event(json!([{"text": word}]), finish));
        }
    }
    sse(events, key.ends_with("-cut"))
}

/// Sets `long_dropped` when the response body is dropped (the client hung up).
struct DropFlag(Arc<Record>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.long_dropped.store(true, Ordering::SeqCst);
    }
}
