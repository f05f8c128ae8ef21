#![allow(dead_code)]
//! A local stand-in for the speech and language vendors, speaking each one's documented wire
//! format (reference/protocols.md and the pages cited in each adapter): OpenAI chat
//! completions (SSE with tool-call deltas), transcriptions, speech and models; Anthropic
//! messages (named SSE events with tool use); Gemini; speech from ElevenLabs, Deepgram,
//! Cartesia, PlayHT, Rime, LMNT, Azure (SSML in, raw audio out), Google Cloud TTS (one JSON
//! document, base64 WAV), Hugging Face (a whole WAV file), Neuphonic (SSE, base64 pieces) and
//! Inworld (JSON lines, base64 WAV pieces); transcription from Deepgram, AssemblyAI (upload,
//! transcript, polling), ElevenLabs Scribe and Azure short audio. It records every request
//! (path, query, key headers, JSON or text body) so tests can check what reached it.
//!
//! The key a request carries picks the behaviour: `*-extract` has the chat model answer with
//! the sentence of its system messages' `Facts:` that shares the most words with the caller's
//! question (a reader that never invents, so what it measures is whether retrieval put the
//! answer in the prompt), `*-invent` has it answer with a phone number and a price it was
//! never given, `*-bad` answers 401 with the vendor's error
//! body, `*-limited` 429, `*-down` 503, `*-slow` waits 3 s before answering, `*-cut` breaks
//! the stream off after a few events, `*-long` streams 200 deltas 20 ms apart (and records
//! when the client hung up); for speech, `*-long` streams 30 s of audio at real-time pace,
//! counting the pieces sent and recording the key when the client hangs up; `*-empty`
//! transcribes every clip as no words. Anything else succeeds.
//!
//! Asked to review a finished call (a system prompt that starts "You review the transcript of
//! a finished phone call"), the chat model answers from the transcript it was given: a summary
//! quoting the caller's words, "Yes" to a success question when the caller mentioned an order
//! (else "No"), and a fenced JSON object for an extraction, each schema property filled by its
//! type (a string with the caller's first line, an integer with the number of caller lines, a
//! boolean with true).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine as _;
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
    /// The body as text when it is not JSON (SSML), else empty.
    pub text: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
pub struct Record {
    pub seen: Mutex<Vec<Seen>>,
    /// Deltas a `*-long` stream has produced, and whether the client hung up on it.
    pub long_sent: AtomicUsize,
    pub long_dropped: AtomicBool,
    /// Pieces of `*-long` speech sent, by key; keys whose long speech the client hung up on.
    pub speech_sent: Mutex<BTreeMap<String, usize>>,
    pub speech_dropped: Mutex<Vec<String>>,
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

    /// Pieces of long speech sent so far with `key`.
    pub fn speech_sent(&self, key: &str) -> usize {
        self.record
            .speech_sent
            .lock()
            .unwrap()
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// Whether the client hung up on the long speech stream sent with `key`.
    pub fn speech_dropped(&self, key: &str) -> bool {
        self.record
            .speech_dropped
            .lock()
            .unwrap()
            .iter()
            .any(|k| k == key)
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

    /// A fresh server with every vendor pointed at this mock ([`env`](Self::env)), and
    /// `overrides` set on top of that (replacing a variable of the same name).
    pub async fn server(&self, overrides: &[(&str, &str)]) -> crate::common::Server {
        let mut env = self.env();
        env.retain(|(name, _)| !overrides.iter().any(|(other, _)| other == name));
        env.extend(
            overrides
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        crate::common::Server::start_with(crate::common::Storage::fresh().await, &env).await
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
            ("ASSEMBLYAI", self.url.clone()),
            ("AZURE", self.url.clone()),
            ("PLAYHT", format!("{}/api/v2", self.url)),
            ("RIME", self.url.clone()),
            ("LMNT", self.url.clone()),
            ("HUGGINGFACE", self.url.clone()),
            ("NEUPHONIC", self.url.clone()),
            ("INWORLD", self.url.clone()),
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
        // Vendors with a second host: the same stand-in.
        for vendor in ["GOOGLE", "AZURE", "ASSEMBLYAI", "HUGGINGFACE"] {
            env.push((
                format!("SWITCHBOARD__VENDORS__{vendor}__ALT_BASE_URL"),
                self.url.clone(),
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
    // PlayHT's two headers make one key, `<user id>:<secret>`.
    if let (Some(user), Some(secret)) = (header("x-user-id"), header("authorization")) {
        return format!("{user}:{secret}");
    }
    header("x-api-key")
        .or_else(|| header("xi-api-key"))
        .or_else(|| header("x-goog-api-key"))
        .or_else(|| header("ocp-apim-subscription-key"))
        .or_else(|| {
            header("authorization").map(|v| {
                v.trim_start_matches("Bearer ")
                    .trim_start_matches("Token ")
                    .trim_start_matches("Basic ")
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
        text: if json.is_null() {
            String::from_utf8_lossy(&body[..body.len().min(4096)]).to_string()
        } else {
            String::new()
        },
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
    if key.ends_with("-down") {
        return error(&path, 503, "The service is temporarily overloaded.");
    }
    if let Some(response) = speech_vendors(&req, &json, &body, &key, record.get_ref()) {
        return response;
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
        return speech(24_000, false, &key, record.get_ref(), Wrap::Raw);
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
        return speech(rate, ulaw, &key, record.get_ref(), Wrap::Raw);
    }
    if path == "/v1/speak" {
        let ulaw = req.query_string().contains("encoding=mulaw");
        return speech(
            if ulaw { 8_000 } else { 24_000 },
            ulaw,
            &key,
            record.get_ref(),
            Wrap::Raw,
        );
    }
    if path == "/tts/bytes" {
        let ulaw = json["output_format"]["encoding"] == "pcm_mulaw";
        let rate = json["output_format"]["sample_rate"]
            .as_u64()
            .unwrap_or(24_000) as u32;
        return speech(rate, ulaw, &key, record.get_ref(), Wrap::Raw);
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
    } else if path.starts_with("/api/v2/") {
        json!({"error_message": message, "error_id": "UNAUTHORIZED"})
    } else if path.starts_with("/tts/v1/") {
        json!({"code": if status == 401 { 16 } else { 8 }, "message": message, "details": []})
    } else if path.starts_with("/sse/speak/") {
        json!({"status_code": status, "errors": [message]})
    } else if path.starts_with("/v2/")
        || path.starts_with("/hf-inference/")
        || path.starts_with("/v1/ai/")
        || path == "/v1/rime-tts"
    {
        json!({"error": message})
    } else {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null,
                         "code": if status == 401 { "invalid_api_key" } else { "rate_limit_exceeded" }}})
    };
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).json(body)
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
/// order (`order_status`) or says goodbye (`end_conversation`), the tool's result read back
/// after it ran, a greeting otherwise. A system prompt with `[call:NAME]` has the model call
/// that phone-call tool on the caller's words, when it is offered: `end_call`,
/// `transfer_call` (to the first person it lists) or `send_dtmf` (keys `1w2#`).
enum Answer {
    Text(String),
    Tool(&'static str, Value),
}

fn answer(messages: &[Value], tools: &Value) -> Answer {
    if let Some(review) = review_call(messages) {
        return Answer::Text(review);
    }
    let offered_tools = tools.as_array().is_some_and(|t| !t.is_empty());
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
    if let Some(call_tool) = phone_call_tool(messages, tools) {
        return call_tool;
    }
    let said = last.to_string().to_lowercase();
    if offered_tools && said.contains("goodbye") {
        return Answer::Tool("end_conversation", json!({}));
    }
    if offered_tools && said.contains("order") {
        return Answer::Tool("order_status", json!({"orderId": "ORD-7"}));
    }
    Answer::Text("Hello from the mock model. How can I help?".into())
}

/// The answer to a question about a finished call's transcript, when that is what was asked.
fn review_call(messages: &[Value]) -> Option<String> {
    let system = messages.iter().find(|m| m["role"] == "system")?["content"].as_str()?;
    if !system.starts_with("You review the transcript of a finished phone call") {
        return None;
    }
    let asked = messages.iter().rev().find(|m| m["role"] == "user")?["content"].as_str()?;
    let transcript = asked.strip_prefix("Transcript:\n")?.split("\n\n").next()?;
    let caller: Vec<&str> = transcript
        .lines()
        .filter_map(|line| line.strip_prefix("Caller: "))
        .collect();
    if asked.contains("Summarize the call") {
        return Some(format!(
            "Summary: The caller said \"{}\".",
            caller.join(" ")
        ));
    }
    if asked.contains("Did the call succeed?") {
        let ordered = caller
            .iter()
            .any(|line| line.to_lowercase().contains("order"));
        return Some(if ordered {
            "Yes. The caller gave an order number.".into()
        } else {
            "No. The caller gave no order number.".into()
        });
    }
    let schema = asked.split("JSON Schema:\n").nth(1)?.split("\n\n").next()?;
    let schema: Value = serde_json::from_str(schema).ok()?;
    let fields: serde_json::Map<String, Value> = schema["properties"]
        .as_object()?
        .iter()
        .filter_map(|(name, property)| {
            let value = match property["type"].as_str()? {
                "string" => json!(caller.first().copied().unwrap_or_default()),
                "integer" => json!(caller.len()),
                "boolean" => json!(true),
                _ => return None,
            };
            Some((name.clone(), value))
        })
        .collect();
    Some(format!("```json\n{}\n```", Value::Object(fields)))
}

/// The sentence of the system messages' `Facts:` sharing the most words with the last
/// user message (at least two, or all of a shorter question's), else "I don't have that
/// information".
fn extract(messages: &[Value]) -> String {
    const STOP: [&str; 24] = [
        "the", "and", "you", "your", "what", "how", "much", "does", "for", "can", "are", "is",
        "do", "have", "when", "where", "which", "who", "there", "with", "this", "that", "our",
        "cost",
    ];
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .map(|w| w.to_lowercase())
            .filter(|w| w.len() >= 3 && !STOP.contains(&w.as_str()))
            .map(|w| w.strip_suffix('s').map(str::to_string).unwrap_or(w))
            .collect()
    };
    let content = |m: &Value| m["content"].as_str().unwrap_or_default().to_string();
    // The facts come in a system message of their own, before the question.
    let system: String = messages
        .iter()
        .filter(|m| m["role"] == "system")
        .map(content)
        .collect::<Vec<_>>()
        .join("\n\n");
    let question = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(content)
        .unwrap_or_default();
    let asked = words(&question);
    // The facts run from `Facts:` to the instruction after them.
    let facts = system.split("Facts:").nth(1).unwrap_or_default();
    let facts = facts
        .split("\n\nAnswer the caller")
        .next()
        .unwrap_or_default();
    let best = facts
        .split(['\n', '?', '!'])
        .flat_map(|line| line.split(". "))
        .map(|sentence| sentence.trim().trim_start_matches("- "))
        .filter(|sentence| !sentence.is_empty())
        .map(|sentence| {
            let have = words(sentence);
            (asked.iter().filter(|w| have.contains(w)).count(), sentence)
        })
        .max_by_key(|(shared, _)| *shared);
    match best {
        Some((shared, sentence)) if shared >= asked.len().clamp(1, 2) => {
            format!("{}.", sentence.trim().trim_end_matches('.'))
        }
        _ => "I'm sorry, I don't have that information.".into(),
    }
}

/// The phone-call tool a `[call:NAME]` system prompt asks for, when it is offered.
fn phone_call_tool(messages: &[Value], tools: &Value) -> Option<Answer> {
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let offered = |name: &str| {
        tools
            .as_array()?
            .iter()
            .find(|t| t["function"]["name"] == name)
            .cloned()
    };
    let asked = ["end_call", "transfer_call", "send_dtmf"]
        .into_iter()
        .find(|name| system.contains(&format!("[call:{name}]")))?;
    let tool = offered(asked)?;
    Some(match asked {
        "end_call" => Answer::Tool("end_call", json!({})),
        "send_dtmf" => Answer::Tool("send_dtmf", json!({"digits": "1w2#"})),
        _ => {
            let target = tool["function"]["parameters"]["properties"]["target"]["enum"][0].clone();
            Answer::Tool(
                "transfer_call",
                json!({"target": target, "summary": "The caller asks about opening hours."}),
            )
        }
    })
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
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let answer = if key.ends_with("-extract") {
        Answer::Text(extract(&messages))
    } else if key.ends_with("-invent") {
        Answer::Text(
            "Thanks for asking, happy to help with that. For emergencies call 950-328-7644, \
             a visit is $35 to $40. Anything else?"
                .into(),
        )
    } else {
        answer(&messages, &body["tools"])
    };
    match answer {
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
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "mock", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 377, "output_tokens": 1}}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    let stop = match answer(&messages, &body["tools"]) {
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

/// The speech vendors added after the first five: synthesis in each one's framing, and
/// AssemblyAI, ElevenLabs Scribe and Azure recognition. `None` when the path is none of theirs.
fn speech_vendors(
    req: &HttpRequest,
    json: &Value,
    body: &[u8],
    key: &str,
    record: &Arc<Record>,
) -> Option<HttpResponse> {
    let path = req.path();
    let text = String::from_utf8_lossy(body);
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let rate_of = |value: &Value| value.as_u64().unwrap_or(24_000) as u32;
    let unknown_voice = |voice: &Value| voice == "nobody";
    let response = match path {
        // PlayHT: `output_format` raw or mulaw.
        "/api/v2/tts/stream" => {
            if unknown_voice(&json["voice"]) {
                return Some(error(path, 400, "voice 'nobody' not found"));
            }
            let ulaw = json["output_format"] == "mulaw";
            speech(rate_of(&json["sample_rate"]), ulaw, key, record, Wrap::Raw)
        }
        // Rime: the Accept header picks the format.
        "/v1/rime-tts" => {
            if unknown_voice(&json["speaker"]) {
                return Some(error(path, 400, "speaker 'nobody' is not a valid speaker"));
            }
            let ulaw = header("accept") == "audio/x-mulaw";
            speech(rate_of(&json["samplingRate"]), ulaw, key, record, Wrap::Raw)
        }
        // LMNT: `format` raw or ulaw.
        "/v1/ai/speech/bytes" => {
            if unknown_voice(&json["voice"]) {
                return Some(error(path, 400, "Voice 'nobody' not found"));
            }
            let ulaw = json["format"] == "ulaw";
            speech(rate_of(&json["sample_rate"]), ulaw, key, record, Wrap::Raw)
        }
        // Azure: SSML in, the output format in a header.
        "/cognitiveservices/v1" => {
            if !text.starts_with("<speak") || text.contains("name=\"nobody\"") {
                return Some(HttpResponse::BadRequest().finish());
            }
            let format = header("x-microsoft-outputformat");
            let (rate, ulaw) = match format.as_str() {
                "raw-8khz-8bit-mono-mulaw" => (8_000, true),
                "raw-16khz-16bit-mono-pcm" => (16_000, false),
                "raw-24khz-16bit-mono-pcm" => (24_000, false),
                "raw-48khz-16bit-mono-pcm" => (48_000, false),
                _ => return Some(HttpResponse::BadRequest().finish()),
            };
            speech(rate, ulaw, key, record, Wrap::Raw)
        }
        "/speech/recognition/conversation/cognitiveservices/v1" => {
            HttpResponse::Ok().json(json!({
                "RecognitionStatus": "Success", "Offset": 1_000_000, "Duration": 25_000_000,
                "DisplayText": "What are your opening hours?",
                "NBest": [{"Confidence": 0.97, "Lexical": "what are your opening hours",
                           "ITN": "what are your opening hours", "MaskedITN": "what are your opening hours",
                           "Display": "What are your opening hours?",
                           "Words": [{"Word": "what", "Offset": 1_000_000, "Duration": 3_000_000}]}]
            }))
        }
        // Google Cloud TTS: one JSON document with base64 WAV.
        "/v1/text:synthesize" => {
            if unknown_voice(&json["voice"]["name"]) {
                return Some(HttpResponse::BadRequest().json(json!({"error": {"code": 400,
                    "message": "Voice 'nobody' does not exist.", "status": "INVALID_ARGUMENT"}})));
            }
            let ulaw = json["audioConfig"]["audioEncoding"] == "MULAW";
            let rate = rate_of(&json["audioConfig"]["sampleRateHertz"]);
            let wav = with_wav_header(&tone(rate, ulaw, 1.0), rate, ulaw);
            HttpResponse::Ok().json(json!({"audioContent": base64::engine::general_purpose::STANDARD.encode(wav)}))
        }
        // Hugging Face: a whole WAV file at the model's own rate.
        p if p.starts_with("/hf-inference/models/") => {
            if p.ends_with("/nobody") {
                return Some(HttpResponse::NotFound().json(json!({"error": "Model nobody does not exist"})));
            }
            HttpResponse::Ok()
                .content_type("audio/wav")
                .body(with_wav_header(&tone(16_000, false, 1.0), 16_000, false))
        }
        // Neuphonic: server-sent events, base64 pieces.
        p if p.starts_with("/sse/speak/") => {
            if unknown_voice(&json["voice_id"]) {
                return Some(error(p, 400, "voice_id 'nobody' not found"));
            }
            let ulaw = json["encoding"] == "pcm_mulaw";
            speech(rate_of(&json["sampling_rate"]), ulaw, key, record, Wrap::Sse)
        }
        // Inworld: JSON lines, base64 WAV pieces.
        "/tts/v1/voice:stream" => {
            if unknown_voice(&json["voiceId"]) {
                return Some(HttpResponse::NotFound().json(json!({"code": 5,
                    "message": "Unknown voice: nobody", "details": []})));
            }
            let ulaw = json["audio_config"]["audio_encoding"] == "MULAW";
            let rate = rate_of(&json["audio_config"]["sample_rate_hertz"]);
            speech(rate, ulaw, key, record, Wrap::Ndjson(rate, ulaw))
        }
        // AssemblyAI files: upload, transcript, polling (done on the second look).
        "/v2/upload" => HttpResponse::Ok().json(json!({
            "upload_url": "https://cdn.assemblyai.com/upload/mock-1"})),
        "/v2/transcript" if req.method() == actix_web::http::Method::POST => {
            HttpResponse::Ok().json(json!({"id": "tr-1", "status": "queued",
                "audio_url": json["audio_url"], "text": null}))
        }
        "/v2/transcript" => HttpResponse::Ok().json(json!({"transcripts": [], "page_details": {}})),
        "/v2/transcript/tr-1" => {
            let polls = record
                .seen
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.path == "/v2/transcript/tr-1")
                .count();
            if polls < 2 {
                HttpResponse::Ok().json(json!({"id": "tr-1", "status": "processing"}))
            } else {
                HttpResponse::Ok().json(json!({"id": "tr-1", "status": "completed",
                    "text": "What are your opening hours?", "language_code": "en_us",
                    "audio_duration": 3, "confidence": 0.93,
                    "words": [{"text": "What", "start": 100, "end": 300, "confidence": 0.99, "speaker": null},
                              {"text": "are", "start": 300, "end": 420, "confidence": 0.99, "speaker": null},
                              {"text": "your", "start": 420, "end": 600, "confidence": 0.99, "speaker": null},
                              {"text": "opening", "start": 600, "end": 1000, "confidence": 0.99, "speaker": null},
                              {"text": "hours?", "start": 1000, "end": 1400, "confidence": 0.99, "speaker": null}]}))
            }
        }
        // ElevenLabs Scribe.
        "/v1/speech-to-text" => HttpResponse::Ok().json(json!({
            "language_code": "eng", "language_probability": 0.98,
            "text": "What are your opening hours?",
            "words": [{"text": "What", "start": 0.1, "end": 0.3, "type": "word"},
                      {"text": " ", "start": 0.3, "end": 0.3, "type": "spacing"},
                      {"text": "are", "start": 0.3, "end": 0.42, "type": "word"},
                      {"text": " ", "start": 0.42, "end": 0.42, "type": "spacing"},
                      {"text": "your", "start": 0.42, "end": 0.6, "type": "word"},
                      {"text": " ", "start": 0.6, "end": 0.6, "type": "spacing"},
                      {"text": "opening", "start": 0.6, "end": 1.0, "type": "word"},
                      {"text": " ", "start": 1.0, "end": 1.0, "type": "spacing"},
                      {"text": "hours?", "start": 1.0, "end": 1.4, "type": "word"}]})),
        // Key checks.
        "/api/v2/voices" | "/v1/account" | "/cognitiveservices/voices/list" | "/tts/v1/voices"
        | "/api/whoami-v2" | "/v1beta/models" => HttpResponse::Ok().json(json!({"ok": true})),
        _ => return None,
    };
    Some(response)
}

/// How a vendor wraps its audio pieces.
#[derive(Clone, Copy)]
enum Wrap {
    Raw,
    /// Neuphonic: `data: {"status_code": 200, "data": {"audio": base64}}`.
    Sse,
    /// Inworld: `{"result": {"audioContent": base64 WAV}}` lines.
    Ndjson(u32, bool),
}

fn wrap(piece: &[u8], how: Wrap) -> Bytes {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    match how {
        Wrap::Raw => Bytes::copy_from_slice(piece),
        Wrap::Sse => Bytes::from(format!(
            "data: {}\n\n",
            json!({"status_code": 200, "data": {"audio": b64(piece), "text": null}})
        )),
        Wrap::Ndjson(rate, ulaw) => Bytes::from(format!(
            "{}\n",
            json!({"result": {"audioContent": b64(&with_wav_header(piece, rate, ulaw)),
                              "usage": {"processedCharactersCount": 26}}})
        )),
    }
}

/// `seconds` of a 440 Hz tone as PCM16 little-endian or µ-law bytes.
pub fn tone(rate: u32, ulaw: bool, seconds: f32) -> Vec<u8> {
    let samples: Vec<i16> = (0..(rate as f32 * seconds) as u32)
        .map(|i| ((i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 8000.0) as i16)
        .collect();
    if ulaw {
        samples
            .iter()
            .map(|&s| switchboard_actors::audio::mulaw::encode(s))
            .collect()
    } else {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }
}

/// A RIFF WAVE file of `data` (PCM16, or µ-law as format 7).
pub fn with_wav_header(data: &[u8], rate: u32, ulaw: bool) -> Vec<u8> {
    let (format, bits, block) = if ulaw { (7u16, 8u16, 1u16) } else { (1, 16, 2) };
    let mut wav = Vec::with_capacity(44 + data.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&format.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&rate.to_le_bytes());
    wav.extend_from_slice(&(rate * block as u32).to_le_bytes());
    wav.extend_from_slice(&block.to_le_bytes());
    wav.extend_from_slice(&bits.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(data.len() as u32).to_le_bytes());
    wav.extend_from_slice(data);
    wav
}

/// Records the key when a long speech stream's body is dropped (the client hung up).
struct SpeechDropFlag(Arc<Record>, String);

impl Drop for SpeechDropFlag {
    fn drop(&mut self) {
        self.0.speech_dropped.lock().unwrap().push(self.1.clone());
    }
}

/// One second of tone in ten pieces 5 ms apart, wrapped as the vendor does; `*-long`: 30 s
/// at real-time pace in 100 ms pieces, counted by key; `*-cut`: broken off at the fourth.
fn speech(rate: u32, ulaw: bool, key: &str, record: &Arc<Record>, how: Wrap) -> HttpResponse {
    let content_type = match how {
        Wrap::Raw => "application/octet-stream",
        Wrap::Sse => "text/event-stream",
        Wrap::Ndjson(..) => "application/json",
    };
    if key.ends_with("-long") {
        let piece = tone(rate, ulaw, 0.1);
        let state = (
            0usize,
            record.clone(),
            SpeechDropFlag(record.clone(), key.to_string()),
        );
        let body = stream::unfold(state, move |(i, record, guard)| {
            let piece = piece.clone();
            async move {
                if i >= 300 {
                    return None;
                }
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                *record
                    .speech_sent
                    .lock()
                    .unwrap()
                    .entry(guard.1.clone())
                    .or_default() += 1;
                Some((
                    Ok::<_, std::io::Error>(wrap(&piece, how)),
                    (i + 1, record, guard),
                ))
            }
        });
        return HttpResponse::Ok()
            .content_type(content_type)
            .streaming(body);
    }
    let bytes = tone(rate, ulaw, 1.0);
    let step = if ulaw { 1 } else { 2 };
    // Whole samples in each piece, so base64 pieces decode on their own.
    let size = (bytes.len() / 10 / step + 1) * step;
    let pieces: Vec<Bytes> = bytes.chunks(size).map(|p| wrap(p, how)).collect();
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
        .content_type(content_type)
        .streaming(body)
}
