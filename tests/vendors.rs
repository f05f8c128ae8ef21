//! Vendor adapters and bring-your-own-key, through the real server against a local stand-in
//! that speaks each vendor's wire format: which key reaches the vendor (header, stored,
//! platform), usage bypass, errors naming the vendor (never the key), speech in each vendor's
//! format, language models calling HTTP tools, stored provider keys, and cancellation of a
//! stream mid-flight.

mod common;
#[path = "common/counting_http.rs"]
mod counting_http;
#[path = "common/vendor_mock.rs"]
mod vendor_mock;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use switchboard_actors::engine::{ChatMessage, ChatRequest, LanguageModel, LlmEvent, Role};
use vendor_mock::VendorMock;

async fn start(mock: &VendorMock, extra: &[(&str, &str)]) -> Server {
    mock.server(extra).await
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Synthesizes through `provider` with optional extra headers; answers (status, headers
/// we care about, body bytes or error JSON).
async fn synthesize(
    server: &Server,
    key: &str,
    provider: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String, Vec<u8>) {
    let mut request = server.post(
        "/v1/synthesize",
        key,
        json!({"text": "Hello from a vendor voice.", "provider": provider, "format": "wav"}),
    );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let used = header(&response, "x-provider-used");
    let bypassed = header(&response, "x-usage-bypassed");
    let body = response
        .bytes()
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    (status, used, bypassed, body)
}

fn error_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_key_comes_from_the_header_then_the_stored_key_then_the_platform() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();

    // The provider registry, as the model list shows it.
    let (status, models) = call(server.get("/v1/audio/models", &key)).await;
    assert_eq!(status, 200);
    let entry = |kind: &str, id: &str| {
        models["providers"][kind]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        entry("tts", "openai"),
        json!({"id": "openai", "embedded": false, "adapter": true, "platformKey": true,
               "keyHeader": "X-Provider-Key-OpenAI", "streaming": true,
               "phoneFormat": "PCM16 24 kHz, resampled to 8 kHz"})
    );
    assert_eq!(entry("llm", "default")["embedded"], true);
    assert_eq!(entry("stt", "deepgram")["adapter"], true);
    assert_eq!(entry("tts", "playht")["adapter"], true);
    assert_eq!(entry("tts", "playht")["keyHeader"], "X-Provider-Key-PlayHT");
    assert_eq!(
        entry("tts", "azure")["phoneFormat"],
        "µ-law 8 kHz (raw-8khz-8bit-mono-mulaw)"
    );
    assert_eq!(entry("tts", "google")["streaming"], false);
    assert_eq!(entry("stt", "assemblyai")["streaming"], true);
    assert_eq!(entry("stt", "assemblyai")["adapter"], true);
    assert_eq!(entry("stt", "elevenlabs")["adapter"], true);
    for kind in ["tts", "stt", "llm"] {
        let ids = models["providers"][kind].as_array().unwrap();
        assert!(ids.iter().all(|p| p["adapter"] == true), "{kind}: {ids:?}");
    }
    assert_eq!(models["providers"]["tts"].as_array().unwrap().len(), 14);

    // Platform key: metered.
    let (status, used, bypassed, body) = synthesize(&server, &key, "openai", &[]).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!((used.as_str(), bypassed.as_str()), ("openai", "false"));
    assert_eq!(&body[..4], b"RIFF");
    // One second of 24 kHz PCM16 plus the header.
    assert!((48_000..=48_100).contains(&body.len()), "{}", body.len());
    assert_eq!(
        mock.seen_at("/audio/speech").last().unwrap().key,
        "platform-openai"
    );
    let tts_credits = |usage: &Value| usage["breakdown"]["tts"].as_f64().unwrap();
    let (_, usage) = call(server.get("/v1/usage", &key)).await;
    let charged = tts_credits(&usage);
    assert!(
        charged > 0.0,
        "the platform key's synthesis is charged: {usage}"
    );

    // A stored key wins over the platform key and is not metered.
    let (status, stored) = call(server.post(
        "/v1/provider-keys",
        &key,
        json!({"provider": "openai", "apiKey": "sk-stored-key-1234"}),
    ))
    .await;
    assert_eq!(status, 201, "{stored}");
    assert_eq!(stored["keyHint"], "1234");
    let (status, _, bypassed, _) = synthesize(&server, &key, "openai", &[]).await;
    assert_eq!((status, bypassed.as_str()), (200, "true"));
    assert_eq!(
        mock.seen_at("/audio/speech").last().unwrap().key,
        "sk-stored-key-1234"
    );

    // The request's own key wins over both; the header name is matched in any case.
    for name in ["X-Provider-Key-OpenAI", "x-provider-key-openai"] {
        let (status, _, bypassed, _) =
            synthesize(&server, &key, "openai", &[(name, "sk-header-5678")]).await;
        assert_eq!((status, bypassed.as_str()), (200, "true"));
        assert_eq!(
            mock.seen_at("/audio/speech").last().unwrap().key,
            "sk-header-5678"
        );
    }

    // The caller's own keys cost no credits.
    let (_, usage) = call(server.get("/v1/usage", &key)).await;
    assert_eq!(tts_credits(&usage), charged, "{usage}");

    // Deleting the stored key falls back to the platform's.
    let response = server
        .request(Method::DELETE, "/v1/provider-keys/openai", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let (_, _, bypassed, _) = synthesize(&server, &key, "openai", &[]).await;
    assert_eq!(bypassed, "false");
    assert_eq!(
        mock.seen_at("/audio/speech").last().unwrap().key,
        "platform-openai"
    );

    // The stored key never reached the disk or the log in plain text.
    let mut on_disk = Vec::new();
    for entry in std::fs::read_dir(server.storage.data_dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            on_disk.extend(std::fs::read(&path).unwrap());
        }
    }
    let on_disk = String::from_utf8_lossy(&on_disk);
    assert!(!on_disk.contains("sk-stored-key-1234"));
    assert!(!on_disk.contains("sk-header-5678"));
}

#[tokio::test]
async fn vendor_failures_name_the_vendor_and_never_the_key() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    let cases = [
        (
            "openai",
            "X-Provider-Key-OpenAI",
            "sk-secret-bad",
            502,
            "rejected the API key",
        ),
        (
            "openai",
            "X-Provider-Key-OpenAI",
            "sk-secret-limited",
            502,
            "rate limiting",
        ),
        (
            "elevenlabs",
            "X-Provider-Key-ElevenLabs",
            "el-secret-bad",
            502,
            "Incorrect API key",
        ),
        (
            "deepgram",
            "X-Provider-Key-Deepgram",
            "dg-secret-bad",
            502,
            "Incorrect API key",
        ),
        (
            "cartesia",
            "X-Provider-Key-Cartesia",
            "ca-secret-slow",
            503,
            "no answer within",
        ),
    ];
    for (provider, name, vendor_key, status, says) in cases {
        let (got, _, _, body) = synthesize(&server, &key, provider, &[(name, vendor_key)]).await;
        let body = error_of(&body);
        assert_eq!(got, status, "{provider} {vendor_key}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(provider), "{message}");
        assert!(message.contains(says), "{message}");
        assert!(!message.contains(vendor_key), "{message}");
    }
    // A voice the vendor does not know is the caller's to fix: 400 naming it.
    let (status, body) = call(server.post(
        "/v1/synthesize",
        &key,
        json!({"text": "Hi.", "provider": "openai", "voiceId": "nobody"}),
    ))
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "voiceId");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody"),
        "{body}"
    );

    // A vendor without any key.
    let bare = Server::start_with(
        Storage::fresh().await,
        &[(
            "SWITCHBOARD__VENDORS__OPENAI__BASE_URL",
            &format!("{}/v1", mock.url),
        )],
    )
    .await;
    let bare_key = bare.key().to_string();
    let (status, _, _, body) = synthesize(&bare, &bare_key, "openai", &[]).await;
    let body = error_of(&body);
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_code(&body), "provider_not_configured");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("X-Provider-Key-OpenAI"));
    // An empty header is a validation error, not a silent fallback.
    let (status, _, _, body) =
        synthesize(&server, &key, "openai", &[("X-Provider-Key-OpenAI", " ")]).await;
    assert_eq!(status, 400, "{}", error_of(&body));

    for log in [server.log(), bare.log()] {
        for secret in [
            "sk-secret",
            "el-secret",
            "dg-secret",
            "ca-secret",
            "platform-",
        ] {
            assert!(!log.contains(secret), "{secret} in the log");
        }
    }
}

#[tokio::test]
async fn each_speech_vendor_gets_its_own_wire_format() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    for provider in ["openai", "elevenlabs", "deepgram", "cartesia"] {
        let (status, used, _, body) = synthesize(&server, &key, provider, &[]).await;
        assert_eq!(status, 200, "{provider}: {}", error_of(&body));
        assert_eq!(used, provider);
        assert_eq!(&body[..4], b"RIFF", "{provider}");
        assert!(body.len() > 40_000, "{provider}: {} bytes", body.len());
    }
    let speech = mock.seen_at("/audio/speech").pop().unwrap();
    assert_eq!(speech.body["response_format"], "pcm");
    assert_eq!(speech.body["voice"], "alloy");
    assert_eq!(speech.body["input"], "Hello from a vendor voice.");

    let eleven = mock.seen_at("/stream").pop().unwrap();
    assert_eq!(eleven.path, "/v1/text-to-speech/21m00Tcm4TlvDQ8ikfK/stream");
    assert!(
        eleven.query.contains("output_format=pcm_24000"),
        "{}",
        eleven.query
    );
    assert_eq!(eleven.key, "platform-elevenlabs");
    assert_eq!(eleven.body["text"], "Hello from a vendor voice.");

    let speak = mock.seen_at("/v1/speak").pop().unwrap();
    for part in [
        "encoding=linear16",
        "sample_rate=24000",
        "container=none",
        "model=aura-2-thalia-en",
    ] {
        assert!(speak.query.contains(part), "{}", speak.query);
    }
    assert!(speak
        .headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Token platform-deepgram"));

    let cartesia = mock.seen_at("/tts/bytes").pop().unwrap();
    assert_eq!(
        cartesia.body["output_format"],
        json!({"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000})
    );
    assert_eq!(cartesia.body["transcript"], "Hello from a vendor voice.");
    assert!(cartesia
        .headers
        .iter()
        .any(|(k, v)| k == "cartesia-version" && !v.is_empty()));

    // A stream the vendor breaks off is not passed on as whole audio: the connection is cut
    // (before or after the headers, depending on timing) or the body ends short.
    let sent = server
        .post(
            "/v1/synthesize",
            &key,
            json!({"text": "Cut short.", "provider": "cartesia", "format": "wav"}),
        )
        .header("X-Provider-Key-Cartesia", "ca-cut")
        .send()
        .await;
    let received = match sent {
        Ok(response) => response.bytes().await.map(|body| body.len()).ok(),
        Err(_) => None,
    };
    assert!(
        received.is_none_or(|len| len < 40_000),
        "a cut stream arrived whole: {received:?} bytes"
    );
}

async fn tool_agent(server: &Server, key: &str, id: &str, provider: &str, tool_url: &str) {
    let (status, body) = call(server.post(
        "/v1/agents",
        key,
        json!({"id": id, "name": "Order desk", "llmProvider": provider,
               "systemPrompt": "You help customers with their orders.",
               "metadata": {"tools": [{"name": "order_status", "description": "Look up an order",
                   "url": tool_url, "timeoutMs": 800,
                   "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}},
                                  "required": ["orderId"]}}]}}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn vendor_models_call_http_tools_in_a_chat() {
    let mock = VendorMock::start();
    let server = start(&mock, &[("SWITCHBOARD__FETCH__ALLOW", "[\"127.0.0.1\"]")]).await;
    let key = server.key().to_string();
    let tool_url = format!("{}/tools/order_status", mock.url);
    tool_agent(&server, &key, "desk-openai", "openai", &tool_url).await;
    tool_agent(&server, &key, "desk-anthropic", "anthropic", &tool_url).await;
    tool_agent(&server, &key, "desk-google", "google", &tool_url).await;

    for (agent, provider) in [
        ("desk-openai", "openai"),
        ("desk-anthropic", "anthropic"),
        ("desk-google", "google"),
    ] {
        let response = server
            .post(
                &format!("/v1/agents/{agent}/chat"),
                &key,
                json!({"message": "Where is my order ORD-7?"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(header(&response, "x-provider-used"), provider);
        assert_eq!(header(&response, "x-usage-bypassed"), "false");
        let (status, body) = json_of(response).await;
        assert_eq!(status, 200, "{body}");
        let call = &body["toolCalls"][0];
        assert_eq!(call["name"], "order_status", "{body}");
        assert_eq!(call["arguments"], json!({"orderId": "ORD-7"}), "{body}");
        assert!(call.get("error").is_none(), "{body}");
        let reply = body["reply"].as_str().unwrap();
        assert!(
            reply.contains("The tool said:") && reply.contains("shipped"),
            "{reply}"
        );
        assert!(body["usage"]["inputTokens"].as_u64().unwrap() > 0, "{body}");
    }
    // The tool ran with the model's arguments.
    let runs = mock.seen_at("/tools/order_status");
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0].body, json!({"orderId": "ORD-7"}));

    // What each vendor was sent: our tools, and the tool's result tied to its call.
    let chats = mock.seen_at("/v1/chat/completions");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].key, "platform-openai");
    assert_eq!(chats[0].body["stream"], true);
    let offered = chats[0].body["tools"].as_array().unwrap();
    assert!(
        offered
            .iter()
            .any(|t| t["type"] == "function" && t["function"]["name"] == "order_status"),
        "{offered:?}"
    );
    let tool_message = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .expect("the tool result went back to the model");
    assert_eq!(tool_message["tool_call_id"], "call_1");
    let messages = mock.seen_at("/v1/messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].key, "platform-anthropic");
    assert!(messages[0].body["system"]
        .as_str()
        .unwrap()
        .contains("orders"));
    let offered = messages[0].body["tools"].as_array().unwrap();
    let order_status = offered
        .iter()
        .find(|t| t["name"] == "order_status")
        .expect("the HTTP tool is offered");
    assert_eq!(order_status["input_schema"]["required"], json!(["orderId"]));
    assert!(messages[0]
        .headers
        .iter()
        .any(|(k, v)| k == "anthropic-version" && v == "2023-06-01"));
    let result = messages[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .expect("a tool_result block");
    assert_eq!(result["tool_use_id"], "toolu_1");
    let gemini = mock.seen_at(":streamGenerateContent");
    assert_eq!(gemini.len(), 2);
    assert_eq!(gemini[0].key, "platform-google");
    assert_eq!(gemini[0].query, "alt=sse");
    assert!(gemini[0].body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("orders"));
    let declared = gemini[0].body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    assert!(declared.iter().any(|d| d["name"] == "order_status"));
    let response = gemini[1].body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .find_map(|p| p.get("functionResponse").cloned())
        .expect("a functionResponse part");
    assert_eq!(response["name"], "order_status");
    assert_eq!(response["response"]["status"], "shipped");

    // A tool that times out or fails is reported to the model and in the reply's record.
    for (tool, expect) in [("slow", "in time"), ("broken", "500")] {
        let id = format!("desk-{tool}");
        tool_agent(
            &server,
            &key,
            &id,
            "openai",
            &format!("{}/tools/{tool}", mock.url),
        )
        .await;
        let (status, body) = call(server.post(
            &format!("/v1/agents/{id}/chat"),
            &key,
            json!({"message": "Where is my order ORD-7?"}),
        ))
        .await;
        assert_eq!(status, 200, "{body}");
        let error = body["toolCalls"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(expect), "{tool}: {body}");
        assert!(
            body["reply"].as_str().unwrap().contains("The tool said:"),
            "{body}"
        );
    }

    // A model stream broken off mid-answer is an upstream error naming the vendor.
    let response = server
        .post(
            "/v1/agents/desk-openai/chat",
            &key,
            json!({"message": "Hello there"}),
        )
        .header("X-Provider-Key-OpenAI", "sk-cut")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_code(&body), "upstream_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("openai"),
        "{body}"
    );
}

#[tokio::test]
async fn stored_provider_keys_are_listed_without_the_key_verified_and_private() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    let other = server.storage.create_key("dev_other");

    for (body, param) in [
        (json!({"provider": "nobody", "apiKey": "k"}), "provider"),
        (json!({"apiKey": "k"}), "provider"),
        (json!({"provider": "openai"}), "apiKey"),
        (json!({"provider": "openai", "apiKey": ""}), "apiKey"),
        (
            json!({"provider": "openai", "apiKey": "two words"}),
            "apiKey",
        ),
    ] {
        let (status, answer) = call(server.post("/v1/provider-keys", &key, body.clone())).await;
        assert_invalid(status, &answer, param, &body.to_string());
    }
    let (_, list) = call(server.get("/v1/provider-keys", &key)).await;
    assert_eq!(list["data"], json!([]));

    for (provider, api_key) in [("openai", "sk-good-abcd"), ("deepgram", "dg-bad")] {
        let (status, body) = call(server.post(
            "/v1/provider-keys",
            &key,
            json!({"provider": provider, "apiKey": api_key}),
        ))
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, list) = call(server.get("/v1/provider-keys", &key)).await;
    assert_eq!(status, 200);
    assert!(!list.to_string().contains("sk-good"), "{list}");
    assert_eq!(list["data"][0]["provider"], "deepgram");
    assert_eq!(list["data"][1]["provider"], "openai");
    assert_eq!(list["data"][1]["keyHint"], "abcd");
    assert!(is_iso_millis(&list["data"][1]["createdAt"]));
    assert_eq!(list["data"][1]["lastVerifiedAt"], Value::Null);

    let (status, verdict) =
        call(server.post("/v1/provider-keys/openai/verify", &key, json!({}))).await;
    assert_eq!(status, 200, "{verdict}");
    assert_eq!(verdict, json!({"provider": "openai", "valid": true}));
    let models = mock.seen_at("/v1/models").pop().unwrap();
    assert_eq!(models.key, "sk-good-abcd");
    let (_, list) = call(server.get("/v1/provider-keys", &key)).await;
    assert!(is_iso_millis(&list["data"][1]["lastVerifiedAt"]), "{list}");

    let (status, verdict) =
        call(server.post("/v1/provider-keys/deepgram/verify", &key, json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(verdict["valid"], false);
    let reason = verdict["error"].as_str().unwrap();
    assert!(
        reason.contains("rejected the API key") && !reason.contains("dg-bad"),
        "{reason}"
    );

    // Another developer sees none of it.
    let (_, list) = call(server.get("/v1/provider-keys", &other)).await;
    assert_eq!(list["data"], json!([]));
    let (status, body) =
        call(server.post("/v1/provider-keys/openai/verify", &other, json!({}))).await;
    assert_not_found(status, &body, "verify a foreign key");
    let (status, body) = call(server.delete("/v1/provider-keys/openai", &other)).await;
    assert_not_found(status, &body, "delete a foreign key");

    let (status, _) = call(server.delete("/v1/provider-keys/openai", &key)).await;
    assert_eq!(status, 204);
    let (status, body) = call(server.delete("/v1/provider-keys/openai", &key)).await;
    assert_not_found(status, &body, "delete twice");
    let (status, body) = call(server.delete("/v1/provider-keys/nobody", &key)).await;
    assert_invalid(status, &body, "provider", "unknown provider");
}

/// A one-message conversation for a vendor model, answered greedily within `max_tokens`.
fn user_asks(text: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: None,
        messages: vec![ChatMessage::new(Role::User, text)],
        tools: Vec::new(),
        temperature: 0.0,
        max_tokens,
        conversation: None,
    }
}

#[tokio::test]
async fn dropping_a_model_stream_hangs_up_on_the_vendor() {
    let mock = VendorMock::start();
    let model = switchboard::vendors::openai::OpenAiChat {
        endpoint: endpoint_at("openai", &format!("{}/v1", mock.url), "sk-long"),
    };
    let mut stream = model
        .stream(user_asks("Talk for a long time.", 500))
        .unwrap();
    for expected in ["w0 ", "w1 ", "w2 "] {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.recv())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(event, LlmEvent::TextDelta(expected.into()));
    }
    drop(stream);
    let hung_up = tokio::time::timeout(Duration::from_secs(2), async {
        while !mock.record.long_dropped.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(hung_up.is_ok(), "the vendor's stream was not closed");
    let sent = mock.record.long_sent.load(Ordering::SeqCst);
    assert!(sent < 50, "the vendor kept streaming: {sent} deltas");
}

#[tokio::test]
#[allow(clippy::result_large_err)] // the handshake callback's error type is tungstenite's
async fn deepgram_live_streaming_turns_interim_and_final_results_into_events() {
    use futures_util::{SinkExt, StreamExt};
    use std::sync::{Arc, Mutex};
    use switchboard_actors::engine::{SpeechToText, SttEvent, SttInput, TranscribeOptions};
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::Message;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let upgrade: Arc<Mutex<(String, String)>> = Arc::default();
    let seen = upgrade.clone();
    let audio_bytes: Arc<Mutex<Vec<u8>>> = Arc::default();
    let received = audio_bytes.clone();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let callback = |request: &Request, response: Response| {
            let auth = request.headers()["authorization"]
                .to_str()
                .unwrap()
                .to_string();
            *seen.lock().unwrap() = (request.uri().to_string(), auth);
            Ok(response)
        };
        let mut socket = tokio_tungstenite::accept_hdr_async(tcp, callback)
            .await
            .unwrap();
        let result = |text: &str, is_final: bool, from_finalize: bool| {
            json!({"type": "Results", "channel_index": [0, 1], "start": 0.0, "duration": 1.5,
                   "is_final": is_final, "speech_final": false, "from_finalize": from_finalize,
                   "channel": {"alternatives": [{"transcript": text, "confidence": 0.98,
                       "words": [{"word": "another", "start": 0.08, "end": 0.4, "confidence": 0.99,
                                  "punctuated_word": "Another"}]}]}})
            .to_string()
        };
        while let Some(Ok(message)) = socket.next().await {
            match message {
                Message::Binary(bytes) => {
                    let first = {
                        let mut received = received.lock().unwrap();
                        received.extend_from_slice(&bytes);
                        received.len() == bytes.len()
                    };
                    if first {
                        let interim = result("another", false, false);
                        socket.send(Message::text(interim)).await.unwrap();
                    }
                }
                Message::Text(text) if text.contains("Finalize") => {
                    let done = result("Another big day.", true, true);
                    socket.send(Message::text(done)).await.unwrap();
                }
                _ => {}
            }
        }
    });

    let listen = Arc::new(switchboard::vendors::deepgram::DeepgramListen {
        endpoint: endpoint_at("deepgram", &format!("http://{address}"), "dg-live"),
    });
    let (input, mut events) = listen.stream(TranscribeOptions::default()).unwrap();
    // 100 ms of a full-scale ramp: the caller's samples, bit for bit.
    let samples: Arc<[i16]> = (0..1600).map(|i| (i * 41 - 32_768) as i16).collect();
    input.send(SttInput::Audio(samples.clone())).await.unwrap();
    assert_eq!(next(&mut events).await, SttEvent::Partial("another".into()));
    input.send(SttInput::EndOfUtterance).await.unwrap();
    let SttEvent::Final(transcript) = next(&mut events).await else {
        panic!("a final transcript expected");
    };
    assert_eq!(transcript.text, "Another big day.");
    // 100 ms of 16 kHz audio arrived as linear16, sample for sample, on a URL asking for what
    // a call needs.
    let expected: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    assert_eq!(*audio_bytes.lock().unwrap(), expected);
    let (uri, auth) = upgrade.lock().unwrap().clone();
    assert_eq!(auth, "Token dg-live");
    for part in [
        "/v1/listen?",
        "encoding=linear16",
        "sample_rate=16000",
        "interim_results=true",
        "endpointing=300",
        "model=nova-3",
    ] {
        assert!(uri.contains(part), "{uri}");
    }
}

async fn next<T>(events: &mut switchboard_actors::engine::EngineStream<T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("an event in time")
        .expect("the stream is open")
        .expect("no error")
}

#[tokio::test]
async fn an_agent_falls_back_to_its_next_provider_when_its_own_fails() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    for (body, case) in [
        (json!({"fallbacks": {"tts": ["nobody"]}}), "unknown id"),
        (json!({"fallbacks": {"tts": "cartesia"}}), "not a list"),
        (json!({"fallbacks": {"video": []}}), "unknown stage"),
        (
            json!({"fallbacks": {"llm": ["openai", "openai", "openai", "openai"]}}),
            "too many",
        ),
    ] {
        let (status, answer) = call(server.post(
            "/v1/agents",
            &key,
            json!({"name": "Bad fallbacks", "metadata": body}),
        ))
        .await;
        assert_invalid(status, &answer, "metadata", case);
    }
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "resilient", "name": "Resilient", "ttsProvider": "elevenlabs",
               "llmProvider": "anthropic",
               "metadata": {"fallbacks": {"tts": ["cartesia"], "llm": ["openai"]}}}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");

    // The agent's own voice works: it serves.
    let response = server
        .post(
            "/v1/agents/resilient/speak",
            &key,
            json!({"text": "Hello."}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-provider-used"), "elevenlabs");

    // Its vendor refuses the caller's key: the next one serves, and says so.
    let response = server
        .post(
            "/v1/agents/resilient/speak",
            &key,
            json!({"text": "Hello again."}),
        )
        .header("X-Provider-Key-ElevenLabs", "el-bad")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-provider-used"), "cartesia");
    // The platform's Cartesia key paid, so this is metered.
    assert_eq!(header(&response, "x-usage-bypassed"), "false");
    assert_eq!(&response.bytes().await.unwrap()[..4], b"RIFF");

    let response = server
        .post("/v1/agents/resilient/chat", &key, json!({"message": "Hi!"}))
        .header("X-Provider-Key-Anthropic", "an-limited")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&response, "x-provider-used"), "openai");
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["reply"].as_str().unwrap().contains("mock model"),
        "{body}"
    );
    assert!(server.log().contains("falling back"));
}

#[tokio::test]
async fn openai_compatible_vendors_have_their_own_ids_keys_and_defaults() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "fast", "name": "Fast", "llmProvider": "groq", "ttsProvider": "kokoro",
               "ttsModel": "kokoro-v1"}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");

    let response = server
        .post("/v1/agents/fast/chat", &key, json!({"message": "Hi!"}))
        .header("X-Provider-Key-Groq", "gsk-own")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&response, "x-provider-used"), "groq");
    assert_eq!(header(&response, "x-usage-bypassed"), "true");
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    let chat = mock.seen_at("/v1/chat/completions").pop().unwrap();
    assert_eq!(chat.key, "gsk-own");
    assert_eq!(chat.body["model"], "llama-3.3-70b-versatile");

    // A self-hosted voice needs no key; the agent's ttsModel reaches it.
    let response = server
        .post("/v1/agents/fast/speak", &key, json!({"text": "Hello."}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-provider-used"), "kokoro");
    let speech = mock.seen_at("/v1/audio/speech").pop().unwrap();
    assert_eq!(speech.body["model"], "kokoro-v1");
    assert_eq!(speech.body["voice"], "af_bella");
    assert!(!speech.headers.iter().any(|(k, _)| k == "authorization"));
}

/// The synthesis vendors beyond the first five: id, key header, the path their speech request
/// reaches, whether the vendor streams (Google Cloud TTS and Hugging Face answer whole), and a
/// key in the vendor's own shape (PlayHT's is `<user id>:<secret>`).
const SPEECH_VENDORS: &[(&str, &str, &str, bool)] = &[
    (
        "playht",
        "X-Provider-Key-PlayHT",
        "/api/v2/tts/stream",
        true,
    ),
    ("rime", "X-Provider-Key-Rime", "/v1/rime-tts", true),
    ("lmnt", "X-Provider-Key-LMNT", "/v1/ai/speech/bytes", true),
    (
        "azure",
        "X-Provider-Key-Azure",
        "/cognitiveservices/v1",
        true,
    ),
    (
        "google",
        "X-Provider-Key-Google",
        "/v1/text:synthesize",
        false,
    ),
    (
        "huggingface",
        "X-Provider-Key-HuggingFace",
        "/hf-inference/models/facebook/mms-tts-eng",
        false,
    ),
    (
        "neuphonic",
        "X-Provider-Key-Neuphonic",
        "/sse/speak/en",
        true,
    ),
    (
        "inworld",
        "X-Provider-Key-Inworld",
        "/tts/v1/voice:stream",
        true,
    ),
];

fn vendor_key(vendor: &str, tail: &str) -> String {
    if vendor == "playht" {
        format!("user-7:{vendor}-{tail}")
    } else {
        format!("{vendor}-{tail}")
    }
}

#[tokio::test]
async fn every_speech_vendor_speaks_with_the_platform_stored_and_header_key() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    let tts_credits = |usage: &Value| usage["breakdown"]["tts"].as_f64().unwrap();
    for &(vendor, header_name, path, _) in SPEECH_VENDORS {
        // The platform's key: metered, audio in the vendor's framing arrives whole as WAV.
        let (status, used, bypassed, body) = synthesize(&server, &key, vendor, &[]).await;
        assert_eq!(status, 200, "{vendor}: {}", error_of(&body));
        assert_eq!((used.as_str(), bypassed.as_str()), (vendor, "false"));
        assert_eq!(&body[..4], b"RIFF", "{vendor}");
        // One second of audio: 16 kHz PCM16 at the least.
        assert!(body.len() >= 32_000, "{vendor}: {} bytes", body.len());
        let seen = mock.seen_at(path);
        let platform = seen
            .last()
            .unwrap_or_else(|| panic!("{vendor}: nothing at {path}"));
        assert_eq!(platform.key, format!("platform-{vendor}"), "{vendor}");
        let (_, usage) = call(server.get("/v1/usage", &key)).await;
        let charged = tts_credits(&usage);

        // The caller's own key in the header (any case): reaches the vendor, costs nothing.
        let own = vendor_key(vendor, "own");
        let lower = header_name.to_lowercase();
        let (status, _, bypassed, _) =
            synthesize(&server, &key, vendor, &[(lower.as_str(), own.as_str())]).await;
        assert_eq!((status, bypassed.as_str()), (200, "true"), "{vendor}");
        assert_eq!(mock.seen_at(path).last().unwrap().key, own, "{vendor}");

        // A stored key: used without a header, verified by the vendor's cheapest call.
        let stored = vendor_key(vendor, "stored");
        let (status, body) = call(server.post(
            "/v1/provider-keys",
            &key,
            json!({"provider": vendor, "apiKey": stored}),
        ))
        .await;
        assert_eq!(status, 201, "{vendor}: {body}");
        let (status, _, bypassed, _) = synthesize(&server, &key, vendor, &[]).await;
        assert_eq!((status, bypassed.as_str()), (200, "true"), "{vendor}");
        assert_eq!(mock.seen_at(path).last().unwrap().key, stored, "{vendor}");
        let (status, verdict) = call(server.post(
            &format!("/v1/provider-keys/{vendor}/verify"),
            &key,
            json!({}),
        ))
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            verdict,
            json!({"provider": vendor, "valid": true}),
            "{vendor}"
        );
        assert_eq!(mock.seen().last().unwrap().key, stored, "{vendor}");
        let (_, usage) = call(server.get("/v1/usage", &key)).await;
        assert_eq!(tts_credits(&usage), charged, "{vendor}: {usage}");
        let (status, _) = call(server.delete(&format!("/v1/provider-keys/{vendor}"), &key)).await;
        assert_eq!(status, 204);
    }

    // What each vendor was asked for, in its own words.
    let last = |path: &str| {
        let said = |s: &vendor_mock::Seen| {
            s.body.to_string().contains("Hello from a vendor voice.")
                || s.text.contains("Hello from a vendor voice.")
        };
        mock.seen_at(path).into_iter().rfind(said).unwrap()
    };
    let playht = last("/api/v2/tts/stream");
    assert_eq!(playht.body["output_format"], "raw");
    assert_eq!(playht.body["voice_engine"], "Play3.0-mini");
    assert_eq!(playht.header("x-user-id"), Some("user-7"));
    let rime = last("/v1/rime-tts");
    assert_eq!(rime.header("accept"), Some("audio/pcm"));
    assert_eq!(
        (
            rime.body["speaker"].as_str(),
            rime.body["samplingRate"].as_u64()
        ),
        (Some("cove"), Some(24_000))
    );
    let lmnt = last("/v1/ai/speech/bytes");
    assert_eq!(
        (lmnt.body["format"].as_str(), lmnt.body["voice"].as_str()),
        (Some("raw"), Some("leah"))
    );
    let azure = last("/cognitiveservices/v1");
    assert_eq!(
        azure.header("x-microsoft-outputformat"),
        Some("raw-24khz-16bit-mono-pcm")
    );
    assert!(
        azure.text.contains(
            "<voice name=\"en-US-AvaMultilingualNeural\">Hello from a vendor voice.</voice>"
        ),
        "{}",
        azure.text
    );
    let google = last("/v1/text:synthesize");
    assert_eq!(
        google.body["audioConfig"],
        json!({"audioEncoding": "LINEAR16", "sampleRateHertz": 24000})
    );
    assert_eq!(google.body["voice"]["languageCode"], "en-US");
    assert_eq!(
        last("/hf-inference/models/facebook/mms-tts-eng").body,
        json!({"inputs": "Hello from a vendor voice."})
    );
    let neuphonic = last("/sse/speak/en");
    assert_eq!(
        (
            neuphonic.body["encoding"].as_str(),
            neuphonic.body["sampling_rate"].as_u64()
        ),
        (Some("pcm_linear"), Some(22_050))
    );
    let inworld = last("/tts/v1/voice:stream");
    assert_eq!(inworld.body["audio_config"]["audio_encoding"], "LINEAR16");
    assert_eq!(inworld.body["voiceId"], "Ashley");
}

#[tokio::test]
async fn speech_vendor_failures_are_mapped_and_streams_are_never_buffered_whole() {
    let mock = VendorMock::start();
    let server = start(&mock, &[]).await;
    let key = server.key().to_string();
    for &(vendor, header_name, _, streams) in SPEECH_VENDORS {
        for (tail, status, says) in [
            ("secret-bad", 502, "rejected the API key"),
            ("secret-limited", 502, "is rate limiting this key"),
            ("secret-down", 502, "failed (HTTP 503)"),
        ] {
            let vendor_key = vendor_key(vendor, tail);
            let (got, _, _, body) =
                synthesize(&server, &key, vendor, &[(header_name, vendor_key.as_str())]).await;
            let body = error_of(&body);
            assert_eq!(got, status, "{vendor} {tail}: {body}");
            assert_eq!(error_code(&body), "upstream_error", "{vendor} {tail}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.starts_with(vendor) && message.contains(says),
                "{message}"
            );
            assert!(!message.contains("secret"), "{message}");
        }
        // A voice the vendor does not know is the caller's to fix, named in the answer.
        if vendor != "huggingface" {
            let (status, body) = call(server.post(
                "/v1/synthesize",
                &key,
                json!({"text": "Hi.", "provider": vendor, "voiceId": "nobody"}),
            ))
            .await;
            assert_eq!(status, 400, "{vendor}: {body}");
            assert_eq!(body["error"]["param"], "voiceId", "{vendor}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("nobody"),
                "{vendor}: {body}"
            );
        }
        if !streams {
            continue;
        }
        // Broken off by the vendor mid-stream: never passed on as whole audio.
        let cut = vendor_key(vendor, "cut");
        let sent = server
            .post(
                "/v1/synthesize",
                &key,
                json!({"text": "Cut short.", "provider": vendor, "format": "wav"}),
            )
            .header(header_name, cut.as_str())
            .send()
            .await;
        let received = match sent {
            Ok(response) => response.bytes().await.map(|body| body.len()).ok(),
            Err(_) => None,
        };
        assert!(
            received.is_none_or(|len| len < 40_000),
            "{vendor}: a cut stream arrived whole: {received:?}"
        );

        // Thirty seconds at the vendor's pace: the first audio reaches the client while the
        // vendor is still speaking, and hanging up closes the vendor's stream.
        let long = vendor_key(vendor, "long");
        let mut response = server
            .post(
                "/v1/synthesize",
                &key,
                json!({"text": "Talk for a while.", "provider": vendor, "format": "wav"}),
            )
            .header(header_name, long.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{vendor}");
        let mut received = 0;
        while received < 4_000 {
            let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
                .await
                .unwrap_or_else(|_| panic!("{vendor}: no audio within 5 s"))
                .unwrap()
                .unwrap_or_else(|| panic!("{vendor}: the stream ended"));
            received += chunk.len();
        }
        let sent = mock.speech_sent(&long);
        assert!(
            (1..30).contains(&sent),
            "{vendor}: {sent} of 300 pieces sent before the first audio"
        );
        drop(response);
        let hung_up = tokio::time::timeout(Duration::from_secs(3), async {
            while !mock.speech_dropped(&long) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(hung_up.is_ok(), "{vendor}: the vendor's stream stayed open");
        assert!(
            mock.speech_sent(&long) < 60,
            "{vendor}: the vendor kept streaming"
        );
    }
}

fn endpoint_at(vendor: &str, base_url: &str, key: &str) -> switchboard::vendors::http::Endpoint {
    switchboard::vendors::http::Endpoint {
        vendor: vendor.into(),
        base_url: base_url.into(),
        alt_base_url: base_url.into(),
        key: key.into(),
        timeout: Duration::from_secs(5),
        client: reqwest::Client::new(),
        llm_model: None,
        stt_model: None,
        tts_model: None,
        default_voice: None,
    }
}

/// A chat-completions server that counts the connections opened to it and ends each streamed
/// answer as a busy vendor often does: `[DONE]` in one write and the chunked body's
/// terminator in a later one.
fn late_terminator_chat_server() -> (String, Arc<AtomicUsize>) {
    let (address, connections) = counting_http::counting_server(|stream| {
        let events = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello.\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n"
        );
        let mut answer = counting_http::chunked_head("text/event-stream");
        answer.extend(counting_http::chunk(events.as_bytes()));
        counting_http::send(stream, &answer)?;
        std::thread::sleep(Duration::from_millis(100));
        counting_http::send(stream, counting_http::LAST_CHUNK)
    });
    (format!("http://{address}/v1"), connections)
}

#[tokio::test]
async fn a_finished_model_stream_leaves_its_connection_to_the_next_turn() {
    let (url, connections) = late_terminator_chat_server();
    let model = switchboard::vendors::openai::OpenAiChat {
        endpoint: endpoint_at("openai", &url, "sk-test"),
    };
    for turn in 0..3 {
        let mut stream = model.stream(user_asks("Say hello.", 20)).unwrap();
        let mut events = Vec::new();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(event) = stream.recv().await {
                events.push(event.unwrap());
            }
        })
        .await;
        assert!(ended.is_ok(), "turn {turn}: the answer did not end");
        assert_eq!(events.first(), Some(&LlmEvent::TextDelta("Hello.".into())));
        assert!(
            matches!(events.last(), Some(LlmEvent::Done { .. })),
            "turn {turn}: {events:?}"
        );
        // The answer reached the caller before the body's terminator was sent; give the
        // background read time to take it.
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "each answer's connection was closed instead of going back to the pool"
    );
}

/// A text-to-speech server that counts the connections opened to it and streams each
/// sentence's µ-law audio in two parts, 200 ms apart, as a vendor synthesizing it does.
fn two_part_speech_server() -> (String, Arc<AtomicUsize>) {
    let (address, connections) = counting_http::counting_server(|stream| {
        // 200 ms of 8 kHz µ-law a part (0xFF is silence).
        let part = [0xFFu8; 1_600];
        let mut first = counting_http::chunked_head("audio/basic");
        first.extend(counting_http::chunk(&part));
        counting_http::send(stream, &first)?;
        std::thread::sleep(Duration::from_millis(200));
        let mut rest = counting_http::chunk(&part);
        rest.extend_from_slice(counting_http::LAST_CHUNK);
        counting_http::send(stream, &rest)
    });
    (format!("http://{address}"), connections)
}

#[tokio::test]
async fn speech_cut_off_by_a_barge_in_leaves_its_connection_to_the_next_reply() {
    use switchboard_actors::engine::{SpeechRequest, TextToSpeech};

    let (url, connections) = two_part_speech_server();
    let voice = switchboard::vendors::deepgram::DeepgramSpeak {
        endpoint: endpoint_at("deepgram", &url, "dg-test"),
    };
    let sentence = || SpeechRequest {
        output_rate: Some(8_000),
        ..SpeechRequest::new("Our opening hours are nine to five.", "default")
    };
    // The caller talks over the first sentence: its stream is dropped after the first audio.
    let mut cut_off = voice.synthesize(sentence()).unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), cut_off.recv())
        .await
        .expect("the first audio arrives")
        .expect("the stream is open")
        .expect("audio, not an error");
    assert_eq!(first.sample_rate, 8_000);
    assert!(!first.samples.is_empty());
    drop(cut_off);
    // The rest of the sentence arrives 200 ms later; give the background read time to take it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    // The next reply's sentence is heard in full.
    let mut next = voice.synthesize(sentence()).unwrap();
    let mut samples = 0;
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = next.recv().await {
            samples += chunk.unwrap().samples.len();
        }
    })
    .await;
    assert!(ended.is_ok(), "the second sentence did not end");
    assert_eq!(samples, 3_200, "both parts of the second sentence");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "the cut-off sentence's connection was closed instead of going back to the pool"
    );
}

#[tokio::test]
async fn transcription_vendors_turn_their_answers_into_transcripts() {
    use std::sync::Arc;
    use switchboard_actors::engine::TranscribeOptions;

    let mock = VendorMock::start();
    let clip: Arc<[f32]> = Arc::from(vec![0.05f32; 16_000 * 2]);
    let options = TranscribeOptions {
        word_timestamps: true,
        ..TranscribeOptions::default()
    };
    for vendor in ["assemblyai", "elevenlabs", "azure"] {
        let endpoint = endpoint_at(vendor, &mock.url, &format!("{vendor}-k"));
        let engine = switchboard::vendors::stt_adapter(endpoint).unwrap();
        let transcript = engine
            .transcribe(clip.clone(), options.clone())
            .await
            .unwrap();
        assert_eq!(transcript.text, "What are your opening hours?", "{vendor}");
        assert_eq!(transcript.language, "en", "{vendor}");
        assert!(!transcript.segments.is_empty(), "{vendor}");
        assert!(!transcript.words.is_empty(), "{vendor}");
        assert!(
            transcript
                .words
                .iter()
                .all(|w| w.end >= w.start && w.end < 5.0),
            "{vendor}"
        );

        let bad = switchboard::vendors::stt_adapter(endpoint_at(
            vendor,
            &mock.url,
            &format!("{vendor}-secret-bad"),
        ))
        .unwrap();
        let err = bad
            .transcribe(clip.clone(), options.clone())
            .await
            .unwrap_err();
        assert!(
            err.message.starts_with(vendor) && err.message.contains("rejected the API key"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("secret"), "{}", err.message);
    }
    // AssemblyAI: the upload's URL asked for, then polled until done, each with the key.
    let submitted = mock.seen_at("/v2/transcript").swap_remove(0);
    assert_eq!(
        submitted.body["audio_url"],
        "https://cdn.assemblyai.com/upload/mock-1"
    );
    assert_eq!(submitted.body["language_detection"], true);
    assert_eq!(submitted.header("authorization"), Some("assemblyai-k"));
    assert!(mock.seen_at("/v2/transcript/tr-1").len() >= 2);
    let upload = mock.seen_at("/v2/upload").swap_remove(0);
    assert_eq!(
        upload.header("content-type"),
        Some("application/octet-stream")
    );
    // Scribe: multipart with the model; Azure: WAV at 16 kHz, detailed, en-US.
    let scribe = mock.seen_at("/v1/speech-to-text").swap_remove(0);
    assert!(scribe.text.contains("scribe_v1"), "{}", scribe.text);
    assert_eq!(scribe.key, "elevenlabs-k");
    let azure = mock
        .seen_at("/cognitiveservices/v1")
        .into_iter()
        .find(|s| s.path.starts_with("/speech/"))
        .unwrap();
    for part in [
        "language=en-US",
        "format=detailed",
        "wordLevelTimestamps=true",
    ] {
        assert!(azure.query.contains(part), "{}", azure.query);
    }
    assert!(azure
        .header("content-type")
        .unwrap()
        .contains("samplerate=16000"));
    // A clip over Azure's short-audio limit is refused before anything is sent.
    let long: Arc<[f32]> = Arc::from(vec![0.0f32; 16_000 * 61]);
    let azure = switchboard::vendors::stt_adapter(endpoint_at("azure", &mock.url, "k")).unwrap();
    let err = azure.transcribe(long, options).await.unwrap_err();
    assert_eq!(
        err.kind,
        switchboard_actors::engine::EngineErrorKind::InvalidInput
    );
}

#[tokio::test]
async fn assemblyai_live_streaming_ends_the_utterance_with_force_endpoint() {
    assemblyai_live_stream_at(16_000).await;
    // A phone line's own rate: the stream is opened for it, and pieces are 50 ms of it.
    assemblyai_live_stream_at(8_000).await;
}

#[allow(clippy::result_large_err)] // the handshake callback's error type is tungstenite's
async fn assemblyai_live_stream_at(rate: u32) {
    use futures_util::{SinkExt, StreamExt};
    use std::sync::{Arc, Mutex};
    use switchboard_actors::engine::{SpeechToText, SttEvent, SttInput, TranscribeOptions};
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::Message;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let upgrade: Arc<Mutex<(String, String)>> = Arc::default();
    let seen = upgrade.clone();
    let pieces: Arc<Mutex<Vec<usize>>> = Arc::default();
    let counted = pieces.clone();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let callback = |request: &Request, response: Response| {
            let auth = request.headers()["authorization"]
                .to_str()
                .unwrap()
                .to_string();
            *seen.lock().unwrap() = (request.uri().to_string(), auth);
            Ok(response)
        };
        let mut socket = tokio_tungstenite::accept_hdr_async(tcp, callback)
            .await
            .unwrap();
        let begin = json!({"type": "Begin", "id": "s-1", "expires_at": 1_900_000_000});
        socket.send(Message::text(begin.to_string())).await.unwrap();
        let turn = |text: &str, end: bool, formatted: bool| {
            json!({"type": "Turn", "turn_order": 0, "turn_is_formatted": formatted, "end_of_turn": end,
                   "transcript": text, "end_of_turn_confidence": 0.6,
                   "words": [{"start": 80, "end": 400, "text": "another", "confidence": 0.99, "word_is_final": true}]})
            .to_string()
        };
        while let Some(Ok(message)) = socket.next().await {
            match message {
                Message::Binary(bytes) => {
                    let first = {
                        let mut pieces = counted.lock().unwrap();
                        pieces.push(bytes.len());
                        pieces.len() == 1
                    };
                    if first {
                        socket
                            .send(Message::text(turn("another", false, false)))
                            .await
                            .unwrap();
                    }
                }
                Message::Text(text) if text.contains("ForceEndpoint") => {
                    socket
                        .send(Message::text(turn("another big day", true, false)))
                        .await
                        .unwrap();
                    socket
                        .send(Message::text(turn("Another big day.", true, true)))
                        .await
                        .unwrap();
                }
                Message::Text(text) if text.contains("Terminate") => break,
                _ => {}
            }
        }
    });

    let endpoint = endpoint_at("assemblyai", &format!("http://{address}"), "aai-live");
    let listen = Arc::new(switchboard::vendors::assemblyai::AssemblyAiTranscription { endpoint });
    let options = TranscribeOptions {
        input_rate: (rate != 16_000).then_some(rate),
        ..TranscribeOptions::default()
    };
    let (input, mut events) = listen.stream(options).unwrap();
    // Five 20 ms frames: sent as pieces of at least 50 ms.
    let frame = rate as usize / 50;
    for _ in 0..5 {
        input
            .send(SttInput::Audio(Arc::from(vec![3_277i16; frame])))
            .await
            .unwrap();
    }
    assert_eq!(next(&mut events).await, SttEvent::Partial("another".into()));
    input.send(SttInput::EndOfUtterance).await.unwrap();
    // The unformatted end of turn is a partial; the formatted one the final.
    assert_eq!(
        next(&mut events).await,
        SttEvent::Partial("another big day".into())
    );
    let SttEvent::Final(transcript) = next(&mut events).await else {
        panic!("a final transcript expected");
    };
    assert_eq!(transcript.text, "Another big day.");
    let pieces = pieces.lock().unwrap().clone();
    assert_eq!(pieces.iter().sum::<usize>(), 5 * frame * 2, "{pieces:?}");
    let fifty_ms = rate as usize / 20 * 2;
    assert!(
        pieces
            .iter()
            .all(|&len| len >= fifty_ms || len == *pieces.last().unwrap()),
        "{pieces:?}"
    );
    assert!(pieces.len() >= 2, "{pieces:?}");
    let (uri, auth) = upgrade.lock().unwrap().clone();
    assert_eq!(auth, "aai-live");
    for part in [
        "/v3/ws?",
        &format!("sample_rate={rate}"),
        "encoding=pcm_s16le",
        "format_turns=true",
    ] {
        assert!(uri.contains(part), "{uri}");
    }
}
