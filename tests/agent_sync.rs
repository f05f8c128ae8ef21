//! Agent sync to the ElevenLabs Conversational AI agents API, against a local stand-in that
//! speaks it (`POST /v1/convai/agents/create` → `{agent_id}`, `PATCH
//! /v1/convai/agents/{agent_id}`, `xi-api-key`, errors as `{"detail": {"status", "message"}}`):
//! created on the first sync, updated after, re-created when deleted there; 503 without a
//! platform, 502 naming the vendor when it refuses; another developer's agent is 404.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use common::*;
use serde_json::{json, Value};

#[derive(Default)]
struct Platform {
    agents: Mutex<HashMap<String, Value>>,
    requests: Mutex<Vec<(String, String, Value)>>,
}

struct ElevenLabsMock {
    url: String,
    platform: Arc<Platform>,
}

impl ElevenLabsMock {
    fn start() -> ElevenLabsMock {
        let platform = Arc::new(Platform::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = platform.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(shared.clone()))
                        .route("/v1/convai/agents/create", web::post().to(create))
                        .route("/v1/convai/agents/{id}", web::patch().to(update))
                })
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
                .unwrap();
            });
        });
        ElevenLabsMock { url, platform }
    }

    fn requests(&self) -> Vec<(String, String, Value)> {
        self.platform.requests.lock().unwrap().clone()
    }
}

/// The refusal of a request without the platform key, if it is one.
fn refusal(req: &HttpRequest) -> Option<HttpResponse> {
    match req
        .headers()
        .get("xi-api-key")
        .and_then(|v| v.to_str().ok())
    {
        Some("el-platform-key") => None,
        _ => {
            Some(HttpResponse::Unauthorized().json(
                json!({"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}),
            ))
        }
    }
}

async fn create(
    req: HttpRequest,
    body: web::Json<Value>,
    platform: web::Data<Arc<Platform>>,
) -> HttpResponse {
    platform
        .requests
        .lock()
        .unwrap()
        .push(("POST".into(), req.path().into(), body.0.clone()));
    if let Some(refused) = refusal(&req) {
        return refused;
    }
    if body["conversation_config"].is_null() {
        return HttpResponse::UnprocessableEntity().json(json!({"detail": [{"loc": ["body", "conversation_config"], "msg": "Field required", "type": "missing"}]}));
    }
    let id = format!("agent_{}", uuid::Uuid::new_v4().simple());
    platform.agents.lock().unwrap().insert(id.clone(), body.0);
    HttpResponse::Ok().json(json!({"agent_id": id}))
}

async fn update(
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Json<Value>,
    platform: web::Data<Arc<Platform>>,
) -> HttpResponse {
    platform
        .requests
        .lock()
        .unwrap()
        .push(("PATCH".into(), req.path().into(), body.0.clone()));
    if let Some(refused) = refusal(&req) {
        return refused;
    }
    let mut agents = platform.agents.lock().unwrap();
    match agents.get_mut(id.as_str()) {
        Some(agent) => {
            *agent = body.0.clone();
            HttpResponse::Ok().json(json!({"agent_id": id.as_str(), "name": body["name"],
                "conversation_config": body["conversation_config"], "metadata": {"created_at_unix_secs": 1_700_000_000}}))
        }
        None => HttpResponse::NotFound().json(json!({"detail": {"status": "agent_not_found",
            "message": format!("Agent with id {} not found", id.as_str())}})),
    }
}

async fn server_with_sync(mock: &ElevenLabsMock, key: &str) -> Server {
    Server::start_with(
        Storage::fresh().await,
        &[
            ("SWITCHBOARD__SYNC__PROVIDER", "elevenlabs"),
            ("SWITCHBOARD__SYNC__BASE_URL", mock.url.as_str()),
            ("SWITCHBOARD__SYNC__API_KEY", key),
        ],
    )
    .await
}

#[tokio::test]
async fn an_agent_is_created_on_the_first_sync_and_updated_after() {
    let mock = ElevenLabsMock::start();
    let server = server_with_sync(&mock, "el-platform-key").await;
    let key = server.key().to_string();
    let (status, body) = call(server.post(
        "/v1/agents",
        &key,
        json!({"id": "support", "name": "Support", "systemPrompt": "You help customers.",
               "firstMessage": "Hi, how can I help?", "language": "de", "temperature": 0.3,
               "maxTokens": 200, "llmProvider": "openai", "llmModel": "gpt-4o-mini",
               "ttsProvider": "elevenlabs", "voiceId": "21m00Tcm4TlvDq8ikWAM", "ttsModel": "eleven_turbo_v2_5"}),
    ))
    .await;
    assert_eq!(status, 201, "{body}");

    let (status, first) = call(server.post("/v1/agents/support/sync", &key, json!({}))).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["synced"], true);
    assert_eq!(first["provider"], "elevenlabs");
    assert_eq!(first["created"], true);
    let external = first["externalAgentId"].as_str().unwrap().to_string();
    assert!(external.starts_with("agent_"));
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let (method, path, sent) = &requests[0];
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", "/v1/convai/agents/create")
    );
    assert_eq!(sent["name"], "Support");
    let agent = &sent["conversation_config"]["agent"];
    assert_eq!(agent["first_message"], "Hi, how can I help?");
    assert_eq!(agent["language"], "de");
    assert_eq!(agent["prompt"]["prompt"], "You help customers.");
    assert_eq!(agent["prompt"]["llm"], "gpt-4o-mini");
    assert_eq!(agent["prompt"]["temperature"], 0.3);
    assert_eq!(agent["prompt"]["max_tokens"], 200);
    assert_eq!(
        sent["conversation_config"]["tts"]["voice_id"],
        "21m00Tcm4TlvDq8ikWAM"
    );
    assert_eq!(
        sent["conversation_config"]["tts"]["model_id"],
        "eleven_turbo_v2_5"
    );

    // Changed here, synced again: the same platform agent is updated.
    let (status, _) = call(server.put(
        "/v1/agents/support",
        &key,
        json!({"systemPrompt": "You help customers politely."}),
    ))
    .await;
    assert_eq!(status, 200);
    let (status, second) = call(server.post("/v1/agents/support/sync", &key, json!({}))).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["externalAgentId"], external.as_str());
    assert_eq!(second["created"], false);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let (method, path, sent) = &requests[1];
    assert_eq!(method, "PATCH");
    assert_eq!(path, &format!("/v1/convai/agents/{external}"));
    assert_eq!(
        sent["conversation_config"]["agent"]["prompt"]["prompt"],
        "You help customers politely."
    );
    assert_eq!(
        mock.platform.agents.lock().unwrap()[&external]["conversation_config"]["agent"]["prompt"]
            ["prompt"],
        "You help customers politely."
    );

    // Deleted on the platform: the next sync creates it again and keeps the new id.
    mock.platform.agents.lock().unwrap().clear();
    let (status, third) = call(server.post("/v1/agents/support/sync", &key, json!({}))).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["created"], true);
    let recreated = third["externalAgentId"].as_str().unwrap().to_string();
    assert_ne!(recreated, external);
    let (_, fourth) = call(server.post("/v1/agents/support/sync", &key, json!({}))).await;
    assert_eq!(fourth["externalAgentId"], recreated.as_str());
    assert_eq!(fourth["created"], false);

    // The platform has no `auto` language: such an agent is sent without one.
    let (status, body) =
        call(server.put("/v1/agents/support", &key, json!({"language": "auto"}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, fifth) = call(server.post("/v1/agents/support/sync", &key, json!({}))).await;
    assert_eq!(status, 200, "{fifth}");
    let (_, _, sent) = mock.requests().pop().unwrap();
    let agent = sent["conversation_config"]["agent"].as_object().unwrap();
    assert!(!agent.contains_key("language"), "{sent}");
    assert_eq!(agent["first_message"], "Hi, how can I help?");

    // Another developer's sync of this agent is 404 and reaches nobody.
    let before = mock.requests().len();
    let other = server.storage.create_key("dev_other");
    let (status, body) = call(server.post("/v1/agents/support/sync", &other, json!({}))).await;
    assert_not_found(status, &body, "another developer's agent");
    let (status, body) = call(server.post("/v1/agents/nobody/sync", &key, json!({}))).await;
    assert_not_found(status, &body, "an unknown agent");
    assert_eq!(mock.requests().len(), before);
}

#[tokio::test]
async fn sync_without_a_platform_is_503_and_a_refusal_is_502_naming_the_vendor() {
    let server = Server::start().await;
    let key = server.key().to_string();
    let (status, _) = call(server.post("/v1/agents", &key, json!({"id": "a", "name": "A"}))).await;
    assert_eq!(status, 201);
    let (status, body) = call(server.post("/v1/agents/a/sync", &key, json!({}))).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(error_code(&body), "unavailable");

    let mock = ElevenLabsMock::start();
    let server = server_with_sync(&mock, "wrong-key").await;
    let key = server.key().to_string();
    let (status, _) = call(server.post("/v1/agents", &key, json!({"id": "a", "name": "A"}))).await;
    assert_eq!(status, 201);
    let (status, body) = call(server.post("/v1/agents/a/sync", &key, json!({}))).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(error_code(&body), "upstream_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("elevenlabs:") && message.contains("Invalid API key"),
        "{message}"
    );
}
